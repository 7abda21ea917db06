"""LLM Calibration Study: 84 LLMs x the 12,032-question MMLU-Pro test set.

Source: Linwei94/LLM-Calibration-Study @ ddc349e31695f3c2f8b8dfb2c3376a720914df55
(MIT), ``results/mmlu_pro_<model>_eval_all_None.csv``. Each file has one row per
MMLU-Pro question in the test set's order and no question id, so rows are aligned
by position and checked: the category must match MMLU-Pro on every row (else the
load stops), and the study's answer key matches MMLU-Pro's on all but 173 rows
(:func:`calibration_study_key_differences`). Grading uses the study's OWN key:
``correct = extracted_answer == correct_answer``; no extracted answer is wrong.

Confidence is given after answering. Three probes:

- ``verbal_confidence``: ``verbal_numerical_confidence`` (stated number, 0-1);
- ``logit_confidence``: ``logit_perplexity_confidence`` (from token probabilities);
- ``linguistic_confidence``: ``verbal_linguistic_confidence`` (a verbal expression
  mapped to a number by the authors).

Values outside [0, 1] (e.g. 683 or 47.975) become NaN and are counted in
:func:`calibration_study_summary`; nothing is clipped. A probe whose column is empty
for a model (no logits from an API) is left out for that model; a model with no
extracted answer at all (phi-4) is left out entirely.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from metacog.tidy import schema
from metacog.data import tidycache
from metacog.data.fetch import check_sizes, locate, manifest
from metacog.data.files import DataFileError, read_jsonl
from metacog.data.registry import DATASETS

LOADER_VERSION = "calibration_study-1"
PROBES = {
    "verbal_confidence": "verbal_numerical_confidence",
    "logit_confidence": "logit_perplexity_confidence",
    "linguistic_confidence": "verbal_linguistic_confidence",
}
COLUMNS = ("category", "correct_answer", "extracted_answer", *PROBES.values(), "token_length")
PREFIX, SUFFIX = "mmlu_pro_", "_eval_all_None.csv"
LETTERS = "ABCDEFGHIJ"


def model_name(filename: str) -> str:
    """'mmlu_pro_gpt-4.1_eval_all_None.csv' -> 'gpt-4.1'."""
    return filename.removeprefix(PREFIX).removesuffix(SUFFIX)


def _files(folder: Path) -> list[Path]:
    return [folder / rel for rel in sorted(manifest("calibration_study")) if rel.startswith("results/")]


def _mmlu_pro() -> pd.DataFrame:
    """MMLU-Pro test items in file order: question_id, category, answer (the letter), src.

    Read straight from the benchmark's ``test.jsonl`` (the data layer sits below
    :mod:`metacog.benchmarks`, which builds the same items for asking models).
    """
    path = Path(locate("mmlu_pro")) / "test.jsonl"
    rows = read_jsonl(path)
    for n, row in enumerate(rows, 1):
        missing = [k for k in ("question_id", "category", "answer") if k not in row]
        if missing:
            raise DataFileError(f"{path}: record {n} lacks {missing}; re-download or re-mirror MMLU-Pro.")
    return pd.DataFrame({"item_id": [str(r["question_id"]) for r in rows],
                         "category": [str(r["category"]) for r in rows],
                         "answer": [str(r["answer"]) for r in rows],
                         "src": [str(r.get("src", "")) for r in rows]})


def _read(path: Path) -> pd.DataFrame:
    """One result CSV with the C parser; any parse problem names the file (and line)."""
    try:
        df = pd.read_csv(path, usecols=list(COLUMNS), engine="c",
                         dtype={"category": "string", "correct_answer": "string",
                                "extracted_answer": "string"})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataFileError(f"{path}: malformed CSV ({exc}); re-download or re-mirror it.") from None
    except ValueError as exc:  # usecols absent from the header
        raise DataFileError(f"{path}: line 1: {exc}; expected columns {list(COLUMNS)}.") from None
    return df


def _check(path: Path, df: pd.DataFrame, ref: pd.DataFrame, key: np.ndarray | None) -> None:
    """Stop unless the rows line up with MMLU-Pro (category on every row, a fixed key)."""
    if len(df) != len(ref):
        raise DataFileError(f"{path}: {len(df):,} data rows where MMLU-Pro's test set has "
                            f"{len(ref):,}; the file is truncated or not aligned. Re-download it.")
    bad = np.flatnonzero(df["category"].to_numpy(dtype=object) != ref["category"].to_numpy(dtype=object))
    if len(bad):
        i = int(bad[0])
        raise DataFileError(f"{path}: line {i + 2}: category {df['category'].iloc[i]!r} where MMLU-Pro "
                            f"question {ref['item_id'].iloc[i]} is {ref['category'].iloc[i]!r}; rows are "
                            f"aligned by position, so this file does not follow MMLU-Pro's order.")
    if key is not None:
        bad = np.flatnonzero(df["correct_answer"].to_numpy(dtype=object) != key)
        if len(bad):
            i = int(bad[0])
            raise DataFileError(f"{path}: line {i + 2}: correct_answer {df['correct_answer'].iloc[i]!r} "
                                f"differs from the other result files ({key[i]!r}).")


def _scan(folder: Path):
    """Yield (path, model, checked frame, MMLU-Pro reference) for every result file."""
    ref, key = _mmlu_pro(), None
    for path in _files(folder):
        df = _read(path)
        _check(path, df, ref, key)
        key = df["correct_answer"].to_numpy(dtype=object) if key is None else key
        yield path, model_name(path.name), df, ref


def _in_range(values: pd.Series) -> tuple[np.ndarray, int, int]:
    """(values with out-of-range entries set to NaN, number missing, number out of range)."""
    v = values.to_numpy(dtype=float, copy=True)
    missing = int(np.isnan(v).sum())
    out = ~np.isnan(v) & ((v < 0) | (v > 1))
    v[out] = np.nan
    return v, missing, int(out.sum())


def _build(folder: Path) -> pd.DataFrame:
    """Stack every model's usable probes; categorical codes keep millions of rows cheap."""
    parts, ref = [], None
    for _, model, df, ref in _scan(folder):
        extracted = df["extracted_answer"]
        if extracted.isna().all():
            continue  # no answer was extracted at all: nothing to grade (see the summary)
        correct = (extracted == df["correct_answer"]).fillna(False).to_numpy(dtype=float)
        letters = pd.Categorical(extracted, categories=list(LETTERS)).codes
        length = pd.to_numeric(df["token_length"], errors="coerce").to_numpy(dtype=float)
        for probe, column in PROBES.items():
            if not df[column].isna().all():
                parts.append((model, probe, _in_range(df[column])[0], correct, letters, length))
    check_sizes("calibration_study", folder)
    n, k = len(ref), len(parts)
    models = sorted({p[0] for p in parts})
    tile = lambda codes, cats: pd.Categorical.from_codes(np.tile(codes, k), cats)  # noqa: E731
    cat_of = lambda col: pd.Categorical(ref[col])  # noqa: E731
    domain, subject = cat_of("category"), cat_of("src")
    letters = np.concatenate([p[4] for p in parts])
    out = pd.DataFrame({
        "model": pd.Categorical.from_codes(np.repeat([models.index(p[0]) for p in parts], n), models),
        "item_id": tile(np.arange(n), ref["item_id"].to_numpy()),
        "probe": pd.Categorical.from_codes(np.repeat([list(PROBES).index(p[1]) for p in parts], n),
                                           list(PROBES)),
        "domain": tile(domain.codes, domain.categories), "subject": tile(subject.codes, subject.categories),
        "decision": pd.Categorical.from_codes(letters, list(LETTERS)),
        "confidence": np.concatenate([p[2] for p in parts]),
        "correct": np.concatenate([p[3] for p in parts]),
        "parse_status": pd.Categorical.from_codes((letters < 0).astype(np.int8), ["ok", "unparseable"]),
        "token_length": pd.array(np.concatenate([p[5] for p in parts]), dtype="Int32"),
    })
    for col in ("model", "item_id", "probe", "domain", "subject", "decision", "parse_status"):
        out[col] = tidycache.arrow_strings(out[col].array)  # so conform's cast to string is cheap
    out = out.assign(benchmark="mmlu_pro", sample=0, backend="log:calibration_study",
                     backend_version=DATASETS["calibration_study"].commit[:12])
    return tidycache.categorize(schema.conform(out, source="calibration_study"))


def load_calibration_study(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The tidy table: one row per model x MMLU-Pro question x probe (about 2.5 million rows).

    ``item_id`` is MMLU-Pro's ``question_id``, ``domain`` its category, ``subject`` its
    source; ``decision`` is the extracted letter; extra column ``token_length``.
    Cached as parquet in the user cache (a few seconds the first time).
    """
    folder = locate("calibration_study", path=path)
    key = tidycache.cache_key(("calibration_study", "mmlu_pro"), (folder, locate("mmlu_pro")),
                              LOADER_VERSION)
    return tidycache.cached("calibration_study", key, lambda: _build(folder))


def calibration_study_key_differences(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The questions whose answer key in the study differs from MMLU-Pro's (173 rows).

    Columns: item_id, category, study_answer, mmlu_pro_answer, line (1-based line in
    every result file).
    """
    folder = locate("calibration_study", path=path)
    path0, _, df, ref = next(_scan(folder))
    differs = (df["correct_answer"].to_numpy(dtype=object) != ref["answer"].to_numpy(dtype=object))
    rows = np.flatnonzero(differs)
    return pd.DataFrame({
        "item_id": ref["item_id"].to_numpy()[rows], "category": ref["category"].to_numpy()[rows],
        "study_answer": df["correct_answer"].to_numpy(dtype=object)[rows],
        "mmlu_pro_answer": ref["answer"].to_numpy()[rows], "line": rows + 2,
    })


def calibration_study_summary(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Per model: accuracy, unextracted answers, and per probe the missing and out-of-range values.

    Columns: model, included (False for a model with no extracted answer), items,
    accuracy, unextracted, then ``<probe>_missing`` (NaN upstream),
    ``<probe>_out_of_range`` (outside [0, 1], set to NaN on load) and
    ``<probe>_usable`` (items with a confidence in [0, 1]) for each probe.
    """
    folder = locate("calibration_study", path=path)
    rows = []
    for _, model, df, _ in _scan(folder):
        extracted = df["extracted_answer"]
        row = {"model": model, "included": bool(extracted.notna().any()), "items": len(df),
               "accuracy": float((extracted == df["correct_answer"]).fillna(False).mean()),
               "unextracted": int(extracted.isna().sum())}
        for probe, column in PROBES.items():
            _, missing, out = _in_range(df[column])
            row |= {f"{probe}_missing": missing, f"{probe}_out_of_range": out,
                    f"{probe}_usable": len(df) - missing - out}
        rows.append(row)
    return pd.DataFrame(rows)
