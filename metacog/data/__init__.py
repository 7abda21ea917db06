"""The data layer: find every external dataset, check it, and load it tidily.

Resolution order for a dataset's files (:func:`locate`):

1. an explicit ``path=`` (a folder laid out like the dataset's mirror folder);
2. the mirror folder ``$METACOG_DATA_MIRROR`` (laid out like ``../shared/data``);
3. the user cache (``$METACOG_CACHE_DIR`` or ``~/.cache/metacog``)/data/<name>;
4. a download from the pinned public URL into the user cache, checked by sha256.

The public entry point for model responses is :func:`load` ("atlas", "battery"),
which returns the tidy response table of :mod:`metacog.schema`.
"""

from __future__ import annotations

import os
from pathlib import Path

from metacog.data.files import DataFileError, read_csv, read_json, read_jsonl
from metacog.data.fetch import DatasetNotFoundError, cache_dir, locate, manifest
from metacog.data.registry import DATASETS, Dataset
from metacog.data.responses import ResponseError, load_responses, response_notes

__all__ = [
    "DATASETS",
    "Dataset",
    "DataFileError",
    "DatasetNotFoundError",
    "ResponseError",
    "cache_dir",
    "load",
    "load_responses",
    "locate",
    "manifest",
    "read_csv",
    "read_json",
    "read_jsonl",
    "response_notes",
    "sources",
]

LOADERS = ("atlas", "battery", "spar", "calibration_study")


def load(name: str, *, path: str | os.PathLike | None = None):
    """The tidy response table of a multi-model confidence log.

    ``name`` is "atlas" (33 LLMs x 1,500 MMLU items, verbal confidence 0-100
    rescaled to [0, 1]) or "battery" (20 LLMs x 524 items, native KEEP/WITHDRAW
    and BET/NO_BET judgments as 1/0), "spar" (SimpleMC: answer-or-pass before
    answering, first- and third-person confidence, phase-1 answers) or
    "calibration_study" (84 LLMs x MMLU-Pro, verbal and logit confidence after
    answering). ``path`` overrides where the files are.
    """
    if name == "atlas":
        from metacog.data.atlas import load_atlas

        return load_atlas(path)
    if name == "battery":
        from metacog.data.battery import load_battery

        return load_battery(path)
    if name == "spar":
        from metacog.data.spar import load_spar

        return load_spar(path)
    if name == "calibration_study":
        from metacog.data.calibration_study import load_calibration_study

        return load_calibration_study(path)
    raise ValueError(
        f"metacog.data.load: unknown response log {name!r}; choose one of {LOADERS}. "
        f"Benchmarks (items, not responses) load through metacog.benchmarks.load_items."
    )


def sources():
    """One row per external dataset: title, licence, citation, pinned commit, file count."""
    import pandas as pd

    rows = []
    for d in DATASETS.values():
        files = manifest(d.name) if not d.package else {}
        rows.append({
            "dataset": d.name, "title": d.title, "licence": d.licence, "citation": d.citation,
            "source": d.package and f"PyPI {d.package}" or f"{d.repo}@{d.commit[:10]}",
            "files": len(files),
            "downloadable": bool(files) and all(f["upstream"] for f in files.values()),
        })
    return pd.DataFrame(rows)
