"""metacog.stats.tetrachoric against R psych 2.2.9 fixtures (tests/fixtures/psych/)."""

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate
from scipy.optimize import minimize_scalar
from scipy.stats import norm

from metacog.stats import bvn_cdf, cor_smooth, tetrachoric
from metacog.stats.tetrachoric import fit_rho, loglik, pair_tables

FIX = Path(__file__).parent / "fixtures" / "psych"
NAMES = ["sim1", "sim1miss", "npd", "ability", "sim2"] + [f"rand{i}" for i in range(1, 7)]


def load(name):
    X = pd.read_csv(FIX / f"data_{name}.csv", index_col=0)
    rho = pd.read_csv(FIX / f"rho_{name}.csv", index_col=0)
    raw = pd.read_csv(FIX / f"rawrho_{name}.csv", index_col=0)
    tau = pd.read_csv(FIX / f"tau_{name}.csv", index_col=0)["tau"]
    return X, rho, raw, tau


def quiet_tet(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tetrachoric(X, **kw)


def test_fixture_psych_version():
    v = pd.read_csv(FIX / "versions.csv").set_index("package").version
    assert v["psych"] == "2.2.9"


@pytest.mark.parametrize("name", NAMES)
def test_matches_psych(name):
    X, rho, raw, tau = load(name)
    res = quiet_tet(X)
    assert list(res.rho.columns) == list(rho.columns)
    np.testing.assert_allclose(res.thresholds.to_numpy(), tau.to_numpy(), atol=1e-10)
    np.testing.assert_allclose(res.raw_rho.to_numpy(), raw.to_numpy(), atol=1e-4)
    np.testing.assert_allclose(res.rho.to_numpy(), rho.to_numpy(), atol=1e-4)
    psych_smoothed = not np.allclose(rho.to_numpy(), raw.to_numpy(), atol=1e-12)
    assert res.smoothed == psych_smoothed


@pytest.mark.parametrize("name", NAMES)
def test_loglik_at_least_psych(name):
    """Our rho is the exact MLE: its log-likelihood is >= psych's rho on every pair."""
    X, _, raw, _ = load(name)
    res = quiet_tet(X)
    A = X.to_numpy(dtype=float)
    tau = res.thresholds.to_numpy()
    n00, n01, n10, n11 = pair_tables(A)
    k = A.shape[1]
    iu, ju = np.triu_indices(k, 1)
    c = [t[iu, ju].copy() for t in (n00, n01, n10, n11)]
    zero = np.minimum.reduce(c) == 0
    for t in c:
        t[zero & (t == 0)] = 0.5
    ours = loglik(res.raw_rho.to_numpy()[iu, ju], c, tau[iu], tau[ju])
    theirs = loglik(raw.to_numpy()[iu, ju], c, tau[iu], tau[ju])
    assert np.all(ours >= theirs - 1e-9)


def test_bvn_cdf_against_quadrature():
    rng = np.random.default_rng(3)
    h, k = rng.uniform(-4, 4, (2, 150))
    r = np.concatenate([rng.uniform(-1, 1, 100), rng.choice([-1, 1], 50) * rng.uniform(0.93, 0.99999, 50)])
    got = bvn_cdf(h, k, r)
    for hi, ki, ri, g in zip(h, k, r, got):
        ref, _ = integrate.quad(lambda x: norm.pdf(x) * norm.cdf((ki - ri * x) / np.sqrt(1 - ri * ri)),
                                -np.inf, hi, epsabs=1e-14, epsrel=1e-12)
        assert abs(g - ref) < 1e-12
    # independence and limits
    np.testing.assert_allclose(bvn_cdf(0.3, -0.2, 0.0), norm.cdf(0.3) * norm.cdf(-0.2), atol=1e-15)
    assert bvn_cdf(np.inf, 0.4, 0.5) == pytest.approx(norm.cdf(0.4), abs=1e-15)


def test_vectorised_fit_equals_scalar_optimiser():
    rng = np.random.default_rng(5)
    tabs = rng.integers(1, 60, size=(50, 4)).astype(float)
    tx, ty = rng.uniform(-1.5, 1.5, (2, 50))
    r = fit_rho(*tabs.T, tx, ty)
    for i in range(50):
        f = lambda x: -loglik(x, tabs[i], tx[i], ty[i])  # noqa: E731
        s = minimize_scalar(f, bounds=(-0.99999, 0.99999), method="bounded", options={"xatol": 1e-10})
        assert abs(r[i] - s.x) < 1e-6
        assert -f(r[i]) >= -s.fun - 1e-9


def test_outputs_and_zero_cell_correction():
    X, *_ = load("sim1")
    res = quiet_tet(X)
    assert res.n_pairs.to_numpy().max() == len(X)
    assert res.corrected.to_numpy().any()  # extreme thresholds leave empty cells
    np.testing.assert_allclose(np.diag(res.rho), 1.0)
    assert np.linalg.eigvalsh(res.rho.to_numpy()).min() > 0
    assert res.summary().shape == (X.shape[1], 4)


def test_missing_values_use_global_thresholds():
    X, *_ = load("sim1miss")
    res = quiet_tet(X)
    expected = norm.ppf(1 - X.mean(axis=0))  # pandas mean skips NaN: all non-missing values
    np.testing.assert_allclose(res.thresholds.to_numpy(), expected, atol=1e-12)
    assert (res.n_pairs.to_numpy() < len(X)).any()


def test_constant_column_dropped_with_warning():
    X, *_ = load("rand1")
    X = X.copy()
    X["const"] = 1.0
    with pytest.warns(UserWarning, match="const"):
        res = tetrachoric(X)
    assert res.dropped == ["const"] and "const" not in res.rho.columns


def test_square_matrix_is_data_not_a_table():
    rng = np.random.default_rng(0)
    X = pd.DataFrame((rng.normal(size=(6, 6)) > 0).astype(float))
    X.iloc[0] = 1.0
    X.iloc[1] = 0.0
    res = quiet_tet(X)
    assert res.rho.shape == (6, 6)


@pytest.mark.parametrize("bad, match", [
    (pd.DataFrame({"a": [0, 1, 2, 1], "b": [0, 1, 1, 0]}), "not binary"),
    (pd.DataFrame({"a": [0, 1, 0, 1], "b": [np.nan] * 4}), "entirely missing"),
    (pd.DataFrame({"a": [0, 1, np.nan, np.nan, 1], "b": [np.nan, np.nan, 0, 1, 1]}), "fewer than 3"),
    (pd.DataFrame({"a": ["x", "y", "x"], "b": [0, 1, 1]}), "non-numeric"),
])
def test_bad_input_raises(bad, match):
    with pytest.raises(ValueError, match=match):
        tetrachoric(bad)


def test_cor_smooth_like_psych():
    R = np.array([[1, .9, -.9], [.9, 1, .9], [-.9, .9, 1.]])
    S, done = cor_smooth(R)
    assert done and np.linalg.eigvalsh(S).min() > 0
    np.testing.assert_allclose(np.diag(S), 1.0)
    S2, done2 = cor_smooth(np.eye(3))
    assert not done2 and np.array_equal(S2, np.eye(3))
