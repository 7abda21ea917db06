"""The adequacy gate reads chance from each item's own answer set, and needs enough correct and
parsed answers: planted LegalBench-like, multiple-choice, mixed and free-answer runs."""

import numpy as np
import pandas as pd
import pytest

from metacog.hypotheses.adequacy import MIN_CORRECT, adequacy
from metacog.hypotheses.answer_sets import answer_sets, answer_sets_for, item_answer_set
from metacog.pages import benchmark as bp
from metacog.tidy.items import Item


def yes_no_items(n, hint=True, labels=True, yes_share=0.5):
    """LegalBench-like items: the label set in meta and (or only) in the question."""
    out = []
    for i in range(n):
        q = f"Is clause {i} a warranty?" + ("\n\nAnswer with one of: No, Yes." if hint else "")
        out.append(Item(item_id=f"task/{i}", benchmark="legalbench", question=q,
                        gold="Yes" if i < round(n * yes_share) else "No", context="definition",
                        context_kind="definition", meta={"labels": ["No", "Yes"]} if labels else {}))
    return out


def answers(model, ids, n_correct, probe="answer_no_context", n_parsed=None, decision="No, Yes"):
    """One model's graded attempts: the first ``n_correct`` right, the first ``n_parsed`` parsed."""
    n = len(ids)
    n_parsed = n if n_parsed is None else n_parsed
    return pd.DataFrame({"model": model, "item_id": ids, "probe": probe, "decision": decision,
                         "correct": (np.arange(n) < n_correct).astype(float),
                         "parse_status": np.where(np.arange(n) < n_parsed, "ok", "unparseable")})


def test_legalbench_like_label_set_gives_chance_one_half_and_a_037_model_fails():
    items = yes_no_items(60)
    ids = [it.item_id for it in items]
    df = answers("m", ids, 22)  # 0.37, the recorded LegalBench figure; decisions are not all yes/no
    a = adequacy(df, items=items).iloc[0]
    assert a["chance"] == 0.5 and a["chance_known"] and a["chance_basis"] == "1 in 2 answers"
    assert not a["carries_signal"] and a["failed"] == "chance"
    assert "is not above the 0.50" in a["reason"] and a["p_value"] > 0.9
    # the same run without the items knows no chance: flagged as ungated, never a silent 0
    u = adequacy(df).iloc[0]
    assert not u["chance_known"] and np.isnan(u["chance"]) and "ungated against chance" in u["reason"]
    # the label set stated only in the question is read too
    from_text = adequacy(df, items=yes_no_items(60, labels=False)).iloc[0]
    assert from_text["chance"] == 0.5 and not from_text["carries_signal"]
    # a model that does know passes
    assert adequacy(answers("k", ids, 48), items=items).iloc[0]["carries_signal"]


def test_majority_label_raises_the_bar_above_one_half():
    items = yes_no_items(60, yes_share=0.75)
    df = answers("m", [it.item_id for it in items], 45)  # right exactly as often as always-Yes
    a = adequacy(df, items=items).iloc[0]
    assert a["chance"] == 0.5 and a["baseline"] == pytest.approx(0.75)
    assert a["baseline_what"] == "always answering Yes" and not a["carries_signal"]


def test_items_differing_in_answer_sets_average_one_over_k_and_leave_free_answers_out():
    yn = yes_no_items(40)
    mc = [Item(item_id=f"mc/{i}", benchmark="x", question=f"Pick {i}", gold="B",
               meta={"labels": ["A", "B", "C", "D"]}) for i in range(20)]
    free = [Item(item_id=f"free/{i}", benchmark="x", question=f"Name {i}", gold="Paris") for i in range(5)]
    items = yn + mc + free
    df = answers("m", [it.item_id for it in items], 40)
    a = adequacy(df, items=items).iloc[0]
    assert a["chance"] == pytest.approx((40 * 0.5 + 20 * 0.25) / 60)
    assert a["chance_items"] == 60 and a["items"] == 65
    assert "mean 1/k over 60 items" in a["chance_basis"] and "5 free-answer items left out" in a["chance_basis"]
    # majority baseline: both sets have 10+ items; the 4-option set's gold is always B
    assert a["baseline"] == pytest.approx((20 + 20) / 60)
    assert "on the 60 items with an answer set" in a["reason"]


def test_options_count_only_where_the_model_sees_them():
    it = Item(item_id="q1", benchmark="mmlu_pro", question="What is 2+2?", gold="B", context="A. 3\nB. 4",
              context_kind="options", meta={"options": ["3", "4", "5"], "answer_index": 1})
    assert item_answer_set(it, "answer") == (("A", "B", "C"), "B")
    assert item_answer_set(it, "answer_no_context") == ((), None)  # options hidden: a free answer
    t = answer_sets([it], "answer_no_context")
    assert np.isnan(t.loc[0, "n_options"]) and t.loc[0, "answer_set"] is None
    assert item_answer_set(Item(item_id="b", benchmark="tf", question="True?", gold=True)) == (("No", "Yes"), "Yes")


def test_few_correct_and_low_parse_fail_with_their_numbers():
    ids = [f"i{i}" for i in range(40)]
    few = adequacy(answers("few", ids, 3)).iloc[0]
    assert not few["carries_signal"] and few["failed"] == "correct"
    assert "3 correct of 40, below the minimum of 10" in few["reason"]
    assert adequacy(answers("few", ids, 3), min_correct=3).iloc[0]["carries_signal"]  # the threshold is an argument
    low = adequacy(answers("low", ids, 20, n_parsed=7)).iloc[0]
    assert not low["carries_signal"] and low["failed"] == "parsed" and low["parse_rate"] == pytest.approx(7 / 40)
    assert "18% of answers parsed (7 of 40), below the minimum of 50%" in low["reason"]
    both = adequacy(answers("both", ids, 3, n_parsed=7)).iloc[0]
    assert both["failed"] == "correct,parsed"
    assert both["failures"] == ("3 correct of 40, below the minimum of 10; 18% of answers parsed (7 of 40), "
                                "below the minimum of 50%")
    ok = adequacy(answers("ok", ids, MIN_CORRECT, n_parsed=20)).iloc[0]
    assert ok["carries_signal"] and not ok["chance_known"]  # passes on counts only, flagged
    with pytest.raises(ValueError, match="min_parse"):
        adequacy(answers("x", ids, 3), min_parse=50)


def test_items_must_cover_the_responses_and_auto_needs_a_benchmark():
    items = yes_no_items(10)
    df = answers("m", [it.item_id for it in items] + ["other/1"], 5)
    with pytest.raises(ValueError, match="'other/1' has no answer set"):
        adequacy(df, items=items)
    with pytest.raises(ValueError, match="no 'benchmark' column"):
        answer_sets_for(df)
    with pytest.raises(ValueError, match="no loader for benchmark 'nope'"):
        answer_sets_for(df.assign(benchmark="nope"))


def _bench_run(n_correct, n_parsed=40):
    """A page's run: attempts without the context and a prospective judgment on yes/no items."""
    items = yes_no_items(40)
    ids = [it.item_id for it in items]
    nc = answers("p/A", ids, n_correct, n_parsed=n_parsed)
    rng = np.random.default_rng(0)
    pro = nc.assign(probe="prospective", decision=np.where(rng.random(40) < 0.5, "yes", "no"),
                    p_yes=rng.random(40), confidence=0.5, parse_status="ok")
    return pd.concat([nc, pro], ignore_index=True), items


def test_page_where_no_model_passes_says_so_at_the_top_and_draws_no_verdict():
    df, items = _bench_run(n_correct=3, n_parsed=7)
    gate = bp.model_gate(df, items=items)
    notice = bp.no_signal_notice(gate)
    assert notice.startswith("```{warning}\nNo model on this page passes the adequacy gate")
    assert "\n- A: 3 correct of 40, below the minimum of 10; 18% of answers parsed (7 of 40)" in notice
    assert "draws no verdict" in notice and notice.endswith("\n```")
    v = bp.judgment_verdicts(bp.judgment_scores(df, "prospective", gate), "prospective")
    assert [x.status for x in v] == ["insufficient evidence"]
    assert "3 correct of 40, below the minimum of 10" in v[0].reason
    assert bp.verdict_paragraph(v).startswith("No verdict on the prospective judgment: no model's answers pass")
    shown = bp.display_gate(gate)
    assert shown.loc[0, "chance"].startswith("0.50") and shown.loc[0, "passes"] == "no"
    # a passing model: no notice, and the paragraph is the usual one
    df2, items2 = _bench_run(n_correct=36)
    gate2 = bp.model_gate(df2, items=items2)
    assert gate2["carries_signal"].all() and bp.no_signal_notice(gate2) == ""
    v2 = bp.judgment_verdicts(bp.judgment_scores(df2, "prospective", gate2), "prospective")
    assert not bp.verdict_paragraph(v2).startswith("No verdict")


def test_gate_sentence_names_models_passing_on_counts_alone():
    ids = [f"i{i}" for i in range(40)]
    gate = bp.model_gate(pd.concat([answers("p/free", ids, 20), answers("p/few", ids, 2)]))
    s = bp.gate_sentence(gate)
    assert "no chance level is known (free answers)" in s and "free" in s and "few does not" in s
    shown = bp.display_gate(gate).set_index("model")
    assert shown.loc["free", "chance"] == "unknown (free answers)"
    assert shown.loc["free", "passes"].startswith("yes, on counts only")
