"""metacog.pages.benchmark and metacog.pages.audit on planted data: gates, context gain, AUROC cells, verdicts."""

import numpy as np
import pandas as pd
import pytest

from metacog.pages import audit as ap
from metacog.pages import benchmark as bp
from metacog.hypotheses.verdict import NEGLIGIBLE, INSUFFICIENT, NOT_SUPPORTED, SUPPORTED


def _bench(n=60, acc_with=(0.8, 0.3), acc_without=(0.4, 0.3), signal=2.0, seed=0):
    """Two models; model A knows (its P(Yes) follows its success), model B guesses."""
    rng = np.random.default_rng(seed)
    rows = []
    for m, (aw, an) in zip(["p/A", "p/B"], zip(acc_with, acc_without)):
        without = (rng.random(n) < an).astype(float)
        withc = np.maximum(without, (rng.random(n) < (aw - an) / max(1 - an, 1e-9)).astype(float))
        for i in range(n):
            item = f"i{i:03d}"
            rows.append(dict(model=m, item_id=item, probe="answer", correct=withc[i], decision=None,
                             confidence=np.nan, p_yes=np.nan, parse_status="ok"))
            rows.append(dict(model=m, item_id=item, probe="answer_no_context", correct=without[i],
                             decision=None, confidence=np.nan, p_yes=np.nan, parse_status="ok"))
            z = (signal if m == "p/A" else 0.0) * (without[i] - 0.5) + rng.normal()
            p = 1 / (1 + np.exp(-z))
            rows.append(dict(model=m, item_id=item, probe="prospective", correct=without[i],
                             decision="yes" if p > 0.5 else "no", confidence=float(p > 0.5), p_yes=p,
                             parse_status="ok"))
    return pd.DataFrame(rows)


def test_context_gain_and_the_ill_posed_question():
    df = _bench()
    gain = bp.context_gain(df).set_index("model")
    assert gain.loc["p/A", "gain"] > 0.25 and gain.loc["p/A", "gain_ci_low"] > 0
    assert gain.loc["p/B", "gain"] == 0 and gain.loc["p/B", "gain_ci_low"] < 0 < gain.loc["p/B", "gain_ci_high"]
    v = {x.claim.split(":")[0]: x for x in bp.gain_verdicts(bp.context_gain(df))}
    assert v["A"].status == SUPPORTED
    # its gain interval lies inside ±0.05: negligible, never "not supported" (issue 37)
    assert v["B"].status == NEGLIGIBLE and "two one-sided tests" in v["B"].reason
    text = bp.gain_sentence(list(v.values()))
    assert "ill-posed for this model" in text and "B" in text


def test_auroc_cells_refuse_small_classes_and_flag_single_class():
    assert bp.auroc_cell({"n_pos": 2, "n_neg": 38, "auroc": 0.95, "ci_low": 0.8, "ci_high": 1.0,
                          "sufficient": False}) == "insufficient evidence (only 2 positives)"
    assert bp.auroc_cell({"n_pos": 0, "n_neg": 40, "auroc": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                          "sufficient": False}).startswith("undefined")
    assert "95% CI" in bp.auroc_cell({"n_pos": 20, "n_neg": 20, "auroc": 0.7, "ci_low": 0.55, "ci_high": 0.85,
                                      "sufficient": True})


def test_judgment_verdict_flips_with_the_planted_signal():
    knows = _bench(n=120, signal=3.0)
    gate = bp.model_gate(knows)
    scores = bp.judgment_scores(knows, "prospective", gate)
    assert set(scores["score"]) == {"confidence", "p_yes"}
    v = {x.claim.split(":")[0]: x for x in bp.judgment_verdicts(scores)}
    assert v["A"].status == SUPPORTED and "P(Yes)" in v["A"].statistic
    assert v["B"].status == INSUFFICIENT
    flat = _bench(n=120, signal=0.0)
    v0 = {x.claim.split(":")[0]: x for x in bp.judgment_verdicts(bp.judgment_scores(flat, "prospective",
                                                                                    bp.model_gate(flat)))}
    assert v0["A"].status != SUPPORTED
    shown = bp.display_scores(scores)
    assert list(shown.columns)[0] == "model" and not shown.isin(["nan", "NaN"]).any().any()


def test_models_at_chance_are_marked_and_kept_out_of_claims():
    df = _bench(n=60, acc_without=(0.4, 0.0))  # B never right without the context
    gate = bp.model_gate(df)
    assert gate.set_index("model").loc["p/B", "carries_signal"] == False  # noqa: E712
    scores = bp.judgment_scores(df, "prospective", gate)
    v = {x.claim.split(":")[0]: x for x in bp.judgment_verdicts(scores)}
    assert v["B"].status == INSUFFICIENT and "0 correct of 60, below the minimum of 10" in v["B"].reason
    assert "(fails the gate)" in " ".join(bp.display_scores(scores)["model"])
    assert "B does not" in bp.gate_sentence(gate)


def _audit(n=120, knows=True, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    gold = np.tile([1.0, 0.0], n // 2)
    for m in ["p/K", "p/Y"]:
        for i in range(n):
            if m == "p/K" and knows:
                p = 1 / (1 + np.exp(-(2.5 * (gold[i] - 0.5) + rng.normal())))
            else:
                p = 0.8 + 0.1 * rng.random()  # always yes, P(Yes) unrelated to the truth
            dec = "yes" if p > 0.5 else "no"
            correct = float((dec == "yes") == (gold[i] == 1))
            rows.append(dict(model=m, item_id=f"a{i}", probe="c0", decision=dec, p_yes=p, correct=correct,
                             confidence=0.9, parse_status="ok", domain="d"))
    return pd.DataFrame(rows)


def test_audit_knowledge_in_p_yes_and_overconfidence():
    df = _audit()
    assert ap.policies(df) == ["c0"]
    gate = bp.model_gate(df, "c0")
    sig = gate.set_index("model")["carries_signal"]
    assert sig["p/K"] and not sig["p/Y"]
    scores = ap.audit_scores(df, "c0", gate)
    v = {x.claim: x for x in ap.audit_verdicts(scores, "c0")}
    assert v["K under C0: its P(Yes) tells true from false items"].status == SUPPORTED
    assert v["Y under C0: its P(Yes) tells true from false items"].status == INSUFFICIENT
    assert "at chance" in v["Y under C0: its stated confidence tells right from wrong answers"].reason
    over = {x.claim.split(" under")[0]: x for x in ap.overconfidence_verdicts(ap.overconfidence(df, "c0"), "c0")}
    assert over["Y"].status == SUPPORTED  # says 0.9 while right half the time
    text = ap.verdict_paragraph(list(v.values()) + list(over.values()))
    assert "which needs no knowledge and so is decided for models at chance too) is established for Y" in text
    flat = _audit(knows=False)
    vf = {x.claim: x for x in ap.audit_verdicts(ap.audit_scores(flat, "c0", bp.model_gate(flat, "c0")), "c0")}
    assert vf["K under C0: its P(Yes) tells true from false items"].status != SUPPORTED


def test_audit_sources_without_policies_are_named(tmp_path):
    from metacog.power.examples import example_responses, write_responses

    path = tmp_path / "panel.csv"
    write_responses(example_responses(n_models=3, n_items=10, seed=0), path)
    res = ap.analyse_sources([str(path)])
    assert res["gate"].empty and list(res["skipped"]) == ["panel.csv"]  # by its file name, never its folder
    assert "The source panel.csv is left out: it has no answers under the audit policies" in \
        ap.skipped_sentence(res["skipped"])


def test_display_verdicts_hides_numbers_resting_on_too_few_cases():
    df = _bench(n=12, acc_without=(0.25, 0.25))
    scores = bp.judgment_scores(df, "prospective", bp.model_gate(df, min_items=5))
    shown = bp.display_verdicts(bp.judgment_verdicts(scores))
    assert (shown["estimate (95% CI)"] == "not shown (see why)").all()


def test_gate_sentence_for_one_model_at_chance_says_it_carries_no_signal():
    from metacog.pages.benchmark import gate_sentence

    s = gate_sentence(pd.DataFrame({"model": ["local/x"], "carries_signal": [False]}))
    assert "carry no signal" in s and s.startswith("The answers of x (the only model judged here) carry no")
    two = gate_sentence(pd.DataFrame({"model": ["local/x", "local/y"], "carries_signal": [False, False]}))
    assert two.startswith("The answers of neither model carry signal")
    three = gate_sentence(pd.DataFrame({"model": list("abc"), "carries_signal": [False] * 3}))
    assert three.startswith("The answers of none of the 3 models carry signal")


def test_audit_verdict_paragraph_names_every_model_without_truncation():
    from metacog.hypotheses.verdict import SUPPORTED, Verdict
    from metacog.pages.audit import verdict_paragraph

    names = [f"model-{i} under C{j}" for i in range(4) for j in range(3)]
    vs = [Verdict(claim=f"{n}: overconfident", statistic="gap", estimate=0.2, ci_low=0.1, ci_high=0.3,
                  n={}, status=SUPPORTED, reason="", line=0.0) for n in names]
    text = verdict_paragraph(vs)
    assert "more" not in text and all(n in text for n in names)
    assert text.startswith("The first-token P(Yes) tells true from false items for no model;")


def test_item_text_shows_several_gold_answers_in_words_not_a_list():
    from metacog.pages.benchmark import item_text
    from metacog.tidy.items import Item

    it = Item("q1", "squad", "When?", ["winter of 1973", "the winter of 1973", "winter of 1973"],
              context="A passage.", context_kind="passage")
    text = item_text([it])
    assert "GOLD: winter of 1973 | the winter of 1973" in text and "[" not in text
    assert item_text([Item("q2", "math", "2+2?", "4", context="c", context_kind="passage")]).endswith("GOLD: 4")


def test_audit_notice_at_the_top_when_no_model_passes_and_the_overconfidence_exemption():
    flat = _audit(knows=False)
    gate = bp.model_gate(flat, "c0").assign(policy="C0")
    gate = gate[gate["model"] == "p/Y"]  # the yes-sayer alone: no model passes
    notice = ap.no_signal_notice(gate)
    assert notice.startswith("```{warning}\nNo model on this page passes the adequacy gate")
    assert "overconfidence (mean stated confidence above accuracy) needs no knowledge" in notice
    assert "- Y: under C0, " in notice
    assert ap.no_signal_notice(bp.model_gate(_audit(), "c0")) == ""  # the knower passes: no notice
    two = pd.concat([gate.assign(source="a"), gate.assign(source="b")])
    assert "- Y: under a C0, " in ap.no_signal_notice(two) and "; under b C0, " in ap.no_signal_notice(two)
    assert "One claim is exempt from the gate: overconfidence" in ap.gate_summary(gate)


def test_the_format_rule_is_monotone_in_its_rate():
    """Issue 38: a higher conformance rate never gives a verdict to a model a lower one withheld
    (before, no model reaching the rate put every model back in)."""
    from metacog.tidy import tables

    models = ["org/a", "org/b"]
    assert bp.format_scope_sentence(models, [], 0.8).startswith("No model follows the format at 0.8:")
    assert bp.format_scope_sentence(models, ["org/a"], 0.8).startswith("Not following the format at 0.8: b.")
    assert bp.format_scope_sentence(models, models, 0.8) == ("Every model follows the format at 0.8, so no "
                                                             "verdict is withheld for it.")
    s = bp.stricter_format_sentence(models, models, [], 0.8, 0.95)
    assert s == ("At 0.8 a and b follow the format, so their verdicts are not withheld for it; at 0.95 no model "
                 "follows the format, so every verdict is withheld.")
    df = _bench(n=40)
    df.loc[(df["model"] == "p/B") & (df["probe"] == "prospective") & (df["item_id"] < "i010"), "parse_status"] = "unparseable"
    rates = {}
    for rate in (0.5, 0.8, 0.95, 1.0):
        kept = tables.conforming_models(df, min_rate=rate)
        v = bp.withhold_unformatted(bp.gain_verdicts(bp.context_gain(df)), df, kept, rate)
        rates[rate] = {x.claim.split(":")[0] for x in v if not x.reason.startswith("it does not follow the format")}
    assert rates[0.5] == {"A", "B"} and rates[0.95] == {"A"}  # B parses 110 of its 120 replies (92%)
    assert rates[0.5] >= rates[0.8] >= rates[0.95] >= rates[1.0]
    withheld = [x for x in bp.withhold_unformatted(bp.gain_verdicts(bp.context_gain(df)), df, ["p/A"], 0.95)
                if x.claim.startswith("B")]
    assert withheld[0].status == INSUFFICIENT and "of its replies parse, below the page's 95%" in withheld[0].reason


def _yes_sayer_with_p_yes(n=120, seed=4):
    """C0/C1/C2 rows of a model that says Yes to everything while its first-token P(Yes) knows."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        gold_yes = i % 2 == 1
        for probe in ("c0", "c1", "c2"):
            p = 1 / (1 + np.exp(-(3 + 2 * (2 * gold_yes - 1) + rng.normal(0, 1))))
            rows.append(dict(model="yes-sayer", item_id=f"q{i:03d}", probe=probe, domain=f"d{i % 6}",
                             benchmark="audit", decision="yes", confidence=0.9, p_yes=p,
                             correct=float(gold_yes), parse_status="ok"))
    return pd.DataFrame(rows)


def test_audit_notice_says_where_the_p_yes_reading_passes_and_claims_name_their_source(tmp_path):
    paths = []
    for name in ("a.csv", "b.csv"):
        paths.append(str(tmp_path / name))
        _yes_sayer_with_p_yes().to_csv(paths[-1], index=False)
    res = ap.analyse_sources(paths)
    assert not res["gate"]["carries_signal"].any()  # its words say Yes to everything
    p_yes = ap.p_yes_gate(paths)
    assert list(p_yes["source"]) == ["a.csv", "b.csv"] and p_yes["carries_signal"].all()
    notice = ap.no_signal_notice(res["gate"], p_yes)
    assert notice.startswith("```{warning}\nNo model on this page passes the adequacy gate")
    assert "The first-token P(Yes) is another matter" in notice
    assert "it passes the gate for yes-sayer on a.csv (" in notice and "yes-sayer on b.csv (" in notice
    assert "· P(Yes) on" not in notice  # the sentence already says it is the P(Yes)
    failing = ap.p_yes_gate_sentence(p_yes.assign(carries_signal=False))
    assert failing.endswith("fails the gate too, for both answerers.")
    assert ap.p_yes_gate_sentence(p_yes.iloc[:0]) == "" and ap.p_yes_gate_sentence(None) == ""
    claims = [v.claim for v in res["verdicts"]]
    assert "yes-sayer under C0 on a.csv: overconfident on average" in claims
    assert "yes-sayer under C0 on b.csv: overconfident on average" in claims
    one = ap.analyse_sources(paths[:1])
    assert "yes-sayer under C0: overconfident on average" in [v.claim for v in one["verdicts"]]


def test_a_stated_confidence_withheld_at_the_gate_names_what_the_gate_tested():
    """Issue 38: a model that says Yes to everything fails the gate on its answers, while its
    P(Yes) tells true from false items; the reason says so instead of 'no knowledge'."""
    rng, noise = np.random.default_rng(3), np.random.default_rng(4)
    gold = np.tile([1.0, 0.0], 60)
    rows = []
    for i, g in enumerate(gold):
        for m, hidden in (("p/H", True), ("p/N", False)):
            p = 0.55 + 0.4 / (1 + np.exp(-(3 * (g - 0.5) + rng.normal()))) if hidden else 0.55 + 0.4 * noise.random()
            rows.append(dict(model=m, item_id=f"a{i}", probe="c0", decision="yes", p_yes=p, correct=float(g == 1),
                             confidence=0.9, parse_status="ok", domain="d"))
    df = pd.DataFrame(rows)
    gate = bp.model_gate(df, "c0")
    assert not gate.set_index("model")["carries_signal"].any()
    v = {x.claim: x for x in ap.audit_verdicts(ap.audit_scores(df, "c0", gate), "c0")}
    hidden = v["H under C0: its stated confidence tells right from wrong answers"]
    assert hidden.status == INSUFFICIENT
    assert "worded answers are at chance" in hidden.reason
    assert "although its first-token P(Yes) tells true from false items (AUROC 0." in hidden.reason
    assert "no knowledge" not in hidden.reason
    # a lower end just above 0.5 is printed with the digits that keep it apart from 0.5, and a
    # discrimination below 0.6 is called weak
    weak = ap._gate_reason({"auroc": 0.553, "ci_low": 0.5049, "ci_high": 0.601})
    assert "P(Yes) weakly tells true from false items (AUROC 0.55, 0.505 to 0.60)" in weak
    flat = v["N under C0: its stated confidence tells right from wrong answers"]
    assert "does not tell true from false items either" in flat.reason


def test_what_the_models_wrote_is_a_table_not_a_dump():
    """Issue 38: the benchmark page's rationales and attempts are tables of the model, the
    judgment, its P(Yes) and grade, and the text, not debugging lines like 'decision=yes'."""
    df = _bench(n=8)
    df["reasoning_text"] = np.where(df["probe"] == "prospective", "I know this one " * 60, None)
    df["raw_text"] = np.where(df["probe"] != "prospective", "Final answer: 42", None)
    t = bp.rationale_examples(df, n_examples=2, seed=0)
    assert list(t.columns) == ["model", "item", "judgment", "P(Yes)", "right without the context", "rationale"]
    assert len(t) == 4 and set(t["model"]) == {"A", "B"}
    assert set(t["judgment"]) <= {"yes", "no"} and set(t["right without the context"]) <= {"yes", "no"}
    assert all(len(x) <= 404 and x.endswith(" ...") for x in t["rationale"])
    assert "decision=" not in repr(t)
    a = bp.attempt_examples(df, seed=0)
    assert list(a.columns) == ["model", "attempt", "item", "right", "reply"] and len(a) == 4
    assert set(a["attempt"]) == {"with the context", "without it"}
    empty = bp.rationale_examples(df[df["probe"] != "prospective"])
    assert list(empty["note"]) == ["No prospective rationales."]


def test_the_gain_sentence_says_why_a_gain_is_undecided():
    """A gain above 0 that reaches across the margin, a gain withheld by the format rule and a
    gain whose interval straddles 0 are three different sentences, not one 'cannot tell'."""
    gain = pd.DataFrame({"model": ["o/some", "o/fmt", "o/flat"], "gain": [0.13, 0.55, 0.0],
                         "gain_ci_low": [0.04, 0.37, -0.12], "gain_ci_high": [0.22, 0.68, 0.12],
                         "items": [60, 60, 60]})
    v = bp.gain_verdicts(gain)
    df = pd.DataFrame({"model": ["o/some"] * 10 + ["o/fmt"] * 10 + ["o/flat"] * 10, "probe": "prospective",
                       "parse_status": ["ok"] * 10 + ["unparseable"] * 10 + ["ok"] * 10})
    v = bp.withhold_unformatted(v, df, ["o/some", "o/flat"], 0.8)
    s = bp.gain_sentence(v)
    assert "For some the gain is 0.13 (95% CI 0.04 to 0.22): the context helps, but whether by 0.05" in s
    assert "For fmt the gain is 0.55 (95% CI 0.37 to 0.68), but its verdict is withheld: it does not follow the format." in s
    assert "For flat the gain is" in s and "the data cannot tell whether the context helps" in s


def test_the_format_table_says_not_asked_for_a_probe_a_model_was_never_asked():
    import pandas as pd

    from metacog.pages.benchmark.conformance import display_conformance

    rows = [{"model": m, "item_id": f"i{i}", "probe": p, "parse_status": "ok"}
            for m, probes in (("local/a", ["answer", "counterfactual"]), ("local/b", ["answer"]))
            for p in probes for i in range(5)]
    shown = display_conformance(pd.DataFrame(rows)).set_index("model")
    assert shown.at["b", "counterfactual"] == "not asked" and shown.at["a", "counterfactual"] != "not asked"
    assert shown.at["b", "answer"] == shown.at["a", "answer"]
