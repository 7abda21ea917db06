"""Power analysis: how many models and items does it take to see individualised metacognition?

Populations come from :func:`metacog.power.simulate.population`, where ``kappa`` is
the strength of each model's private signal about its own performance. Two
tests are studied.

(a) The pairwise self-versus-other test (:func:`metacog.stats.self_other_test`). For every
ordered pair (model A's confidence, model B's correctness) compute Kendall's
tau-b over items (the matrix ``K``; for 0/1 data tau-b equals the phi
coefficient, so ``K`` is computed in one matrix product and agrees with
:func:`metacog.stats.pairwise_calibration`). The statistic is

    T = mean_j K[j, j] - mean_{j != k} K[j, k],

mean self-pair calibration minus mean other-pair calibration. "Detecting an
individualised signal" means rejecting ``T <= 0`` at level ``alpha`` by a
one-sided permutation test that shuffles which correctness column is paired with
which confidence column (exact when models are exchangeable, as in the
simulator), or by a one-sided paired t-test over models of
``D_j = K[j, j] - mean_{k != j} K[j, k]`` (``method="ttest"``).

(b) The factor-analytic test (:func:`factor_power`). Estimate the tetrachoric
correlation matrix of the confidence columns (:func:`metacog.stats.tetrachoric`)
and its first-factor share (first eigenvalue / number of models, from
:func:`metacog.stats.factor_analysis`). "Detect" means either the share falls
below the ``alpha`` quantile of its distribution in simulated populations with
``kappa = 0`` and otherwise the same settings (``share_drop``), or a second
eigenvalue above 1 appears (``second_factor``, Kaiser's rule). The share-drop
test is idealised: it assumes the judgment noise is known, because in the data a
private signal and private noise both lower the shared share in the same way.
A private signal adds no second factor in this model: when ``second_factor``
fires, it is Kaiser's rule reacting to sampling noise once the shared share is
low (few items, weak shared axis), not a planted factor. The factor analysis
alone cannot tell individualised self-knowledge from noise; the pairwise test can.

Every function is deterministic given ``seed``; simulation ``s`` uses the same
random draws at every ``kappa`` (common random numbers), so power curves are smooth.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from metacog.power.simulate import population
from metacog.stats.selfother import self_other_test
from metacog.stats.blas import single_blas_thread

TESTS = ("pairwise", "factor")


# ---------------------------------------------------------------------------
# (a) the pairwise self-versus-other test

def _sim_seeds(seed: int, n: int) -> list[int]:
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(n, dtype=np.uint64)]


def _check_sizes(n_models, n_items, n_sims, alpha):
    if int(n_models) != n_models or n_models < 3:
        raise ValueError(f"power: n_models must be an integer >= 3, got {n_models!r}.")
    if int(n_items) != n_items or n_items < 10:
        raise ValueError(f"power: n_items must be an integer >= 10, got {n_items!r}.")
    if int(n_sims) != n_sims or n_sims < 1:
        raise ValueError(f"power: n_sims must be a positive integer, got {n_sims!r}.")
    if not 0 < alpha < 1:
        raise ValueError(f"power: alpha must be in (0, 1), got {alpha!r}.")


def _pairwise_rejections(n_models, n_items, kappa, seeds, alpha, method, n_perm, drop_unanimous,
                         sim_kwargs) -> tuple[np.ndarray, np.ndarray]:
    rej, stat = np.empty(len(seeds), bool), np.empty(len(seeds))
    for i, s in enumerate(seeds):
        pop = population(n_models, n_items, kappa=kappa, seed=s, **sim_kwargs)
        res = self_other_test(pop.confidence, pop.correct, method=method, n_perm=n_perm,
                              drop_unanimous=drop_unanimous, seed=s)
        rej[i] = res.p_value < alpha
        stat[i] = res.statistic
    return rej, stat


def _true_corr_gap(n_models, n_items, kappa, sim_kwargs) -> tuple[float, float]:
    p = population(n_models, 2, kappa=kappa, seed=0, **sim_kwargs).params
    return p["self_corr"] - p["other_corr"], p["first_factor_share"]


@single_blas_thread
def pairwise_power(n_models: int, n_items: int, kappas=(0.0, 0.25, 0.5, 1.0), n_sims: int = 200,
                   alpha: float = 0.05, method: str = "permutation", n_perm: int = 199,
                   drop_unanimous: bool | str = False, seed: int = 0, **sim_kwargs) -> pd.DataFrame:
    """Power of the self-versus-other test at each ``kappa`` (rejection rate over ``n_sims``).

    Extra keyword arguments go to :func:`metacog.power.simulate.population` (``lam``,
    ``sigma_e``, ...). Returns one row per kappa: power, its Monte Carlo standard
    error, the mean statistic, and the true latent self-minus-other correlation.
    """
    _check_sizes(n_models, n_items, n_sims, alpha)
    seeds = _sim_seeds(seed, n_sims)
    rows = []
    for kappa in kappas:
        rej, stat = _pairwise_rejections(n_models, n_items, float(kappa), seeds, alpha, method,
                                         n_perm, drop_unanimous, sim_kwargs)
        gap, _ = _true_corr_gap(n_models, n_items, kappa, sim_kwargs)
        pw = float(rej.mean())
        rows.append({"test": "pairwise", "n_models": n_models, "n_items": n_items, "kappa": float(kappa),
                     "power": pw, "se": float(np.sqrt(pw * (1 - pw) / n_sims)), "n_sims": n_sims,
                     "mean_statistic": float(stat.mean()), "latent_corr_gap": gap})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# (b) the factor-analytic test

def first_factor_share(confidence) -> tuple[float, float]:
    """First-factor share (first eigenvalue / models) and second eigenvalue of the tetrachoric
    matrix (:func:`metacog.stats.tetrachoric`; constant columns dropped)."""
    return _eigen_shares([confidence])[0]


def _eigen_shares(confidences) -> list[tuple[float, float]]:
    """:func:`first_factor_share` of many matrices, their tetrachoric matrices fitted at once
    (:func:`metacog.stats.tetrachoric.tetrachoric_matrices`, the same numbers as one call each)."""
    from metacog.stats.tetrachoric import tetrachoric_matrices

    out = []
    for R in tetrachoric_matrices(confidences):
        if R.shape[0] < 2:
            raise ValueError(f"first_factor_share: need at least 2 non-constant columns, got {R.shape[0]}.")
        eig = np.sort(np.linalg.eigvalsh(R))[::-1]
        out.append((float(eig[0] / eig.size), float(eig[1])))
    return out


def _stats_functions():
    try:
        from metacog.stats import factor_analysis, tetrachoric
    except ImportError:  # the package may not re-export them yet
        from metacog.stats.factor import factor_analysis
        from metacog.stats.tetrachoric import tetrachoric
    return tetrachoric, factor_analysis


def _factor_summary(confidence) -> tuple[float, float, float]:
    """(first eigenvalue / m, second eigenvalue, one-factor common variance share)."""
    tetrachoric, factor_analysis = _stats_functions()
    with warnings.catch_warnings():  # smoothing / dropped-column warnings are expected in small samples
        warnings.simplefilter("ignore", UserWarning)
        R = tetrachoric(confidence).rho
    fa = factor_analysis(R, n_factors=1)
    eig = np.sort(np.asarray(fa.e_values, dtype=float))[::-1]  # eigenvalues of R itself
    return float(eig[0] / eig.size), float(eig[1]), float(np.asarray(fa.share)[0])


def _factor_draws(n_models, n_items, kappa, seeds, sim_kwargs) -> tuple[np.ndarray, np.ndarray]:
    pops = [population(n_models, n_items, kappa=kappa, seed=s, **sim_kwargs).confidence for s in seeds]
    found = np.array(_eigen_shares(pops), dtype=float).reshape(len(seeds), 2)
    return found[:, 0].copy(), found[:, 1].copy()


@single_blas_thread
def factor_power(n_models: int, n_items: int, kappas=(0.0, 0.5, 1.0), n_sims: int = 30,
                 alpha: float = 0.05, n_null: int | None = None, seed: int = 0,
                 **sim_kwargs) -> pd.DataFrame:
    """Power of the factor-analytic test at each ``kappa`` (see the module docstring).

    ``n_null`` populations at ``kappa = 0`` (default ``n_sims``, with seeds disjoint
    from the test populations) set the share-drop cutoff. Returns one row per kappa:
    ``power`` (share drop), ``power_second_factor``, mean estimated and true share.
    """
    _check_sizes(n_models, n_items, n_sims, alpha)
    n_null = n_sims if n_null is None else int(n_null)
    null_share, _ = _factor_draws(n_models, n_items, 0.0, _sim_seeds(seed + 7_919, n_null), sim_kwargs)
    cutoff = float(np.quantile(null_share, alpha))
    seeds = _sim_seeds(seed, n_sims)
    rows = []
    for kappa in kappas:
        share, second = _factor_draws(n_models, n_items, float(kappa), seeds, sim_kwargs)
        gap, true_share = _true_corr_gap(n_models, n_items, kappa, sim_kwargs)
        pw = float(np.mean(share < cutoff))
        rows.append({"test": "factor", "n_models": n_models, "n_items": n_items, "kappa": float(kappa),
                     "power": pw, "se": float(np.sqrt(pw * (1 - pw) / n_sims)), "n_sims": n_sims,
                     "power_second_factor": float(np.mean(second > 1.0)),
                     "mean_share": float(share.mean()), "true_share": true_share,
                     "null_cutoff": cutoff, "latent_corr_gap": gap})
    return pd.DataFrame(rows)


@dataclass
class Recovery:
    """Result of :func:`recovery`: estimated vs true first-factor share of one population."""

    n_models: int
    n_items: int
    kappa: float
    true_share: float  # first eigenvalue / m of the latent confidence correlation matrix
    estimated_share: float  # the same from the tetrachoric matrix
    second_eigenvalue: float  # of the tetrachoric matrix
    true_common_share: float  # one-factor common variance share (= latent rho here)
    estimated_common_share: float  # factor_analysis 'Proportion Var' of the one-factor fit

    @property
    def error(self) -> float:
        return self.estimated_share - self.true_share

    def summary(self) -> pd.DataFrame:
        return pd.DataFrame(
            [("models", self.n_models), ("items", self.n_items), ("kappa", self.kappa),
             ("true first-factor share", self.true_share), ("estimated", self.estimated_share),
             ("error", self.error), ("second eigenvalue", self.second_eigenvalue),
             ("true common-factor share", self.true_common_share),
             ("estimated common-factor share", self.estimated_common_share)],
            columns=["quantity", "value"])


@single_blas_thread
def recovery(n_models: int = 20, n_items: int = 1000, kappa: float = 0.0, seed: int = 0,
             **sim_kwargs) -> Recovery:
    """Does tetrachoric + factor analysis recover the planted first-factor share?"""
    pop = population(n_models, n_items, kappa=kappa, seed=seed, **sim_kwargs)
    share, second, common = _factor_summary(pop.confidence)
    return Recovery(n_models, n_items, float(kappa), pop.first_factor_share, share, second,
                    pop.params["common_factor_share"], common)


# ---------------------------------------------------------------------------
# grids and the minimum detectable kappa

@single_blas_thread
def power_grid(n_models=(10, 20), n_items=(200, 1000), kappas=(0.0, 0.25, 0.5, 1.0),
               test: str = "pairwise", n_sims: int = 100, seed: int = 0, **kwargs) -> pd.DataFrame:
    """Power over a grid of models x items x kappa for one test, as one tidy table."""
    if test not in TESTS:
        raise ValueError(f"power_grid: test must be one of {TESTS}, got {test!r}.")
    fn = pairwise_power if test == "pairwise" else factor_power
    frames = [fn(int(m), int(n), kappas=kappas, n_sims=n_sims, seed=seed, **kwargs)
              for m in n_models for n in n_items]
    return pd.concat(frames, ignore_index=True)


@dataclass
class DetectableKappa:
    """Result of :func:`minimum_detectable_kappa`."""

    kappa: float  # smallest kappa with power >= target (nan if not reached by kappa_max)
    power: float  # estimated power at that kappa
    target_power: float
    latent_corr_gap: float  # true latent self-minus-other correlation at that kappa
    test: str
    n_models: int
    n_items: int
    n_sims: int
    path: pd.DataFrame  # every kappa evaluated: kappa, power
    settings: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> pd.DataFrame:
        return pd.DataFrame(
            [("test", self.test), ("models", self.n_models), ("items", self.n_items),
             ("target power", self.target_power), ("minimum detectable kappa", self.kappa),
             ("power there", self.power), ("latent self-minus-other correlation", self.latent_corr_gap),
             ("simulations per point", self.n_sims)], columns=["quantity", "value"])


@single_blas_thread
def minimum_detectable_kappa(n_models: int, n_items: int, power: float = 0.8, alpha: float = 0.05,
                             n_sims: int = 200, seed: int = 0, test: str = "pairwise",
                             kappa_max: float = 3.0, tol: float = 0.02, **kwargs) -> DetectableKappa:
    """Smallest ``kappa`` whose estimated power reaches ``power``, by bisection on [0, kappa_max].

    Uses the same ``n_sims`` simulation seeds at every kappa, so the power estimate
    rises smoothly with kappa. ``test`` is 'pairwise' (extra kwargs: method, n_perm,
    drop_unanimous, simulator settings) or 'factor' (n_null, simulator settings).
    Returns ``kappa = nan`` when even ``kappa_max`` falls short.
    """
    if test not in TESTS:
        raise ValueError(f"minimum_detectable_kappa: test must be one of {TESTS}, got {test!r}.")
    if not 0 < power < 1:
        raise ValueError(f"minimum_detectable_kappa: power must be in (0, 1), got {power!r}.")
    if not (kappa_max > 0 and tol > 0):
        raise ValueError("minimum_detectable_kappa: kappa_max and tol must be > 0.")
    _check_sizes(n_models, n_items, n_sims, alpha)
    seeds = _sim_seeds(seed, n_sims)
    sim_keys = {"lam", "sigma_d", "sigma_u", "sigma_e", "ability_mean", "ability_sd",
                "threshold_mean", "threshold_sd", "ability", "thresholds"}
    sim_kwargs = {k: v for k, v in kwargs.items() if k in sim_keys}
    other = {k: v for k, v in kwargs.items() if k not in sim_keys}
    if test == "pairwise":
        bad = set(other) - {"method", "n_perm", "drop_unanimous"}
        if bad:
            raise ValueError(f"minimum_detectable_kappa: unknown setting(s) {sorted(bad)} for the pairwise test.")
        method = other.get("method", "permutation")
        n_perm = int(other.get("n_perm", 199))
        drop = other.get("drop_unanimous", False)

        def power_at(k):
            return float(_pairwise_rejections(n_models, n_items, k, seeds, alpha, method, n_perm, drop,
                                              sim_kwargs)[0].mean())
    else:
        bad = set(other) - {"n_null"}
        if bad:
            raise ValueError(f"minimum_detectable_kappa: unknown setting(s) {sorted(bad)} for the factor test.")
        n_null = int(other.get("n_null", n_sims))
        null_share, _ = _factor_draws(n_models, n_items, 0.0, _sim_seeds(seed + 7_919, n_null), sim_kwargs)
        cutoff = float(np.quantile(null_share, alpha))

        def power_at(k):
            return float(np.mean(_factor_draws(n_models, n_items, k, seeds, sim_kwargs)[0] < cutoff))

    path = []

    def ev(k):
        p = power_at(k)
        path.append((k, p))
        return p

    lo, hi = 0.0, float(kappa_max)
    p_hi = ev(hi)
    if p_hi < power:
        kappa, p_at = float("nan"), p_hi
    else:
        while hi - lo > tol:
            mid = (lo + hi) / 2
            p_mid = ev(mid)
            if p_mid >= power:
                hi, p_hi = mid, p_mid
            else:
                lo = mid
        kappa, p_at = hi, p_hi
    gap = _true_corr_gap(n_models, n_items, kappa, sim_kwargs)[0] if np.isfinite(kappa) else float("nan")
    table = pd.DataFrame(path, columns=["kappa", "power"])
    return DetectableKappa(kappa=kappa, power=p_at, target_power=power, latent_corr_gap=gap, test=test,
                           n_models=n_models, n_items=n_items, n_sims=n_sims, path=table,
                           settings={"alpha": alpha, "seed": seed, **kwargs})
