"""The fifteen-minute lab: metacog.pages.lab on planted data and the recorded run, the chapter replayed,
and (with llama-cpp-python and SmolLM2) the chapter run live end to end."""

from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

from metacog import chapter

from metacog.pages import lab
from metacog.hypotheses.verdict import INSUFFICIENT, NOT_SUPPORTED, SUPPORTED

ROOT = Path(__file__).resolve().parents[1]


def planted(n_items=200, seed=0):
    """Tidy C0 rows for three models: 'knows' (80% right, confidence higher when right),
    'chance' (50% right, random confidence) and 'backwards' (80% right, confidence higher
    when wrong)."""
    rng = np.random.default_rng(seed)
    gold = np.tile(["yes", "no"], n_items // 2)
    rows = []
    for model, acc, sign in (("m/knows", 0.8, 1), ("m/chance", 0.5, 0), ("m/backwards", 0.8, -1)):
        right = rng.random(n_items) < acc
        said = np.where(right, gold, np.where(gold == "yes", "no", "yes"))
        conf = np.clip(0.7 + sign * 0.15 * np.where(right, 1, -1) + rng.normal(0, 0.2, n_items), 0, 1)
        p_yes = np.where(said == "yes", 0.6, 0.4) + rng.normal(0, 0.02, n_items)
        rows.append(pd.DataFrame({"model": model, "item_id": [f"i{k}" for k in range(n_items)],
                                  "benchmark": "audit", "probe": "c0", "sample": 0, "decision": said,
                                  "confidence": conf, "p_yes": p_yes, "correct": right.astype(float)}))
    return pd.concat(rows, ignore_index=True)


@pytest.fixture(scope="module")
def table():
    return lab.compare(planted(), [], "c0")[0]


def test_confidence_verdict_follows_the_planted_signal(table):
    decided = {v.claim.split(" under")[0]: v for v in lab.verdicts(table, "c0")
               if "stated confidence" in v.claim}
    assert decided["knows"].status == SUPPORTED
    assert decided["backwards"].status == NOT_SUPPORTED
    assert decided["chance"].status == INSUFFICIENT  # answers at chance: withheld, not tested
    assert "at chance" in decided["chance"].reason


def test_gate_and_auroc_columns(table):
    conf = table[(table["task"] == "confidence") & (table["score"] == "confidence")].set_index("model")
    assert conf.loc["m/knows", "auroc"] > 0.8 and conf.loc["m/backwards", "auroc"] < 0.2
    assert bool(conf.loc["m/knows", "carries_signal"]) and not bool(conf.loc["m/chance", "carries_signal"])
    assert (conf["ci_low"] <= conf["auroc"]).all() and (conf["auroc"] <= conf["ci_high"]).all()
    assert (table["run"] == lab.LAB).all()
    shown = lab.display_compare(table)
    shown = getattr(shown, "data", shown)
    # the label says what is at chance: the worded answers, not a confidence reading beside them
    assert "chance (answers at chance)" in set(shown["model"]) and "knows" in set(shown["model"])


def test_gate_sentence_names_each_model_and_says_what_follows():
    gate = lab.score(planted(), "c0").drop_duplicates("model")
    from metacog.pages.benchmark import model_gate

    s = lab.gate_sentence(model_gate(planted(), "c0"))
    assert "knows carry signal" in s and "chance do not clear the bar" in s
    assert len(gate) == 3


def test_items_needed_follows_the_square_root_law(table):
    s = lab.items_needed(table, 0.05, model="m/knows")
    r = table[(table["model"] == "m/knows") & (table["score"] == "confidence")].iloc[0]
    assert r["ci_high"] - r["ci_low"] > 0.05
    need = int(np.ceil(r["items"] * ((r["ci_high"] - r["ci_low"]) / 0.05) ** 2))
    assert f"about {need:,} item" in s
    assert "already" in lab.items_needed(table, 0.9, model="m/knows")
    few = lab.compare(planted(n_items=6), [], "c0")[0]
    assert "ask more items" in lab.items_needed(few)
    assert "no trustworthy interval" in lab.width_sentence(few, "m/knows")


def test_replay_reads_the_recorded_run_without_a_model():
    r = lab.ask(30)
    assert r.attrs["mode"] == "replayed" and r.attrs["asked"] == 0
    assert len(r) == 30 and r["item_id"].is_unique
    assert set(r["probe"]) == {"c0"} and set(r["model"]) == {"local/smollm2-135m"}
    table, skipped = lab.compare(r, ["audit_policies", "squad"], "c0")
    assert "squad" in skipped and "no answers under C0" in skipped["squad"]
    assert set(table["run"]) == {lab.LAB, "audit_policies"}
    s = lab.width_sentence(table, "local/smollm2-135m")
    assert "With 30 items" in s and "132 items" in s
    assert lab.agreement(r)["same_decision"].iloc[0] == 1.0  # the replay is the recording
    assert "seconds of model time" in lab.timing_sentence(r)
    assert "replays the recording" in lab.agreement_sentence(r, "local/smollm2-135m")


def test_bad_inputs_say_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="not in the recorded run.*live = True"):
        lab.ask(10, model="local/no-such-model")
    with pytest.raises(ValueError, match="n_items must be at least 1"):
        lab.ask(0)
    with pytest.raises(ValueError, match="audit policies"):
        lab.ask(10, policy="prospective")
    with pytest.raises(ValueError, match="outside the repository"):
        lab.cache_folder(str(ROOT / "data" / "lab-cache"))
    with pytest.raises(ValueError, match="outside the repository"):
        lab.cache_folder(str(lab.PACKAGE / "cache"))
    assert lab.cache_folder(str(tmp_path)) == tmp_path.resolve()
    assert lab.cache_folder("").name == "lab"
    assert "--n-items 12 --seed 3" in lab.elicit_command(12, seed=3)


def _text(nb_path: Path) -> str:
    nb = nbformat.read(nb_path, as_version=4)
    parts = []
    for c in nb.cells:
        if c.cell_type == "markdown":
            parts.append(c.source)
        for o in c.get("outputs", []):
            parts.append(str(o.get("text", "")))
            parts += [str(v) for v in o.get("data", {}).values()]  # glued text included
    return "\n".join(parts)


def _outputs(nb_path: Path) -> str:
    """What the executed cells printed or glued, without the page's own markdown (which names
    the verdicts in its prose, so a search there could not fail)."""
    nb = nbformat.read(nb_path, as_version=4)
    parts = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            parts.append(str(o.get("text", "")))
            parts += [str(v) for v in o.get("data", {}).values()]
    return "\n".join(parts)


def test_lab_chapter_replays_without_a_model(tmp_path):
    nb = chapter.run("lab", ["audit_policies"], tmp_path, parameters={"n_items": 12}, html=False).notebook
    out = _outputs(nb)
    assert "replayed from the recorded run" in out
    assert "insufficient evidence" in out  # 12 items: too few of each class for an AUROC
    assert "Traceback" not in _text(nb)


@pytest.mark.localmodel
@pytest.mark.slow
def test_lab_chapter_runs_live_end_to_end(tmp_path):
    from metacog.elicit import panel
    from metacog.elicit import local

    if not local.available():
        pytest.skip("llama_cpp is not importable: build it with scripts/install_local.sh")
    if not panel.is_cached("smollm2-135m"):
        pytest.skip(f"SmolLM2 is not cached in {panel.model_dir()}: run "
                    "`python -m metacog.elicit.panel fetch smollm2-135m`")
    from metacog.benchmarks import load_items
    from metacog.elicit.cache import Cache

    cache = tmp_path / "cache"
    before = set((ROOT / "data").rglob("*"))
    # Exercise 2's "full run" is asked live too: 10 items here, not the page's 132 (~1 s a call)
    nb = chapter.run("lab", ["audit_policies"], tmp_path / "out", html=False,
                     parameters={"live": True, "n_items": 4, "n_full": 10, "cache_dir": str(cache)}).notebook
    text = _text(nb)
    assert "asked live" in text
    assert "This run made 4 calls" in text
    assert "gave the recorded Yes/No" in text  # compared item by item with the recording
    assert (cache / "responses.sqlite").exists()  # the cache went where it was told
    # every live call went through that cache: C0 on the lab's 4 items and on Exercise 2's 10,
    # C2 on the lab's 4 (Exercise 1)
    c0 = {it.item_id for n in (4, 10) for it in load_items(lab.BENCHMARK, n_items=n, seed=0)}
    with Cache(cache) as c:
        assert c.count() == len(c0) + 4
    assert set((ROOT / "data").rglob("*")) == before  # nothing written into the repository
