"""How close is a binary ratings matrix to rank one? One row of numbers per matrix.

This is the summary the rank-one chapter tabulates for every data source: fit
the tetrachoric matrix, a one-factor minres solution and parallel analysis,
and report the first factor's share of variance, the second eigenvalue and how
many factors the data support.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from metacog import stats
def rank_one(X: pd.DataFrame, *, n_iter: int = 20, seed: int = 0,
             reference: str = "resampled") -> dict:
    """Summarise the factor structure of binary ratings ``X`` (items x models).

    Returns a dict with
    ``n_items``, ``n_models`` (after constant columns are dropped), ``dropped``,
    ``smoothed``, ``share`` (variance share of the one-factor solution, psych's
    "Proportion Var"), ``eig_share`` (first eigenvalue of the tetrachoric matrix
    over the number of models), ``eig1``, ``eig2``, ``mean_rho`` (mean
    off-diagonal tetrachoric correlation) and ``pa_factors`` (factors kept by
    parallel analysis against ``reference``).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant columns and smoothing are reported below
        tet = stats.tetrachoric(X)
    rho = tet.rho.to_numpy()
    m = rho.shape[0]
    ev = np.sort(np.linalg.eigvalsh(rho))[::-1]
    fa = stats.factor_analysis(tet.rho, 1)
    kept = X[list(tet.rho.columns)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pa = stats.parallel_analysis(kept, n_iter=n_iter, reference=reference, seed=seed)
    return {
        "n_items": int(X.notna().any(axis=1).sum()),
        "n_models": m,
        "dropped": list(tet.dropped),
        "smoothed": bool(tet.smoothed),
        "share": float(fa.share.iloc[0]),
        "eig_share": float(ev[0] / m),
        "eig1": float(ev[0]),
        "eig2": float(ev[1]),
        "mean_rho": float(rho[~np.eye(m, dtype=bool)].mean()),
        "pa_factors": int(pa.n_factors),
    }


def rank_one_table(matrices: dict[str, pd.DataFrame], **kwargs) -> pd.DataFrame:
    """:func:`rank_one` for several named matrices, one row each."""
    rows = [{"matrix": name, **rank_one(X, **kwargs)} for name, X in matrices.items()]
    return pd.DataFrame(rows).set_index("matrix")


def scree(matrices: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Tidy eigenvalues of each matrix's tetrachoric correlations: matrix, factor, eigenvalue."""
    rows = []
    for name, X in matrices.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rho = stats.tetrachoric(X).rho.to_numpy()
        ev = np.sort(np.linalg.eigvalsh(rho))[::-1]
        rows += [{"matrix": name, "factor": k + 1, "eigenvalue": float(v)} for k, v in enumerate(ev)]
    return pd.DataFrame(rows)


#: A matrix is "dominated by one factor" when its first eigenvalue is at least this many
#: times its second (a scree criterion that does not grow with the number of items).
DOMINANCE_RATIO = 4.0


def classify(summary: dict | pd.Series, ratio: float = DOMINANCE_RATIO) -> str:
    """'rank one', 'one dominant factor' or 'several factors' for a :func:`rank_one` row.

    'rank one': parallel analysis keeps a single factor. 'one dominant factor': it keeps
    more (with hundreds of items it detects small secondary factors), but the first
    eigenvalue is at least ``ratio`` times the second. Otherwise 'several factors'.
    """
    if summary["pa_factors"] <= 1:
        return "rank one"
    if summary["eig1"] >= ratio * summary["eig2"]:
        return "one dominant factor"
    return "several factors"
