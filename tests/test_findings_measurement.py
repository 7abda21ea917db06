"""The findings page: a row decided on a first-token P(Yes) answerer is a different measurement
from paper 2's; the book's own recorded run has its design; raw self-against-other rows name
their missing base-rate control; the paper-1-design table names every chapter that reads a panel."""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.data.designs import Design, design, designs_table
from metacog.hypotheses.verdict import decide
from metacog.pages import findings

AFTER = Design("after answering", "verbal P(correct) after a yes/no answer under policies C0, C1 and C2")


def _gain(label):
    return decide(f"{label}: self-critique with abstention lowers the policy-aware loss",
                  "mean gain of C2 over C0", -0.07, -0.12, -0.02, line=0.0, direction="greater",
                  n={"models above chance": 1, "items": 132}, min_counts={"models above chance": 1},
                  digits=3)


def test_a_p_yes_answerers_row_is_a_different_measurement():
    p_yes = "local/qwen2.5-coder-1.5b · P(Yes)"
    rows = [findings.Found("miscalibration", _gain("audit_policies · qwen2.5-coder-1.5b · P(Yes)"),
                           "audit_policies · qwen2.5-coder-1.5b · P(Yes)", AFTER, answerers=(p_yes,)),
            findings.Found("miscalibration", _gain("audit_policies · qwen2.5-coder-1.5b"),
                           "audit_policies · qwen2.5-coder-1.5b", AFTER, answerers=("local/qwen2.5-coder-1.5b",))]
    t = findings.findings_table(rows)
    assert list(t["claim_id"]) == ["p2-gain", "p2-gain"]
    by = t.set_index("panel")["agreement"]
    assert by["audit_policies · qwen2.5-coder-1.5b · P(Yes)"] == "different measurement: not comparable"
    assert by["audit_policies · qwen2.5-coder-1.5b"] == "disagrees with the paper"  # a stated judgment
    counts = findings.agreement_counts(t).iloc[0]
    assert counts["not comparable (different design, measurement or contrast)"] == 1
    assert counts["disagrees with the paper"] == 1


def test_a_p_yes_rows_reason_gives_the_stated_figures_their_gate_and_the_size():
    gate0 = pd.DataFrame({"model": ["local/qwen2.5-coder-1.5b", "local/qwen2.5-coder-1.5b · P(Yes)"],
                          "accuracy": [0.515, 0.674], "ci_low": [0.427, 0.587], "ci_high": [0.603, 0.753],
                          "at_chance": [True, False], "carries_signal": [False, True]})
    gate2 = gate0.assign(accuracy=[0.5, 0.519], ci_low=[0.41, 0.43], ci_high=[0.59, 0.61],
                         at_chance=[True, True], carries_signal=[False, False])
    note = findings._p_yes_note("local/qwen2.5-coder-1.5b · P(Yes)", "a C2 gain of 0.126 (95% CI 0.018 to 0.234)",
                                gate0, gate2, "used gpt-4.1-mini")
    assert note.startswith("decided on qwen2.5-coder-1.5b · P(Yes), the model's first-token P(Yes)")
    assert "qwen2.5-coder-1.5b's stated P(correct) gives a C2 gain of 0.126 (95% CI 0.018 to 0.234)" in note
    assert "its stated answers are at chance (C0 accuracy 0.52, exact 95% CI 0.43–0.60)" in note
    assert "under C2 its P(Yes) answers are themselves at chance (accuracy 0.52" in note
    assert "qwen2.5-coder-1.5b is a 1.5B model, where paper 2 used gpt-4.1-mini" in note
    # a probed model is named without its provider ('qwen2.5-coder-1.5b · P(Yes)'): the same gates apply
    probed = findings._p_yes_note("qwen2.5-coder-1.5b · P(Yes)", "", gate0, None, "probed 7–8B models")
    assert "its stated answers are at chance (C0 accuracy 0.52" in probed
    assert "1.5B model, where paper 2 probed 7–8B models" in probed and "gives" not in probed
    # a name that states no size still names paper 2's model
    assert findings._size_clause("local/mystery · P(Yes)", "used gpt-4.1-mini") == "paper 2 used gpt-4.1-mini"


def test_the_books_own_place_run_has_its_design():
    d = design("place_qwen15", "verbal_confidence")
    assert d.timing == "after answering" and "0-100" in d.elicitation
    assert d.temperature == "0"
    assert "max_tokens 256 (the panel: 1024)" in d.prompt and "SHARED_SAMPLING_TEMPLATE" in d.prompt
    assert "place_qwen15" in d.basis and "unknown" not in d.elicitation
    t = designs_table()
    place = t[t["source"] == "place_qwen15"]
    assert len(place) == 2 and set(place["timing"]) == {"after answering"}


def _row(chapter, claim, statistic, est, lo, hi, design_="prospective"):
    v = decide(claim, statistic, est, lo, hi, line=0.0, direction="greater", digits=3)
    return findings.Found(chapter, v, claim.split(": ", 1)[0], Design(design_, "yes/no"))


def test_raw_self_other_rows_say_they_are_not_base_rate_controlled():
    own = "a model's confidence tracks its own correctness better than other models'"
    rows = [_row("pairwise", f"P, all items: {own}", "self minus other τ-b", 0.027, 0.02, 0.035),
            _row("pairwise", f"Q, all items: {own}", "self minus other τ-b", 0.01, -0.01, 0.03),
            _row("power", f"P: {own}, beyond base rates", "excess of T over its null", 0.02, 0.015, 0.03)]
    t = findings.findings_table(rows).set_index("panel")
    assert t.loc["P", "claim_id"] == "p1-individual-beyond"
    assert t.loc["P", "agreement"] == "disagrees with the paper"
    p, q = t.loc["P, all items"], t.loc["Q, all items"]
    assert "not controlled for base rates" in p["statistic"]
    assert "beyond base rates (the power chapter's excess over its simulated null) this panel reads supported" in p["reason"]
    assert "does not test this panel" in q["reason"]


def test_paper_design_panels_name_every_chapter_that_reads_them():
    spar, after = Design("prospective", "answer-or-pass"), Design("after answering", "0-100")
    found = findings.Collected([], {"spar · simplemc · prospective": (spar, ["rank_one", "pairwise", "shortcut", "power"]),
                                    "Atlas · verbal confidence": (after, ["rank_one"]),
                                    "squad · counterfactual": (Design("counterfactual", "yes/no"), ["rank_one"])})
    t = findings.paper_designs_panels(found)
    assert list(t["panel"]) == ["spar · simplemc · prospective", "squad · counterfactual"]
    assert t.iloc[0]["chapters"] == "rank_one, pairwise, shortcut, power"
    assert not t["panel"].str.contains(":").any()


def test_reasoning_text_sources_take_the_panel_names():
    assert findings._panel_name("squad:prospective") == "squad · prospective"
    assert findings._panel_name("legalbench:answer_no_context") == "legalbench · answer no context"


def test_a_claim_decided_only_on_another_measurement_is_out_of_reach():
    p_yes = "local/qwen2.5-coder-1.5b · P(Yes)"
    label = "audit_policies · qwen2.5-coder-1.5b · P(Yes)"
    t = findings.findings_table([findings.Found("miscalibration", _gain(label), label, AFTER, answerers=(p_yes,))])
    u = findings.untestable(t, chapters=["miscalibration"]).set_index("claim")
    why = u.loc["Self-critique with abstention (C2) lowers the policy-aware loss against C0", "why"]
    assert f"decided only where it is not comparable with the paper: {label} (not supported; different measurement" in why
    # decided on a stated judgment, it is within reach
    plain = findings.findings_table([findings.Found("miscalibration", _gain("audit_policies · m"), "audit_policies · m",
                                                    AFTER, answerers=("local/m",))])
    assert "Self-critique with abstention (C2) lowers the policy-aware loss against C0" not in set(
        findings.untestable(plain, chapters=["miscalibration"])["claim"])
