"""The self-minus-other statistic in populations matched to a dataset.

:func:`self_other_null` gives the distribution of the self-minus-other statistic of
:func:`metacog.stats.self_other_test` in populations matched model by model to a real
dataset (:func:`metacog.power.matching.fit_population`): a null that keeps each model's own
base rates. :func:`equivalent_kappa` finds the ``kappa`` at which matched populations
produce, on average, an observed statistic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from metacog.power.matching import PopulationMatch
from metacog.power.simulate import population
from metacog.stats.blas import single_blas_thread


@dataclass
class SelfOtherNull:
    """Result of :func:`self_other_null`: the self-minus-other statistic in matched populations."""

    statistics: np.ndarray  # self-minus-other statistic, one per simulated population
    p_values: np.ndarray  # the permutation (or t-test) p-value of each population
    kappa: float
    n_items: int
    n_models: int
    settings: dict[str, Any] = field(default_factory=dict)

    def rejection_rate(self, alpha: float = 0.05) -> float:
        """Share of populations in which :func:`metacog.stats.self_other_test` rejects at ``alpha``.

        At ``kappa = 0`` this is the test's actual false-positive rate for models like these.
        """
        return float(np.mean(self.p_values < alpha))

    def p_value(self, observed: float) -> float:
        """One-sided Monte Carlo p-value of an observed statistic against these populations."""
        s = self.statistics
        return float((1 + np.sum(s >= observed - 1e-12)) / (s.size + 1))

    def rejection_rate_against(self, null: "SelfOtherNull", alpha: float = 0.05) -> float:
        """Share of these populations whose statistic has ``null.p_value(...) < alpha``.

        With ``null`` simulated at ``kappa = 0`` (other seeds), this is the power of the
        base-rate-matched test — the one that compares an observed statistic with matched
        populations instead of permuting models.
        """
        if not 0 < alpha < 1:
            raise ValueError(f"rejection_rate_against: alpha must be in (0, 1), got {alpha!r}.")
        return float(np.mean([null.p_value(t) < alpha for t in self.statistics]))

    def summary(self, alpha: float = 0.05) -> pd.DataFrame:
        q = np.quantile(self.statistics, [0.05, 0.5, 0.95])
        return pd.DataFrame(
            [("kappa", self.kappa), ("models", self.n_models), ("items", self.n_items),
             ("populations", self.statistics.size), ("mean statistic", float(self.statistics.mean())),
             ("5% quantile", q[0]), ("median", q[1]), ("95% quantile", q[2]),
             (f"rejection rate at alpha = {alpha:g}", self.rejection_rate(alpha))],
            columns=["quantity", "value"])


@single_blas_thread
def self_other_null(match: PopulationMatch, n_sims: int = 200, kappa: float = 0.0, seed: int = 0,
                    n_items: int | None = None, method: str = "permutation", n_perm: int = 199,
                    drop_unanimous: bool | str = False) -> SelfOtherNull:
    """Simulate the self-minus-other test in populations matched model by model.

    Every population has the fitted ability and threshold of each real model
    (``match.kwargs(per_model=True)``) and ``match.n_items`` items unless ``n_items`` is
    given. At ``kappa = 0`` the statistics form a parametric null that keeps each model's
    own base rates — the permutation test of :func:`metacog.stats.self_other_test` assumes
    models are exchangeable, which real models are not — and ``rejection_rate(alpha)`` is
    that test's false-positive rate for such models. Deterministic given ``seed``.
    """
    from metacog.stats import self_other_test

    if int(n_sims) != n_sims or n_sims < 1:
        raise ValueError(f"self_other_null: n_sims must be a positive integer, got {n_sims!r}.")
    n_items = match.n_items if n_items is None else int(n_items)
    kw = match.kwargs(per_model=True)
    seeds = [int(s) for s in np.random.SeedSequence(seed).generate_state(int(n_sims), dtype=np.uint64)]
    stat, p = np.empty(len(seeds)), np.empty(len(seeds))
    for i, s in enumerate(seeds):
        pop = population(match.n_models, n_items, kappa=float(kappa), seed=s, **kw)
        res = self_other_test(pop.confidence, pop.correct, method=method, n_perm=n_perm,
                              drop_unanimous=drop_unanimous, seed=s)
        stat[i], p[i] = res.statistic, res.p_value
    return SelfOtherNull(statistics=stat, p_values=p, kappa=float(kappa), n_items=n_items,
                         n_models=match.n_models,
                         settings={"seed": seed, "method": method, "n_perm": n_perm,
                                   "drop_unanimous": drop_unanimous})


def _matched_statistics(match: PopulationMatch, kappa: float, seeds, n_items: int,
                        drop_unanimous) -> np.ndarray:
    """Self-minus-other statistic in matched populations (no p-values: cheap)."""
    from metacog.stats import self_other_test

    kw = match.kwargs(per_model=True)
    out = np.empty(len(seeds))
    for i, s in enumerate(seeds):
        pop = population(match.n_models, n_items, kappa=float(kappa), seed=s, **kw)
        out[i] = self_other_test(pop.confidence, pop.correct, method="ttest",
                                 drop_unanimous=drop_unanimous).statistic
    return out


@dataclass
class EquivalentKappa:
    """Result of :func:`equivalent_kappa`."""

    kappa: float  # kappa whose matched populations give the observed statistic on average
    latent_gap: float  # latent self-minus-other correlation at that kappa
    statistic: float  # the observed statistic
    null_mean: float  # mean statistic at kappa = 0 in matched populations
    path: pd.DataFrame  # every kappa evaluated: kappa, mean_statistic
    n_sims: int

    def summary(self) -> pd.DataFrame:
        return pd.DataFrame(
            [("observed statistic", self.statistic), ("mean statistic at kappa = 0", self.null_mean),
             ("equivalent kappa", self.kappa), ("latent self-minus-other correlation", self.latent_gap),
             ("populations per kappa", self.n_sims)], columns=["quantity", "value"])


@single_blas_thread
def equivalent_kappa(match: PopulationMatch, statistic: float, n_sims: int = 100, seed: int = 0,
                     kappa_max: float = 2.0, tol: float = 0.005,
                     drop_unanimous: bool | str = False) -> EquivalentKappa:
    """The ``kappa`` at which matched populations produce ``statistic`` on average.

    Translates an observed self-minus-other statistic (:func:`metacog.stats.self_other_test`)
    into the simulator's units: bisection on the mean statistic over ``n_sims`` populations
    matched model by model (``match.kwargs(per_model=True)``), with the same seeds at every
    kappa so the mean rises smoothly. ``kappa = 0`` when the statistic is at or below the
    mean at ``kappa = 0``; ``nan`` when it is above the mean at ``kappa_max``. A point
    estimate under the fitted model, not a test. Deterministic given ``seed``.
    """
    if not np.isfinite(statistic):
        raise ValueError(f"equivalent_kappa: statistic must be a finite number, got {statistic!r}.")
    if int(n_sims) != n_sims or n_sims < 1:
        raise ValueError(f"equivalent_kappa: n_sims must be a positive integer, got {n_sims!r}.")
    if not (kappa_max > 0 and tol > 0):
        raise ValueError("equivalent_kappa: kappa_max and tol must be > 0.")
    seeds = [int(s) for s in np.random.SeedSequence(seed).generate_state(int(n_sims), dtype=np.uint64)]
    path = []

    def mean_at(k):
        v = float(_matched_statistics(match, k, seeds, match.n_items, drop_unanimous).mean())
        path.append((k, v))
        return v

    null_mean = mean_at(0.0)
    if statistic <= null_mean:
        kappa = 0.0
    elif statistic > mean_at(float(kappa_max)):
        kappa = float("nan")
    else:
        lo, hi = 0.0, float(kappa_max)
        while hi - lo > tol:
            mid = (lo + hi) / 2
            if mean_at(mid) < statistic:
                lo = mid
            else:
                hi = mid
        kappa = (lo + hi) / 2
    gap = match.latent_gap(kappa) if np.isfinite(kappa) else float("nan")
    return EquivalentKappa(kappa=kappa, latent_gap=gap, statistic=float(statistic), null_mean=null_mean,
                           path=pd.DataFrame(path, columns=["kappa", "mean_statistic"]), n_sims=int(n_sims))
