"""Smooth ECE (Błasiok & Nakkiran 2023): checks that fail if the definition is not met."""

import numpy as np
import pytest
from scipy.stats import norm

from metacog.stats.calibration import ece, smooth_ece, smooth_ece_columns


def _planted(n, seed, shift=0.0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.2, 0.7, n)
    y = (rng.random(n) < p).astype(float)
    return y, p + shift


def _direct(y, f, sigma):
    """smECE_sigma by brute force: images of the Gaussian reflected at 0 and 1, trapezoid rule."""
    t = np.linspace(0.0, 1.0, 40001)
    K = sum(norm.pdf(t[:, None] - f[None, :] - 2 * j, scale=sigma)
            + norm.pdf(t[:, None] + f[None, :] - 2 * j, scale=sigma) for j in range(-4, 5))
    return float(np.trapezoid(np.abs(K @ (y - f)) / len(y), t))


def test_calibrated_sample_is_small_and_shrinks_with_n():
    means = [np.mean([smooth_ece(*_planted(n, s)) for s in range(4)]) for n in (200, 2000, 20000)]
    assert means[0] > means[1] > means[2]
    assert means[0] < 0.08 and means[2] < 0.02


@pytest.mark.parametrize("d", [0.05, 0.1, 0.2, -0.1])
def test_constant_shift_gives_about_the_shift(d):
    y, f = _planted(20000, 1, shift=d)
    assert smooth_ece(y, f) == pytest.approx(abs(d), abs=0.012)


def test_same_order_as_binned_ece():
    rng = np.random.default_rng(5)
    for k in range(6):
        p = rng.uniform(0.05, 0.95, 3000)
        y = (rng.random(3000) < p).astype(float)
        f = np.clip(p + rng.uniform(-0.25, 0.25) * (p - 0.5) * k / 3 + 0.03 * k, 0, 1)
        s, e = smooth_ece(y, f), ece(y, f).ece
        assert e / 3 <= s <= 2 * e + 0.02, (k, s, e)


@pytest.mark.parametrize("sigma", [0.02, 0.07, 0.3])
def test_fixed_bandwidth_agrees_with_direct_integration(sigma):
    rng = np.random.default_rng(2)
    f = np.concatenate([rng.uniform(0, 1, 30), [0.0, 1.0, 0.01, 0.99]])
    y = (rng.random(f.size) < 0.6).astype(float)
    # the module integrates by the midpoint rule on >= 256 points: error ~1e-5 where |s| has kinks
    assert smooth_ece(y, f, sigma=sigma) == pytest.approx(_direct(y, f, sigma), abs=1e-4)


def test_value_is_the_fixed_point_and_smece_sigma_decreases():
    y, f = _planted(300, 3, shift=0.05)
    s = smooth_ece(y, f)
    assert smooth_ece(y, f, sigma=s) == pytest.approx(s, abs=2e-5)
    vals = [smooth_ece(y, f, sigma=x) for x in (0.005, 0.02, 0.05, 0.2, 0.6)]
    assert all(a >= b - 1e-12 for a, b in zip(vals, vals[1:]))


def test_symmetric_under_relabelling():
    y, f = _planted(400, 4, shift=0.1)
    assert smooth_ece(1 - y, 1 - f) == pytest.approx(smooth_ece(y, f), abs=1e-9)


def test_one_sided_residuals_give_their_mean():
    # every residual negative: the smoothed residual never changes sign, so smECE = |mean residual|
    f = np.array([0.9] * 30 + [0.6] * 30 + [0.2] * 20)
    y = np.array([1] * 20 + [0] * 10 + [1] * 15 + [0] * 15 + [1] * 2 + [0] * 18, float)
    assert smooth_ece(y, f) == pytest.approx(12 / 80, abs=1e-6)


def _reference_sets():
    f = np.linspace(0.05, 0.95, 40)
    y = (np.arange(40) % 3 != 0).astype(float)
    rng = np.random.default_rng(7)
    p = rng.uniform(0.1, 0.9, 500)
    yy = (rng.random(500) < p).astype(float)
    return {"grid40": (f, y), "calib500": (p, yy), "over500": (np.clip(p + 0.15, 0, 1), yy)}


@pytest.mark.parametrize("name, ref", [("grid40", 0.21839), ("calib500", 0.04881), ("over500", 0.10823)])
def test_reference_values_of_relplot(name, ref):
    # relplot 1.0.3 (PyPI, the paper's authors), relplot.smECE(f, y) on the same data. relplot
    # smooths on a grid by linear interpolation, this module exactly, so they agree to ~1e-2:
    # on the three-level sample of test_one_sided_residuals_give_their_mean relplot gives
    # 0.15026 where the exact value is 0.15.
    f, y = _reference_sets()[name]
    assert smooth_ece(y, f) == pytest.approx(ref, abs=0.006)


def test_columns_weights_and_missing_values():
    rng = np.random.default_rng(6)
    C = rng.uniform(0, 1, (80, 3))
    Y = (rng.random((80, 3)) < C ** 1.5).astype(float)
    C[:10, 1] = np.nan
    got = smooth_ece_columns(C, Y)
    for j in range(3):
        ok = ~np.isnan(C[:, j])
        assert got[j] == pytest.approx(smooth_ece(Y[ok, j], C[ok, j]), abs=1e-9)
    idx = rng.integers(0, 80, 80)
    w = np.bincount(idx, minlength=80)[None, :]
    assert smooth_ece_columns(C, Y, w)[0] == pytest.approx(smooth_ece_columns(C[idx], Y[idx]), abs=1e-9)
    assert np.isnan(smooth_ece_columns(np.full((3, 1), np.nan), np.ones((3, 1)))[0])
