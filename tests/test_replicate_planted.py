"""``metacog replicate`` end to end against a planted truth (issue #36): a server plays 8 models
whose correctness and prospective judgments come from the book's latent model, and the command
must give a whole book on that panel whose findings recover what was planted.

- a planted individual signal (kappa 1), asked over a plain OpenAI-compatible server: the
  self-versus-other claim is supported on the prospective panel;
- no individual signal (kappa 0, rank one), asked through the batch endpoints with ``--batch``:
  it is not supported (at 8 models x 300 items the design cannot detect the 0.02 margin, so
  the honest reading is "insufficient evidence", never "supported").

The chain checked: prompts, parsing, grading, cache, tidy rows, chapters, findings, rendering.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from openai_server import OpenAIServer
from planted import PlantedPanel, PlantedServer, status_of

if importlib.util.find_spec("litellm") is None:
    pytest.skip("litellm is not installed (pip install -e .[elicit])", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
N_MODELS, N_ITEMS = 8, 300
MODELS = ",".join(f"openai/planted-{i:02d}" for i in range(N_MODELS))


def _replicate(base_url, out, cache, *extra):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([sys.executable, "-m", "metacog.cli", "replicate", "--models", MODELS, "--api-base",
                           base_url, "--benchmarks", "mmlu_pro", "--n-items", str(N_ITEMS), "--no-audit",
                           "--concurrency", "16", "--out", str(out), "--cache", str(cache), "--no-progress",
                           "--jobs", "2", *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)


def _findings(out):
    from metacog.pages import findings

    t = findings.findings_table(findings.collect(sources=[str(out / "responses.parquet")]))
    # the individual claims only: paper 1's pairwise excess over its base-rate null (p1-pairwise)
    # is shared difficulty, which a panel with no self-knowledge still has
    return t[(t["chapter"] == "pairwise") & (t["design"] == "prospective") & (t["claim_id"] != "p1-pairwise")]


@pytest.fixture(scope="module")
def strong(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("strong")
    panel = PlantedPanel(n_models=N_MODELS, kappa=1.0, seed=0, benchmarks=("mmlu_pro",))
    with PlantedServer(panel) as srv:
        res = _replicate(srv.base_url, tmp / "out", tmp / "cache")
    assert res.returncode == 0, res.stderr[-3000:]
    return panel, tmp / "out", res


@pytest.fixture(scope="module")
def null_batch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("null")
    panel = PlantedPanel(n_models=N_MODELS, kappa=0.0, seed=1, benchmarks=("mmlu_pro",))

    def answer(body):
        doc = panel.answer(body)
        return status_of(doc), doc

    with OpenAIServer(answer=answer, batch=True, batch_seconds=0.2) as srv:
        res = _replicate(srv.base_url, tmp / "out", tmp / "cache", "--batch")
        stats = (srv.batches_created, srv.chat_calls)
    assert res.returncode == 0, res.stderr[-3000:]
    return panel, tmp / "out", res, stats


def test_the_responses_are_the_planted_panel(strong):
    panel, out, _ = strong
    df = pd.read_parquet(out / "responses.parquet")
    pro = df[df["probe"] == "prospective"]
    assert pro["model"].nunique() == N_MODELS and pro["item_id"].nunique() == N_ITEMS
    truth = panel.truth("mmlu_pro", sorted(set(pro["item_id"])), probes=("prospective",))
    truth = truth[truth["plantable"].astype(bool) & ~truth["ambiguous"].astype(bool)]
    merged = pro.merge(truth, on=["model", "item_id"], suffixes=("", "_planted"))
    assert len(merged) > 0.9 * len(pro)  # every plantable item whose question text is its own
    assert (merged["confidence"] == merged["confidence_planted"]).all()
    assert (merged["correct"] == merged["correct_planted"]).all()
    assert set(df["design"].dropna()) == {"prospective", "counterfactual"}


def test_a_whole_book_on_the_panel_with_its_findings(strong):
    _, out, res = strong
    index = Path(res.stdout.strip().splitlines()[-1])
    assert index == out / "book" / "html" / "index.html" and index.exists()
    html = out / "book" / "html"
    pages = {p.stem for p in html.rglob("*.html")}
    assert {"rank_one", "pairwise", "power", "findings"} <= pages
    text = (html / "notebooks" / "findings.html").read_text() if (html / "notebooks").exists() else \
        next(html.rglob("findings.html")).read_text()
    assert "responses · mmlu_pro" in text and "Atlas" not in text and "spar" not in text


def test_a_planted_individual_signal_is_supported(strong):
    rows = _findings(strong[1])
    assert len(rows) and (rows["status"] == "supported").any(), rows[["claim_id", "status", "book_value"]]
    assert (rows["estimate"] > 0.1).any()


def test_a_planted_null_is_never_called_supported_and_came_through_batches(null_batch):
    _, out, _, (batches, chats) = null_batch
    assert batches >= 2 and chats == 0  # answers and counterfactuals, each one batch; no single call
    rows = _findings(out)
    assert len(rows) and not (rows["status"] == "supported").any(), rows[["claim_id", "status", "book_value"]]
    df = pd.read_parquet(out / "responses.parquet")
    assert (df["backend"] == "batch").all()
