"""factor_analysis, parallel_analysis and axis positions against psych fixtures and simulations."""

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog.stats import (axis_alignment, axis_positions, factor_analysis, parallel_analysis,
                           tetrachoric)

FIX = Path(__file__).parent / "fixtures" / "psych"
FA_FILES = sorted(p.name for p in FIX.glob("fa_*.csv"))


def quiet_tet(X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tetrachoric(X)


def parse(fname):
    m = re.match(r"fa_(\w+?)_nf(\d)_(\w+)\.csv", fname)
    return m.group(1), int(m.group(2)), m.group(3)


@pytest.mark.parametrize("fname", FA_FILES)
def test_fa_matches_psych_end_to_end(fname):
    """fa(x, cor="tet", fm="minres") from raw data: our tetrachoric, then our minres."""
    name, nf, rot = parse(fname)
    X = pd.read_csv(FIX / f"data_{name}.csv", index_col=0)
    ref = pd.read_csv(FIX / fname, index_col=0)
    vals = pd.read_csv(FIX / f"faval_{name}_nf{nf}_{rot}.csv", index_col=0)
    vacc = pd.read_csv(FIX / f"favacc_{name}_nf{nf}_{rot}.csv", index_col=0)
    fa = factor_analysis(quiet_tet(X), nf, rotate=rot)
    L = ref[[c for c in ref.columns if c.startswith("MR")]].to_numpy()
    np.testing.assert_allclose(fa.loadings.to_numpy(), L, atol=1e-4)
    np.testing.assert_allclose(fa.communalities.to_numpy(), ref.h2.to_numpy(), atol=1e-4)
    np.testing.assert_allclose(fa.uniquenesses.to_numpy(), ref.u2.to_numpy(), atol=1e-4)
    np.testing.assert_allclose(fa.eigenvalues, vals["values"].to_numpy(), atol=1e-4)
    np.testing.assert_allclose(fa.e_values, vals["e.values"].to_numpy(), atol=1e-4)
    np.testing.assert_allclose(fa.variance.to_numpy(), vacc.to_numpy(), atol=1e-4)
    if rot == "oblimin":
        phi = pd.read_csv(FIX / f"faphi_{name}_nf{nf}_{rot}.csv", index_col=0)
        np.testing.assert_allclose(fa.phi.to_numpy(), phi.to_numpy(), atol=1e-4)


@pytest.mark.parametrize("fname", FA_FILES)
def test_fa_on_psych_rho_is_tight(fname):
    """Given psych's own correlation matrix, the minres solution agrees far below 1e-4."""
    name, nf, rot = parse(fname)
    rho = pd.read_csv(FIX / f"rho_{name}.csv", index_col=0)
    ref = pd.read_csv(FIX / fname, index_col=0)
    fa = factor_analysis(rho, nf, rotate=rot)
    L = ref[[c for c in ref.columns if c.startswith("MR")]].to_numpy()
    np.testing.assert_allclose(fa.loadings.to_numpy(), L, atol=5e-5)
    assert fa.converged


def test_fa_recovers_one_factor_population():
    lam = np.array([.8, .7, .6, .5, .4, .3])
    R = np.outer(lam, lam)
    np.fill_diagonal(R, 1.0)
    fa = factor_analysis(R, 1)
    np.testing.assert_allclose(fa.loadings.iloc[:, 0].to_numpy(), lam, atol=1e-6)
    np.testing.assert_allclose(fa.share.iloc[0], (lam**2).sum() / 6, atol=1e-6)


def test_fa_flags_heywood_case():
    R = np.array([[1, .9, .9], [.9, 1, .7], [.9, .7, 1.]])  # implies a loading^2 of .81/.7 > 1
    with pytest.warns(UserWarning, match="Heywood"):
        fa = factor_analysis(R, 1)
    assert fa.heywood and fa.psi.min() == pytest.approx(0.005)
    assert not factor_analysis(np.array([[1, .5, .4], [.5, 1, .3], [.4, .3, 1.]]), 1).heywood


@pytest.mark.parametrize("bad, match", [
    (np.ones((3, 2)), "square"),
    (np.array([[1, .5], [.4, 1]]), "symmetric"),
    (np.array([[2, .5], [.5, 1]]), "unit diagonal"),
])
def test_fa_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        factor_analysis(bad)


@pytest.mark.parametrize("name", ["sim1", "ability"])
def test_parallel_observed_matches_psych(name):
    X = pd.read_csv(FIX / f"data_{name}.csv", index_col=0)
    ref = pd.read_csv(FIX / f"parallel_{name}.csv", index_col=0)
    p = parallel_analysis(X, n_iter=2, reference="resampled", seed=1)
    np.testing.assert_allclose(p.table.observed_fa.to_numpy(), ref["fa.values"].to_numpy(), atol=1e-4)
    np.testing.assert_allclose(p.table.observed_pc.to_numpy(), ref["pc.values"].to_numpy(), atol=1e-4)


def simulate_one_factor(n=500, k=10, seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n)
    lam = rng.uniform(0.5, 0.85, k)
    tau = rng.uniform(-1.5, 1.5, k)
    z = lam * theta[:, None] + np.sqrt(1 - lam**2) * rng.normal(size=(n, k))
    X = pd.DataFrame((z > tau).astype(float), columns=[f"m{j}" for j in range(k)])
    return X, theta, lam, tau


@pytest.mark.parametrize("reference", ["normal", "resampled"])
def test_parallel_deterministic_and_tidy(reference):
    X, *_ = simulate_one_factor(n=300, k=6)
    p = parallel_analysis(X, n_iter=4, reference=reference, seed=3)
    assert list(p.table.columns[:3]) == ["factor", "observed_fa", "reference_fa"]
    assert len(p.table) == 6 and p.n_components == 1
    again = parallel_analysis(X, n_iter=4, reference=reference, seed=3)
    pd.testing.assert_frame_equal(p.table, again.table)


@pytest.mark.slow
def test_parallel_counts_on_simulated_structures():
    """One-factor probit data: the revised rule says 1 on most seeds (binary-data parallel
    analysis is noisy); clear two-factor data (fixture sim2): 2."""
    counts = []
    for seed in range(4):
        X, *_ = simulate_one_factor(n=1000, seed=seed)
        counts.append(parallel_analysis(X, n_iter=8, reference="resampled", seed=3).n_factors)
    assert min(counts) >= 1 and sum(c == 1 for c in counts) >= 3
    X2 = pd.read_csv(FIX / "data_sim2.csv", index_col=0)
    assert parallel_analysis(X2, n_iter=8, reference="normal", seed=0).n_factors == 2


def test_parallel_bad_reference():
    X, *_ = simulate_one_factor(n=50, k=4)
    with pytest.raises(ValueError, match="reference"):
        parallel_analysis(X, reference="pearson")


def test_axis_positions_recover_truth():
    X, theta, lam, tau = simulate_one_factor(n=1500, k=12, seed=1)
    ax = axis_positions(X)
    assert np.corrcoef(ax.models.loading, lam)[0, 1] > 0.8
    np.testing.assert_allclose(ax.models.threshold.to_numpy(), tau, atol=0.15)
    np.testing.assert_allclose(ax.models.location.to_numpy(), tau / lam, atol=0.35)
    assert np.corrcoef(ax.items.score, theta)[0, 1] > 0.85
    # EAP shrinks: the scores' spread is below the prior's
    assert ax.items.score.std() < 1.0


def test_axis_alignment_shared_vs_independent():
    rng = np.random.default_rng(2)
    n, k = 800, 10
    theta = rng.normal(size=n)
    other = rng.normal(size=n)
    cols = [f"m{j}" for j in range(k)]

    def draw(latent):
        z = 0.8 * latent[:, None] + 0.6 * rng.normal(size=(n, k))
        return pd.DataFrame((z > rng.uniform(-1, 1, k)).astype(float), columns=cols)

    aligned = axis_alignment(draw(theta), draw(theta)).set_index("subset")
    unrelated = axis_alignment(draw(theta), draw(other)).set_index("subset")
    assert aligned.loc["all", "r_items"] > 0.8
    assert abs(unrelated.loc["all", "r_items"]) < 0.15
    assert aligned.loc["contested", "n_items"] < n


def test_the_revised_rules_simulated_data_follow_the_fitted_factor_model():
    """Data simulated under a q-factor model share the q factors across columns: with loadings
    0.8, every pair's tetrachoric correlation is near 0.8 * 0.8 = 0.64 (independent draws per
    column, the old bug, gave correlations near 0 and so the classic null)."""
    import scipy.stats as sps

    from metacog.stats import tetrachoric
    from metacog.stats.parallel import _simulate

    k, n = 6, 4000
    L = np.full((k, 1), 0.8)
    tau = np.linspace(-0.5, 0.5, k)
    miss = np.zeros((n, k), bool)
    miss[:200, 0] = True
    S = _simulate(L, tau, miss, np.random.default_rng(0), [f"m{j}" for j in range(k)], 10)
    assert np.isnan(S[:200, 0]).all() and not np.isnan(S[200:]).any()
    assert np.allclose(np.nanmean(S, axis=0), 1 - sps.norm.cdf(tau), atol=0.03)
    rho = tetrachoric(pd.DataFrame(S)).rho.to_numpy()
    off = rho[~np.eye(k, dtype=bool)]
    assert np.all(np.abs(off - 0.64) < 0.06), off.round(2)
