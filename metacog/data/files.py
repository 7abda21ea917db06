"""Readers that turn a malformed or truncated file into an error naming the file and line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

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


def read_jsonl(path: str | Path) -> list[dict]:
    """Read JSON lines; a bad line raises DataFileError naming it."""
    path = Path(path)
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataFileError(
                    f"{path}: line {n}: not valid JSON ({exc.msg} at column {exc.colno}); "
                    f"the file is truncated or malformed. Re-download or re-mirror it."
                ) from None
    return out


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
