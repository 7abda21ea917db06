"""metacog.hypotheses.reasoning_text on planted texts, and the chapters executing on a small synthetic source."""

import numpy as np
import pandas as pd
import pytest

from metacog import chapter
from metacog.hypotheses import reasoning_text as hrt
from metacog.power.examples import example_responses, write_responses
from metacog.hypotheses.verdict import INSUFFICIENT, SUPPORTED

SURE = "I recall this clearly, it is a well-known fact and I am confident."
UNSURE = "I am not sure, this seems obscure and I might not know it; perhaps, maybe."


def _rows(n=120, planted=True, seed=0):
    rng = np.random.default_rng(seed)
    correct = (rng.random(n) < 0.5).astype(float)
    texts = [(SURE if (c == 1) == planted or rng.random() < 0.1 else UNSURE) + f" Item {i}."
             for i, c in enumerate(correct)]
    if not planted:
        texts = [(SURE if rng.random() < 0.5 else UNSURE) + f" Item {i}." for i in range(n)]
    judge = (rng.random(n) < 0.5).astype(float)  # the model's own Yes/No says nothing
    return pd.DataFrame({"model": np.where(np.arange(n) % 2, "m/a", "m/b"), "item_id": [f"x{i}" for i in range(n)],
                         "probe": "prospective", "reasoning_text": texts, "correct": correct,
                         "confidence": judge, "p_yes": judge * 0.5 + 0.25 + rng.normal(0, 0.01, n)})


def _verdict(rows):
    t, _ = hrt.compare(rows, n_boot=200)
    return hrt.verdicts(t.assign(source="planted", models="a, b"))[0], t


def test_the_verdict_flips_with_the_planted_text_signal():
    v, t = _verdict(_rows(planted=True))
    assert v.status == SUPPORTED
    probe = t.set_index("score").loc["text_probe"]
    assert probe["auroc"] > 0.8 and probe["ci_low"] > 0.5
    v0, _ = _verdict(_rows(planted=False))
    assert v0.status != SUPPORTED


def test_too_few_correct_texts_is_insufficient_and_shows_no_number():
    rows = _rows(n=120)
    keep = (rows["correct"] == 0) | (rows.index.isin(rows.index[rows["correct"] == 1][:6]))
    v, t = _verdict(rows[keep])
    assert v.status == INSUFFICIENT and "only 6 correct texts" in v.reason
    shown = hrt.display(t.assign(source="planted", models="a, b"))
    assert shown["AUROC, text probe (95% CI)"].iloc[0] == "insufficient evidence (only 6 correct texts)"
    assert shown["probe minus own Yes/No (95% CI)"].iloc[0] == "insufficient evidence"


def test_a_stated_confidence_is_named_as_such_and_its_text_probe_is_judged_against_it():
    rows = _rows(planted=True)
    stated = rows.drop(columns="p_yes").assign(confidence=np.round(np.random.default_rng(1).random(len(rows)), 2))
    v, t = _verdict(stated)
    assert "own stated confidence" in v.claim and v.status == SUPPORTED
    shown = hrt.display(t.assign(source="planted", models="a, b"))
    assert "AUROC, own stated confidence (95% CI)" in shown.columns
    assert "probe minus own stated confidence (95% CI)" in shown.columns and "AUROC, own Yes/No (95% CI)" not in shown
    yes_no, _ = _verdict(rows)  # a 0/1 judgment keeps its name
    assert "own Yes/No" in yes_no.claim


def test_a_loss_by_a_probe_below_chance_is_not_a_verdict_against_the_text():
    from metacog.hypotheses.verdict import NOT_SUPPORTED

    def table(probe_ci, diff_ci):
        return pd.DataFrame([
            {"score": "text_probe", "judgment": "text probe", "texts": 160, "n_pos": 32, "n_neg": 128,
             "auroc": sum(probe_ci) / 2, "ci_low": probe_ci[0], "ci_high": probe_ci[1], "diff": np.nan,
             "diff_ci_low": np.nan, "diff_ci_high": np.nan},
            {"score": "confidence", "judgment": "own stated confidence", "texts": 160, "n_pos": 32, "n_neg": 128,
             "auroc": 0.6, "ci_low": 0.5, "ci_high": 0.7, "diff": sum(diff_ci) / 2, "diff_ci_low": diff_ci[0],
             "diff_ci_high": diff_ci[1]}]).assign(source="s", models="m")

    below = hrt.verdicts(table((0.23, 0.44), (-0.31, -0.03)))[0]
    assert below.status == INSUFFICIENT and "lies below chance" in below.reason
    assert "noise of its own fit" in hrt.verdict_paragraph([below], table((0.23, 0.44), (-0.31, -0.03)))
    at_chance = hrt.verdicts(table((0.45, 0.58), (-0.31, -0.03)))[0]  # a probe at chance that loses: decided
    assert at_chance.status == NOT_SUPPORTED


def test_split_source_and_skipped_sources():
    assert hrt.split_source("squad:prospective") == ("squad", "prospective")
    assert hrt.split_source("squad") == ("squad", None)
    vs = hrt.verdicts(pd.DataFrame(), {"x:y": "x:y has no reasoning text"})
    assert vs[0].status == INSUFFICIENT and "no reasoning text" in vs[0].reason
    assert "insufficient on x:y" in hrt.verdict_paragraph(vs)


def test_ablation_reports_both_feature_sets():
    t = hrt.ablation(_rows(n=80), ["n_chars", "n_words"], cv=3)
    assert list(t["features"]) == ["all features", "without n_chars and n_words"]
    assert t["auroc"].iloc[0] > 0.8


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    path = tmp_path_factory.mktemp("rt") / "panel.csv"
    write_responses(example_responses(n_models=3, n_items=12, seed=2), path)
    return path


def test_reasoning_text_chapter_runs_on_a_source_without_reasoning_text(synthetic, tmp_path):
    nb = chapter.run("reasoning_text", [str(synthetic)], tmp_path,
                     parameters={"sampled_run": "", "answer_sources": [], "n_boot": 20}, html=False).notebook
    text = nb.read_text()
    assert "has no reasoning text" in text or "names no probe" in text
    assert "Traceback" not in text


def test_audit_chapter_runs_on_a_source_without_policies(synthetic, tmp_path):
    nb = chapter.run("audit", [str(synthetic)], tmp_path, parameters={"n_examples": 2}, html=False).notebook
    text = nb.read_text()
    assert "no answers under the audit policies" in text and "Traceback" not in text


def _yes_no_source(knower: bool, n=80, seed=0):
    """Three models answering yes/no/abstain items (no answer set, as on the audit): one knower
    (90% right when ``knower``, else a guesser), a guesser, and a guesser without reasoning text."""
    rng = np.random.default_rng(seed)
    rows = []
    for model, acc, text in (("m/knower", 0.9 if knower else 0.5, True), ("m/guess", 0.5, True),
                             ("m/silent", 0.5, False)):
        for i in range(n):
            gold = "yes" if i % 2 else "no"
            right = rng.random() < acc if acc != 0.5 else (i // 2) % 2 == 0
            dec = "abstain" if i == 0 else (gold if right else ("no" if gold == "yes" else "yes"))
            rows.append({"model": model, "item_id": f"q{i}", "benchmark": "toy_yes_no", "probe": "c2",
                         "decision": dec, "confidence": 0.9, "parse_status": "ok",
                         "correct": np.nan if dec == "abstain" else float(right),
                         "reasoning_text": (SURE if right else UNSURE) + f" Item {i}." if text else None})
    return pd.DataFrame(rows)


def test_gate_reads_yes_no_decisions_and_leaves_at_chance_models_out():
    kept, gate = hrt.gate_models(_yes_no_source(knower=True), "c2")
    assert kept == ["m/knower"]
    assert (gate["chance"] == 0.5).all() and gate["chance_known"].all()  # never "chance unknown"


def test_pooled_counts_agree_and_no_passing_model_puts_a_notice_on_top(monkeypatch):
    import metacog.data

    for knower in (True, False):
        monkeypatch.setattr(metacog.data, "load_responses", lambda name, k=knower: _yes_no_source(k))
        res = hrt.analyse(["toy:c2"], n_boot=50, cv=3)
        kept, texts = res["models"]["toy:c2"]
        assert texts == ["m/guess", "m/knower"]  # the silent model wrote no text: not counted
        if knower:
            assert kept == ["m/knower"] and hrt.no_model_notice(res) == ""
            assert set(res["rows"]["toy:c2"]["model"]) == {"m/knower"}
        else:
            assert kept == [] and "toy:c2" in res["skipped"] and not len(res["table"])
            notice = hrt.no_model_notice(res)
            assert notice.startswith("```{warning}\nNo model on this page answers above chance")
            assert "gives no estimate" in notice and "- toy:c2: knower" in notice


def test_a_source_left_out_before_gating_is_not_blamed_on_chance_and_its_fix_is_spelled_out(monkeypatch):
    """A file holding several probes and naming none is left out before any model is gated: the
    notice must not say no model answers above chance, and the fix names a real probe (the old
    '<probe>' placeholder vanished from the page as an HTML tag)."""
    import metacog.data

    two = pd.concat([_yes_no_source(True), _yes_no_source(True).assign(probe="second_look")])
    monkeypatch.setattr(metacog.data, "load_responses", lambda name: two)
    res = hrt.analyse(["toy"], n_boot=50, cv=3)
    assert res.models == {} and "give it with the probe to read after a colon, e.g. 'toy:c2'" in res.skipped["toy"]
    notice = hrt.no_model_notice(res)
    assert notice.startswith("```{warning}\nNo source given could be analysed") and "above chance" not in notice
    assert "<" not in notice


def test_a_file_that_records_no_parse_status_is_not_called_off_format():
    """Without parse statuses there is no format to fail: every model conforms (the loader adds an
    empty parse_status column, which read as 'no reply parsed' and left every model out)."""
    rows = _yes_no_source(True).assign(parse_status=None)
    kept, gate = hrt.gate_models(rows, "c2")
    assert gate["conforms"].all() and kept == ["m/knower"]
    rows.loc[rows["model"] == "m/knower", "parse_status"] = "unparsed"
    assert hrt.gate_models(rows, "c2")[0] == []  # a recorded failure to parse still counts


def test_the_pooled_rows_are_the_texts_the_probe_was_fitted_on():
    # the place replies: 39 of 200 were cut before a confidence, so they are not compared
    src = "place_qwen15:verbal_confidence"
    r = hrt.analyse([src], n_boot=200)
    rows, t = r.rows[src], r.table.set_index("score")
    assert len(rows) == t.at["text_probe", "texts"] == t.at["confidence", "texts"] < 200
    assert rows["confidence"].notna().all() and t.at["confidence", "judgment"] == "own stated confidence"
    assert not rows["reasoning_text"].str.contains("Confidence").any()  # the stated number is not read


def test_a_probe_beats_chance_only_with_enough_texts_and_its_interval_above_half():
    src = "place_qwen15:verbal_confidence"
    r = hrt.analyse([src], n_boot=200)
    assert not hrt.probe_beats_chance(r, src)  # 0.33, wholly below 0.5
    assert not hrt.probe_beats_chance(r, "not a source")
    row = r.table.index[r.table["score"] == "text_probe"][0]
    r.table.loc[row, ["auroc", "ci_low", "ci_high"]] = [0.7, 0.6, 0.8]
    assert hrt.probe_beats_chance(r, src)
