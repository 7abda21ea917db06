"""Tables and verdicts of the audit page: yes/no answers under the policies C0/C1/C2.

- :func:`policies` — which of c0/c1/c2 a source holds;
- :func:`audit_scores` / :func:`display_audit_scores` / :func:`audit_verdicts` — does the
  answer tell true from false items (verbal Yes/No beside the first-token P(Yes)), and does
  confidence tell right from wrong answers (stated P(correct) beside the first-token
  probability of the answer given), each AUROC with DeLong's interval;
- :func:`overconfidence` / :func:`overconfidence_verdicts` / :func:`display_overconfidence`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from scipy import stats as sps

from metacog.pages.benchmark import MIN_CLASS, _auroc_row, auroc_cell
from metacog.hypotheses.common import short_model
from metacog.tidy.report import escape_text, fmt_ci, pretty, warning
from metacog.hypotheses.verdict import INSUFFICIENT, Verdict, decide


#: Answer policies of the audit set (metacog.elicit templates c0, c1, c2).
POLICIES = ("c0", "c1", "c2")


def policies(responses: pd.DataFrame) -> list[str]:
    """The audit policies (c0, c1, c2) a table holds, in order; [] when it has none."""
    present = set(responses["probe"].dropna().astype(str))
    return [p for p in POLICIES if p in present]


def _answers(responses: pd.DataFrame, policy: str) -> pd.DataFrame:
    rows = responses[(responses["probe"] == policy)].dropna(subset=["correct"])
    d = rows["decision"].astype("string").str.strip().str.lower() if "decision" in rows else None
    if d is None:
        return rows.iloc[0:0]
    rows = rows[d.isin(["yes", "no"]).fillna(False).to_numpy()].copy()
    said_yes = rows["decision"].astype(str).str.strip().str.lower() == "yes"
    rows["gold_yes"] = (said_yes == (rows["correct"] == 1)).astype(float)
    rows["said_yes"] = said_yes.astype(float)
    if "p_yes" in rows:
        rows["p_answer"] = np.where(said_yes, rows["p_yes"], 1 - rows["p_yes"])
    return rows


def audit_scores(responses: pd.DataFrame, policy: str, gate: pd.DataFrame | None = None) -> pd.DataFrame:
    """Tidy, one row per model and (task, score) under ``policy``, each AUROC with DeLong's
    interval: task 'knowledge' asks whether the answer tells true from false items (score
    'said_yes' = the verbal Yes/No, 'p_yes' = the first-token P(Yes); positives are the items
    whose gold label is Yes); task 'confidence' asks whether confidence tells right from wrong
    answers (score 'confidence' = the stated P(correct), 'p_answer' = the first-token
    probability of the answer given). Columns model, task, score, items, n_pos, n_neg, auroc,
    ci_low, ci_high, sufficient, carries_signal."""
    rows = []
    a = _answers(responses, policy)
    sig = gate.set_index("model")["carries_signal"] if gate is not None else pd.Series(dtype=bool)
    plan = (("knowledge", "gold_yes", ("said_yes", "p_yes")), ("confidence", "correct", ("confidence", "p_answer")))
    for model, g in a.groupby("model", sort=True):
        for task, target, scores in plan:
            for score in scores:
                if score not in g or g[score].isna().all():
                    continue
                ok = g.dropna(subset=[score])
                rows.append({"model": model, "task": task, "score": score, "items": len(ok),
                             **_auroc_row(ok[target], ok[score]),
                             "carries_signal": bool(sig.get(model, gate is None))})
    return pd.DataFrame(rows, columns=["model", "task", "score", "items", "n_pos", "n_neg", "auroc",
                                       "ci_low", "ci_high", "sufficient", "carries_signal"])


AUDIT_SCORES = {"said_yes": "verbal Yes/No", "p_yes": "first-token P(Yes)",
                "confidence": "stated P(correct)", "p_answer": "first-token P(its answer)"}


def display_audit_scores(scores: pd.DataFrame, task: str):
    """One row per model: the verbal and the log-probability AUROC of ``task`` side by side."""
    sub = scores[scores["task"] == task]
    out = []
    for model, g in sub.groupby("model", sort=True):
        row = {"model": short_model(model) + ("" if g["carries_signal"].iloc[0] else " (worded answers fail the gate)"),
               "items": int(g["items"].iloc[0])}
        for r in g.to_dict("records"):
            row[f"AUROC, {AUDIT_SCORES[r['score']]} (95% CI)"] = auroc_cell(r)
        out.append(row)
    return pretty(pd.DataFrame(out) if out else pd.DataFrame({"note": ["no yes/no answers"]}))


def _gate_reason(knowledge: dict | None) -> str:
    """Why a stated confidence is not judged when the worded answers fail the gate, naming what
    the gate tested (the answers) and what the first-token P(Yes) shows of the model's knowledge."""
    head = ("its worded answers are at chance (the adequacy gate), so its right answers are no more than chance "
            "gives and there is nothing for its stated confidence to track")
    if knowledge is None or not np.isfinite(knowledge.get("auroc", np.nan)):
        return head
    from metacog.hypotheses.verdict import separating_digits

    d = separating_digits(knowledge["ci_low"], knowledge["ci_high"], [0.5], 2)
    span = f"AUROC {knowledge['auroc']:.2f}, {knowledge['ci_low']:.{d}f} to {knowledge['ci_high']:.2f}"
    if knowledge["ci_low"] > 0.5:
        weak = " weakly" if knowledge["auroc"] < 0.6 else ""  # below 0.6: a weak discrimination
        return (f"{head}, although its first-token P(Yes){weak} tells true from false items ({span}): the "
                "knowledge is in its log probabilities, not in the answers its confidence is about")
    return f"{head}, and its first-token P(Yes) does not tell true from false items either ({span})"


def audit_verdicts(scores: pd.DataFrame, policy: str) -> list[Verdict]:
    """Per model, two claims under ``policy``: its first-token P(Yes) tells true from false
    items (knowledge, AUROC > 0.5), and its stated confidence tells its right from its wrong
    answers (confidence, AUROC > 0.5; models whose answers are at chance are not tested)."""
    out = []
    for model, g in scores.groupby("model", sort=True):
        by = {(r["task"], r["score"]): r for r in g.to_dict("records")}
        name = short_model(model)
        for key, claim in ((("knowledge", "p_yes"), "its P(Yes) tells true from false items"),
                           (("confidence", "confidence"), "its stated confidence tells right from wrong answers")):
            r = by.get(key)
            if r is None:
                continue
            n = {"positives": int(r["n_pos"]), "negatives": int(r["n_neg"])}
            stat = f"AUROC of the {AUDIT_SCORES[key[1]]}"
            full = f"{name} under {policy.upper()}: {claim}"
            if key[0] == "confidence" and not r["carries_signal"]:
                out.append(Verdict(full, stat, r["auroc"], r["ci_low"], r["ci_high"], n, INSUFFICIENT,
                                   _gate_reason(by.get(("knowledge", "p_yes"))), 0.5, digits=2,
                                   basis="counts"))
                continue
            out.append(decide(full, stat, r["auroc"], r["ci_low"], r["ci_high"], line=0.5, n=n,
                              min_counts={"positives": MIN_CLASS, "negatives": MIN_CLASS}, digits=2))
    return out


def overconfidence(responses: pd.DataFrame, policy: str, *, n_bins: int = 10,
                   strategy: str = "uniform") -> pd.DataFrame:
    """Per model under ``policy``: items, mean stated confidence, accuracy, their gap (mean of
    confidence − correct over items) with a t interval, the ECE (``n_bins`` bins of ``strategy``) and the
    Brier score. Columns model, items, mean_confidence, accuracy, gap, gap_ci_low, gap_ci_high,
    ece, brier."""
    from metacog import stats
    rows = []
    a = responses[responses["probe"] == policy].dropna(subset=["confidence", "correct"])
    for model, g in a.groupby("model", sort=True):
        d = (g["confidence"] - g["correct"]).to_numpy(dtype=float)
        n = len(d)
        half = sps.t.ppf(0.975, n - 1) * d.std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
        rows.append({"model": model, "items": n, "mean_confidence": g["confidence"].mean(),
                     "accuracy": g["correct"].mean(), "gap": d.mean(), "gap_ci_low": d.mean() - half,
                     "gap_ci_high": d.mean() + half,
                     "ece": stats.ece(g["correct"], g["confidence"], n_bins=n_bins, strategy=strategy).ece,
                     "brier": stats.brier(g["correct"], g["confidence"]).brier})
    return pd.DataFrame(rows)


def overconfidence_verdicts(table: pd.DataFrame, policy: str) -> list[Verdict]:
    """Per model: is its mean stated confidence above its accuracy under ``policy``?"""
    return [decide(f"{short_model(r['model'])} under {policy.upper()}: overconfident on average",
                   "confidence minus accuracy", r["gap"], r["gap_ci_low"], r["gap_ci_high"], line=0.0,
                   n={"items": int(r["items"])}, min_counts={"items": 20}, digits=2)
            for r in table.to_dict("records")]


def display_overconfidence(table: pd.DataFrame):
    """The calibration table for a page: confidence, accuracy, the gap with its interval, ECE, Brier."""
    t = pd.DataFrame({"model": table["model"].map(short_model), "items": table["items"],
                      "mean stated confidence": table["mean_confidence"], "accuracy": table["accuracy"],
                      "confidence minus accuracy (95% CI)": [fmt_ci(r["gap"], r["gap_ci_low"], r["gap_ci_high"])
                                                              for r in table.to_dict("records")],
                      "ECE": table["ece"], "Brier score": table["brier"]})
    return pretty(t, digits=2)


def analyse_sources(sources: list[str], *, n_bins: int = 10, strategy: str = "uniform") -> dict:
    """Every audit table for every source with c0/c1/c2 policies, stacked with ``source`` and
    ``policy`` columns: keys 'gate' (:func:`metacog.pages.benchmark.model_gate` per policy),
    'scores' (:func:`audit_scores`), 'calibration' (:func:`overconfidence`), 'verdicts' (a list
    of :class:`Verdict`: knowledge, confidence, overconfidence; with several sources each claim
    names its source: 'm under C0 on run: ...'), 'responses' ({source: rows})
    and 'skipped' ({source: why it has no audit policies}). A source is named as a page names
    it (:func:`metacog.data.responses.source_name`): a file by its file name, never its folder."""
    from metacog.pages.benchmark import model_gate
    from metacog.data import load_responses
    from metacog.data.responses import source_name

    out = {"gate": [], "scores": [], "calibration": [], "verdicts": [], "responses": {}, "skipped": {}}
    for given in sources:
        df = load_responses(given)
        src = source_name(given)
        pols = policies(df)
        if not pols:
            out["skipped"][src] = (f"it has no answers under the audit policies c0, c1 or c2 (its probes: "
                                   f"{', '.join(sorted(map(str, df['probe'].dropna().unique())))})")
            continue
        out["responses"][src] = df
        for pol in pols:
            gate = model_gate(df, pol)
            sc = audit_scores(df, pol, gate)
            cal = overconfidence(df, pol, n_bins=n_bins, strategy=strategy)
            for key, t in (("gate", gate), ("scores", sc), ("calibration", cal)):
                out[key].append(t.assign(source=src, policy=pol.upper()))
            decided = audit_verdicts(sc, pol) + overconfidence_verdicts(cal, pol)
            if len(sources) > 1:  # the same model under the same policy can come from two sources
                decided = [dataclasses.replace(v, claim=v.claim.replace(":", f" on {src}:", 1)) for v in decided]
            out["verdicts"] += decided
    for key in ("gate", "scores", "calibration"):
        out[key] = pd.concat(out[key], ignore_index=True) if out[key] else pd.DataFrame()
    return out


def stacked(display, table: pd.DataFrame, *args):
    """``display(part, *args)`` for each (source, policy) of a stacked table, with those two
    columns put first; one page table."""
    if table.empty:
        return pretty(pd.DataFrame({"note": ["no source has audit policies"]}))
    parts = []
    for (src, pol), part in table.groupby(["source", "policy"], sort=False):
        shown = pd.DataFrame(display(part, *args))
        shown.insert(0, "policy", pol)
        shown.insert(0, "source", src)
        parts.append(shown)
    return pretty(pd.concat(parts, ignore_index=True))


def skipped_sentence(skipped: dict) -> str:
    """One sentence per source without audit policies; '' when every source has them."""
    return " ".join(f"The source {s} is left out: {why}." for s, why in skipped.items())


def gate_summary(gate: pd.DataFrame) -> str:
    """:func:`metacog.pages.benchmark.gate_sentence` over the stacked gate, a model counting as
    carrying signal when it does under at least one policy."""
    from metacog.pages.benchmark import gate_sentence

    if gate.empty:
        return "No source has audit answers."
    any_policy = gate.groupby("model", sort=False)["carries_signal"].any().reset_index()
    return (gate_sentence(any_policy, "answers") + " (A model counts when it passes under at least one "
            "policy.) " + OVERCONFIDENCE_EXEMPT)


#: Why overconfidence is decided for every model, the gate notwithstanding.
OVERCONFIDENCE_EXEMPT = (
    "One claim is exempt from the gate: overconfidence (mean stated confidence above accuracy) "
    "needs no knowledge — a model guessing with 0.9 confidence is overconfident — so it is decided "
    "for every model, at chance or not, and says nothing about whether the model knows what it knows.")


def p_yes_gate(sources, *, seed: int = 0) -> pd.DataFrame:
    """The adequacy gate of each model's first-token P(Yes) read as an answer, exactly as the
    miscalibration chapter reads it (:func:`metacog.hypotheses.miscalibration.policy_frames` with
    ``read_p_yes``: C0 answers on the items asked under all three policies, folds drawn from
    ``seed``). One row per source and P(Yes) answerer: source, model, items, accuracy, ci_low,
    ci_high, carries_signal; empty when no source holds the three policies with a P(Yes)."""
    from metacog.data.responses import source_name
    from metacog.hypotheses import miscalibration as hm
    from metacog.hypotheses.miscalibration.answerers import is_p_yes

    columns = ["source", "model", "items", "accuracy", "ci_low", "ci_high", "carries_signal"]
    parts = []
    for src, df in hm.policy_frames(list(sources), read_p_yes=True, seed=seed).frames.items():
        g = hm.gate(df)
        g = g[g["model"].map(is_p_yes)]
        if len(g):
            parts.append(g.assign(source=source_name(src))[columns])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def p_yes_gate_sentence(p_yes: pd.DataFrame | None) -> str:
    """What the gate makes of the first-token P(Yes) read as an answer (:func:`p_yes_gate`), for
    the notice: which answerers pass it, on which source, with their accuracy; '' when no
    source has a P(Yes) answerer."""
    from metacog.stats.p_yes import LABEL
    from metacog.tidy.phrasing import join, number, span, which

    if p_yes is None or not len(p_yes):
        return ""
    how = ("read as an answer, as the {doc}`miscalibration` chapter reads it (C0, on the items asked "
           "under all three policies)")
    passing = p_yes[p_yes["carries_signal"].astype(bool)]
    if not len(passing):
        return (f"The first-token P(Yes), {how}, fails the gate too, for "
                f"{which(list(p_yes['model']), len(p_yes), 'answerer')}.")
    where = [f"{short_model(r['model'][: -len(LABEL)])} on {r['source']} ({number(r['accuracy'])} of "
             f"{r['items']} items right, {span(r['ci_low'], r['ci_high'])})" for r in passing.to_dict("records")]
    return (f"The first-token P(Yes) is another matter: {how}, it passes the gate for {join(where)}. "
            f"That chapter's tests of paper 2 use the answerers that pass.")


def no_signal_notice(gate: pd.DataFrame, p_yes: pd.DataFrame | None = None) -> str:
    """A MyST warning for the top of the page when no model passes the gate under any policy
    ('' when one does), as on the benchmark pages (:func:`metacog.pages.benchmark.gate.no_signal_notice`):
    no verdict on knowledge or on confidence tracking it, the overconfidence exemption, what the
    gate makes of the first-token P(Yes) read as an answer (``p_yes``, :func:`p_yes_gate`), and
    which rule each model fails under each policy."""
    from metacog.hypotheses.adequacy import failed_rules

    if len(gate) and gate["carries_signal"].any():
        return ""
    head = ("No model on this page passes the adequacy gate on its answers under any policy, so the "
            "page draws no verdict about any model's metacognition: its tables show what was "
            "measured, and every claim that confidence tracks correctness is held back. "
            + OVERCONFIDENCE_EXEMPT)
    extra = p_yes_gate_sentence(p_yes)
    head += (" " + extra) if extra else ""
    if not len(gate):
        return warning(head + "\n\nNo model has graded answers.")
    lines = []
    several = "source" in gate and gate["source"].nunique() > 1

    def where(r):
        at = " ".join(str(r[c]) for c in (("source", "policy") if several else ("policy",)) if c in r)
        return f"under {at}, " if at else ""

    for model, g in gate.groupby("model", sort=False):
        why = "; ".join(f"{where(r)}{failed_rules(r)}" for r in g.to_dict("records"))
        lines.append(f"- {escape_text(short_model(model))}: {escape_text(why)}.")
    return warning(head + "\n\n" + "\n".join(lines))


def reliability(responses: pd.DataFrame, policy: str, *, n_bins: int = 10,
                strategy: str = "uniform") -> pd.DataFrame:
    """The reliability-diagram bins of every model's stated confidence under ``policy`` (bins
    holding answers only), with a short ``model`` column."""
    from metacog import stats
    parts = [stats.ece(g["correct"], g["confidence"], n_bins=n_bins, strategy=strategy).table
             .assign(model=short_model(m))
             for m, g in responses[responses["probe"] == policy].dropna(subset=["confidence", "correct"])
             .groupby("model")]
    rel = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["n", "model"])
    return rel[rel["n"] > 0]


def verdict_paragraph(verdicts: list[Verdict]) -> str:
    """The audit page's closing sentence: which models' P(Yes) holds knowledge, whose stated
    confidence tracks correctness, and who is overconfident."""
    from metacog.tidy.phrasing import join
    from metacog.hypotheses.verdict import SUPPORTED

    def who(word):
        return join(sorted({v.claim.split(":")[0] for v in verdicts if word in v.claim and v.status == SUPPORTED}),
                    empty="no model")

    return (f"The first-token P(Yes) tells true from false items for {who('P(Yes)')}; stated "
            f"confidence tracks correctness for {who('stated confidence')}; overconfidence (mean "
            f"stated confidence above accuracy, which needs no knowledge and so is decided for "
            f"models at chance too) is established for {who('overconfident')}.")


def knowledge_by_policy(scores: pd.DataFrame):
    """The P(Yes) rows of the knowledge task across sources and policies, for a page."""
    if scores.empty:
        return pretty(pd.DataFrame({"note": ["no source has audit answers"]}))
    k = scores[(scores["task"] == "knowledge") & (scores["score"] == "p_yes")]
    return pretty(pd.DataFrame({"source": k["source"], "policy": k["policy"], "model": k["model"].map(short_model),
                                "AUROC of P(Yes) for the gold label (95% CI)":
                                    [auroc_cell(r) for r in k.to_dict("records")]}))
