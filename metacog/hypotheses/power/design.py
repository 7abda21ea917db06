"""The panel-free parts of the power chapter: does the pipeline recover what was planted,
how does power grow with models, items and signal, and what could a design of the local
panel's size (3 models x 40-132 items) detect?

Every function here is deterministic given ``seed`` and remembered on disk by
:func:`metacog.memo.memo` (keyed by its arguments and the package's code), so a re-run of
the chapter with unchanged inputs reads its simulations instead of redoing them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from metacog.memo import memo
from metacog.power.curves import minimum_detectable_kappa, pairwise_power, power_grid, recovery
from metacog.tidy.report import fmt_num
from metacog.power.simulate import population

#: The simulator's defaults, named for tables.
DEFAULT_SETTINGS = "simulator defaults"


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():  # small samples give zero cells and Heywood cases; handled
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def _recovery_table(kappas, seeds, n_models, n_items) -> pd.DataFrame:
    rows = []
    for k in kappas:
        for s in seeds:
            r = _quiet(recovery, n_models, n_items, kappa=float(k), seed=int(s))
            rows.append({"kappa": float(k), "seed": int(s), "planted": r.true_share,
                         "recovered": r.estimated_share, "error": r.error})
    return pd.DataFrame(rows)


def recovery_table(kappas, *, n_seeds: int = 5, seed: int = 0, n_models: int = 20,
                   n_items: int = 1000) -> pd.DataFrame:
    """Planted against recovered first-factor share (tetrachoric + minres), one row per
    (kappa, seed): kappa, seed, planted, recovered, error."""
    seeds = list(range(int(seed), int(seed) + int(n_seeds)))
    return memo(_recovery_table, [float(k) for k in kappas], seeds, int(n_models), int(n_items))


def _fit_check(seed, sigma_us, lams, n_models, n_items) -> pd.DataFrame:
    from metacog.power.matching import fit_population

    rows = []
    for sigma_u in sigma_us:
        for lam in lams:
            sim = population(n_models, n_items, kappa=0.0, seed=seed + 100, sigma_u=sigma_u, lam=lam,
                             sigma_e=float(np.sqrt(1 - lam ** 2)))
            fit = _quiet(fit_population, sim.confidence, sim.correct)
            rows += [{"parameter": "sigma_u", "planted": sigma_u, "recovered": fit.sigma_u},
                     {"parameter": "lambda", "planted": lam, "recovered": fit.lam}]
    out = pd.DataFrame(rows)
    out["error"] = out["recovered"] - out["planted"]
    return out


def fit_check(*, seed: int = 0, sigma_us=(0.6, 1.0, 1.5), lams=(0.5, 0.7, 0.9), n_models: int = 20,
              n_items: int = 1000) -> pd.DataFrame:
    """``fit_population`` on simulated populations with known sigma_u and lambda (lambda^2 +
    sigma_e^2 = 1): one row per (population, parameter) with planted, recovered and error."""
    return memo(_fit_check, int(seed), [float(x) for x in sigma_us], [float(x) for x in lams],
                int(n_models), int(n_items))


def recovery_headlines(rec: pd.DataFrame, fits: pd.DataFrame, *, tolerance: float = 0.05) -> dict:
    """Prose numbers for the recovery section: rec_n, rec_within (|error| <= tolerance),
    rec_max_error, fit_sigma_u_error, fit_lambda_error (largest absolute errors)."""
    err = fits.groupby("parameter")["error"].apply(lambda e: e.abs().max())
    return {"rec_n": f"{len(rec):,}", "rec_within": f"{int((rec['error'].abs() <= tolerance).sum()):,}",
            "rec_tolerance": f"{tolerance:g}", "rec_max_error": fmt_num(rec["error"].abs().max(), 3),
            "fit_sigma_u_error": fmt_num(err.get("sigma_u", np.nan), 3),
            "fit_lambda_error": fmt_num(err.get("lambda", np.nan), 3)}


def _grid(n_models_grid, n_items_grid, kappas, n_sims, seed, alpha, n_perm) -> pd.DataFrame:
    pair = power_grid(n_models_grid, n_items_grid, kappas, test="pairwise", n_sims=n_sims, seed=seed,
                      alpha=alpha, n_perm=n_perm)
    fac = _quiet(power_grid, n_models_grid, n_items_grid, kappas, test="factor", n_sims=n_sims, seed=seed,
                 alpha=alpha)
    return pd.concat([pair, fac], ignore_index=True)


def default_grid(n_models_grid, n_items_grid, kappas, *, n_sims: int = 100, seed: int = 0,
                 alpha: float = 0.05, n_perm: int = 199) -> pd.DataFrame:
    """Power of the pairwise and the factor test over models x items x kappa at the simulator's
    default settings, one tidy table (:func:`metacog.power.curves.power_grid`, column ``test``)."""
    return memo(_grid, [int(m) for m in n_models_grid], [int(n) for n in n_items_grid],
                [float(k) for k in kappas], int(n_sims), int(seed), float(alpha), int(n_perm))


def grid_headlines(grid: pd.DataFrame, *, power_target: float = 0.8, alpha: float = 0.05) -> dict:
    """Prose numbers from :func:`default_grid`: the rejection rates at kappa = 0 (pair_size,
    factor_size), and at the largest design the power of each test at the smallest positive
    kappa (pair_big_small, factor_big_small) and the smallest kappa the factor test detects
    with ``power_target`` (factor_big_kappa)."""
    m, n = grid["n_models"].max(), grid["n_items"].max()
    pos = grid.loc[grid["kappa"] > 0, "kappa"]
    k_small = pos.min() if len(pos) else np.nan
    big = grid[(grid["n_models"] == m) & (grid["n_items"] == n)]

    def at(test, k):
        r = big[(big["test"] == test) & np.isclose(big["kappa"], k)]
        return float(r["power"].iloc[0]) if len(r) else np.nan

    fac = big[(big["test"] == "factor") & (big["power"] >= power_target)]["kappa"]
    return {"m_big": f"{int(m)}", "n_big": f"{int(n):,}", "k_small": f"{k_small:g}",
            "pair_size": fmt_num(grid.loc[(grid.test == "pairwise") & (grid.kappa == 0), "power"].mean(), 3),
            "factor_size": fmt_num(grid.loc[(grid.test == "factor") & (grid.kappa == 0), "power"].mean(), 3),
            "pair_big_small": fmt_num(at("pairwise", k_small), 2),
            "factor_big_small": fmt_num(at("factor", k_small), 2),
            "factor_big_kappa": (f"{fac.min():g}" if len(fac) else f"more than {grid['kappa'].max():g}"),
            "power_target": f"{power_target:.0%}", "alpha": f"{alpha:g}"}


def _local(n_models, n_items, kappas, settings, n_sims, alpha, n_perm, power_target, kappa_max, kappa_tol,
           seed) -> pd.DataFrame:
    rows = []
    for name, kw in settings.items():
        for n in n_items:
            for method in ("permutation", "ttest"):
                # _quiet: with three simulated models the t-test's differences can be nearly equal, and
                # scipy warns of precision loss; that draw's p-value counts as it is
                curve = _quiet(pairwise_power, n_models, n, kappas=kappas, n_sims=n_sims, alpha=alpha,
                               method=method, n_perm=n_perm, seed=seed, **kw)
                d = _quiet(minimum_detectable_kappa, n_models, n, power=power_target, alpha=alpha,
                           n_sims=n_sims, seed=seed, kappa_max=kappa_max, tol=kappa_tol, method=method,
                           n_perm=n_perm, **kw)
                row = {"settings": name, "models": n_models, "items": n, "test": method,
                       "mdk": d.kappa, "gap": d.latent_corr_gap}
                row.update({f"power at kappa {k:g}": p for k, p in zip(curve["kappa"], curve["power"])})
                rows.append(row)
    return pd.DataFrame(rows)


def local_design(power_table: pd.DataFrame | None = None, *, n_models: int = 3, n_items=(40, 132),
                 kappas=(0.0, 0.4, 0.8), n_sims: int = 100, alpha: float = 0.05, n_perm: int = 199,
                 power_target: float = 0.8, kappa_max: float = 3.0, kappa_tol: float = 0.05,
                 seed: int = 0) -> pd.DataFrame:
    """Power of the pairwise test for a design of ``n_models`` models x ``n_items`` items (the
    local panel's size), by the permutation test and by the paired t-test over models.

    Settings: the simulator's defaults and, with ``power_table``
    (:func:`metacog.hypotheses.power.table`), the nuisance parameters fitted to each analysed
    panel (its ``sim_*`` columns, exchangeable models). One row per (settings, items, test) with
    the minimum detectable kappa (``mdk``, NaN when ``kappa_max`` falls short), its latent gap
    and the power at each kappa.
    """
    settings = {DEFAULT_SETTINGS: {}}
    if power_table is not None and len(power_table):
        cols = [c for c in power_table.columns if c.startswith("sim_")]
        for r in power_table.dropna(subset=cols or ["panel"]).to_dict("records"):
            if cols:
                settings[f"matched to {r['panel']}"] = {c[4:]: float(r[c]) for c in cols}
    return memo(_local, int(n_models), [int(n) for n in n_items], [float(k) for k in kappas], settings,
                int(n_sims), float(alpha), int(n_perm), float(power_target), float(kappa_max),
                float(kappa_tol), int(seed))
