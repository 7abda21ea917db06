import numpy as np
import pandas as pd
import pytest

from metacog.tidy import tables
def frame(rows):
    return pd.DataFrame(rows, columns=["model", "item_id", "probe", "confidence", "correct", "parse_status",
                                       "p_yes"])


def test_wide_refuses_mixed_probes_and_duplicates():
    df = frame([("a", "1", "p", 1, 1, "ok", .9), ("a", "1", "q", 0, 1, "ok", .1)])
    with pytest.raises(ValueError, match="mixes probes"):
        tables.wide(df)
    dup = frame([("a", "1", "p", 1, 1, "ok", .9), ("a", "1", "p", 0, 1, "ok", .1)])
    with pytest.raises(ValueError, match="more than once"):
        tables.wide(dup)


def test_binarize_median_and_fixed_keep_missing():
    conf = pd.DataFrame({"a": [0.1, 0.5, 0.9, np.nan], "b": [1.0, 1.0, 0.2, 0.3]})
    med = tables.binarize(conf, "median")
    assert med["a"].tolist()[:3] == [0.0, 1.0, 1.0] and np.isnan(med["a"].iloc[3])
    assert med["b"].tolist() == [1.0, 1.0, 0.0, 0.0]  # median 0.65: at or above is 1
    fixed = tables.binarize(conf, "fixed", cut=0.25)
    assert fixed["b"].tolist() == [1.0, 1.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="how="):
        tables.binarize(conf, "mean")


def test_agreement_flags_unanimous_items():
    m = pd.DataFrame({"a": [1, 0, 1, np.nan], "b": [1, 0, 0, 1], "c": [1, 0, 1, np.nan]}, index=list("wxyz"))
    a = tables.agreement(m)
    assert list(a.index) == ["w", "x", "y"]  # z has one value only
    assert a["unanimous"].tolist() == [True, True, False]
    assert a.loc["x", "unanimous_value"] == 0


def test_unanimity_by_all_has_one_all_row():
    rows = [(m, str(i), "p", 1, c, "ok", .5) for i, c in enumerate([1, 0, 1]) for m in ("a", "b")]
    rows += [("b", "3", "p", 1, 1, "ok", .5), ("a", "3", "p", 1, 0, "ok", .5)]
    df = frame(rows).assign(domain=["d1"] * 6 + ["d2"] * 2)
    u = tables.unanimity(df, by="all")
    assert list(u.index) == ["all"] and u.loc["all", "items"] == 4
    assert u.loc["all", "unanimous"] == pytest.approx(0.75) and u.loc["all", "all_correct"] == pytest.approx(0.5)
    per = tables.unanimity(df, by="domain")
    assert list(per.index) == ["d1", "d2", "all"] and per.loc["d2", "unanimous"] == 0.0


def test_conformance_flags_models_that_do_not_follow_the_format():
    rows = [("good", str(i), "prospective", 1, 1, "ok", .7) for i in range(10)]
    rows += [("bad", str(i), "prospective", np.nan, 1, "ok" if i < 5 else "unparseable", np.nan) for i in range(10)]
    c = tables.conformance(frame(rows))
    assert c.loc["good", "overall"] == 1.0 and c.loc["bad", "overall"] == 0.5
    assert tables.conforming_models(frame(rows)) == ["good"]


def test_context_accuracy_and_base_rates():
    rows = [("m", "1", "answer", np.nan, 1, "ok", np.nan), ("m", "2", "answer", np.nan, 1, "ok", np.nan),
            ("m", "1", "answer_no_context", np.nan, 0, "ok", np.nan),
            ("m", "2", "answer_no_context", np.nan, 1, "ok", np.nan),
            ("m", "1", "prospective", 1, 0, "ok", 0.8), ("m", "2", "prospective", 0, 1, "ok", 0.2)]
    acc = tables.context_accuracy(frame(rows))
    assert acc.loc["m", "with context"] == 1.0 and acc.loc["m", "without context"] == 0.5
    assert acc.loc["m", "context gain"] == 0.5
    br = tables.base_rates(frame(rows)).set_index(["model", "probe"])
    assert br.loc[("m", "prospective"), "share_yes"] == 0.5
    assert br.loc[("m", "prospective"), "mean_p_yes"] == pytest.approx(0.5)


def test_judgment_auroc_matches_a_hand_count():
    rows = [("m", str(i), "prospective", c, y, "ok", p)
            for i, (c, y, p) in enumerate([(1, 1, .9), (1, 0, .8), (0, 1, .3), (0, 0, .1)])]
    a = tables.judgment_auroc(frame(rows)).loc["m"]
    # p_yes: positives {.9,.3}, negatives {.8,.1}: pairs won 0.9>.8, .9>.1, .3>.1; lost .3<.8 -> 3/4
    assert a["auroc_p_yes"] == pytest.approx(0.75)
    # binary: positives {1,0}, negatives {1,0}: wins 1>0, ties (1,1) and (0,0) count 1/2 -> 0.5
    assert a["auroc_confidence"] == pytest.approx(0.5)
    one_class = frame([("m", "1", "prospective", 1, 1, "ok", .9), ("m", "2", "prospective", 0, 1, "ok", .2)])
    assert np.isnan(tables.judgment_auroc(one_class).loc["m", "auroc_p_yes"])


def test_binarize_cut_must_lie_on_the_confidence_scale():
    conf = pd.DataFrame({"a": [0.1, 0.5, 0.9], "b": [0.2, 0.6, 0.95]})
    with pytest.raises(ValueError, match="confidence is on 0\u20131 here; 90 looks like a 0\u2013100 scale: use 0.9"):
        tables.binarize(conf, "fixed", cut=90)
    with pytest.raises(ValueError, match="outside the confidence scale"):
        tables.binarize(conf, -0.5)
    # a number (or a numeric string, as a chapter parameter may be) means a fixed cut
    expected = tables.binarize(conf, "fixed", cut=0.55)
    assert tables.binarize(conf, 0.55).equals(expected) and tables.binarize(conf, "0.55").equals(expected)
    assert expected["a"].tolist() == [0.0, 0.0, 1.0]


def test_binarize_median_tie_rule_keeps_yes_share_near_one_half():
    conf = pd.DataFrame({
        "many_ties": [0.2, 0.5, 0.5, 0.5, 0.5, 0.5, 0.9, 0.9],  # at-or-above: 7/8 yes; above: 2/8
        "draw": [0.1, 0.2, 0.5, 0.5, 0.9, 0.95, 0.97, 0.3],  # at or above: 5/8, above: 3/8
    })
    out = tables.binarize(conf)
    assert out["many_ties"].tolist() == [0, 0, 0, 0, 0, 0, 1, 1]
    assert out["draw"].tolist() == [0, 0, 1, 1, 1, 1, 1, 0]  # a draw keeps "at or above"
    rep = tables.binarize_report(conf).set_index("model")
    assert rep.loc["many_ties", "rule"] == "median: strictly above"
    assert rep.loc["draw", "rule"] == "median: at or above"
    assert rep.loc["many_ties", "yes_share"] == 0.25 and rep.loc["draw", "yes_share"] == 0.625
    assert rep.loc["many_ties", "cut"] == 0.5


def test_binary_columns_pass_through_and_constant_columns_are_reported():
    conf = pd.DataFrame({"binary": [0.0, 0.0, 0.0, 1.0], "flat": [0.7, 0.7, 0.7, 0.7],
                         "graded": [0.1, 0.4, 0.6, np.nan]})
    out = tables.binarize(conf)  # the median of 'binary' is 0: a median cut would make it all 1
    assert out["binary"].tolist() == [0.0, 0.0, 0.0, 1.0]
    assert np.isnan(out["graded"].iloc[3])
    rep = tables.binarize_report(conf).set_index("model")
    assert list(rep.columns) == ["rule", "cut", "items", "yes_share", "constant"]
    assert rep.loc["binary", "rule"] == "binary (unchanged)" and not rep.loc["binary", "constant"]
    assert rep.loc["flat", "constant"] and rep.loc["flat", "yes_share"] == 1.0
    assert rep.loc["graded", "items"] == 3
