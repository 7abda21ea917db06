import numpy as np
import pandas as pd
import pytest

from metacog.power.simulate import Population, equicorrelation_share, population


def test_shapes_binary_and_labels():
    pop = population(5, 200, kappa=0.5, seed=1)
    assert isinstance(pop, Population)
    assert pop.confidence.shape == (200, 5) and pop.correct.shape == (200, 5)
    assert set(np.unique(pop.confidence.to_numpy())) <= {0, 1}
    assert set(np.unique(pop.correct.to_numpy())) <= {0, 1}
    assert list(pop.confidence.columns) == list(pop.correct.columns) == ["m01", "m02", "m03", "m04", "m05"]
    assert pop.confidence.index.equals(pop.difficulty.index)
    assert pop.kappa == 0.5 and pop.params["kappa"] == 0.5
    assert len(pop.thresholds) == 5 and len(pop.ability) == 5


def test_deterministic_given_seed_and_differs_across_seeds():
    a = population(4, 300, kappa=0.3, seed=7)
    b = population(4, 300, kappa=0.3, seed=7)
    c = population(4, 300, kappa=0.3, seed=8)
    pd.testing.assert_frame_equal(a.confidence, b.confidence)
    pd.testing.assert_frame_equal(a.correct, b.correct)
    assert not a.correct.equals(c.correct)


def test_analytic_first_factor_share_matches_formula_and_latent_sample():
    pop = population(10, 20000, kappa=0.8, seed=3, keep_latent=True)
    p = pop.params
    rho = p["lam"] ** 2 / (p["lam"] ** 2 + p["kappa"] ** 2 + p["sigma_e"] ** 2)
    assert p["rho"] == pytest.approx(rho)
    assert pop.first_factor_share == pytest.approx(equicorrelation_share(rho, 10))
    # the sample correlation of the latent confidence agrees with the analytic one
    R = np.corrcoef(pop.latent["c_star"], rowvar=False)
    share = np.linalg.eigvalsh(R)[-1] / 10
    assert share == pytest.approx(pop.first_factor_share, abs=0.01)
    off = R[~np.eye(10, dtype=bool)]
    assert off.mean() == pytest.approx(rho, abs=0.01)


def test_latent_self_and_other_correlations():
    pop = population(6, 30000, kappa=1.0, seed=4, keep_latent=True)
    c, z = pop.latent["c_star"], pop.latent["z"]
    self_r = np.mean([np.corrcoef(c[:, j], z[:, j])[0, 1] for j in range(6)])
    other_r = np.mean([np.corrcoef(c[:, j], z[:, k])[0, 1] for j in range(6) for k in range(6) if j != k])
    assert self_r == pytest.approx(pop.params["self_corr"], abs=0.01)
    assert other_r == pytest.approx(pop.params["other_corr"], abs=0.01)
    assert self_r > other_r + 0.2


def test_kappa_makes_own_confidence_track_own_correctness():
    def self_minus_other(kappa):
        pop = population(8, 4000, kappa=kappa, seed=11)
        C = pop.confidence.to_numpy().astype(float)
        Y = pop.correct.to_numpy().astype(float)
        K = np.corrcoef(C, Y, rowvar=False)[:8, 8:]  # phi = Kendall tau-b for 0/1 data
        return np.diag(K).mean() - K[~np.eye(8, dtype=bool)].mean()

    null, signal = self_minus_other(0.0), self_minus_other(1.0)
    assert abs(null) < 0.03
    assert signal > 0.1


def test_kappa_zero_gives_higher_shared_share():
    assert population(10, 10, kappa=0.0).first_factor_share > population(10, 10, kappa=1.0).first_factor_share


def test_given_thresholds_and_ability_are_used():
    pop = population(3, 5000, seed=0, thresholds=[-5, 0, 5], ability=[0, 0, 0])
    rates = pop.confidence.mean().to_numpy()
    assert rates[0] > 0.99 and rates[2] < 0.01 and 0.3 < rates[1] < 0.7
    assert pop.thresholds.tolist() == [-5, 0, 5]


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_models=1, n_items=10), "n_models"),
    (dict(n_models=3, n_items=1), "n_items"),
    (dict(n_models=3, n_items=10, kappa=-1), "kappa"),
    (dict(n_models=3, n_items=10, sigma_u=0), "sigma_u"),
    (dict(n_models=3, n_items=10, thresholds=[0, 1]), "thresholds"),
    (dict(n_models=3, n_items=10, lam=0, kappa=0, sigma_e=0), "constant"),
])
def test_bad_input_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        population(**kwargs)


def test_summary_table():
    s = population(4, 100, kappa=0.2).summary()
    assert list(s.columns) == ["quantity", "value"]
    assert "kappa" in s["quantity"].tolist()


def test_the_t_test_of_the_power_simulations_is_scipys():
    """self_other_test(method='ttest') computes the one-sided one-sample t-test itself (scipy's
    wrapper is most of a simulation's cost); it gives scipy's p-value, NaN where scipy does."""
    import warnings

    from scipy import stats as sps

    from metacog.stats.selfother import _ttest_greater

    rng = np.random.default_rng(3)
    cases = [rng.normal(m, s, n) for m in (-0.1, 0.0, 0.05, 0.3) for s in (0.01, 0.2, 1.0) for n in (2, 3, 7, 40)]
    cases += [np.full(3, 0.2), np.zeros(4), np.array([-0.5, -0.5])]
    for D in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = float(sps.ttest_1samp(D, 0.0, alternative="greater").pvalue)
        got = _ttest_greater(D)
        assert (np.isnan(ref) and np.isnan(got)) or got == pytest.approx(ref, abs=1e-12), (D, ref, got)


def test_tetrachoric_matrices_are_one_tetrachoric_call_each():
    """The power simulations fit many populations' tetrachoric matrices in one vectorised call;
    each matrix equals what metacog.stats.tetrachoric gives for it alone, with constant columns
    dropped, zero cells corrected, missing values and smoothing as there."""
    import warnings

    from metacog.stats import tetrachoric
    from metacog.stats.tetrachoric import tetrachoric_matrices

    mats = [population(m, n, kappa=k, seed=s).confidence for m, n, k, s in
            ((5, 40, 0.0, 1), (8, 300, 0.8, 2), (3, 12, 0.4, 3))]
    with_gaps = mats[1].astype(float).copy()
    with_gaps.iloc[::7, 2] = np.nan
    constant = mats[0].copy()
    constant.iloc[:, 1] = 1
    tiny = pd.DataFrame({"a": [0, 1, 1, 0, 1], "b": [0, 1, 1, 1, 1], "c": [1, 0, 1, 0, 0]})  # zero cells
    inputs = mats + [with_gaps, constant, tiny, pd.DataFrame({"a": [0, 1, 0], "b": [1, 1, 1]})]
    got = tetrachoric_matrices(inputs)
    assert len(got) == len(inputs)
    for X, R in zip(inputs[:-1], got):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = tetrachoric(X).rho.to_numpy()
        assert R.shape == ref.shape
        np.testing.assert_allclose(R, ref, rtol=0, atol=1e-13)
    assert got[-1].shape == (0, 0)  # one varying column: nothing to correlate
