"""Paper 2's audit: which domains does self-critique help, and can an audit score tell in advance?

For each model and domain, :func:`domain_table` puts side by side the paired gain
of a policy over the forced-answer baseline C0 (the outcome) and the candidate
predictors: H_proxy (label-aware audit score), and the label baselines C0 error
rate and C0 Brier loss. :func:`ranking` gives, per model, the Spearman
correlation of each predictor's domain ranking with the gains.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from metacog.stats.policy import h_proxy, policy_gains, policy_table

PREDICTORS = ("h_proxy", "c0_error", "c0_brier")


def domain_table(df: pd.DataFrame, *, policy: str = "c2", lam: float = 1.0,
                 threshold: float = 0.8) -> pd.DataFrame:
    """One row per model x domain: ``gain`` of ``policy`` over C0 and the predictors.

    ``df`` is a tidy c0/c1/c2 response table (see :mod:`metacog.stats.policy`);
    rows whose reply could not be parsed must be removed first.
    """
    t = policy_table(df, threshold)
    gains = policy_gains(t)
    g = gains[gains["policy"] == policy].set_index(["model", "domain"])["gain"]
    if g.empty:
        raise ValueError(f"domain_table: no rows for policy {policy!r}.")
    h = h_proxy(df, lam=lam, threshold=threshold).set_index(["model", "domain"])
    c0 = t[t["probe"] == "c0"].groupby(["model", "domain"])
    out = pd.DataFrame({
        "gain": g,
        "h_proxy": h["h_proxy"],
        "ocw_rate": h["ocw_rate"],
        "c0_error": 1.0 - c0["correct"].mean(),
        "c0_brier": c0["se"].mean(),
        "n_items": h["n_items"],
    })
    return out.reset_index()


def ranking(table: pd.DataFrame, predictors=PREDICTORS) -> pd.DataFrame:
    """Per model and predictor: Spearman rho (and p) between the predictor and the gain across domains."""
    rows = []
    for model, g in table.groupby("model"):
        for pred in predictors:
            ok = g[[pred, "gain"]].dropna()
            if len(ok) >= 3 and ok[pred].nunique() > 1 and ok["gain"].nunique() > 1:
                rho, p = sps.spearmanr(ok[pred], ok["gain"])
            else:
                rho, p = np.nan, np.nan
            rows.append({"model": model, "predictor": pred, "spearman": float(rho), "p": float(p),
                         "domains": len(ok)})
    return pd.DataFrame(rows)
