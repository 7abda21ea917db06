"""The fast routes of the difficulty control: complete data without the items x models x models
arrays, and the normal approximation of the stratified exact test for large designs."""

import numpy as np
import pytest

from metacog.power import simulate
from metacog.stats import pairwise as pw
from metacog.stats import stratified


@pytest.mark.parametrize("m,n,alt", [(3, 60, "greater"), (7, 250, "two-sided"), (15, 500, "less")])
def test_complete_data_route_equals_the_general_route(m, n, alt):
    p = simulate.population(m, n, kappa=0.5, seed=m)
    A, B = p.confidence.to_numpy(float), p.correct.to_numpy(float)
    general = stratified.difficulty_control(A, B, None, alt)
    fast = stratified.difficulty_control_complete(A, B, alt)
    for key in general:
        np.testing.assert_allclose(np.nan_to_num(fast[key], nan=-9.0),
                                   np.nan_to_num(general[key], nan=-9.0), atol=1e-10, err_msg=key)


def test_pairwise_calibration_takes_the_complete_route_with_same_result(monkeypatch):
    p = simulate.population(8, 300, kappa=0.5, seed=3)
    fast = pw.pairwise_calibration(p.confidence, p.correct)
    calls = []
    monkeypatch.setattr(stratified, "difficulty_control_complete", lambda *a: calls.append(1) or
                        stratified.difficulty_control(a[0], a[1], None, a[2]))
    slow = pw.pairwise_calibration(p.confidence, p.correct)
    assert calls == [1]
    np.testing.assert_allclose(fast.pairs["p_within"], slow.pairs["p_within"], atol=1e-12)


def test_normal_approximation_is_close_to_the_exact_test(monkeypatch):
    p = simulate.population(12, 3000, kappa=0.6, seed=1)
    A, B = p.confidence.to_numpy(float), p.correct.to_numpy(float)
    monkeypatch.setattr(stratified, "EXACT_MAX_SUPPORT", 10**9)
    exact = stratified.difficulty_control_complete(A, B, "greater")["p"]
    monkeypatch.setattr(stratified, "EXACT_MAX_SUPPORT", 0)
    approx = stratified.difficulty_control_complete(A, B, "greater")["p"]
    ok = np.isfinite(exact)
    assert np.max(np.abs(exact[ok] - approx[ok])) < 0.005
    mid = ok & (exact > 0.01)
    assert np.max(np.abs(np.log(exact[mid] / approx[mid]))) < 0.15
    # and the decision at 0.05 agrees for nearly every pair
    assert np.mean((exact[ok] < 0.05) == (approx[ok] < 0.05)) > 0.97


def test_stratified_p_equals_convolving_one_stratum_at_a_time():
    from scipy.special import gammaln

    from metacog.stats.stratified import stratified_p

    def plain(T, ns, as_, bs, alternative, lf):
        pmf, offset = np.array([1.0]), 0
        for n_s, a_s, b_s in zip(ns, as_, bs):
            lo, hi = max(0, a_s + b_s - n_s), min(a_s, b_s)
            offset += lo
            if hi == lo:
                continue
            x = np.arange(lo, hi + 1)
            lp = (lf[a_s] - lf[x] - lf[a_s - x] + lf[n_s - a_s] - lf[b_s - x] - lf[n_s - a_s - b_s + x]
                  - lf[n_s] + lf[b_s] + lf[n_s - b_s])
            pmf = np.convolve(pmf, np.exp(lp))
        support = offset + np.arange(pmf.size)
        if alternative == "greater":
            return min(max(pmf[support >= T - 1e-9].sum(), 0.0), 1.0)
        return min(max(pmf[support <= T + 1e-9].sum(), 0.0), 1.0)

    rng = np.random.default_rng(3)
    lf = gammaln(np.arange(200, dtype=float) + 1)
    for _ in range(200):
        k = int(rng.integers(1, 12))
        ns = rng.integers(1, 40, k)
        as_ = np.array([rng.integers(0, n + 1) for n in ns])
        bs = np.array([rng.integers(0, n + 1) for n in ns])
        T = int(rng.integers(0, int(np.minimum(as_, bs).sum()) + 1))
        for alt in ("greater", "less"):
            assert stratified_p(T, ns, as_, bs, alt, lf) == plain(T, ns, as_, bs, alt, lf)
