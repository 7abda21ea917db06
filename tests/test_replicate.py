"""``metacog replicate``: the plan (sizes from the power chapter, calls, tokens, cost), the budget
refusal before any call, and a run killed with SIGKILL then resumed without asking twice."""

import importlib.util
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from fakeserver import FakeServer

if importlib.util.find_spec("litellm") is None:
    pytest.skip("litellm is not installed (pip install -e .[elicit])", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
TEN = ",".join(f"openai/gpt-4o-mini-{i}" for i in range(9)) + ",openai/gpt-4o-mini"


def _cli(args, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([sys.executable, "-m", "metacog.cli", "replicate", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def ten_model_plan():
    from metacog.replicate import plan

    return plan(TEN.split(","), benchmarks="mmlu_pro,legalbench", n_items=1500)


def test_sizes_come_from_the_power_chapter_and_reach_the_target():
    from metacog.power.curves import pairwise_power
    from metacog.replicate.sizes import ITEM_GRID, items_needed

    s = items_needed(10)
    assert s.n_items in ITEM_GRID and s.power >= s.target_power == 0.8
    # Recomputed independently at the found size and at the grid point below it: the first reaches
    # the target power, the second does not (the search returns the first grid point that does).
    at = pairwise_power(10, s.n_items, kappas=(s.kappa,), n_sims=400, method=s.method)["power"].iloc[0]
    assert at == pytest.approx(s.power)
    below = ITEM_GRID[ITEM_GRID.index(s.n_items) - 1]
    assert pairwise_power(10, below, kappas=(s.kappa,), n_sims=400, method=s.method)["power"].iloc[0] < 0.8
    # The planted kappa's expected self-minus-other excess is the margin (0.02 τ-b).
    t = pairwise_power(10, 4000, kappas=(0.0, s.kappa), n_sims=20, method="ttest")["mean_statistic"]
    assert t.iloc[1] - t.iloc[0] == pytest.approx(s.margin, abs=0.003)
    # More models need no more items.
    assert items_needed(20).n_items <= s.n_items


def test_plan_counts_calls_and_tokens_from_the_prompts(ten_model_plan):
    p = ten_model_plan
    by = p.calls.set_index(["benchmark", "probe"])
    n = p.n_items
    assert by.loc[("mmlu_pro", "prospective"), "calls"] == 10 * n
    # LegalBench has fewer items than planned and no counterfactual design (as in the paper).
    legal = {a.benchmark: a for a in p.asks}["legalbench"]
    assert legal.asked == legal.available < n and legal.probes == ("prospective", "answer_no_context")
    assert by.loc[("legalbench", "prospective"), "calls"] == 10 * legal.available
    assert any("legalbench has" in note for note in p.notes)
    # The audit set under paper 2's three policies, every item.
    assert {("audit", c) for c in ("c0", "c1", "c2")} <= set(by.index)
    # Tokens as the engine counts them, for one prompt rendered here.
    from metacog.elicit.tasks import Settings, make_task
    from metacog.replicate.asks import items_of

    mm = {a.benchmark: a for a in p.asks}["mmlu_pro"]
    items = items_of(mm)
    tasks = [make_task("x/y", it, "prospective", 0, Settings()) for it in items]
    chars = sum(sum(len(m["content"]) // 1 for m in t.messages) for t in tasks)
    assert by.loc[("mmlu_pro", "prospective"), "prompt_tokens"] == 10 * sum(
        sum(len(m["content"]) for m in t.messages) // 4 + 4 * len(t.messages) for t in tasks)
    assert chars > 0
    assert by.loc[("mmlu_pro", "prospective"), "completion_tokens"] == 10 * n * tasks[0].params["max_tokens"]


def test_plan_prices_each_model_with_litellm_and_the_batch_discount(ten_model_plan):
    from metacog.elicit.backend import get_litellm
    from metacog.replicate.asks import cost_table

    p = ten_model_plan
    row = p.cost.set_index("model").loc["openai/gpt-4o-mini"]
    pin, pout = get_litellm().cost_per_token(model="openai/gpt-4o-mini", prompt_tokens=int(row.prompt_tokens),
                                             completion_tokens=int(row.completion_tokens))
    assert row.cost_usd == pytest.approx(pin + pout, rel=1e-9)
    assert row.calls * 10 == p.total_calls
    batch = cost_table(p.calls, p.models, batch=True).set_index("model").loc["openai/gpt-4o-mini", "cost_usd"]
    assert batch == pytest.approx(row.cost_usd / 2, rel=1e-6)
    # The made-up names are not priced: the total is unknown, never a silent 0.
    assert p.cost["cost_usd"].isna().sum() == 9 and pd.isna(p.total_cost)


def test_plan_command_prints_sizes_calls_tokens_and_cost():
    res = _cli(["--plan", "--models", TEN, "--benchmarks", "mmlu_pro", "--no-audit", "--api-base",
                "http://127.0.0.1:9/v1"])
    assert res.returncode == 0, res.stderr
    from metacog.replicate.sizes import items_needed

    n = items_needed(10).n_items
    assert f"Items per benchmark: {n:,}." in res.stdout
    m = re.search(r"Total: ([\d,]+) calls at most, ([\d,]+) prompt tokens, ([\d,]+) reply tokens at most; "
                  r"estimated cost at most \$([\d.,]+)", res.stdout)
    assert m, res.stdout
    assert int(m.group(1).replace(",", "")) == 10 * 4 * n  # prospective, no-context, answer, counterfactual


def test_budget_refuses_before_any_call_with_one_line(tmp_path):
    with FakeServer() as srv:
        res = _cli(["--models", "openai/gpt-4o,openai/gpt-4o-mini,openai/gpt-4.1", "--api-base", srv.base_url,
                    "--benchmarks", "mmlu_pro", "--n-items", "100", "--budget", "0.01", "--out",
                    str(tmp_path / "out"), "--cache", str(tmp_path / "cache"), "--no-progress"])
        assert srv.requests == 0
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "--budget 0.01" in lines[0] and "nothing was asked" in lines[0], res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "cache" / "responses.sqlite").exists()


def test_budget_with_an_unpriced_model_is_refused(tmp_path):
    res = _cli(["--models", "openai/a,openai/b,openai/c", "--benchmarks", "mmlu_pro", "--n-items", "20",
                "--budget", "5", "--no-audit", "--out", str(tmp_path / "o")])
    assert res.returncode == 2 and "no price for openai/a" in res.stderr and len(res.stderr.splitlines()) == 1


@pytest.mark.parametrize("args, words", [
    (["--models", "openai/a,openai/b"], "at least 3"),
    (["--models", "openai/a,openai/b,openai/c", "--benchmarks", "gsm8k"], "--benchmarks"),
    (["--models", "openai/a,openai/b,openai/c", "--n-items", "3"], "--n-items"),
    (["--models", "openai/a,openai/b,openai/c", "--benchmarks", "mmlu_pro"], "--out"),
])
def test_bad_input_exits_2_with_one_line(args, words):
    res = _cli(args)
    assert res.returncode == 2 and words in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_sigkill_mid_run_then_rerun_asks_nothing_twice(tmp_path):
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["--models", "openai/m1,openai/m2,openai/m3", "--benchmarks", "mmlu_pro,legalbench", "--n-items", "40",
            "--no-audit", "--no-book", "--concurrency", "2", "--out", str(out), "--cache", str(cache),
            "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with FakeServer(latency=0.05) as srv:
        full = [*args, "--api-base", srv.base_url]
        proc = subprocess.Popen([sys.executable, "-m", "metacog.cli", "replicate", *full], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        db, deadline, rows = cache / "responses.sqlite", time.time() + 300, 0
        while time.time() < deadline and rows < 400:  # into the second benchmark (360 calls in the first)
            time.sleep(0.2)
            if db.exists():
                try:
                    with sqlite3.connect(db, timeout=5) as con:
                        rows = con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
                except sqlite3.OperationalError:
                    continue
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert not (out / "responses.parquet").exists()
        assert (out / "responses" / "mmlu_pro.parquet").exists()
        res = _cli(full)
        assert res.returncode == 0, res.stderr
    df = pd.read_parquet(out / "responses.parquet")
    # Every call once: mmlu_pro 40 items x 3 models x (prospective, no context, answer) + the
    # counterfactuals of correct answers; legalbench 40 x 3 x 2.
    assert not df.duplicated(["model", "benchmark", "item_id", "probe", "sample"]).any()
    assert (df.groupby(["benchmark", "probe"]).size().drop(index="counterfactual", level=1, errors="ignore")
            == 120).all()
    # Nothing committed before the kill was asked again: at most the calls in flight (2 per model).
    from metacog.elicit import Cache

    with Cache(cache) as c:
        keys = c.frame()["key"]
    assert keys.is_unique and set(df["cache_key"]) == set(keys)
    assert srv.requests - len(keys) <= 6
    assert set(df["design"].dropna()) <= {"prospective", "counterfactual"}
    assert (df.loc[df["probe"] == "prospective", "design"] == "prospective").all()
