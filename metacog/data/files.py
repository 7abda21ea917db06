"""Readers that turn a malformed or truncated file into an error naming the file and line, and
how a source string names a file and a probe in it (:func:`split_probe`)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd


class DataFileError(ValueError):
    """A data file is malformed; the message names the file, the line and the fix."""


def read_csv(path: str | Path, *, required: tuple[str, ...] = (), notnull: tuple[str, ...] = (),
             **kwargs) -> pd.DataFrame:
    """Read a CSV as strings, checking the header, the field count per line and key columns.

    Line numbers in errors are 1-based lines of the file (the header is line 1).
    """
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except UnicodeDecodeError as exc:
        raise DataFileError(f"{path}: not UTF-8 text ({exc}); re-download or re-mirror the file.") from None
    except csv.Error as exc:
        raise DataFileError(f"{path}: malformed CSV ({exc}).") from None
    if not rows:
        raise DataFileError(f"{path}: the file is empty; re-download or re-mirror it.")
    header, body = rows[0], rows[1:]
    absent = [c for c in required if c not in header]
    if absent:
        raise DataFileError(f"{path}: line 1: header lacks column(s) {absent}; found {header}.")
    # csv.reader folds quoted newlines, so count physical lines for messages.
    line = 2
    for row in body:
        if len(row) != len(header) and row:
            raise DataFileError(
                f"{path}: line {line}: {len(row)} fields where the header has {len(header)}; "
                f"the file is truncated or malformed. Re-download or re-mirror it."
            )
        line += 1 + sum(field.count("\n") for field in row)
    body = [r for r in body if r]
    df = pd.DataFrame(body, columns=header, dtype="string")
    for col in notnull:
        empty = df[col].isna() | (df[col].str.strip() == "")
        if empty.any():
            i = int(empty.to_numpy().nonzero()[0][0])
            raise DataFileError(f"{path}: data row {i + 1} (near line {i + 2}): column {col!r} is empty.")
    return df


def jsonl_records(path: str | Path, *, error: type[Exception] = None, hint: str = "",
                  encoding: str = "utf-8-sig") -> list[tuple[int, dict]]:
    """The book's one JSON-lines reader: (line number, object) for every non-blank line.

    A line that is not valid JSON, or not a JSON object, raises ``error`` (default
    :class:`DataFileError`) naming the file and the line, followed by ``hint`` (what to do).
    A byte-order mark is accepted.
    """
    error = error or DataFileError
    path = Path(path)
    out = []
    with path.open(encoding=encoding) as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{path}: line {n} is not valid JSON ({exc.msg} at column {exc.colno})"
                            f"{'; ' + hint if hint else '.'}") from None
            if not isinstance(rec, dict):
                raise error(f"{path}: line {n} is a JSON {type(rec).__name__}, not an object"
                            f"{'; ' + hint if hint else '.'}")
            out.append((n, rec))
    return out


def read_jsonl(path: str | Path) -> list[dict]:
    """Read JSON lines; a bad line raises DataFileError naming it."""
    return [rec for _, rec in jsonl_records(path, hint="the file is truncated or malformed. "
                                                         "Re-download or re-mirror it.")]


def read_json(path: str | Path):
    """Read a JSON document; a parse error raises DataFileError naming the line."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataFileError(
            f"{path}: line {exc.lineno}: not valid JSON ({exc.msg}); the file is truncated or "
            f"malformed. Re-download or re-mirror it."
        ) from None


def csv_separator(path: Path) -> str:
    """',' unless the header line has no comma and is split by ';' or tabs (as spreadsheets
    in many locales save CSV), then that separator."""
    for encoding in ("utf-8-sig", "latin-1"):
        try:
            with open(path, encoding=encoding, newline="") as f:
                header = f.readline()
            break
        except UnicodeDecodeError:
            continue
    if "," in header:
        return ","
    counts = {sep: header.count(sep) for sep in (";", "\t")}
    best = max(counts, key=counts.get)
    return best if counts[best] else ","


def csv_record_lines(path: Path, sep: str) -> np.ndarray | None:
    """The physical line (1-based) each data record starts on; None if it cannot be matched."""
    starts, prev = [], 0
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f, delimiter=sep)
        for rec in reader:
            if rec:  # blank lines are skipped, as pandas does
                starts.append(prev + 1)
            prev = reader.line_num
    return np.asarray(starts[1:]) if starts else None  # the first record is the header


def split_probe(source: str) -> tuple[str, str | None]:
    """(what is loaded, the probe kept) as :func:`metacog.data.load_responses` reads a source string: a file
    that exists is whole, 'file.csv:probe' keeps one probe of an existing file, and a name keeps
    the probe after its first colon ('battery:keep_withdraw').

    >>> split_probe("battery:keep_withdraw"), split_probe("atlas")
    (('battery', 'keep_withdraw'), ('atlas', None))
    """
    if os.path.isfile(source):
        return source, None
    path, _, probe = source.rpartition(":")
    if path and probe and os.sep not in probe and os.path.isfile(path):
        return path, probe
    name, _, probe = source.partition(":")
    return name, probe or None
