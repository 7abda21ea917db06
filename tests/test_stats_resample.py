"""The resampling engine (metacog.stats.resample) against plain loops over copied matrices."""

import warnings

import numpy as np
import pandas as pd
import pytest

from metacog.hypotheses import rank_one as hr
from metacog.stats import resample, tables, tetrachoric
from metacog.stats.tetrachoric import pair_tables


def _panel(n=300, k=8, gaps=0.05, seed=1):
    rng = np.random.default_rng(seed)
    load = rng.uniform(0.3, 0.8, k)
    z = rng.standard_normal((n, 1)) @ load[None] + rng.standard_normal((n, k)) * np.sqrt(1 - load**2)
    X = (z > rng.normal(0, 0.7, k)).astype(float)
    X[rng.uniform(size=X.shape) < gaps] = np.nan
    return X


def test_weights_are_the_resamples_a_plain_loop_draws():
    n, seed = 37, 5
    rng = np.random.default_rng(seed)
    plain = [np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(10)]
    engine = np.vstack(list(resample.item_weights(n, 10, seed=seed, chunk=3)))
    assert np.array_equal(engine, np.array(plain, dtype=float))
    assert (engine.sum(axis=1) == n).all()


@pytest.mark.parametrize("gaps", [0.0, 0.1])
def test_weighted_tables_equal_the_tables_of_the_resampled_matrix(gaps):
    X = _panel(gaps=gaps)
    w = next(resample.item_weights(len(X), 1, seed=2))[0]
    copied = np.repeat(X, w.astype(int), axis=0)
    for got, want in zip(tables.pair_counts(X, w), pair_tables(copied)):
        assert np.array_equal(got, want)


def test_tetrachoric_stack_equals_tetrachoric_of_each_resampled_matrix():
    X = _panel(n=200, k=6, gaps=0.08)
    (W,) = list(resample.item_weights(len(X), 5, seed=4, chunk=5))
    rho, ok = resample.tetrachoric_stack(X, W)
    assert ok.all()
    for r in range(5):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = tetrachoric(pd.DataFrame(np.repeat(X, W[r].astype(int), axis=0))).rho.to_numpy()
        assert np.allclose(rho[r], want, atol=1e-9)


def test_a_resample_with_a_constant_column_is_flagged_not_fitted():
    X = _panel(n=40, k=5, gaps=0.0)
    X[:, 0] = 0.0
    X[3, 0] = 1.0  # one item carries the only 1 of column 0
    W = np.ones((2, 40))
    W[1, 3], W[1, 4] = 0.0, 2.0  # resample 1 leaves that item out
    rho, ok = resample.tetrachoric_stack(X, W)
    assert ok.tolist() == [True, False] and np.isnan(rho[1]).all() and np.isfinite(rho[0]).all()


def test_bootstrap_structure_gives_the_plain_loops_intervals():
    X = _panel(n=250, k=7, gaps=0.05, seed=3)
    X[:, 0] = (np.arange(250) < 4).astype(float)  # a rare column: some resamples make it constant
    got = hr.bootstrap_structure(pd.DataFrame(X), n_boot=120, seed=9)
    rng = np.random.default_rng(9)
    draws = np.array([hr._eigen_stats(X[rng.integers(0, 250, 250)]) for _ in range(120)])
    want = resample.percentile_table(hr.STRUCTURE_STATISTICS, hr._eigen_stats(X), draws, recentre=True)
    cols = ["estimate", "ci_low", "ci_high"]
    assert np.allclose(got[cols].to_numpy(), want[cols].to_numpy(), atol=1e-8)
    assert got.n_boot.tolist() == want.n_boot.tolist()


def test_percentile_table_recentres_on_the_estimate():
    draws = np.array([[1.0], [2.0], [3.0], [np.nan]])
    plain = resample.percentile_table(["s"], [5.0], draws, ci=0.5)
    moved = resample.percentile_table(["s"], [5.0], draws, ci=0.5, recentre=True)
    assert plain.n_boot.iloc[0] == 3 and (plain.ci_low.iloc[0], plain.ci_high.iloc[0]) == (1.5, 2.5)
    assert (moved.ci_low.iloc[0], moved.ci_high.iloc[0]) == (4.5, 5.5)


@pytest.mark.parametrize("gaps", [0.0, 0.1])
def test_stacked_tables_equal_a_plain_loop_over_resamples(gaps):
    X = _panel(n=180, k=6, gaps=gaps, seed=7)
    (W,) = list(resample.item_weights(len(X), 9, seed=3, chunk=9))
    stacked = tables.pair_counts_stack(X, W)
    for r in range(len(W)):
        for got, want in zip(stacked, tables.pair_counts(X, W[r])):
            assert np.array_equal(got[r], want)  # integer counts: the same numbers, not merely close
    halves = tables.pair_counts_stack(X, W * 0.5)  # non-integer weights: float64, close
    for r in range(len(W)):
        for got, want in zip(halves, tables.pair_counts(X, W[r] * 0.5)):
            assert np.allclose(got[r], want, atol=1e-9)


def test_stacked_one_factor_fits_equal_one_fit_at_a_time():
    from metacog.stats import factor

    X = _panel(n=300, k=7, gaps=0.03, seed=11)
    est, raw, psi0 = hr._fit_matrix(X)
    (W,) = list(resample.item_weights(len(X), 12, seed=2, chunk=12))
    rho, ok = resample.tetrachoric_stack(X, W, start=raw)
    share, psi, solved = factor.one_factor_share_stack(rho[ok], psi0)
    assert solved.sum() >= 8  # the rest leave the interior (a uniqueness at a bound): fitted one at a time
    for r, R in enumerate(rho[ok]):
        want_share, want_psi = factor.one_factor_share(R, psi0)
        if solved[r]:
            assert abs(share[r] - want_share) < 1e-9 and np.allclose(psi[r], want_psi, atol=1e-6)
        else:
            assert np.isnan(share[r]) and ((want_psi < 0.006) | (want_psi > 0.99)).any()


def test_a_heywood_matrix_is_left_to_the_one_at_a_time_fit():
    from metacog.stats import factor

    R = np.full((4, 4), 0.3)
    R[0, 1] = R[1, 0] = 0.999  # two near-copies push a uniqueness to its bound
    np.fill_diagonal(R, 1.0)
    share, psi, solved = factor.one_factor_share_stack(R[None], np.full(4, 0.5))
    assert not solved[0] and np.isnan(share[0]) and np.isnan(psi[0]).all()
