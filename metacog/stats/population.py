"""Internal against population AUROC: does a model's own confidence say more about its
correctness than what the other models think of the same items?

Paper 1's per-model comparison. For model m:

- *internal AUROC*: AUROC of m's own confidence for telling m's correct answers from its wrong ones;
- *population AUROC*: AUROC, for the same answers, of the other models' mean confidence on each
  item (m left out).

Both are computed on the same items (those where m has a correctness and a confidence and at least
one other model has a confidence), so their difference is paired. Its interval is DeLong's test for
two correlated AUROCs (DeLong, DeLong and Clarke-Pearson 1988): the covariance of the two
AUROCs' structural components over the same positives and negatives (:func:`delong_paired`).
A model whose confidence carries information about itself beyond the shared difficulty of items
has internal above population; a model that reads off only how hard an item is for everyone has
internal at or below population (the population's mean averages away each model's noise).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

__all__ = ["delong_paired", "internal_population"]


def _components(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's structural components of one score: v10 over positives, v01 over negatives
    (ties count 1/2); the AUROC is the mean of either."""
    neg_sorted, pos_sorted = np.sort(neg), np.sort(pos)
    lt = np.searchsorted(neg_sorted, pos, side="left")
    le = np.searchsorted(neg_sorted, pos, side="right")
    v10 = (lt + 0.5 * (le - lt)) / neg.size
    gt = pos.size - np.searchsorted(pos_sorted, neg, side="right")
    ge = pos.size - np.searchsorted(pos_sorted, neg, side="left")
    v01 = (gt + 0.5 * (ge - gt)) / pos.size
    return v10, v01


def delong_paired(y_true, score_a, score_b, *, ci: float = 0.95) -> dict:
    """Two AUROCs on the same labelled items and DeLong's interval for their difference a - b.

    Items with a missing label or either score missing are dropped. Returns a dict: n_items,
    n_pos, n_neg, auroc_a, auroc_b, diff, se, ci_low, ci_high and p_value (two-sided, normal).
    With an empty class everything but the counts is NaN; with a single positive or negative
    the variance term of that class is taken as 0.
    """
    y = np.asarray(y_true, dtype=float).ravel()
    a = np.asarray(score_a, dtype=float).ravel()
    b = np.asarray(score_b, dtype=float).ravel()
    if not (y.shape == a.shape == b.shape):
        raise ValueError(f"delong_paired: y_true, score_a and score_b have {y.size}, {a.size} and "
                         f"{b.size} values; pass one of each per item.")
    keep = ~(np.isnan(y) | np.isnan(a) | np.isnan(b))
    y, a, b = y[keep], a[keep], b[keep]
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("delong_paired: y_true must be 0/1 (or booleans).")
    pos, neg = y == 1, y == 0
    out = {"n_items": int(y.size), "n_pos": int(pos.sum()), "n_neg": int(neg.sum())}
    nan = dict.fromkeys(("auroc_a", "auroc_b", "diff", "se", "ci_low", "ci_high", "p_value"), np.nan)
    if not pos.any() or not neg.any():
        return {**out, **nan}
    v10a, v01a = _components(a[pos], a[neg])
    v10b, v01b = _components(b[pos], b[neg])
    auc_a, auc_b = float(v10a.mean()), float(v10b.mean())

    def var_of_diff(u, v):  # variance of the mean of (u - v), 0 with a single member
        return float(np.var(u - v, ddof=1) / u.size) if u.size > 1 else 0.0

    se = float(np.sqrt(var_of_diff(v10a, v10b) + var_of_diff(v01a, v01b)))
    z = float(sps.norm.ppf(0.5 + ci / 2))
    d = auc_a - auc_b
    p = float(2 * sps.norm.sf(abs(d) / se)) if se > 0 else (1.0 if d == 0 else 0.0)
    return {**out, "auroc_a": auc_a, "auroc_b": auc_b, "diff": d, "se": se,
            "ci_low": d - z * se, "ci_high": d + z * se, "p_value": p}


def population_means(C: np.ndarray) -> np.ndarray:
    """items x models: each model's *population* confidence on each item, the mean of the other
    models' confidence there (the model left out; NaN where no other model has one)."""
    present = ~np.isnan(C)
    total = np.nansum(C, axis=1, keepdims=True)
    others = present.sum(axis=1, keepdims=True) - present
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(others > 0, (total - np.nan_to_num(C)) / others, np.nan)


def internal_population(confidence: pd.DataFrame, correct: pd.DataFrame, *, ci: float = 0.95,
                        min_class: int = 10) -> pd.DataFrame:
    """Per model: internal AUROC, population AUROC (leave-one-out mean of the other models'
    confidence), their difference internal - population and DeLong's paired interval of it.

    ``confidence`` (any numeric scale where higher means surer; 0/1 works) and ``correct`` (0/1)
    are items x models tables with the same index and columns; NaN is missing. One row per model:
    model, n_items, n_correct, auroc_internal, auroc_population, diff, se, ci_low, ci_high,
    p_value and sufficient (at least ``min_class`` correct and ``min_class`` wrong answers; an
    insufficient model keeps its numbers but no claim should rest on them).

    >>> from metacog.power.examples import one_axis_panel
    >>> confidence, correct = one_axis_panel()  # one shared difficulty axis, no self-knowledge
    >>> ip = internal_population(confidence, correct)
    >>> ip[["model", "auroc_internal", "auroc_population", "diff", "ci_low", "ci_high"]].round(2).head(2)
      model  auroc_internal  auroc_population  diff  ci_low  ci_high
    0    m0            0.63              0.76 -0.13   -0.19    -0.07
    1    m1            0.70              0.82 -0.12   -0.18    -0.06

    With no self-knowledge, the others' mean confidence (four judges) predicts a model's
    correctness better than its own one judgment does.
    """
    if list(confidence.columns) != list(correct.columns) or not confidence.index.equals(correct.index):
        correct = correct.reindex(index=confidence.index, columns=confidence.columns)
    C = confidence.to_numpy(dtype=float)
    Y = correct.to_numpy(dtype=float)
    P = population_means(C)
    rows = []
    for j, model in enumerate(confidence.columns):
        own = C[:, j]
        r = delong_paired(Y[:, j], own, P[:, j], ci=ci)
        rows.append({"model": model, "n_items": r["n_items"], "n_correct": r["n_pos"],
                     "auroc_internal": r["auroc_a"], "auroc_population": r["auroc_b"],
                     "diff": r["diff"], "se": r["se"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                     "p_value": r["p_value"],
                     "sufficient": bool(min(r["n_pos"], r["n_neg"]) >= min_class)})
    return pd.DataFrame(rows, columns=["model", "n_items", "n_correct", "auroc_internal",
                                       "auroc_population", "diff", "se", "ci_low", "ci_high",
                                       "p_value", "sufficient"])
