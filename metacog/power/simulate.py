"""Simulated populations of models answering items, with known metacognitive structure.

The book uses these populations to check that the statistics can find what
was planted (recovery) and to ask how many models and items a study needs to
see an individualised signal (power, :mod:`metacog.power.curves`).

Generative model (one draw of :func:`population`)
--------------------------------------------------

For items ``i = 1..n`` and models ``j = 1..m``:

* item difficulty ``d_i ~ N(0, sigma_d^2)``, shared by every model;
* model ability ``a_j ~ N(mu_a, sd_a^2)``;
* a model-specific item effect ``u_ij ~ N(0, sigma_u^2)``, independent across
  models: what this model happens to know or not, beyond the shared difficulty;
* latent performance ``z_ij = a_j - d_i + u_ij`` and ``correct_ij = 1[z_ij > 0]``.
  Correctness is correlated across models through ``d_i`` and only partly
  shared because of ``u_ij``;
* latent confidence ``c*_ij = lambda * (-d_i / sigma_d) + kappa * (u_ij / sigma_u) + e_ij``
  with ``e_ij ~ N(0, sigma_e^2)``. ``lambda`` loads the shared difficulty
  axis (every model knows what is hard for models in general); ``kappa`` is
  the individualised metacognitive signal (a model senses its own,
  model-specific part of performance); ``e_ij`` is judgment noise;
* binary confidence ``confidence_ij = 1[c*_ij > t_j]`` with a threshold
  ``t_j ~ N(mu_t, sd_t^2)`` per model.

True structure. Across items, the latent confidences of two models have
``Var(c*_j) = lambda^2 + kappa^2 + sigma_e^2`` and ``Cov(c*_j, c*_k) = lambda^2``
(j != k), so the latent correlation matrix is equicorrelated with
``rho = lambda^2 / (lambda^2 + kappa^2 + sigma_e^2)``. Its first eigenvalue is
``1 + (m - 1) rho``; the *first-factor share* reported here is that eigenvalue
divided by ``m``. (The common-factor share, the mean squared loading of a one-factor
model, is ``rho`` itself; both are in ``params``.) Adding ``kappa`` lowers the shared
share but creates no second factor, because each model's signal is its own.

The latent correlation of model j's confidence with its own performance is
``(lambda sigma_d + kappa sigma_u) / (s_c s_z)`` and with another model's
performance ``lambda sigma_d / (s_c s_z)``, where ``s_c^2 = lambda^2 + kappa^2 + sigma_e^2``
and ``s_z^2 = sigma_d^2 + sigma_u^2``. ``kappa > 0`` is exactly what makes a
model's confidence track its own correctness better than another model's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


@dataclass
class Population:
    """One simulated population: binary confidence and correctness, items x models."""

    confidence: pd.DataFrame  # items x models, 0/1 (int8)
    correct: pd.DataFrame  # items x models, 0/1 (int8)
    difficulty: pd.Series  # d_i, per item
    ability: pd.Series  # a_j, per model
    thresholds: pd.Series  # t_j, per model
    kappa: float
    latent_corr: pd.DataFrame  # true correlation matrix of c* across models
    params: dict[str, Any] = field(default_factory=dict)
    latent: dict[str, np.ndarray] | None = None  # z, c*, u (items x models) if keep_latent

    @property
    def first_factor_share(self) -> float:
        """True first-eigenvalue share of the latent confidence correlation matrix."""
        return float(self.params["first_factor_share"])

    def summary(self) -> pd.DataFrame:
        """The true parameters and a few observed rates, as a two-column table."""
        p = self.params
        rows = [
            ("n_items", p["n_items"]),
            ("n_models", p["n_models"]),
            ("kappa", p["kappa"]),
            ("lambda", p["lam"]),
            ("sigma_u", p["sigma_u"]),
            ("sigma_e", p["sigma_e"]),
            ("latent rho (confidence, between models)", p["rho"]),
            ("first-factor share (first eigenvalue / m)", p["first_factor_share"]),
            ("common-factor share (mean squared loading)", p["common_factor_share"]),
            ("latent corr(confidence_j, performance_j)", p["self_corr"]),
            ("latent corr(confidence_j, performance_k)", p["other_corr"]),
            ("observed accuracy (mean)", float(self.correct.to_numpy().mean())),
            ("observed confidence rate (mean)", float(self.confidence.to_numpy().mean())),
        ]
        return pd.DataFrame(rows, columns=["quantity", "value"])


def _per_model(value, n_models: int, mean: float, sd: float, rng: np.random.Generator,
               name: str) -> np.ndarray:
    """Draw a per-model vector, or check a given one."""
    if value is None:
        return rng.normal(mean, sd, n_models)
    arr = np.asarray(value, dtype=float).ravel()
    if arr.shape != (n_models,):
        raise ValueError(f"population: {name} has {arr.size} values; give one per model "
                         f"({n_models}) or None to draw them.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"population: {name} must be finite numbers.")
    return arr


def equicorrelation_share(rho: float, n_models: int) -> float:
    """First eigenvalue share ``(1 + (m-1) rho) / m`` of an m x m equicorrelation matrix."""
    return (1.0 + (n_models - 1) * rho) / n_models


@functools.lru_cache(maxsize=64)
def _labels(prefix: str, width: int, n: int, name: str) -> pd.Index:
    """'i00001', 'i00002', ... as an index (made once per size: simulations ask thousands of
    times, and an index is immutable, so populations can share it)."""
    return pd.Index([f"{prefix}{j + 1:0{width}d}" for j in range(n)], name=name)


def population(n_models: int, n_items: int, kappa: float = 0.0, seed: int = 0, *,
               lam: float = 1.0, sigma_d: float = 1.0, sigma_u: float = 1.0,
               sigma_e: float = 0.7, ability_mean: float = 0.5, ability_sd: float = 0.5,
               threshold_mean: float = 0.0, threshold_sd: float = 0.5,
               ability=None, thresholds=None, keep_latent: bool = False) -> Population:
    """Simulate ``n_models`` models answering ``n_items`` items (see the module docstring).

    ``kappa`` is the strength of the individualised metacognitive signal (0: none,
    confidence only follows the shared difficulty axis). ``lam`` is the loading of
    the shared difficulty axis, ``sigma_e`` the judgment noise, ``sigma_u`` the
    spread of model-specific item effects. ``ability`` and ``thresholds`` may be
    given (one per model) instead of drawn. Deterministic given ``seed``.
    """
    if int(n_models) != n_models or n_models < 2:
        raise ValueError(f"population: n_models must be an integer >= 2, got {n_models!r}.")
    if int(n_items) != n_items or n_items < 2:
        raise ValueError(f"population: n_items must be an integer >= 2, got {n_items!r}.")
    for name, v in [("kappa", kappa), ("lam", lam)]:
        if not np.isfinite(v) or v < 0:
            raise ValueError(f"population: {name} must be a finite number >= 0, got {v!r}.")
    for name, v in [("sigma_d", sigma_d), ("sigma_u", sigma_u)]:
        if not np.isfinite(v) or v <= 0:
            raise ValueError(f"population: {name} must be > 0, got {v!r}.")
    for name, v in [("sigma_e", sigma_e), ("ability_sd", ability_sd), ("threshold_sd", threshold_sd)]:
        if not np.isfinite(v) or v < 0:
            raise ValueError(f"population: {name} must be >= 0, got {v!r}.")
    if lam ** 2 + kappa ** 2 + sigma_e ** 2 == 0:
        raise ValueError("population: lam, kappa and sigma_e are all 0, so confidence is "
                         "constant; make at least one positive.")
    n_models, n_items = int(n_models), int(n_items)
    rng = np.random.default_rng(seed)
    # Draw order is fixed so a seed always gives the same population.
    a = _per_model(ability, n_models, ability_mean, ability_sd, rng, "ability")
    t = _per_model(thresholds, n_models, threshold_mean, threshold_sd, rng, "thresholds")
    d = rng.normal(0.0, sigma_d, n_items)
    u = rng.normal(0.0, sigma_u, (n_items, n_models))
    e = rng.normal(0.0, 1.0, (n_items, n_models)) * sigma_e

    z = a[None, :] - d[:, None] + u
    c_star = lam * (-d[:, None] / sigma_d) + kappa * (u / sigma_u) + e
    correct = (z > 0).astype(np.int8)
    confidence = (c_star > t[None, :]).astype(np.int8)

    var_c = lam ** 2 + kappa ** 2 + sigma_e ** 2
    rho = lam ** 2 / var_c
    R = np.full((n_models, n_models), rho)
    np.fill_diagonal(R, 1.0)
    eig = np.linalg.eigvalsh(R)[::-1]
    s_c, s_z = np.sqrt(var_c), np.sqrt(sigma_d ** 2 + sigma_u ** 2)
    params = {
        "n_models": n_models, "n_items": n_items, "kappa": float(kappa), "lam": float(lam),
        "sigma_d": float(sigma_d), "sigma_u": float(sigma_u), "sigma_e": float(sigma_e),
        "ability_mean": float(ability_mean), "ability_sd": float(ability_sd),
        "threshold_mean": float(threshold_mean), "threshold_sd": float(threshold_sd),
        "seed": seed, "rho": float(rho),
        "first_factor_share": float(eig[0] / n_models),
        "second_eigenvalue": float(eig[1]),
        "common_factor_share": float(rho),
        "self_corr": float((lam * sigma_d + kappa * sigma_u) / (s_c * s_z)),
        "other_corr": float(lam * sigma_d / (s_c * s_z)),
    }
    idx, cols = _labels("i", 5, n_items, "item"), _labels("m", 2, n_models, "model")
    latent = {"z": z, "c_star": c_star, "u": u} if keep_latent else None
    return Population(
        confidence=pd.DataFrame(confidence, index=idx, columns=cols),
        correct=pd.DataFrame(correct, index=idx, columns=cols),
        difficulty=pd.Series(d, index=idx, name="difficulty"),
        ability=pd.Series(a, index=cols, name="ability"),
        thresholds=pd.Series(t, index=cols, name="threshold"),
        kappa=float(kappa),
        latent_corr=pd.DataFrame(R, index=cols, columns=cols),
        params=params,
        latent=latent,
    )
