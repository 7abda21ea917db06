"""Which SPAR log file is used for each model and probe, and why (see :mod:`metacog.data.spar`).

The repository keeps several runs for some models: temperature 0 (mostly in
``pass_game_logs/old/``) and temperature 1, earlier runs (``orig_``, ``a-z_``), copies
(``_bak``, ``_g``) and two framings of the answer-or-pass game. The elicitation code
(``pass_game_from_capabilities.py``) has a ``game_frame`` switch: with it on, the
model plays the points game (a right answer +1, a wrong one -1, a pass 0); with it
off, there are no points and the model is told to pick "answer" when it is at least
10% certain. Each log's ``run_parameters`` records the switch (files made before it
existed played the game); a file named ``_consider_`` is the second framing too, and
so is one file without that name (llama-3.3-70b's newest run). :func:`choose_runs`
applies one rule; :func:`spar_runs` shows every file with its variant, temperature,
wording and the reason it is used or left out.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from metacog.data.fetch import locate, manifest
from metacog.data.files import DataFileError, read_json

N_ITEMS = 500
MIN_VALID = 450  # a run with fewer valid judgments is incomplete
FAMILIES = {  # probe -> folder (prospective also reads pass_game_logs/old)
    "answer": "compiled_results_smc",
    "prospective": "pass_game_logs",
    "verbal_confidence": "capabilities_1p_test_logs",
    "other_confidence": "capabilities_3p_test_logs",
}
#: The answer-or-pass framing the panel uses ('game': the points game) and the one left out.
STANDARD_VARIANT, OTHER_VARIANT = "game", "consider"
#: The temperature preferred when a model has complete runs at more than one: 0 is the
#: model's most likely choice, and most game runs (12 of 18 models) exist at 0.
PREFERRED_TEMPERATURE = 0.0
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


def need(obj: dict, key: str, where: str):
    """``obj[key]``, or a DataFileError saying the file is not a SPAR log of the pinned version."""
    if not isinstance(obj, dict) or key not in obj:
        raise DataFileError(f"{where}: field {key!r} is missing; the file is not a SPAR log of "
                            f"the pinned version. Re-download or re-mirror it.")
    return obj[key]


def expected(row: dict, params: dict) -> float | None:
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


def game_variant(name: str, doc: dict) -> str:
    """'consider' when the run did not use the points game (``run_parameters.game_frame`` is
    False, or the file is named ``_consider_``), else 'game'."""
    params = doc.get("run_parameters") or {}
    return OTHER_VARIANT if "_consider_" in name or params.get("game_frame") is False else STANDARD_VARIANT


def wording(doc: dict) -> str | None:
    """A short id of the game's instructions (sha256 of ``initial_setup_explanation``): runs
    with the same id were shown the same text. None when the log has no instructions."""
    text = doc.get("initial_setup_explanation")
    return "w" + hashlib.sha256(text.encode()).hexdigest()[:8] if isinstance(text, str) else None


def _scan(folder: Path) -> tuple[pd.DataFrame, dict[str, dict]]:
    """One row per log file with what the run-selection rule needs, and the parsed files."""
    rows, parsed = [], {}
    for rel in sorted(manifest("spar")):
        probe = next((p for p, d in FAMILIES.items() if rel.startswith(d + "/")), None)
        if probe is None:
            continue
        doc = read_json(folder / rel)
        results = need(doc, "results", str(folder / rel))
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
            valid = sum(expected(r, params) is not None for r in values)
        parsed[rel] = doc
        game = probe == "prospective"
        rows.append({
            "model": canonical_model(_model_part(probe, name)), "probe": probe, "file": rel,
            "folder": "old" if "/old/" in rel else "main",
            "timestamp": float(stamp.group(1)) if stamp else float(doc.get("timestamp") or 0),
            "temperature": np.nan if temp is None else float(temp),
            "variant": game_variant(name, doc) if game else None,
            "wording": wording(doc) if game else None,
            "items": len(values), "valid": valid,
            "backup": bool(re.search(r"_game_data_(bak|g)\.json$", name)),
            "fine_tuned": "-ft_phase1" in name,
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


def _order(runs: pd.DataFrame, index) -> pd.Index:
    """``index`` of eligible runs, best first: the preferred temperature, then not a copy, then
    the main folder, then the newest, then the file name."""
    part = runs.loc[index]
    temp = part["temperature"] if "temperature" in part else pd.Series(np.nan, index=part.index)
    key = pd.DataFrame({"temp": temp != PREFERRED_TEMPERATURE, "copy": part["backup"].astype(bool),
                        "old": part["folder"] != "main", "newest": -part["timestamp"],
                        "file": part["file"]})
    return key.sort_values(["temp", "copy", "old", "newest", "file"]).index


def _temp(t) -> str:
    return "unrecorded" if pd.isna(t) else f"{t:g}"


def _why_not(runs: pd.DataFrame, i, pick) -> str:
    """Why eligible run ``i`` lost to the chosen run ``pick`` (the first key that differs)."""
    a, b = runs.loc[i], runs.loc[pick]
    if a["sha256"] == b["sha256"]:
        return "same content as the chosen file"
    ta, tb = a.get("temperature", np.nan), b.get("temperature", np.nan)
    if not (ta == tb or (pd.isna(ta) and pd.isna(tb))):
        return f"temperature {_temp(ta)} while a run at temperature {_temp(tb)} is used"
    if a["backup"] and not b["backup"]:
        return "backup or alternate copy (_bak/_g) while another run is used"
    if a["folder"] != b["folder"]:
        return "in old/ while the main folder has a run"
    return "older run of the same model"


def choose_runs(runs: pd.DataFrame, parsed: dict[str, dict]) -> pd.DataFrame:
    """Pick ONE run per model and probe; return ``runs`` with ``eligible``, ``chosen`` and ``reason``.

    The rule, applied per (canonical model, probe):

    1. leave out fine-tuned models (``-ft``), answer-or-pass runs of the 'consider' framing
       (:func:`game_variant`: not the points game) and incomplete runs (fewer than 450 of
       the 500 items with a valid judgment);
    2. leave out pass-game runs scored against another phase-1 run than the one
       chosen for the model (``subject_correct`` disagrees with it on any answered
       item), so that ``correct`` means the same thing for every probe;
    3. what remains is ``eligible``; of it prefer temperature :data:`PREFERRED_TEMPERATURE`,
       then a file that is not a copy (``_bak``, ``_g``), then the main folder over
       ``old/``, then the newest run (Unix time in the file name, else the file's
       ``timestamp``), then the file name.

    Thinking modes count as distinct models (see :func:`canonical_model`).
    """
    out = runs.copy()
    out["eligible"], out["chosen"], out["reason"] = False, False, ""
    variant = out["variant"] if "variant" in out else pd.Series(None, index=out.index)
    out.loc[out["fine_tuned"], "reason"] = "fine-tuned model, not a released one"
    other = (variant == OTHER_VARIANT).to_numpy() & (out["reason"] == "").to_numpy()
    out.loc[other, "reason"] = "other framing ('consider': no points, answer if 10% certain)"
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
            out.loc[ok, "eligible"] = True
            order = _order(out, ok)
            pick = order[0]
            out.at[pick, "chosen"], out.at[pick, "reason"] = True, "chosen"
            for i in order[1:]:
                out.at[i, "reason"] = _why_not(out, i, pick)
    return out


def _phase1_file(runs: pd.DataFrame, model: str) -> str | None:
    hit = runs[(runs["probe"] == "answer") & (runs["model"] == model) & runs["chosen"]]
    return hit["file"].iloc[0] if len(hit) else None


def spar_runs(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Every SPAR log file: model, probe, file, folder, temperature, variant, wording, items,
    valid, eligible, chosen, reason.

    ``variant`` ('game' or 'consider') and ``wording`` (an id of the instructions' text) are
    set for answer-or-pass files only. ``reason`` says why a file is left out ("chosen" for
    the one used per model and probe); ``eligible`` marks the files rule steps 1-2 keep.
    """
    folder = locate("spar", path=path)
    runs, parsed = _scan(folder)
    cols = ["model", "probe", "file", "folder", "temperature", "variant", "wording", "items",
            "valid", "eligible", "chosen", "reason"]
    return choose_runs(runs, parsed)[cols].sort_values(["probe", "model", "file"], ignore_index=True)
