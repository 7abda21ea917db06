"""The measures chapter's helpers (metacog.pages.measures): smooth ECE written out from its
definition agrees with the package's series, and phi against tetrachoric on a planted pair."""

import numpy as np


def test_smooth_ece_from_its_definition_matches_the_package_with_and_without_a_sign_change():
    from metacog import stats
    from metacog.pages import measures as pm

    conf = np.array([0.9, 0.9, 0.9, 0.7, 0.7, 0.7, 0.5, 0.5, 0.5, 0.5])
    over = np.array([1, 1, 0, 1, 1, 0, 1, 0, 0, 0])  # every level overconfident: the mean gap, 0.18
    under = np.array([1, 1, 0, 1, 1, 0, 1, 1, 1, 0])  # the 0.5 group underconfident
    assert abs(pm.smooth_ece_by_hand(conf, over) - 0.18) < 1e-4
    for y in (over, under):
        assert abs(pm.smooth_ece_by_hand(conf, y) - stats.smooth_ece(y, conf)) < 1e-4
    assert pm.smooth_ece_by_hand(conf, under) < 0.16  # the residual changes sign: below ECE's 0.18


def test_phi_against_tetrachoric_on_one_latent_variable_cut_twice():
    from scipy.stats import norm

    from metacog.pages import measures as pm

    latent = np.random.default_rng(1).multivariate_normal([0, 0], [[1, 0.6], [0.6, 1]], 4000)
    pair = np.column_stack([latent[:, 0] > norm.ppf(0.2), latent[:, 1] > norm.ppf(0.7)]).astype(float)
    t = pm.phi_against_tetrachoric(pair, n_boot=200, seed=0).set_index("statistic")
    assert t.loc["tetrachoric", "ci_low"] < 0.6 < t.loc["tetrachoric", "ci_high"]
    assert t.loc["tetrachoric − phi", "ci_low"] > 0  # phi is capped by the unequal yes-rates
    assert (t["ci_low"] <= t["estimate"]).all() and (t["estimate"] <= t["ci_high"]).all()
