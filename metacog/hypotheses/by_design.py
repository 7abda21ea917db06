"""Verdicts grouped by design: compare like with like.

A panel's design (:mod:`metacog.data.designs`) says when its judgments were made: before
answering (prospective), after a correct answer made with the context (counterfactual), after
answering, ... Paper 1's claims are about prospective and counterfactual judgments, so a chapter
never counts panels across designs ("5 of 8 panels") and lists paper 1's designs first. The
functions here read each verdict's design from the ``design`` column of the chapter's result
tables (the panel is the part of a verdict's claim before ": ").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.data.designs import TIMING_WORDS, UNKNOWN, timing_rank

__all__ = ["by_design", "design_head", "design_of", "design_order", "verdict_frame", "verdict_frame_text"]

#: How each design is named at the head of a sentence about its panels.
DESIGN_HEADS = {
    "prospective": "Prospective judgments (made before answering, the design of paper 1's claims)",
    "counterfactual": "Counterfactual judgments (after a correct answer made with the context, paper 1's "
                      "other design)",
    "after answering": "Judgments made after answering (not paper 1's design)",
    UNKNOWN: "Judgments of unknown design (the data do not say when they were made)",
}


def design_head(design: str) -> str:
    """'Prospective judgments (made before answering, ...)' for a sentence about one design."""
    if design in DESIGN_HEADS:
        return DESIGN_HEADS[design]
    words = TIMING_WORDS.get(design)
    return f"Judgments of design '{design}'" + (f" ({words})" if words else "")


def design_order(t: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``t`` sorted by their ``design`` column, paper 1's designs first (a missing
    column or value reads "unknown"); the order within a design is kept."""
    d = (t["design"] if "design" in t else pd.Series(UNKNOWN, index=t.index)).fillna(UNKNOWN)
    return t.assign(design=d).iloc[np.argsort([timing_rank(x) for x in d], kind="stable")]


def _panel_of(claim: str) -> str:
    return claim.split(": ", 1)[0]


def design_of(verdicts: list, *tables: pd.DataFrame) -> list[str]:
    """The design of each verdict's panel, read from the ``panel`` and ``design`` columns of
    ``tables``; "unknown" where none says."""
    known = {}
    for t in tables:
        if t is not None and len(t) and {"panel", "design"} <= set(t.columns):
            known.update(dict(zip(t["panel"], t["design"])))
    return [known.get(_panel_of(v.claim), UNKNOWN) for v in verdicts]


def by_design(verdicts: list, *tables: pd.DataFrame) -> dict[str, list]:
    """The verdicts grouped by their panels' design, paper 1's designs first (see
    :func:`design_of`). Count panels within one group only."""
    groups: dict[str, list] = {}
    for v, d in zip(verdicts, design_of(verdicts, *tables)):
        groups.setdefault(d, []).append(v)
    return dict(sorted(groups.items(), key=lambda kv: timing_rank(kv[0])))


def verdict_frame(verdicts: list, *tables: pd.DataFrame) -> pd.DataFrame:
    """:func:`metacog.hypotheses.verdict.verdict_table` with each panel's design as the first
    column, sorted by design (paper 1's first)."""
    from metacog.hypotheses.verdict import verdict_table

    t = verdict_table(verdicts)
    t.insert(0, "design", design_of(verdicts, *tables))
    return design_order(t).reset_index(drop=True)


def verdict_frame_text(verdicts: list, *tables: pd.DataFrame, digits: int = 2) -> pd.DataFrame:
    """The verdicts for a page, sorted by design (paper 1's first), one row each: design, claim,
    statistic, the estimate with its interval in one cell (``digits`` decimals whatever the other
    rows' magnitudes, more where an end would otherwise print as its line), n, the line in words,
    the verdict, the outcome in words, why, and why the line is where it is (when any says)."""
    from dataclasses import replace

    from metacog.hypotheses.verdict import _TABLE_NAMES, lean_table, separating_digits

    t = lean_table(verdicts, [replace(v, digits=separating_digits(v.ci_low, v.ci_high, [v.line], digits)).interval()
                              if np.isfinite(v.estimate) else "–" for v in verdicts])
    t.insert(0, "design", design_of(verdicts, *tables))
    return design_order(t).reset_index(drop=True).rename(columns=_TABLE_NAMES)


def design_sentence(summary: pd.DataFrame) -> str:
    """Which panels have which design, paper 1's designs first, from a panel summary
    (:meth:`metacog.hypotheses.panels.PanelSet.summary`): '1 prospective (spar · simplemc ·
    prospective); 5 after answering (Atlas · verbal confidence, ...)'."""
    from metacog.tidy.report import fmt_list

    if summary is None or not len(summary):
        return "no panel"
    t = design_order(summary)
    parts = []
    for d, g in t.groupby("design", sort=False):
        names = list(g["panel"])
        parts.append(f"{len(names)} {d} ({fmt_list(names)})")
    return "; ".join(parts)


def group_sentence(verdicts: list, supported: str, not_supported: str, insufficient: str,
                   noun: str = "panels", negligible: str = "the effect is negligible (within the line) in") -> str:
    """One clause per status for the verdicts of ONE design, counted within it and naming every
    panel: 'confidence is dominated by one factor in 1 of its 2 panels (A); the evidence is
    insufficient in 1 of its 2 panels (B)'. The panel is the part of a claim before ': '."""
    from metacog.hypotheses.verdict import INSUFFICIENT, NEGLIGIBLE, NOT_SUPPORTED, SUPPORTED
    from metacog.tidy.report import fmt_list

    n = len(verdicts)
    clauses = []
    for status, words in ((SUPPORTED, supported), (NEGLIGIBLE, negligible), (NOT_SUPPORTED, not_supported),
                           (INSUFFICIENT, insufficient)):
        names = [_panel_of(v.claim) for v in verdicts if v.status == status]
        if not names:
            continue
        which = fmt_list(names, max_names=8)
        if n == 1:
            clauses.append(f"{words} its one {noun.rstrip('s')} ({which})")
        elif len(names) == n:
            clauses.append(f"{words} {'both' if n == 2 else f'all {n}'} of its {noun} ({which})")
        else:
            clauses.append(f"{words} {len(names)} of its {n} {noun} ({which})")
    return "; ".join(clauses)


#: How :func:`timing_sentence` says each timing of :mod:`metacog.hypotheses.common`.
_TIMING_CLAUSES = {
    "before answering": ("is judged before answering, as paper 1's are",
                         "are judged before answering, as paper 1's are"),
    "after answering": ("judges an answer already given, which a model that sees its own answer can read",
                        "judge an answer already given, which a model that sees its own answer can read"),
    "after a correct answer with the context": ("is judged after a correct answer made with the context",
                                                "are judged after a correct answer made with the context"),
    "before answering, about other people": ("is judged before answering, about other people",
                                             "are judged before answering, about other people"),
}


def timing_sentence(table: pd.DataFrame) -> str:
    """When the judgments of the run's panels were made, from a result table with ``panel``
    and ``timing`` columns, naming only the panels of the run: 'Of this run's panels, spar ·
    prospective is judged before answering, as paper 1's are; Atlas · verbal confidence
    judges an answer already given, ...; for my_file the data do not say when.'"""
    from metacog.tidy.report import fmt_list

    if table is None or not len(table) or not {"panel", "timing"} <= set(table.columns):
        return "No panel was analysed, so no judgment timing is reported."
    first = table.drop_duplicates("panel")
    groups: dict[str, list] = {}
    for panel, timing in zip(first["panel"], first["timing"].fillna(UNKNOWN)):
        groups.setdefault(str(timing), []).append(str(panel))
    clauses = []
    for timing, names in groups.items():
        one, many = _TIMING_CLAUSES.get(timing, (f"is of timing '{timing}'", f"are of timing '{timing}'"))
        if timing == UNKNOWN:
            clauses.append(f"for {fmt_list(names)} the data do not say when the judgment was made")
        else:
            clauses.append(f"{fmt_list(names)} {one if len(names) == 1 else many}")
    head = "Of this run's panels, " if len(first) > 1 else "In this run, "
    return head + "; ".join(clauses) + "."
