"""auroc_ci against R pROC (DeLong) and a bootstrap; proportion_ci against known intervals;
bootstrap_items against the loop and the existing bootstrap_ci."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog.stats import auroc, bootstrap_ci
from metacog.stats.intervals import auroc_ci, bootstrap_items, proportion_ci

FIX = Path(__file__).parent / "fixtures" / "proc"
REF = pd.read_csv(FIX / "delong.csv")


@pytest.mark.parametrize("name", REF["name"].tolist())
def test_auroc_ci_matches_proc_delong(name):
    ref = REF.set_index("name").loc[name]
    d = pd.read_csv(FIX / f"data_{name}.csv")
    res = auroc_ci(d["y"], d["score"])
    assert res.estimate == pytest.approx(ref["auc"], abs=1e-12)
    assert res.se ** 2 == pytest.approx(ref["var"], rel=1e-9)
    assert res.ci_low == pytest.approx(ref["ci_low"], abs=1e-10)
    assert res.ci_high == pytest.approx(ref["ci_high"], abs=1e-10)
    assert (res.n_pos, res.n_neg) == (ref["n_pos"], ref["n_neg"])
    assert res.estimate == pytest.approx(auroc(d["y"], d["score"]), abs=1e-12)


def test_small_class_is_flagged_with_threshold_and_counts():
    d = pd.read_csv(FIX / "data_small.csv")  # 6 positives, 9 negatives
    res = auroc_ci(d["y"], d["score"], min_class=10)
    assert not res.sufficient
    assert "6 positives" in res.reason and "9 negatives" in res.reason and "10" in res.reason
    assert auroc_ci(d["y"], d["score"], min_class=5).sufficient


def test_one_class_gives_nan_and_says_so():
    res = auroc_ci([1, 1, 1], [0.2, 0.4, 0.9])
    assert np.isnan(res.estimate) and not res.sufficient and "no negatives" in res.reason


def test_logit_interval_stays_inside_unit_interval_and_is_asymmetric():
    d = pd.read_csv(FIX / "data_high.csv")
    res = auroc_ci(d["y"], d["score"], method="logit")
    assert 0 < res.ci_low < res.estimate < res.ci_high < 1
    assert res.ci_high - res.estimate < res.estimate - res.ci_low


def test_delong_se_agrees_with_bootstrap_on_simulated_data():
    rng = np.random.default_rng(3)
    y = (rng.random(400) < 0.3).astype(float)
    s = rng.normal(0.7 * y, 1.0)
    res = auroc_ci(y, s)
    boot = bootstrap_ci(lambda a, b: auroc(a, b), y, s, n_boot=1500, seed=1)
    assert res.se == pytest.approx(float(boot["se"].iloc[0]), rel=0.12)
    assert res.ci_low == pytest.approx(float(boot["ci_low"].iloc[0]), abs=0.02)
    assert res.ci_high == pytest.approx(float(boot["ci_high"].iloc[0]), abs=0.02)


def test_delong_interval_covers_a_planted_auroc():
    # true AUROC of N(d,1) vs N(0,1) is Phi(d / sqrt 2)
    from scipy.stats import norm

    d, truth = 0.8, norm.cdf(0.8 / np.sqrt(2))
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(300):
        y = np.r_[np.ones(60), np.zeros(60)]
        res = auroc_ci(y, rng.normal(d * y, 1.0))
        hits += res.ci_low <= truth <= res.ci_high
    assert 0.91 <= hits / 300 <= 0.985


def test_auroc_ci_rejects_bad_labels():
    with pytest.raises(ValueError, match="y_true must be 0/1"):
        auroc_ci([0, 2, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="3 values but score has 2"):
        auroc_ci([0, 1, 1], [0.1, 0.2])


def test_proportion_ci_known_values():
    # Wilson 5/10: 0.2366 to 0.7634; Clopper-Pearson 0/10 upper = 1 - 0.025**(1/10)
    lo, hi = proportion_ci(5, 10)
    assert (lo, hi) == pytest.approx((0.23659, 0.76341), abs=1e-5)
    lo, hi = proportion_ci(0, 10, method="exact")
    assert lo == 0 and hi == pytest.approx(1 - 0.025 ** 0.1, abs=1e-12)
    lo, hi = proportion_ci(10, 10, method="exact")
    assert hi == 1 and lo == pytest.approx(0.025 ** 0.1, abs=1e-12)
    # 7/20 exact (textbook value 0.1539 to 0.5922)
    lo, hi = proportion_ci(7, 20, method="exact")
    assert (lo, hi) == pytest.approx((0.15391, 0.59219), abs=1e-4)
    assert all(np.isnan(proportion_ci(0, 0)))


def test_exact_interval_covers_at_least_nominal():
    from scipy.stats import binom

    n, p = 25, 0.3
    ks = np.arange(n + 1)
    cover = sum(binom.pmf(k, n, p) for k in ks
                if proportion_ci(k, n, method="exact")[0] <= p <= proportion_ci(k, n, method="exact")[1])
    assert cover >= 0.95


def test_proportion_ci_rejects_impossible_counts():
    with pytest.raises(ValueError, match="0 <= k <= n"):
        proportion_ci(11, 10)
    with pytest.raises(ValueError, match="'wilson' or 'exact'"):
        proportion_ci(1, 10, method="wald")


def test_bootstrap_items_vectorised_equals_loop_and_covers_planted_mean():
    rng = np.random.default_rng(0)
    m = pd.DataFrame(rng.normal(0.3, 1.0, size=(200, 4)), columns=list("abcd"))
    fast = bootstrap_items(lambda a: a.mean(axis=-2).mean(axis=-1), m, n_boot=500, seed=5)
    slow = bootstrap_items(lambda a: a.mean(), m, n_boot=500, seed=5, vectorized=False)
    np.testing.assert_allclose(fast.draws, slow.draws)
    s = fast.summary()
    assert s.loc[0, "estimate"] == pytest.approx(m.to_numpy().mean())
    assert s.loc[0, "ci_low"] < 0.3 < s.loc[0, "ci_high"]
    assert s.loc[0, "ci_high"] - s.loc[0, "ci_low"] < 0.4


def test_bootstrap_items_per_model_statistics_named_by_column():
    rng = np.random.default_rng(1)
    m = pd.DataFrame(rng.normal([0, 1, 2], 0.5, size=(300, 3)), columns=["x", "y", "z"])
    res = bootstrap_items(lambda a: a.mean(axis=-2), m, n_boot=300, seed=0).summary()
    assert res["statistic"].tolist() == ["x", "y", "z"]
    means = m.mean().to_numpy()
    assert (res["ci_low"] < means).all() and (res["ci_high"] > means).all()
    # width of a 95% interval for a mean of 300 draws with sd 0.5: 2 * 1.96 * 0.5 / sqrt(300)
    np.testing.assert_allclose(res["ci_high"] - res["ci_low"], 2 * 1.96 * m.std().to_numpy() / np.sqrt(300),
                               rtol=0.15)


def test_bootstrap_items_checks_stat_shape():
    with pytest.raises(ValueError, match=r"shape \(B,\) or \(B, k\)"):
        bootstrap_items(lambda a: 1.0, np.ones((10, 2)), n_boot=10)
