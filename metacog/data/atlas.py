"""Atlas: 33 LLMs x 1,500 stratified MMLU items with verbal confidence (0-100).

The raw CSVs overlap; deduplicating on (model, item_id) leaves 47,151 rows.
Each row becomes one tidy response with probe 'verbal_confidence' (the model
answered, then rated its confidence: a retrospective judgment).

Imputed confidences. Where the authors' parser found no confidence in a reply it wrote
50 (their ``docs/parsing_protocol.md``: "imputed as 50"). The pinned CSVs do not say
which 50s are imputed, but the authors' later audit of the raw replies
(``data/parsing_fallback_counts.csv`` at commit 41f004e3f8, columns ``conf_imputed``
and ``conf_genuine_50``) does, per model, and in every model the 50s are all of one
kind: :data:`IMPUTED_50` lists the five models whose every 50 was imputed (985 rows,
980 of them gpt-oss-120b's), :data:`EXPRESSED_50` the six whose every 50 was stated.
The loader marks the imputed rows ``parse_status = 'imputed'`` with confidence missing
(the answer and its correctness are kept), and refuses a file whose count of 50s no
longer matches the audit.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
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


#: The value the authors' parser wrote when it found no confidence (0-100 scale).
FALLBACK = 50
#: Models whose every confidence of exactly 50 is the parser's fallback, with how many the
#: authors' audit counted (parsing_fallback_counts.csv @ 41f004e3f8: conf_imputed; their
#: conf_genuine_50 is 0 for each).
IMPUTED_50 = {"openai/gpt-oss-120b": 980, "qwen/qwen3-next-80b-a3b-instruct": 2,
              "google/gemma-3-27b": 1, "google/gemini-2.5-flash": 1,
              "google/gemini-3.1-flash-lite-preview": 1}
#: Models whose 50s were all stated by the model (the same audit: conf_genuine_50, with
#: conf_imputed 0); kept as confidences.
EXPRESSED_50 = {"anthropic/claude-opus-4-7": 1, "deepseek-ai/deepseek-r1-0528": 1,
                "google/gemini-2.5-pro": 1, "google/gemini-3.1-pro-preview": 2,
                "openai/gpt-oss-20b": 4, "qwen/qwen3-next-80b-a3b-thinking": 1}

#: Bump when the table :func:`load_atlas` builds changes, so cached copies are rebuilt.
LOADER_VERSION = "atlas-2"  # 2: imputed 50s marked and set missing


def mark_imputed(models: pd.Series, confidence: pd.Series, *,
                 imputed: dict[str, int] | None = None,
                 expressed: dict[str, int] | None = None) -> pd.Series:
    """Boolean Series: True where ``confidence`` (0-100) is the parser's fallback 50 of a
    model in ``imputed`` (default :data:`IMPUTED_50`).

    Raises DataFileError when a model of ``imputed`` or ``expressed`` (default
    :data:`EXPRESSED_50`) does not have exactly its audited number of 50s, since the rule
    is only known to be exact for the audited files.
    """
    imputed = IMPUTED_50 if imputed is None else imputed
    expressed = EXPRESSED_50 if expressed is None else expressed
    models = models.astype(str)
    at_fallback = (confidence == FALLBACK).to_numpy()
    counts = models[at_fallback].value_counts()
    for model, n in {**imputed, **expressed}.items():
        if model in set(models) and int(counts.get(model, 0)) != n:
            raise DataFileError(
                f"atlas: model {model} has {int(counts.get(model, 0))} confidences of exactly "
                f"{FALLBACK}, but the authors' parse audit counted {n}; the files differ from the "
                f"audited ones, so imputed and stated 50s can no longer be told apart.")
    return pd.Series(at_fallback & models.isin(list(imputed)).to_numpy(), index=confidence.index)


def load_atlas(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The tidy Atlas table (see the module doc); ``attrs['duplicates_dropped']`` counts the
    overlapping rows dropped. Imputed confidences have ``parse_status == 'imputed'`` and a
    missing confidence. Cached as parquet in the user cache; the key covers the pinned
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
    model = raw["model"].map(canonical_model)
    imputed = mark_imputed(model, conf).to_numpy()
    out = pd.DataFrame({
        "model": model,
        "item_id": raw["item_id"],
        "benchmark": "atlas",
        "probe": "verbal_confidence",
        "sample": 0,
        "domain": raw["domain"],
        "subject": raw["subject"],
        "decision": raw["answer"],
        "confidence": (conf / 100.0).mask(imputed),
        "correct": correct,
        "parse_status": np.where(imputed, "imputed", "ok"),
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
