"""Calibration metrics, meta-d' (against metadpy), bootstrap and policy metrics."""

import importlib.util
import sys
import types

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from metacog.stats import (aurc, auroc, bootstrap_ci, brier, ece, excess_aurc, flag_counts, h_proxy,
                           metad, metad_trials, policy_gains, policy_table, risk_coverage,
                           trials_to_counts, type2_auroc)


def test_ece_hand_computation():
    conf = np.array([0.05, 0.15, 0.15, 0.55, 0.95, 0.95, 0.95, 1.0])
    corr = np.array([0, 0, 1, 1, 1, 1, 0, 1])
    r = ece(corr, conf, n_bins=10)
    # bins: [0,.1): .05/0 ; [.1,.2): .15,.15/0,1 ; [.5,.6): .55/1 ; [.9,1]: .95,.95,.95,1/1,1,0,1
    expected = (1 * abs(0 - .05) + 2 * abs(.5 - .15) + 1 * abs(1 - .55) + 4 * abs(.75 - .9625)) / 8
    assert r.ece == pytest.approx(expected, abs=1e-12)
    assert r.table.n.sum() == 8 and r.table.n.tolist()[9] == 4
    assert r.mce == pytest.approx(0.45)
    q = ece(corr, conf, n_bins=2, strategy="quantile")
    assert q.table.n.sum() == 8


def test_brier_decomposition_identity():
    rng = np.random.default_rng(0)
    conf = rng.choice([0.1, 0.3, 0.5, 0.7, 0.9], 400)
    corr = (rng.uniform(size=400) < conf).astype(float)
    b = brier(corr, conf)
    assert b.brier == pytest.approx(np.mean((conf - corr) ** 2))
    assert b.brier == pytest.approx(b.reliability - b.resolution + b.uncertainty, abs=1e-12)
    assert abs(b.residual) < 1e-12
    binned = brier(rng.integers(0, 2, 300), rng.uniform(size=300), n_bins=5)
    assert binned.brier == pytest.approx(binned.reliability - binned.resolution + binned.uncertainty
                                         + binned.residual, abs=1e-12)


def test_auroc_matches_sklearn_with_ties():
    rng = np.random.default_rng(1)
    s = rng.choice([0.2, 0.5, 0.8, 0.9], 200)
    y = (rng.uniform(size=200) < s).astype(float)
    assert auroc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert type2_auroc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert np.isnan(auroc(np.ones(5), np.arange(5.0)))


def test_risk_coverage_and_aurc():
    conf = np.array([0.9, 0.8, 0.8, 0.6, 0.3])
    corr = np.array([1, 1, 0, 1, 0.0])
    rc = risk_coverage(corr, conf)
    assert rc.coverage.tolist() == [0.2, 0.6, 0.8, 1.0]
    np.testing.assert_allclose(rc.risk, [0, 1 / 3, 1 / 4, 2 / 5])
    assert aurc(corr, conf) == pytest.approx((0 + 2 * (1 / 3) + 0.25 + 0.4) / 5)
    oracle = np.mean([0, 0, 0, 1 / 4, 2 / 5])
    assert excess_aurc(corr, conf) == pytest.approx(aurc(corr, conf) - oracle)
    perfect = corr * 0.5 + np.arange(5) / 100  # correct answers all more confident, no ties
    assert excess_aurc(corr, perfect) == pytest.approx(0.0, abs=1e-12)
    assert excess_aurc(corr, corr) > 0  # tied binary confidence cannot order within its levels


def test_metric_input_errors():
    with pytest.raises(ValueError, match="y_true must be 0 or 1"):
        ece([0, 2], [0.2, 0.4])
    with pytest.raises(ValueError, match=r"y_score must lie in \[0, 1\]"):
        brier([0, 1], [1.2, 0.4])
    with pytest.raises(ValueError, match="paired"):
        ece([0, 1], [0.2, 0.4, 0.5])
    with pytest.raises(ValueError, match="y_true must be 0 or 1"):  # confidence given first
        brier([0.9, 0.2, 0.6], [1, 0, 1])


def _metadpy_mle():
    if "metadpy" not in sys.modules:  # its __init__ needs arviz; load only the MLE module
        spec = importlib.util.find_spec("metadpy")
        if spec is None:
            pytest.skip("metadpy not installed")
        pkg = types.ModuleType("metadpy")
        pkg.__path__ = list(spec.submodule_search_locations)
        sys.modules["metadpy"] = pkg
    import metadpy.mle as mle  # installed but broken: fail, never skip (the only independent meta-d' reference)

    return mle


@pytest.mark.parametrize("n1, n2", [
    ([52, 32, 35, 37, 26, 12, 4, 2], [2, 5, 15, 22, 33, 38, 40, 45]),
    ([30, 20, 10, 5], [4, 9, 22, 31]),
    ([20, 31, 12, 18, 9, 3], [6, 7, 11, 25, 30, 22]),
])
def test_metad_matches_metadpy(n1, n2):
    mle = _metadpy_mle()
    K = len(n1) // 2
    ref = mle.fit_metad(np.array(n1) + 1 / (2 * K), np.array(n2) + 1 / (2 * K), nRatings=K)
    got = metad(n1, n2)
    assert got.dprime == pytest.approx(ref["dprime"], abs=1e-10)
    assert got.meta_d == pytest.approx(ref["meta_d"], abs=1e-4)
    assert got.m_ratio == pytest.approx(ref["m_ratio"], abs=1e-4)
    assert got.loglik >= ref["logL"] - 1e-7


def test_metad_trials_and_ideal_observer():
    """Confidence read from the same evidence as the decision: M-ratio near 1."""
    rng = np.random.default_rng(3)
    n = 20000
    stim = rng.integers(0, 2, n)
    x = rng.normal(np.where(stim == 1, 0.75, -0.75))
    resp = (x > 0).astype(int)
    conf = 0.5 + 0.5 * (1 - np.exp(-np.abs(x)))
    fit = metad_trials(stim, resp, conf, n_ratings=4)
    assert fit.dprime == pytest.approx(1.5, abs=0.06)
    assert fit.m_ratio == pytest.approx(1.0, abs=0.08)
    n1, n2 = trials_to_counts(stim, resp, np.ones(n, int), 1 + 0 * 1)
    assert n1.sum() + n2.sum() == n
    with pytest.raises(ValueError, match="even length"):
        metad([1, 2, 3], [1, 2, 3])


def test_bootstrap_deterministic_and_covers():
    rng = np.random.default_rng(4)
    conf = rng.uniform(size=300)
    corr = (rng.uniform(size=300) < conf).astype(float)
    f = lambda c, y: {"ece": ece(y, c).ece, "auroc": auroc(y, c)}  # noqa: E731
    a = bootstrap_ci(f, conf, corr, n_boot=300, seed=1)
    b = bootstrap_ci(f, conf, corr, n_boot=300, seed=1)
    pd.testing.assert_frame_equal(a, b)
    assert (a.ci_low <= a.estimate).all() and (a.estimate <= a.ci_high).all()
    assert a.set_index("statistic").loc["auroc", "se"] > 0
    g = bootstrap_ci(f, conf, corr, n_boot=100, seed=1, groups=np.arange(300) // 3)
    assert g.n_boot.min() == 100
    with pytest.raises(ValueError, match="same items"):
        bootstrap_ci(f, conf, corr[:10])


def policy_frame():
    rows = [
        # item, domain, probe, decision, confidence, gold
        ("i1", "geo", "c0", "yes", 0.9, "no"),   # confident wrong -> OCW
        ("i1", "geo", "c1", "abstain", np.nan, "no"),
        ("i1", "geo", "c2", "no", 0.7, "no"),
        ("i2", "geo", "c0", "no", 0.85, "no"),   # confident correct -> CC
        ("i2", "geo", "c1", "no", 0.85, "no"),
        ("i2", "geo", "c2", "no", 0.6, "no"),
        ("i3", "art", "c0", "yes", 0.6, "yes"),
        ("i3", "art", "c1", "yes", 0.8, "yes"),
        ("i3", "art", "c2", "abstain", np.nan, "yes"),
    ]
    return pd.DataFrame(rows, columns=["item_id", "domain", "probe", "decision", "confidence", "gold"])


def test_policy_table_definitions():
    t = policy_table(policy_frame()).set_index(["item_id", "probe"])
    assert t.loc[("i1", "c0"), "p_tilde"] == 0.9 and t.loc[("i1", "c0"), "se"] == pytest.approx(0.81)
    assert t.loc[("i1", "c1"), "p_tilde"] == 0.5 and t.loc[("i1", "c1"), "se"] == 0.25
    assert t.loc[("i1", "c2"), "p_tilde"] == pytest.approx(0.3) and t.loc[("i1", "c2"), "se"] == pytest.approx(0.09)
    assert bool(t.loc[("i1", "c0"), "ocw"]) and bool(t.loc[("i2", "c0"), "cc"])
    assert not t.loc[("i3", "c0"), "cc"]  # 0.6 < 0.8
    assert bool(t.loc[("i3", "c1"), "cc"])  # 0.8 >= 0.8


def test_gold_derived_from_correct():
    df = policy_frame()
    t1 = policy_table(df)
    df2 = df.drop(columns="gold")
    df2["correct"] = t1["correct"]
    t2 = policy_table(df2)
    np.testing.assert_array_equal(t1.y, t2.y)
    df3 = df2.copy()
    df3.loc[2, "correct"] = 0.0  # now i1's rows imply different gold labels
    with pytest.raises(ValueError, match="disagrees"):
        policy_table(df3)


def test_h_proxy_by_hand():
    h = h_proxy(policy_frame()).set_index("domain")
    p_i1 = np.array([0.9, 0.5, 0.7])
    p_i2 = np.array([0.85, 0.85, 0.6])
    p_i3 = np.array([0.6, 0.8, 0.5])
    assert h.loc["geo", "h_proxy"] == pytest.approx((p_i1.std() + 1.0 + p_i2.std()) / 2)
    assert h.loc["art", "h_proxy"] == pytest.approx(p_i3.std())
    assert h.loc["geo", "ocw_rate"] == 0.5
    h2 = h_proxy(policy_frame(), lam=2.0).set_index("domain")
    assert h2.loc["geo", "h_proxy"] - h.loc["geo", "h_proxy"] == pytest.approx(0.5)


def test_policy_gains_paired():
    g = policy_gains(policy_frame()).set_index(["domain", "policy"])
    assert g.loc[("geo", "c0"), "gain"] == 0
    # geo, c2: se c0 = [.81, .0225], se c2 = [.09, .16]
    assert g.loc[("geo", "c2"), "gain"] == pytest.approx(((.81 - .09) + (.0225 - .16)) / 2)
    assert g.loc[("art", "c2"), "abstain_rate"] == 1.0
    f = flag_counts(policy_frame())
    assert f[(f.domain == "geo") & (f.probe == "c0")].ocw.item() == 1


def test_policy_bad_input():
    df = policy_frame()
    df.loc[0, "decision"] = "maybe"
    with pytest.raises(ValueError, match="decision must be one of"):
        policy_table(df)
    df = policy_frame()
    df.loc[0, "confidence"] = np.nan
    with pytest.raises(ValueError, match="confidence in"):
        policy_table(df)
