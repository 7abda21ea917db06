"""The reasoning-text chapter: does a probe on the confidence reasoning beat the model's own yes/no?

For each ``"source:probe"`` with reasoning text this module keeps the models that follow the
output format and whose answers carry signal (the same gate as the benchmark pages), fits the
cross-validated text probe of :mod:`metacog.hypotheses.reasoning_text.probe` on their pooled texts, and compares its
AUROC with the model's own judgment (the verbal Yes/No, and the first-token P(Yes) where the
source has it): each AUROC with DeLong's interval and its counts, the difference with a paired
item bootstrap. :func:`verdicts` decides the claim per source; :func:`sampling_baseline`
compares the probe with ``k`` repeated yes/no samples.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.hypotheses.reasoning_text import probe as text_probe
from metacog.memo import memo
from metacog.hypotheses.adequacy import ungated
from metacog.data.files import split_probe
from metacog.hypotheses.common import ChapterResult, chapter_result, short_model
from metacog.tidy.report import fmt_list, pretty
from metacog.stats.intervals import auroc_ci
from metacog.hypotheses.verdict import INSUFFICIENT, NOT_SUPPORTED, SUPPORTED, Verdict, cap, decide
from metacog.hypotheses.reasoning_text.display import (  # noqa: F401 (the chapter's one namespace)
    JUDGMENTS, MIN_CLASS, _cell, display, no_model_notice, pooled_table)


def judgment_name(column: str, values) -> str:
    """How the page names a judgment column: 'own Yes/No' for a ``confidence`` of 0s and 1s,
    'own stated confidence' for one that takes other values (a number the model wrote, as in
    the calibration study's protocol), else :data:`JUDGMENTS`' name."""
    if column == "confidence":
        seen = pd.Series(values, dtype=float).dropna()
        if len(seen) and not seen.isin([0.0, 1.0]).all():
            return "own stated confidence"
    return JUDGMENTS.get(column, column)


def split_source(source: str) -> tuple[str, str | None]:
    """'squad:prospective' -> ('squad', 'prospective'), as :func:`metacog.data.files.split_probe` reads it."""
    return split_probe(str(source))


def shown_source(source: str) -> str:
    """A source as the page names it: a file by its file name only, with its ':probe' if given."""
    from metacog.data.responses import source_name

    base, probe = split_source(source)
    return source_name(base) + (f":{probe}" if probe else "")


def gate_models(full: pd.DataFrame, probe: str, *, min_conformance: float = 0.8) -> tuple[list, pd.DataFrame]:
    """The models of ``full`` that follow the format (:func:`metacog.tidy.tables.conforming_models`)
    and whose answers scored against ``probe`` carry signal (:func:`metacog.hypotheses.adequacy.adequacy`).
    Returns (kept models, the adequacy table with a ``conforms`` column)."""
    from metacog.tidy import tables
    from metacog.hypotheses.adequacy import adequacy

    recorded = "parse_status" in full and full["parse_status"].notna().any()  # the loader adds an empty one
    conforming = (set(tables.conforming_models(full, min_rate=min_conformance))
                  if recorded else set(full["model"]))
    # chance from each item's own answer set, as on the benchmark pages, where the book can load
    # the items (a registered benchmark with its data); otherwise the gate says chance is unknown
    try:
        gate = adequacy(full, probe=probe, items="auto" if "benchmark" in full else None)
    except (ValueError, OSError):
        gate = adequacy(full, probe=probe)
    if not gate["chance_known"].all():
        # items without an answer set (the audit's yes/no questions): read the decisions instead,
        # so yes/no/abstain answers are tested against chance 0.5, as on the audit page
        try:
            plain = adequacy(full, probe=probe).set_index("model")
        except (ValueError, OSError):
            plain = None
        if plain is not None:
            swap = ~gate["chance_known"] & gate["model"].map(plain["chance_known"]).fillna(False).astype(bool)
            if swap.any():
                order = gate["model"].tolist()
                better = plain.loc[gate.loc[swap, "model"]].reset_index()
                gate = (pd.concat([gate[~swap], better], ignore_index=True)
                        .set_index("model").loc[order].reset_index())
    gate["conforms"] = gate["model"].isin(conforming)
    kept = gate.loc[gate["carries_signal"] & gate["conforms"], "model"].tolist()
    return kept, gate


def rows_for(source: str) -> tuple[pd.DataFrame | None, pd.DataFrame | None, str]:
    """(the whole source, its ``probe`` rows with reasoning text, why not) for one source.
    The first two are None, and the sentence says why, when the source has no reasoning text."""
    from metacog.data import load_responses

    base, probe = split_source(source)
    full = load_responses(base)
    name = shown_source(source)
    if "reasoning_text" not in full or full["reasoning_text"].isna().all():
        return None, None, (f"{name} has no reasoning text (its reasoning_text column is empty or "
                            f"absent), so there is nothing for the probe to read")
    if probe is None:
        probes = sorted(map(str, full["probe"].dropna().unique()))
        if len(probes) != 1:
            return None, None, (f"{name} holds several probes ({fmt_list(probes)}) and names none; "
                                f"give it with the probe to read after a colon, e.g. "
                                f"'{shown_source(base)}:{probes[0]}'")
        probe = probes[0]
    if full.loc[full["probe"] == probe, "reasoning_text"].isna().all():
        return None, None, f"{name} has no reasoning text, so there is nothing for the probe to read"
    rows = full[(full["probe"] == probe)].dropna(subset=["reasoning_text", "correct"])
    return full, rows[rows["reasoning_text"].astype(str).str.strip() != ""], ""


def fitted_rows(rows: pd.DataFrame, text: str = "reasoning_text") -> pd.DataFrame:
    """The rows :func:`compare` fits on: with a ``text``, a grade and every :func:`judgments` value."""
    return rows.dropna(subset=[text, "correct", *judgments(rows)])


def judgments(rows: pd.DataFrame) -> list[str]:
    """The :data:`JUDGMENTS` columns of ``rows`` that hold any value."""
    return [c for c in JUDGMENTS if c in rows and rows[c].notna().any()]


def compare(rows: pd.DataFrame, *, text: str = "reasoning_text", cv: int = 5, C: float = 1.0,
            seed: int = 0, n_boot: int = 1000) -> pd.DataFrame:
    """The text probe against the model's own judgments on the same rows (pooled over models).

    One row per score ('text_probe', then 'confidence' and 'p_yes' where present), named in
    ``judgment`` (:func:`judgment_name`): auroc with DeLong's ci_low/ci_high, n_pos, n_neg, and
    diff (text probe minus this score) with its paired-bootstrap diff_ci_low/diff_ci_high; and
    the probe's coefficients (a Series), as a pair. Raises ValueError when a class is too small
    to cross-validate."""
    rows, cols = fitted_rows(rows, text), judgments(rows)
    probe = text_probe.ReasoningTextProbe(C=C, cv=cv, seed=seed).fit(rows[text].astype(str).tolist(),
                                                                   rows["correct"].to_numpy())
    scores = {"text_probe": probe.oof_proba_, **{c: rows[c].to_numpy(dtype=float) for c in cols}}
    out = []
    for name, s in scores.items():
        r = auroc_ci(probe.y_, s, min_class=MIN_CLASS)
        row = {"score": name, "judgment": "text probe" if name == "text_probe" else judgment_name(name, s),
               "texts": len(rows), "n_pos": r.n_pos, "n_neg": r.n_neg, "auroc": r.estimate,
               "ci_low": r.ci_low, "ci_high": r.ci_high, "diff": np.nan, "diff_ci_low": np.nan,
               "diff_ci_high": np.nan}
        if name != "text_probe":
            b = text_probe.compare_auroc(probe.y_, {"text_probe": probe.oof_proba_, name: s},
                                        n_boot=n_boot, seed=seed, reference=name).set_index("score")
            row.update(diff=b.at["text_probe", "diff_vs_ref"], diff_ci_low=b.at["text_probe", "diff_ci_low"],
                       diff_ci_high=b.at["text_probe", "diff_ci_high"])
        out.append(row)
    return pd.DataFrame(out), probe.coef_


@chapter_result
class TextProbeComparison(ChapterResult):
    """:func:`analyse` over its sources: ``table`` (the comparisons stacked, with ``source`` and
    ``models`` columns), ``models`` ({source: (kept, all)}), ``skipped`` ({source: why}), ``coef``
    ({source: the probe's coefficients}), ``rows`` ({source: the pooled rows}) and ``ungated``
    ({source: kept models whose chance level is unknown, so the gate could not test them}) and
    ``gates`` ({source: :func:`gate_models`' table})."""

    table: pd.DataFrame
    models: dict
    skipped: dict
    coef: dict
    rows: dict
    ungated: dict
    gates: dict

    def summary(self) -> pd.DataFrame:
        """One row per source and score: AUROC with ``ci_low``/``ci_high``; a skipped source
        gets one row saying why."""
        skipped = pd.DataFrame({"source": list(self.skipped), "note": list(self.skipped.values())})
        return pd.concat([self.table, skipped], ignore_index=True) if len(skipped) else self.table.copy()


@chapter_result
class SamplingBaseline(ChapterResult):
    """:func:`sampling_baseline`: the ``curve`` (AUROC of the mean of k sampled judgments, per k),
    the text probe's ``row`` on one sampled call (auroc, ci_low, ci_high, n_pos, n_neg, pairs,
    models, text) and the ``sentence`` saying what the comparison shows."""

    curve: pd.DataFrame
    row: dict
    sentence: str

    def summary(self) -> pd.DataFrame:
        """The text probe's row, with the smallest k whose mean matches it (NaN when none does)."""
        match = self.curve[self.curve["auroc"] >= self.row["auroc"]]
        return pd.DataFrame([{**self.row, "k_to_match": int(match["k"].iloc[0]) if len(match) else np.nan}])


def analyse(sources, *, answer: bool = False, min_conformance: float = 0.8, cv: int = 5, C: float = 1.0,
            seed: int = 0, n_boot: int = 1000, gate: bool = True) -> TextProbeComparison:
    """:func:`compare` for every source on its gated models (a :class:`TextProbeComparison`).
    With ``answer`` the text is the attempt without the context ('raw_text' of
    'answer_no_context') and the judgments are the same model's prospective ones.
    ``gate=False`` pools every model (for comparison only)."""
    res = {"table": [], "models": {}, "skipped": {}, "coef": {}, "rows": {}, "ungated": {}, "gates": {}}
    for given in sources:
        src = shown_source(given)  # what the page calls it: a file by its name only
        full, rows, why = rows_for(given) if not answer else (None, None, "")
        if answer:
            from metacog.data import load_responses

            base, probe = split_source(given)
            full = load_responses(base)
            att = full[full["probe"] == (probe or "answer_no_context")][["model", "item_id", "raw_text", "correct"]]
            jud = full[full["probe"] == "prospective"][["model", "item_id", *[c for c in JUDGMENTS if c in full]]]
            rows = att.merge(jud, on=["model", "item_id"]).dropna(subset=["raw_text", "correct"])
            why = "" if len(rows) else f"{src} has no attempts joined to prospective judgments"
        if full is None or not len(rows):
            res["skipped"][src] = why
            continue
        probe = "answer_no_context" if answer else rows["probe"].iloc[0]
        kept, gated = (gate_models(full, probe, min_conformance=min_conformance) if gate
                       else (sorted(rows["model"].unique()), None))
        texts = sorted(rows["model"].unique())
        kept = [m for m in kept if m in texts]  # pooled: passes the gate and wrote texts
        res["models"][src] = (kept, texts)
        if gated is not None:
            res["gates"][src] = gated
        res["ungated"][src] = [m for m in ungated(gated) if m in kept] if gated is not None else []
        use = rows[rows["model"].isin(kept)]
        if not kept:
            res["skipped"][src] = "no model follows the format and answers above chance"
            continue
        try:
            # remembered on disk while the rows, settings and code are unchanged
            t, coef = memo(compare, use, text="raw_text" if answer else "reasoning_text", cv=cv, C=C,
                           seed=seed, n_boot=n_boot)
        except ValueError as err:
            res["skipped"][src] = f"too few correct or wrong texts to cross-validate ({err})"
            continue
        res["coef"][src] = coef
        res["rows"][src] = fitted_rows(use, "raw_text" if answer else "reasoning_text")
        res["table"].append(t.assign(source=src, models=", ".join(short_model(m) for m in kept)))
    res["table"] = pd.concat(res["table"], ignore_index=True) if res["table"] else pd.DataFrame()
    return TextProbeComparison(**res)


def probe_caveat(r: dict) -> str:
    """Why a probe's win over the own judgment cannot count, or '' when it can: the probe itself
    must beat chance (its AUROC interval wholly above 0.5)."""
    if r["ci_low"] > 0.5:
        return ""
    return f"the probe itself is not shown to beat chance (its AUROC {_cell(r)} reaches down to 0.5)"


def below_chance_caveat(r: dict) -> str:
    """Why a probe's loss to the own judgment cannot count, or '' when it can: a fitted probe
    cannot truly rank worse than a coin (it would learn the opposite sign), so an out-of-fold
    AUROC interval wholly below 0.5 shows the noise of fitting on few texts and of the fold split,
    which DeLong's interval (it holds the scores fixed) leaves out; the sign of the probe's
    difference from the judgment then says nothing about the text."""
    if not r["ci_high"] < 0.5:
        return ""
    return (f"the probe's own AUROC, {_cell(r)}, lies below chance, which a fitted probe cannot truly do (it "
            f"would learn the opposite sign): it shows the noise of fitting few texts and of the fold split, "
            f"which DeLong's interval leaves out")


def verdicts(table: pd.DataFrame, skipped: dict | None = None) -> list[Verdict]:
    """Per source: the text probe's AUROC exceeds the model's own judgment (its Yes/No, or the
    confidence it stated; difference > 0 on its
    bootstrap interval, at least :data:`MIN_CLASS` correct and wrong texts). "Supported" also
    needs the probe itself to beat chance (its DeLong interval above 0.5): a win over a
    judgment at or below chance by a probe at chance is "insufficient evidence", with that
    reason; so is a loss by a probe whose own AUROC lies below chance (:func:`below_chance_caveat`).
    A skipped source gets "insufficient evidence" with its reason."""
    out = []
    for src, g in (table.groupby("source", sort=False) if len(table) else []):
        r = g.set_index("score")
        ref = "confidence" if "confidence" in r.index else next((s for s in r.index if s != "text_probe"), None)
        if ref is None:
            continue
        x = r.loc[ref]
        named = x["judgment"] if "judgment" in x and isinstance(x["judgment"], str) else JUDGMENTS[ref]
        v = decide(f"{src}: the text probe beats the model's {named}",
                   "AUROC difference", x["diff"], x["diff_ci_low"], x["diff_ci_high"], line=0.0,
                   n={"correct texts": int(x["n_pos"]), "wrong texts": int(x["n_neg"])},
                   min_counts={"correct texts": MIN_CLASS, "wrong texts": MIN_CLASS}, digits=2)
        tp = r.loc["text_probe"].to_dict()
        v = cap(v, [probe_caveat(tp)], statuses=(SUPPORTED,))
        out.append(cap(v, [below_chance_caveat(tp)], statuses=(NOT_SUPPORTED,)))
    for src, why in (skipped or {}).items():
        out.append(Verdict(f"{src}: the text probe beats the model's own judgment", "AUROC difference",
                           np.nan, np.nan, np.nan, {}, INSUFFICIENT, why, 0.0, digits=2, basis="missing"))
    return out


def _source(v: Verdict) -> str:
    return v.claim.rsplit(": the text probe", 1)[0]


def verdict_paragraph(vs: list[Verdict], table: pd.DataFrame | None = None) -> str:
    """Where the claim holds, fails, or cannot be told, in one paragraph; a source held back by
    the probe's own AUROC says so."""
    if not vs:
        return "No source was given."
    who = {s: [_source(v) for v in vs if v.status == s] for s in (SUPPORTED, NOT_SUPPORTED, INSUFFICIENT)}
    n = len(vs)
    s = f"The text probe beats the model's own judgment on {fmt_list(who[SUPPORTED], n, noun='sources')}"
    if who[NOT_SUPPORTED]:
        s += f"; the own judgment is better on {fmt_list(who[NOT_SUPPORTED])}"
    if who[INSUFFICIENT]:
        s += f"; the evidence is insufficient on {fmt_list(who[INSUFFICIENT])}"
    s += "."
    held = [v for v in vs if v.basis == "caveat"]
    if held and table is not None and len(table):
        tp = table[table["score"] == "text_probe"].set_index("source")
        parts = [f"{_source(v)}, where the probe's difference from the model's own judgment is {v.interval()} "
                 f"and the probe itself reads {_cell(tp.loc[_source(v)].to_dict())}" for v in held
                 if _source(v) in tp.index]
        if parts:
            s += (f" The difference does not count on {fmt_list(parts)}: a probe that is not shown to beat "
                  f"chance can only lead a judgment that ranks no better, or worse, than a coin, and one that "
                  f"ranks below chance shows only the noise of its own fit, so its loss says nothing about the text.")
    return s


def sampling_baseline(sampled: pd.DataFrame, outcomes: pd.DataFrame, kept: list, *, cv: int = 5,
                      C: float = 1.0, seed: int = 0, greedy: dict | None = None,
                      sampled_text: str = "the first sampled reasoning text") -> SamplingBaseline:
    """The mean of ``k`` sampled yes/no judgments against the text probe on one sampled call,
    on the ``kept`` models. Returns a :class:`SamplingBaseline`: the k-curve of
    :func:`metacog.hypotheses.reasoning_text.probe.sample_mean_auroc`, the probe's AUROC row
    with DeLong's interval, and a sentence saying what the comparison shows.

    The probe here reads ``sampled_text`` (sample 0 of the sampled run), which is not the greedy
    text of the main comparison: it is another statistic on the same pairs. ``greedy`` (the main
    table's text-probe row for the same pairs: auroc, ci_low, ci_high, n_pos, n_neg, texts) is
    quoted beside it so the page never shows two values for one statistic unlabelled."""
    s = sampled[sampled["model"].isin(kept)]
    J, y = text_probe.sample_matrix(s, outcomes, "prospective")
    curve = text_probe.sample_mean_auroc(y.to_numpy(), J.to_numpy(), seed=seed)
    first = (s[(s["probe"] == "prospective") & (s["sample"] == 0)].drop(columns=["correct"])
             .merge(y.rename("correct").reset_index(), on=["model", "item_id"]))
    first = first.dropna(subset=["reasoning_text"])
    probe = text_probe.ReasoningTextProbe(C=C, cv=cv, seed=seed).fit(first["reasoning_text"].astype(str).tolist(),
                                                                   first["correct"].to_numpy())
    r = auroc_ci(probe.y_, probe.oof_proba_, min_class=MIN_CLASS)
    row = {"auroc": r.estimate, "ci_low": r.ci_low, "ci_high": r.ci_high, "n_pos": r.n_pos, "n_neg": r.n_neg,
           "pairs": len(J), "models": fmt_list([short_model(m) for m in kept]), "text": sampled_text}
    shown = f"the text probe refitted on {sampled_text} of each pair reaches {_cell(row)}"
    if greedy is not None and set(greedy.get("keys", ())) != set(J.index):
        greedy = None  # the main comparison pooled other pairs: nothing to set beside it
    if greedy is not None:
        shown += (f" (a different text from the greedy one the comparison above reads, where the same "
                  f"probe reaches {_cell(greedy)} on {int(greedy['texts'])} texts: two texts per pair, "
                  f"so two statistics)")
    if not r.sufficient:
        say = f"{shown}, too few to compare with sampling"
    elif r.ci_low <= 0.5:
        say = (f"{shown}; that interval includes chance: on these texts the probe is not shown to read "
               f"anything, so asking how many samples match it is moot")
    else:
        match = curve[curve["auroc"] >= r.estimate]
        say = (f"{shown}; "
               + (f"{int(match['k'].iloc[0])} yes/no samples already match it" if len(match)
                  else f"even {int(curve['k'].max())} yes/no samples do not reach it"))
    if curve["auroc"].iloc[-1] < min(0.5, curve["auroc"].iloc[0]):
        say += ("; the sampled judgments rank below chance and fall further as k grows, so averaging "
                "sharpens a signal that points the wrong way")
    return SamplingBaseline(curve, row, say)


def text_probe_row(result: TextProbeComparison, source: str) -> dict | None:
    """The text probe's row of :func:`analyse`'s table for ``source`` (auroc, ci_low, ci_high,
    n_pos, n_neg, texts) with ``keys``, its (model, item_id) pairs; None when it was not fitted."""
    t = result.table
    if not len(t) or source not in result.rows:
        return None
    r = t[(t["source"] == source) & (t["score"] == "text_probe")]
    if r.empty:
        return None
    rows = result.rows[source]
    return {**r.iloc[0].to_dict(), "keys": list(zip(rows["model"], rows["item_id"]))}


def probe_beats_chance(result: TextProbeComparison, source: str) -> bool:
    """Whether ``source``'s text probe in ``result`` was fitted on at least :data:`MIN_CLASS`
    correct and wrong texts and its AUROC interval lies wholly above 0.5."""
    row = text_probe_row(result, source)
    return row is not None and min(row["n_pos"], row["n_neg"]) >= MIN_CLASS and not probe_caveat(row)


def ablation(rows: pd.DataFrame, drop, *, cv: int = 5, C: float = 1.0, seed: int = 0) -> pd.DataFrame:
    """Out-of-fold AUROC of the text probe with all features and without ``drop`` (feature
    names), on the same rows and folds; one row each with DeLong's interval."""
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    unknown = sorted(set(drop) - set(text_probe.FEATURES))
    if unknown:
        raise ValueError(f"ablation: {unknown} are not features; they are {text_probe.FEATURES}.")
    X = text_probe.features(rows["reasoning_text"].astype(str).tolist())
    y = rows["correct"].to_numpy(dtype=float)
    folds = StratifiedKFold(n_splits=int(cv), shuffle=True, random_state=seed)
    out = []
    for label, cols in (("all features", list(text_probe.FEATURES)),
                        ("without " + fmt_list(list(drop)), [f for f in text_probe.FEATURES if f not in drop])):
        pipe = text_probe.ReasoningTextProbe(C=C, cv=cv, seed=seed)._pipeline()
        p = cross_val_predict(pipe, X[cols].to_numpy(), y, cv=folds, method="predict_proba")[:, 1]
        r = auroc_ci(y, p, min_class=MIN_CLASS)
        out.append({"features": label, "texts": len(y), "n_pos": r.n_pos, "n_neg": r.n_neg, "auroc": r.estimate,
                    "ci_low": r.ci_low, "ci_high": r.ci_high})
    return pd.DataFrame(out)


def display_ablation(table: pd.DataFrame):
    """:func:`ablation` for a page: the AUROC with its interval, or why there is none."""
    return pretty(pd.DataFrame({"features": table["features"], "texts": table["texts"],
                                "AUROC (95% CI)": [_cell(r) for r in table.to_dict("records")]}))
