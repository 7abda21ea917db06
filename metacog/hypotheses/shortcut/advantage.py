"""The shortcut chapter's statistic on item resamples: each judge's self-advantage (tau-b of its
confidence against its own correctness minus the mean against the other models' correctness) in
every subset of items, on the data and on item bootstraps, from the shared 2x2 counting engine
(:mod:`metacog.stats.tables`)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from metacog.stats import resample
from metacog.stats.pairwise import _phi
from metacog.stats.tables import BinaryTables, cross_counts_stack


def _advantage(K: np.ndarray) -> np.ndarray:
    """Self tau minus the mean tau against the other targets, per judge (row)."""
    d = np.diag(K).copy()
    off = K.copy()
    np.fill_diagonal(off, np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return d - np.nanmean(off, axis=1)


def _tau_advantage(n, a, b, n11) -> np.ndarray:
    """Self-advantage per judge from the weighted 2x2 margins of every judge's confidence against
    every target's correctness (:func:`metacog.stats.tables.cross_counts`), tau-b computed as
    :class:`metacog.stats.pairwise.TauTables` computes it."""
    return _advantage(_phi(n, a, b, n11))


def _atoms(masks: dict, names: list) -> tuple[list, np.ndarray]:
    """The item sets from which every subset is a union: items grouped by which subsets hold them
    (a domain, with or without the formal ones and 'all items'). Returns the atoms (boolean masks
    over items) and which subsets each belongs to (atoms x subsets); items in no subset are left out."""
    member = np.column_stack([np.asarray(masks[k], bool) for k in names])
    patterns, which = np.unique(member, axis=0, return_inverse=True)
    keep = np.flatnonzero(patterns.any(axis=1))
    return [which.ravel() == j for j in keep], patterns[keep]


def advantage_draws(confidence: pd.DataFrame, correct: pd.DataFrame, masks: dict, *,
                    n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """Self-advantage of every judge in every subset, on the data and on item bootstraps.

    Returns an array (n_boot + 1, subsets, models): row 0 is the estimate, rows 1.. resample
    items with replacement (one draw of item weights shared by all subsets). NaN where a
    judge's confidence or correctness is constant in that subset. The 2x2 margins are counted
    once per atom (:func:`_atoms`: subsets overlap, e.g. a domain lies inside 'formal items' and
    'all items') and summed into each subset, which is exact: counts add over disjoint items.
    """
    C = confidence.to_numpy(dtype=float)
    Y = correct.reindex(index=confidence.index, columns=confidence.columns).to_numpy(dtype=float)
    names = list(masks)
    atoms, member = _atoms(masks, names)
    prepared = [(BinaryTables(C[a]), BinaryTables(Y[a])) for a in atoms]
    k = C.shape[1]
    out = np.full((n_boot + 1, len(names), k), np.nan)
    n = C.shape[0]
    chunks = [np.ones((1, n))] + (list(resample.item_weights(n, n_boot, seed=seed, chunk=16)) if n_boot else [])
    row = 0
    for W in chunks:  # a chunk of resamples at a time: one product per resample, margins by column sums
        per_subset = np.zeros((len(names), 4, W.shape[0], k, k))
        for (tc, ty), a, m in zip(prepared, atoms, member):
            per_subset[m] += np.stack(cross_counts_stack(tc, ty, W[:, a]))  # margins summed over atoms
        for r in range(W.shape[0]):
            for s in range(len(names)):
                out[row + r, s] = _tau_advantage(*per_subset[s, :, r])
        row += W.shape[0]
    return out
