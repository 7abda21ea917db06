"""Panels: the unit every hypothesis chapter iterates over.

A panel is one (source, benchmark, probe): an items x models matrix of binary
confidence judgments and the matching matrix of correctness. :func:`panels` loads
each source once with :func:`metacog.data.load_responses`, splits it by benchmark and
probe, binarises confidence with the cut asked for that source
(:func:`metacog.tidy.tables.binarize`), and leaves a note for everything it drops and why.

>>> ps = panels(["atlas", "battery"])          # doctest: +SKIP
>>> for p in ps.panels:                        # doctest: +SKIP
...     stats.pairwise_calibration(p.confidence, p.correct)
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from metacog.tidy import tables
from metacog.data.designs import UNKNOWN_DESIGN, Design, design as design_of
from metacog.data.responses import load_responses, source_label, source_name

__all__ = ["Panel", "PanelSet", "panels"]

ANSWER = "answer"


@dataclass
class Panel:
    """One (source, benchmark, probe): an items x models judgment matrix and its correctness."""

    source: str  # the source string as given
    label: str  # short human name: "Atlas", "Battery", a run's name, a file's stem
    benchmark: str
    probe: str
    table: pd.DataFrame = field(repr=False)  # its tidy rows (sample 0 only)
    cut: str | float  # "median" or a number; "binary" when confidence is already 0/1
    confidence_raw: pd.DataFrame = field(repr=False)  # items x models, raw confidence
    confidence: pd.DataFrame = field(repr=False)  # items x models, 0/1 after the cut
    correct: pd.DataFrame = field(repr=False)  # items x models, 0/1, same index/columns
    cut_report: pd.DataFrame = field(repr=False)  # from metacog.tidy.tables.binarize_report
    notes: list[str] = field(default_factory=list)  # plain sentences for the page
    #: how the judgments were elicited (:mod:`metacog.data.designs`): timing, elicitation, ...
    design: Design = UNKNOWN_DESIGN

    @property
    def name(self) -> str:
        """'Atlas · mmlu · verbal confidence'; the benchmark is left out when it repeats the label."""
        parts = [self.label]
        if self.benchmark.lower() != self.label.lower():
            parts.append(self.benchmark)
        parts.append(self.probe.replace("_", " "))
        return " · ".join(parts)

    @property
    def models(self) -> list[str]:
        return list(self.confidence.columns)

    def summary(self) -> pd.DataFrame:
        """This panel as a one-row DataFrame (the columns of :meth:`PanelSet.summary`)."""
        return pd.DataFrame([self.row()])

    def row(self) -> dict:
        """One row of :meth:`PanelSet.summary`, as a dict."""
        yes = self.cut_report["yes_share"]
        return {"panel": self.name, "source": source_name(self.source), "benchmark": self.benchmark,
                "probe": self.probe, "models": self.confidence.shape[1],
                "items": self.confidence.shape[0], "design": self.design.timing,
                "elicitation": self.design.elicitation, "cut": self.cut,
                "yes_share_min": float(yes.min()), "yes_share_max": float(yes.max()),
                "correct_share": float(np.nanmean(self.correct.to_numpy()))}


NOTE_COLUMNS = ["source", "benchmark", "probe", "note"]


@dataclass
class PanelSet:
    """The panels of several sources: ``.panels`` (list), ``.notes`` (source, benchmark, probe, note)."""

    panels: list[Panel]
    notes: pd.DataFrame

    def __iter__(self):
        return iter(self.panels)

    def __len__(self) -> int:
        return len(self.panels)

    def summary(self) -> pd.DataFrame:
        """One row per panel: source, benchmark, probe, models, items, design (when the judgment
        was made: :data:`metacog.data.designs.TIMINGS`) and elicitation, cut rule, yes-share
        min/max over models, and the share of correct answers."""
        cols = ["panel", "source", "benchmark", "probe", "models", "items", "design", "elicitation", "cut",
                "yes_share_min", "yes_share_max", "correct_share"]
        return pd.DataFrame([p.row() for p in self.panels], columns=cols)


def _cut_for(source: str, label: str, cuts: dict, default):
    """The cut asked for ``source`` (by its string, then its label); a numeric string becomes a number."""
    cut = next((cuts[k] for k in (source, label) if k in cuts), default)
    if isinstance(cut, str) and cut not in ("median", "fixed"):
        try:
            return float(cut)
        except ValueError:
            pass  # binarize names the bad value
    return cut


def _with_answer_correctness(rows: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """Fill missing ``correct`` from the same model's 'answer' row on the same item."""
    if answers.empty or rows["correct"].notna().all():
        return rows
    key = answers.drop_duplicates(["model", "item_id"]).set_index(["model", "item_id"])["correct"]
    filled = pd.MultiIndex.from_frame(rows[["model", "item_id"]]).map(key.get)
    rows = rows.copy()
    rows["correct"] = rows["correct"].fillna(pd.Series(np.asarray(filled, dtype=float), index=rows.index))
    return rows


def _keep_models(rows: pd.DataFrame, probe: str, had_answers: bool, min_items: int,
                 notes: list[str]) -> pd.DataFrame:
    """Drop models with no usable confidence or correctness, with a note for each."""
    flags = pd.DataFrame({"y": rows["correct"].notna(), "c": rows["confidence"].notna()})
    flags["both"] = flags["y"] & flags["c"]
    # one row per (model, item) here (sample 0 of one probe), so a sum counts items
    per = flags.groupby(rows["model"], observed=True).agg({"y": "any", "c": "any", "both": "sum"})
    any_y, any_c, usable = per["y"], per["c"], per["both"]
    dropped = []
    for model in sorted(per.index):
        if not any_y[model]:
            why = ("its judgment rows carry no correctness and it has no 'answer' rows to take it from"
                   if not had_answers else "it has no correctness on these items, not even from its "
                   "'answer' rows")
        elif not any_c[model]:
            why = "it gave no confidence on this probe"
        elif usable[model] < min_items:
            why = (f"only {int(usable[model])} item(s) have both its confidence and its "
                   f"correctness (need {min_items})")
        else:
            continue
        notes.append(f"Model {model!r} dropped from probe {probe!r}: {why}.")
        dropped.append(model)
    return rows[~rows["model"].isin(dropped).to_numpy()] if dropped else rows


def _build(source, label, bench, probe, rows, cut, min_models, min_items, notes) -> Panel | None:
    if rows.empty:
        if not any(n.startswith("Not built") for n in notes):
            notes.append("Not built: every model was dropped (see the notes above).")
        return None
    models = rows["model"].nunique()
    if models < min_models:
        notes.append(f"Not built: {models} model(s) left, fewer than min_models={min_models}.")
        return None
    conf_raw = tables.wide(rows, "confidence")
    correct = tables.wide(rows, "correct").reindex(index=conf_raw.index, columns=conf_raw.columns)
    both = (conf_raw.notna() & correct.notna()).any(axis=1)
    conf_raw, correct = conf_raw[both], correct[both]
    if len(conf_raw) < min_items:
        notes.append(f"Not built: {len(conf_raw)} item(s) with a judgment and a correctness, fewer "
                     f"than min_items={min_items}.")
        return None
    values = conf_raw.to_numpy(dtype=float)
    if np.isin(values[~np.isnan(values)], (0.0, 1.0)).all():
        cut = "binary"
    try:
        binary = tables.binarize(conf_raw, "median" if cut == "binary" else cut)
        report = tables.binarize_report(conf_raw, "median" if cut == "binary" else cut)
    except ValueError as e:
        raise ValueError(f"panels: source {source!r}, probe {probe!r}: {e}") from None
    for r in report[report["constant"]].itertuples():
        said = "yes" if r.yes_share == 1 else "no"
        how = "in its own judgments" if cut == "binary" else "after the cut"
        notes.append(f"Model {r.model!r} says {said} on every item {how}: its judgment carries no "
                     "information about items (tau is undefined for it).")
    if tables.agreement(correct, min_models=1)["unanimous"].all():
        notes.append("Correctness is identical across models on every item: no difference in "
                     "performance between models to explain.")
    return Panel(source=source, label=label, benchmark=bench, probe=probe,
                 table=rows.reset_index(drop=True), cut=cut, confidence_raw=conf_raw, confidence=binary,
                 correct=correct, cut_report=report, notes=list(notes),
                 design=design_of(source, probe, rows))


def _source_panels(source, *, cut, probes, min_models, min_items, exclude_probes, note):
    df = load_responses(source)
    label = df.attrs["label"]
    for text in df.attrs.get("notes", []):
        note(None, None, text)
    if df["benchmark"].isna().any():
        df["benchmark"] = df["benchmark"].fillna(label)
    if (df["sample"] > 0).any():
        note(None, None, f"Repeated samples: only sample 0 is used ({int((df['sample'] > 0).sum())} "
                         "later-sample rows left out).")
        df = df[df["sample"] == 0]
    out = []
    for bench, part in df.groupby("benchmark", sort=False, observed=True):
        answers = part[(part["probe"] == ANSWER)].dropna(subset=["correct"])
        for probe, rows in part.groupby("probe", sort=False, observed=True):
            if probe in exclude_probes or (probes is not None and probe not in probes):
                continue
            notes: list[str] = []
            rows = _with_answer_correctness(rows, answers)
            rows = _keep_models(rows, probe, not answers.empty, 1, notes)  # no correctness/confidence
            n_items = rows.dropna(subset=["confidence", "correct"])["item_id"].nunique()
            if 0 < n_items < min_items:
                notes.append(f"Not built: {n_items} item(s) with a judgment and a correctness, fewer "
                             f"than min_items={min_items}.")
                rows = rows.iloc[:0]
            else:
                rows = _keep_models(rows, probe, not answers.empty, min_items, notes)
            panel = _build(source, label, str(bench), str(probe), rows, cut, min_models, min_items, notes)
            for text in notes:
                note(str(bench), str(probe), text)
            if panel is not None:
                out.append(panel)
    if probes is not None and not set(probes) & set(df["probe"]):
        note(None, None, f"None of the probes {list(probes)} occur here; its probes are "
                         f"{sorted(df['probe'].unique())}.")
    return out


def panels(sources: list[str], *, cuts: dict | None = None, default_cut="median",
           probes: list[str] | None = None, min_models: int = 2, min_items: int = 10,
           exclude_probes=("answer", "answer_no_context")) -> PanelSet:
    """Every (source, benchmark, probe) panel of ``sources``, binarised and aligned.

    ``sources``: strings :func:`metacog.data.load_responses` takes ("atlas", "battery",
    a recorded run, "run:probe", a file path). ``cuts`` maps a source string or its label
    to "median" or a number (the fixed cut); other sources use ``default_cut``. Columns
    already 0/1 are used as they are (the panel's cut is then "binary"). ``probes`` keeps
    only those probes; ``exclude_probes`` never become panels (answer probes carry no
    judgment, but a judgment probe whose rows lack correctness takes it from the same
    model's 'answer' rows on the same item). A model without correctness or confidence,
    or with fewer than ``min_items`` items holding both, is dropped; a panel with fewer
    than ``min_models`` models or ``min_items`` items is not built. Each of these leaves a
    note. Only sample 0 of repeated samples is used; a source with no benchmark column
    uses its label as benchmark.

    Returns a :class:`PanelSet`: ``.panels``, ``.notes`` and ``.summary()``.
    """
    if isinstance(sources, str):
        sources = [sources]
    cuts = dict(cuts or {})
    labels = {s: source_label(s) for s in sources}
    unknown = [k for k in cuts if k not in labels and k not in labels.values()]
    if unknown:
        raise ValueError(f"panels: cuts= names {unknown}, which are neither a source nor a source's "
                         f"label; sources: {list(sources)}, labels: {list(labels.values())}.")
    rows: list[dict] = []
    out: list[Panel] = []
    for source in sources:
        cut = _cut_for(source, labels[source], cuts, default_cut)
        key = (source, repr(cut), None if probes is None else tuple(probes), min_models, min_items,
               tuple(exclude_probes))
        if _reused is not None and key in _reused:
            built, said = _reused[key]
        else:
            said = []
            built = _source_panels(source, cut=cut, probes=probes, min_models=min_models, min_items=min_items,
                                   exclude_probes=tuple(exclude_probes),
                                   note=lambda bench, probe, text, _said=said: _said.append((bench, probe, text)))
            if _reused is not None:
                _reused[key] = (built, said)
        out += built
        rows += [{"source": source_name(source), "benchmark": b, "probe": q, "note": t} for b, q, t in said]
    return PanelSet(panels=out, notes=pd.DataFrame(rows, columns=NOTE_COLUMNS))


#: Panels already built inside a :func:`reuse` block, by source and settings (None outside one).
_reused: dict | None = None


@contextlib.contextmanager
def reuse():
    """Within this block :func:`panels` builds each source's panels once for the same settings and
    hands the same :class:`Panel` objects back to later calls (which must not change them in
    place; :func:`metacog.hypotheses.pairwise.sensitivity.drop_model` copies). The findings page
    gathers six chapters that read the same sources: it loads and cuts each once."""
    global _reused
    outer = _reused
    _reused = {} if outer is None else outer
    try:
        yield
    finally:
        _reused = outer
