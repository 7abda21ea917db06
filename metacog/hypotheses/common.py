"""What every hypothesis module needs to label its rows: panel names and judgment timing; and
:class:`ChapterResult`, the base of the chapters' result objects."""

from __future__ import annotations

import dataclasses
import functools

#: When a probe's judgment is made, relative to the model's own answer.
TIMING = {
    "prospective": "before answering",
    "path_choice": "before answering",
    "counterfactual": "after a correct answer with the context",
    "other_confidence": "before answering, about other people",
}
DEFAULT_TIMING = "after answering"


def timing(probe: str) -> str:
    """'before answering' for prospective probes, else when the judgment was made."""
    return TIMING.get(probe, DEFAULT_TIMING)


#: The timing of a panel whose data do not say when its judgments were made (a user's file
#: without a ``design`` column, with a probe the book does not know).
UNKNOWN_TIMING = "unknown"


def panel_timing(panel) -> str:
    """When ``panel``'s judgments were made: :func:`timing` of its probe, but "unknown" where the
    panel's design is unknown (a user's file without a ``design`` column): a probe *named*
    "prospective" does not say the judgment was made before answering, and the panels table,
    which shows the design, would otherwise contradict the sentences built from this."""
    design = getattr(panel, "design", None)
    if getattr(design, "timing", None) == UNKNOWN_TIMING:
        return UNKNOWN_TIMING
    return timing(panel.probe)


def panel_columns(panel) -> dict:
    """The columns that identify a panel in a result table."""
    return {"panel": panel.name, "source": panel.source, "benchmark": panel.benchmark,
            "probe": panel.probe, "timing": panel_timing(panel)}


def per_panel(panelset, analyse, **settings):
    """``analyse(panel.confidence, panel.correct, **settings)`` for every panel, stacked into one
    table with the panel's columns first. Each result is remembered on disk
    (:func:`metacog.memo.memo`) while data, settings and code are unchanged. A panel that another
    process (a chapter built at the same time) is analysing is left for last, so the two share
    the panels rather than one waiting for the other (:func:`metacog.memo.memo_if_free`)."""
    import pandas as pd

    from metacog.memo import memo, memo_if_free

    done, busy = {}, []
    for i, p in enumerate(panelset):
        free, result = memo_if_free(analyse, p.confidence, p.correct, **settings)
        if free:
            done[i] = result
        else:
            busy.append(i)
    for i in busy:
        p = panelset.panels[i]
        done[i] = memo(analyse, p.confidence, p.correct, **settings)
    parts = [done[i].assign(**panel_columns(p)) for i, p in enumerate(panelset)]
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    first = list(panel_columns(panelset.panels[0]))
    return out[first + [c for c in out.columns if c not in first]]


def with_ci(table, column: str, label: str, *, digits: int = 2, pct: bool = False):
    """A column of "estimate (95% CI low to high)" strings from ``column`` and its
    ``_ci_low``/``_ci_high`` columns, named ``label``."""
    from metacog.tidy.report import fmt_ci

    lo, hi = f"{column}_ci_low", f"{column}_ci_high"
    values = [fmt_ci(r.get(column), r.get(lo), r.get(hi), digits=digits, pct=pct)
              for r in table.to_dict("records")]
    return {label: values}


def short_model(name: str) -> str:
    """A model id without its provider prefix, for axis labels: 'openai/gpt-4o' -> 'gpt-4o'."""
    return str(name).split("/")[-1]


def short_models(names) -> list[str]:
    """:func:`short_model` of each name, except where two names would share a label: those keep
    their full id, so that every label of one table or figure names one model.

    >>> short_models(["openai/gpt-4o", "a/x", "b/x"])
    ['gpt-4o', 'a/x', 'b/x']
    """
    from collections import Counter

    names = [str(n) for n in names]
    count = Counter(short_model(n) for n in names)
    return [short_model(n) if count[short_model(n)] == 1 else n for n in names]


def notes_table(notes):
    """The panels' notes for a page (what was dropped and why), or a sentence when there are none."""
    from IPython.display import Markdown

    from metacog.tidy.report import pretty

    if notes is None or len(notes) == 0:
        return Markdown("Every source loaded without a note: no model or panel was dropped.")
    shown = notes.fillna({"benchmark": "all", "probe": "all"})
    return pretty(shown, names={"note": "what happened"})


def status_sentence(verdicts: list, supported: str, not_supported: str, insufficient: str,
                    noun: str = "panels", negligible: str = "the effect is negligible (within the line) in") -> str:
    """One sentence grouping verdicts by status, naming only the groups that have members:
    'Confidence is dominated by one factor in 3 of the 5 panels (A, B and C); it is not in
    2 of the 5 panels (D and E).' The panel is the part of each claim before ':'."""
    from metacog.tidy.report import fmt_list
    from metacog.hypotheses.verdict import INSUFFICIENT, NEGLIGIBLE, NOT_SUPPORTED, SUPPORTED

    n = len(verdicts)
    clauses = []
    for status, words in ((SUPPORTED, supported), (NEGLIGIBLE, negligible), (NOT_SUPPORTED, not_supported),
                           (INSUFFICIENT, insufficient)):
        names = [v.claim.split(":")[0] for v in verdicts if v.status == status]
        if names:
            clauses.append(f"{words} {fmt_list(names, n, noun=noun)}")
    if not clauses:
        return ""
    text = "; ".join(clauses) + "."
    return text[0].upper() + text[1:]


#: The decorator of a chapter's result class: a frozen dataclass, compared by identity (its
#: fields are tables) and shown by :meth:`ChapterResult.__repr__`.
chapter_result = functools.partial(dataclasses.dataclass, frozen=True, eq=False, repr=False)


@chapter_result
class ChapterResult:
    """The base of what a chapter's entry points return: named fields (tables, sentences,
    mappings) and ``summary()``, the headline as a tidy DataFrame. A field can also be read by
    name, ``result["table"]``, as from the dict such a result used to be."""

    def __getitem__(self, name: str):
        if name not in self.field_names():
            raise KeyError(f"{type(self).__name__} has no field {name!r}; its fields: {self.field_names()}")
        return getattr(self, name)

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    def __repr__(self) -> str:
        def shape(v) -> str:
            if hasattr(v, "shape") and hasattr(v, "columns"):
                return f"<table {v.shape[0]} x {v.shape[1]}>"
            if isinstance(v, (dict, list, tuple)):
                return f"<{type(v).__name__} of {len(v)}>"
            return repr(v)
        return f"{type(self).__name__}({', '.join(f'{n}={shape(getattr(self, n))}' for n in self.field_names())})"
