"""Tetrachoric correlations of binary ratings, with the semantics of R psych 2.2.9 ``tetrachoric``.

Rows are items (observations), columns are raters (models). For each column the threshold is
``tau_j = Phi^-1(1 - p_j)`` with ``p_j`` the mean of all its non-missing values. Each pair is
fitted on its own complete-case 2x2 table, but *with the two global thresholds* (psych's
``global=TRUE``): the maximum-likelihood rho of the bivariate probit with fixed cut points.
If any cell of a pair's table is 0 (and the table holds more than one item) every zero cell is
set to ``correct`` (0.5), as psych does. If the matrix is not positive definite it is smoothed
like ``psych::cor.smooth`` (eigenvalues below 1e-12 set to 1e-10, rescaled to sum to the number
of variables, back to a correlation matrix).

Unlike psych, a square matrix is never read as a contingency table, and the fit is exact: rho is
the root of the score equation, found for all pairs at once by safeguarded Newton iterations on
an exact (1e-15) bivariate normal CDF, so its log-likelihood is never below psych's (whose
``optimize`` stops at about 1e-4).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri

from .blas import single_blas_thread
from .bvn import bvn_cdf, bvn_pdf
from .tables import pair_counts
from .validate import as_binary_frame


@dataclass
class TetrachoricResult:
    """Result of :func:`tetrachoric`.

    rho: tetrachoric correlation matrix (smoothed if it was not positive definite).
    thresholds: tau_j = Phi^-1(1 - base rate) per column (a model's "strictness": higher = says 1 less).
    n_pairs: pairwise complete counts.
    dropped: constant columns that were dropped (with a warning).
    smoothed: whether cor.smooth-style smoothing was applied.
    raw_rho: the per-pair fits before smoothing.
    corrected: pairs (as a boolean matrix) whose 2x2 table had a zero cell replaced by ``correct``.
    """

    rho: pd.DataFrame
    thresholds: pd.Series
    n_pairs: pd.DataFrame
    dropped: list
    smoothed: bool
    raw_rho: pd.DataFrame
    corrected: pd.DataFrame
    correct: float = 0.5
    info: dict = field(default_factory=dict)

    def summary(self) -> pd.DataFrame:
        """One row per column: threshold, base rate, n non-missing, mean off-diagonal rho."""
        r = self.rho.to_numpy()
        k = r.shape[0]
        off = (r.sum(axis=1) - 1.0) / max(k - 1, 1)
        return pd.DataFrame({
            "threshold": self.thresholds,
            "base_rate": ndtr(-self.thresholds.to_numpy()),
            "n": np.diag(self.n_pairs.to_numpy()),
            "mean_rho": off,
        }, index=self.thresholds.index)


def pair_tables(X: np.ndarray):
    """Complete-case 2x2 counts for every column pair at once: :func:`metacog.stats.tables.pair_counts`
    with every item weighted 1.

    X is items x k with 0/1/NaN. Returns arrays (k x k) n00, n01, n10, n11 where the first
    index is the row variable (column i of X) and the second the column variable (column j).
    """
    return pair_counts(X)


def cell_probs(rho, tx, ty):
    """Cell probabilities (p00, p01, p10, p11) of the bivariate probit with cut points tx, ty.

    ``x = 1`` when the latent X exceeds tx. Vectorised over broadcastable inputs.
    """
    q = bvn_cdf(tx, ty, rho)
    px0, py0 = ndtr(tx), ndtr(ty)
    p01 = px0 - q
    p10 = py0 - q
    p11 = 1.0 - px0 - py0 + q
    return q, p01, p10, p11


def loglik(rho, counts, tx, ty):
    """Log-likelihood sum(n_cell * log p_cell) of rho for 2x2 counts (n00, n01, n10, n11)."""
    ps = cell_probs(rho, tx, ty)
    tiny = 1e-300
    return sum(np.asarray(n, float) * np.log(np.maximum(p, tiny)) for n, p in zip(counts, ps))


def _score_parts(rho, n00, n01, n10, n11, tx, ty):
    p00, p01, p10, p11 = cell_probs(rho, tx, ty)
    tiny = 1e-300
    p00, p01, p10, p11 = (np.maximum(p, tiny) for p in (p00, p01, p10, p11))
    # Near rho = +-1 with extreme thresholds a cell probability is ~1e-300 and p**2 underflows
    # to 0: g or dg is then infinite, which fit_rho treats as "bisect" (no RuntimeWarning).
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        g = n00 / p00 - n01 / p01 - n10 / p10 + n11 / p11
        dg = -bvn_pdf(tx, ty, rho) * (n00 / p00**2 + n01 / p01**2 + n10 / p10**2 + n11 / p11**2)
    return g, dg


def fit_rho(n00, n01, n10, n11, tx, ty, *, tol: float = 1e-12, max_iter: int = 200, start=None):
    """Maximum-likelihood rho for many 2x2 tables with fixed thresholds (vectorised).

    d loglik / d rho = phi2(tx, ty; rho) * g(rho) with
    g = n00/p00 - n01/p01 - n10/p10 + n11/p11, and g is strictly decreasing in rho, so the
    MLE is the unique root of g (or a boundary +-1 when a needed cell is empty). We keep a
    bracket [lo, hi] with g(lo) > 0 > g(hi) and take Newton steps, falling back to bisection
    when a step leaves the bracket. ``start`` (broadcastable to the tables) replaces the
    Yule's-Y starting values, e.g. the full sample's estimates when fitting resamples.
    """
    arrs = np.broadcast_arrays(*(np.asarray(a, float) for a in (n00, n01, n10, n11, tx, ty)))
    shape = arrs[0].shape
    n00, n01, n10, n11, tx, ty = (a.ravel().copy() for a in arrs)
    m = n00.size
    lo = np.full(m, -1.0)
    hi = np.full(m, 1.0)
    # start from Yule's Y-based approximation (cos(pi/(1+sqrt(OR)))), clipped inside the bracket
    with np.errstate(divide="ignore", invalid="ignore"):
        orr = (n00 * n11) / (n01 * n10)
        r = np.cos(np.pi / (1.0 + np.sqrt(orr)))
    r = np.where(np.isfinite(r), r, 0.0)
    if start is not None:
        r = np.where(np.isfinite(s0 := np.broadcast_to(np.asarray(start, float), shape).ravel()), s0, r)
    r = np.clip(r, -0.999, 0.999)
    active = np.ones(m, bool)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        ri = r[idx]
        g, dg = _score_parts(ri, n00[idx], n01[idx], n10[idx], n11[idx], tx[idx], ty[idx])
        pos = g > 0
        lo[idx] = np.where(pos, ri, lo[idx])
        hi[idx] = np.where(pos, hi[idx], ri)
        exact = g == 0
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where((dg < 0) & np.isfinite(dg) & np.isfinite(g), -g / dg, np.nan)
        new = ri + step
        # a Newton step below the tolerance is convergence, even when it is too small to move ri
        # in floating point (new == ri would otherwise count as leaving the bracket and bisect)
        tiny = np.abs(step) < tol
        bad = ~tiny & (~np.isfinite(new) | (new <= lo[idx]) | (new >= hi[idx]))
        new = np.where(bad, 0.5 * (lo[idx] + hi[idx]), new)
        new = np.where(exact, ri, new)
        done = exact | tiny | (np.abs(new - ri) < tol) | (hi[idx] - lo[idx] < tol)
        r[idx] = new
        active[idx[done]] = False
    return r.reshape(shape)


def cor_smooth(R: np.ndarray, eig_tol: float = 1e-12):
    """Smooth a non-positive-definite correlation matrix like psych::cor.smooth.

    Returns (matrix, smoothed_flag). Applied when the smallest eigenvalue is below machine
    epsilon: eigenvalues < eig_tol are set to 100 * eig_tol, all are rescaled to sum to the
    number of variables, and the rebuilt matrix is rescaled to unit diagonal.
    """
    vals, vecs = np.linalg.eigh(R)
    if vals.min() >= np.finfo(float).eps:
        return R, False
    vals = vals.copy()
    vals[vals < eig_tol] = 100.0 * eig_tol
    vals = vals * R.shape[0] / vals.sum()
    S = (vecs * vals) @ vecs.T
    d = np.sqrt(np.diag(S))
    S = S / np.outer(d, d)
    S = (S + S.T) / 2.0
    np.fill_diagonal(S, 1.0)
    return S, True


def thresholds(X) -> pd.Series:
    """tau_j = Phi^-1(1 - mean of column j's non-missing values)."""
    Xf = as_binary_frame(X)
    return pd.Series(ndtri(1.0 - np.nanmean(Xf.to_numpy(), axis=0)), index=Xf.columns, name="threshold")


@single_blas_thread
def tetrachoric(X, *, correct: float = 0.5, smooth: bool = True, min_pairs: int = 3) -> TetrachoricResult:
    """Tetrachoric correlation matrix of binary columns (items as rows, raters as columns).

    Parameters
    ----------
    X : DataFrame of 0/1/NaN (booleans accepted), items x raters.
    correct : value that replaces every zero cell of a pair's 2x2 table when the table has a
        zero cell and more than one item (psych's ``correct=.5``); 0 disables it.
    smooth : smooth a non-positive-definite result like ``psych::cor.smooth``.
    min_pairs : each pair needs at least this many items with both values present (psych: 3).

    Notes
    -----
    Constant columns are dropped with a warning (as psych ``delete=TRUE``); entirely missing
    columns, non-binary values and pairs with too few shared items raise ValueError.

    Examples
    --------
    >>> from metacog.power.examples import one_axis_panel
    >>> confidence, correct = one_axis_panel()  # one shared difficulty axis, no self-knowledge
    >>> t = tetrachoric(confidence)
    >>> t.rho.iloc[0].round(2).tolist()
    [1.0, 0.44, 0.38, 0.31, 0.5]
    """
    Xf = as_binary_frame(X)
    A, cols, dropped = _drop_constant(Xf.to_numpy(), list(Xf.columns))
    if dropped:
        warnings.warn(f"tetrachoric: column(s) {dropped} had no variance and were dropped.", stacklevel=2)
    k = len(cols)
    if k < 2:
        raise ValueError(f"tetrachoric: need at least 2 non-constant columns, got {k} (dropped: {dropped}).")
    tau, c, fix, npair = _pair_inputs(A, cols, correct, min_pairs)
    iu, ju = np.triu_indices(k, 1)
    raw, rho, smoothed = _assemble(fit_rho(*c, tau[iu], tau[ju]), k, smooth)
    corr = np.zeros((k, k), bool)
    corr[iu, ju] = fix
    corr[ju, iu] = fix
    if smoothed:
        warnings.warn("tetrachoric: matrix was not positive definite, smoothing was done.", stacklevel=2)
    idx = pd.Index(cols)
    return TetrachoricResult(
        rho=pd.DataFrame(rho, index=idx, columns=idx),
        thresholds=pd.Series(tau, index=idx, name="threshold"),
        n_pairs=pd.DataFrame(npair.astype(int), index=idx, columns=idx),
        dropped=dropped,
        smoothed=smoothed,
        raw_rho=pd.DataFrame(raw, index=idx, columns=idx),
        corrected=pd.DataFrame(corr, index=idx, columns=idx),
        correct=correct,
        info={"n_items": A.shape[0]},
    )


def _drop_constant(A: np.ndarray, cols: list):
    """``A`` without its constant columns (sd 0 or undefined, as psych drops them), the kept
    column names and the dropped ones."""
    n_obs = (~np.isnan(A)).sum(axis=0)
    means = np.nanmean(A, axis=0)
    const = (n_obs < 2) | (means == 0) | (means == 1)
    dropped = [c for c, b in zip(cols, const) if b]
    if dropped:
        A = A[:, ~const]
        cols = [c for c, b in zip(cols, const) if not b]
    return A, cols, dropped


def _pair_inputs(A: np.ndarray, cols: list, correct: float, min_pairs: int):
    """What :func:`fit_rho` needs for every pair (upper triangle) of the columns of ``A``: the
    thresholds, the four counts with zero cells corrected, which pairs were corrected, and the
    k x k complete-case counts. Raises ValueError when a pair shares too few items."""
    k = A.shape[1]
    tau = ndtri(1.0 - np.nanmean(A, axis=0))
    n00, n01, n10, n11 = pair_tables(A)
    npair = n00 + n01 + n10 + n11
    iu, ju = np.triu_indices(k, 1)
    few = npair[iu, ju] < min_pairs
    if few.any():
        bad = [(cols[i], cols[j], int(npair[i, j])) for i, j in zip(iu[few], ju[few])][:5]
        raise ValueError(
            f"tetrachoric: {int(few.sum())} pair(s) share fewer than {min_pairs} non-missing items, "
            f"e.g. {bad} (column, column, shared items); drop sparse columns first."
        )
    c = [a[iu, ju].copy() for a in (n00, n01, n10, n11)]
    tot = c[0] + c[1] + c[2] + c[3]
    fix = (np.minimum.reduce(c) == 0) & (tot > 1) & (correct > 0)
    for a in c:
        a[fix & (a == 0)] = correct
    return tau, c, fix, npair


def _assemble(r: np.ndarray, k: int, smooth: bool):
    """The raw k x k matrix of the pairs' estimates ``r`` (upper-triangle order), the matrix
    returned (smoothed when ``smooth`` and not positive definite) and whether it was smoothed."""
    iu, ju = np.triu_indices(k, 1)
    raw = np.eye(k)
    raw[iu, ju] = r
    raw[ju, iu] = r
    rho, smoothed = cor_smooth(raw) if smooth else (raw, False)
    return raw, rho, smoothed


@single_blas_thread
def tetrachoric_matrices(matrices, *, correct: float = 0.5, smooth: bool = True,
                         min_pairs: int = 3) -> list[np.ndarray]:
    """``tetrachoric(X).rho`` as an array for each binary matrix of ``matrices`` (items x raters,
    0/1/NaN, DataFrames or arrays), with every pair of every matrix fitted in one vectorised
    :func:`fit_rho` call: the same numbers as one :func:`tetrachoric` call per matrix (each
    pair's Newton path is its own), without a call's fixed cost. For many small matrices, such
    as the simulated populations of :mod:`metacog.power`.

    Constant columns are dropped silently (a returned matrix can be smaller than its input's
    columns), smoothing is silent too; a matrix with fewer than two varying columns gives an
    empty 0 x 0 array. Values are not validated: pass 0/1/NaN.
    """
    parts = []
    for X in matrices:
        A = np.asarray(X, dtype=float)
        A, cols, _ = _drop_constant(A, list(range(A.shape[1])))
        if len(cols) < 2:
            parts.append(None)
            continue
        tau, c, _, _ = _pair_inputs(A, cols, correct, min_pairs)
        iu, ju = np.triu_indices(len(cols), 1)
        parts.append((len(cols), c, tau[iu], tau[ju]))
    used = [p for p in parts if p is not None]
    if not used:
        return [np.zeros((0, 0)) for _ in parts]
    r = fit_rho(*(np.concatenate([p[1][i] for p in used]) for i in range(4)),
                np.concatenate([p[2] for p in used]), np.concatenate([p[3] for p in used]))
    out, at = [], 0
    for p in parts:
        if p is None:
            out.append(np.zeros((0, 0)))
            continue
        size = p[0] * (p[0] - 1) // 2
        out.append(_assemble(r[at:at + size], p[0], smooth)[1])
        at += size
    return out
