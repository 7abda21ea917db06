"""Finding and reading the benchmark files, with errors that name the file and line.

Every reader here turns a parse failure into a ValueError saying which file,
which line (where it has lines) and what to do, instead of a raw json/csv
traceback. Parsed files are cached per process (they are read-only mirrors).
"""

from __future__ import annotations

import csv
import functools
import json
from pathlib import Path
from typing import Any


from metacog.data import locate, manifest
from metacog.data.files import DataFileError, jsonl_records  # one error class for every bad data file


@functools.lru_cache(maxsize=64)
def dataset_dir(name: str) -> Path:
    """The folder holding dataset ``name`` (a key of metacog.data.registry.DATASETS), found by
    :func:`metacog.data.locate` (mirror, user cache, or a checked download)."""
    return Path(locate(name))


def dataset_file(name: str, filename: str) -> Path:
    """One file of a dataset, with a clear error when it is missing."""
    path = dataset_dir(name) / filename
    if not path.is_file():
        raise FileNotFoundError(f"Dataset {name!r}: expected file {path} is missing.")
    return path


@functools.lru_cache(maxsize=32)
def read_jsonl(path: str | Path) -> tuple[tuple[int, dict[str, Any]], ...]:
    """(line number, row) pairs of a JSON-lines file (blank lines skipped); rows must be objects."""
    return tuple(jsonl_records(path, encoding="utf-8", hint="each line must hold one JSON object. "
                                                           "Re-fetch the file."))


@functools.lru_cache(maxsize=32)
def read_json(path: str | Path) -> Any:
    """A whole JSON document."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFileError(
            f"{path}, line {exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno}). "
            "Re-fetch the file."
        ) from None


@functools.lru_cache(maxsize=512)
def read_table(path: str | Path, delimiter: str = ",") -> tuple[tuple[int, dict[str, str]], ...]:
    """(line number, row) pairs of a CSV/TSV file with a header line; rows are dicts of strings.

    Raises a ValueError naming the line when a row has more or fewer fields
    than the header.
    """
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            raise DataFileError(f"{path}: the file is empty; expected a header line.") from None
        except csv.Error as exc:
            raise DataFileError(f"{path}, line 1: cannot parse the header ({exc}).") from None
        rows = []
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise DataFileError(f"{path}, line {reader.line_num}: cannot parse ({exc}).") from None
            if not fields:
                continue
            if len(fields) != len(header):
                raise DataFileError(
                    f"{path}, line {reader.line_num}: {len(fields)} fields but the header has "
                    f"{len(header)} ({header}). Fix the quoting or re-fetch the file."
                )
            rows.append((reader.line_num, dict(zip(header, fields))))
    return tuple(rows)


def require(row: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    """Raise a ValueError naming ``where`` when ``row`` lacks any of ``keys``."""
    missing = [k for k in keys if k not in row]
    if missing:
        raise DataFileError(f"{where}: missing field(s) {missing}; expected {list(keys)}.")


@functools.lru_cache(maxsize=64)
def check_sizes(name: str) -> None:
    """After parsing: raise DataFileError if a present file's size differs from the pinned one.

    Catches a file cut at a line boundary (which parses cleanly). Files the
    manifest lists but the folder lacks are left to the loaders.
    """
    folder = dataset_dir(name)
    for rel, info in manifest(name).items():
        path = folder / rel
        if path.is_file() and path.stat().st_size != info["size"]:
            raise DataFileError(
                f"{path}: {path.stat().st_size} bytes where the pinned file has {info['size']}; it is "
                "truncated or a different version. Re-mirror or re-download it."
            )
