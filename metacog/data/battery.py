"""Battery: 20 LLMs x 524 items in six tracks, with native binary judgments.

Tracks T1-T5 ask, after the answer, KEEP or WITHDRAW and BET or NO_BET; the
prospective track (T6, 72 items) also records a path choice made *before*
answering (ANSWER_DIRECTLY / REQUEST_HINT / DECLINE). Each judgment becomes
one tidy row: KEEP/BET/ANSWER_DIRECTLY -> confidence 1, the others -> 0.

In T6 a model that chose DECLINE gave no answer (the item is scored wrong), yet the files
still record a KEEP or BET for it. That is not a judgment of an answer, so those two rows
keep their recorded ``decision`` but get no confidence (``parse_status == 'no_answer'``):
every analysis leaves them out, and the data page counts them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from metacog.tidy import schema
from metacog.data import tidycache
from metacog.data.files import DataFileError, read_csv
from metacog.data.fetch import check_sizes, locate
from metacog.data.registry import DATASETS

#: Folder -> short track id.
TRACKS = {
    "Overhypothesis": "t1_overhypothesis",
    "Meta Cog": "t2_metacog",
    "Social Cognition": "t3_social",
    "Attention": "t4_attention",
    "Executive": "t5_executive",
    "prospective": "t6_prospective",
}

#: Every spelling of a model in the file names (suffix removed, lower-cased) -> canonical name.
SPELLINGS = {
    "claude haiku 4.5": "Claude Haiku 4.5", "haiku": "Claude Haiku 4.5",
    "claude opus 4.6": "Claude Opus 4.6", "opus 4.6": "Claude Opus 4.6",
    "claude sonnet 4.6": "Claude Sonnet 4.6",
    "deepseek v3.2": "DeepSeek V3.2",
    "deepseek-r1": "DeepSeek R1", "r1": "DeepSeek R1",
    "glm-5": "GLM-5", "glm 5": "GLM-5",
    "gpt-5.4": "GPT-5.4", "gpt-5.4 mini": "GPT-5.4 mini", "gpt-5.4 nano": "GPT-5.4 nano",
    "gemini 2.5 flash": "Gemini 2.5 Flash", "gemini 2.5 pro": "Gemini 2.5 Pro",
    "gemini 3 flash preview": "Gemini 3 Flash", "gemini flash 3 preview": "Gemini 3 Flash",
    "gemini 3.1 pro preview": "Gemini 3.1 Pro",
    "gemma 3 12b": "Gemma 3 12B", "gemma 3 1b": "Gemma 3 1B", "gemma 3 27b": "Gemma 3 27B",
    "qwen 3 235b a22b instruct": "Qwen 235B",
    "qwen 3 coder 480b": "Qwen Coder 480B",
    "qwen 3 next 80b instruct": "Qwen 80B Inst",
    "qwen 3 next 80b thinking": "Qwen 80B Think",
}
_SUFFIX = re.compile(
    r"\s*(prospective_regulation_results|social ?cog|soc cog|overhyp|exec|attention|metacog)\s*$",
    re.IGNORECASE,
)

JUDGMENTS = {
    "keep_withdraw": {"KEEP": 1.0, "WITHDRAW": 0.0},
    "bet_nobet": {"BET": 1.0, "NO_BET": 0.0},
    "path_choice": {"ANSWER_DIRECTLY": 1.0, "REQUEST_HINT": 0.0, "DECLINE": 0.0},
}

#: The judgments of an answer already given (a T6 item the model declined has none).
AFTER_ANSWER = ("keep_withdraw", "bet_nobet")
#: parse_status of a KEEP/BET recorded for an item the model declined to answer.
NO_ANSWER = "no_answer"


def canonical_model(filename: str) -> str:
    """Map a Battery file name such as 'GLM 5 Social Cog.csv' to its canonical model name."""
    stem = filename[:-4] if filename.lower().endswith(".csv") else filename
    key = _SUFFIX.sub("", stem).strip().lower()
    if key not in SPELLINGS:
        raise DataFileError(f"battery: file {filename!r}: model spelling {key!r} is not in "
                            f"metacog.data.battery.SPELLINGS; add it there.")
    return SPELLINGS[key]


#: Bump when the table :func:`load_battery` builds changes, so cached copies are rebuilt.
LOADER_VERSION = "battery-2"


def _csv_files(root: Path) -> list[tuple[str, Path]]:
    """(track, file) for every track CSV under ``root``, in a fixed order."""
    folder = root / "data" / "csvs"
    return [(track, f) for track_dir, track in TRACKS.items()
            for f in sorted((folder / track_dir).glob("*.csv"))]


def load_battery(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The tidy Battery table: one row per model x item x judgment (see the module doc).

    Cached as parquet in the user cache (the first load parses ~150 CSV files); the key
    covers the pinned sha256, size and modification time of every file and the names of the
    CSVs found, so an edited or added file rebuilds it.
    """
    root = locate("battery", path=path)
    version = LOADER_VERSION + ":" + tidycache.listing(root, "data/csvs/*/*.csv")
    key = tidycache.cache_key(("battery",), (root,), version)
    return tidycache.cached("battery", key, lambda: _build(root))


def _build(root: Path) -> pd.DataFrame:
    frames = []
    for track, f in _csv_files(root):
        model = canonical_model(f.name)
        prospective = track == "t6_prospective"
        id_col, ok_col = ("item_id", "is_correct") if prospective else ("item", "correct")
        raw = read_csv(f, required=(id_col, ok_col, "keep_withdraw", "bet_nobet"),
                       notnull=(id_col, ok_col))
        correct = raw[ok_col].map({"True": 1.0, "False": 0.0})
        if correct.isna().any():
            i = int(correct.isna().to_numpy().nonzero()[0][0])
            raise DataFileError(f"{f}: data row {i + 1}: {ok_col} {raw[ok_col].iloc[i]!r} "
                                f"is not True/False.")
        domain = raw["domain"] if "domain" in raw else pd.Series(pd.NA, index=raw.index)
        declined = (raw["path_choice"].str.strip() == "DECLINE") if "path_choice" in raw \
            else pd.Series(False, index=raw.index)
        for probe, codes in JUDGMENTS.items():
            if probe not in raw:
                continue
            values = raw[probe].str.strip()
            conf = values.map(codes)
            status = conf.notna().map({True: "ok", False: "unparseable"})
            if probe in AFTER_ANSWER:
                conf = conf.mask(declined)
                status = status.mask(declined, NO_ANSWER)
            frames.append(pd.DataFrame({
                "model": model,
                "item_id": track + ":" + raw[id_col].astype(str),
                "benchmark": "battery",
                "probe": probe,
                "sample": 0,
                "domain": domain,
                "subject": track,
                "decision": values,
                "confidence": conf,
                "correct": correct,
                "parse_status": status,
                "raw_text": raw[probe],
                "backend": "log:battery",
                "backend_version": DATASETS["battery"].commit[:12],
                "track": track,
            }))
    check_sizes("battery", root)
    out = pd.concat(frames, ignore_index=True)
    dup = out.duplicated(["model", "item_id", "probe"])
    if dup.any():
        r = out[dup.to_numpy()].iloc[0]
        raise DataFileError(f"battery: model {r['model']} item {r['item_id']} probe {r['probe']} "
                            f"appears twice; two files map to the same model and track.")
    return tidycache.categorize(schema.conform(out, source="battery"))
