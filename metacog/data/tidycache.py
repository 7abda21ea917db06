"""A parquet cache of tidy tables built from large public logs.

The key covers the loader version, the pinned sha256 of every file the loader
reads and the size and modification time of the copies actually read, so a
re-pinned dataset, a new loader or an edited copy all rebuild the table. A cache
file that cannot be read (cut short, corrupt, from another pyarrow) is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from metacog.data.fetch import cache_dir, manifest
from metacog.memo import key_lock

#: Tidy columns with few distinct values, held as categoricals (a few hundred MB less
#: for millions of rows, and a fast parquet round trip).
CATEGORICAL = ("model", "item_id", "benchmark", "probe", "domain", "subject", "decision",
               "parse_status", "backend", "backend_version")
_SPEC = b"metacog.constant_columns"


def categorize(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the :data:`CATEGORICAL` columns it has as categoricals of ``str`` categories.

    (``str`` is what a parquet round trip gives back, so a cached table equals a built one.)
    """
    out = df.copy(deep=False)
    for col in CATEGORICAL:
        if col in out.columns:
            c = out[col].astype("category")
            out[col] = pd.Categorical.from_codes(c.cat.codes, pd.Index(c.cat.categories, dtype="str"))
    return out


def arrow_strings(values: pd.Categorical) -> pd.Series:
    """A categorical as a ``string`` (pyarrow) Series, decoded in Arrow rather than in Python."""
    import pyarrow as pa

    codes = np.asarray(values.codes)
    arr = pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0),
                                         pa.array([str(c) for c in values.categories], pa.string()))
    return pd.Series(pd.arrays.ArrowStringArray(arr.cast(pa.large_string())))


def _write(df: pd.DataFrame, target: str) -> None:
    """Parquet without the columns that hold one value (or none); their value goes in the metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    constant, keep = {}, []
    for col in df.columns:
        s = df[col]
        values = s.dropna().unique()
        if len(values) == 0 or (len(values) == 1 and not s.isna().any()):
            value = values[0].item() if len(values) and hasattr(values[0], "item") else (
                values[0] if len(values) else None)
            constant[col] = [value, str(s.dtype) if not isinstance(s.dtype, pd.CategoricalDtype)
                             else "category"]
        else:
            keep.append(col)
    part = df[keep]
    part.attrs = {}  # the notes go in our own metadata (pyarrow warns on ones JSON cannot hold)
    table = pa.Table.from_pandas(part, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[_SPEC] = json.dumps({"order": list(df.columns), "constant": constant,
                              "attrs": _plain_attrs(df.attrs)}).encode()
    pq.write_table(table.replace_schema_metadata(meta), target)


def _read(path: Path) -> pd.DataFrame:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    spec = json.loads(table.schema.metadata[_SPEC])
    df = table.to_pandas()
    n = len(df)
    for col, (value, dtype) in spec["constant"].items():
        if dtype == "category":
            cats = [] if value is None else [value]
            df[col] = pd.Categorical.from_codes(np.full(n, 0 if cats else -1, dtype=np.int8), cats)
        else:
            df[col] = pd.Series(value, index=df.index, dtype=dtype)
    df = df[spec["order"]]
    df.attrs.update(spec.get("attrs", {}))
    return df


def _plain_attrs(attrs: dict) -> dict:
    """The entries of ``DataFrame.attrs`` that JSON keeps as they are (numbers, strings,
    booleans, None), so a cached table carries the same notes as a built one."""
    return {k: v for k, v in attrs.items()
            if isinstance(k, str) and (v is None or isinstance(v, (str, int, float, bool)))}


def listing(folder: Path, pattern: str) -> str:
    """A short hash of the names of the files under ``folder`` matching ``pattern``, for keys
    of loaders that read every file they find (an added file then changes the key)."""
    names = sorted(str(f.relative_to(folder)) for f in Path(folder).glob(pattern))
    return hashlib.sha256("|".join(names).encode()).hexdigest()[:16]


def cache_key(names: tuple[str, ...], folders: tuple[Path, ...], version: str) -> str:
    """Hex key of a tidy table built by loader ``version`` from datasets ``names`` in ``folders``."""
    parts: list = [version]
    for name, folder in zip(names, folders):
        for rel, info in sorted(manifest(name).items()):
            try:
                st = (folder / rel).stat()
                seen = [st.st_size, st.st_mtime_ns]
            except OSError:
                seen = None
            parts.append([name, rel, info["sha256"], str(Path(folder).resolve()), seen])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def cache_file(label: str, key: str) -> Path:
    """Where the tidy table ``label`` with ``key`` is cached."""
    return cache_dir() / "tidy" / f"{label}-{key[:20]}.parquet"


def cached(label: str, key: str, build: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """The table cached under ``key``, or ``build()`` saved there (atomically) and returned.

    An unreadable cache file is replaced; a cache folder that cannot be written
    only costs the speed-up.
    """
    target = cache_file(label, key)
    found = _read_if_there(target)
    if found is not None:
        return found
    with key_lock(target):  # chapters loading the same log at once parse it once
        found = _read_if_there(target)
        return found if found is not None else _build_and_store(target, label, build)


def _read_if_there(target: Path) -> pd.DataFrame | None:
    if target.is_file():
        try:
            return _read(target)
        except Exception:  # any read failure means a corrupt or foreign file: rebuild it
            pass
    return None


def _build_and_store(target: Path, label: str, build: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    df = build()
    tmp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
        os.close(fd)
        _write(df, tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
        for old in target.parent.glob(f"{label}-*.parquet"):  # keep one version per table
            if old != target:
                old.unlink(missing_ok=True)
    except OSError:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
    return df
