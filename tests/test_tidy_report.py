import math

from metacog.tidy.report import fmt_p


def test_fmt_p():
    assert fmt_p(0.0421) == "0.042"
    assert fmt_p(0.0) == "< 0.001"
    assert fmt_p(0.00049, digits=3) == "< 0.001"
    assert fmt_p(math.nan) == "n/a"
    assert fmt_p(0.5, digits=2) == "0.50"


# --- prose formatting (issue #13: template glitches) ---------------------------------------

import numpy as np
import pandas as pd
import pytest

from metacog.tidy.report import (MINUS, PrettyTable, fmt_ci, fmt_count, fmt_list, fmt_num, fmt_p_eq,
                            fmt_range, fmt_signed, pretty, readable)


def test_fmt_p_eq_never_writes_equals_less_than():
    assert fmt_p_eq(0.0421) == "p = 0.042"
    assert fmt_p_eq(0.00001) == "p < 0.001"
    assert fmt_p_eq(math.nan) == "p = n/a"
    assert "= <" not in fmt_p_eq(0.0)


def test_fmt_num_uses_a_real_minus_and_no_negative_zero():
    assert fmt_num(-0.035, 3) == f"{MINUS}0.035"
    assert fmt_num(-0.0001, 2) == "0.00"
    assert fmt_num(0.372, pct=True) == "37%"
    assert fmt_num(None) == "n/a"


def test_fmt_ci_and_fmt_range():
    assert fmt_ci(0.44, 0.401, 0.478) == "0.44 (95% CI 0.40 to 0.48)"
    assert fmt_ci(0.37, 0.371, 0.372, pct=True) == "37% (95% CI 37% at both ends)"
    assert fmt_ci(0.5, math.nan, 0.6) == "0.50 (no interval)"
    assert fmt_ci(math.nan, 0.1, 0.2) == "n/a"
    assert fmt_ci(0.2, 0.1, 0.3, level=0.9) == "0.20 (90% CI 0.10 to 0.30)"
    assert fmt_range(0.44, 0.4401) == "0.44"
    assert fmt_range(0.37, 0.371, pct=True) == "37%"
    assert fmt_range(0.40, 0.48) == "0.40\u20130.48"
    assert fmt_range(math.nan, 0.48) == "n/a"


def test_fmt_signed_names_the_direction_instead_of_a_negative_excess():
    assert fmt_signed(-0.035) == "0.035 below"
    assert fmt_signed(0.0351) == "0.035 above"
    assert fmt_signed(0.00001) == "no different"
    assert fmt_signed(-2, ("more", "fewer"), digits=0) == "2 fewer"


def test_fmt_list_and_fmt_count():
    assert fmt_list(["A", "B", "C"], of=3, noun="local models") == "all 3 local models"
    assert fmt_list([], of=3, noun="models") == "none of the 3 models"
    assert fmt_list(["A", "B"], of=3, noun="models") == "2 of the 3 models (A and B)"
    assert fmt_list(["A", "B"], of=2, noun="models") == "both models"
    assert fmt_list(["A"], of=1, noun="panels") == "the one panel (A)"  # never "all 1 panels"
    assert fmt_list([], of=1, noun="sources") == "no source"  # never "none of the 1 sources"
    assert fmt_list(["A", "B", "C"]) == "A, B and C"
    assert fmt_list(list("ABCDEFGH"), of=10, max_names=3) == "8 of the 10 (A, B and 6 more)"
    with pytest.raises(ValueError, match="of=2"):
        fmt_list(["A", "B", "C"], of=2)
    assert fmt_count(0, "judgment") == "no judgments"
    assert fmt_count(1, "judgment") == "1 judgment"
    assert fmt_count(1200, "item") == "1,200 items"
    assert fmt_count(2, "query", "queries") == "2 queries"


def test_pretty_headers_rounding_missing_and_index():
    df = pd.DataFrame({"share_yes": [0.51234, np.nan], "auroc_p_yes": [0.6, 0.55],
                       "mean_tau": [-0.0213, 0.0], "pct_significant": [12.5, 3.333],
                       "n_items": [1000.0, 132.0], "p_value": [1e-5, 0.2],
                       "carries_signal": [True, False], "some_new_thing": [1, 2]})
    t = pretty(df)
    assert isinstance(t, PrettyTable)
    assert list(t.columns) == ["share Yes", "AUROC of P(Yes)", "mean τ-b", "% of pairs significant",
                               "items", "p", "carries signal", "some new thing"]
    assert t["items"].tolist() == ["1,000", "132"]  # no "1000.000000"
    assert t["share Yes"].tolist() == ["0.512", "–"]
    assert t["mean τ-b"].tolist() == [f"{MINUS}0.021", "0.000"]
    assert t["p"].tolist() == ["< 0.001", "0.200"]
    assert t["carries signal"].tolist() == ["yes", "no"]
    html = t._repr_html_()
    assert "<th" in html and ">0<" not in html and "share Yes" in html and "row_heading" not in html
    named = pretty(df.set_index("n_items"))
    assert named.columns[0] == "items" and named["items"].tolist() == ["1,000", "132"]
    by_model = pretty(pd.DataFrame({"acc": [0.5]}, index=["smollm"]))
    assert by_model.iloc[0, 0] == "smollm"
    assert pretty(df, names={"share_yes": "Yes rate"}).columns[0] == "Yes rate"
    assert readable("n_positives") == "positives" and readable("ci_width") == "CI width"
