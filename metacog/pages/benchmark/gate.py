"""The adequacy gate of the benchmark pages (re-exported by :mod:`metacog.pages.benchmark`).

- :func:`model_gate` — :func:`metacog.hypotheses.adequacy.adequacy` on the attempts a judgment
  is scored against, the chance level read from the items' own answer sets;
- :func:`display_gate` — the page table: correct answers, parse rate, accuracy with its exact
  interval, the chance level (or that none is known), the majority baseline, and why;
- :func:`gate_sentence` — who passes, in words;
- :func:`no_signal_notice` — the admonition at the top of a page where no model passes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.hypotheses.adequacy import MIN_CORRECT, MIN_PARSE, adequacy, failed_rules
from metacog.hypotheses.common import short_model
from metacog.tidy import phrasing
from metacog.tidy.report import escape_text, fmt_ci, fmt_count, fmt_num, pretty, warning

#: The verdict reason of a model whose answers fail the gate starts with this.
GATE_FAILED = "its answers fail the adequacy gate"


def which(names: list[str], n: int) -> str:
    """Which of ``n`` models ``names`` are, reading well for a single model too."""
    if n == 1:
        return names[0] if names else "no model (the page judges only one)"
    return phrasing.which(names, n, "model")


def model_gate(responses: pd.DataFrame, probe: str = "answer_no_context", *, chance=None, items=None,
               min_items: int = 20, min_correct: int = MIN_CORRECT, min_parse: float = MIN_PARSE) -> pd.DataFrame:
    """:func:`metacog.hypotheses.adequacy.adequacy` of each model's ``probe`` attempts (default: the
    answer without the context, the target of the prospective judgment); one row per model.
    ``items`` (the run's :class:`~metacog.tidy.items.Item` list) gives each item's answer set,
    read for ``probe`` (:func:`metacog.hypotheses.answer_sets.answer_sets`)."""
    if probe not in set(responses["probe"]):
        raise ValueError(f"model_gate: probe {probe!r} is not in the responses; they have "
                         f"{sorted(responses['probe'].dropna().unique())}.")
    if items is not None and not isinstance(items, pd.DataFrame):
        from metacog.hypotheses.answer_sets import answer_sets
        items = answer_sets(items, probe)
    return adequacy(responses, probe=probe, chance=chance, items=items, min_items=min_items,
                    min_correct=min_correct, min_parse=min_parse)


def _chance_cell(r) -> str:
    if not r.get("chance_known", True):
        return "unknown (free answers)"
    return f"{fmt_num(r['chance'])} ({r['chance_basis']})"


def _baseline_cell(r) -> str:
    base = r.get("baseline", np.nan)
    if pd.isna(base) or not r.get("chance_known", True):
        return "–"
    return f"{fmt_num(base)} ({r['baseline_what']})"


def _passes(r) -> str:
    if not r["carries_signal"]:
        return "no"
    return "yes" if r.get("chance_known", True) else "yes, on counts only (no chance level known)"


def display_gate(gate: pd.DataFrame):
    """The gate for a page: model, items, correct answers, share parsed, accuracy (95% exact
    CI), the chance level and where it comes from (or that none is known), the majority
    baseline, whether the model passes and why (the accuracy must clear the higher of the two)."""
    recs = gate.to_dict("records")
    t = pd.DataFrame({
        "model": gate["model"].map(short_model), "items": gate["items"], "correct": gate["n_correct"],
        "parsed": [fmt_num(r["parse_rate"], pct=True) if pd.notna(r.get("parse_rate", np.nan)) else "unknown"
                   for r in recs],
        "accuracy (95% CI)": [fmt_ci(r["accuracy"], r["ci_low"], r["ci_high"]) for r in recs],
        "chance": [_chance_cell(r) for r in recs], "majority baseline": [_baseline_cell(r) for r in recs],
        "passes": [_passes(r) for r in recs], "why": gate["reason"]})
    return pretty(t)


def _rules(gate: pd.DataFrame) -> str:
    r = {"min_correct": MIN_CORRECT, "min_parse": MIN_PARSE, **gate.attrs.get("rules", {})}
    return (f"at least {fmt_count(r['min_correct'], 'correct answer')}, at least "
            f"{fmt_num(r['min_parse'], pct=True)} of answers parsed, and accuracy above chance and the "
            f"majority baseline wherever a chance level is known")


def gate_sentence(gate: pd.DataFrame, what: str = "answers") -> str:
    """Which models pass the gate, in words, and what happens to the others."""
    good = [short_model(m) for m in gate.loc[gate["carries_signal"], "model"]]
    bad = [short_model(m) for m in gate.loc[~gate["carries_signal"], "model"]]
    n = len(gate)
    if not n:
        return "No model has graded attempts, so no model can be judged."
    out = ("; every model stays in the tables, marked, and out of every metacognitive claim below, "
           "since a judgment of knowledge that is not there says nothing.")
    if not good:
        only = short_model(gate["model"].iloc[0])
        who = (f"{only} (the only model judged here) carry no" if n == 1
               else f"{phrasing.which([], n, 'model')} carry")
        return f"The {what} of {who} signal that clears the gate ({_rules(gate)})" + out
    s = f"The {what} of {which(good, n)} carry signal that clears the gate ({_rules(gate)})."
    if "chance_known" in gate.columns:
        free = [short_model(m) for m in gate.loc[gate["carries_signal"] & ~gate["chance_known"].astype(bool), "model"]]
        if free:
            s += (f" For {phrasing.join(free)} no chance level is known (free answers), so "
                  f"{phrasing.verb(len(free), 'it passes', 'they pass')} on the counts alone.")
    if bad:
        s += (f" {phrasing.join(bad)} {phrasing.verb(len(bad), 'does', 'do')} not: "
              f"{phrasing.verb(len(bad), 'it stays', 'they stay')} in the tables, marked, and out of "
              f"every metacognitive claim below, since a judgment of knowledge that is not there "
              f"says nothing.")
    return s


def no_signal_notice(gate: pd.DataFrame, what: str = "answers without the context") -> str:
    """A MyST warning for the top of a page where no model passes the gate ('' when one does):
    that the page draws no verdict, and which rule each model fails, with its numbers."""
    if len(gate) and gate["carries_signal"].any():
        return ""
    head = ("No model on this page passes the adequacy gate on its " + what + ", so the page draws "
            "no verdict about any model's metacognition: its tables show what was measured, and "
            "every judgment claim below is marked insufficient evidence.")
    if not len(gate):
        body = "\n\nNo model has graded attempts."
    else:
        body = "\n\n" + "\n".join(f"- {escape_text(short_model(r['model']))}: {failed_rules(r)}." for r in gate.to_dict("records"))
    return warning(head + body)
