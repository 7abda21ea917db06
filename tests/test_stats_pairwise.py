"""pairwise_calibration: tau-b, exact permutation p-values, BH, difficulty control, unanimity."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import fisher_exact, hypergeom, kendalltau

from metacog.stats import bh_fdr, pairwise_calibration, unanimous_items


def make(n=200, m=6, seed=0, miss=0.0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n)
    cols = [f"m{j}" for j in range(m)]
    conf = (0.7 * theta[:, None] + 0.7 * rng.normal(size=(n, m)) > rng.normal(0, .6, m)).astype(float)
    corr = (0.7 * theta[:, None] + 0.7 * rng.normal(size=(n, m)) > rng.normal(0, .6, m)).astype(float)
    if miss:
        conf[rng.uniform(size=conf.shape) < miss] = np.nan
        corr[rng.uniform(size=corr.shape) < miss] = np.nan
    idx = [f"q{i}" for i in range(n)]
    return pd.DataFrame(conf, idx, cols), pd.DataFrame(corr, idx, cols)


def test_tau_matches_scipy_kendalltau_with_missing():
    C, Y = make(miss=0.1)
    res = pairwise_calibration(C, Y, control=False)
    assert len(res.pairs) == 36 and res.pairs.self.sum() == 6
    for _, r in res.pairs.iterrows():
        ok = C[r.judge].notna() & Y[r.target].notna()
        kt = kendalltau(C.loc[ok, r.judge], Y.loc[ok, r.target], variant="b")
        assert r.n == ok.sum()
        assert r.tau == pytest.approx(kt.statistic, abs=1e-12)


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_p_values_are_exact_hypergeometric_tails(alternative):
    C, Y = make(n=60, seed=1)
    res = pairwise_calibration(C, Y, alternative=alternative, control=False)
    for _, r in res.pairs.iterrows():
        N, a, b, x = r.n, r.judge_yes, r.target_correct, r.n11
        support = np.arange(max(0, a + b - N), min(a, b) + 1)
        pmf = hypergeom.pmf(support, N, a, b)
        if alternative == "greater":
            exact = pmf[support >= x].sum()
            assert r.p == pytest.approx(fisher_exact([[x, a - x], [b - x, N - a - b + x]], "greater")[1], rel=1e-9)
        elif alternative == "less":
            exact = pmf[support <= x].sum()
        else:
            mu = a * b / N
            exact = pmf[np.abs(support - mu) >= abs(x - mu) - 1e-9].sum()
        assert r.p == pytest.approx(min(exact, 1.0), rel=1e-9, abs=1e-15)
        assert r.null_mean == 0.0


def test_null_mean_is_mean_of_permutation_distribution():
    """Brute force: enumerate all placements of the judge's yes answers on a tiny table."""
    c = np.array([1, 1, 0, 1, 0, 0, 1.0])
    y = np.array([1, 0, 0, 1, 1, 0, 0.0])
    taus = []
    for pos in itertools.combinations(range(7), int(c.sum())):
        cc = np.zeros(7)
        cc[list(pos)] = 1
        taus.append(kendalltau(cc, y).statistic)
    res = pairwise_calibration(pd.DataFrame({"a": c}), pd.DataFrame({"a": y}), control=False)
    assert np.mean(taus) == pytest.approx(res.pairs.null_mean.iloc[0], abs=1e-12)
    obs = kendalltau(c, y).statistic
    assert np.mean(np.array(taus) >= obs - 1e-12) == pytest.approx(res.pairs.p.iloc[0], rel=1e-12)


def test_bh_fdr_hand_example():
    p = np.array([0.01, 0.04, 0.03, np.nan, 0.5])
    q = bh_fdr(p)
    np.testing.assert_allclose(q[[0, 1, 2, 4]], [0.04, 0.16 / 3, 0.16 / 3, 0.5], rtol=1e-12)
    assert np.isnan(q[3])


def test_one_stratum_control_equals_plain_test():
    C, Y = make(n=80, seed=2)
    res = pairwise_calibration(C, Y, n_strata=1)
    P = res.pairs
    np.testing.assert_allclose(P.tau_within, P.tau, atol=1e-12)
    np.testing.assert_allclose(P.p_within, P.p, rtol=1e-9)
    np.testing.assert_allclose(P.tau_null_difficulty, 0.0, atol=1e-12)


def test_stratified_p_value_by_enumeration():
    """Two strata: the exact p-value equals the convolution done by hand."""
    rng = np.random.default_rng(4)
    n = 40
    conf = pd.DataFrame({"j": rng.integers(0, 2, n).astype(float), "k": rng.integers(0, 2, n).astype(float),
                         "o": np.r_[np.zeros(20), np.ones(20)]})
    corr = pd.DataFrame({"j": rng.integers(0, 2, n).astype(float), "k": rng.integers(0, 2, n).astype(float),
                         "o": np.r_[np.zeros(20), np.ones(20)]})
    res = pairwise_calibration(conf, corr, n_strata=2)
    r = res.pairs.set_index(["judge", "target"]).loc[("j", "k")]
    c, y = conf.j.to_numpy(), corr.k.to_numpy()
    strata = [np.arange(20), np.arange(20, 40)]  # leave-two-out difficulty = model "o" only
    dists = []
    for s in strata:
        N, a, b = len(s), int(c[s].sum()), int(y[s].sum())
        sup = np.arange(max(0, a + b - N), min(a, b) + 1)
        dists.append((sup, hypergeom.pmf(sup, N, a, b)))
    T = int((c * y).sum())
    p = sum(p1 * p2 for (s1, p1s), (s2, p2s) in [dists] for x1, p1 in zip(s1, p1s)
            for x2, p2 in zip(s2, p2s) if x1 + x2 >= T)
    assert r.p_within == pytest.approx(p, rel=1e-9)
    assert r.strata == 2


def test_difficulty_control_removes_shared_signal():
    """Confidence and correctness driven only by a shared item difficulty: the plain tau is
    positive, the within-difficulty tau much smaller."""
    C, Y = make(n=1500, m=12, seed=5)
    s = pairwise_calibration(C, Y).summary()
    plain = s.loc[("base-rate-matched", "other")]
    ctl = s.loc[("difficulty-stratified", "other")]
    assert plain.mean_tau > 0.15 and plain.null_mean == 0
    assert ctl.null_mean > 0.1  # the shared axis alone predicts most of tau
    assert abs(ctl.mean_tau_within) < plain.mean_tau / 3


def test_summary_shape_and_percentages():
    C, Y = make()
    res = pairwise_calibration(C, Y)
    s = res.summary()
    assert set(s.index.get_level_values(0)) == {"base-rate-matched", "difficulty-stratified"}
    assert s.loc[("base-rate-matched", "all"), "n_pairs"] == 36
    assert 0 <= s.pct_significant.min() and s.pct_significant.max() <= 100
    assert res.matrix("tau").shape == (6, 6)


def test_unanimous_rules_and_drop():
    C = pd.DataFrame({"a": [1, 1, 0, 1, 0.], "b": [1, 0, 0, 1, 1.]}, index=list("vwxyz"))
    Y = pd.DataFrame({"a": [1, 1, 1, 0, 0.], "b": [1, 1, 0, 1, 0.]}, index=list("vwxyz"))
    assert unanimous_items(C, Y, "confidence").tolist() == [True, False, True, True, False]
    assert unanimous_items(C, Y, "correct").tolist() == [True, True, False, False, True]
    assert unanimous_items(C, Y, "either").tolist() == [True, True, True, True, True]
    assert unanimous_items(C, Y, "both").tolist() == [True, False, False, False, False]
    C2, Y2 = make(n=120, seed=7)
    res = pairwise_calibration(C2, Y2, drop_unanimous=True, control=False)
    un = unanimous_items(C2, Y2).sum()
    assert res.dropped_items == un and res.pairs.n.max() == 120 - un


def test_errors():
    C, Y = make(n=30)
    with pytest.raises(ValueError, match="different item indexes"):
        pairwise_calibration(C, Y.iloc[::-1])
    with pytest.raises(ValueError, match="different model columns"):
        pairwise_calibration(C, Y[Y.columns[::-1]])
    bad = C.copy()
    bad.iloc[3, 2] = 0.7
    with pytest.raises(ValueError, match="column 'm2' is not binary: row 'q3'"):
        pairwise_calibration(bad, Y)
    allnan = C.copy()
    allnan["m1"] = np.nan
    with pytest.raises(ValueError, match="entirely missing"):
        pairwise_calibration(allnan, Y)
    sparse = C.copy()
    sparse.iloc[2:, 0] = np.nan
    with pytest.raises(ValueError, match="share only 2 items"):
        pairwise_calibration(sparse, Y)


def test_summary_counts_pairs_with_undefined_tau():
    import warnings

    C, Y = make(n=60, m=5, seed=2)
    Y.iloc[:, 0] = 1.0  # one target always correct: tau undefined against every judge
    s = pairwise_calibration(C, Y).summary()
    assert s.loc[("base-rate-matched", "all"), ["n_pairs", "n_undefined"]].tolist() == [20, 5]
    assert s.loc[("base-rate-matched", "self"), ["n_pairs", "n_undefined"]].tolist() == [4, 1]
    assert s.loc[("difficulty-stratified", "other"), ["n_pairs", "n_undefined"]].tolist() == [16, 4]
    full = pairwise_calibration(*make(n=60, m=5, seed=2)).summary()
    assert (full["n_undefined"] == 0).all()


def test_tetrachoric_is_quiet_on_identical_sparse_correctness():
    """Correctness identical across models, rare and with gaps: this draw made the fit divide
    by zero (p**2 underflow) and leak a RuntimeWarning before the fix."""
    import warnings

    from metacog.stats import tetrachoric

    rng = np.random.default_rng(64)
    n, k, p = int(rng.choice([100, 300, 500])), int(rng.integers(3, 8)), rng.choice([.02, .05])
    y = (rng.random(n) < p).astype(float)
    X = pd.DataFrame({f"m{j}": y for j in range(k)}).mask(rng.random((n, k)) < 0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = tetrachoric(X)
    rho = res.rho.to_numpy()
    assert np.isfinite(rho).all() and rho[~np.eye(k, dtype=bool)].min() > 0.9


def test_tau_stack_and_the_gapped_self_other_matrix_equal_plain_loops():
    import importlib

    from metacog.stats.pairwise import TauTables

    selfother = importlib.import_module("metacog.stats.selfother")
    rng = np.random.default_rng(4)
    C = (rng.random((150, 6)) < 0.5).astype(float)
    Y = (rng.random((150, 6)) < 0.6).astype(float)
    C[rng.random(C.shape) < 0.1] = np.nan
    Y[rng.random(Y.shape) < 0.05] = np.nan
    C[:, 2] = np.where(np.isnan(C[:, 2]), np.nan, 1.0)  # a constant judge: no tau
    W = rng.integers(0, 3, (4, 150)).astype(float)
    T = TauTables(C, Y)
    stacked = T.tau_stack(W)
    for r, w in enumerate(W):
        assert np.array_equal(stacked[r], T.tau(w), equal_nan=True)
    plain = np.full((6, 6), np.nan)
    for j in range(6):
        for k in range(6):
            ok = ~np.isnan(C[:, j]) & ~np.isnan(Y[:, k])
            x, y = C[ok, j], Y[ok, k]
            if x.std() > 0 and y.std() > 0:
                plain[j, k] = np.corrcoef(x, y)[0, 1]
    K = selfother._phi_matrix(C, Y)
    assert np.array_equal(np.isnan(K), np.isnan(plain)) and np.nanmax(np.abs(K - plain)) < 1e-12
