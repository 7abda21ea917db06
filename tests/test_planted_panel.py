"""End to end with a planted truth: a simulated panel (tests/planted.py) answers the project's own
prompts over HTTP from a known latent structure; `metacog.elicit.run` must return exactly the
planted correctness and judgments, and the chapters' own verdict functions must recover what was
planted (no individual metacognition at kappa = 0, a self-advantage at a strong kappa)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from planted import PlantedPanel, PlantedServer, status_of  # noqa: E402

from metacog.benchmarks import load_items  # noqa: E402
from metacog.elicit.tasks import Settings, make_task  # noqa: E402
from metacog.power.simulate import population  # noqa: E402

pytestmark = pytest.mark.skipif(not load_items("audit"), reason="no audit items")

N_MODELS = 8
N_ITEMS = 300
PAPER1 = ["prospective", "answer_no_context", "answer", "counterfactual"]
KEYS = ["model", "benchmark", "item_id", "probe"]


def _mmlu_items(panel: PlantedPanel, n: int):
    """``n`` MMLU-Pro items whose prompts only they render (shared question texts are ambiguous)."""
    items = load_items("mmlu_pro", n_items=n + 40, seed=3)
    keep = [it for it in items if not panel.truth("mmlu_pro", [it.item_id], probes=["answer"],
                                                   check=False)["ambiguous"].iloc[0]]
    return keep[:n]


def _run(panel, server, items, probes, cache):
    import metacog.elicit as me

    return me.run(items, models=[f"openai/{m}" for m in panel.models], probes=probes,
                  api_base=server.base_url, cache=cache, progress=False, concurrency=16)


def _compare(rows: pd.DataFrame, truth: pd.DataFrame) -> pd.DataFrame:
    m = rows.merge(truth, on=KEYS, how="outer", suffixes=("", "_planted"), indicator=True)
    assert (m["_merge"] == "both").all(), m.loc[m["_merge"] != "both", KEYS + ["_merge"]].head()
    return m


def _same(a: pd.Series, b: pd.Series) -> pd.Series:
    a, b = pd.to_numeric(a, errors="coerce").to_numpy(float), pd.to_numeric(b, errors="coerce").to_numpy(float)
    return pd.Series((a == b) | (np.isnan(a) & np.isnan(b)))


# -- the panel itself (no HTTP) ------------------------------------------------------------

def test_answer_refuses_unknown_models_and_foreign_prompts():
    panel = PlantedPanel(3, 0.0, 0, ["audit"])
    it = load_items("audit")[0]
    msgs = make_task("openai/planted-00", it, "c0", 0, Settings()).messages
    bad_model = panel.answer({"model": "gpt-4o", "messages": msgs})
    assert status_of(bad_model) == 404 and "planted-00" in bad_model["error"]["message"]
    foreign = panel.answer({"model": "planted-01", "messages": [{"role": "user", "content": "hi"}]})
    assert status_of(foreign) == 400 and "not one of the project's prompts" in foreign["error"]["message"]
    ok = panel.answer({"model": "planted-02", "messages": msgs, "logprobs": True, "top_logprobs": 5})
    assert status_of(ok) == 200
    text = ok["choices"][0]["message"]["content"]
    row = panel.truth("audit", [it.item_id], probes=["c0"]).iloc[2]
    assert f"Final answer: {row['decision'].capitalize()}" in text
    assert f"Confidence: {row['confidence']:.2f}" in text


def test_planted_values_follow_the_simulator_and_not_the_item_subset():
    a = PlantedPanel(6, 0.5, 7, ["audit"])
    b = PlantedPanel(6, 0.5, 7, ["mmlu_pro", "audit"])
    ref = population(6, 50, 0.5, 7)
    assert np.allclose(a.ability, ref.ability.to_numpy()) and np.allclose(a.thresholds, ref.thresholds.to_numpy())
    ids = [it.item_id for it in load_items("audit")]
    full = a.truth("audit", ids, check=False).set_index(KEYS)
    part = b.truth("audit", ids[100:140][::-1], check=False).set_index(KEYS)
    assert part[["z", "c_star", "decision", "confidence"]].equals(full.loc[part.index, ["z", "c_star", "decision", "confidence"]])
    assert not PlantedPanel(6, 0.5, 8, ["audit"]).truth("audit", ids[:40], check=False)["z"].equals(
        a.truth("audit", ids[:40], check=False)["z"])
    # the latent equations of metacog.power.simulate: correct = z > 0, confidence = c* > t_j
    t = a.truth("audit", ids, probes=["prospective", "c0"], check=False)
    pro = t[t["probe"] == "prospective"]
    thr = dict(zip("openai/" + pd.Series(a.models), a.thresholds))
    assert ((pro["confidence"] == 1) == (pro["c_star"] > pro["model"].map(thr))).all()
    assert ((pro["correct"] == 1) == (pro["z"] > 0)).all()
    # a question text two benchmarks share (MATH and MMLU-Pro do) renders one prompt: one planted value
    both = PlantedPanel(2, 0.0, 0, ["mmlu_pro", "math"])
    math = both.truth("math", probes=["prospective"], check=False)
    twin = math[math["ambiguous"]].iloc[0]
    question = str(both.items["math"][twin["item_id"]].question).strip()
    mmlu_id = next(i for i, it in both.items["mmlu_pro"].items() if str(it.question).strip() == question)
    mmlu = both.truth("mmlu_pro", [mmlu_id], probes=["prospective"], check=False)
    assert not mmlu["ambiguous"].any() and mmlu.iloc[0]["z"] == twin["z"]
    c0 = t[t["probe"] == "c0"]
    wrong_confident = ((c0["correct"] == 0) & (c0["confidence"] >= 0.8)).mean()
    assert 0.02 < wrong_confident < 0.3  # kappa 0.5: some confident errors are planted


# -- the whole chain over HTTP -------------------------------------------------------------

@pytest.fixture(scope="module")
def null_run(tmp_path_factory):
    """kappa = 0: paper 1's probes on 300 MMLU-Pro items and c0/c1/c2 on the audit set, 8 models."""
    tmp = tmp_path_factory.mktemp("planted0")
    panel = PlantedPanel(N_MODELS, 0.0, 0, ["mmlu_pro", "audit"])
    items = _mmlu_items(panel, N_ITEMS)
    audit = load_items("audit", n_items=120, seed=0)
    with PlantedServer(panel) as srv:
        rows = _run(panel, srv, items, PAPER1, tmp / "cache")
        audit_rows = _run(panel, srv, audit, ["c0", "c1", "c2"], tmp / "cache")
    return panel, items, audit, rows, audit_rows, tmp


@pytest.fixture(scope="module")
def strong_run(tmp_path_factory):
    """kappa = 1 (each model senses its own item effects): the prospective probe and its scoring."""
    tmp = tmp_path_factory.mktemp("planted1")
    panel = PlantedPanel(N_MODELS, 1.0, 0, ["mmlu_pro"])
    items = _mmlu_items(panel, N_ITEMS)
    with PlantedServer(panel) as srv:
        rows = _run(panel, srv, items, ["prospective", "answer_no_context"], tmp / "cache")
    return panel, items, rows, tmp


def test_elicit_rows_reproduce_the_planted_answers_and_judgments(null_run):
    panel, items, _, rows, _, _ = null_run
    assert (rows["parse_status"] == "ok").all(), rows["error"].dropna().head()
    truth = panel.truth("mmlu_pro", [it.item_id for it in items], probes=PAPER1)
    assert truth["plantable"].all()  # the grader scores every planted gold right and every wrong answer wrong
    m = _compare(rows, truth)
    assert len(m) == len(truth) > N_MODELS * N_ITEMS * 3  # counterfactuals only after correct answers
    assert _same(m["correct"], m["correct_planted"]).all()
    assert _same(m["confidence"], m["confidence_planted"]).all()
    judg = m[m["probe"].isin(["prospective", "counterfactual"])]
    assert (judg["decision"] == judg["decision_planted"]).all()
    assert np.allclose(judg["p_yes"].astype(float), judg["p_yes_planted"].astype(float), atol=1e-9)
    # not a degenerate panel: both outcomes of everything occur
    for probe in PAPER1:
        share = m.loc[m["probe"] == probe, "correct" if "answer" in probe else "confidence"].astype(float).mean()
        assert 0.1 < share < 0.95, (probe, share)


def test_elicit_rows_reproduce_the_planted_policies_on_the_audit_set(null_run):
    panel, _, audit, _, rows, _ = null_run
    assert (rows["parse_status"] == "ok").all()
    truth = panel.truth("audit", [it.item_id for it in audit], probes=["c0", "c1", "c2"])
    m = _compare(rows, truth)
    assert (m["decision"] == m["decision_planted"]).all()
    assert _same(m["correct"], m["correct_planted"]).all()
    assert np.allclose(m["confidence"].astype(float), m["confidence_planted"].astype(float))
    answered = m["decision"] != "abstain"
    assert np.allclose(m.loc[answered, "p_yes"].astype(float), m.loc[answered, "p_yes_planted"].astype(float))
    abstain = m.groupby("probe")["decision"].apply(lambda d: (d == "abstain").mean())
    assert abstain["c0"] == 0 and 0 < abstain["c1"] < abstain["c2"] < 1
    c0 = m[m["probe"] == "c0"]
    assert ((c0["correct"] == 0) & (c0["confidence"] >= 0.8)).sum() > 0  # confident errors reach the rows


def test_every_benchmark_is_answered_and_graded_as_planted(tmp_path):
    """A few items of each of paper 1's benchmarks (SciCode aside): the gold is graded right, the
    planted wrong answer wrong, and the rows carry the planted values."""
    benches = ["squad", "legalbench", "math", "omni_math"]
    panel = PlantedPanel(3, 0.5, 1, benches)
    items = {b: load_items(b, n_items=25, seed=2) for b in benches}
    with PlantedServer(panel) as srv:
        rows = _run(panel, srv, [it for b in benches for it in items[b]], PAPER1, tmp_path / "cache")
    assert (rows["parse_status"] == "ok").all()
    truth = pd.concat([panel.truth(b, [it.item_id for it in items[b]], probes=PAPER1) for b in benches])
    plantable = truth.drop_duplicates(["benchmark", "item_id"])["plantable"]
    assert plantable.mean() >= 0.9, truth.loc[~truth["plantable"], ["benchmark", "item_id"]].drop_duplicates()
    m = _compare(rows, truth)
    sure = m[m["plantable"] & ~m["ambiguous"]]
    assert _same(sure["correct"], sure["correct_planted"]).all()
    assert _same(sure["confidence"], sure["confidence_planted"]).all()
    assert set(sure["benchmark"]) == set(benches)


def _self_other_verdicts(rows: pd.DataFrame, path: Path) -> dict:
    """The pairwise and power chapters' self-against-other verdicts on the prospective panel of a
    response file, by their own collectors (:func:`metacog.pages.findings.collect.collect`):
    {(chapter, claim): status}."""
    from metacog.pages.findings.collect import collect

    rows.to_parquet(path)
    p = {"sources": [str(path)], "cuts": {}, "alpha": 0.05, "unanimous_rule": "either", "n_permutations": 199,
         "n_boot": 1000, "seed": 0, "power_target": 0.8, "n_sims": 100, "n_sims_factor": 30, "n_perm": 199,
         "n_null": 200, "kappa_max": 1.0, "kappa_tol": 0.01, "max_items": 2000, "margin": 0.02}
    found = collect({"pairwise": "p", "power": "p"}, {"p": p})
    return {(f.chapter, f.verdict.claim): f.verdict.status for f in found
            if "prospective" in f.verdict.claim and "own correctness better" in f.verdict.claim}


def test_the_chapters_recover_what_was_planted(null_run, strong_run):
    null = _self_other_verdicts(null_run[3], null_run[5] / "null.parquet")
    strong = _self_other_verdicts(strong_run[2], strong_run[3] / "strong.parquet")
    print("kappa 0:", null, "\nkappa 1:", strong)
    # pairwise: all items and contested items; power: beyond base rates
    assert sorted(c for c, _ in null) == sorted(c for c, _ in strong) == ["pairwise", "pairwise", "power"]
    assert all(s != "supported" for s in null.values())
    assert all(s == "supported" for s in strong.values())


def test_the_standalone_server_prints_its_port_and_answers():
    import json
    import subprocess
    import urllib.request

    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("planted.py")), "--models", "2",
                             "--kappa", "0", "--port", "0", "--benchmarks", "audit"],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        url = f"http://127.0.0.1:{int(line.split()[1])}/v1/models"
        served = json.load(urllib.request.urlopen(url, timeout=10))
        assert [d["id"] for d in served["data"]] == ["planted-00", "planted-01"]
    finally:
        proc.terminate()
        proc.wait(10)


def test_math_is_graded_as_planted_from_inside_a_running_event_loop(tmp_path):
    """In a notebook `elicit.run` runs its loop in a worker thread; the MATH grader must still work
    there (math-verify's signal-based timeouts work only in the main thread)."""
    import asyncio

    panel = PlantedPanel(2, 0.0, 0, ["math"])
    items = load_items("math", n_items=20, seed=4)

    async def inside_a_loop():  # as in Jupyter: a loop is already running when run() is called
        return _run(panel, srv, items, ["answer_no_context"], tmp_path / "cache")

    with PlantedServer(panel) as srv:
        rows = asyncio.run(inside_a_loop())
    m = _compare(rows, panel.truth("math", [it.item_id for it in items], probes=["answer_no_context"]))
    assert m["correct_planted"].sum() > 5
    assert _same(m["correct"], m["correct_planted"]).all()
