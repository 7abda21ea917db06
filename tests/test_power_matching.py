import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr

from metacog.power.matching import (Block, PopulationMatch, complete_block, fit_population, match_population,
                                    moments)
from metacog.power.null import self_other_null
from metacog.power.simulate import population


@pytest.mark.parametrize("kw", [
    {},  # the simulator's defaults: sigma_u 1, lam 1, sigma_e 0.7
    {"sigma_u": 0.6, "lam": 0.8, "sigma_e": 0.6},
    {"sigma_u": 1.5, "lam": 0.5, "sigma_e": 0.866, "ability_mean": 1.5, "threshold_mean": -0.8},
])
def test_fit_recovers_generating_parameters(kw):
    pop = population(20, 1500, kappa=0.0, seed=11, **kw)
    p = pop.params
    s_c = np.hypot(p["lam"], p["sigma_e"])  # the fit sets the confidence scale to 1 at kappa 0
    fit = fit_population(pop.confidence, pop.correct)
    assert isinstance(fit, PopulationMatch)
    assert fit.sigma_d == 1.0
    assert fit.sigma_u == pytest.approx(p["sigma_u"], abs=0.1)
    assert fit.lam == pytest.approx(p["lam"] / s_c, abs=0.05)
    assert fit.lam ** 2 + fit.sigma_e ** 2 == pytest.approx(1.0)
    thr_true = pop.thresholds.to_numpy() / s_c
    assert np.max(np.abs(fit.thresholds.to_numpy() - thr_true)) < 0.2
    ab = fit.ability.to_numpy()
    assert np.max(np.abs(ab - pop.ability.to_numpy())) < 0.35
    assert np.corrcoef(ab, pop.ability.to_numpy())[0, 1] > 0.97
    assert fit.alignment == pytest.approx(1.0, abs=0.05)  # the simulator is aligned by construction
    assert fit.implied_link == pytest.approx(fit.observed["link_other"], abs=0.05)


def test_link_based_lambda_agrees_on_simulated_data():
    pop = population(15, 1500, kappa=0.0, seed=4, lam=0.7, sigma_e=0.7)
    a = fit_population(pop.confidence, pop.correct, lam_from="confidence")
    b = fit_population(pop.confidence, pop.correct, lam_from="link")
    assert b.lam == pytest.approx(a.lam, abs=0.06)
    assert b.lam_from == "link"
    with pytest.raises(ValueError, match="lam_from"):
        fit_population(pop.confidence, pop.correct, lam_from="eyeball")


def test_misaligned_confidence_axis_gives_alignment_below_one():
    # confidence shares an axis across models that is unrelated to difficulty
    rng = np.random.default_rng(0)
    n, m = 1500, 12
    d = rng.normal(size=n)
    g = rng.normal(size=n)
    z = 1.0 - d[:, None] + rng.normal(size=(n, m))
    c = 0.5 * (-d[:, None]) + 0.7 * g[:, None] + 0.5 * rng.normal(size=(n, m))
    Y = pd.DataFrame((z > 0).astype(float))
    C = pd.DataFrame((c > 0).astype(float))
    fit = fit_population(C, Y)
    # implied link sqrt(rho_c rho_y) overstates the true link 0.5/sqrt(0.99) * sqrt(0.5)
    assert fit.alignment < 0.75
    link = fit_population(C, Y, lam_from="link")
    assert link.lam < fit.lam - 0.2


def test_moments_rates_and_shapes():
    pop = population(6, 800, kappa=0.5, seed=2)
    o = moments(pop.confidence, pop.correct)
    pd.testing.assert_series_equal(o["accuracy"], pop.correct.mean().astype(float), check_names=False)
    assert o["n_items"] == 800 and o["n_models"] == 6
    # kappa > 0: confidence tracks a model's own correctness better than the others'
    assert o["link_self"] > o["link_other"] + 0.1
    true = pop.params
    assert o["link_self"] == pytest.approx(true["self_corr"], abs=0.07)
    assert o["link_other"] == pytest.approx(true["other_corr"], abs=0.07)


def test_kwargs_roundtrip_reproduces_rates_and_correlations():
    pop = population(10, 1200, kappa=0.0, seed=21, sigma_u=0.8, lam=0.9, sigma_e=0.5,
                     ability_mean=1.2, threshold_mean=-0.5)
    fit = fit_population(pop.confidence, pop.correct)
    kw = match_population(pop.confidence, pop.correct, per_model=True)
    assert set(kw) >= {"lam", "sigma_u", "sigma_e", "ability", "thresholds"}
    again = population(10, 1200, kappa=0.0, seed=99, **kw)
    refit = fit_population(again.confidence, again.correct)
    assert refit.sigma_u == pytest.approx(fit.sigma_u, abs=0.1)
    assert refit.lam == pytest.approx(fit.lam, abs=0.05)
    assert np.max(np.abs(again.confidence.mean().to_numpy() - pop.confidence.mean().to_numpy())) < 0.06
    # implied marginal accuracy Phi(a / s_z) equals the observed accuracy (up to clipping)
    s_z = np.hypot(fit.sigma_d, fit.sigma_u)
    np.testing.assert_allclose(ndtr(fit.ability / s_z), pop.correct.mean(), atol=1e-9)
    dist = fit.kwargs(per_model=False)
    assert "ability" not in dist and dist["ability_sd"] == pytest.approx(fit.ability.std(ddof=1))
    population(30, 50, **dist)  # distributional form works at any number of models
    with pytest.raises(ValueError, match="one per model"):
        population(30, 50, **kw)


def test_latent_gap_matches_simulator():
    pop = population(5, 400, kappa=0.0, seed=1)
    fit = fit_population(pop.confidence, pop.correct)
    for k in (0.0, 0.2, 0.7):
        p = population(5, 2, kappa=k, **fit.kwargs()).params
        assert fit.latent_gap(k) == pytest.approx(p["self_corr"] - p["other_corr"], abs=1e-12)
    with pytest.raises(ValueError, match="kappa"):
        fit.latent_gap(-1)
    s = fit.summary()
    assert "alignment (observed / implied other link)" in s["quantity"].tolist()


def test_complete_block_picks_most_cells_and_drops_constant_models():
    rng = np.random.default_rng(3)
    n, m = 200, 6
    C = pd.DataFrame(rng.integers(0, 2, (n, m)).astype(float), columns=list("abcdef"))
    Y = pd.DataFrame(rng.integers(0, 2, (n, m)).astype(float), columns=list("abcdef"))
    C.loc[:149, "a"] = np.nan  # 'a' answered 50 items: dropping it keeps 5 x 190 cells
    Y.loc[:9, "b"] = np.nan  # 'b' misses 10 items: keeping it costs 10 items, cheaper than dropping
    C["f"] = 1.0  # never varies
    blk = complete_block(C, Y)
    assert isinstance(blk, Block)
    assert blk.dropped_models == ["a"] and blk.constant_models == ["f"]
    assert list(blk.confidence.columns) == ["b", "c", "d", "e"]
    assert blk.shape == (190, 4)
    assert not blk.confidence.isna().any().any() and not blk.correct.isna().any().any()
    assert blk.confidence.index.equals(blk.correct.index)
    s = blk.summary().set_index("quantity")["value"]
    assert s["cells kept"] == 760 and s["items in the input"] == 200


def test_bad_input_raises_clear_errors():
    pop = population(5, 100, seed=0)
    with pytest.raises(ValueError, match="shape"):
        fit_population(pop.confidence, pop.correct.iloc[:50])
    with pytest.raises(ValueError, match="binarise"):
        fit_population(pop.confidence * 50, pop.correct)
    C = pop.confidence.copy()
    C["m02"] = 1
    with pytest.raises(ValueError, match="never varies"):
        fit_population(C, pop.correct)
    with pytest.raises(ValueError, match="at least 3 models"):
        moments(pop.confidence.iloc[:, :2], pop.correct.iloc[:, :2])
    Y = pop.correct.copy()
    Y.columns = list("abcde")
    with pytest.raises(ValueError, match="align"):
        fit_population(pop.confidence, Y)


def test_self_other_null_size_and_power_with_exchangeable_models():
    pop = population(10, 400, kappa=0.0, seed=5, ability_sd=0.0, threshold_sd=0.0)
    fit = fit_population(pop.confidence, pop.correct)
    # nearly identical models: the permutation test's size is close to alpha
    null = self_other_null(fit, n_sims=150, seed=1, n_perm=99)
    assert null.statistics.shape == (150,)
    assert 0.0 <= null.rejection_rate(0.05) <= 0.12
    assert abs(null.statistics.mean()) < 0.01
    alt = self_other_null(fit, n_sims=60, kappa=0.4, seed=1, n_perm=99)
    assert alt.statistics.mean() > null.statistics.mean() + 0.03
    assert alt.rejection_rate(0.05) > 0.9
    # the base-rate-matched test: compare each statistic with the kappa = 0 populations
    assert alt.rejection_rate_against(null, 0.05) > 0.9
    other_null = self_other_null(fit, n_sims=150, seed=2, n_perm=99)
    assert other_null.rejection_rate_against(null, 0.05) < 0.12
    # Monte Carlo p-value of a value beyond every null draw is 1 / (n + 1)
    assert null.p_value(1.0) == pytest.approx(1 / 151)
    again = self_other_null(fit, n_sims=150, seed=1, n_perm=99)
    np.testing.assert_array_equal(again.statistics, null.statistics)
    assert "rejection rate at alpha = 0.05" in null.summary()["quantity"].tolist()


def test_self_other_null_keeps_per_model_margins():
    # a model that is weak but confident on most items, and one strong but cautious:
    # self-pairs pair mismatched margins, so the null mean of the statistic is negative
    pop = population(8, 600, kappa=0.0, seed=8, ability=np.linspace(-0.8, 2.0, 8),
                     thresholds=np.linspace(-1.5, 1.0, 8))
    fit = fit_population(pop.confidence, pop.correct)
    null = self_other_null(fit, n_sims=80, seed=2, n_perm=99)
    assert null.statistics.mean() < -0.01
    with pytest.raises(ValueError, match="n_sims"):
        self_other_null(fit, n_sims=0)


def test_equivalent_kappa_recovers_planted_kappa():
    from metacog.power.null import equivalent_kappa
    from metacog.stats import self_other_test

    truth = population(12, 800, kappa=0.3, seed=31)
    fit = fit_population(truth.confidence, truth.correct)  # fitted under kappa = 0, as on real data
    obs = self_other_test(truth.confidence, truth.correct, method="ttest").statistic
    est = equivalent_kappa(fit, obs, n_sims=40, seed=1)
    assert est.kappa == pytest.approx(0.3, abs=0.1)
    # the scale-free translation, the latent self-minus-other correlation, is recovered closely
    planted_gap = truth.params["self_corr"] - truth.params["other_corr"]
    assert est.latent_gap == pytest.approx(planted_gap, abs=0.03)
    assert est.latent_gap == pytest.approx(fit.latent_gap(est.kappa))
    assert est.path["kappa"].iloc[0] == 0.0 and len(est.path) > 3
    # a statistic below the kappa-0 mean maps to 0; one beyond kappa_max to nan
    assert equivalent_kappa(fit, est.null_mean - 0.01, n_sims=10).kappa == 0.0
    assert np.isnan(equivalent_kappa(fit, 0.99, n_sims=10, kappa_max=0.5).kappa)
    with pytest.raises(ValueError, match="statistic"):
        equivalent_kappa(fit, float("nan"))
