"""Reshape tidy response tables: wide items x models matrices, binarisation, summaries.

These are the small steps every chapter shares: pivot a probe to an items x
models matrix, binarise verbal confidence, count how often models agree.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def wide(df: pd.DataFrame, value: str = "confidence", *, probe: str | None = None,
         complete: bool = False) -> pd.DataFrame:
    """Items x models matrix of ``value`` (one probe at a time).

    ``complete=True`` keeps only items every model has a value for.
    """
    if probe is not None:
        df = df[df["probe"] == probe]
    probes = df["probe"].unique()
    if len(probes) > 1:
        raise ValueError(f"wide: the table mixes probes {sorted(probes)}; pass probe=... to pick one.")
    dup = df.duplicated(["item_id", "model"])
    if dup.any():
        r = df[dup.to_numpy()].iloc[0]
        raise ValueError(f"wide: model {r['model']!r} has item {r['item_id']!r} more than once "
                         f"(repeated samples?); filter to one sample first.")
    m = df.pivot(index="item_id", columns="model", values=value).astype(float)
    m.columns.name = "model"
    if complete:
        m = m.dropna()
    return m


def binarize(conf: pd.DataFrame, how: str = "median", cut: float = 0.5) -> pd.DataFrame:
    """Binarise an items x models confidence matrix.

    ``how="median"``: 1 where a model's confidence is at or above its own median
    (a per-model cut); ``how="fixed"``: 1 where confidence >= ``cut``.
    Missing stays missing.
    """
    if how == "median":
        thresholds = conf.median()
    elif how == "fixed":
        thresholds = pd.Series(cut, index=conf.columns)
    else:
        raise ValueError(f"binarize: how={how!r}; use 'median' or 'fixed'.")
    out = conf.ge(thresholds, axis=1).astype(float)
    return out.where(conf.notna())


def per_model(df: pd.DataFrame, *, probe: str | None = None) -> pd.DataFrame:
    """One row per model: items, accuracy, mean confidence and their gap (overconfidence)."""
    if probe is not None:
        df = df[df["probe"] == probe]
    g = df.groupby("model", observed=True)
    out = pd.DataFrame({
        "items": g["item_id"].nunique(),
        "accuracy": g["correct"].mean(),
        "mean_confidence": g["confidence"].mean(),
    })
    out["overconfidence"] = out["mean_confidence"] - out["accuracy"]
    return out.sort_values("accuracy", ascending=False)


def agreement(matrix: pd.DataFrame, *, min_models: int = 2) -> pd.DataFrame:
    """Per item: how many models gave a value, the share of 1s, and whether all agree.

    ``matrix`` is items x models with 0/1 (or missing). Items with fewer than
    ``min_models`` values are dropped.
    """
    values = matrix.to_numpy(dtype=float)
    n = np.sum(~np.isnan(values), axis=1)
    ones = np.nansum(values, axis=1)
    out = pd.DataFrame({"n_models": n, "share_ones": np.where(n > 0, ones / np.maximum(n, 1), np.nan)},
                       index=matrix.index)
    out = out[out["n_models"] >= min_models]
    out["unanimous"] = (out["share_ones"] == 0) | (out["share_ones"] == 1)
    out["unanimous_value"] = np.where(out["unanimous"], out["share_ones"], np.nan)
    return out


def unanimity(df: pd.DataFrame, *, by: str = "domain", value: str = "correct",
              probe: str | None = None) -> pd.DataFrame:
    """Share of items on which all models agree on ``value``, overall and per ``by`` group."""
    if probe is not None:
        df = df[df["probe"] == probe]
    m = wide(df, value)
    if by == "all":
        groups = pd.Series("all", index=m.index)
    else:
        groups = df.drop_duplicates("item_id").set_index("item_id")[by].reindex(m.index).fillna("(none)")
    a = agreement(m)
    a[by] = groups.reindex(a.index)
    rows = []
    for name, part in list(a.groupby(by, observed=True)) + [("all", a)]:
        rows.append({by: name, "items": len(part),
                     "all_correct" if value == "correct" else "all_one": float((part["unanimous_value"] == 1).mean()),
                     "all_wrong" if value == "correct" else "all_zero": float((part["unanimous_value"] == 0).mean()),
                     "unanimous": float(part["unanimous"].mean())})
    return pd.DataFrame(rows).set_index(by)
