"""Tables and verdicts of the benchmark pages (one template, one page per recorded run).

Every number a benchmark page shows comes from here, with its interval and its n:

- :func:`model_gate` / :func:`display_gate` / :func:`gate_sentence` / :func:`no_signal_notice`
  — the adequacy gate (:func:`metacog.hypotheses.adequacy.adequacy`) on the attempts a
  judgment is scored against, chance read from the items' own answer sets, with a minimum
  of correct and of parsed answers (:mod:`metacog.pages.benchmark.gate`);
- :func:`context_gain` / :func:`gain_verdicts` / :func:`gain_sentence` — accuracy with and
  without the hidden context, the paired gain with an Agresti-Min interval, and whether the
  prospective question ("could you answer without the context?") is well posed at all;
- :func:`judgment_scores` / :func:`display_scores` — AUROC of the verbal Yes/No and of the
  first-token P(Yes) side by side, each with DeLong's interval and its positives/negatives,
  or "insufficient evidence (only k positives)";
- :func:`judgment_verdicts` / :func:`verdict_paragraph` — the page's claims, decided by
  :func:`metacog.hypotheses.verdict.decide`; models that fail the gate stay out of them, and
  a page where none passes draws no verdict;
- :func:`judge_target`, :func:`inline_table`, :func:`display_conformance`.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from scipy import stats as sps

from metacog.hypotheses.adequacy import MIN_CORRECT, MIN_PARSE, failed_rules, judgment_gate  # noqa: F401 (re-exported)
from metacog.hypotheses.common import short_model
from metacog.pages.benchmark.gate import (GATE_FAILED, display_gate, gate_sentence,  # noqa: F401
                                          model_gate, no_signal_notice, which)
from metacog.tidy import phrasing
from metacog.tidy.report import fmt_ci, fmt_count, fmt_list, fmt_num, pretty
from metacog.stats.intervals import auroc_ci, proportion_ci
from metacog.hypotheses.verdict import (INSUFFICIENT, NEGLIGIBLE, NOT_SUPPORTED, SUPPORTED, Verdict, decide,  # noqa: F401
                                        decide_meaningful, fmt_n)
from metacog.pages.benchmark.conformance import (display_conformance, format_scope_sentence,  # noqa: F401
                                               stricter_format_sentence, withhold_unformatted)

#: Fewer members of a class than this and an AUROC is not shown as a number.
MIN_CLASS = 10
#: Score columns of a judgment and how the page names them.
SCORES = {"confidence": "verbal Yes/No", "p_yes": "first-token P(Yes)"}
#: A context gain ruled below this (an absolute accuracy difference) makes the prospective
#: question ill-posed: the model does about as well without the context as with it.
GAIN_MARGIN = 0.05


def _paired_gain(with_ctx: np.ndarray, without: np.ndarray) -> tuple[float, float, float]:
    """Paired accuracy difference with the Agresti-Min (2005) interval (0.5 added per cell)."""
    n = len(with_ctx)
    b = float(((with_ctx == 1) & (without == 0)).sum()) + 0.5
    c = float(((with_ctx == 0) & (without == 1)).sum()) + 0.5
    n2 = n + 2.0
    d = (b - c) / n2
    se = np.sqrt(max((b + c) - (b - c) ** 2 / n2, 0.0)) / n2
    z = sps.norm.ppf(0.975)
    est = float(with_ctx.mean() - without.mean()) if n else np.nan
    return est, float(max(-1.0, d - z * se)), float(min(1.0, d + z * se))


def context_gain(responses: pd.DataFrame) -> pd.DataFrame:
    """Per model: accuracy with the context ('answer') and without it ('answer_no_context') on
    the items graded both ways, each with its exact interval, and the paired gain with its
    Agresti-Min interval. Columns model, items, with_context(+_ci_low/_ci_high),
    without_context(+...), gain, gain_ci_low, gain_ci_high. Empty when a probe is missing."""
    cols = ["model", "items", "with_context", "with_context_ci_low", "with_context_ci_high",
            "without_context", "without_context_ci_low", "without_context_ci_high",
            "gain", "gain_ci_low", "gain_ci_high"]
    wide = (responses[responses["probe"].isin(["answer", "answer_no_context"])]
            .dropna(subset=["correct"]).drop_duplicates(["model", "item_id", "probe"])
            .pivot_table(index=["model", "item_id"], columns="probe", values="correct"))
    if not {"answer", "answer_no_context"} <= set(wide.columns):
        return pd.DataFrame(columns=cols)
    rows = []
    for model, g in wide.dropna().groupby(level="model"):
        a, b = g["answer"].to_numpy(), g["answer_no_context"].to_numpy()
        n = len(a)
        gain, lo, hi = _paired_gain(a, b)
        wl, wh = proportion_ci(int(a.sum()), n, method="exact")
        ol, oh = proportion_ci(int(b.sum()), n, method="exact")
        rows.append([model, n, a.mean(), wl, wh, b.mean(), ol, oh, gain, lo, hi])
    return pd.DataFrame(rows, columns=cols)


def display_context(gain: pd.DataFrame):
    """The context table for a page, every accuracy and the gain with its interval."""
    t = pd.DataFrame({"model": gain["model"].map(short_model), "items": gain["items"]})
    for col, label in (("with_context", "with the context"), ("without_context", "without it"),
                       ("gain", "gain from the context")):
        t[f"{label} (95% CI)"] = [fmt_ci(r[col], r[f"{col}_ci_low"], r[f"{col}_ci_high"])
                                  for r in gain.to_dict("records")]
    return pretty(t)


def gain_verdicts(gain: pd.DataFrame, margin: float = GAIN_MARGIN) -> list[Verdict]:
    """Per model: does hiding the context lower accuracy by at least ``margin``? Negligible (the
    gain's interval lies inside ±``margin``) or not supported means the prospective question is
    ill-posed for that model (:func:`metacog.hypotheses.verdict.decide_meaningful`)."""
    return [decide_meaningful(f"{short_model(r['model'])}: hiding the context lowers accuracy", "context gain",
                              r["gain"], r["gain_ci_low"], r["gain_ci_high"], line=0.0, direction="greater",
                              margin=margin, n={"items": int(r["items"])}, min_counts={"items": 10}, digits=2)
            for r in gain.to_dict("records")]


def gain_sentence(verdicts: list[Verdict]) -> str:
    """Where the context helps, and where the prospective question is ill-posed, in words."""
    if not verdicts:
        return ("This run has no attempts both with and without the context, so whether the "
                "context matters cannot be measured.")
    name = [v.claim.split(":")[0] for v in verdicts]
    helps = [n for n, v in zip(name, verdicts) if v.status == SUPPORTED]
    none_ = [(n, v) for n, v in zip(name, verdicts) if v.status in (NOT_SUPPORTED, NEGLIGIBLE)]
    unsure = [(n, v) for n, v in zip(name, verdicts) if v.status == INSUFFICIENT]
    withheld = [(n, v) for n, v in unsure if v.reason.startswith("it does not follow the format")]
    helps_some = [(n, v) for n, v in unsure if v.basis == "sesoi"]
    unsure = [(n, v) for n, v in unsure if (n, v) not in withheld and (n, v) not in helps_some]
    s = (f"Hiding the context is shown to lower accuracy by {fmt_num(verdicts[0].margin)} or more for "
         f"{which(helps, len(verdicts))}.")
    if none_:
        s += (" For " + "; for ".join(f"{n} it changes accuracy by {v.interval()}" for n, v in none_)
              + f": the context helps by less than {fmt_num(none_[0][1].margin)}, if at all, too little to matter, so "
                "\"could you answer without the context?\" asks nothing that \"could you answer?\" does not, and "
                "the prospective question is "
                "ill-posed for " + ("this model" if len(none_) == 1 else "these models") + ".")
    if helps_some:
        s += (" For " + "; for ".join(f"{n} the gain is {v.interval()}" for n, v in helps_some)
              + f": the context helps, but whether by {fmt_num(helps_some[0][1].margin)} or more, enough to "
                "matter, the data cannot tell.")
    if unsure:
        s += (" For " + "; for ".join(f"{n} the gain is {v.interval()}" for n, v in unsure)
              + ": the data cannot tell whether the context helps, so the prospective question may "
                "be ill-posed for " + ("this model" if len(unsure) == 1 else "these models") + ".")
    if withheld:
        s += (" For " + "; for ".join(f"{n} the gain is {v.interval()}" for n, v in withheld)
              + ", but " + ("its verdict is" if len(withheld) == 1 else "their verdicts are")
              + " withheld: " + ("it does" if len(withheld) == 1 else "they do") + " not follow the format.")
    return s


def display_verdicts(verdicts: list[Verdict]):
    """Verdicts for a page: claim, statistic, the estimate with its interval (or why there is
    none), n, verdict and why. An estimate resting on too few cases is not shown as a number."""
    rows = []
    for v in verdicts:
        shown = "not shown (see why)" if v.basis in ("counts", "missing") else v.interval()
        rows.append({"claim": v.claim, "statistic": v.statistic, "estimate (95% CI)": shown,
                     "n": fmt_n(v.n), "verdict": v.status, "why": v.reason})
    return pretty(pd.DataFrame(rows, columns=["claim", "statistic", "estimate (95% CI)", "n", "verdict", "why"]))


def _auroc_row(y, s) -> dict:
    r = auroc_ci(y, s, min_class=MIN_CLASS)
    return {"n_pos": r.n_pos, "n_neg": r.n_neg, "auroc": r.estimate, "ci_low": r.ci_low,
            "ci_high": r.ci_high, "sufficient": r.sufficient}


def judgment_scores(responses: pd.DataFrame, probe: str = "prospective",
                    gate: pd.DataFrame | None = None) -> pd.DataFrame:
    """Tidy: one row per model and score ('confidence' = the verbal Yes/No, 'p_yes' = the
    first-token P(Yes)) that the responses hold for ``probe``: items, n_pos (correct), n_neg,
    auroc with DeLong's ci_low/ci_high, sufficient (both classes >= :data:`MIN_CLASS`),
    constant (the Yes/No never varies), carries_signal (from ``gate``; True when none) and
    gate_reason (the gate rules the model fails, with their numbers; '' when it passes)."""
    rows = []
    judged = responses[responses["probe"] == probe].dropna(subset=["correct"])
    if judged.empty:
        return pd.DataFrame(columns=["model", "score", "items", "n_pos", "n_neg", "auroc", "ci_low",
                                     "ci_high", "sufficient", "constant", "carries_signal",
                                     "gate_reason"])
    jg = judgment_gate(judged, probe).set_index("model")
    g_idx = gate.set_index("model") if gate is not None else None
    sig = g_idx["carries_signal"] if gate is not None else pd.Series(dtype=bool)
    why = ({m: failed_rules(r) for m, r in zip(g_idx.index, g_idx.to_dict("records"))}
           if gate is not None else {})
    for model, g in judged.groupby("model", sort=True):
        for score in SCORES:
            if score not in g or g[score].isna().all():
                continue
            ok = g.dropna(subset=[score])
            rows.append({"model": model, "score": score, "items": len(ok),
                         **_auroc_row(ok["correct"], ok[score]),
                         "constant": bool(jg.at[model, "constant"]) if model in jg.index else False,
                         "carries_signal": bool(sig.get(model, gate is None)),
                         "gate_reason": why.get(model, "")})
    return pd.DataFrame(rows)


def auroc_cell(r: dict) -> str:
    """'0.61 (95% CI 0.45 to 0.77)', or why there is no number."""
    if r["n_pos"] == 0 or r["n_neg"] == 0:
        return f"undefined (only {'wrong' if r['n_pos'] == 0 else 'correct'} answers)"
    if not r["sufficient"]:
        few = [fmt_count(r["n_pos"], "positive") if r["n_pos"] < MIN_CLASS else "",
               fmt_count(r["n_neg"], "negative") if r["n_neg"] < MIN_CLASS else ""]
        return f"insufficient evidence (only {' and '.join(f for f in few if f)})"
    return fmt_ci(r["auroc"], r["ci_low"], r["ci_high"])


def display_scores(scores: pd.DataFrame, outcome: str = "correct without the context"):
    """Verbal and log-probability AUROCs side by side, one row per model."""
    if scores.empty:
        return pretty(pd.DataFrame({"note": ["no judgments of this kind in the run"]}))
    out = []
    for model, g in scores.groupby("model", sort=True):
        first = g.iloc[0]
        row = {"model": short_model(model) + ("" if first["carries_signal"] else " (fails the gate)"),
               "items": int(first["items"]), outcome: int(first["n_pos"])}
        for r in g.to_dict("records"):
            row[f"AUROC, {SCORES[r['score']]} (95% CI)"] = auroc_cell(r)
        out.append(row)
    return pretty(pd.DataFrame(out))


def _chosen(g: pd.DataFrame) -> dict:
    """The score a verdict rests on: P(Yes) when present (it ranks items, and exists even
    when the Yes/No never varies), else the verbal Yes/No."""
    by = {r["score"]: r for r in g.to_dict("records")}
    return by.get("p_yes", by.get("confidence"))


def judgment_verdicts(scores: pd.DataFrame, probe: str = "prospective") -> list[Verdict]:
    """Per model: does its ``probe`` judgment rank its own success above chance (AUROC > 0.5)?
    Models whose answers fail the adequacy gate get "insufficient evidence" without a test, the
    reason naming the rule they fail."""
    out = []
    for model, g in scores.groupby("model", sort=True):
        r = _chosen(g)
        claim = f"{short_model(model)}: the {probe} judgment ranks its own success above chance"
        stat = f"AUROC of the {SCORES[r['score']]}"
        if not r["carries_signal"]:
            out.append(Verdict(claim, stat, r["auroc"], r["ci_low"], r["ci_high"],
                               {"positives": int(r["n_pos"]), "negatives": int(r["n_neg"])},
                               INSUFFICIENT, f"{GATE_FAILED}, leaving no right answers beyond chance for "
                               f"the judgment to track: {r.get('gate_reason') or 'see the gate table'}", 0.5, digits=2,
                               basis="counts"))
            continue
        out.append(decide(claim, stat, r["auroc"], r["ci_low"], r["ci_high"], line=0.5,
                          direction="greater", n={"positives": int(r["n_pos"]), "negatives": int(r["n_neg"])},
                          min_counts={"positives": MIN_CLASS, "negatives": MIN_CLASS}, digits=2))
    return out


def short_why(v: Verdict) -> str:
    """Why a verdict reads insufficient evidence, in a few words ('' for a decided one)."""
    if v.status != INSUFFICIENT:
        return ""
    if v.reason.startswith("it does not follow the format"):
        rate = re.search(r"(\d+%) of its replies parse", v.reason)
        return f"format: {rate.group(1) if rate else 'too few'} of replies parse"
    if v.reason.startswith(GATE_FAILED):
        return "answers fail the gate"
    return {"straddle": f"interval straddles {phrasing.sig(v.line)}",
            "sesoi": f"helps, but by {fmt_num(v.margin)} or more cannot be told",
            "counts": v.reason.split(";")[0],  # e.g. "only 2 positives"
            "missing": "no estimate"}.get(v.basis, v.reason)


def verdict_paragraph(verdicts: list[Verdict], probe: str = "prospective") -> str:
    """The closing sentence on one judgment probe: who passes, who fails, who cannot be told."""
    if not verdicts:
        return f"No model was asked the {probe} judgment in this run."
    if all(v.status == INSUFFICIENT and v.reason.startswith(GATE_FAILED) for v in verdicts):
        return (f"No verdict on the {probe} judgment: no model's answers pass the adequacy gate (the "
                f"gate table names the rule each one fails, with its numbers), so their answers give a "
                f"judgment nothing to track.")
    names = {s: [v.claim.split(":")[0] for v in verdicts if v.status == s]
             for s in (SUPPORTED, NOT_SUPPORTED, INSUFFICIENT)}
    n = len(verdicts)
    s = (f"The {probe} judgment ranks its own success above chance for "
         f"{which(names[SUPPORTED], n)}")
    if names[NOT_SUPPORTED]:
        s += f"; it does not for {fmt_list(names[NOT_SUPPORTED])}"
    if names[INSUFFICIENT]:
        by_why = {}
        for v in verdicts:
            if v.status == INSUFFICIENT:
                by_why.setdefault(short_why(v), []).append(v.claim.split(":")[0])
        why = (next(iter(by_why)) if len(by_why) == 1
               else "; ".join(f"{fmt_list(who)}: {w}" for w, who in by_why.items()))
        s += f"; the evidence is insufficient for {fmt_list(names[INSUFFICIENT])} ({why})"
    if any("P(Yes)" in v.statistic for v in verdicts):
        return s + (". Each verdict rests on the first-token P(Yes) where the run has it, since it "
                    "ranks items even when the Yes/No never changes.")
    return s + ". Each verdict rests on the verbal Yes/No."


def judge_target(responses: pd.DataFrame, probe: str = "prospective") -> tuple[pd.DataFrame, str]:
    """Each judge's Yes/No on ``probe`` against each target's correctness (Kendall τ-b, exact
    one-sided p), over the items every model judged. Returns (pairs table, sentence); the table
    is empty and the sentence says why when fewer than two models vary in both."""
    from metacog import stats
    from metacog.tidy import tables
    pro = responses[responses["probe"] == probe].dropna(subset=["confidence", "correct"])
    if pro.empty:
        return pd.DataFrame(), f"No {probe} judgments in this run, so there is no judge-target table."
    C, Y = tables.wide(pro, "confidence"), tables.wide(pro, "correct")
    common = C.dropna().index.intersection(Y.dropna().index)
    C, Y = C.loc[common], Y.loc[common]
    varies = [m for m in C.columns if C[m].nunique() == 2 and Y[m].nunique() == 2]
    if len(varies) < 2:
        return pd.DataFrame(), (f"Fewer than two models vary in both their {probe} Yes/No and their "
                                f"success over the {len(common)} items all of them judged, so there "
                                f"is no pair to compare.")
    P = stats.pairwise_calibration(C[varies], Y[varies], control=False, min_items=3).pairs
    t = pd.DataFrame({"judge": P["judge"].map(short_model), "target": P["target"].map(short_model),
                      "self-pair": P["self"], "items": P["n"], "tau_b": P["tau"], "p_value": P["p"]})
    self_t, other_t = P.loc[P["self"], "tau"].dropna(), P.loc[~P["self"], "tau"].dropna()
    s = (f"Over {len(common)} items and {len(varies)} models, the self-pairs' τ-b averages "
         f"{fmt_num(self_t.mean())} ({len(self_t)} pairs) and the other-pairs' {fmt_num(other_t.mean())} "
         f"({len(other_t)} pairs). With so few models this is a sketch, not a test.")
    return t, s


def inline_table(responses: pd.DataFrame, probes=("prospective", "counterfactual")):
    """Share of confidence rationales flagged as inline solving, per model and probe, with a
    Wilson interval and the number of rationales."""
    from metacog.hypotheses.shortcut import detect
    r = responses[responses["probe"].isin(probes)].dropna(subset=["reasoning_text"])
    if r.empty:
        return pd.DataFrame(columns=["model", "probe", "rationales", "flagged", "share", "ci_low", "ci_high"])
    flags = detect.detect_inline_solving(r["reasoning_text"])["inline_solving"].to_numpy()
    g = r.assign(flag=flags.astype(int)).groupby(["model", "probe"])["flag"].agg(["size", "sum"]).reset_index()
    ci = [proportion_ci(int(k), int(n)) for k, n in zip(g["sum"], g["size"])]
    return pd.DataFrame({"model": g["model"].map(short_model), "probe": g["probe"], "rationales": g["size"],
                         "flagged": g["sum"], "share": g["sum"] / g["size"],
                         "ci_low": [c[0] for c in ci], "ci_high": [c[1] for c in ci]})


def display_inline(table: pd.DataFrame):
    """:func:`inline_table` for a page, the share with its interval in words."""
    t = table.drop(columns=["share", "ci_low", "ci_high"]).copy()
    t["share flagged (95% CI)"] = [fmt_ci(r["share"], r["ci_low"], r["ci_high"], pct=True)
                                   for r in table.to_dict("records")]
    return pretty(t)


def _clip(text, n: int) -> str:
    t = " ".join(str(text).split())
    return t if len(t) <= n else t[:n] + " ..."


def hidden_context(items) -> tuple[pd.DataFrame, str]:
    """What the probes hide, as (table of kinds and their sources with item counts, the kinds
    joined in words)."""
    t = pd.DataFrame({
        "hidden context": [it.context_kind if (it.context or "").strip() else "none (empty)" for it in items],
        "where it comes from": [str(it.meta.get("context_source", "")) or "the benchmark's own field"
                                for it in items]}).value_counts().rename("items").reset_index()
    return t, fmt_list(sorted(set(t["hidden context"])))


def item_text(items, n: int = 500) -> str:
    """One item with a non-empty context (the first), as the models saw it, cut to ``n`` characters."""
    it = next((i for i in items if (i.context or "").strip()), items[0])
    return (f"item {it.item_id} ({it.domain or it.benchmark})\n\nQUESTION: {_clip(it.question, n)}\n\n"
            f"HIDDEN {str(it.context_kind).upper()}: {_clip(it.context or '(none)', n)}\n\n"
            f"GOLD: {_clip(_gold_text(it.gold), 200)}")


def _gold_text(gold) -> str:
    """A gold answer in words: one answer as it is, several accepted answers joined by " | "."""
    if isinstance(gold, (list, tuple, set)) or hasattr(gold, "tolist"):
        answers = [str(g) for g in (gold.tolist() if hasattr(gold, "tolist") else gold)]
        return " | ".join(dict.fromkeys(answers))
    return str(gold)


def rationale_examples(responses: pd.DataFrame, n_examples: int = 2, seed: int = 0,
                       probe: str = "prospective"):
    """Up to ``n_examples`` random ``probe`` rationales per model, as a table: the judgment,
    its P(Yes), whether the model then answered right without the context, and the rationale
    (cut to 400 characters)."""
    r = responses[(responses["probe"] == probe) & responses["reasoning_text"].notna()]
    r = r.sample(frac=1.0, random_state=seed).groupby("model").head(n_examples).sort_values("model")
    if r.empty:
        return pretty(pd.DataFrame({"note": [f"No {probe} rationales."]}))
    t = pd.DataFrame({
        "model": r["model"].map(short_model).to_numpy(),
        "item": r["item_id"].to_numpy(),
        "judgment": r["decision"].fillna("unparsed").to_numpy(),
        "P(Yes)": r["p_yes"].to_numpy(dtype=float),
        "right without the context": ["not asked" if pd.isna(c) else ("yes" if c == 1 else "no") for c in r["correct"]],
        "rationale": [_clip(x, 400) for x in r["reasoning_text"]]})
    return pretty(t, digits=2)


def attempt_examples(responses: pd.DataFrame, seed: int = 0):
    """One random attempt per model with the context and one without, as a table with its grade
    and the reply (cut to 400 characters)."""
    r = responses[responses["probe"].isin(["answer", "answer_no_context"]) & responses["raw_text"].notna()]
    r = r.sample(frac=1.0, random_state=seed).groupby(["model", "probe"]).head(1).sort_values(["model", "probe"])
    if r.empty:
        return pretty(pd.DataFrame({"note": ["No attempts recorded."]}))
    t = pd.DataFrame({
        "model": r["model"].map(short_model).to_numpy(),
        "attempt": r["probe"].map({"answer": "with the context", "answer_no_context": "without it"}).to_numpy(),
        "item": r["item_id"].to_numpy(),
        "right": ["not graded" if pd.isna(c) else ("yes" if c == 1 else "no") for c in r["correct"]],
        "reply": [_clip(x, 400) for x in r["raw_text"]]})
    return pretty(t)
