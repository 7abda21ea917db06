"""Confidence intervals the book's verdicts rest on.

- :func:`auroc_ci` — AUROC with DeLong's variance, refusing to vouch for it when a class is small.
- :func:`proportion_ci` — Wilson or Clopper-Pearson (exact) interval of a proportion k / n.
- :func:`correlation_ci` — Fisher-z interval of a Pearson or Spearman correlation.
- :func:`bootstrap_items` — vectorised percentile bootstrap over the item rows of an
  items x models matrix, for any statistic of that matrix; :func:`bootstrap_difference`
  the same for a difference between two independent samples of items.

Intervals are reported as ``ci_low`` / ``ci_high``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
from scipy import stats as sps

from .resample import percentile_table


def _z(ci: float) -> float:
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), e.g. 0.95; got {ci!r}.")
    return float(sps.norm.ppf(0.5 + ci / 2))


# ---------------------------------------------------------------------------
# AUROC with DeLong's interval

@dataclass
class AurocResult:
    """AUROC of a score for 0/1 labels with its interval.

    ``sufficient`` is False when either class has fewer than ``min_class`` members (or is
    empty); ``reason`` then says which class and the threshold. ``method`` is 'delong'
    (normal interval on the AUROC scale, clipped to [0, 1], as pROC does) or 'logit'
    (normal interval for logit(AUROC), mapped back).
    """

    estimate: float
    ci_low: float
    ci_high: float
    se: float
    n_pos: int
    n_neg: int
    method: str
    sufficient: bool
    reason: str
    ci: float = 0.95
    min_class: int = 10

    def summary(self) -> pd.DataFrame:
        """One row: estimate, ci_low, ci_high, se, n_pos, n_neg, method, sufficient, reason."""
        return pd.DataFrame([{k: getattr(self, k) for k in (
            "estimate", "ci_low", "ci_high", "se", "n_pos", "n_neg", "method", "sufficient", "reason")}])


def _clean_pairs(y_true, score) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y_true, dtype=float).ravel()
    s = np.asarray(score, dtype=float).ravel()
    if y.shape != s.shape:
        raise ValueError(f"auroc_ci: y_true has {y.size} values but score has {s.size}; "
                         "pass one score per label.")
    keep = ~(np.isnan(y) | np.isnan(s))
    y, s = y[keep], s[keep]
    bad = ~np.isin(y, (0.0, 1.0))
    if bad.any():
        raise ValueError(f"auroc_ci: y_true must be 0/1 (or booleans); found "
                         f"{sorted(set(y[bad].tolist()))[:5]}.")
    return y, s


def _delong(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    """AUROC and DeLong's variance from positive and negative scores (ties count 1/2)."""
    m, n = pos.size, neg.size
    neg_sorted = np.sort(neg)
    pos_sorted = np.sort(pos)
    # v10[i] = P(neg < pos_i) + 1/2 P(neg == pos_i); v01[j] = P(pos > neg_j) + 1/2 P(pos == neg_j)
    lt = np.searchsorted(neg_sorted, pos, side="left")
    le = np.searchsorted(neg_sorted, pos, side="right")
    v10 = (lt + 0.5 * (le - lt)) / n
    gt = m - np.searchsorted(pos_sorted, neg, side="right")
    ge = m - np.searchsorted(pos_sorted, neg, side="left")
    v01 = (gt + 0.5 * (ge - gt)) / m
    auc = float(v10.mean())
    var = (v10.var(ddof=1) / m if m > 1 else 0.0) + (v01.var(ddof=1) / n if n > 1 else 0.0)
    return auc, float(var)


def auroc_ci(y_true, score, *, ci: float = 0.95, min_class: int = 10,
             method: str = "delong") -> AurocResult:
    """AUROC of ``score`` for telling ``y_true == 1`` from 0, with DeLong's interval.

    Pairs with a missing label or score are dropped. Higher scores should mean "positive";
    0.5 is chance. Returns an :class:`AurocResult`; the estimate is NaN when a class is
    empty, and ``sufficient`` is False when a class has fewer than ``min_class`` members.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 60)
    >>> r = auroc_ci(y, y * 0.5 + rng.random(60))
    >>> round(r.estimate, 3), round(r.ci_low, 3), round(r.ci_high, 3), r.n_pos, r.n_neg
    (0.862, 0.771, 0.953, 34, 26)
    >>> auroc_ci([1, 1, 0], [0.9, 0.8, 0.1]).sufficient  # too few of each class to decide
    False
    """
    if method not in ("delong", "logit"):
        raise ValueError(f"auroc_ci: method must be 'delong' or 'logit', got {method!r}.")
    z = _z(ci)
    y, s = _clean_pairs(y_true, score)
    pos, neg = s[y == 1], s[y == 0]
    n_pos, n_neg = int(pos.size), int(neg.size)
    if n_pos == 0 or n_neg == 0:
        empty = "positives" if n_pos == 0 else "negatives"
        return AurocResult(np.nan, np.nan, np.nan, np.nan, n_pos, n_neg, method, False,
                           f"no {empty}: AUROC needs both classes ({n_pos} positives, {n_neg} negatives)", ci,
                           min_class)
    auc, var = _delong(pos, neg)
    se = float(np.sqrt(var))
    if method == "delong":
        lo, hi = max(0.0, auc - z * se), min(1.0, auc + z * se)
    elif 0 < auc < 1:
        lg, lse = np.log(auc / (1 - auc)), se / (auc * (1 - auc))  # delta method
        lo, hi = 1 / (1 + np.exp(-(lg - z * lse))), 1 / (1 + np.exp(-(lg + z * lse)))
    else:  # logit undefined at 0 or 1; fall back to the clipped interval
        lo, hi = max(0.0, auc - z * se), min(1.0, auc + z * se)
    short = [f"{v} {k}" for k, v in (("positives", n_pos), ("negatives", n_neg)) if v < min_class]
    if short:
        reason = f"only {' and '.join(short)}; at least {min_class} of each class are needed"
    else:
        reason = f"{n_pos} positives and {n_neg} negatives (at least {min_class} of each)"
    return AurocResult(auc, float(lo), float(hi), se, n_pos, n_neg, method, not short, reason, ci,
                       min_class)


# ---------------------------------------------------------------------------
# proportions

def proportion_ci(k, n, *, ci: float = 0.95, method: str = "wilson") -> tuple[float, float]:
    """Interval for a proportion k / n: ``(ci_low, ci_high)``.

    method 'wilson' (score interval) or 'exact' (Clopper-Pearson, from beta quantiles; it
    covers at least ``ci`` for every true proportion). ``(nan, nan)`` when n == 0.

    >>> [round(x, 3) for x in proportion_ci(7, 10)]
    [0.397, 0.892]
    >>> [round(x, 3) for x in proportion_ci(7, 10, method="exact")]
    [0.348, 0.933]
    """
    if method not in ("wilson", "exact"):
        raise ValueError(f"proportion_ci: method must be 'wilson' or 'exact', got {method!r}.")
    z = _z(ci)
    k, n = float(k), float(n)
    if n < 0 or k < 0 or k > n or k != int(k) or n != int(n):
        raise ValueError(f"proportion_ci: need whole numbers 0 <= k <= n; got k={k:g}, n={n:g}.")
    if n == 0:
        return (np.nan, np.nan)
    if method == "exact":
        a = 1 - ci
        lo = 0.0 if k == 0 else float(sps.beta.ppf(a / 2, k, n - k + 1))
        hi = 1.0 if k == n else float(sps.beta.ppf(1 - a / 2, k + 1, n - k))
        return (lo, hi)
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, float(mid - half)), min(1.0, float(mid + half)))


def correlation_ci(r: float, n: int, *, ci: float = 0.95, method: str = "pearson") -> tuple[float, float]:
    """Fisher-z interval of a correlation ``r`` from ``n`` pairs: ``(ci_low, ci_high)``.

    method 'pearson' (standard error 1 / sqrt(n - 3)) or 'spearman' (Fieller, Hartley and
    Pearson's sqrt(1.06 / (n - 3)) for a rank correlation). ``(nan, nan)`` when n < 4 or r is
    missing.

    >>> [round(x, 3) for x in correlation_ci(0.5, 103)]
    [0.339, 0.632]
    """
    if method not in ("pearson", "spearman"):
        raise ValueError(f"correlation_ci: method must be 'pearson' or 'spearman', got {method!r}.")
    if not np.isfinite(r) or n < 4:
        return (np.nan, np.nan)
    z = np.arctanh(np.clip(r, -0.999999, 0.999999))
    half = _z(ci) * np.sqrt((1.06 if method == "spearman" else 1.0) / (n - 3))
    return (float(np.tanh(z - half)), float(np.tanh(z + half)))


# ---------------------------------------------------------------------------
# bootstrap over items of an items x models matrix

@dataclass
class BootResult:
    """Percentile bootstrap over items. ``draws`` holds the statistic of every resample
    (n_boot x n_statistics); ``n_ok`` counts the finite ones per statistic."""

    statistics: list
    estimate: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    se: np.ndarray
    n_ok: np.ndarray
    draws: np.ndarray
    n_items: int
    ci: float

    def summary(self) -> pd.DataFrame:
        """One row per statistic: statistic, estimate, ci_low, ci_high, se, n_boot, n_items."""
        return pd.DataFrame({"statistic": self.statistics, "estimate": self.estimate,
                             "ci_low": self.ci_low, "ci_high": self.ci_high, "se": self.se,
                             "n_boot": self.n_ok, "n_items": self.n_items})


def _as_2d(out, batch: int, where: str) -> np.ndarray:
    a = np.asarray(out, dtype=float)
    if a.ndim == 1 and a.shape[0] == batch:
        return a[:, None]
    if a.ndim == 2 and a.shape[0] == batch:
        return a
    raise ValueError(f"bootstrap_items: {where} must return shape (B,) or (B, k) for a stack of "
                     f"B resampled matrices; got shape {a.shape} for B={batch}.")


def _percentiles(draws: np.ndarray, ci: float):
    """Percentile interval (:func:`metacog.stats.resample.percentile_table`), standard error and
    count of the finite draws, per column."""
    table = percentile_table(range(draws.shape[1]), np.full(draws.shape[1], np.nan), draws, ci=ci)
    ok = np.isfinite(draws)
    with np.errstate(all="ignore"):
        se = np.array([np.std(draws[ok[:, j], j], ddof=1) if ok[:, j].sum() > 1 else np.nan
                       for j in range(draws.shape[1])])
    return table["ci_low"].to_numpy(), table["ci_high"].to_numpy(), se, table["n_boot"].to_numpy()


def bootstrap_items(stat: Callable, matrix, *, n_boot: int = 2000, ci: float = 0.95, seed: int = 0,
                    vectorized: bool = True, chunk: int = 256, names=None) -> BootResult:
    """Percentile bootstrap of ``stat`` over the item rows of an items x models matrix.

    vectorized=True: ``stat`` receives a stack of resampled matrices, shape
    (B, n_items, n_models), and returns shape (B,) or (B, k) — write it with ``axis=-2``
    for "over items" (e.g. ``lambda a: np.nanmean(a, axis=-2).mean(axis=-1)``). The
    estimate is ``stat`` of the original matrix stacked once. Resamples are drawn in
    chunks of ``chunk`` to bound memory.
    vectorized=False: ``stat`` receives one (n_items, n_models) array and returns a number
    or a 1-D array (slow path, a Python loop).
    Deterministic given ``seed``. Returns a :class:`BootResult`; ``.summary()`` is the table.
    """
    x = np.asarray(matrix.to_numpy() if isinstance(matrix, pd.DataFrame) else matrix, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"bootstrap_items: need an items x models matrix with at least 2 items; "
                         f"got shape {x.shape}.")
    if n_boot < 1:
        raise ValueError(f"bootstrap_items: n_boot must be >= 1, got {n_boot}.")
    _z(ci)  # validates ci
    n = x.shape[0]
    rng = np.random.default_rng(seed)
    if vectorized:
        est = _as_2d(stat(x[None]), 1, "stat")[0]
    else:
        est = np.atleast_1d(np.asarray(stat(x), dtype=float)).ravel()
    draws = np.full((n_boot, est.size), np.nan)
    with np.errstate(all="ignore"):
        if vectorized:
            for start in range(0, n_boot, chunk):
                b = min(chunk, n_boot - start)
                idx = rng.integers(0, n, size=(b, n))
                draws[start:start + b] = _as_2d(stat(x[idx]), b, "stat")
        else:
            idx = rng.integers(0, n, size=(n_boot, n))
            for i in range(n_boot):
                draws[i] = np.atleast_1d(np.asarray(stat(x[idx[i]]), dtype=float)).ravel()
    lo, hi, se, ok = _percentiles(draws, ci)
    if names is None:
        names = (["value"] if est.size == 1 else
                 (list(matrix.columns) if isinstance(matrix, pd.DataFrame) and est.size == x.shape[1]
                  else [f"stat{j}" for j in range(est.size)]))
    if len(names) != est.size:
        raise ValueError(f"bootstrap_items: {len(names)} names for {est.size} statistics.")
    return BootResult(list(names), est, lo, hi, se, ok, draws, n, ci)


def bootstrap_difference(stat: Callable, a, b, *, n_boot: int = 2000, ci: float = 0.95, seed: int = 0,
                         names=None) -> BootResult:
    """Percentile bootstrap of ``stat(a) - stat(b)`` for two independent samples of items.

    ``a`` and ``b`` are items x columns matrices (their rows need not match); each is
    resampled on its own, from independent streams derived from ``seed``. ``stat`` is
    vectorised as in :func:`bootstrap_items`. Returns a :class:`BootResult` of the
    difference (``n_items`` is the total of both samples).
    """
    sa, sb = np.random.SeedSequence(seed).spawn(2)
    ra = bootstrap_items(stat, a, n_boot=n_boot, ci=ci, seed=sa, names=names)
    rb = bootstrap_items(stat, b, n_boot=n_boot, ci=ci, seed=sb, names=ra.statistics)
    if ra.estimate.size != rb.estimate.size:
        raise ValueError(f"bootstrap_difference: stat gives {ra.estimate.size} statistics on a "
                         f"but {rb.estimate.size} on b; give both samples the same columns.")
    draws = ra.draws - rb.draws
    lo, hi, se, ok = _percentiles(draws, ci)
    return BootResult(ra.statistics, ra.estimate - rb.estimate, lo, hi, se, ok, draws,
                      ra.n_items + rb.n_items, ci)
