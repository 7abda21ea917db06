"""SPAR self-awareness logs: frontier LLMs on SimpleMC, before and after answering.

Source: cma1114/spar_self_awareness @ f770ffb0466a9b50fe734c350bcc7e9615891c34. The
repository states **no licence**: it is read from the pinned public URL or a mirror,
never copied into this project. SimpleMC has 500 four-option trivia items; the logs
key them by ``sqa_test_<sha256 of the question text>``, which we map to the
``qid`` of ``SimpleMC.jsonl``. Four file families become four probes:

- ``answer`` (``compiled_results_smc``): the phase-1 answer; confidence = the chosen
  letter's probability (NaN where the API gave none), correct = ``is_correct``.
- ``prospective`` (``pass_game_logs``): ANSWER or PASS decided *before* answering;
  confidence 1 / 0, ``p_yes`` = probability mass of the answer digit over both digits.
- ``verbal_confidence`` (``capabilities_1p_test_logs``): "how likely are you to get
  this right", eight bins; the expected value upstream stores in ``is_correct``.
- ``other_confidence`` (``capabilities_3p_test_logs``): the share of educated people
  the model expects to get the item right, same bins.

``correct`` is always the model's own phase-1 correctness. Which of several runs is
used is decided by :func:`choose_runs`; :func:`spar_runs` shows every file and why.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd

from metacog.tidy import schema
from metacog.data import tidycache
from metacog.data.fetch import check_sizes, locate, manifest
from metacog.data.files import DataFileError, read_json, read_jsonl
from metacog.data.registry import DATASETS

LOADER_VERSION = "spar-1"
N_ITEMS = 500
MIN_VALID = 450  # a run with fewer valid judgments is incomplete
FAMILIES = {  # probe -> folder (prospective also reads pass_game_logs/old)
    "answer": "compiled_results_smc",
    "prospective": "pass_game_logs",
    "verbal_confidence": "capabilities_1p_test_logs",
    "other_confidence": "capabilities_3p_test_logs",
}
#: Default eight-bin scale and the bin midpoints the expected value uses.
BINS = {"<5%": 0.025, "5-10%": 0.075, "10-20%": 0.15, "20-40%": 0.3, "40-60%": 0.5,
        "60-80%": 0.7, "80-90%": 0.85, ">90%": 0.95}
DEFAULT_SCALE = dict(zip("ABCDEFGH", BINS))
RUN_LABELS = ("orig_", "a-z_")  # prefixes that name an earlier run of the same model
PROVIDERS = ("openai-", "anthropic-")
_DATE = re.compile(r"-(20\d{6}|20\d\d-\d\d-\d\d)$")
_STAMP = re.compile(r"_(\d{10})_")


def canonical_model(raw: str) -> str:
    """One name per model across the four file families.

    Lower-case; drop run labels (``orig_``, ``a-z_``) and provider prefixes
    (``openai-``, ``anthropic-``); drop a snapshot date (``-20250929``,
    ``-2024-07-18``); write Claude version numbers with a dot (``claude-3-5-sonnet``
    -> ``claude-3.5-sonnet``); keep thinking modes as distinct models
    (``_think`` -> ``-think``, ``_nothink`` -> ``-nothink``). So
    ``gpt-4o-mini-2024-07-18`` and ``gpt-4o-mini`` meet, as do
    ``anthropic-claude-opus-4.1`` and ``claude-opus-4-1-20250805``.
    """
    name = raw.lower()
    for label in RUN_LABELS:
        name = name.removeprefix(label)
    mode = ""
    for suffix in ("_nothink", "_think"):
        if name.endswith(suffix):
            name, mode = name[: -len(suffix)], "-" + suffix[1:]
    for prefix in PROVIDERS:
        name = name.removeprefix(prefix)
    name = _DATE.sub("", name)
    if name.startswith("claude"):
        name = re.sub(r"(?<=\d)-(?=\d(?:-|$))", ".", name)
    return name + mode


def _model_part(probe: str, filename: str) -> str:
    stem = filename.removesuffix(".json")
    if probe == "answer":
        return stem.removesuffix("_phase1_compiled")
    return stem.split("_SimpleMC", 1)[0]


def _need(obj: dict, key: str, where: str):
    if not isinstance(obj, dict) or key not in obj:
        raise DataFileError(f"{where}: field {key!r} is missing; the file is not a SPAR log of "
                            f"the pinned version. Re-download or re-mirror it.")
    return obj[key]


def _items(folder: Path) -> tuple[dict[str, str], str]:
    """({log id: SimpleMC qid}, path) from SimpleMC.jsonl."""
    path = folder / "SimpleMC.jsonl"
    ids = {}
    for n, row in enumerate(read_jsonl(path), 1):
        q = _need(row, "question", f"{path}: line {n}")
        ids["sqa_test_" + hashlib.sha256(q.encode()).hexdigest()] = str(_need(row, "qid", f"{path}: line {n}"))
    return ids, str(path)


def _scan(folder: Path) -> tuple[pd.DataFrame, dict[str, dict]]:
    """One row per log file with what the run-selection rule needs, and the parsed files."""
    rows, parsed = [], {}
    for rel in sorted(manifest("spar")):
        probe = next((p for p, d in FAMILIES.items() if rel.startswith(d + "/")), None)
        if probe is None:
            continue
        doc = read_json(folder / rel)
        results = _need(doc, "results", str(folder / rel))
        values = list(results.values()) if isinstance(results, dict) else list(results)
        name = Path(rel).name
        stamp = _STAMP.search(name)
        params = doc.get("run_parameters") or {}
        temp = params.get("temperature")
        if temp is None and (m := re.search(r"_temp(\d+(?:\.\d+)?)_", name)):
            temp = float(m.group(1))
        if probe == "prospective":
            valid = sum(r.get("delegation_choice") in ("Self", "Pass") for r in values)
        elif probe == "answer":
            valid = len(values)
        else:
            valid = sum(_expected(r, params) is not None for r in values)
        parsed[rel] = doc
        rows.append({
            "model": canonical_model(_model_part(probe, name)), "probe": probe, "file": rel,
            "folder": "old" if "/old/" in rel else "main",
            "timestamp": float(stamp.group(1)) if stamp else float(doc.get("timestamp") or 0),
            "temperature": np.nan if temp is None else float(temp),
            "items": len(values), "valid": valid,
            "backup": bool(re.search(r"_game_data_(bak|g)\.json$", name)),
            "variant": "_consider_" in name, "fine_tuned": "-ft_phase1" in name,
            "sha256": manifest("spar")[rel]["sha256"],
        })
    return pd.DataFrame(rows), parsed


def _disagreements(doc: dict, phase1: dict) -> int:
    """Answered items of a pass-game run whose ``subject_correct`` differs from phase 1."""
    return sum(
        r.get("subject_correct") is not None
        and r.get("subject_correct") != phase1.get(r.get("question_id"), {}).get("is_correct")
        for r in doc["results"]
    )


def choose_runs(runs: pd.DataFrame, parsed: dict[str, dict]) -> pd.DataFrame:
    """Pick ONE run per model and probe; return ``runs`` with ``chosen`` and ``reason``.

    The rule, applied per (canonical model, probe):

    1. leave out fine-tuned models (``-ft``), backup or alternate copies
       (``_bak``, ``_g``), the ``consider`` prompt variant, and incomplete runs
       (fewer than 450 of the 500 items with a valid judgment);
    2. leave out pass-game runs scored against another phase-1 run than the one
       chosen for the model (``subject_correct`` disagrees with it on any answered
       item), so that ``correct`` means the same thing for every probe;
    3. of the rest prefer the main folder over ``old/``, then the newest run (Unix
       time in the file name, else the file's ``timestamp``), then the file name.

    Thinking modes count as distinct models (see :func:`canonical_model`).
    """
    out = runs.copy()
    out["chosen"], out["reason"] = False, ""
    out.loc[out["fine_tuned"], "reason"] = "fine-tuned model, not a released one"
    out.loc[out["backup"] & (out["reason"] == ""), "reason"] = "backup or alternate copy (_bak/_g)"
    out.loc[out["variant"] & (out["reason"] == ""), "reason"] = "prompt variant ('consider')"
    short = (out["valid"] < MIN_VALID) & (out["reason"] == "")
    out.loc[short, "reason"] = [f"incomplete: {v} of {N_ITEMS} items with a valid judgment"
                                for v in out.loc[short, "valid"]]
    for probe in FAMILIES:  # answer first: the others are checked against its choice
        for model, group in out[out["probe"] == probe].groupby("model", sort=True):
            if probe == "prospective":
                phase1 = _phase1_file(out, model)
                for i in group.index[group["reason"] == ""]:
                    bad = _disagreements(parsed[out.at[i, "file"]],
                                         parsed[phase1]["results"] if phase1 else {})
                    if bad or not phase1:
                        out.at[i, "reason"] = (f"scored against another phase-1 run ({bad} answered "
                                               f"items disagree with {phase1})" if phase1 else
                                               "no phase-1 run for this model")
            ok = group.index[out.loc[group.index, "reason"] == ""]
            if not len(ok):
                continue
            order = out.loc[ok].assign(main=lambda d: d["folder"] == "main").sort_values(
                ["main", "timestamp", "file"], ascending=[False, False, True])
            pick = order.index[0]
            out.at[pick, "chosen"], out.at[pick, "reason"] = True, "chosen"
            for i in order.index[1:]:
                same = out.at[i, "sha256"] == out.at[pick, "sha256"]
                out.at[i, "reason"] = ("same content as the chosen file" if same else
                                       "in old/ while the main folder has a run"
                                       if out.at[i, "folder"] != out.at[pick, "folder"] else
                                       "older run of the same model")
    return out


def _phase1_file(runs: pd.DataFrame, model: str) -> str | None:
    hit = runs[(runs["probe"] == "answer") & (runs["model"] == model) & runs["chosen"]]
    return hit["file"].iloc[0] if len(hit) else None


def spar_runs(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Every SPAR log file: model, probe, file, temperature, items, valid, chosen, reason.

    ``reason`` says why a file is left out ("chosen" for the one used per model and probe).
    """
    folder = locate("spar", path=path)
    runs, parsed = _scan(folder)
    cols = ["model", "probe", "file", "folder", "temperature", "items", "valid", "chosen", "reason"]
    return choose_runs(runs, parsed)[cols].sort_values(["probe", "model", "file"], ignore_index=True)


def _expected(row: dict, params: dict) -> float | None:
    """The expected bin midpoint of a 1p/3p judgment (upstream stores it in ``is_correct``).

    Where that field is not a number (one file stores True/False), it is recomputed
    from the token probabilities over the scale's letters.
    """
    value = row.get("is_correct")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    scale = {k: BINS[v] for k, v in (params.get("nested_option_dict") or DEFAULT_SCALE).items()}
    mass = {}
    for token, p in (row.get("probs") or {}).items():
        t = token.strip()
        if t in scale:
            mass[t] = mass.get(t, 0.0) + float(p)
    total = sum(mass.values())
    return sum(p * scale[t] for t, p in mass.items()) / total if total > 0 else None


def _p_answer(row: dict) -> float:
    """P(answer digit) / P(answer or pass digit); NaN when neither digit has a probability."""
    mapping = row.get("digit_mapping") or {}
    mass = {"Answer": 0.0, "Pass": 0.0}
    for token, p in (row.get("probs") or {}).items():
        meaning = mapping.get(unicodedata.normalize("NFKC", token).strip())
        if meaning in mass:
            mass[meaning] += float(p)
    total = mass["Answer"] + mass["Pass"]
    return mass["Answer"] / total if total > 0 else float("nan")


def _rows(probe: str, model: str, rel: str, doc: dict, phase1: dict, ids: dict, where: Path):
    """Tidy rows of one chosen run (a list of dicts)."""
    params = doc.get("run_parameters") or {}
    results = doc["results"]
    records = results.items() if isinstance(results, dict) else [
        (_need(r, "question_id", f"{where}: results[{i}]"), r) for i, r in enumerate(results)]
    out = []
    for qid, r in records:
        if qid not in ids:
            raise DataFileError(f"{where}: question id {qid!r} is not a SimpleMC item; the file "
                                f"does not belong to the pinned SimpleMC.jsonl.")
        row = {"model": model, "item_id": ids[qid], "probe": probe, "run": rel,
               "correct": phase1.get(qid, {}).get("is_correct")}
        if probe == "answer":
            letter = str(_need(r, "subject_answer", f"{where}: {qid}")).strip()
            probs = r.get("probs") or {}
            ok = letter in ("A", "B", "C", "D")
            row.update(correct=_need(r, "is_correct", f"{where}: {qid}"), decision=letter if ok else None,
                       confidence=float(probs[letter]) if ok and letter in probs else np.nan,
                       parse_status="ok" if ok else "unparseable", raw_text=None if ok else letter)
        elif probe == "prospective":
            choice = r.get("delegation_choice")
            row.update(decision={"Self": "answer", "Pass": "pass"}.get(choice),
                       confidence={"Self": 1.0, "Pass": 0.0}.get(choice, np.nan), p_yes=_p_answer(r),
                       parse_status="ok" if choice in ("Self", "Pass") else "unparseable",
                       raw_text=r.get("decision_digit"))
        else:
            scale = params.get("nested_option_dict") or DEFAULT_SCALE
            letter = str(r.get("subject_answer") or "").strip()
            value = _expected(r, params)
            row.update(decision=scale.get(letter), confidence=np.nan if value is None else value,
                       parse_status="ok" if letter in scale and value is not None else "unparseable",
                       raw_text=letter)
        out.append(row)
    return out


def _topics(parsed: dict[str, dict], chosen: pd.DataFrame) -> pd.DataFrame:
    """Per log id: topic and answer type, from the phase-1 files that embed the question."""
    meta = {}
    for rel in chosen.loc[chosen["probe"] == "answer", "file"]:
        for qid, r in parsed[rel]["results"].items():
            q = r.get("question")
            if isinstance(q, dict) and qid not in meta:
                meta[qid] = (q.get("topic"), q.get("answer_type"))
    return meta


def _build(folder: Path) -> pd.DataFrame:
    ids, _ = _items(folder)
    runs, parsed = _scan(folder)
    runs = choose_runs(runs, parsed)
    chosen = runs[runs["chosen"]]
    records = []
    for r in chosen.itertuples():
        p1 = _phase1_file(runs, r.model)
        phase1 = parsed[p1]["results"] if p1 else {}
        records += _rows(r.probe, r.model, r.file, parsed[r.file], phase1, ids, folder / r.file)
    df = pd.DataFrame.from_records(records)
    meta = _topics(parsed, chosen)
    by_item = {ids[q]: m for q, m in meta.items()}
    df["domain"] = df["item_id"].map(lambda i: by_item.get(i, (None, None))[0])
    df["subject"] = df["item_id"].map(lambda i: by_item.get(i, (None, None))[1])
    df["correct"] = df["correct"].map({True: 1.0, False: 0.0})
    temps = dict(zip(runs["file"], runs["temperature"]))
    df = df.assign(benchmark="simplemc", sample=0, backend="log:spar",
                   backend_version=DATASETS["spar"].commit[:12],
                   temperature=df["run"].map(temps).astype(float))
    df["run"] = df["run"].astype("category")
    check_sizes("spar", folder)
    dup = df.duplicated(["model", "item_id", "probe"])
    if dup.any():
        r = df[dup.to_numpy()].iloc[0]
        raise DataFileError(f"spar: model {r['model']} item {r['item_id']} probe {r['probe']} appears "
                            f"twice in {r['run']}; the file repeats a question.")
    df = schema.conform(df.sort_values(["probe", "model", "item_id"], ignore_index=True), source="spar")
    return tidycache.categorize(df)


def load_spar(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The tidy SPAR table: one row per model x SimpleMC item x probe (see the module doc).

    Extra columns: ``run`` (the log file used) and ``temperature`` (of that run).
    Cached as parquet in the user cache; the first load parses ~100 JSON files.
    """
    folder = locate("spar", path=path)
    key = tidycache.cache_key(("spar",), (folder,), LOADER_VERSION)
    return tidycache.cached("spar", key, lambda: _build(folder))
