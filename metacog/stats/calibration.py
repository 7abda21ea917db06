"""Calibration metrics for one model's confidence against its correctness.

All functions take paired 1-D inputs in the order of every score in the book (and of
scikit-learn's metrics): ``y_true`` first, the model's correctness (0/1), then ``y_score``,
its confidence (P(correct) in [0, 1]); pairs with a missing value in either are dropped.

- :func:`brier`: Brier score and its Murphy decomposition BS = REL - RES + UNC. Grouped by
  the distinct confidence values (``n_bins=None``) the identity is exact; with bins the
  within-bin variance of the forecasts is reported as ``residual`` so the parts still add up.
- :func:`ece`: expected calibration error with explicit binning (``"uniform"`` equal-width or
  ``"quantile"`` equal-mass bins); returns the per-bin table used for reliability diagrams.
- :func:`smooth_ece`: smooth ECE (Błasiok & Nakkiran 2023), the binning-free calibration error:
  residuals smoothed by a reflected Gaussian kernel at the bandwidth that equals its own value;
  :func:`smooth_ece_columns` computes it for many models and bootstrap weights at once.
- :func:`auroc` (any labels vs scores, ties count 1/2) and :func:`type2_auroc` (confidence
  discriminating the model's own correct from incorrect answers).
- :func:`risk_coverage` / :func:`aurc`: selective prediction — answer the most confident items
  first; ties in confidence enter together.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.fft import dct
from scipy.stats import rankdata

from .validate import paired_vectors


@dataclass
class BrierResult:
    brier: float
    reliability: float
    resolution: float
    uncertainty: float
    residual: float
    n: int
    table: pd.DataFrame

    def summary(self) -> pd.DataFrame:
        """One row: brier, reliability, resolution, uncertainty, residual, n."""
        return pd.DataFrame([{"brier": self.brier, "reliability": self.reliability,
                              "resolution": self.resolution, "uncertainty": self.uncertainty,
                              "residual": self.residual, "n": self.n}])


def _bin_codes(x, n_bins, strategy):
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    elif strategy == "quantile":
        edges = np.quantile(x, np.linspace(0.0, 1.0, n_bins + 1))
        edges[0], edges[-1] = 0.0, 1.0
        edges = np.maximum.accumulate(edges)
    else:
        raise ValueError(f"strategy must be 'uniform' or 'quantile', got {strategy!r}.")
    # bins are [e_i, e_{i+1}) except the last, which includes 1.0
    code = np.searchsorted(edges, x, side="right") - 1
    code = np.clip(code, 0, n_bins - 1)
    return code, edges


def brier(y_true, y_score, n_bins: int | None = None, strategy: str = "uniform") -> BrierResult:
    """Brier score of confidence ``y_score`` for correctness ``y_true``, with Murphy's
    decomposition (reliability, resolution, uncertainty).

    >>> round(brier([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8]).brier, 4)
    0.0625
    """
    x, y = paired_vectors(y_score, y_true, names=("y_score", "y_true"))
    n = x.size
    bs = float(np.mean((x - y) ** 2))
    ybar = y.mean()
    if n_bins is None:
        keys, code = np.unique(x, return_inverse=True)
        lo = hi = keys
    else:
        code, edges = _bin_codes(x, n_bins, strategy)
        lo, hi = edges[:-1], edges[1:]
    k = int(code.max()) + 1 if n_bins is None else n_bins
    cnt = np.bincount(code, minlength=k).astype(float)
    sx = np.bincount(code, weights=x, minlength=k)
    sy = np.bincount(code, weights=y, minlength=k)
    sxx = np.bincount(code, weights=x * x, minlength=k)
    use = cnt > 0
    fbar = np.where(use, sx / np.maximum(cnt, 1), np.nan)
    obar = np.where(use, sy / np.maximum(cnt, 1), np.nan)
    rel = float(np.nansum(cnt * (fbar - obar) ** 2) / n)
    res = float(np.nansum(cnt * (obar - ybar) ** 2) / n)
    unc = float(ybar * (1 - ybar))
    # within-bin forecast variance and covariance terms (zero when grouping by value)
    residual = bs - (rel - res + unc)
    table = pd.DataFrame({"bin_lo": np.asarray(lo, float)[use] if n_bins else keys,
                          "bin_hi": np.asarray(hi, float)[use] if n_bins else keys,
                          "n": cnt[use].astype(int), "mean_confidence": fbar[use],
                          "accuracy": obar[use],
                          "forecast_var": (sxx[use] / cnt[use] - fbar[use] ** 2)})
    return BrierResult(bs, rel, res, unc, float(residual), n, table)


@dataclass
class ECEResult:
    ece: float
    mce: float
    n: int
    n_bins: int
    strategy: str
    table: pd.DataFrame

    def summary(self) -> pd.DataFrame:
        """One row: ece, mce, n, n_bins, strategy."""
        return pd.DataFrame([{"ece": self.ece, "mce": self.mce, "n": self.n, "n_bins": self.n_bins,
                              "strategy": self.strategy}])


def ece(y_true, y_score, n_bins: int = 10, strategy: str = "uniform") -> ECEResult:
    """Expected calibration error: sum over bins of ``(n_b / n) * |accuracy_b - mean confidence_b|``.

    Bins are [lo, hi) except the last, which includes its upper edge. ``strategy="uniform"``
    splits [0, 1] into equal widths; ``"quantile"`` uses quantiles of the confidence (equal
    mass up to ties). Empty bins are kept in the table with n = 0 and do not contribute.
    ``y_true`` is correctness (0/1), ``y_score`` the confidence.

    >>> round(ece([1, 0, 1, 1], [0.9, 0.2, 0.6, 0.8], n_bins=2).ece, 4)
    0.225
    """
    if n_bins < 1:
        raise ValueError(f"ece: n_bins must be >= 1, got {n_bins}.")
    x, y = paired_vectors(y_score, y_true, names=("y_score", "y_true"))
    code, edges = _bin_codes(x, n_bins, strategy)
    cnt = np.bincount(code, minlength=n_bins).astype(float)
    sx = np.bincount(code, weights=x, minlength=n_bins)
    sy = np.bincount(code, weights=y, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = sx / cnt
        acc = sy / cnt
    gap = acc - conf
    w = cnt / x.size
    e = float(np.nansum(w * np.abs(gap)))
    mce = float(np.nanmax(np.abs(gap))) if (cnt > 0).any() else np.nan
    table = pd.DataFrame({"bin": np.arange(n_bins), "bin_lo": edges[:-1], "bin_hi": edges[1:],
                          "n": cnt.astype(int), "mean_confidence": conf, "accuracy": acc,
                          "gap": gap, "weight": w})
    return ECEResult(e, mce, int(x.size), n_bins, strategy, table)


#: Smallest bandwidth smooth ECE resolves (a fixed point below it is reported as about this).
SMECE_SIGMA_MIN = 1e-3


def _smece_coefficients(F, R, V, W, K):
    """Cosine coefficients a[b, m, k] = sum_i W[b, i] V[i, m] R[i, m] cos(pi k F[i, m]) / N[b, m],
    k = 0..K, with N[b, m] = sum_i W[b, i] V[i, m] (NaN where N = 0). Items are taken in chunks
    so no more than a few million cosines are held at once."""
    n, m = F.shape
    A = np.zeros((W.shape[0], m, K + 1))
    k = np.arange(K + 1) * np.pi
    step = max(1, int(2e6 // max(K + 1, 1)))
    for j in range(m):
        f, r = F[:, j], R[:, j] * V[:, j]
        for i0 in range(0, n, step):
            sl = slice(i0, i0 + step)
            A[:, j, :] += (W[:, sl] * r[sl]) @ np.cos(np.outer(f[sl], k))
    N = W @ V
    with np.errstate(invalid="ignore", divide="ignore"):
        return A / N[:, :, None], N


def _smece_at(A, sigma):
    """smECE_sigma for coefficient rows A (rows x K+1) at bandwidths ``sigma`` (one per row): the
    mean of |s(t)| over G midpoints t_j = (j + 1/2)/G of the smoothed residual density
    s(t) = a_0 + 2 sum_k exp(-pi^2 k^2 sigma^2 / 2) a_k cos(pi k t), a DCT-III. Each row keeps
    the terms its bandwidth needs (rows grouped by powers of two), G = max(256, 4 (K + 1))."""
    out = np.empty(A.shape[0])
    need = np.ceil(6.8 / (np.pi * np.maximum(sigma, 1e-9)))
    group = np.ceil(np.log2(np.clip(need, 8, None))).astype(int)
    for e in np.unique(group):
        rows = group == e
        K = min(A.shape[1] - 1, 2 ** int(e))
        k = np.arange(K + 1)
        x = A[rows, : K + 1] * np.exp(-0.5 * (np.pi * k[None, :] * sigma[rows, None]) ** 2)
        out[rows] = np.abs(dct(x, type=3, n=max(256, 4 * (K + 1)), axis=1)).mean(axis=1)
    return out


def _smece_fixed_point(A, n_iter=16):
    """sigma with smECE_sigma = sigma, every row at once: bisection on [0, 1] (g = smECE_sigma -
    sigma decreases), then the root of the straight line through g at the bracket's ends."""
    lo, hi = np.zeros(A.shape[0]), np.ones(A.shape[0])
    g_lo, g_hi = _smece_at(A, lo + 1e-9), _smece_at(A, hi) - 1.0
    for _ in range(n_iter):
        mid = (lo + hi) / 2
        g = _smece_at(A, mid) - mid
        above = g > 0
        lo, g_lo = np.where(above, mid, lo), np.where(above, g, g_lo)
        hi, g_hi = np.where(above, hi, mid), np.where(above, g_hi, g)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(g_lo - g_hi > 0, g_lo / (g_lo - g_hi), 0.5)
    return lo + np.clip(t, 0, 1) * (hi - lo)


def smooth_ece_columns(C, Y, weights=None, *, sigma=None, sigma_min: float = SMECE_SIGMA_MIN) -> np.ndarray:
    """Smooth ECE of every column of the items x models arrays ``C`` (confidence) and ``Y``
    (correctness), on the rows where both exist; :func:`smooth_ece` says what it is.

    ``weights``: an optional resamples x items array of item weights (bootstrap counts); the
    result is then resamples x models, else one value per model. ``sigma``: a fixed bandwidth
    instead of the fixed point. NaN for a column without a complete row.
    """
    C, Y = np.atleast_2d(np.asarray(C, float).T).T, np.atleast_2d(np.asarray(Y, float).T).T
    V = (~(np.isnan(C) | np.isnan(Y))).astype(float)
    F, R = np.where(V > 0, C, 0.0), np.where(V > 0, Y - C, 0.0)
    W = np.ones((1, C.shape[0])) if weights is None else np.atleast_2d(np.asarray(weights, float))
    shape = (W.shape[0], C.shape[1])
    out = np.full(shape, np.nan)
    if sigma is not None:
        K = int(np.ceil(6.8 / (np.pi * max(sigma_min, float(sigma)))))
        A, N = _smece_coefficients(F, R, V, W, K)
        ok = N > 0
        out[ok] = _smece_at(A[ok], np.full(ok.sum(), float(sigma)))
        return out[0] if weights is None else out
    # series terms kept while exp(-pi^2 K^2 s^2 / 2) >= 1e-10 at the smallest bandwidth s needed;
    # start coarse and redo, with more terms, only the models whose fixed point lies near the floor
    floor, todo = max(sigma_min, 0.02), np.ones(shape, bool)
    while todo.any():
        cols = np.flatnonzero(todo.any(axis=0))
        K = int(np.ceil(6.8 / (np.pi * floor)))
        A, N = _smece_coefficients(F[:, cols], R[:, cols], V[:, cols], W, K)
        pick = todo[:, cols] & (N > 0)
        sub = out[:, cols]
        sub[pick] = _smece_fixed_point(A[pick])
        out[:, cols] = sub
        todo[:] = False
        if floor <= sigma_min:
            break
        near = (out < 2 * floor) & ~np.isnan(out)
        if near.any():
            todo = near
            floor = max(sigma_min, float(out[near].min()) / 2)
    return out[0] if weights is None else out


def smooth_ece(y_true, y_score, sigma: float | None = None) -> float:
    """Smooth ECE (smECE; Błasiok & Nakkiran 2023, "Smooth ECE: principled reliability diagrams via
    kernel smoothing"): the calibration error of confidence ``y_score`` for correctness ``y_true``
    without bins.

    With residuals r_i = y_i - f_i and the Gaussian kernel of bandwidth sigma reflected at 0 and 1,
    K_sigma(t, f) = sum over integers j of phi_sigma(t - f - 2j) + phi_sigma(t + f - 2j),

        smECE_sigma = integral over [0, 1] of | (1/n) sum_i K_sigma(t, f_i) r_i | dt,

    the area between the kernel-smoothed reliability curve and the diagonal, weighted by the
    smoothed density of the confidence. smECE_sigma decreases in sigma; smooth ECE is its value at
    the fixed point sigma* with smECE_sigma* = sigma* (found by bisection on [0, 1]), so the
    bandwidth is chosen by the data, not by a bin count. ``sigma`` fixes the bandwidth instead.
    0 means calibrated; like ECE it lies in [0, 1] and lower is better.

    The reflected kernel is the heat kernel of [0, 1] with reflecting ends, so it is computed
    exactly from its cosine series K_sigma(t, f) = 1 + 2 sum_k exp(-pi^2 k^2 sigma^2 / 2)
    cos(pi k t) cos(pi k f) (truncated where the terms drop below 1e-10) and the integral by
    the midpoint rule on at least 256 points (error about 1e-5); the fixed point by 16 bisection
    steps and a last linear interpolation in the bracket (within about 1e-7). Fixed points below ``SMECE_SIGMA_MIN`` (1e-3) are
    not resolved. Pairs with a missing value are dropped.

    >>> round(smooth_ece([1, 1, 1, 1], [1.0, 1.0, 1.0, 1.0]), 6)
    0.0
    >>> round(smooth_ece([0, 0, 0, 0], [0.3, 0.3, 0.3, 0.3]), 3)  # says 0.3, never right
    0.3
    """
    x, y = paired_vectors(y_score, y_true, names=("y_score", "y_true"))
    return float(smooth_ece_columns(x[:, None], y[:, None], sigma=sigma)[0])


def auroc(labels, scores) -> float:
    """Area under the ROC curve of ``scores`` for binary ``labels`` (Mann-Whitney; ties = 1/2).

    The book's one AUROC: labels first (0/1 or booleans), then the score, higher meaning
    "label 1". Pairs with a missing label or score are dropped. Returns a float: NaN when,
    after that, only one class is present (AUROC is undefined; callers that must refuse
    check for NaN). Raises ValueError for labels other than 0/1, unequal lengths or no
    complete pair. :func:`metacog.stats.auroc_ci` adds DeLong's interval.

    >>> auroc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    >>> auroc([1, 1, 1], [0.2, 0.5, 0.9])  # one class only: undefined
    nan
    """
    s, y = paired_vectors(scores, labels, names=("scores", "labels"), unit_a=False)
    n1 = int(y.sum())
    n0 = y.size - n1
    if n1 == 0 or n0 == 0:
        return float("nan")
    r = rankdata(s)
    return float((r[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def type2_auroc(y_true, y_score) -> float:
    """Type-2 AUROC: how well confidence separates the model's correct from incorrect answers.

    Equals the area under the type-2 ROC traced by sweeping a threshold over the confidence
    levels (ties counted 1/2); 0.5 = no metacognitive discrimination. ``y_true`` is the
    model's correctness, ``y_score`` its confidence (any scale).

    Examples
    --------
    Three right answers (confidence 0.9, 0.8, 0.2) and two wrong ones (0.3, 0.8): of the six
    right-wrong pairs, three rank the right answer higher and one is a tie, so 3.5 / 6.

    >>> round(type2_auroc([1, 1, 0, 0, 1], [0.9, 0.8, 0.3, 0.8, 0.2]), 4)
    0.5833
    """
    x, y = paired_vectors(y_score, y_true, names=("y_score", "y_true"), unit_a=False)
    return auroc(y, x)


def risk_coverage(y_true, y_score) -> pd.DataFrame:
    """Risk-coverage curve: answer items in decreasing confidence; one row per distinct level.

    coverage = share of items answered, risk = error rate among them. Items with equal
    confidence are answered together (no arbitrary tie order). ``y_true`` is correctness,
    ``y_score`` confidence.
    """
    x, y = paired_vectors(y_score, y_true, names=("y_score", "y_true"), unit_a=False)
    levels, code = np.unique(-x, return_inverse=True)
    cnt = np.bincount(code).astype(float)
    err = np.bincount(code, weights=1.0 - y)
    ccnt = np.cumsum(cnt)
    cerr = np.cumsum(err)
    return pd.DataFrame({"threshold": -levels, "n_answered": ccnt.astype(int),
                         "coverage": ccnt / x.size, "risk": cerr / ccnt})


def aurc(y_true, y_score) -> float:
    """Area under the risk-coverage curve: mean over items of the risk at the coverage where
    the item is answered (equals (1/n) sum_k risk(k) without ties). Lower is better."""
    x, y = paired_vectors(y_score, y_true, names=("y_score", "y_true"), unit_a=False)
    rc = risk_coverage(y, x)
    size = np.diff(np.concatenate(([0], rc.n_answered.to_numpy())))
    return float((rc.risk.to_numpy() * size).sum() / x.size)


def excess_aurc(y_true, y_score) -> float:
    """AURC minus that of an oracle ranking all correct answers first (E-AURC)."""
    x, y = paired_vectors(y_score, y_true, names=("y_score", "y_true"), unit_a=False)
    n = y.size
    k = np.arange(1, n + 1)
    oracle = float(np.mean(np.maximum(0.0, k - y.sum()) / k))  # all correct answers first, one at a time
    return aurc(y, x) - oracle
