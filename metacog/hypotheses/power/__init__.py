"""The power chapter: what individualised signal could each panel have detected, and what
does its observed self-minus-other statistic rule out?

For every judgment panel (items x models binary confidence, with the same models'
correctness) :func:`analyse`

1. keeps the largest complete block (:func:`metacog.power.matching.complete_block`) and, above
   ``max_items`` items, a random subsample of that many items (the simulations then stay fast;
   the row says so);
2. matches the simulator of :mod:`metacog.power.simulate` to the block twice
   (:func:`metacog.power.matching.fit_population`: ``lam`` fitted to the confidence correlations,
   which the factor test sees, and to the confidence-correctness link, which the pairwise
   test sees);
3. finds the minimum detectable ``kappa`` of the pairwise test (both fits) and of the factor
   test at the block's own numbers of models and items (:func:`metacog.power.curves.minimum_detectable_kappa`);
4. computes the observed self-minus-other statistic T with a bootstrap interval over items and models,
   its permutation p-value, and its p-value against populations matched model by model at
   ``kappa = 0`` (:func:`metacog.power.null.self_other_null`, which keeps each model's base rates);
5. translates T and the upper end of its interval into ``kappa`` (:func:`metacog.power.null.equivalent_kappa`):
   the signal the data point to, and the signal they rule out.

:func:`verdicts` decides, per panel, whether T exceeds its matched null, with ``detectable``
(the excess the design detects with the target power) from step 3, so a null from an
underpowered design reads "insufficient evidence". Page tables and prose are in
:mod:`metacog.hypotheses.power.display`; the panel-free parts of the chapter (recovery checks,
the power grid, the design of the local panel) in :mod:`metacog.hypotheses.power.design`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from metacog.power.matching import complete_block, fit_population
from metacog.power.null import equivalent_kappa, self_other_null
from metacog.power.curves import minimum_detectable_kappa
from metacog.stats import self_other_test
from metacog.hypotheses.verdict import SELF_OTHER_MARGIN, TARGET_POWER

#: The power machinery needs at least this many models (the pairwise test compares a model
#: with the others) and items.
MIN_MODELS, MIN_ITEMS = 3, 10

FITS = ("confidence", "link")


def permutation_floor(n_models: int) -> float:
    """The smallest p-value the self-versus-other permutation test can give with ``n_models``
    models: 1 / m! (only m! ways to pair correctness columns with confidence columns)."""
    return 1.0 / math.factorial(int(n_models))


def pairwise_method(n_models: int, alpha: float) -> str:
    """'permutation', or 'ttest' when the permutation test cannot reach ``alpha`` at all."""
    return "permutation" if permutation_floor(n_models) < alpha else "ttest"


def analysis_block(confidence: pd.DataFrame, correct: pd.DataFrame, *, max_items: int = 2000,
                   seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The complete block the chapter analyses, and what was kept.

    Returns (confidence, correct, info) where info has models_total, items_total (the panel),
    models_block, items_block (the complete block), items (analysed: at most ``max_items``,
    a random subsample drawn with ``seed`` when the block is larger), dropped_models,
    constant_models and subsampled. Raises ValueError when no complete block of 3 models exists.
    """
    b = complete_block(confidence, correct, min_models=MIN_MODELS)
    C, Y = b.confidence, b.correct
    info = {"models_total": int(confidence.shape[1]), "items_total": int(confidence.shape[0]),
            "models_block": int(C.shape[1]), "items_block": int(C.shape[0]),
            "dropped_models": list(b.dropped_models), "constant_models": list(b.constant_models),
            "subsampled": False}
    if max_items and len(C) > max_items:
        rng = np.random.default_rng(seed)
        keep = np.sort(rng.choice(len(C), int(max_items), replace=False))
        C, Y = C.iloc[keep], Y.iloc[keep]
        info["subsampled"] = True
        const = [m for m in C.columns if C[m].nunique() < 2 or Y[m].nunique() < 2]
        if const:  # a model that never varies in the subsample carries no information
            C, Y = C.drop(columns=const), Y.drop(columns=const)
            info["constant_models"] += const
    info["items"], info["models"] = int(C.shape[0]), int(C.shape[1])
    return C, Y, info


def _t_interval(C: pd.DataFrame, Y: pd.DataFrame, n_boot: int, seed: int) -> tuple[float, float]:
    from metacog.hypotheses.pairwise import bootstrap_taus

    boot = bootstrap_taus(C.to_numpy(dtype=float), Y.to_numpy(dtype=float), n_boot=n_boot, seed=seed)
    row = boot.set_index("statistic").loc["self minus other"]
    return float(row["ci_low"]), float(row["ci_high"])


def _observed_part(C, Y, *, alpha, n_boot, seed) -> dict:
    method = pairwise_method(C.shape[1], alpha)
    res = self_other_test(C, Y, method=method, n_perm=999, seed=seed)
    lo, hi = _t_interval(C, Y, n_boot, seed)
    return {"method": method, "T": res.statistic, "T_ci_low": lo, "T_ci_high": hi,
            "perm_p": res.p_value, "share_self_above": res.share_self_above}


def _detect_part(fits: dict, *, power_target, alpha, n_sims, n_sims_factor, n_perm, kappa_max,
                 kappa_tol, seed, method) -> dict:
    row = {}
    for name, f in fits.items():
        d = minimum_detectable_kappa(f.n_models, f.n_items, power=power_target, alpha=alpha, n_sims=n_sims,
                                     seed=seed, kappa_max=kappa_max, tol=kappa_tol, method=method,
                                     n_perm=n_perm, **f.kwargs())
        row[f"mdk_pairwise_{name}"], row[f"gap_pairwise_{name}"] = d.kappa, d.latent_corr_gap
    f = fits["confidence"]
    d = minimum_detectable_kappa(f.n_models, f.n_items, power=power_target, alpha=alpha,
                                 n_sims=n_sims_factor, seed=seed, kappa_max=kappa_max, tol=kappa_tol,
                                 test="factor", **f.kwargs())
    row["mdk_factor"], row["gap_factor"] = d.kappa, d.latent_corr_gap
    return row


def _matched_part(fits: dict, row: dict, *, alpha, n_sims, n_null, n_perm, kappa_max, seed, method) -> dict:
    out = {}
    T = row["T"]
    for name, f in fits.items():
        null = self_other_null(f, n_sims=n_null, seed=seed + 1, n_perm=n_perm, method=method)
        out[f"null_mean_{name}"] = float(null.statistics.mean())
        out[f"null_p_{name}"] = null.p_value(T)
        out[f"fpr_{name}"] = null.rejection_rate(alpha)
        if name != "link":
            continue
        k = row["mdk_pairwise_link"]
        at = self_other_null(f, n_sims=n_null, kappa=k if np.isfinite(k) else kappa_max, seed=seed + 3,
                             n_perm=n_perm, method=method)
        out["detectable_at_max"] = not np.isfinite(k)
        out["detectable_excess"] = max(float(at.statistics.mean()) - out["null_mean_link"], 1e-6)
        out["matched_power_at_mdk"] = at.rejection_rate_against(null, alpha) if np.isfinite(k) else np.nan
        base = out["null_mean_link"]
        out.update(excess=T - base, excess_ci_low=row["T_ci_low"] - base, excess_ci_high=row["T_ci_high"] - base)
        eq = equivalent_kappa(f, T, n_sims=n_sims, seed=seed + 2, kappa_max=2 * kappa_max)
        up = equivalent_kappa(f, row["T_ci_high"], n_sims=n_sims, seed=seed + 2, kappa_max=2 * kappa_max)
        out.update(equiv_kappa=eq.kappa, equiv_gap=eq.latent_gap, ruled_out_kappa=up.kappa,
                   ruled_out_gap=up.latent_gap)
    return out


def analyse(confidence: pd.DataFrame, correct: pd.DataFrame, *, power_target: float = 0.8,
            alpha: float = 0.05, n_sims: int = 100, n_sims_factor: int = 30, n_perm: int = 199,
            n_null: int = 200, kappa_max: float = 1.0, kappa_tol: float = 0.01, n_boot: int = 1000,
            max_items: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The power analysis and the observed statistic of one panel, as a one-row table.

    Columns: models/items analysed (and of the panel and of its complete block, ``subsampled``),
    the fit (rho_correct, rho_confidence, link_other, alignment, sigma_u, lam, lam_link, and the
    link fit's simulator settings as ``sim_*``), the
    minimum detectable kappa and latent gap of the pairwise test under each fit and of the
    factor test, the observed T with its bootstrap interval (``T_ci_low``/``T_ci_high``) and
    permutation p-value (``method`` says which test: the paired t-test when the permutation
    test cannot reach ``alpha``), the matched-null mean, p-value and false-positive rate of the
    permutation test under each fit, ``excess`` (T minus the link fit's null mean, with interval),
    ``detectable_excess`` (the excess the pairwise test detects with ``power_target``, measured
    at the minimum detectable kappa, or at ``kappa_max`` when that is never reached), the
    equivalent kappa of T and the kappa the interval's upper end rules out. A panel that
    cannot be analysed has a ``note`` and missing numbers.
    """
    row: dict = {"note": ""}
    try:
        C, Y, info = analysis_block(confidence, correct, max_items=max_items, seed=seed)
    except ValueError as exc:
        row.update(models=int(confidence.shape[1]), items=int(confidence.shape[0]),
                   note=f"no complete block of {MIN_MODELS} models whose judgments and correctness vary "
                        f"({str(exc).split(': ', 1)[-1].rstrip('.')})")
        return pd.DataFrame([row])
    row.update({k: v for k, v in info.items() if k not in ("dropped_models", "constant_models")},
               models_dropped=len(info["dropped_models"]), models_constant=len(info["constant_models"]))
    if info["models"] < MIN_MODELS or info["items"] < MIN_ITEMS:
        row["note"] = f"{info['models']} models x {info['items']} items; the simulations need {MIN_MODELS} x {MIN_ITEMS}"
        return pd.DataFrame([row])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fits = {name: fit_population(C, Y, lam_from=name) for name in FITS}
        except ValueError as exc:
            row["note"] = f"the simulator cannot be matched to this panel: {exc}"
            return pd.DataFrame([row])
        o = fits["confidence"].observed
        row.update(rho_correct=o["rho_correct"], rho_confidence=o["rho_confidence"], link_other=o["link_other"],
                   alignment=fits["confidence"].alignment, sigma_u=fits["confidence"].sigma_u,
                   lam=fits["confidence"].lam, lam_link=fits["link"].lam)
        row.update({f"sim_{k}": v for k, v in fits["link"].kwargs().items()})
        row.update(_observed_part(C, Y, alpha=alpha, n_boot=n_boot, seed=seed))
        row.update(_detect_part(fits, power_target=power_target, alpha=alpha, n_sims=n_sims,
                                n_sims_factor=n_sims_factor, n_perm=n_perm, kappa_max=kappa_max,
                                kappa_tol=kappa_tol, seed=seed, method=row["method"]))
        row.update(_matched_part(fits, row, alpha=alpha, n_sims=n_sims, n_null=n_null, n_perm=n_perm,
                                 kappa_max=kappa_max, seed=seed, method=row["method"]))
    return pd.DataFrame([row])


def table(panelset, *, power_target: float = 0.8, alpha: float = 0.05, n_sims: int = 100,
          n_sims_factor: int = 30, n_perm: int = 199, n_null: int = 200, kappa_max: float = 1.0,
          kappa_tol: float = 0.01, n_boot: int = 1000, max_items: int = 2000, seed: int = 0) -> pd.DataFrame:
    """:func:`analyse` for every panel of a :class:`metacog.hypotheses.panels.PanelSet`, one row per panel with
    its name, source, benchmark, probe, judgment timing and design; remembered on disk
    (:func:`metacog.memo.memo`) while data, settings and code are unchanged."""
    from metacog.hypotheses.common import per_panel
    from metacog.hypotheses.rank_one import with_design

    return with_design(per_panel(panelset, analyse, power_target=power_target, alpha=alpha, n_sims=n_sims,
                                 n_sims_factor=n_sims_factor, n_perm=n_perm, n_null=n_null,
                                 kappa_max=kappa_max, kappa_tol=kappa_tol, n_boot=n_boot,
                                 max_items=max_items, seed=seed), panelset)


def _sig(x: float, digits: int = 2) -> float:
    """``x`` rounded to ``digits`` significant figures (a detectable effect for prose)."""
    return float(f"{x:.{digits}g}")


CLAIM = "a model's confidence tracks its own correctness better than other models', beyond base rates"

#: The smallest self-minus-other excess of interest, in τ-b units (the margin of :func:`verdicts`).
MARGIN = SELF_OTHER_MARGIN


def verdicts(power_table: pd.DataFrame, *, margin: float = MARGIN) -> list:
    """Per panel: does T exceed what base rates alone produce (its simulated null without
    self-knowledge, link fit) by at least ``margin``?

    Judged on the bootstrap interval of the excess with ``margin`` = the smallest excess of
    interest (in τ-b units) used in both directions
    (:func:`metacog.hypotheses.verdict.decide_meaningful`): *supported* needs the whole interval
    above ``margin``; an interval above 0 that reaches below ``margin`` is "insufficient evidence"
    (basis ``sesoi``: above 0 but not shown to exceed the margin), one wholly inside
    (−``margin``, ``margin``) "negligible" (never "not supported"). ``detectable`` = the excess the
    design detects with the target power: a null whose design cannot detect ``margin`` reads
    "insufficient evidence". Each verdict carries why its line is where it is (``line_why``:
    :data:`metacog.hypotheses.verdict.SELF_OTHER_MARGIN_WHY` for the default margin).
    """
    from metacog.hypotheses.verdict import SELF_OTHER_MARGIN_WHY, decide_meaningful, interval_detectable

    why = SELF_OTHER_MARGIN_WHY if margin == MARGIN else f"{margin:g} τ-b, the margin given here"
    out = []
    for r in power_table.to_dict("records"):
        # the verdict reads the interval, so the design detects no less than the interval's own
        # width allows, whatever the permutation test's simulated power says
        sim = r.get("detectable_excess", np.nan)
        width = interval_detectable(r.get("excess_ci_low", np.nan), r.get("excess_ci_high", np.nan))
        both = [x for x in (sim, width) if np.isfinite(x) and x > 0]
        det = max(both) if both else np.nan
        source = (f"the larger of the permutation test's power analysis, {_sig(sim)}, and what the "
                  f"interval's own width detects at {TARGET_POWER:.0%} power, {_sig(width)}"
                  if len(both) == 2 else "power analysis" if np.isfinite(sim) and sim > 0
                  else f"the interval's width at {TARGET_POWER:.0%} power")
        out.append(decide_meaningful(
            f"{r['panel']}: {CLAIM}", "self minus other τ-b above its simulated null without self-knowledge",
            r.get("excess", np.nan), r.get("excess_ci_low", np.nan), r.get("excess_ci_high", np.nan),
            margin=margin, line=0.0, direction="greater",
            n={"models": int(r["models"]), "items": int(r["items"])},
            min_counts={"models": MIN_MODELS, "items": MIN_ITEMS},
            detectable=_sig(det) if np.isfinite(det) and det > 0 else None, detectable_from=source,
            line_why=why))
    return out


