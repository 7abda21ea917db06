import numpy as np
import pytest

from metacog.hypotheses.miscalibration.dynamics import LinearGaussianLoop, stable_but_wrong


def test_unstable_A_raises_clear_error():
    with pytest.raises(ValueError, match="spectral radius"):
        LinearGaussianLoop([[1.1, 0], [0, 0.5]], [0, 0])
    with pytest.raises(ValueError, match="spectral radius"):
        LinearGaussianLoop([[0.0, 1.0], [-1.0, 0.0]], [0, 0])  # rotation: |eig| = 1


@pytest.mark.parametrize("kwargs, match", [
    (dict(A=[[0.5, 0], [0, 0.5]], b=[0, 0, 0]), "b must have 2"),
    (dict(A=[[0.5, 0, 0], [0, 0.5, 0]], b=[0, 0]), "square"),
    (dict(A=[[0.5, 0], [0, 0.5]], b=[0, 0], Q=[[1, 0.5], [0, 1]]), "symmetric"),
    (dict(A=[[0.5, 0], [0, 0.5]], b=[0, 0], Q=[[1, 0], [0, -1]]), "positive semi-definite"),
    (dict(A=[[0.5, 0], [0, 0.5]], b=[0, 0], w=[0, 0]), "all zeros"),
])
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LinearGaussianLoop(**kwargs)


def test_fixed_point_and_lyapunov():
    loop = LinearGaussianLoop([[0.6, 0.2], [-0.1, 0.5]], [0.4, -0.2], Q=[[0.02, 0.005], [0.005, 0.01]])
    zs = loop.fixed_point
    np.testing.assert_allclose(loop.A @ zs + loop.b, zs, atol=1e-12)
    S = loop.stationary_cov
    np.testing.assert_allclose(loop.A @ S @ loop.A.T + loop.Q, S, atol=1e-12)


def test_scalar_case_closed_form():
    loop = LinearGaussianLoop([[0.5]], [1.0], Q=[[0.3]], w=[1.0], c=-2.5)
    assert loop.fixed_point[0] == pytest.approx(2.0)
    assert loop.stationary_cov[0, 0] == pytest.approx(0.3 / (1 - 0.25))
    # wrong region: z < 2.5; z* = 2 so mass = Phi(0.5 / sqrt(0.4))
    from scipy.stats import norm
    assert loop.wrong_mass() == pytest.approx(norm.cdf(0.5 / np.sqrt(0.4)))


def test_simulation_matches_stationary_law():
    loop = stable_but_wrong()
    df = loop.simulate(200, n_paths=400, seed=1)
    assert len(df) == 201 * 400
    late = df[df["step"] >= 100]
    np.testing.assert_allclose(late[["z0", "z1"]].mean().to_numpy(), loop.fixed_point, atol=0.02)
    emp_cov = np.cov(late[["z0", "z1"]].to_numpy(), rowvar=False)
    np.testing.assert_allclose(emp_cov, loop.stationary_cov, rtol=0.1, atol=1e-3)
    # Monte Carlo wrong-region share agrees with the analytic normal CDF
    assert late["wrong"].mean() == pytest.approx(loop.wrong_mass(), abs=0.02)


def test_simulation_is_seeded():
    loop = stable_but_wrong()
    a = loop.simulate(10, n_paths=3, seed=5)
    b = loop.simulate(10, n_paths=3, seed=5)
    c = loop.simulate(10, n_paths=3, seed=6)
    assert a.equals(b) and not a.equals(c)


def test_stable_yet_wrong_preset():
    loop = stable_but_wrong()
    assert loop.spectral_radius < 1
    assert loop.margin(loop.fixed_point) < 0
    np.testing.assert_allclose(loop.fixed_point, [-0.25, 0.9])
    assert 0.85 < loop.wrong_mass() < 0.99
    sens = loop.perturbation_sensitivity(sigma=0.01, n_trials=40, n_steps=20, seed=0)
    d = sens.displacement["mean"].to_numpy()
    assert d[0] == pytest.approx(0.01 * np.sqrt(np.pi / 2), rel=0.35)  # E||N(0, s^2 I_2)|| = s sqrt(pi/2)
    assert d[-1] < 0.05 * d[0]  # perturbations fade: stable
    assert sens.flip_rate == 0.0 and sens.in_wrong_region  # and it stays wrong
    assert "stationary mass in wrong region" in loop.summary()["quantity"].tolist()


def test_near_boundary_fixed_point_flips_under_kicks():
    loop = LinearGaussianLoop([[0.5, 0], [0, 0.5]], [-0.001, 0.0], w=[1, 0])
    sens = loop.perturbation_sensitivity(sigma=0.01, n_trials=200, n_steps=0, seed=2)
    assert 0.3 < sens.flip_rate < 0.6
