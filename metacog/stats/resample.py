"""One engine for resampling items: bootstrap count weights applied to sufficient statistics.

A bootstrap resample of the items of an items x models matrix is a vector of counts, how often
each item was drawn. Every statistic the book resamples depends on the items only through
weighted sums: the 2x2 tables of a pair of binary columns (tetrachoric correlation, Kendall's
tau-b, which is phi for 0/1 data) are ``X'diag(w)Y`` products (:mod:`metacog.stats.tables`). So a resample costs one matrix
product per table, never a copy of the matrix, and the per-pair work (fitting a tetrachoric
correlation, a tau-b) runs once over all pairs of a chunk of resamples.

The weights are drawn exactly as ``x[rng.integers(0, n, n)]`` draws items, one resample after
another from ``numpy.random.default_rng(seed)``, so a plain loop over copied matrices with the
same seed gives the same resamples (``tests/test_stats_resample.py`` checks the intervals agree).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import ndtri

from .blas import single_blas_thread
from .tables import BinaryTables, pair_counts, pair_counts_stack, prepared  # noqa: F401 (the tables every resample uses)
from .tetrachoric import cor_smooth, fit_rho


def item_weights(n_items: int, n_boot: int, *, seed=0, chunk: int = 64):
    """Bootstrap count weights, ``chunk`` resamples at a time: arrays of shape (b, n_items).

    Row r holds how often each item is drawn in resample r (each row sums to ``n_items``). The
    draws are those of ``rng.integers(0, n_items, n_items)`` once per resample.

    >>> [w.shape for w in item_weights(5, 3, chunk=2)]
    [(2, 5), (1, 5)]
    >>> int(next(item_weights(5, 1)).sum())
    5
    """
    if n_items < 1 or n_boot < 1:
        raise ValueError(f"item_weights: need n_items >= 1 and n_boot >= 1, got {n_items} and {n_boot}.")
    rng = np.random.default_rng(seed)
    for start in range(0, n_boot, chunk):
        yield count_weights(rng, n_items, min(chunk, n_boot - start))


def count_weights(rng: np.random.Generator, n_units: int, n_draws: int) -> np.ndarray:
    """(n_draws, n_units) resampling counts drawn from ``rng``: how often each unit (an item, a
    model) is drawn in each resample of ``n_units`` with replacement.

    >>> count_weights(np.random.default_rng(0), 4, 2).sum(axis=1).tolist()
    [4.0, 4.0]
    """
    idx = rng.integers(0, n_units, size=(n_draws, n_units))
    flat = (idx + n_units * np.arange(n_draws)[:, None]).ravel()
    return np.bincount(flat, minlength=n_draws * n_units).reshape(n_draws, n_units).astype(float)


def percentile_table(names, estimate, draws, *, ci: float = 0.95, recentre: bool = False) -> pd.DataFrame:
    """One row per statistic: statistic, estimate, ci_low, ci_high (percentile interval of the
    finite draws) and n_boot (how many draws were finite).

    ``draws`` is (n_boot x statistics). ``recentre=True`` shifts each column's draws so their mean
    equals the estimate before the percentiles are taken (a first-order bias correction for
    statistics, such as eigenvalues, that resampling pulls in one direction).
    """
    if not 0 < ci < 1:
        raise ValueError(f"percentile_table: ci must be in (0, 1), got {ci!r}.")
    lo, hi = (1 - ci) / 2, 1 - (1 - ci) / 2
    draws = np.asarray(draws, dtype=float).reshape(len(draws), -1)
    rows = []
    for j, name in enumerate(names):
        d = draws[:, j][np.isfinite(draws[:, j])]
        est = float(estimate[j])
        if recentre and d.size and np.isfinite(est):
            d = d - (d.mean() - est)
        rows.append({"statistic": name, "estimate": est,
                     "ci_low": float(np.quantile(d, lo)) if d.size else np.nan,
                     "ci_high": float(np.quantile(d, hi)) if d.size else np.nan,
                     "n_boot": int(d.size)})
    return pd.DataFrame(rows)


def clip_to_range(table: pd.DataFrame, bounds: dict) -> pd.DataFrame:
    """A :func:`percentile_table` with each interval end clipped to the values its statistic can
    take (``bounds``: statistic -> (lowest, highest)). Re-centring shifts all draws by one
    amount, which can carry a percentile past a bound (an eigenvalue ratio below 1); the
    ``clipped`` column says where that happened."""
    t = table.copy()
    lo = np.array([bounds.get(s, (-np.inf, np.inf))[0] for s in t["statistic"]], dtype=float)
    hi = np.array([bounds.get(s, (-np.inf, np.inf))[1] for s in t["statistic"]], dtype=float)
    t["clipped"] = (t["ci_low"].to_numpy() < lo) | (t["ci_high"].to_numpy() > hi)
    t["ci_low"] = np.maximum(t["ci_low"].to_numpy(), lo)
    t["ci_high"] = np.minimum(t["ci_high"].to_numpy(), hi)
    return t


def _thresholds(B: BinaryTables, W: np.ndarray) -> np.ndarray:
    """(b x k) tetrachoric thresholds under each weight row; inf/NaN where a column is constant."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return ndtri(1.0 - (W @ B.ones) / (W @ B.seen))


@single_blas_thread
def tetrachoric_stack(X, W, *, correct: float = 0.5, smooth: bool = True, start=None):
    """Tetrachoric matrices of binary ``X`` (items x k) under each row of item weights ``W``.

    Returns (rho, ok): rho is (b x k x k), estimated as :func:`metacog.stats.tetrachoric` does
    on the resampled matrix (zero cells corrected by ``correct``, smoothed like
    ``psych::cor.smooth`` when not positive definite); ok[r] is False where a column is constant
    in resample r (tetrachoric would drop it) or a pair shares fewer than 3 items, and
    rho[r] is then NaN. ``start`` (k x k, e.g. the full sample's unsmoothed estimate) is where
    the fit of every pair begins; it changes the number of steps, not the result.
    """
    B = prepared(X)
    W = np.atleast_2d(np.asarray(W, dtype=float))
    b, k = W.shape[0], B.ones.shape[1]
    iu, ju = np.triu_indices(k, 1)
    tau = _thresholds(B, W)
    cells = np.stack([t[:, iu, ju] for t in pair_counts_stack(B, W)])
    tot = cells.sum(axis=0)
    ok = np.isfinite(tau).all(axis=1) & (tot >= 3).all(axis=1)
    fix = (cells.min(axis=0) == 0) & (tot > 1) & (correct > 0)
    cells = np.where(fix[None] & (cells == 0), correct, cells)
    rho = np.full((b, k, k), np.nan)
    if ok.any():
        sel = np.flatnonzero(ok)
        r = fit_rho(*(cells[c, sel] for c in range(4)), tau[sel][:, iu], tau[sel][:, ju],
                    start=None if start is None else np.asarray(start, float)[iu, ju])
        m = np.broadcast_to(np.eye(k), (sel.size, k, k)).copy()
        m[:, iu, ju] = r
        m[:, ju, iu] = r
        if smooth:
            low = np.linalg.eigvalsh(m)[:, 0] < np.finfo(float).eps
            for s in np.flatnonzero(low):
                m[s] = cor_smooth(m[s])[0]
        rho[sel] = m
    return rho, ok


def percentile_interval(draws, *, ci: float = 0.95, min_draws: int = 1) -> tuple[float, float]:
    """Percentile interval of the finite ``draws``; (NaN, NaN) with fewer than ``min_draws``.

    >>> percentile_interval([1.0, 2.0, 3.0, np.nan], ci=0.5)
    (1.5, 2.5)
    """
    d = np.asarray(draws, dtype=float)
    d = d[np.isfinite(d)]
    if d.size < max(1, min_draws):
        return np.nan, np.nan
    lo, hi = np.quantile(d, [(1 - ci) / 2, 1 - (1 - ci) / 2])
    return float(lo), float(hi)


def mean_over_resampled_units(values: np.ndarray, units: np.ndarray, rng) -> np.ndarray:
    """Per draw b (rows of ``values``), the mean of the finite ``values[b, pick]`` where ``pick``
    is ``units`` on draw 0 (the data) and ``units`` resampled with replacement on every later
    draw: a second stage that resamples units (pairs of models, groups of judges) on top of the
    item resamples the rows already hold. NaN where nothing finite is picked."""
    units = np.asarray(units)
    out = np.full(values.shape[0], np.nan)
    for b in range(values.shape[0]):
        pick = rng.choice(units, len(units)) if (b > 0 and len(units)) else units
        vals = values[b, pick]
        vals = vals[np.isfinite(vals)]
        out[b] = vals.mean() if vals.size else np.nan
    return out
