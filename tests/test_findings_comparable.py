"""Only like with like: a verdict on a panel of another design (or another contrast) is never
agreement or disagreement with a paper; the self-against-other contrast is judged against the
power chapter's smallest effect of interest; paper 1's per-model test is a decided claim; the
closing sentences count within one design and name every panel."""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.data.designs import Design
from metacog.hypotheses import pairwise as hp
from metacog.hypotheses.pairwise import population as pp
from metacog.hypotheses.power import MARGIN
from metacog.hypotheses.verdict import NEGLIGIBLE, NOT_SUPPORTED, SUPPORTED, INSUFFICIENT, decide
from metacog.pages import findings

SELF = "a model's confidence tracks its own correctness better than other models'"


def _found(panel, timing, status_ci, chapter="pairwise", claim=SELF):
    v = decide(f"{panel}: {claim}", "self minus other τ-b", np.mean(status_ci), *status_ci)
    return findings.Found(chapter, v, panel, Design(timing, "yes/no"))


def test_an_after_answering_row_is_never_agree_or_disagree():
    found = [_found("After", "after answering", (0.03, 0.04)),       # supported, after answering
             _found("Before", "prospective", (0.03, 0.04)),          # supported, prospective
             _found("Others", "prospective, about other people", (-0.04, -0.03))]
    t = findings.findings_table(found).set_index("panel")
    assert t.loc["After", "status"] == SUPPORTED
    assert t.loc["After", "agreement"] == "different design: not comparable"
    assert t.loc["Others", "agreement"] == "different design: not comparable"
    assert t.loc["Before", "agreement"] == "disagrees with the paper"   # paper 1 denies the claim
    counts = findings.agreement_counts(t.reset_index()).set_index("design")
    assert counts.loc["after answering", findings.NOT_COMPARABLE] == 1
    assert "disagrees with the paper" not in counts.columns or counts.loc["after answering",
                                                                           "disagrees with the paper"] == 0
    assert counts.loc["prospective", "disagrees with the paper"] == 1


def test_paper_2_rows_compare_on_its_design_but_not_on_another_contrast():
    gain = findings.Found("miscalibration", decide("audit: self-critique with abstention lowers the "
                                                   "policy-aware loss", "gain", 0.1, 0.05, 0.15),
                          "audit", Design("after answering", "P(correct)"))
    damp = findings.Found("miscalibration", decide("smollm2: self-critique damps the perturbation beyond "
                                                   "its length", "ratio", -0.1, -0.2, -0.05),
                          "smollm2", Design("after answering", "noise"))
    t = findings.findings_table([gain, damp]).set_index("panel")
    assert t.loc["audit", "agreement"] == "agrees with the paper"
    assert t.loc["smollm2", "agreement"] == "different contrast: not comparable"
    # the row keeps the chapter's own wording of what it tested
    assert t.loc["smollm2", "chapter_claim"] == "self-critique damps the perturbation beyond its length"
    claims = findings.claims_table(t.reset_index(), chapters=["miscalibration"]).set_index("claim")
    assert claims.loc["p2-damping", "as the chapter tests it"] == \
        "self-critique damps the perturbation beyond its length"


def test_internal_population_rows_are_their_own_paper_1_claim():
    v = pp.verdicts(_counts_table({"P": ("before answering", 0, 12)}))[0]
    t = findings.findings_table([findings.Found("pairwise", v, "P", Design("prospective", "yes/no"))])
    assert t["claim_id"].iloc[0] == "p1-internal"
    assert t["status"].iloc[0] == NOT_SUPPORTED and t["agreement"].iloc[0] == "agrees with the paper"


def test_shortcut_rows_name_the_difference_in_differences():
    v = decide("Atlas: the symbolic-shortcut account (judges by flag)",
               "reasoning minus non-reasoning self-advantage (τ-b)", -0.04, -0.13, 0.04)
    assert findings._shortcut_statistic(v).statistic == \
        "(formal − other) reasoning-minus-non-reasoning self-advantage (τ-b)"
    twin = decide("Atlas: the symbolic-shortcut account (twin pairs)", "x", 0.03, -0.1, 0.1)
    assert findings._shortcut_statistic(twin).statistic.startswith("(formal − other) thinking-minus-twin")


def _pairwise_rows(spec):
    rows = []
    for panel, (timing, lo, hi) in spec.items():
        rows.append({"panel": panel, "subset": "all items", "timing": timing, "models": 20, "items": 5000,
                     "self_minus_other": (lo + hi) / 2, "self_minus_other_ci_low": lo,
                     "self_minus_other_ci_high": hi})
    return pd.DataFrame(rows)


def test_self_other_is_judged_against_the_power_margin():
    assert MARGIN == 0.02
    t = _pairwise_rows({"inside": ("before answering", 0.005, 0.015),
                        "beyond": ("before answering", 0.025, 0.035),
                        "across": ("before answering", 0.012, 0.03),
                        "after": ("after answering", 0.031, 0.034)})
    v = {x.claim.split(",")[0]: x for x in hp.verdicts(t)}
    assert v["inside"].status == NEGLIGIBLE           # above 0, but inside the line: too small to matter
    assert v["beyond"].status == SUPPORTED
    assert v["across"].status == INSUFFICIENT
    assert v["after"].status == SUPPORTED
    assert "after answering" in v["after"].claim and "not paper 1's measurement" in v["after"].claim
    assert "after answering" not in v["beyond"].claim


def _counts_table(spec):
    """Per panel (timing, models clearly above, models clearly below), plus 3 covering 0."""
    rows = []
    for panel, (timing, above, below) in spec.items():
        cis = [(0.01, 0.05)] * above + [(-0.05, -0.01)] * below + [(-0.02, 0.02)] * 3
        for i, (lo, hi) in enumerate(cis):
            rows.append({"panel": panel, "model": f"m{i}", "timing": timing, "sufficient": True,
                         "ci_low": lo, "ci_high": hi, "diff": (lo + hi) / 2})
    return pd.DataFrame(rows)


def test_internal_population_verdict_from_the_counts():
    t = _counts_table({"below": ("after answering", 1, 16), "above": ("before answering", 10, 0),
                       "tied": ("before answering", 2, 2)})
    v = {x.claim.split(":")[0]: x for x in pp.verdicts(t)}
    assert v["below"].status == NOT_SUPPORTED and v["below"].claim.startswith("below: after answering, ")
    # decided on the panel's mean difference; the per-model counts are Holm-corrected over its 20 models
    assert "after Holm's correction" in v["below"].reason and v["below"].statistic == pp.STATISTIC
    assert v["above"].status == SUPPORTED
    assert v["tied"].status == INSUFFICIENT
    few = _counts_table({"few": ("before answering", 1, 0)})      # 4 sufficient models < MIN_MODELS
    assert pp.verdicts(few)[0].status == INSUFFICIENT


def test_closing_paragraph_counts_within_one_design_and_names_every_panel():
    names = [f"A{i}" for i in range(9)]
    t = _pairwise_rows({**{n: ("after answering", 0.03, 0.04) for n in names},
                        "S": ("before answering", -0.01, 0.01)})
    internal = _counts_table({"A0": ("after answering", 1, 16), "S": ("before answering", 0, 1)})
    third = [decide("S: a model's judgment about itself predicts its correctness better than its judgment "
                    "about other people", "d", 0.0, -0.1, 0.1)]
    text = hp.verdict_paragraph(hp.verdicts(t), third, t, internal, internal=pp.verdicts(internal))
    assert "more" not in text.replace("more than", "").replace("more models", "")
    assert text.index("Judged before answering") < text.index("Judged after answering")
    assert "all 9 of its panel-subsets (A0, all items, A1, all items" in text
    assert "of the 10" not in text and "10 panel" not in text
    assert "The third-person test" in text
    assert "self-advantage after answering exceeds 0.02" in text
    shared = hp.shared_sentence(t.assign(mean_tau=0.1, null_difficulty=0.08))
    assert "all 9 of its panels (A0, A1, A2, A3, A4, A5, A6, A7 and A8)" in shared
    assert "its one panel (S)" in shared
