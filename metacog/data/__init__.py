"""The data layer: find every external dataset, check it, and load it tidily.

Resolution order for a dataset's files (:func:`locate`):

1. an explicit ``path=`` (a folder laid out like the dataset's mirror folder);
2. the mirror folder ``$METACOG_DATA_MIRROR`` (laid out like ``../shared/data``);
3. the user cache (``$METACOG_CACHE_DIR`` or ``~/.cache/metacog``)/data/<name>;
4. a download from the pinned public URL into the user cache, checked by sha256.

The public entry point for model responses is :func:`load` ("atlas", "battery"),
which returns the tidy response table of :mod:`metacog.tidy.schema`.
"""

from __future__ import annotations

from metacog.data.files import DataFileError, read_csv, read_json, read_jsonl
from metacog.data.fetch import DatasetNotFoundError, cache_dir, locate, manifest
from metacog.data.logs import LOADERS, load
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
