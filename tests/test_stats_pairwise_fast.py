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
