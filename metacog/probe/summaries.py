"""Per-layer summaries of probe tables with percentile bootstrap intervals over prompts
(through :func:`metacog.stats.bootstrap_items`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from metacog.stats import bootstrap_difference, bootstrap_items

def _as_list(by) -> list[str]:
    if by is None:
        return []
    return [by] if isinstance(by, str) else list(by)


def _check_cols(table: pd.DataFrame, cols: list[str], what: str) -> None:
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise ValueError(f"{what}: the probe table has no column(s) {missing}.")


def _wide(cell: pd.DataFrame, value: str, what: str) -> pd.DataFrame:
    """prompt_id x layer matrix of ``value``; refuses to silently average repeated rows."""
    dup = cell.duplicated(["prompt_id", "layer"])
    if dup.any():
        varying = [c for c in ("model", "sigma", "n_trials", "seed", "condition", "group", "chat")
                   if c in cell.columns and cell[c].nunique(dropna=False) > 1]
        raise ValueError(
            f"{what}: prompt {cell.loc[dup, 'prompt_id'].iloc[0]!r} has several rows per layer"
            f"{f' (these columns vary: {varying})' if varying else ''}; add the column(s) that "
            "tell the runs apart to `by`, or filter the table first."
        )
    return cell.pivot(index="prompt_id", columns="layer", values=value).dropna()


def _mean_over_items(stack: np.ndarray) -> np.ndarray:
    """Per-layer means of a stack of resampled (items x layers) matrices."""
    return stack.mean(axis=-2)


def _interval(x: np.ndarray, n_boot: int, level: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-layer percentile interval of the mean over the rows of ``x`` (NaN with < 2 rows)."""
    if len(x) < 2:
        return np.full(x.shape[1], np.nan), np.full(x.shape[1], np.nan)
    res = bootstrap_items(_mean_over_items, x, n_boot=n_boot, ci=level, seed=seed)
    return res.ci_low, res.ci_high


def _cells(table: pd.DataFrame, by: list[str]):
    """(keys as a tuple, sub-table) per cell of ``by`` (one cell when ``by`` is empty)."""
    if not by:
        yield (), table
        return
    for keys, cell in table.groupby(by, sort=True, dropna=False):
        yield (keys if isinstance(keys, tuple) else (keys,)), cell


def _depths(cell: pd.DataFrame):
    return cell.groupby("layer")["depth"].first() if "depth" in cell else None


def layer_summary(table: pd.DataFrame, by: str | Sequence[str] | None = "group", *,
                  value: str = "displacement", n_boot: int = 2000, level: float = 0.95,
                  seed: int = 0) -> pd.DataFrame:
    """Per-layer mean of ``value`` by group, with percentile bootstrap CIs over prompts.

    Prompts are resampled jointly across layers (:func:`metacog.stats.bootstrap_items`,
    one set of draws per cell), so the CI band of a layer profile is coherent; a cell with
    one prompt has NaN bounds. Returns a DataFrame with columns by..., layer, depth, n,
    mean, ci_low, ci_high.
    """
    by = _as_list(by)
    _check_cols(table, by + ["prompt_id", "layer", value], "layer_summary")
    out = []
    for keys, cell in _cells(table, by):
        w = _wide(cell, value, "layer_summary")
        x = w.to_numpy()
        lo, hi = _interval(x, n_boot, level, seed)
        depth = _depths(cell)
        for j, layer in enumerate(w.columns):
            row = dict(zip(by, keys))
            row.update(layer=layer, depth=np.nan if depth is None else depth[layer], n=len(x),
                       mean=x[:, j].mean(), ci_low=lo[j], ci_high=hi[j])
            out.append(row)
    return pd.DataFrame(out)


def paired_difference(table: pd.DataFrame, a: str = "self_critique", b: str = "plain", *,
                      column: str = "condition", by: str | Sequence[str] | None = None,
                      value: str = "displacement", n_boot: int = 2000, level: float = 0.95,
                      seed: int = 0) -> pd.DataFrame:
    """Per-layer paired difference ``a - b`` (default self-critique minus plain) over prompt ids.

    Items probed under both conditions are paired by ``prompt_id``; the CI is a percentile
    bootstrap over items (NaN with one item). ``frac_below`` is the share of items whose
    difference is < 0 (a lower displacement under ``a``). Returns a DataFrame with columns
    by..., layer, depth, n, mean_a, mean_b, delta, ci_low, ci_high, rel_delta
    (delta / mean_b), frac_below.
    """
    by = _as_list(by)
    _check_cols(table, by + [column, "prompt_id", "layer", value], "paired_difference")
    for lab in (a, b):
        if not (table[column] == lab).any():
            raise ValueError(f"paired_difference: no rows with {column} == {lab!r}; "
                             f"found {sorted(table[column].dropna().unique())}.")
    out = []
    for keys, cell in _cells(table, by):
        wa = _wide(cell[cell[column] == a], value, "paired_difference")
        wb = _wide(cell[cell[column] == b], value, "paired_difference")
        common = wa.index.intersection(wb.index)
        cols = wa.columns.intersection(wb.columns)
        if len(common) == 0:
            raise ValueError(f"paired_difference: no prompt_id probed under both {a!r} and {b!r}"
                             + (f" in cell {dict(zip(by, keys))}" if by else "") + ".")
        xa, xb = wa.loc[common, cols].to_numpy(), wb.loc[common, cols].to_numpy()
        d = xa - xb
        lo, hi = _interval(d, n_boot, level, seed)
        depth = _depths(cell)
        for j, layer in enumerate(cols):
            row = dict(zip(by, keys))
            row.update(layer=layer, depth=np.nan if depth is None else depth[layer], n=len(common),
                       mean_a=xa[:, j].mean(), mean_b=xb[:, j].mean(), delta=d[:, j].mean(),
                       ci_low=lo[j], ci_high=hi[j], rel_delta=d[:, j].mean() / xb[:, j].mean(),
                       frac_below=float((d[:, j] < 0).mean()))
            out.append(row)
    return pd.DataFrame(out)


def group_difference(table: pd.DataFrame, a: str = "OCW", b: str = "CC", *,
                     column: str = "group", by: str | Sequence[str] | None = "condition",
                     value: str = "displacement", n_boot: int = 2000, level: float = 0.95,
                     seed: int = 0) -> pd.DataFrame:
    """Per-layer unpaired difference of means ``a - b`` (default OCW minus CC).

    Each group is resampled on its own (:func:`metacog.stats.bootstrap_difference`; NaN
    bounds when a group has one prompt). The paper's claim is that this CI covers 0:
    confident errors are not more fragile than confident hits. Returns a DataFrame with
    columns by..., layer, depth, n_a, n_b, mean_a, mean_b, delta, ci_low, ci_high.
    """
    by = [c for c in _as_list(by) if c in table.columns]
    _check_cols(table, [column, "prompt_id", "layer", value], "group_difference")
    out = []
    for keys, cell in _cells(table, by):
        wa = _wide(cell[cell[column] == a], value, "group_difference")
        wb = _wide(cell[cell[column] == b], value, "group_difference")
        if len(wa) == 0 or len(wb) == 0:
            raise ValueError(f"group_difference: need rows with {column} == {a!r} and {b!r}"
                             + (f" in cell {dict(zip(by, keys))}" if by else "") + ".")
        cols = wa.columns.intersection(wb.columns)
        xa, xb = wa[cols].to_numpy(), wb[cols].to_numpy()
        if len(xa) < 2 or len(xb) < 2:
            lo = hi = np.full(len(cols), np.nan)
        else:
            res = bootstrap_difference(_mean_over_items, xa, xb, n_boot=n_boot, ci=level, seed=seed)
            lo, hi = res.ci_low, res.ci_high
        depth = _depths(cell)
        for j, layer in enumerate(cols):
            row = dict(zip(by, keys))
            row.update(layer=layer, depth=np.nan if depth is None else depth[layer],
                       n_a=len(xa), n_b=len(xb), mean_a=xa[:, j].mean(), mean_b=xb[:, j].mean(),
                       delta=xa[:, j].mean() - xb[:, j].mean(), ci_low=lo[j], ci_high=hi[j])
            out.append(row)
    return pd.DataFrame(out)
