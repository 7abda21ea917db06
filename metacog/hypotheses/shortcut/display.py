"""Page tables and prose for the shortcut chapter, from the results of
:mod:`metacog.hypotheses.shortcut` (kept apart so that module stays about the statistics)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.hypotheses.shortcut import CONTRAST, MIN_JUDGES, MIN_PAIRS
from metacog.hypotheses.shortcut.twins import ALL_PAIRS, NEAR_CONSTANT, SAME, design

ORDER = ("all items", "formal items", "other items", CONTRAST)


def flag_summary(flags: pd.DataFrame) -> pd.DataFrame:
    """One row per panel: models, reasoning / non-reasoning / unflagged counts, how many flags are
    unverified, and the twin pairs present."""
    from metacog.hypotheses.shortcut import twin_pairs
    from metacog.tidy.report import fmt_list

    rows = []
    for panel, f in flags.groupby("panel", sort=False):
        pairs = twin_pairs(f, f["model"].tolist())
        r = f["reasoning"]
        rows.append({"panel": panel, "design": design(f["timing"].iloc[0]) if "timing" in f else "",
                     "models": len(f), "reasoning": int(r.eq(True).sum()),
                     "non-reasoning": int(r.eq(False).sum()), "no flag": int(r.isna().sum()),
                     "unverified flags": int(f["flag_from"].str.contains("unverified").sum()),
                     "twin pairs": len(pairs),
                     "pairs (thinking vs not)": fmt_list([f"{a} / {b}" for a, b, _ in pairs], max_names=4)
                     if pairs else "–"})
    return pd.DataFrame(rows)


def display_groups(groups: pd.DataFrame) -> pd.DataFrame:
    """Reasoning against non-reasoning judges for a page: one row per panel and subset."""
    from metacog.hypotheses.common import with_ci
    from metacog.tidy.report import fmt_p

    if not len(groups):
        return pd.DataFrame(columns=["panel", "design", "items"])
    g = groups.assign(_o=groups["subset"].map({s: i for i, s in enumerate(ORDER)})).sort_values(
        ["panel", "_o"], kind="stable")
    out = pd.DataFrame({"panel": g["panel"], "design": g["timing"].map(design), "items": g["subset"], "reasoning judges": g["reasoning_judges"],
                        "non-reasoning judges": g["other_judges"],
                        "mean self-advantage, reasoning": g["mean_reasoning"],
                        "mean self-advantage, non-reasoning": g["mean_non_reasoning"]})
    out = out.assign(**with_ci(g, "difference", "difference (95% CI)", digits=3))
    out["one-sided Mann–Whitney p"] = [fmt_p(x) if pd.notna(x) else "–" for x in g["p_mann_whitney"]]
    return out.reset_index(drop=True)


def display_twins(twins: pd.DataFrame, subsets=ORDER) -> pd.DataFrame:
    """One row per twin pair (and the means over pairs), one column per subset: the thinking twin's
    self-advantage minus its non-thinking twin's, with its 95% interval in words. A mean says how
    many pairs it averages, their spread (lowest to highest pair) and the leave-one-pair-out
    range; with fewer than :data:`MIN_PAIRS` pairs it has no interval. Excluded pairs say why."""
    from metacog.tidy.report import fmt_ci, fmt_count, fmt_num, fmt_range

    t = twins[twins["subset"].isin(subsets)]
    if t.empty:
        return pd.DataFrame(columns=["panel", "pair"])
    text = []
    for r in t.to_dict("records"):
        if pd.isna(r["difference"]):
            text.append("–")
        elif not str(r["pair"]).startswith("mean over"):
            text.append(fmt_ci(r["difference"], r["difference_ci_low"], r["difference_ci_high"], digits=3)
                        + (" (excluded)" if r.get("excluded") else ""))
        else:
            spread = f"pairs {fmt_range(r['pair_min'], r['pair_max'], digits=3, sep=' to ')}"
            if pd.isna(r["difference_ci_low"]):
                text.append(f"{fmt_num(r['difference'], 3)} (no interval: {fmt_count(r['pairs'], 'pair')}, "
                            f"fewer than {MIN_PAIRS}; {spread})")
                continue
            s = fmt_ci(r["difference"], r["difference_ci_low"], r["difference_ci_high"], digits=3)
            loo = f"leave one out {fmt_range(r['loo_min'], r['loo_max'], digits=3, sep=' to ')}"
            text.append(f"{s[:-1]}; {fmt_count(r['pairs'], 'pair')}; {spread}; {loo}"
                        + ("; flips" if bool(r["loo_flips"]) else "") + ")")
    t = t.assign(text=text)
    wide = t.pivot_table(index=["panel", "pair"], columns="subset", values="text", aggfunc="first", sort=False)
    wide = wide[[s for s in subsets if s in wide.columns]].reset_index()
    first = twins.drop_duplicates(["panel", "pair"]).set_index(["panel", "pair"])
    kind = {SAME: "same weights (the verdict)", ALL_PAIRS: "all pairs (not the verdict)"}
    wide.insert(2, "twins", [kind.get(q) or ("same weights" if first.at[(p, q), "exact"] is True else "related models")
                             for p, q in zip(wide["panel"], wide["pair"])])
    if "timing" in first:
        wide.insert(1, "design", [design(first.at[(p, q), "timing"]) for p, q in zip(wide["panel"], wide["pair"])])
    ex = first["excluded"] if "excluded" in first else pd.Series(dtype=object)
    wide["left out because"] = [(ex.get((p, q)) if isinstance(ex.get((p, q)), str) else "")
                                or _empty_mean(twins, p, q) or "–" for p, q in zip(wide["panel"], wide["pair"])]
    wide.columns.name = None
    return wide.fillna("–")


def _empty_mean(twins: pd.DataFrame, panel, label) -> str:
    """Why a mean over pairs of ``panel`` averages no pair in any subset ('' when it averages
    some, or for a single pair's row): the panel has no such pair, every such pair is left out
    (their rows say why), or none kept has a defined self-advantage."""
    if label not in (SAME, ALL_PAIRS):
        return ""
    rows = twins[twins["panel"] == panel] if "panel" in twins else twins
    if rows.loc[rows["pair"] == label, "pairs"].fillna(0).max() > 0:
        return ""
    pairs = rows[~rows["pair"].isin([SAME, ALL_PAIRS])].drop_duplicates("pair")
    word = "same-weight pair" if label == SAME else "pair"
    if label == SAME:
        pairs = pairs[pairs["exact"].eq(True)]
    if pairs.empty:
        return f"no {word} in this panel"
    left = pairs["excluded"].fillna("").astype(str).str.len() > 0
    if left.all():
        return (f"its only {word} is left out (its own row says why)" if len(pairs) == 1
                else f"all {len(pairs)} {word}s are left out (their rows say why)")
    return f"no {word} kept has a defined self-advantage"


def domain_plot_table(twins: pd.DataFrame, min_pairs: int = MIN_PAIRS) -> pd.DataFrame:
    """The mean-over-pairs difference per MMLU-Pro-style domain, for the figure: panel, domain,
    difference, ci_low, ci_high.

    Same-weight twins only, and only panels where they number at least ``min_pairs`` (the
    chapter's count rule: fewer pairs decide nothing, so they are not plotted either).
    """
    enough = twins[twins["pair"] == SAME].groupby("panel")["pairs"].max()
    keep = set(enough[enough >= min_pairs].index)
    t = twins[(twins["pair"] == SAME) & twins["subset"].str.startswith("domain: ")
              & twins["panel"].isin(keep)]
    return pd.DataFrame({"panel": t["panel"], "domain": t["subset"].str.removeprefix("domain: "),
                         "difference": t["difference"], "ci_low": t["difference_ci_low"],
                         "ci_high": t["difference_ci_high"]}).reset_index(drop=True)


def verdict_paragraph(account: list, decided: list) -> str:
    """The closing prose: per panel, the account's status on its defining prediction and, apart,
    whether reasoning models are better calibrated to themselves at all. Never 'partly supported'."""
    from metacog.hypotheses.verdict import SUPPORTED

    if not account:
        return ("No panel had reasoning flags for both reasoning and non-reasoning models, so the "
                "account could not be tested here.")
    overall = {v.claim.split(": ", 1)[0]: v for v in decided
               if v.claim.endswith("better calibrated to themselves than non-reasoning judges")
               and "formal" not in v.claim}
    twin = {v.claim.split(": ", 1)[0]: v for v in decided
            if v.claim.endswith("a model with thinking is better calibrated to itself than its twin without")
            and "formal" not in v.claim}
    parts = []
    for v in account:
        panel = v.claim.split(": ", 1)[0]
        s = f"On {panel} the symbolic-shortcut account: {v.status}. Why: {v.reason}."
        o = overall.get(panel)
        if o is not None and o.status == SUPPORTED and v.status != SUPPORTED:
            s += (f" On {panel}, reasoning judges are better calibrated to themselves over all its items, by "
                  f"{o.interval()} (reasoning minus non-reasoning self-advantage), but "
                  f"that alone is not the account: it predicts the advantage on formal items above all.")
            t = twin.get(panel)
            if t is not None and t.status != SUPPORTED and t.basis != "counts":
                s += (f" Nor do the same-weight twins, the design that holds the model fixed, confirm the "
                      f"overall advantage: their difference is {t.interval()} ({t.status}: {t.reason}).")
        parts.append(s)
    return " ".join(parts)


def thresholds_sentence() -> str:
    """The count thresholds in words, for the page."""
    return (f"at least {MIN_JUDGES} judges with a defined self-advantage in each group, or at least "
            f"{MIN_PAIRS} same-weight twin pairs, none of whose judgments gives one value on more than "
            f"{NEAR_CONSTANT:.0%} of its items")


def design_sentence(flags: pd.DataFrame, decided: list) -> str:
    """Which designs the sources come from and which of them decided anything: paper 1's
    shortcut claim is about prospective judgments, so a verdict from judgments made after
    answering is labelled as such."""
    from metacog.hypotheses.verdict import INSUFFICIENT
    from metacog.tidy.report import fmt_list

    if flags.empty:
        return ""
    by = flags.drop_duplicates("panel").assign(design=lambda f: f["timing"].map(design))
    parts = [f"{fmt_list(list(g['panel']))} ({d})" for d, g in by.groupby("design", sort=False)]
    decisive = sorted({v.claim.split(": ", 1)[0].rsplit(" (", 1)[-1].rstrip(")") for v in decided
                       if v.status != INSUFFICIENT})
    s = f"The sources' designs: {'; '.join(parts)}."
    pro = [d for d in by["design"].unique() if d.startswith("prospective")]
    if not pro:
        s += " None is prospective, while paper 1's shortcut claim is about judgments made before answering."
    elif not any(d.startswith("prospective") for d in decisive):
        pro_panels = fmt_list(list(by.loc[by["design"].str.startswith("prospective"), "panel"]))
        s += (f" No prospective source ({pro_panels}) decides any claim here, so every decided "
              "verdict comes from judgments that are not the prospective ones paper 1's shortcut claim "
              "is about.")
    return s


def display_rates(rates: pd.DataFrame) -> pd.DataFrame:
    """The detector's flag rates for a page, the share with its interval in words."""
    from metacog.tidy.report import fmt_ci

    out = rates[["panel", "model", "texts", "flagged"]].copy()
    out["share flagged (95% CI)"] = [fmt_ci(r.share, r.share_ci_low, r.share_ci_high, pct=True, digits=0)
                                     for r in rates.itertuples()]
    return out


def bullets(sentences, empty: str = ""):
    """Plain sentences (they name panels and models from the data) as a Markdown bullet list,
    each escaped (``empty`` when there are none)."""
    from IPython.display import Markdown

    from metacog.tidy.report import escape_text

    sentences = [escape_text(s) for s in sentences]
    return Markdown("\n".join(f"- {s}" for s in sentences) if sentences else empty)
