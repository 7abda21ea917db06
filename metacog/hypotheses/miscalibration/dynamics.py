"""A linear-Gaussian closed loop whose stable state can sit on the wrong side of a decision.

Paper 2 ("Stable miscalibration") argues that a model's confidence can settle
into a state that is stable (small perturbations die out) and yet wrong. This
module is the teaching toy behind that claim:

* state update ``z_{t+1} = A z_t + b + eta_t`` with ``eta_t ~ N(0, Q)``;
* stability: the spectral radius ``rho(A) < 1`` (checked, else ValueError);
* the fixed point ``z* = (I - A)^{-1} b``;
* the stationary covariance ``Sigma`` solves the discrete Lyapunov equation
  ``Sigma = A Sigma A^T + Q``; the stationary law is ``N(z*, Sigma)``;
* a linear decision ``right`` iff ``w . z + c > 0``. If ``w . z* + c < 0`` the
  fixed point is in the WRONG region; the stationary probability of being in the
  wrong region is ``Phi(-(w . z* + c) / sqrt(w^T Sigma w))``;
* perturbation sensitivity: kick the state at ``z*`` by ``N(0, sigma^2 I)`` and
  follow the noise-free loop; the displacement decays like ``||A^t delta||``. A
  small displacement that fades while the decision stays wrong is "stable yet wrong".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import linalg, stats


def _as_matrix(x, name: str, k: int | None = None) -> np.ndarray:
    arr = np.atleast_2d(np.asarray(x, dtype=float))
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"LinearGaussianLoop: {name} must be square, got shape {arr.shape}.")
    if k is not None and arr.shape[0] != k:
        raise ValueError(f"LinearGaussianLoop: {name} must be {k} x {k} to match A, got {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"LinearGaussianLoop: {name} has non-finite entries.")
    return arr


def _as_vector(x, name: str, k: int) -> np.ndarray:
    arr = np.asarray(x, dtype=float).ravel()
    if arr.shape != (k,):
        raise ValueError(f"LinearGaussianLoop: {name} must have {k} entries to match A, got {arr.size}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"LinearGaussianLoop: {name} has non-finite entries.")
    return arr


@dataclass
class Sensitivity:
    """Result of :meth:`LinearGaussianLoop.perturbation_sensitivity`."""

    sigma: float
    n_trials: int
    displacement: pd.DataFrame  # step, mean, sd of ||z_t - z*|| over trials
    flip_rate: float  # share of (trial, step) states whose decision differs from z*'s
    in_wrong_region: bool  # the fixed point's decision is wrong

    def summary(self) -> pd.DataFrame:
        d = self.displacement
        return pd.DataFrame(
            [("sigma", self.sigma), ("trials", self.n_trials),
             ("displacement at step 0", float(d["mean"].iloc[0])),
             ("displacement at last step", float(d["mean"].iloc[-1])),
             ("decay ratio (last / first)", float(d["mean"].iloc[-1] / d["mean"].iloc[0])),
             ("decision flip rate", self.flip_rate),
             ("fixed point in wrong region", self.in_wrong_region)],
            columns=["quantity", "value"])


class LinearGaussianLoop:
    """The closed loop ``z_{t+1} = A z_t + b + eta``, ``eta ~ N(0, Q)``, with decision ``w.z + c > 0``.

    ``Q`` defaults to ``0.01 * I``; ``w`` to the first unit vector; ``c`` to 0.
    Raises ValueError if ``A`` is not stable (spectral radius >= 1) or ``Q`` is not
    a covariance matrix.
    """

    def __init__(self, A, b, Q=None, w=None, c: float = 0.0):
        self.A = _as_matrix(A, "A")
        k = self.A.shape[0]
        self.k = k
        self.b = _as_vector(b, "b", k)
        self.Q = 0.01 * np.eye(k) if Q is None else _as_matrix(Q, "Q", k)
        if not np.allclose(self.Q, self.Q.T):
            raise ValueError("LinearGaussianLoop: Q must be symmetric (a covariance matrix).")
        if np.linalg.eigvalsh(self.Q).min() < -1e-12:
            raise ValueError("LinearGaussianLoop: Q must be positive semi-definite (a covariance matrix).")
        self.w = np.eye(k)[0] if w is None else _as_vector(w, "w", k)
        if not np.any(self.w):
            raise ValueError("LinearGaussianLoop: w is all zeros, so there is no decision boundary.")
        self.c = float(c)
        rho = self.spectral_radius
        if rho >= 1:
            raise ValueError(
                f"LinearGaussianLoop: A is not stable: spectral radius {rho:.4g} >= 1, so the loop "
                "has no stationary state. Scale A down (e.g. A * 0.9 / spectral_radius).")

    @property
    def spectral_radius(self) -> float:
        return float(np.max(np.abs(np.linalg.eigvals(self.A))))

    @property
    def fixed_point(self) -> np.ndarray:
        """``z* = (I - A)^{-1} b``."""
        return np.linalg.solve(np.eye(self.k) - self.A, self.b)

    @property
    def stationary_cov(self) -> np.ndarray:
        """``Sigma`` with ``Sigma = A Sigma A^T + Q``."""
        S = linalg.solve_discrete_lyapunov(self.A, self.Q)
        return (S + S.T) / 2

    def margin(self, z) -> np.ndarray:
        """Signed decision margin ``w . z + c`` (positive = right region)."""
        return np.asarray(z, dtype=float) @ self.w + self.c

    def wrong_mass(self) -> float:
        """Stationary probability of the wrong region, ``P(w . z + c < 0)``, from the normal CDF."""
        m = float(self.margin(self.fixed_point))
        s = float(np.sqrt(self.w @ self.stationary_cov @ self.w))
        if s == 0:
            return float(m < 0)
        return float(stats.norm.cdf(-m / s))

    def simulate(self, n_steps: int, z0=None, n_paths: int = 1, seed: int = 0) -> pd.DataFrame:
        """Simulate ``n_paths`` noisy trajectories of ``n_steps`` steps from ``z0`` (default z*).

        Returns a tidy table: path, step, z0..z{k-1}, margin, wrong.
        """
        if int(n_steps) != n_steps or n_steps < 1:
            raise ValueError(f"simulate: n_steps must be a positive integer, got {n_steps!r}.")
        if int(n_paths) != n_paths or n_paths < 1:
            raise ValueError(f"simulate: n_paths must be a positive integer, got {n_paths!r}.")
        rng = np.random.default_rng(seed)
        z = np.tile(self.fixed_point if z0 is None else _as_vector(z0, "z0", self.k), (n_paths, 1))
        L = np.linalg.cholesky(self.Q + 1e-15 * np.eye(self.k))
        out = np.empty((n_steps + 1, n_paths, self.k))
        out[0] = z
        for t in range(n_steps):
            z = z @ self.A.T + self.b + rng.standard_normal((n_paths, self.k)) @ L.T
            out[t + 1] = z
        steps, paths = np.meshgrid(np.arange(n_steps + 1), np.arange(n_paths), indexing="ij")
        df = pd.DataFrame({"path": paths.ravel(), "step": steps.ravel()})
        flat = out.reshape(-1, self.k)
        for i in range(self.k):
            df[f"z{i}"] = flat[:, i]
        df["margin"] = self.margin(flat)
        df["wrong"] = df["margin"] < 0
        return df.sort_values(["path", "step"], kind="stable").reset_index(drop=True)

    def perturbation_sensitivity(self, sigma: float = 0.01, n_trials: int = 40,
                                 n_steps: int = 20, seed: int = 0) -> Sensitivity:
        """Kick ``z*`` by ``N(0, sigma^2 I)`` and follow the noise-free loop for ``n_steps``.

        Mirrors paper 2's probe (sigma = 0.01, 40 trials): the mean displacement
        ``||z_t - z*||`` per step, and how often a kicked state lands on the other
        side of the decision boundary from ``z*``.
        """
        if not np.isfinite(sigma) or sigma <= 0:
            raise ValueError(f"perturbation_sensitivity: sigma must be > 0, got {sigma!r}.")
        rng = np.random.default_rng(seed)
        zs = self.fixed_point
        delta = rng.normal(0.0, sigma, (n_trials, self.k))
        disp = np.empty((n_steps + 1, n_trials))
        flips = np.empty((n_steps + 1, n_trials), dtype=bool)
        side = self.margin(zs) > 0
        for t in range(n_steps + 1):
            disp[t] = np.linalg.norm(delta, axis=1)
            flips[t] = (self.margin(zs + delta) > 0) != side
            delta = delta @ self.A.T  # noise-free: deviations evolve by A alone
        table = pd.DataFrame({"step": np.arange(n_steps + 1), "mean": disp.mean(axis=1),
                              "sd": disp.std(axis=1, ddof=1) if n_trials > 1 else 0.0})
        return Sensitivity(sigma=float(sigma), n_trials=int(n_trials), displacement=table,
                           flip_rate=float(flips.mean()), in_wrong_region=bool(not side))

    def summary(self) -> pd.DataFrame:
        zs = self.fixed_point
        return pd.DataFrame(
            [("spectral radius", self.spectral_radius),
             ("fixed point", np.round(zs, 4).tolist()),
             ("decision margin at fixed point", float(self.margin(zs))),
             ("fixed point in wrong region", bool(self.margin(zs) < 0)),
             ("sd of margin (stationary)", float(np.sqrt(self.w @ self.stationary_cov @ self.w))),
             ("stationary mass in wrong region", self.wrong_mass())],
            columns=["quantity", "value"])


def stable_but_wrong(k: int = 2) -> LinearGaussianLoop:
    """A small preset for the book: a contracting loop whose fixed point is confidently wrong.

    State z = (belief toward the right answer, confidence); A contracts (rho = 0.8);
    the input b pulls the belief negative, so z* sits in the wrong region with about
    93% of the stationary mass there (noise sometimes visits the right side), while
    small perturbations of z* fade and never flip the decision.
    """
    if k != 2:
        raise ValueError("stable_but_wrong: only the 2-dimensional preset exists (k=2).")
    A = np.array([[0.8, 0.1], [0.0, 0.7]])
    b = np.array([-0.14, 0.27])  # z* = (-0.25, 0.9): belief wrong, confidence high
    Q = np.diag([0.01, 0.005])
    return LinearGaussianLoop(A, b, Q=Q, w=[1.0, 0.0], c=0.0)
