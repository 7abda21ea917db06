"""The phrasing module: sentences that read right at every size and sign of the data."""

import math

import numpy as np
import pytest

from metacog.tidy import phrasing as ph

M = ph.MINUS


@pytest.mark.parametrize("n, expected", [(0, "0 panels"), (1, "1 panel"), (2, "2 panels"),
                                         (1500, "1,500 panels"), (np.int64(5633), "5,633 panels")])
def test_plural_agrees_with_the_count(n, expected):
    assert ph.plural(n, "panel") == expected


def test_plural_irregular_zero_word_and_missing():
    assert ph.plural(1, "family", "families") == "1 family"
    assert ph.plural(3, "family", "families") == "3 families"
    assert ph.plural(0, "judgment", zero="no") == "no judgments"
    assert ph.plural(float("nan"), "model") == "an unknown number of models"


def test_verb_and_noun_agree():
    assert [ph.verb(k) for k in (0, 1, 2)] == ["are", "is", "are"]
    assert ph.verb(1, "has", "have") == "has" and ph.verb(4, "has", "have") == "have"
    assert ph.noun(1, "model") == "model" and ph.noun(7, "model") == "models"


@pytest.mark.parametrize("names, expected", [([], "none"), (["a"], "a"), (["a", "b"], "a and b"),
                                             (["a", "b", "c"], "a, b and c")])
def test_join_lists_every_name(names, expected):
    assert ph.join(names) == expected


def test_join_never_truncates_unless_asked():
    names = [f"m{i}" for i in range(11)]
    text = ph.join(names)
    assert "more" not in text and all(n in text for n in names)
    assert ph.join(names, limit=4) == "m0, m1, m2 and 8 more"
    assert ph.join([], empty="no model") == "no model"
    assert ph.join(("x", "y"), conj="or") == "x or y"


@pytest.mark.parametrize("names, of, expected", [
    (["p"], 1, "the one panel"), ([], 1, "no panel"),
    (["a", "b"], 2, "both panels"), ([], 2, "neither panel"), (["a"], 2, "1 of the 2 panels (a)"),
    (list("abc"), 3, "all 3 panels"), ([], 3, "none of the 3 panels"),
    (["a", "c"], 3, "2 of the 3 panels (a and c)"), ([], 0, "no panels"),
])
def test_which_reads_right_at_every_size(names, of, expected):
    assert ph.which(names, of, "panel") == expected


def test_which_never_says_all_one_or_all_two():
    assert "all" not in ph.which(["x"], 1, "panel") and "all" not in ph.which("xy", 2, "panel")
    with pytest.raises(ValueError, match="of=1"):
        ph.which(["a", "b"], 1, "panel")


def test_numbers_have_separators_and_no_float_noise():
    assert ph.number(0.25000000000000017) == "0.25"
    assert ph.number(-0.25000000000000017) == f"{M}0.25"
    assert ph.number(1500) == "1,500" and ph.number(5633) == "5,633"
    assert ph.number(np.int64(47151)) == "47,151"
    assert ph.number(12345.678, 1) == "12,345.7"
    assert ph.number(-0.0004) == "0.00"  # never '−0.00'
    assert ph.number(None) == "n/a" and ph.number(np.nan) == "n/a"
    assert ph.count(1500.0) == "1,500"


@pytest.mark.parametrize("x, digits, expected", [
    (0.034, 2, "0.034"), (0.02512, 2, "0.025"), (0.25000000000000017, 2, "0.25"),
    (0.0999, 2, "0.10"), (12345.6, 3, "12,300"), (-0.000123, 2, f"{M}0.00012"), (0, 2, "0"),
    (1.0, 3, "1.00"), (5633, 2, "5,600"),
])
def test_sig_keeps_significant_digits(x, digits, expected):
    assert ph.sig(x, digits) == expected


@pytest.mark.parametrize("x, expected", [
    (0.21, "+0.21"), (-0.1, f"{M}0.10"), (-0.25000000000000017, f"{M}0.25"), (0.0001, "0.00"),
    (-0.0001, "0.00"), (np.float64(0.5), "+0.50"), (3, "+3"), (math.nan, "n/a"),
])
def test_signed_shows_the_sign_once(x, expected):
    assert ph.signed(x) == expected


def test_span_collapses_ends_that_round_alike():
    assert ph.span(0.301, 0.299, 1) == "0.3"
    assert ph.span(0.3, 0.3) == "0.30"
    assert ph.span(0.40, 0.48) == "0.40 to 0.48"
    assert ph.span(-0.1, 0.21, fmt=ph.signed) == f"{M}0.10 to +0.21"
    assert ph.span(0.2, 0.75, sep="–", fmt=ph.percent) == "20%–75%"
    assert ph.span(0.034, 0.025, fmt=ph.sig) == "0.034 to 0.025"
    assert ph.span(np.nan, 1) == "n/a"


def test_percent_and_pvalue():
    assert ph.percent(0.4236) == "42%" and ph.percent(0.075, 1) == "7.5%"
    assert ph.pvalue(0.04213) == "p = 0.042"
    assert ph.pvalue(2e-5) == "p < 0.001"
    assert ph.pvalue(2e-5, 4) == "p < 0.0001"
    assert ph.pvalue(None) == "p = n/a"


def test_a_share_rounds_the_same_as_a_percentage_and_as_a_decimal():
    # 21/40 printed '52%' in prose and '0.53' in the table beside it (review 2, C19)
    import pandas as pd

    from metacog.tidy import phrasing
    from metacog.tidy.report import fmt_num, pretty

    for n in (8, 40, 132, 534):
        for k in range(n + 1):
            x = k / n
            dec = phrasing.number(x, 2)
            assert phrasing.percent(x) == f"{int(dec.replace('.', ''))}%", (k, n)
            assert fmt_num(x, pct=True) == phrasing.percent(x)
            assert pretty(pd.DataFrame({"share": [x, 0.5001]}), digits=2).iloc[0, 0] == dec
    assert phrasing.percent(21 / 40) == "53%" and fmt_num(37 / 40, pct=True) == "93%"
