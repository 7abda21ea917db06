"""Atlas: 33 LLMs x 1,500 stratified MMLU items with verbal confidence (0-100).

The raw CSVs overlap; deduplicating on (model, item_id) leaves 47,151 rows.
Each row becomes one tidy response with probe 'verbal_confidence' (the model
answered, then rated its confidence: a retrospective judgment).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from metacog.tidy import schema
from metacog.data import tidycache
from metacog.data.files import DataFileError, read_csv
from metacog.data.fetch import check_sizes, locate
from metacog.data.registry import DATASETS

COLUMNS = ("item_id", "subject", "domain", "question", "answer", "correct_answer",
           "is_correct", "confidence", "model")


def canonical_model(raw: str) -> str:
    """'anthropic/claude-opus-4-6@default' -> 'anthropic/claude-opus-4-6'."""
    return raw.split("@", 1)[0]


#: Bump when the table :func:`load_atlas` builds changes, so cached copies are rebuilt.
LOADER_VERSION = "atlas-1"


def load_atlas(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The tidy Atlas table (see the module doc); ``attrs['duplicates_dropped']`` counts the
    overlapping rows dropped. Cached as parquet in the user cache; the key covers the pinned
    sha256, size and modification time of every file and the names of the CSVs found."""
    folder = locate("atlas", path=path)
    key = tidycache.cache_key(("atlas",), (folder,), LOADER_VERSION + ":" + tidycache.listing(folder, "raw/*.csv"))
    return tidycache.cached("atlas", key, lambda: _build(folder))


def _build(folder: Path) -> pd.DataFrame:
    frames = []
    for f in sorted((folder / "raw").glob("*.csv")):
        frames.append(read_csv(f, required=COLUMNS, notnull=("item_id", "model", "is_correct")))
    raw = pd.concat(frames, ignore_index=True)
    before = len(raw)
    raw = raw.drop_duplicates(subset=["model", "item_id"], keep="first")
    conf = pd.to_numeric(raw["confidence"], errors="coerce")
    bad = conf.isna() & raw["confidence"].notna() | ~conf.between(0, 100) & conf.notna()
    if bad.any():
        r = raw[bad.to_numpy()].iloc[0]
        raise DataFileError(f"atlas: model {r['model']} item {r['item_id']}: confidence "
                            f"{r['confidence']!r} is not a number in 0-100.")
    correct = raw["is_correct"].map({"True": 1.0, "False": 0.0})
    if correct.isna().any():
        r = raw[correct.isna().to_numpy()].iloc[0]
        raise DataFileError(f"atlas: model {r['model']} item {r['item_id']}: is_correct "
                            f"{r['is_correct']!r} is not True/False.")
    out = pd.DataFrame({
        "model": raw["model"].map(canonical_model),
        "item_id": raw["item_id"],
        "benchmark": "atlas",
        "probe": "verbal_confidence",
        "sample": 0,
        "domain": raw["domain"],
        "subject": raw["subject"],
        "decision": raw["answer"],
        "confidence": conf / 100.0,
        "correct": correct,
        "parse_status": "ok",
        "raw_text": pd.NA,
        "backend": "log:atlas",
        "backend_version": DATASETS["atlas"].commit[:12],
        "question": raw["question"],
        "correct_answer": raw["correct_answer"],
    })
    check_sizes("atlas", folder)
    out = tidycache.categorize(schema.conform(out.reset_index(drop=True), source="atlas"))
    out.attrs["duplicates_dropped"] = before - len(out)
    return out
