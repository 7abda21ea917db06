"""What the rank-one page shows: its structure and alignment tables for display, and the
tetrachoric matrix with its models ordered by first-factor loading."""

from __future__ import annotations

import warnings

import pandas as pd

from metacog import stats


def ordered_correlations(X: pd.DataFrame) -> tuple[pd.DataFrame, list]:
    """The tetrachoric matrix of ``X`` and its models ordered by first-factor loading."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tet = stats.tetrachoric(X.loc[:, X.nunique() == 2])
        fa = stats.factor_analysis(tet.rho, 1)
    order = list(fa.loadings.iloc[:, 0].sort_values(ascending=False).index)
    return tet.rho, order


def display_table(structure_table: pd.DataFrame) -> pd.DataFrame:
    """The structure table for a page: one row per (panel, matrix, subset), intervals in words."""
    from metacog.hypotheses.common import with_ci

    t = structure_table
    if "panel" not in t:  # a message table ("result"), shown as it is
        return t
    out = pd.DataFrame({"panel": t["panel"], "design": t.get("design", "unknown"), "matrix": t["matrix"],
                        "subset": t["subset"], "models": t["models"], "items": t["items"]})
    out = out.assign(**with_ci(t, "eig_share", "first-factor share (95% CI)", digits=2))
    out = out.assign(**with_ci(t, "eig_ratio", "eig1/eig2 (95% CI)", digits=2))
    out["factors kept by parallel analysis"] = t.get("pa_factors")
    out["shape"] = t.get("shape")
    out["not analysed because"] = t["note"].fillna("")
    return out


def display_alignment(alignment_table: pd.DataFrame) -> pd.DataFrame:
    """The alignment table for a page, the correlation with its interval in words."""
    from metacog.hypotheses.common import with_ci

    t = alignment_table
    out = pd.DataFrame({"panel": t["panel"], "design": t.get("design", "unknown"),
                        "items": t["subset"].map({"all": "all", "contested": "contested"}),
                        "n items": t["items"], "models": t["models"]})
    out = out.assign(**with_ci(t, "r_items", "correlation of item positions (95% CI)", digits=2))
    out["not analysed because"] = t["note"].fillna("")
    return out
