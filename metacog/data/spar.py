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
used is decided by :func:`choose_runs` (:mod:`metacog.data.spar_runs`): the points game,
not the 'consider' framing, at temperature 0 where a model has such a run;
:func:`spar_runs` shows every file and why. :func:`spar_temperature_check` compares a
model's games at temperature 0 and 1 where both exist.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd

from metacog.tidy import schema
from metacog.data import tidycache
from metacog.data.fetch import check_sizes, locate
from metacog.data.files import DataFileError, read_jsonl
from metacog.data.registry import DATASETS
from metacog.data.spar_runs import (  # noqa: F401  (re-exported: the run rule lives there)
    BINS, DEFAULT_SCALE, FAMILIES, MIN_VALID, N_ITEMS, PREFERRED_TEMPERATURE, STANDARD_VARIANT,
    _order, _phase1_file, _scan, canonical_model, choose_runs, expected, game_variant, need,
    spar_runs, wording)
from metacog.stats.intervals import auroc_ci, proportion_ci

LOADER_VERSION = "spar-2"  # 2: runs chosen by game variant and temperature; variant, wording columns


def _items(folder: Path) -> tuple[dict[str, str], str]:
    """({log id: SimpleMC qid}, path) from SimpleMC.jsonl."""
    path = folder / "SimpleMC.jsonl"
    ids = {}
    for n, row in enumerate(read_jsonl(path), 1):
        q = need(row, "question", f"{path}: line {n}")
        ids["sqa_test_" + hashlib.sha256(q.encode()).hexdigest()] = str(need(row, "qid", f"{path}: line {n}"))
    return ids, str(path)


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
        (need(r, "question_id", f"{where}: results[{i}]"), r) for i, r in enumerate(results)]
    out = []
    for qid, r in records:
        if qid not in ids:
            raise DataFileError(f"{where}: question id {qid!r} is not a SimpleMC item; the file "
                                f"does not belong to the pinned SimpleMC.jsonl.")
        row = {"model": model, "item_id": ids[qid], "probe": probe, "run": rel,
               "correct": phase1.get(qid, {}).get("is_correct")}
        if probe == "answer":
            letter = str(need(r, "subject_answer", f"{where}: {qid}")).strip()
            probs = r.get("probs") or {}
            ok = letter in ("A", "B", "C", "D")
            row.update(correct=need(r, "is_correct", f"{where}: {qid}"), decision=letter if ok else None,
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
            value = expected(r, params)
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
    by_file = runs.set_index("file")
    df = df.assign(benchmark="simplemc", sample=0, backend="log:spar",
                   backend_version=DATASETS["spar"].commit[:12],
                   temperature=df["run"].map(by_file["temperature"]).astype(float))
    for col in ("run", "variant", "wording"):
        values = df["run"] if col == "run" else df["run"].map(by_file[col])
        df[col] = values.astype(object).astype("category")
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

    Extra columns: ``run`` (the log file used), ``temperature`` (of that run; missing where
    the log does not record it), and for the answer-or-pass rows ``variant`` (always 'game':
    the other framing is left out) and ``wording`` (an id of the game's instructions; the
    chosen runs do not all share one). Cached as parquet in the user cache; the first load parses ~100 JSON files.
    """
    folder = locate("spar", path=path)
    key = tidycache.cache_key(("spar",), (folder,), LOADER_VERSION)
    return tidycache.cached("spar", key, lambda: _build(folder))


def _game_stats(df: pd.DataFrame, ci: float) -> list[dict]:
    """Answer rate and AUROCs of one game run's tidy rows (see :func:`spar_temperature_check`)."""
    y = df["correct"].map({True: 1.0, False: 0.0}).astype(float)
    conf = df["confidence"].astype(float)
    k, n = int((conf == 1).sum()), int(conf.notna().sum())
    lo, hi = proportion_ci(k, n, ci=ci)
    out = [{"statistic": "answer_rate", "n": n, "estimate": k / n if n else np.nan,
            "ci_low": lo, "ci_high": hi}]
    for stat, score in (("auroc", conf), ("auroc_p_yes", df["p_yes"].astype(float))):
        if score.notna().any():
            r = auroc_ci(y, score, ci=ci)
            out.append({"statistic": stat, "n": r.n_pos + r.n_neg, "estimate": r.estimate,
                        "ci_low": r.ci_low, "ci_high": r.ci_high})
    return out


def spar_temperature_check(path: str | os.PathLike | None = None, *, ci: float = 0.95) -> pd.DataFrame:
    """The answer-or-pass game at temperature 0 against temperature 1, for every model with an
    eligible game run (:func:`choose_runs`, steps 1-2) at both; at each temperature the run
    the rule's order ranks first.

    One row per model, temperature and statistic: 'answer_rate' (share of valid decisions
    that are "answer", Wilson interval), 'auroc' (AUROC of the decision, answer = 1, for the
    model's phase-1 correctness, DeLong interval), 'auroc_p_yes' (the same for the
    probability of the answer digit, where the log has token probabilities); and per model
    one 'agreement' row (temperature missing: the share of items both runs decided the same
    way, Wilson). Columns model, statistic, temperature, file, wording, n, estimate, ci_low,
    ci_high. The two runs of a model may differ in wording as well as in temperature.
    """
    folder = locate("spar", path=path)
    ids, _ = _items(folder)
    runs, parsed = _scan(folder)
    runs = choose_runs(runs, parsed)
    games = runs[(runs["probe"] == "prospective") & runs["eligible"]]
    rows = []
    for model, g in games.groupby("model", sort=True):
        picks = {t: runs.loc[_order(runs, g.index[g["temperature"] == t])[0]]
                 for t in (0.0, 1.0) if (g["temperature"] == t).any()}
        if len(picks) < 2:
            continue
        p1 = _phase1_file(runs, model)
        phase1 = parsed[p1]["results"] if p1 else {}
        decisions = {}
        for t, run in picks.items():
            df = pd.DataFrame(_rows("prospective", model, run["file"], parsed[run["file"]], phase1,
                                    ids, folder / run["file"]))
            decisions[t] = df.set_index("item_id")["decision"]
            rows += [{"model": model, "temperature": t, "file": run["file"], "wording": run["wording"], **r}
                     for r in _game_stats(df, ci)]
        both = pd.concat(decisions, axis=1).dropna()
        k, n = int((both[0.0] == both[1.0]).sum()), len(both)
        lo, hi = proportion_ci(k, n, ci=ci)
        rows.append({"model": model, "temperature": np.nan, "file": None, "wording": None,
                     "statistic": "agreement", "n": n, "estimate": k / n if n else np.nan,
                     "ci_low": lo, "ci_high": hi})
    cols = ["model", "statistic", "temperature", "file", "wording", "n", "estimate", "ci_low", "ci_high"]
    return pd.DataFrame(rows, columns=cols)
