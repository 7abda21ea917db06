"""The benchmark pages side by side: one row per benchmark and model (notebooks/benchmarks.md).

Nothing here computes a statistic of its own. :func:`page_results` is the benchmark
template's analysis (notebooks/benchmark.md calls it once per page) —
the format rule (:func:`metacog.tidy.tables.conforming_models`), the adequacy gate
(:func:`~metacog.pages.benchmark.gate.model_gate` with the run's items), the context gain and
its verdicts, the prospective and counterfactual scores and verdicts, every verdict passed
through :func:`~metacog.pages.benchmark.conformance.withhold_unformatted` — so each number of
the comparison is the number on that benchmark's own page.

- :func:`run_results` — one recorded run loaded as the template loads it (its recording, its
  items), then :func:`page_results`;
- :func:`comparison_table` — the tidy table: one row per benchmark x model, every estimate with
  its interval and counts, whether the answers without the context pass the gate (and the
  rule that failed), each verdict with its reason;
- :func:`display_comparison` — the table for a page, one short cell per quantity;
- :func:`gate_summary` / :func:`verdict_summary` — the sentence and the claim-by-claim table
  under it (MyST, each benchmark's name a link to its page).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from metacog.hypotheses.common import short_model
from metacog.hypotheses.verdict import INSUFFICIENT, NEGLIGIBLE, NOT_SUPPORTED, SUPPORTED, Verdict
from metacog.pages.benchmark import (GAIN_MARGIN, auroc_cell, context_gain, gain_verdicts, judgment_scores,
                                     judgment_verdicts, model_gate, short_why, withhold_unformatted, _chosen)
from metacog.pages.benchmark.gate import _passes
from metacog.tidy import phrasing
from metacog.tidy.report import fmt_ci, fmt_num, pretty

#: The judgment probes of a benchmark page, in the order the table shows them.
JUDGMENTS = ("prospective", "counterfactual")
#: Verdicts in the order the sentences give them; the last one is "the data cannot tell".
STATUSES = (SUPPORTED, NEGLIGIBLE, NOT_SUPPORTED, INSUFFICIENT)


@dataclass
class PageResults:
    """What a benchmark page computes from one run: the responses, the models that follow the
    format (``kept``), the gate, the context gain and its verdicts, each judgment's scores and
    verdicts (``has_cf``: the run asks the counterfactual judgment)."""

    responses: pd.DataFrame
    kept: list
    gate: pd.DataFrame
    gain: pd.DataFrame
    gain_v: list[Verdict]
    scores: pd.DataFrame
    has_cf: bool
    cf_scores: pd.DataFrame
    pro_v: list[Verdict]
    cf_v: list[Verdict] = field(default_factory=list)


def page_results(responses: pd.DataFrame, items=None, *, probes=JUDGMENTS,
                 min_conformance: float = 0.8) -> PageResults:
    """The benchmark template's analysis of ``responses`` (``items``: the run's items, for each
    item's answer set; ``probes``: the probes the run asks), call for call."""
    from metacog.tidy import tables

    kept = tables.conforming_models(responses, min_rate=min_conformance)
    data = responses
    gate = model_gate(data, items=items)
    gain = context_gain(data)
    gain_v = withhold_unformatted(gain_verdicts(gain), responses, kept, min_conformance)
    scores = judgment_scores(data, "prospective", gate)
    has_cf = "counterfactual" in list(probes) and bool((data["probe"] == "counterfactual").any())
    cf_scores = judgment_scores(data, "counterfactual", gate) if has_cf else scores.iloc[0:0]
    pro_v = withhold_unformatted(judgment_verdicts(scores, "prospective"), responses, kept, min_conformance)
    cf_v = (withhold_unformatted(judgment_verdicts(cf_scores, "counterfactual"), responses, kept, min_conformance)
            if has_cf else [])
    return PageResults(responses, kept, gate, gain, gain_v, scores, has_cf, cf_scores, pro_v, cf_v)


def run_results(run: str, *, min_conformance: float = 0.8, seed: int = 0) -> PageResults:
    """Recorded run ``run`` as its benchmark page reads it with the page's defaults (no other
    models, items or probes; ``seed`` the subset's, 0 on every page), then :func:`page_results`."""
    from metacog.data import recorded
    from metacog.elicit import record

    declared = recorded.runs()
    if run not in declared:
        raise ValueError(f"unknown run {run!r}; data/responses/runs.yml declares {sorted(declared)}.")
    spec = declared[run]
    responses = record.gather(run, models=[], n_items=0, probes=[], seed=seed)
    asked = set(responses["item_id"])
    items = [it for it in record.items_for(spec, None, seed) if it.item_id in asked]
    return page_results(responses, items, probes=list(spec.probes), min_conformance=min_conformance)


def short_rule(gate_row: dict, rules: dict | None = None) -> str:
    """The gate rules one model fails, each in a few words with its number ('3 correct (10 needed);
    18% parsed (50% needed)'); '' when it passes."""
    if gate_row["carries_signal"]:
        return ""
    from metacog.hypotheses.adequacy import MIN_CORRECT, MIN_PARSE

    r = {"min_items": 20, "min_correct": MIN_CORRECT, "min_parse": MIN_PARSE, **(rules or {})}
    bar = "the majority baseline" if gate_row.get("baseline", np.nan) >= gate_row.get("chance", np.nan) else "chance"
    words = {"items": f"{gate_row['items']} items ({r['min_items']} needed)",
             "correct": f"{gate_row['n_correct']} correct ({r['min_correct']} needed)",
             "parsed": f"{fmt_num(gate_row.get('parse_rate'), pct=True)} parsed ({fmt_num(r['min_parse'], pct=True)} needed)",
             "chance": f"accuracy not above {bar}"}
    failed = [f for f in str(gate_row.get("failed") or "").split(",") if f]
    return "; ".join(words.get(f, f) for f in failed) or str(gate_row.get("reason", ""))


def _by_model(verdicts: list[Verdict]) -> dict[str, Verdict]:
    return {v.claim.split(":")[0]: v for v in verdicts}


def model_rows(res: PageResults, benchmark: str, run: str = "") -> pd.DataFrame:
    """One row per model of one page's results (:func:`comparison_table` has the columns)."""
    gate = res.gate.set_index("model")
    gain = res.gain.set_index("model")
    verdicts = {"gain": _by_model(res.gain_v), "prospective": _by_model(res.pro_v),
                "counterfactual": _by_model(res.cf_v)}
    scores = {"prospective": res.scores, "counterfactual": res.cf_scores if res.has_cf else None}
    rules = res.gate.attrs.get("rules", {})
    rows = []
    for model in sorted(set(gate.index) | set(gain.index) | set(res.scores["model"])):
        name = short_model(model)
        row = {"benchmark": benchmark, "run": run, "model": name}
        g = gain.loc[model].to_dict() if model in gain.index else {}
        row["items"] = int(g["items"]) if g else (int(gate.at[model, "items"]) if model in gate.index else 0)
        for col in ("with_context", "without_context", "gain"):
            for end in ("", "_ci_low", "_ci_high"):
                row[col + end] = float(g.get(col + end, np.nan))
        gr = {"model": model, **gate.loc[model].to_dict()} if model in gate.index else None
        row["gate_passes"] = bool(gr["carries_signal"]) if gr else False
        row["gate_chance_known"] = bool(gr.get("chance_known", True)) if gr else False
        row["gate_rule"] = short_rule(gr, rules) if gr else "no answers without the context"
        v = verdicts["gain"].get(name)
        row.update(gain_verdict=v.status if v else None, gain_why=v.reason if v else None,
                   gain_short_why=short_why(v) if v else None)
        for probe in JUDGMENTS:
            s = scores[probe]
            mine = s[s["model"] == model] if s is not None and len(s) else None
            r = _chosen(mine) if mine is not None and len(mine) else None
            v = verdicts[probe].get(name)
            row.update({f"{probe}_score": r["score"] if r else None,
                        f"{probe}_auroc": float(r["auroc"]) if r else np.nan,
                        f"{probe}_ci_low": float(r["ci_low"]) if r else np.nan,
                        f"{probe}_ci_high": float(r["ci_high"]) if r else np.nan,
                        f"{probe}_n_pos": int(r["n_pos"]) if r else 0,
                        f"{probe}_n_neg": int(r["n_neg"]) if r else 0,
                        f"{probe}_sufficient": bool(r["sufficient"]) if r else False,
                        f"{probe}_verdict": v.status if v else None,
                        f"{probe}_why": v.reason if v else None,
                        f"{probe}_short_why": short_why(v) if v else None})
        rows.append(row)
    return pd.DataFrame(rows)


def comparison_table(runs: dict, *, min_conformance: float = 0.8, seed: int = 0) -> pd.DataFrame:
    """Tidy: one row per benchmark (``runs``: {label: recorded run}, in order) and model, with
    items (graded with and without the context), with_context / without_context / gain each
    with ci_low and ci_high (exact, exact, Agresti-Min), gate_passes, gate_chance_known,
    gate_rule (the rules failed, '' when it passes), gain_verdict / gain_why, and per judgment
    ('prospective', 'counterfactual'): the score the verdict rests on (p_yes, else confidence),
    auroc with DeLong's ci_low/ci_high, n_pos, n_neg, sufficient, verdict and why (None where
    the run does not ask it); ``*_short_why`` says in a few words why a verdict is undecided."""
    if not runs:
        raise ValueError("comparison_table: give at least one run, e.g. {'SQuAD': 'squad'}.")
    frames = [model_rows(run_results(run, min_conformance=min_conformance, seed=seed), label, run)
              for label, run in runs.items()]
    return pd.concat(frames, ignore_index=True)


def _verdict_cell(status, why) -> str:
    if pd.isna(status):  # None, or the NaN pd.concat makes of it
        return "not asked"
    return f"{status} ({why})" if isinstance(why, str) and why else status


def _auroc_cell(r: dict, probe: str) -> str:
    if pd.isna(r[f"{probe}_verdict"]) and pd.isna(r[f"{probe}_score"]):
        return "not asked"
    cell = auroc_cell({k: r[f"{probe}_{k}"] for k in ("n_pos", "n_neg", "sufficient", "auroc", "ci_low", "ci_high")})
    return cell + (" [Yes/No]" if r[f"{probe}_score"] == "confidence" else "")


def display_comparison(table: pd.DataFrame):
    """:func:`comparison_table` for a page: each accuracy with its interval, the gate (and the rule
    failed), each verdict with a few words on why it is undecided, each AUROC with its interval
    (or why there is no number; '[Yes/No]' when it is the verbal judgment's, the run having no
    P(Yes))."""
    recs = table.to_dict("records")
    gate = [("no: " + r["gate_rule"]) if not r["gate_passes"]
            else _passes({"carries_signal": True, "chance_known": r["gate_chance_known"]}) for r in recs]
    t = pd.DataFrame({
        "benchmark": table["benchmark"], "model": table["model"], "items": table["items"],
        "with the context (95% CI)": [fmt_ci(r["with_context"], r["with_context_ci_low"], r["with_context_ci_high"])
                                      for r in recs],
        "without it (95% CI)": [fmt_ci(r["without_context"], r["without_context_ci_low"], r["without_context_ci_high"])
                                for r in recs],
        "answers without it pass the gate": gate,
        "context gain": [_verdict_cell(r["gain_verdict"], r["gain_short_why"]) for r in recs]})
    for probe in JUDGMENTS:
        t[f"{probe} AUROC (95% CI)"] = [_auroc_cell(r, probe) for r in recs]
        t[f"{probe} verdict"] = [_verdict_cell(r[f"{probe}_verdict"], r[f"{probe}_short_why"]) for r in recs]
    return pretty(t)


def _link(label: str, run: str, pages: dict | None) -> str:
    page = (pages or {}).get(run)
    return f"{{doc}}`{label} <{page}>`" if page else label


def gate_summary(table: pd.DataFrame, pages: dict | None = None) -> str:
    """How many benchmarks have at least one model whose answers without the context pass the
    gate, and which, with those models (MyST: ``pages`` maps a run to its page, for the links)."""
    benches = list(dict.fromkeys(zip(table["benchmark"], table["run"])))
    n = len(benches)
    good = []
    for b, run in benches:
        mine = table[(table["benchmark"] == b) & (table["run"] == run)]
        passing = list(mine.loc[mine["gate_passes"].astype(bool), "model"])
        if passing:
            good.append(f"{_link(b, run, pages)} ({phrasing.join(passing)})")
    rest = (f"every judgment verdict reads {INSUFFICIENT}, and the gate column names the rule each "
            "model fails.")
    if not good:
        where = "the one benchmark" if n == 1 else f"any of the {n} benchmarks"
        return (f"No model's answers without the context pass the adequacy gate on {where}, so no "
                f"judgment verdict of this part is decided: each AUROC above describes a run, {rest}")
    count = ("The one benchmark has" if n == 1 else f"All {n} benchmarks have" if len(good) == n
             else f"{len(good)} of the {n} benchmarks {phrasing.verb(len(good), 'has', 'have')}")
    return (f"{count} at least one model whose answers without the context pass the adequacy gate: "
            f"{phrasing.join(good)}. For every other model {rest}")


def _claim(what: str) -> str:
    return {"gain": f"hiding the context lowers accuracy by {fmt_num(GAIN_MARGIN)} or more",
            "prospective": "the prospective judgment ranks the model's own success without the context above chance",
            "counterfactual": ("the counterfactual judgment, asked after a correct answer with the context, "
                               "ranks the model's success without it above chance")}[what]


#: Why a verdict is undecided, by kind: the start of its short reason and what the table says.
WHY_KINDS = (("format:", "replies off the format"), ("answers fail the gate", "answers fail the gate"),
             ("interval straddles", "interval straddles its line"),
             ("helps, but", "helps, but not shown by the margin"), ("only ", "too few right or wrong answers"))


def _why_kind(short_why) -> str:
    why = str(short_why or "")
    return next((kind for start, kind in WHY_KINDS if why.startswith(start)), why or "no reason given")


def verdict_summary(table: pd.DataFrame, pages: dict | None = None) -> str:
    """One row per claim (MyST table): where it is decided (supported, negligible, not supported),
    on which benchmark and for which models, and how many benchmark-and-model rows cannot tell it,
    counted by why (the comparison table gives each row's reason with its numbers)."""
    lines = ["| claim | decided | the data cannot tell (rows, by why) |", "|---|---|---|"]
    for what, label in (("gain", "Context gain"), ("prospective", "Prospective judgment"),
                        ("counterfactual", "Counterfactual judgment")):
        col = f"{what}_verdict"
        asked = table[table[col].notna()]
        not_asked = [_link(b, run, pages) for b, run in dict.fromkeys(zip(table["benchmark"], table["run"]))
                     if (b, run) not in set(zip(asked["benchmark"], asked["run"]))]
        decided = []
        for status in STATUSES[:-1]:
            rows = asked[asked[col] == status]
            where = [f"{_link(b, run, pages)} ({phrasing.join(g['model'])})"
                     for (b, run), g in rows.groupby(["benchmark", "run"], sort=False)]
            decided += [f"{status} on {phrasing.join(where)}"] if where else []
        if asked.empty:
            decided = ["asked on no benchmark of this table"]
        elif not decided:
            decided = ["none: no benchmark decides it for any model"]
        if not_asked and not asked.empty:
            decided.append(f"not asked on {phrasing.join(not_asked)}")
        undecided = asked[asked[col] == INSUFFICIENT]
        kinds = undecided[f"{what}_short_why"].map(_why_kind).value_counts(sort=True)
        told = (f"{len(undecided)} of {len(asked)}: " + ", ".join(f"{k} ({n})" for k, n in kinds.items())
                if len(undecided) else "none")
        lines.append(f"| **{label}**: {_claim(what)} | {'; '.join(decided)} | {told} |")
    return "\n".join(lines)
