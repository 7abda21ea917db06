"""The place page in words, tables and a figure: each sentence, table and figure built from a
:class:`metacog.pages.place.Placement` (what :func:`metacog.pages.place.place` computed)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.pages.place.placement import Placement
from metacog.pages.place.stats import ALPHA, LABELS, METRICS, MIN_CLASS, MIN_ITEMS, POWER
from metacog.tidy.report import escape_text, fmt_ci, fmt_count, fmt_num


def axis_sentence(r: Placement) -> str:
    """Where the new model sits on the panel's confidence axis, or why it is not shown."""
    a = r.axis
    if a.empty:
        return (f"The panel's confidence axis is not fitted: it needs at least {MIN_ITEMS} items on "
                f"which the new model's confidence varies.")
    me, others = a[a["new"]].iloc[0], a[~a["new"]]
    rank = int((others["loading"] > me["loading"]).sum()) + 1
    return (f"On the panel's shared confidence axis (the first factor fitted to the {len(a)} models whose "
            f"confidence, cut at its own median, varies on these items), {escape_text(r.model)} loads {fmt_num(me['loading'], 2)} (rank {rank} of "
            f"{len(a)}; panel models {fmt_num(others['loading'].min(), 2)} to "
            f"{fmt_num(others['loading'].max(), 2)}, median {fmt_num(others['loading'].median(), 2)}) "
            f"with threshold {fmt_num(me['threshold'], 2)} (panel {fmt_num(others['threshold'].min(), 2)} "
            f"to {fmt_num(others['threshold'].max(), 2)}). A high loading means its confidence rises and "
            f"falls with the other models' on the same items.")


# ---- sentences computed from a Placement --------------------------------------------------------

_GATE_WORDS = {"at chance": "The model answers at chance",
               "too few items": "There are too few items to judge",
               "too few correct": "The model has too few correct answers to judge",
               "too few parsed": "Too few of its replies could be parsed"}


def headline_sentence(r: Placement) -> str:
    h = r.headline
    diff = fmt_ci(h["diff"], h["ci_low"], h["ci_high"], digits=3)
    n, k = int(h["n_items"]), int(h["n_correct"])
    cut = (f"; {r.n_cut} cut at the reply cap before answering are missing, not wrong, and left out"
           if r.n_cut else "")
    s = (f"On {fmt_count(n, 'item')} with a scored answer and a {r.probe.replace('_', ' ')} (of "
         f"{r.n_asked} asked{cut}), {escape_text(r.model)} answered {k} correctly: accuracy "
         f"{fmt_num(k / n if n else np.nan, 3)}, out of these {n}, the denominator of every accuracy "
         f"on this page{' except the sensitivity row that counts the cut replies wrong' if r.n_cut else ''}. Its own confidence has AUROC "
         f"{fmt_num(h['auroc_internal'], 3)} for telling its right answers from its wrong ones; the "
         f"panel's mean confidence on the same items has {fmt_num(h['auroc_population'], 3)}; "
         f"internal − population {diff}.")
    if r.gate["status"] != "adequate":
        s += (f" {_GATE_WORDS[r.gate['status']]}: {r.gate.get('reason', '')}. No claim about its "
              f"metacognition rests on these numbers.")
    return s


def reply_counts(new: pd.DataFrame) -> dict:
    """The replies of one probe split four ways, which add up to the replies: finished or cut at
    the reply cap (``finish_reason`` 'length'), crossed with usable (an answer letter and a
    stated confidence both parsed) or not. A cut reply can still be usable when the answer and
    the confidence came before the cap."""
    one = new[new["probe"] == new["probe"].iloc[0]]
    usable = (one["parse_status"].astype(str) == "ok") & one["confidence"].notna()
    cut = (one["finish_reason"].astype(str) == "length") if "finish_reason" in one else pd.Series(False, one.index)
    return {"n": len(one), "finished_usable": int((usable & ~cut).sum()),
            "finished_unusable": int((~usable & ~cut).sum()), "cut_usable": int((usable & cut).sum()),
            "cut_unusable": int((~usable & cut).sum())}


def mdd_sentence(r: Placement) -> str:
    """The headline comparison's minimum detectable difference, from its standard error."""
    h = r.headline
    from scipy import stats as sps

    if not np.isfinite(h.get("mdd", np.nan)):
        return "The comparison has no standard error, so no minimum detectable difference."
    s = (f"With its standard error of {fmt_num(h['se'], 3)} (DeLong), this comparison detects a true "
         f"internal − population difference of {fmt_num(h['mdd'], 3)} or more with probability "
         f"{POWER:g} at two-sided level {ALPHA:g} (({fmt_num(sps.norm.ppf(1 - ALPHA / 2), 2)} + "
         f"{fmt_num(sps.norm.ppf(POWER), 2)}) × standard error), the smallest "
         f"difference these {int(h['n_items'])} items can show")
    if h["ci_low"] <= 0 <= h["ci_high"]:
        s += ("; a true difference smaller than that is likely to be missed, so an interval "
              "containing 0 here does not show that there is none")
    return s + "."


def replies_sentence(new: pd.DataFrame, max_tokens: int = 0) -> str:
    """The reply cap the replies were asked with, and how many were parsed and how many were cut
    at it, as counts that partition the replies (:func:`reply_counts`)."""
    from metacog.elicit.protocols import calibration_study as cs

    study = cs.protocol().max_tokens
    cap_ = int(max_tokens) if max_tokens else study
    c = reply_counts(new)
    n_cut = c["cut_usable"] + c["cut_unusable"]
    s = (f"The replies were asked with a cap of {cap_} tokens"
         + (" (the study's own)" if cap_ == study else f" (the study asked with {study})")
         + f". Of {fmt_count(c['n'], 'reply', 'replies')}, {c['finished_usable']} finished and gave both an "
         f"answer letter and a stated confidence")
    if c["finished_unusable"]:
        s += f"; {c['finished_unusable']} finished without both"
    if n_cut:
        s += (f"; {n_cut} {'was' if n_cut == 1 else 'were'} cut at the reply-length cap before "
              f"finishing, of which {c['cut_usable']} still gave both (and {'is' if c['cut_usable'] == 1 else 'are'} used) and "
              f"{c['cut_unusable']} did not")
    s += ". "
    if c["cut_unusable"]:
        s += ("A reply cut at the cap before it gave an answer and a confidence is missing, not wrong: "
              "the model was stopped before it could answer, so the headline leaves it out, and the "
              "sensitivity table below counts it wrong instead. ")
    return s + "A reply that finished without an answer counts as wrong, as in the study."


def panel_sentence(r: Placement) -> str:
    """The panel-level estimate (mean internal − population over the models that pass the gate,
    bootstrap over items and models) and the Holm-corrected count of the per-model tests."""
    p = r.population[~r.population["new"]]
    ok = p[p["sufficient"]]
    m = r.panel_mean
    rej = ok[ok["holm_reject"].astype(bool)]
    above, below = int((rej["diff"] > 0).sum()), int((rej["diff"] < 0).sum())
    s = (f"Of the {len(p)} panel models, {len(ok)} pass the same gate as the new model on these "
         f"items (above chance, at least {MIN_CLASS} right and {MIN_CLASS} wrong answers). ")
    if not len(ok) or not np.isfinite(m.get("mean", np.nan)):
        return s + "No panel-level estimate can be made without them."
    lo, hi = m["ci_low"], m["ci_high"]
    where = ("The interval lies above 0: on average a panel model's own confidence tells its right answers from its "
             "wrong ones better than its population's does" if lo > 0 else
             "The interval lies below 0: on average a panel model's own confidence does worse than its population's"
             if hi < 0 else "The interval contains 0: on these items the data cannot tell whether the "
             "average panel model's own confidence does better or worse than its population's, and an "
             f"average difference beyond {fmt_num(lo, 3)} to {fmt_num(hi, 3)} is ruled out at the 95% level")
    s += (f"Across them the mean internal − population AUROC is {fmt_num(m['mean'], 3)}, with a 95% "
          f"interval from {fmt_num(lo, 3)} to {fmt_num(hi, 3)} (percentiles of {m['n_boot']} "
          f"bootstrap resamples of both the items and the models). {where}. This estimate, not a "
          f"count of models, is the page's statement about the panel. ")
    s += (f"Model by model, DeLong's test of each difference is one of a family of {len(ok)}; with "
          f"Holm's correction (family-wise error {ALPHA:g}) {above} "
          f"{'has' if above == 1 else 'have'} internal AUROC above population and {below} below it "
          f"(column p_holm of the table). Were no model different from its population, about "
          f"{fmt_num(ALPHA * len(ok), 1)} of {len(ok)} uncorrected tests would still reach p < {ALPHA:g}.")
    return s


def rank_table(r: Placement) -> pd.DataFrame:
    t = r.ranks[["metric", "value", "rank", "rank_ci_low", "rank_ci_high", "n_models", "n_items"]].copy()
    t["metric"] = t["metric"].map(LABELS)
    return t


def recalibration_sentence(r: Placement) -> str:
    t = r.recalibration.set_index("method")
    if t.loc["Platt", "n_items"] < t.loc["as stated", "n_items"]:
        return ("Too few right or wrong answers to fit a recalibration map on both halves of the "
                "items, so recalibration is not assessed.")
    e0, ep, ei = t.loc["as stated", "ece"], t.loc["Platt", "ece"], t.loc["isotonic", "ece"]
    s0, sp, si = t.loc["as stated", "smece"], t.loc["Platt", "smece"], t.loc["isotonic", "smece"]
    b0, bp, bi = t.loc["as stated", "brier"], t.loc["Platt", "brier"], t.loc["isotonic", "brier"]

    def change(a, b):
        return f"{'lowers' if b < a else 'raises'} it to {fmt_num(b, 3)}"

    s = (f"Held out, the stated confidence has ECE {fmt_num(e0, 3)}, smooth ECE {fmt_num(s0, 3)} and "
         f"Brier {fmt_num(b0, 3)}. Platt scaling {change(e0, ep)} (smooth ECE {fmt_num(sp, 3)}, Brier "
         f"{fmt_num(bp, 3)}); isotonic regression {change(e0, ei)} (smooth ECE {fmt_num(si, 3)}, Brier "
         f"{fmt_num(bi, 3)}). An increasing map moves the confidence toward the accuracy without "
         f"changing which answers it ranks above which, so it cannot add information about which "
         f"answers are right; isotonic regression is increasing by construction (it can only merge "
         f"levels into ties).")
    k = int(t.loc["Platt", "decreasing"])
    slopes = [t.loc["Platt", c] for c in ("slope_1", "slope_2")]
    if k:
        s += (f" Platt's fitted slope is negative on {k} of the 2 halves (slopes "
              f"{fmt_num(slopes[0], 2)} and {fmt_num(slopes[1], 2)}): on the items it was fitted to, "
              f"higher stated confidence went with fewer right answers, so the map is decreasing and "
              f"reverses the order of the answers it is applied to. That is why Platt's held-out AUROC "
              f"({fmt_num(t.loc['Platt', 'auroc'], 3)}) differs from the stated confidence's "
              f"({fmt_num(t.loc['as stated', 'auroc'], 3)}): a sign the stated confidence carries too "
              f"little ranking information for its direction to hold from one half of the items to the "
              f"other, not information added or lost by recalibration.")
    else:
        s += (f" Platt's fitted slope is positive on both halves ({fmt_num(slopes[0], 2)} and "
              f"{fmt_num(slopes[1], 2)}), so it keeps the stated ranking.")
    return s


def metrics_phrase() -> str:
    """The ranked metrics as the page's prose lists them, from :data:`METRICS`."""
    names = [LABELS[m].replace(" (10 bins)", "") for m in METRICS]
    return ", ".join(names[:-1]) + " and " + names[-1]


def smece_sentence(r: Placement) -> str:
    """The new model's smooth ECE beside its binned ECE, and whether either is just the gap
    between its mean confidence and its accuracy (residuals of one sign: nothing cancels)."""
    t = r.ranks.set_index("metric")
    e, s = t.loc["ece", "value"], t.loc["smece", "value"]
    a = r.recalibration.set_index("method").loc["as stated"]
    gap = abs(a["mean_confidence"] - a["accuracy"])
    out = f"{escape_text(r.model)}'s smooth ECE is {fmt_num(s, 3)}, its ECE with 10 bins {fmt_num(e, 3)}."
    if np.isfinite(s) and abs(s - gap) < 1e-3:
        out += (f" The smooth ECE equals the gap between its mean confidence and its accuracy "
                f"({fmt_num(gap, 3)}): its confidence is off in the same direction at every level, "
                f"so no part of the error cancels and no bandwidth changes it.")
    return out


def population_table(r: Placement) -> pd.DataFrame:
    """Every model's internal vs population row, best difference first, the new one marked;
    p_holm is Holm's adjusted p-value within the panel's family (empty for the new model and
    for a panel model outside the family)."""
    t = r.population.sort_values("diff", ascending=False, na_position="last").reset_index(drop=True)
    t.insert(0, "rank", np.arange(1, len(t) + 1))
    t["model"] = np.where(t["new"], "▶ " + t["model"].astype(str), t["model"].astype(str))
    return t.drop(columns=["new", "se", "holm_reject"])


def truncation_table(r: Placement) -> pd.DataFrame:
    """The headline with cut replies missing (as on the page) and counted wrong (sensitivity)."""
    t = r.truncation.copy()
    t["cut replies"] = t["cut replies"].map({"missing": "missing (headline)", "wrong": "counted wrong"})
    return t[["cut replies", "n_items", "n_correct", "accuracy", "auroc_internal", "auroc_population",
              "diff", "ci_low", "ci_high", "p_value"]]


def truncation_sentence(r: Placement) -> str:
    """What counting the cut replies wrong does to the headline (the sensitivity row)."""
    t = r.truncation.set_index("cut replies")
    if not r.n_cut:
        return "No reply was cut at the cap before answering, so both rows are the same."
    a, b = t.loc["missing"], t.loc["wrong"]

    def side(row):
        return "lies above 0" if row["ci_low"] > 0 else "lies below 0" if row["ci_high"] < 0 else "contains 0"

    same = side(a) == side(b)
    return (f"Counting the {r.n_cut} cut replies wrong (with confidence 0 where the reply stated none) "
            f"puts {int(b['n_items'])} items in the comparison instead of {int(a['n_items'])}, moves "
            f"accuracy from {fmt_num(a['accuracy'], 3)} to {fmt_num(b['accuracy'], 3)} and the "
            f"internal − population difference from {fmt_num(a['diff'], 3)} to {fmt_num(b['diff'], 3)}; "
            f"its interval {side(b)} under both scorings, so the headline's reading does not hinge on "
            f"how they are scored" if same else
            f"Counting the {r.n_cut} cut replies wrong (with confidence 0 where the reply stated none) "
            f"puts {int(b['n_items'])} items in the comparison instead of {int(a['n_items'])}, moves "
            f"accuracy from {fmt_num(a['accuracy'], 3)} to {fmt_num(b['accuracy'], 3)} and the "
            f"internal − population difference from {fmt_num(a['diff'], 3)} to {fmt_num(b['diff'], 3)}, "
            f"and its interval from one that {side(a)} to one that {side(b)}: the headline depends on how the cut "
            f"replies are scored") + "."


def population_figure(r: Placement):
    """Internal − population AUROC of every model with its (uncorrected, per-model) 95% DeLong
    interval, sorted; the new model in red, the panel mean and its bootstrap interval as a band."""
    import matplotlib.pyplot as plt

    p = r.population.dropna(subset=["diff"]).sort_values("diff").reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(6.5, max(4.0, 0.11 * len(p) + 1.4)))
    y = np.arange(len(p))
    m = r.panel_mean
    if np.isfinite(m.get("mean", np.nan)):
        ax.axvspan(m["ci_low"], m["ci_high"], color="tab:blue", alpha=0.15, lw=0,
                   label=f"panel mean, {m['n_models']} gated models (bootstrap 95%)")
        ax.axvline(m["mean"], color="tab:blue", lw=1)
    ax.axvline(0, color="0.2", lw=0.8, ls="--")
    kinds = [("panel: below the gate", ~p["new"] & ~p["sufficient"], dict(mfc="white", color="0.65")),
             ("panel: gated, not kept by Holm", ~p["new"] & p["sufficient"] & ~p["holm_reject"].astype(bool),
              dict(mfc="white", color="0.25")),
             ("panel: kept by Holm", ~p["new"] & p["holm_reject"].astype(bool), dict(color="0.25")),
             (r.model.replace("$", r"\$") + " (new)", p["new"], dict(color="crimson", ms=5))]
    for name, sel, style in kinds:
        q = p[sel.to_numpy(bool)]
        if len(q):
            ax.errorbar(q["diff"], y[sel.to_numpy(bool)], xerr=[q["diff"] - q["ci_low"], q["ci_high"] - q["diff"]],
                        fmt="o", lw=0.8, label=name, **({"ms": 3} | style))
    ax.set_yticks(y, [str(s).replace("$", r"\$") for s in p["model"]], fontsize=5)
    ax.set_ylim(-1, len(p))
    ax.set_xlabel("internal − population AUROC (95% DeLong interval, per model)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def protocol_table(max_tokens: int = 0) -> pd.DataFrame:
    """How the panel was asked and how the new model is asked: one row per setting
    (``max_tokens``: the cap the new model was asked with; 0: the study's own)."""
    from metacog.data.designs import DESIGNS
    from metacog.elicit.protocols import calibration_study as cs

    p = cs.protocol()
    cap_ = (f"{p.max_tokens}" if not max_tokens or int(max_tokens) == p.max_tokens
            else f"{int(max_tokens)} for this model (the study: {p.max_tokens})")
    rows = [("prompt", "MULTI_CHOICE_NO_OPTIONS_SHARED_SAMPLING_TEMPLATE (conf_mode 'sampling', choices=0)"),
            ("system message", p.system), ("temperature", f"{p.temperature:g} for this model (the panel: {DESIGNS[('calibration_study', 'verbal_confidence')].temperature})"), ("max_tokens", cap_),
            ("token log-probabilities", f"on, top {p.top_logprobs}"),
            ("answer", "extract_answer: the last 'Answer:' letter, then the study's fallback patterns"),
            ("stated confidence", "extract_verbal_numerical_confidence / 100"),
            ("logit confidence", "calculate_logit_perplexity: mean probability of the reply's tokens"),
            ("key", "the study's own (it differs from the MMLU-Pro mirror on 173 questions)"),
            ("source", p.source)] + [("assumption", n) for n in p.notes]
    return pd.DataFrame(rows, columns=["setting", "value"])


def prompt_markdown() -> str:
    """The study's prompt template verbatim, as a Markdown code block."""
    from metacog.elicit.protocols import calibration_study as cs

    return ("The prompt, verbatim (then one line per option, 'A) ...'):\n\n"
            f"````text\n{cs.protocol().template}\n````")
