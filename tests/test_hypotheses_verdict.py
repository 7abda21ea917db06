"""decide(): the three statuses, each reason, and the sentence and table forms."""

import math

import numpy as np
import pytest

from metacog.stats.intervals import auroc_ci
from metacog.hypotheses.verdict import (INSUFFICIENT, NOT_SUPPORTED, SUPPORTED, Verdict, decide, from_auroc,
                             verdict_table)

N = {"models": 18, "items": 500}


def test_interval_above_the_line_is_supported_with_the_promised_sentence():
    v = decide("Models know their own errors", "mean τ-b", 0.021, 0.008, 0.034, n=N)
    assert isinstance(v, Verdict) and v.status == SUPPORTED
    assert v.sentence() == ("Supported: mean τ-b 0.021 (95% CI 0.008 to 0.034; 18 models, 500 items) "
                            "lies above 0.")
    assert "above 0" in v.reason


def test_interval_below_the_line_is_not_supported():
    v = decide("c", "mean τ-b", -0.03, -0.05, -0.01, n=N)
    assert v.status == NOT_SUPPORTED and "opposite of the claim" in v.reason
    assert v.sentence().startswith("Not supported: mean τ-b \u22120.030")


def test_straddling_interval_is_insufficient_and_says_so():
    v = decide("c", "mean τ-b", 0.01, -0.01, 0.03, n=N)
    assert v.status == INSUFFICIENT and "straddles 0" in v.reason
    assert "straddles 0." in v.sentence()
    # touching the line is not clearing it
    assert decide("c", "s", 0.02, 0.0, 0.04).status == INSUFFICIENT


def test_direction_less_and_differs():
    assert decide("c", "gap", -0.2, -0.3, -0.1, direction="less").status == SUPPORTED
    assert decide("c", "gap", 0.2, 0.1, 0.3, direction="less").status == NOT_SUPPORTED
    assert decide("c", "AUROC", 0.3, 0.2, 0.4, line=0.5, direction="differs").status == SUPPORTED
    assert decide("c", "AUROC", 0.7, 0.6, 0.8, line=0.5, direction="differs").status == SUPPORTED
    two = decide("c", "AUROC", 0.5, 0.45, 0.55, line=0.5, direction="differs")
    assert two.status == INSUFFICIENT
    eq = decide("c", "AUROC", 0.5, 0.45, 0.55, line=0.5, direction="differs", margin=0.1)
    assert eq.status == NOT_SUPPORTED and "0.1 or more" in eq.reason
    assert decide("c", "AUROC", 0.5, 0.35, 0.55, line=0.5, direction="differs",
                  margin=0.1).status == INSUFFICIENT


def test_too_few_positives_is_insufficient_and_names_threshold_and_count():
    v = decide("c", "AUROC", 0.8, 0.6, 0.95, line=0.5, n={"positives": 2, "negatives": 98},
               min_counts={"positives": 10, "negatives": 10})
    assert v.status == INSUFFICIENT
    assert "only 2 positives" in v.reason and "at least 10" in v.reason
    assert "negatives" not in v.reason  # only the short class is named
    assert decide("c", "AUROC", 0.8, 0.6, 0.95, line=0.5, n={"positives": 12, "negatives": 98},
                  min_counts={"positives": 10, "negatives": 10}).status == SUPPORTED


def test_min_counts_naming_a_count_not_in_n_is_an_error():
    with pytest.raises(ValueError, match="'positives'"):
        decide("c", "AUROC", 0.8, 0.6, 0.95, n={"items": 5}, min_counts={"positives": 10})


def test_nan_is_insufficient_and_says_what_was_missing():
    v = decide("c", "AUROC", math.nan, math.nan, math.nan, line=0.5)
    assert v.status == INSUFFICIENT and "estimate" in v.reason and "missing" in v.reason
    v = decide("c", "AUROC", 0.6, np.nan, 0.7, line=0.5)
    assert v.status == INSUFFICIENT and "lower end" in v.reason and "estimate" not in v.reason
    assert "no interval" in v.sentence() and "nan" not in v.sentence().lower()


def test_margin_supports_absence_unless_the_design_is_underpowered():
    v = decide("c", "mean τ-b", 0.005, -0.01, 0.02, margin=0.05)
    assert v.status == NOT_SUPPORTED and "smallest effect of interest" in v.sentence()
    weak = decide("c", "mean τ-b", 0.005, -0.01, 0.02, margin=0.05, detectable=0.12)
    assert weak.status == INSUFFICIENT
    assert "0.12 or more" in weak.reason and "not evidence of absence" in weak.reason
    ok = decide("c", "mean τ-b", 0.005, -0.01, 0.02, margin=0.05, detectable=0.04)
    assert ok.status == NOT_SUPPORTED
    # an interval reaching past the margin cannot rule it out
    assert decide("c", "mean τ-b", 0.02, -0.01, 0.07, margin=0.05).status == INSUFFICIENT
    # power is mentioned when a straddling interval comes from a weak design
    assert "power analysis" in decide("c", "s", 0.0, -0.1, 0.1, detectable=0.3).reason


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="direction must be one of"):
        decide("c", "s", 0.1, 0.0, 0.2, direction="bigger")
    with pytest.raises(ValueError, match="lower end first"):
        decide("c", "s", 0.1, 0.2, 0.0)
    with pytest.raises(ValueError, match="margin"):
        decide("c", "s", 0.1, 0.0, 0.2, margin=-1)


def test_summary_table_and_markdown():
    v = decide("Models know", "mean τ-b", 0.021, 0.008, 0.034, n=N)
    s = v.summary()
    assert s.shape[0] == 1
    assert list(s.columns) == ["claim", "statistic", "estimate", "95% CI low", "95% CI high",
                               "decision line", "n", "verdict", "why", "judged against", "in words",
                               "why this line"]
    assert s["verdict"].iloc[0] == "supported" and s["n"].iloc[0] == "18 models, 500 items"
    md = v._repr_markdown_()
    assert md.startswith("**Supported**") and "Models know" in md and "0.008 to 0.034" in md
    t = verdict_table([v, decide("Other", "AUROC", 0.5, 0.4, 0.6, line=0.5)])
    assert t["status"].tolist() == [SUPPORTED, INSUFFICIENT]
    assert {"ci_low", "ci_high"} <= set(t.columns)


def test_from_auroc_carries_class_counts_into_the_verdict():
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(4), np.zeros(96)]
    res = auroc_ci(y, rng.normal(2.0 * y, 1.0))
    v = from_auroc("P(Yes) tells right from wrong", res)
    assert v.status == INSUFFICIENT and "only 4 positives" in v.reason
    y = np.r_[np.ones(60), np.zeros(60)]
    v = from_auroc("P(Yes) tells right from wrong", auroc_ci(y, rng.normal(1.5 * y, 1.0)))
    assert v.status == SUPPORTED and v.n == {"positives": 60, "negatives": 60}


def test_counts_of_one_read_in_the_singular_whatever_the_key():
    from metacog.hypotheses.verdict import fmt_n

    assert fmt_n({"models above chance": 1, "items": 132}) == "1 model above chance, 132 items"
    assert fmt_n({"CC items": 1, "OCW items": 8}) == "1 CC item, 8 OCW items"
    assert fmt_n({"same-weight twin pairs": 2, "models": 1}) == "2 same-weight twin pairs, 1 model"


def test_an_interval_inside_the_line_is_negligible_never_not_supported():
    from metacog.hypotheses.verdict import NEGLIGIBLE, decide_meaningful, verdict_table

    # wholly above 0 and wholly inside (-0.05, 0.05): a real effect too small to matter
    v = decide_meaningful("c", "τ-b", 0.022, 0.015, 0.030, margin=0.05, line_why="a reason")
    assert v.status == NEGLIGIBLE and "inside (−0.05, 0.05)" in v.reason
    assert "(line: a reason)" in v.sentence()
    # straddling 0, inside the line: negligible too
    assert decide_meaningful("c", "τ-b", 0.0, -0.01, 0.01, margin=0.02).status == NEGLIGIBLE
    # above 0 but reaching across the line: cannot tell
    assert decide_meaningful("c", "τ-b", 0.022, 0.015, 0.030, margin=0.02).status == INSUFFICIENT
    # inside the line, but the design cannot detect the line: cannot tell
    weak = decide_meaningful("c", "τ-b", 0.0, -0.01, 0.01, margin=0.02, detectable=0.05)
    assert weak.status == INSUFFICIENT and "0.05 or more" in weak.reason
    t = verdict_table([v])
    assert t["threshold"].iloc[0] == "±0.05 around 0" and t["outcome"].iloc[0].startswith("within the line")
    # plain decide keeps "not supported" unless asked for the equivalence reading
    assert decide("c", "s", 0.0, -0.01, 0.01, margin=0.05).status == NOT_SUPPORTED
    assert decide("c", "s", 0.0, -0.01, 0.01, margin=0.05, equivalence=True).status == NEGLIGIBLE


def test_sentences_that_group_verdicts_name_the_negligible_ones():
    from metacog.hypotheses.by_design import group_sentence
    from metacog.hypotheses.common import status_sentence
    from metacog.hypotheses.verdict import decide_meaningful

    vs = [decide_meaningful("A: c", "s", 0.0, -0.01, 0.01, margin=0.02),
          decide("B: c", "s", 0.5, 0.4, 0.6)]
    g = group_sentence(vs, "holds in", "fails in", "cannot tell in")
    assert "the effect is negligible (within the line) in 1 of its 2 panels (A)" in g
    assert "holds in 1 of its 2 panels (B)" in g
    assert "(A)" in status_sentence(vs, "holds in", "fails in", "cannot tell in")


def test_an_interval_end_is_never_printed_as_the_line_it_is_not():
    """"(0.30 to 0.36) straddles 0.3" and "(−0.035 to 0.000) lies wholly below 0" read false: the
    printed ends get the digits that keep them apart from the line they are judged against."""
    from metacog.hypotheses.verdict import INSUFFICIENT, NOT_SUPPORTED, decide

    v = decide("c", "s", 0.33, 0.298, 0.36, line=0.3, digits=2)
    assert v.status == INSUFFICIENT and "(0.298 to 0.360) straddles 0.3" in v.reason
    w = decide("c", "s", -0.017, -0.035, -0.0004, line=0.0)
    assert w.status == NOT_SUPPORTED and "(−0.0350 to −0.0004) lies wholly below 0" in w.reason
    assert w.interval() == "−0.0170 (95% CI −0.0350 to −0.0004)"
    plain = decide("c", "s", 0.5, 0.41, 0.62, line=0.3, digits=2)
    assert "(0.41 to 0.62)" in plain.reason  # no extra digits when the ends are clear of the line
