"""The numbers behind the placement page: per-model metrics with bootstrap rank intervals, and
recalibration on held-out items.

:func:`metric_ranks` computes, for every model of an items x models table, type-2 AUROC, ECE
(10 equal-width bins), smooth ECE (:func:`metacog.stats.calibration.smooth_ece`), Brier score and
accuracy on the same items, ranks the models on each (1 = best: highest AUROC and accuracy,
lowest ECE, smooth ECE and Brier) and gives each model's rank
interval from a bootstrap over items (vectorised over models: one resample of items re-ranks
every model at once). :func:`recalibrate` fits Platt scaling and isotonic regression to one
model's confidence on half the items and scores the other half (two-fold cross-fitting, so
every item is scored once by a map that never saw it), and reports each half's Platt slope, so a
decreasing map (a negative slope, which reverses the ranking) is seen.

:func:`minimum_detectable` is the smallest true difference a test with a given standard error
detects at a given level and power; :func:`holm` corrects a family of p-values (Holm 1979);
:func:`panel_mean_diff` is the panel-level estimate of internal − population AUROC, the mean
over models, with a bootstrap interval over items and models.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from metacog.stats.calibration import smooth_ece_columns

#: Fewest items a placement needs (the gate's ``min_items``), and correct and wrong answers.
MIN_ITEMS, MIN_CLASS = 30, 10
#: The level and power of the minimum detectable difference, and the family-wise level of Holm's
#: correction over the panel's tests.
ALPHA, POWER = 0.05, 0.8

METRICS = ("auroc", "ece", "smece", "brier", "accuracy")
HIGHER_IS_BETTER = {"auroc": True, "ece": False, "smece": False, "brier": False, "accuracy": True}
#: How the page names each metric.
LABELS = {"auroc": "type-2 AUROC", "ece": "ECE (10 bins)", "smece": "smooth ECE", "brier": "Brier score",
          "accuracy": "accuracy"}


def _auroc_columns(C: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Type-2 AUROC of every column (Mann-Whitney, ties 1/2); NaN where a class is empty."""
    valid = ~(np.isnan(C) | np.isnan(Y))
    Cm = np.where(valid, C, np.nan)
    ranks = sps.rankdata(Cm, axis=0, nan_policy="omit")
    pos = valid & (Y == 1)
    n1 = pos.sum(axis=0).astype(float)
    n0 = (valid & (Y == 0)).sum(axis=0).astype(float)
    r1 = np.nansum(np.where(pos, ranks, 0.0), axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((n1 > 0) & (n0 > 0), (r1 - n1 * (n1 + 1) / 2) / (n1 * n0), np.nan)


def _metrics(C: np.ndarray, Y: np.ndarray, n_bins: int = 10, smece: bool = True) -> np.ndarray:
    """len(METRICS) x models, in METRICS' order, on the rows where both values exist (the smooth
    ECE row NaN with ``smece=False``, for callers that compute it for many resamples at once)."""
    valid = ~(np.isnan(C) | np.isnan(Y))
    n = valid.sum(axis=0).astype(float)
    c = np.where(valid, C, 0.0)
    y = np.where(valid, Y, 0.0)
    bins = np.minimum((c * n_bins).astype(int), n_bins - 1)
    gap = np.zeros(C.shape[1])
    for b in range(n_bins):
        inb = valid & (bins == b)
        gap += np.abs(((c - y) * inb).sum(axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        ece = np.where(n > 0, gap / n, np.nan)
        brier = np.where(n > 0, (((c - y) ** 2) * valid).sum(axis=0) / n, np.nan)
        acc = np.where(n > 0, (y * valid).sum(axis=0) / n, np.nan)
    sm = smooth_ece_columns(C, Y) if smece else np.full(C.shape[1], np.nan)
    return np.vstack([_auroc_columns(C, Y), ece, sm, brier, acc])


def _rank(values: np.ndarray, higher_better: bool) -> np.ndarray:
    """Rank along the last axis, 1 = best, ties averaged, NaN last."""
    v = np.where(np.isnan(values), -np.inf if higher_better else np.inf, values)
    return sps.rankdata(-v if higher_better else v, axis=-1)


def metric_ranks(confidence: pd.DataFrame, correct: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0,
                 ci: float = 0.95) -> pd.DataFrame:
    """One row per model x metric: value, rank (1 = best of n_models), rank_ci_low, rank_ci_high
    (bootstrap percentiles over items), n_items (items where the model has both values)."""
    correct = correct.reindex(index=confidence.index, columns=confidence.columns)
    C, Y = confidence.to_numpy(float), correct.to_numpy(float)
    point = _metrics(C, Y)
    rng = np.random.default_rng(seed)
    boot = np.empty((n_boot, len(METRICS), C.shape[1]))
    counts = np.zeros((n_boot, C.shape[0]))
    for b in range(n_boot):
        idx = rng.integers(0, C.shape[0], C.shape[0])
        boot[b] = _metrics(C[idx], Y[idx], smece=False)
        counts[b] = np.bincount(idx, minlength=C.shape[0])
    # smooth ECE of every resample at once, from the resamples' item counts
    boot[:, METRICS.index("smece"), :] = smooth_ece_columns(C, Y, counts)
    a = (1 - ci) / 2
    n_items = (~(np.isnan(C) | np.isnan(Y))).sum(axis=0)
    rows = []
    for k, m in enumerate(METRICS):
        hb = HIGHER_IS_BETTER[m]
        r = _rank(point[k], hb)
        rb = _rank(boot[:, k, :], hb)
        lo, hi = np.quantile(rb, a, axis=0, method="lower"), np.quantile(rb, 1 - a, axis=0, method="higher")
        for j, model in enumerate(confidence.columns):
            rows.append({"model": model, "metric": m, "value": point[k, j], "rank": r[j],
                         "rank_ci_low": lo[j], "rank_ci_high": hi[j], "n_models": C.shape[1],
                         "n_items": int(n_items[j])})
    return pd.DataFrame(rows)


def minimum_detectable(se: float, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true difference a two-sided z-test of level ``alpha`` with standard error
    ``se`` detects with probability ``power``: (z_{1-alpha/2} + z_{power}) x se (NaN for a
    missing or non-positive se)."""
    if se is None or not np.isfinite(se) or se <= 0:
        return float("nan")
    return float((sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)) * se)


def holm(p_values, *, alpha: float = 0.05) -> pd.DataFrame:
    """Holm's step-down correction of a family of p-values: one row per input, in its order,
    with p_value, p_holm (the adjusted p-value, monotone in the sorted p-values and at most 1)
    and reject (p_holm < ``alpha``: the family-wise error rate is at most ``alpha``). NaN
    p-values are not members of the family: their p_holm is NaN and they are not rejected."""
    from metacog.stats import holm as adjusted

    p = np.asarray(p_values, dtype=float).ravel()
    ok = ~np.isnan(p)
    adj = adjusted(p)
    return pd.DataFrame({"p_value": p, "p_holm": adj, "reject": ok & (adj < alpha)})


def panel_mean_diff(confidence: pd.DataFrame, correct: pd.DataFrame, models, *, n_boot: int = 1000,
                    seed: int = 0, ci: float = 0.95) -> dict:
    """The mean over ``models`` of internal − population AUROC (population: the leave-one-out
    mean confidence of all the table's other models, as :func:`metacog.stats.population.
    internal_population` has it), with a percentile interval from a two-way bootstrap: each
    resample draws the items and, independently, the models with replacement, so the interval
    carries both the items' noise and which models happen to be in the panel.

    Returns n_models, n_items, mean, ci_low, ci_high, n_boot.
    """
    from metacog.stats.population import population_means

    correct = correct.reindex(index=confidence.index, columns=confidence.columns)
    C, Y = confidence.to_numpy(float), correct.to_numpy(float)
    P = population_means(C)
    cols = [list(confidence.columns).index(m) for m in models]
    # the pairs of internal_population: an item counts for a model when it has both scores
    both = ~(np.isnan(C) | np.isnan(P))
    Cs, Ps, Ys = (np.where(both, C, np.nan)[:, cols], np.where(both, P, np.nan)[:, cols], Y[:, cols])
    out = {"n_models": len(cols), "n_items": int(C.shape[0]), "n_boot": int(n_boot)}
    if not cols:
        return out | {"mean": np.nan, "ci_low": np.nan, "ci_high": np.nan}
    point = _auroc_columns(Cs, Ys) - _auroc_columns(Ps, Ys)
    rng = np.random.default_rng(seed)
    boot = np.empty(n_boot)
    for b in range(n_boot):
        i = rng.integers(0, Cs.shape[0], Cs.shape[0])
        j = rng.integers(0, len(cols), len(cols))
        d = _auroc_columns(Cs[i][:, j], Ys[i][:, j]) - _auroc_columns(Ps[i][:, j], Ys[i][:, j])
        boot[b] = np.nanmean(d) if np.isfinite(d).any() else np.nan
    a = (1 - ci) / 2
    lo, hi = np.nanquantile(boot, [a, 1 - a])
    return out | {"mean": float(np.nanmean(point)), "ci_low": float(lo), "ci_high": float(hi)}


def recalibrate(confidence, correct, *, seed: int = 0) -> pd.DataFrame:
    """Platt and isotonic recalibration of one model's confidence, scored on held-out items.

    Items are split at random (``seed``) into two halves; each map is fitted on one half and
    applied to the other, then the halves swap. Rows: method ('as stated', 'Platt',
    'isotonic'), ece, smece (smooth ECE), brier, auroc, mean_confidence, accuracy, n_items,
    slope_1 and slope_2 (Platt's fitted slope on the logit of the confidence on each half; NaN
    for the other methods) and decreasing (the number of halves whose fitted map decreases).
    Platt scaling is a logistic regression on the logit of the confidence: with a positive
    slope it keeps the ranking, with a negative one it reverses it (on the half where higher
    stated confidence went with fewer right answers). Isotonic regression is non-decreasing by
    construction; it may merge confidence levels into ties but never reverses them.
    """
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    c = np.asarray(confidence, float)
    y = np.asarray(correct, float)
    keep = ~(np.isnan(c) | np.isnan(y))
    c, y = c[keep], y[keep]
    out = {"as stated": c.copy(), "Platt": np.full_like(c, np.nan), "isotonic": np.full_like(c, np.nan)}
    slopes = [np.nan, np.nan]
    fold = np.random.default_rng(seed).permutation(len(c)) % 2
    for f in (0, 1):
        fit, app = fold != f, fold == f
        if len(np.unique(y[fit])) < 2:
            continue
        z = np.log(np.clip(c, 1e-4, 1 - 1e-4) / (1 - np.clip(c, 1e-4, 1 - 1e-4)))[:, None]
        lr = LogisticRegression(C=1e6).fit(z[fit], y[fit])
        slopes[f] = float(lr.coef_[0, 0])
        out["Platt"][app] = lr.predict_proba(z[app])[:, 1]
        iso = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(c[fit], y[fit])
        out["isotonic"][app] = iso.predict(c[app])
    rows = []
    for method, p in out.items():
        ok = ~np.isnan(p)
        m = dict(zip(METRICS, _metrics(p[ok][:, None], y[ok][:, None])[:, 0]))
        rows.append({"method": method, "ece": m["ece"], "smece": m["smece"], "brier": m["brier"],
                     "auroc": m["auroc"], "mean_confidence": float(p[ok].mean()) if ok.any() else np.nan,
                     "accuracy": m["accuracy"], "n_items": int(ok.sum()),
                     "slope_1": slopes[0] if method == "Platt" else np.nan,
                     "slope_2": slopes[1] if method == "Platt" else np.nan,
                     "decreasing": int(sum(s_ < 0 for s_ in slopes)) if method == "Platt" else 0})
    return pd.DataFrame(rows)
