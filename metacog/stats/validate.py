"""Input checks shared by the statistics modules.

Every check raises ``ValueError`` naming the argument, where the problem is and how to fix it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def as_binary_frame(X, name: str = "X", *, allow_all_missing: bool = False) -> pd.DataFrame:
    """Return ``X`` as a float DataFrame of 0.0 / 1.0 / NaN.

    Accepts a DataFrame (or anything ``pd.DataFrame`` takes) of 0/1, booleans or missing values.
    Raises ValueError for any other value (naming the column and the offending value) and,
    unless ``allow_all_missing``, for columns that are entirely missing.
    """
    if not isinstance(X, pd.DataFrame):
        X = pd.DataFrame(X)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name}: empty table (shape {X.shape}); need items as rows and models as columns.")
    if X.columns.duplicated().any():
        dup = list(X.columns[X.columns.duplicated()].unique())
        raise ValueError(f"{name}: duplicated column name(s) {dup}; column names must be unique.")
    if all(pd.api.types.is_numeric_dtype(d) and not pd.api.types.is_extension_array_dtype(d) for d in X.dtypes):
        # fast path: plain numeric/bool columns
        A = X.to_numpy(dtype=float)
        bad = ~np.isnan(A) & (A != 0) & (A != 1)
        if not bad.any() and (allow_all_missing or not np.isnan(A).all(axis=0).any()):
            return pd.DataFrame(A, index=X.index, columns=X.columns)
    out = {}
    for col in X.columns:
        s = X[col]
        if s.dtype == bool or str(s.dtype) == "boolean":
            v = s.astype("float64") if s.dtype == bool else s.astype("Float64").to_numpy(dtype=float, na_value=np.nan)
        else:
            try:
                v = pd.to_numeric(s, errors="raise")
            except (ValueError, TypeError):
                bad = s[pd.to_numeric(s, errors="coerce").isna() & s.notna()].iloc[0]
                raise ValueError(
                    f"{name}: column {col!r} has a non-numeric value {bad!r}; values must be 0, 1 "
                    f"or missing (NaN)."
                ) from None
            v = np.asarray(v.astype("Float64").to_numpy(dtype=float, na_value=np.nan), dtype=float)
        v = np.asarray(v, dtype=float)
        bad = ~np.isnan(v) & (v != 0) & (v != 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{name}: column {col!r} is not binary: row {X.index[i]!r} has {float(v[i])!r}; values must "
                f"be 0, 1 or missing (NaN). Dichotomise first (e.g. confidence >= threshold)."
            )
        if not allow_all_missing and np.isnan(v).all():
            raise ValueError(
                f"{name}: column {col!r} is entirely missing; drop it before calling (X.dropna(axis=1, how='all'))."
            )
        out[col] = v
    return pd.DataFrame(out, index=X.index, columns=X.columns)


def check_aligned(a: pd.DataFrame, b: pd.DataFrame, names=("confidence", "correct")) -> None:
    """Raise ValueError unless ``a`` and ``b`` have identical index and columns (same order)."""
    na, nb = names
    if not a.index.equals(b.index):
        only_a = a.index.difference(b.index)
        only_b = b.index.difference(a.index)
        raise ValueError(
            f"{na} and {nb} have different item indexes ({len(only_a)} only in {na}, e.g. "
            f"{list(only_a[:3])}; {len(only_b)} only in {nb}, e.g. {list(only_b[:3])}; or a different "
            f"order). Align them first, e.g. {nb} = {nb}.reindex(index={na}.index)."
        )
    if not a.columns.equals(b.columns):
        only_a = a.columns.difference(b.columns)
        only_b = b.columns.difference(a.columns)
        raise ValueError(
            f"{na} and {nb} have different model columns (only in {na}: {list(only_a)}; only in "
            f"{nb}: {list(only_b)}; or a different order). Align them first, e.g. "
            f"{nb} = {nb}[{na}.columns]."
        )


def as_vector(x, name: str) -> np.ndarray:
    """1-D float array from a Series/list/array; raises ValueError if not 1-D."""
    v = np.asarray(x, dtype=float)
    if v.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D sequence, got shape {v.shape}.")
    return v


def paired_vectors(a, b, names=("confidence", "correct"), *, binary_b: bool = True,
                   unit_a: bool = True):
    """Two equal-length 1-D arrays with pairs missing in either dropped.

    ``a`` must lie in [0, 1] when ``unit_a``; ``b`` must be 0/1 when ``binary_b``.
    """
    na, nb = names
    if isinstance(a, pd.Series) and isinstance(b, pd.Series) and not a.index.equals(b.index):
        raise ValueError(f"{na} and {nb} have different indexes; align them first (b.reindex(a.index)).")
    x, y = as_vector(a, na), as_vector(b, nb)
    if x.shape != y.shape:
        raise ValueError(f"{na} has {x.size} values but {nb} has {y.size}; they must be paired.")
    keep = ~np.isnan(x) & ~np.isnan(y)
    x, y = x[keep], y[keep]
    if x.size == 0:
        raise ValueError(f"{na}/{nb}: no pair with both values present.")
    if unit_a and ((x < 0) | (x > 1)).any():
        i = int(np.flatnonzero((x < 0) | (x > 1))[0])
        raise ValueError(f"{na} must lie in [0, 1]; found {x[i]!r}.")
    if binary_b and ((y != 0) & (y != 1)).any():
        i = int(np.flatnonzero((y != 0) & (y != 1))[0])
        raise ValueError(f"{nb} must be 0 or 1; found {y[i]!r}.")
    return x, y
