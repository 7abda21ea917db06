import numpy as np
import pandas as pd
import pytest

from metacog import tables


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
