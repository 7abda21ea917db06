import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from metacog.power.curves import (first_factor_share, minimum_detectable_kappa, pairwise_power, power_grid,
                           recovery, self_other_test)
from metacog.power.simulate import population


def test_tau_matrix_is_kendall_tau_b():
    pop = population(4, 300, kappa=0.5, seed=2)
    res = self_other_test(pop.confidence, pop.correct, n_perm=99)
    for j in pop.confidence.columns:
        for k in pop.correct.columns:
            expected = kendalltau(pop.confidence[j], pop.correct[k]).statistic  # tau-b
            assert res.tau.loc[j, k] == pytest.approx(expected, abs=1e-12)


def test_missing_values_use_pairwise_complete_items():
    pop = population(4, 300, kappa=0.5, seed=2)
    C = pop.confidence.astype(float)
    C.iloc[:10, 1] = np.nan
    res = self_other_test(C, pop.correct, n_perm=99)
    keep = C.iloc[:, 1].notna()
    expected = kendalltau(C.iloc[:, 1][keep], pop.correct.iloc[:, 2][keep]).statistic
    assert res.tau.iloc[1, 2] == pytest.approx(expected, abs=1e-12)


def test_self_other_detects_strong_signal_and_not_null():
    strong = population(10, 800, kappa=1.0, seed=5)
    null = population(10, 800, kappa=0.0, seed=5)
    r1 = self_other_test(strong.confidence, strong.correct, seed=1)
    r0 = self_other_test(null.confidence, null.correct, seed=1)
    assert r1.statistic > 0.2 and r1.p_value < 0.01 and r1.share_self_above == 1.0
    assert abs(r0.statistic) < 0.03 and r0.p_value > 0.01
    assert r1.self_mean - r1.other_mean == pytest.approx(r1.statistic)
    assert "self minus other" in r1.summary()["quantity"].tolist()


def test_drop_unanimous_removes_items():
    pop = population(5, 400, kappa=0.3, seed=3)
    C, Y = pop.confidence.to_numpy(), pop.correct.to_numpy()
    uc = C.min(axis=1) == C.max(axis=1)
    uy = Y.min(axis=1) == Y.max(axis=1)
    for how, drop in [(True, uc | uy), ("either", uc | uy), ("both", uc & uy), ("confidence", uc),
                      ("correct", uy)]:
        assert drop.sum() > 0
        res = self_other_test(pop.confidence, pop.correct, drop_unanimous=how, n_perm=99)
        assert res.n_items == 400 - int(drop.sum()), how
    with pytest.raises(ValueError, match="drop_unanimous"):
        self_other_test(pop.confidence, pop.correct, drop_unanimous="sometimes")


def test_power_increases_with_kappa_and_null_rate_near_alpha():
    t = pairwise_power(8, 150, kappas=(0.0, 0.15, 0.3, 0.6), n_sims=200, n_perm=99, seed=0)
    p = t["power"].to_numpy()
    assert 0.01 <= p[0] <= 0.11  # alpha = 0.05, Monte Carlo se ~0.015
    assert np.all(np.diff(p) >= -0.02) and p[-1] > 0.9 and p[-1] > p[0] + 0.5
    assert t["latent_corr_gap"].iloc[0] == 0 and t["latent_corr_gap"].is_monotonic_increasing


def test_ttest_method_is_valid_at_null():
    t = pairwise_power(8, 150, kappas=(0.0, 0.6), n_sims=200, method="ttest", seed=1)
    assert t["power"].iloc[0] <= 0.1 and t["power"].iloc[1] > 0.8


def test_power_is_deterministic_given_seed():
    a = pairwise_power(5, 100, kappas=(0.3,), n_sims=30, n_perm=49, seed=4)
    b = pairwise_power(5, 100, kappas=(0.3,), n_sims=30, n_perm=49, seed=4)
    pd.testing.assert_frame_equal(a, b)


def test_minimum_detectable_kappa_pairwise():
    small = minimum_detectable_kappa(6, 100, n_sims=60, n_perm=99, seed=0, tol=0.05)
    big = minimum_detectable_kappa(12, 600, n_sims=60, n_perm=99, seed=0, tol=0.05)
    assert 0 < big.kappa < small.kappa < 3
    assert small.power >= 0.8 and big.power >= 0.8
    # the path is monotone enough that the kappa just below the answer falls short
    below = small.path[small.path["kappa"] < small.kappa]
    assert (below["power"] < 0.8).all()
    assert small.latent_corr_gap > big.latent_corr_gap > 0


def test_minimum_detectable_kappa_not_reached_gives_nan():
    r = minimum_detectable_kappa(3, 10, n_sims=20, n_perm=19, kappa_max=0.05, power=0.99)
    assert np.isnan(r.kappa) and r.power < 0.99


def test_grid_shape():
    g = power_grid(n_models=(4, 6), n_items=(50,), kappas=(0.0, 0.5), n_sims=10, n_perm=19)
    assert len(g) == 4 and set(g["n_models"]) == {4, 6}


@pytest.mark.parametrize("call, match", [
    (lambda: self_other_test(np.zeros((10, 2)), np.zeros((10, 2))), "at least 3 models"),
    (lambda: self_other_test(np.zeros((10, 3)), np.zeros((9, 3))), "shape"),
    (lambda: self_other_test(np.full((10, 3), 0.5), np.zeros((10, 3))), "0/1"),
    (lambda: self_other_test(np.zeros((10, 3)), np.zeros((10, 3)), method="z"), "method"),
    (lambda: pairwise_power(2, 100), "n_models"),
    (lambda: minimum_detectable_kappa(5, 100, test="nope"), "test must be"),
    (lambda: minimum_detectable_kappa(5, 100, nonsense=1), "unknown setting"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("drop", [False, True, "both"])
def test_tau_matrix_matches_stats_pairwise_calibration(drop):
    from metacog.stats.pairwise import pairwise_calibration

    pop = population(5, 300, kappa=0.5, seed=8)
    res = self_other_test(pop.confidence, pop.correct, n_perm=19, drop_unanimous=drop)
    pc = pairwise_calibration(pop.confidence, pop.correct, drop_unanimous=drop, control=False)
    assert res.n_items == pc.n_items - pc.dropped_items
    pairs = pc.pairs
    assert len(pairs) == 25
    for _, row in pairs.iterrows():
        assert res.tau.loc[row["judge"], row["target"]] == pytest.approx(row["tau"], abs=1e-9)
    self_mean = pairs.loc[pairs["self"], "tau"].mean()
    other_mean = pairs.loc[~pairs["self"], "tau"].mean()
    assert res.statistic == pytest.approx(self_mean - other_mean, abs=1e-9)


def test_recovery_of_planted_one_factor_structure():
    # acceptance check: 20 models x 1,000 items, first-factor share within 0.05 of the truth
    for seed in (0, 1):
        r = recovery(20, 1000, kappa=0.0, seed=seed)
        assert abs(r.error) < 0.05, r
        assert r.second_eigenvalue < 1.0
    r = recovery(20, 1000, kappa=1.0, seed=0)
    assert abs(r.error) < 0.05, r


def test_first_factor_share_drops_with_kappa():
    share0, _ = first_factor_share(population(10, 400, kappa=0.0, seed=3).confidence)
    share1, _ = first_factor_share(population(10, 400, kappa=1.5, seed=3).confidence)
    assert share1 < share0 - 0.1


@pytest.mark.slow
def test_factor_power_increases_with_kappa():
    from metacog.power.curves import factor_power

    t = factor_power(8, 200, kappas=(0.0, 0.5, 1.5), n_sims=40, seed=0)
    p = t["power"].to_numpy()
    assert p[0] <= 0.2 and p[2] > 0.8 and p[1] >= p[0]
    assert t["power_second_factor"].iloc[:2].max() <= 0.2  # no planted second factor


@pytest.mark.slow
def test_minimum_detectable_kappa_factor():
    r = minimum_detectable_kappa(6, 150, test="factor", n_sims=15, tol=0.1, seed=0)
    assert 0 < r.kappa < 3 and r.power >= 0.8
    below = r.path[r.path["kappa"] < r.kappa]
    assert (below["power"] < 0.8).all()


def test_self_other_aligns_dataframes_on_labels():
    import metacog.stats

    assert metacog.stats.self_other_test is self_other_test  # moved; power keeps the name
    pop = population(5, 200, kappa=0.8, seed=4)
    C, Y = pop.confidence, pop.correct
    aligned = self_other_test(C, Y, n_perm=99, seed=3)
    rng = np.random.default_rng(0)
    shuffled = Y.iloc[rng.permutation(len(Y)), ::-1]  # other item order, other model order
    again = self_other_test(C, shuffled, n_perm=99, seed=3)
    assert again.statistic == pytest.approx(aligned.statistic, abs=1e-12)
    assert again.p_value == aligned.p_value
    pd.testing.assert_frame_equal(again.tau, aligned.tau)
    # the old positional pairing would have paired the wrong rows: a visibly different answer
    wrong = self_other_test(C, pd.DataFrame(shuffled.to_numpy(), index=C.index, columns=C.columns), n_perm=99)
    assert abs(wrong.statistic - aligned.statistic) > 0.1
    # NumPy arrays keep positional pairing
    arrays = self_other_test(C.to_numpy(), Y.to_numpy(), n_perm=99, seed=3)
    assert arrays.statistic == pytest.approx(aligned.statistic)


def test_self_other_refuses_different_item_or_model_sets():
    pop = population(4, 50, kappa=0.5, seed=1)
    C, Y = pop.confidence, pop.correct
    with pytest.raises(ValueError, match=r"different item sets: 5 item\(s\) only in confidence") as e:
        self_other_test(C, Y.iloc[5:])
    assert repr(C.index[0]) in str(e.value) and "reindex" in str(e.value) and "inner join" in str(e.value)
    with pytest.raises(ValueError, match="different model sets"):
        self_other_test(C, Y.rename(columns={Y.columns[0]: "someone else"}))
