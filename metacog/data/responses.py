"""One entry point for model responses: a public log, a recorded run or a user's own file.

:func:`load_responses` returns the tidy table of :mod:`metacog.tidy.schema` whatever the
source is, checked: bad input raises :class:`ResponseError`, whose message names the
file, the column, the first offending lines and the fix. Things worth knowing that are
not errors (a benchmark on which every model is right on the same items, a model whose
confidence never varies, probe names the book does not know) come back as plain
sentences in ``df.attrs["notes"]``; :func:`response_notes` gives them as a table.

Line numbers are the file's own, counted from 1: in a CSV the header is line 1 and a
record's line is the physical line it starts on (quoted values spanning lines are
counted correctly); in JSON lines the physical line; in Parquet "row N", counted from 1.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import numpy as np
import pandas as pd

from metacog.data.files import csv_record_lines, csv_separator, jsonl_records, split_probe
from metacog.tidy import schema
__all__ = ["ResponseError", "load_responses", "response_notes", "source_label", "source_name"]

SUFFIXES = {".csv": "csv", ".tsv": "csv", ".parquet": "parquet", ".pq": "parquet",
            ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
LABELS = {"atlas": "Atlas", "battery": "Battery"}
KEY = ["model", "item_id", "probe", "sample"]
_TRUE = {"1", "1.0", "true", "t", "yes", "y"}
_FALSE = {"0", "0.0", "false", "f", "no", "n"}


class ResponseError(ValueError):
    """A response table that cannot be used as it is; the message says where and how to fix it."""


# ---------------------------------------------------------------------------
# where a row came from


class _Where:
    """Turns row positions of the loaded table into the file's own line labels."""

    def __init__(self, name: str, kind: str, path: Path | None = None, sep: str = ","):
        self.name, self.kind, self.path, self.sep = name, kind, path, sep
        self.lines: np.ndarray | None = None  # physical line of each record (CSV: read lazily)
        self.rows: np.ndarray | None = None  # record of each row kept (None: all, in order)

    def label(self, pos: int) -> str:
        if self.rows is not None:
            pos = int(self.rows[pos])
        if self.kind == "csv" and self.lines is None:
            self.lines = csv_record_lines(self.path, self.sep)
        if self.lines is not None and pos < len(self.lines):
            return f"line {int(self.lines[pos])}"
        return f"row {pos + 1}"

    def keep(self, mask: np.ndarray) -> None:
        """Rows were filtered by ``mask``: later positions refer to the rows kept."""
        kept = np.flatnonzero(mask)
        self.rows = kept if self.rows is None else self.rows[kept]

    def show(self, mask, values: pd.Series | None = None, k: int = 3) -> str:
        """'line 4 ('abc'), line 9 ('x') ... (12 rows in all)' for the first ``k`` True positions."""
        pos = np.flatnonzero(np.asarray(mask))
        parts = [self.label(int(p)) + (f" ({_plain(values.iloc[p])!r})" if values is not None else "")
                 for p in pos[:k]]
        more = f" ... ({len(pos)} rows in all)" if len(pos) > k else ""
        return ", ".join(parts) + more


def _plain(value):
    """A NumPy scalar as the Python value it holds (so messages show 1.3, not np.float64(1.3))."""
    return value.item() if isinstance(value, np.generic) else value


# ---------------------------------------------------------------------------
# reading


def source_label(source) -> str:
    """A short human name for a source: 'Atlas', 'Battery', a run's name, a file's stem."""
    for path in (source, str(source).rpartition(":")[0]):  # a file, or 'file.csv:probe'
        if isinstance(path, os.PathLike) or (isinstance(path, str) and path and os.path.isfile(path)):
            return Path(path).stem
    name = str(source).split(":", 1)[0]
    return LABELS.get(name, name)


def source_name(source) -> str:
    """A source as a page names it: a file by its file name only (never the folders of the
    user's machine), anything else (a log, a run, 'run:probe') as given."""
    s = os.fspath(source) if isinstance(source, os.PathLike) else str(source)
    if isinstance(source, os.PathLike) or "/" in s or "\\" in s or os.path.isfile(s):
        return Path(s).name
    return s


def _read_file(path: Path) -> tuple[pd.DataFrame, _Where]:
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ResponseError(
            f"{path}: unknown file type {path.suffix or '(no extension)'!r}; response files must "
            f"end in one of {sorted(SUFFIXES)} (CSV, Parquet or JSON lines).")
    if path.stat().st_size == 0:
        raise ResponseError(f"{path}: the file is empty; it needs a header and one row per "
                            f"model x item x probe (columns {list(schema.REQUIRED)}).")
    sep = "\t" if path.suffix.lower() == ".tsv" else csv_separator(path) if kind == "csv" else ","
    where = _Where(str(path), kind, path, sep)
    if kind == "csv":
        try:
            df = pd.read_csv(path, sep=sep, dtype=str, encoding="utf-8-sig")
        except (pd.errors.ParserError, UnicodeDecodeError) as e:
            raise ResponseError(f"{path}: not a readable CSV ({e}); save it as UTF-8 CSV with "
                                "one header line.") from None
        except pd.errors.EmptyDataError:
            raise ResponseError(f"{path}: the file is empty (no header line).") from None
    elif kind == "parquet":
        df = pd.read_parquet(path)
    else:
        df, where.lines = _read_jsonl(path)
    return df, where


def _read_jsonl(path: Path) -> tuple[pd.DataFrame, np.ndarray]:
    pairs = jsonl_records(path, error=ResponseError, hint="JSON lines hold one object per line, "
                          "e.g. {\"model\": \"m\", \"item_id\": \"1\", ...}.")
    return pd.DataFrame.from_records([r for _, r in pairs]), np.asarray([n for n, _ in pairs])


def _registered(source: str) -> tuple[pd.DataFrame, _Where] | None:
    """A public log through :data:`metacog.data.logs.LOADERS`, or a recorded run; None if neither."""
    from metacog.data import logs, recorded

    if source in tuple(logs.LOADERS):
        return logs.load(source), _Where(source, "table")
    runs_file = recorded.RESPONSES / "runs.yml"
    if runs_file.exists() and source in recorded.runs(runs_file):
        try:
            table = recorded.load(source)
        except ValueError as exc:  # a truncated or foreign recording: say which and how to restore it
            raise ResponseError(str(exc)) from None
        return table, _Where(f"recorded run {source!r}", "table")
    return None


def _resolve(source) -> tuple[pd.DataFrame, _Where, str | None]:
    if isinstance(source, os.PathLike):
        return (*_read_file(Path(source)), None)
    if not isinstance(source, str) or not source:
        raise ResponseError(f"load_responses: source must be a non-empty string or a path, got {source!r}.")
    name, suffix_probe = split_probe(source)
    if os.path.isfile(name):
        return (*_read_file(Path(name)), suffix_probe)
    found = _registered(name)
    if found is not None:
        return (*found, suffix_probe)
    from metacog.data import logs, recorded

    runs_file = recorded.RESPONSES / "runs.yml"
    declared = sorted(recorded.runs(runs_file)) if runs_file.exists() else []
    if Path(source).suffix or os.sep in source:
        raise ResponseError(f"{source}: no such file (working directory {os.getcwd()}).")
    raise ResponseError(
        f"load_responses: unknown source {source!r}. Use a registered log {list(logs.LOADERS)}, "
        f"a recorded run {declared} (either optionally as 'name:probe'), or the path of a "
        f"CSV, Parquet or JSON-lines file (also as 'path:probe').")


# ---------------------------------------------------------------------------
# checking


def _rename(df: pd.DataFrame, columns: dict | None, where: _Where) -> pd.DataFrame:
    if not columns:
        return df
    absent = [c for c in columns if c not in df.columns]
    if absent:
        raise ResponseError(f"{where.name}: columns= renames {absent}, which the file does not have; "
                            f"its columns are {list(df.columns)}.")
    targets = list(columns.values())
    clash = sorted({t for t in targets if targets.count(t) > 1 or (t in df.columns and t not in columns)})
    if clash:
        raise ResponseError(f"{where.name}: columns= would give two columns the name(s) {clash}; "
                            "rename only one column to each schema name.")
    return df.rename(columns=columns)


def _equals(col: pd.Series, value: str) -> np.ndarray:
    """Rows of ``col`` whose text equals ``value`` (missing: False). A categorical column (the
    large public logs) is compared through its categories, not row by row."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy()
        match = np.append(np.asarray(col.cat.categories.astype(str) == value), False)
        return match[np.where(codes < 0, len(match) - 1, codes)]
    return (col.astype("string") == value).fillna(False).to_numpy()


def _fill_and_narrow(df, where, probe, benchmark, suffix_probe):
    for col, value in (("probe", probe), ("benchmark", benchmark)):
        if value is not None and col not in df.columns:
            df = df.assign(**{col: value})
    wanted = suffix_probe or probe
    if wanted is not None and "probe" in df.columns:
        keep = _equals(df["probe"], wanted)
        if not keep.any():
            raise ResponseError(f"{where.name}: no rows with probe {wanted!r}; its probes are "
                                f"{sorted(df['probe'].dropna().astype(str).unique())}.")
        df = df[keep]
        where.keep(keep)
    return df.reset_index(drop=True)


def _check_required(df, where):
    missing = [c for c in schema.REQUIRED if c not in df.columns]
    if not missing:
        return
    guesses = {m: difflib.get_close_matches(m, [str(c) for c in df.columns], n=1, cutoff=0.5) for m in missing}
    example = ", ".join(f"{g[0]!r}: {m!r}" for m, g in guesses.items() if g) or "'your_name': 'model'"
    fill = " (or probe='...' when the whole file is one probe)" if "probe" in missing else ""
    raise ResponseError(
        f"{where.name}: missing required column(s) {missing}; the file has {list(df.columns)}. "
        f"Rename those columns in the file (from Python: load_responses(..., "
        f"columns={{{example}}}){fill}). Required: {list(schema.REQUIRED)}.")


def _check_keys(df, where):
    for col in ("model", "item_id", "probe"):
        empty = df[col].isna().to_numpy() | (df[col].astype("string").str.strip() == "").fillna(True).to_numpy()
        if empty.any():
            raise ResponseError(f"{where.name}: column {col!r} is empty on {where.show(empty)}; every "
                                f"row needs a {col}.")
        df[col] = df[col].astype("string").str.strip()


def _check_numbers(df, where):
    for col, (dtype, _) in schema.COLUMNS.items():
        if col not in df.columns or dtype not in ("float64", "Int64") or col == "correct":
            continue
        raw = df[col]
        if raw.dtype == object or pd.api.types.is_string_dtype(raw):
            raw = raw.astype("string").str.strip().replace("", pd.NA)
        num = pd.to_numeric(raw, errors="coerce")
        bad = (num.isna() & raw.notna()).to_numpy()
        if bad.any():
            raise ResponseError(f"{where.name}: column {col!r} must hold numbers; found text on "
                                f"{where.show(bad, raw)}. Fix those values or leave them empty.")
        if dtype == "Int64" and (num.dropna() % 1 != 0).any():
            frac = (num.notna() & (num % 1 != 0)).to_numpy()
            raise ResponseError(f"{where.name}: column {col!r} must hold whole numbers; "
                                f"found {where.show(frac, num)}.")
        df[col] = num.astype(float)
    for col in ("confidence", "p_yes"):
        if col not in df.columns:
            continue
        v = df[col]
        out = (v.notna() & ~v.between(0, 1)).to_numpy()
        if out.any():
            hint = (" It looks like a 0\u2013100 scale: divide by 100 (the schema's confidence is in [0, 1])."
                    if v.dropna().between(0, 100).all() and (v.dropna() > 1).mean() >= 0.5 else
                    " Confidence is a probability in [0, 1].")
            raise ResponseError(f"{where.name}: column {col!r} must lie in [0, 1]; outside it on "
                                f"{where.show(out, v)}.{hint}")


def _check_correct(df, where):
    raw = df["correct"]
    if raw.dtype == bool or str(raw.dtype) == "boolean":
        df["correct"] = raw.astype("Float64").astype(float)
        return
    text = raw.astype("string").str.strip().str.lower().replace("", pd.NA)
    mapped = pd.Series(np.nan, index=raw.index)
    mapped[text.isin(_TRUE).fillna(False).to_numpy()] = 1.0
    mapped[text.isin(_FALSE).fillna(False).to_numpy()] = 0.0
    bad = (mapped.isna() & text.notna()).to_numpy()
    if bad.any():
        raise ResponseError(
            f"{where.name}: column 'correct' must be 0 or 1 (true/false and yes/no are accepted; "
            f"empty = unknown); found {where.show(bad, raw)}. Partial credit must be made binary "
            f"first, e.g. correct = (score >= 0.5).")
    df["correct"] = mapped.to_numpy()


def _check_rows(df, where):
    if "sample" not in df.columns:
        df["sample"] = 0.0
    df["sample"] = df["sample"].fillna(0.0)
    dup = df.duplicated(KEY, keep=False).to_numpy()
    if dup.any():
        groups = df[dup].groupby(KEY, sort=False).size()
        first = df[dup].drop_duplicates(KEY).head(3)
        ex = "; ".join(
            f"model {r.model!r} item {r.item_id!r} probe {r.probe!r} sample {int(r.sample)} on "
            f"{where.show(((df[KEY] == [r.model, r.item_id, r.probe, r.sample]).all(axis=1)).to_numpy())}"
            for r in first.itertuples())
        raise ResponseError(
            f"{where.name}: {len(groups)} duplicate (model, item_id, probe, sample) key(s) over "
            f"{int(dup.sum())} rows, e.g. {ex}. Keep one row per key, or number repeated samples "
            f"in a 'sample' column (0, 1, 2, ...).")
    items = df.groupby("model", sort=False)["item_id"].nunique()
    few = items[items < 2]
    if len(few):
        m = few.index[0]
        raise ResponseError(
            f"{where.name}: model {m!r} has only {int(few.iloc[0])} item (on "
            f"{where.show((df['model'] == m).to_numpy())}); a model needs at least two items. "
            f"Check the model column for typos, or remove the model.")


def _notes(df: pd.DataFrame, *, user_file: bool) -> list[str]:
    """Plain sentences about things that are not errors (vectorised: millions of rows are fine)."""
    notes = []
    if user_file:
        unknown = sorted(set(df["probe"].dropna()) - set(schema.PROBES))
        if unknown:
            named = ", ".join(repr(str(x)) for x in unknown)
            these = "is not among the book's probes; it is" if len(unknown) == 1 else \
                "are not among the book's probes; they are"
            notes.append(f"Probe{'' if len(unknown) == 1 else 's'} {named} {these} kept as given.")
    first = df[(df["sample"].fillna(0) == 0).to_numpy()]
    codes = {c: pd.factorize(first[c]) for c in ("benchmark", "probe", "model", "item_id")}  # NA -> -1
    keys = pd.DataFrame({c: v[0] for c, v in codes.items()})
    y = first["correct"].to_numpy(dtype=float)
    has = ~np.isnan(y)
    g = keys[has].assign(y=y[has]).groupby(["benchmark", "probe", "item_id"])["y"].agg(["min", "max", "size"])
    g = g[g["size"] >= 2].reset_index()
    for b, part in g.groupby("benchmark"):
        if (part["min"] == part["max"]).all():
            n_models = keys.loc[has & (keys["benchmark"] == b).to_numpy(), "model"].nunique()
            name = codes["benchmark"][1][b] if b >= 0 else "(no benchmark)"
            notes.append(f"Benchmark {name!r}: every model is right or wrong on the "
                         f"same items (correctness identical across {n_models} models), so there is no "
                         "difference in performance between models to explain.")
    c = first["confidence"].to_numpy(dtype=float)
    has = ~np.isnan(c)
    spread = keys[has].assign(c=c[has]).groupby(["probe", "model"])["c"].agg(["min", "max"])
    for (p, m), row in spread[spread["min"] == spread["max"]].iterrows():
        notes.append(f"Model {codes['model'][1][m]!r} gives the same confidence ({row['min']:g}) on every "
                     f"item of probe {codes['probe'][1][p]!r}: that judgment carries no information "
                     "about items.")
    return notes


def response_notes(df: pd.DataFrame) -> pd.DataFrame:
    """The notes :func:`load_responses` attached to ``df`` (column ``note``), one row each."""
    return pd.DataFrame({"note": list(df.attrs.get("notes", []))}, dtype=object)


def load_responses(source, *, columns: dict | None = None, probe: str | None = None,
                   benchmark: str | None = None) -> pd.DataFrame:
    """The tidy response table (:mod:`metacog.tidy.schema`) of ``source``, checked.

    ``source`` is a registered public log (any name :func:`metacog.data.load` takes,
    e.g. "atlas"), a recorded run of ``data/responses/runs.yml`` (e.g. "squad"), either
    optionally narrowed to one probe as "name:probe" ("battery:keep_withdraw"), or the
    path of a CSV / TSV, Parquet or JSON-lines file in the tidy layout (an existing file
    is a path even when its name holds ':'). A file needs columns ``model, item_id,
    probe, confidence, correct``; any other schema column is optional and kept.
    ``columns`` renames a file's columns ({"llm": "model"}); ``probe`` / ``benchmark``
    fill the column when the file lacks it, and ``probe`` keeps only that probe when the
    column exists. ``correct`` accepts 0/1, booleans and true/false/yes/no; ``sample``
    defaults to 0.

    Raises :class:`ResponseError` naming the file, the column, the first offending lines
    and the fix. Registered logs and recorded runs were checked by their loaders (they
    call :func:`metacog.tidy.schema.conform`) and are not checked again unless ``columns``
    renames theirs. Returns the table with ``attrs["notes"]`` (plain sentences, see
    :func:`response_notes`), ``attrs["source"]`` and ``attrs["label"]``.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "mine.csv"
    >>> pd.DataFrame({"model": ["m1", "m1", "m2", "m2"], "item_id": ["q1", "q2", "q1", "q2"],
    ...               "probe": "verbal", "confidence": [0.9, 0.4, 0.7, 0.6],
    ...               "correct": ["1", "0", "true", "yes"]}).to_csv(path, index=False)
    >>> df = load_responses(str(path))
    >>> df["correct"].tolist(), df["confidence"].tolist()
    ([1.0, 0.0, 1.0, 1.0], [0.9, 0.4, 0.7, 0.6])
    >>> df.attrs["label"]
    'mine'
    """
    raw, where, suffix_probe = _resolve(source)
    df = _rename(raw, columns, where)
    df = _fill_and_narrow(df, where, probe, benchmark, suffix_probe)
    user_file = where.kind != "table"
    if user_file or columns:
        df = _checked(df, where)
    df.attrs = {"notes": _notes(df, user_file=user_file), "source": str(source),
                "label": source_label(source)}
    return df


def _checked(df: pd.DataFrame, where: _Where) -> pd.DataFrame:
    """Every check of :func:`load_responses`, then the schema's own (:func:`metacog.tidy.schema.conform`)."""
    _check_required(df, where)
    if len(df) == 0:
        raise ResponseError(f"{where.name}: the table has a header but no rows.")
    df = df.copy()
    _check_keys(df, where)
    _check_numbers(df, where)
    _check_correct(df, where)
    _check_rows(df, where)
    try:
        return schema.conform(df, source=where.name)
    except ValueError as e:
        raise ResponseError(str(e)) from None
