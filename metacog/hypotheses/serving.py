"""Which hypothesis chapters a researcher's response files can serve, and each chapter's
parameters re-aimed at them (used by ``metacog book --source`` and the findings page).

A chapter is served when the files hold what it needs to decide anything, judged with the
chapter's own minimums (``MIN_MODELS``, ``MIN_ITEMS``... of its module): :func:`shortfall`
returns '' or the sentence saying what is missing. :func:`reaim` gives a chapter's parameter
set with its ``sources`` replaced by the files and every parameter that reads the book's own
recorded data (the hidden-state probe's run, the sampled and outcome runs) emptied, so no
default source enters a page built on the files.
"""

from __future__ import annotations

import inspect
import warnings

import pandas as pd

#: The hypothesis chapters (notebook stems) this module decides for.
CHAPTERS = ("rank_one", "pairwise", "shortcut", "power", "reasoning_text", "miscalibration")

#: Parameters that read the book's own recorded runs rather than ``sources``, with the value
#: that switches their section off on another panel.
DETACHED = {
    "miscalibration": {"probe_run": "", "group_run": "", "probe_models": [], "n_per_group": 0,
                       "n_sweep": {}},
    "reasoning_text": {"sampled_run": "", "outcome_run": "", "answer_sources": [], "length_sources": []},
}

#: The probe of an attempt without the context, and the judgment the reasoning-text chapter
#: joins it to (its ``answer_sources``).
ATTEMPT, JUDGED = "answer_no_context", "prospective"


def minimums() -> dict[str, tuple[int, int]]:
    """(models, items shared by two or more models) each panel chapter needs in one benchmark and
    probe, from the chapters' own constants (shortcut: the subset size; its judges are checked by
    :func:`shortfall`)."""
    from metacog.hypotheses import pairwise, power, rank_one, shortcut
    from metacog.hypotheses.panels import panels

    defaults = inspect.signature(panels).parameters
    return {"rank_one": (rank_one.MIN_MODELS, rank_one.MIN_ITEMS),
            "pairwise": (pairwise.MIN_MODELS, defaults["min_items"].default),
            "power": (power.MIN_MODELS, power.MIN_ITEMS),
            "shortcut": (defaults["min_models"].default, shortcut.MIN_ITEMS)}


def load(sources: list[str]) -> dict[str, pd.DataFrame]:
    """Every source loaded once with :func:`metacog.data.load_responses`, by source."""
    from metacog.data import load_responses

    return {s: load_responses(s) for s in sources}


def judged_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The first sample's rows of ``df`` that hold both a confidence and a grade."""
    rows = df
    if "sample" in rows.columns:
        rows = rows[pd.to_numeric(rows["sample"], errors="coerce").fillna(0) == 0]
    return rows[pd.to_numeric(rows["confidence"], errors="coerce").notna()
                & pd.to_numeric(rows["correct"], errors="coerce").notna()]


def best_block(df: pd.DataFrame) -> tuple[int, int, pd.DataFrame]:
    """(models, shared items, its rows) of the benchmark and probe of ``df`` with the most models
    holding confidence and correctness (ties: the most items shared by two or more models)."""
    rows = judged_rows(df)
    keys = [k for k in ("benchmark", "probe") if k in rows.columns]
    best = (0, 0, rows.iloc[:0])
    for _, g in rows.groupby(keys, observed=True, dropna=False):
        shared = int((g.groupby("item_id", observed=True)["model"].nunique() >= 2).sum())
        key = (int(g["model"].nunique()), shared, g)
        if key[:2] > best[:2]:
            best = key
    return best


def _name(source: str) -> str:
    from metacog.data.responses import source_name

    return source_name(source)


def _panel_shortfall(chapter: str, frames: dict) -> str:
    need_models, need_items = minimums()[chapter]
    have = {s: best_block(df) for s, df in frames.items()}
    if any(m >= need_models and i >= need_items for m, i, _ in have.values()):
        return ""
    m, i = max(((m, i) for m, i, _ in have.values()), default=(0, 0))
    return (f"needs {need_models} models with confidence and correctness in one benchmark and probe, "
            f"sharing {need_items} items; the file has at most {m} models and {i} shared items")


def _power_shortfall(frames: dict) -> str:
    """The power chapter also needs the simulator matched to a panel: its own complete block and
    fit (:func:`metacog.hypotheses.power.analysis_block`, ``fit_population``), tried on each panel."""
    from metacog.hypotheses import power as hw
    from metacog.hypotheses.panels import panels

    short = _panel_shortfall("power", frames)
    if short:
        return short
    why = []
    for panel in panels(list(frames), cuts={}):
        try:
            C, Y, info = hw.analysis_block(panel.confidence, panel.correct)
            if info["models"] >= hw.MIN_MODELS and info["items"] >= hw.MIN_ITEMS:
                with warnings.catch_warnings():  # as the chapter fits: quietly
                    warnings.simplefilter("ignore")
                    for name in hw.FITS:
                        hw.fit_population(C, Y, lam_from=name)
                return ""
            why.append(f"{panel.name}: {info['models']} models x {info['items']} items in its complete block")
        except ValueError as exc:
            why.append(f"{panel.name}: {str(exc).split(': ', 1)[-1]}")
    return "the simulator cannot be matched to any panel of the file (" + "; ".join(why[:3]) + ")"


def _shortcut_shortfall(frames: dict, reasoning_models=()) -> str:
    from metacog.hypotheses import shortcut as hs

    short = _panel_shortfall("shortcut", frames)
    if short:
        return short
    for s, df in frames.items():
        models = sorted(map(str, best_block(df)[2]["model"].unique()))
        flags = hs.reasoning_flags(models, s, reasoning_models)
        reasoning = int((flags["reasoning"] == True).sum())  # noqa: E712 (NA stays out)
        other = int((flags["reasoning"] == False).sum())  # noqa: E712
        if min(reasoning, other) >= hs.MIN_JUDGES or len(hs.twin_pairs(flags, models)) >= hs.MIN_PAIRS:
            return ""
    return (f"compares reasoning with non-reasoning judges ({hs.MIN_JUDGES} of each) or thinking runs "
            f"with their twins ({hs.MIN_PAIRS} pairs); the file's models are not flagged that way "
            f"(the metadata table does not list them and none is named '-think' beside its twin)")


def text_sources(frames: dict, column: str = "reasoning_text", judged: bool = True) -> list[str]:
    """'source:probe' for every probe of every source whose rows carry ``column`` texts (and, with
    ``judged``, the model's own confidence beside them: the chapter compares the two) with at least
    the reasoning-text chapter's ``MIN_CLASS`` correct and as many wrong ones."""
    from metacog.hypotheses.reasoning_text import MIN_CLASS

    out = []
    for s, df in frames.items():
        if column not in df.columns:
            continue
        text = df[column].astype("string").str.strip()
        rows = df[text.notna().to_numpy() & (text != "").fillna(False).to_numpy()
                  & pd.to_numeric(df["correct"], errors="coerce").notna().to_numpy()
                  & (pd.to_numeric(df["confidence"], errors="coerce").notna().to_numpy() | (not judged))]
        for probe, g in rows.groupby("probe", observed=True):
            right = int((pd.to_numeric(g["correct"]) > 0).sum())
            if min(right, len(g) - right) >= MIN_CLASS:
                out.append(f"{s}:{probe}")
    return out


def answer_sources(frames: dict) -> list[str]:
    """'source:answer_no_context' for every source holding attempts without the context (with
    their raw text) beside prospective judgments, the reasoning-text chapter's second probe."""
    out = []
    for s, df in frames.items():
        probes = set(map(str, df["probe"].dropna().unique()))
        attempts = f"{s}:{ATTEMPT}"
        if JUDGED in probes and attempts in text_sources({s: df[df["probe"] == ATTEMPT]}, "raw_text", judged=False):
            out.append(attempts)
    return out


def shortfall(chapter: str, frames: dict, parameters: dict | None = None) -> str:
    """'' when the loaded sources ``frames`` ({source: responses}) can serve ``chapter``, else one
    sentence saying what the chapter needs and what the files lack."""
    from metacog.hypotheses.reasoning_text import MIN_CLASS

    if chapter in ("rank_one", "pairwise"):
        return _panel_shortfall(chapter, frames)
    if chapter == "power":
        return _power_shortfall(frames)
    if chapter == "shortcut":
        return _shortcut_shortfall(frames, (parameters or {}).get("reasoning_models", ()))
    if chapter == "miscalibration":
        from metacog.hypotheses.miscalibration import policy_frames

        found = policy_frames(list(frames))
        return "" if found.frames else ("needs answers under the policies C0, C1 and C2 with yes / no / "
                                        "abstain decisions: " + " ".join(found.lacking))
    if chapter == "reasoning_text":
        return "" if text_sources(frames) else (
            f"needs reasoning texts (the reasoning_text column) with at least {MIN_CLASS} correct and "
            f"{MIN_CLASS} wrong answers under one probe; the file has none")
    raise ValueError(f"serving.shortfall: {chapter!r} is not a hypothesis chapter; known: {CHAPTERS}.")


def reaim(chapter: str, parameters: dict, frames: dict) -> dict:
    """``chapter``'s ``parameters`` with ``sources`` replaced by the loaded sources ``frames``
    (the reasoning-text chapter: each probe with texts, 'file:probe'), no cuts, and the
    parameters that read the book's recorded runs emptied (:data:`DETACHED`)."""
    out = {**parameters, **DETACHED.get(chapter, {}), "sources": list(frames)}
    if "cuts" in parameters:
        out["cuts"] = {}
    if chapter == "reasoning_text":
        out["sources"] = text_sources(frames)
        out["answer_sources"] = answer_sources(frames)
        if "length_sources" in parameters:
            out["length_sources"] = length_sources(frames)
    return out


def found_in_files(chapter: str, sources: list[str], given: dict) -> dict:
    """For ``metacog chapter CHAPTER --source ...``: the parameters the chapter reads from
    the sources' own files instead of the book's runs (reasoning_text: their answer attempts
    and reply lengths, as :func:`reaim` finds them); a key given with ``-p`` (``given``) is
    kept as given. A source 'file.csv:probe' is searched as the whole file."""
    if chapter != "reasoning_text":
        return {}
    from metacog.data.files import split_probe

    frames = load(list(dict.fromkeys(split_probe(s)[0] for s in sources)))
    found = {"answer_sources": answer_sources(frames), "length_sources": length_sources(frames)}
    return {k: v for k, v in found.items() if k not in given and v}


def length_sources(frames: dict) -> list[str]:
    """'source:probe' for every probe of every source whose rows record each reply's length
    (:data:`metacog.hypotheses.reasoning_text.length.LENGTH_COLUMNS`) beside a stated confidence
    and a grade: the reasoning-text chapter's reply-length section reads them."""
    from metacog.hypotheses.reasoning_text.length import LENGTH_COLUMNS

    out = []
    for s, df in frames.items():
        for probe, g in df.groupby("probe", observed=True):
            has = lambda c: c in g and pd.to_numeric(g[c], errors="coerce").notna().any()  # noqa: E731
            if has("confidence") and has("correct") and any(has(c) for c in LENGTH_COLUMNS):
                out.append(f"{s}:{probe}")
    return out
