"""The shortcut chapter: is extra self-calibration a reasoning-model effect concentrated in formal domains?

Paper 1 explains an apparent individual signal on mathematics by a *symbolic shortcut*: asked
for confidence, a reasoning model works the problem and reports whether its solution looks
right. The account predicts (1) a larger self-advantage for reasoning models and, defining it,
(2) that this advantage is concentrated on formal items (mathematics, logic, physics,
engineering), where a solution can be worked inline.

The statistic is each judge's **self-advantage**: Kendall tau-b of its binary confidence against
its own correctness minus its mean tau-b against the other models' correctness (on the same
items). Subtracting the other-model calibration removes what any model's confidence gets from
shared item difficulty, which an own-correctness AUROC would keep: a thinking model is usually
more accurate, and a change in accuracy alone moves its AUROC without any private knowledge.

Two designs, both with item-bootstrap intervals (judges or pairs are resampled too for means
over them): judges grouped by reasoning flag (:func:`group_table`, the Mann-Whitney comparison
of the old chapter), and matched twins — the same model with and without thinking
(:func:`twin_table`). :func:`verdicts` decides each claim with :func:`metacog.hypotheses.verdict.decide`
and :func:`account_verdicts` the account itself, on its defining prediction.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from metacog.hypotheses.common import ChapterResult, chapter_result
from metacog.hypotheses.shortcut.twins import (MARGIN_WHY, MIN_DRAWS, MIN_PAIRS, NEAR_CONSTANT, SAME, label,  # noqa: F401
                                               name_twins, statistic, twin_pairs)
from metacog.hypotheses.shortcut.advantage import _tau_advantage, advantage_draws  # noqa: F401
from metacog.stats import resample
from metacog.tidy.report import fmt_count

#: Fewer judges than this in either group (reasoning / non-reasoning) is too few to compare:
#: resampling so few judges understates how far the group mean could move.
MIN_JUDGES = 8
#: A subset (formal or other items) needs this many items to be analysed.
MIN_ITEMS = 20
#: The formal domains by default: Atlas's, Battery's and MMLU-Pro's names for them.
FORMAL = ("formal_reasoning", "maths", "mathematics", "math", "logic", "physics", "engineering")
SUBSETS = ("all items", "formal items", "other items")
CONTRAST = "formal minus other"


def reasoning_flags(models, source: str, reasoning_models=()) -> pd.DataFrame:
    """Reasoning flags for a panel's models: model, reasoning (True/False/NA), twin, twin_exact,
    verified, flag_from.

    The metadata table (:func:`metacog.data.model_metadata.flags_for`) is asked first, in the dataset the
    source names ('atlas', 'battery', 'calibration_study', 'local' for 'local/...' models) or in
    any dataset. A model it lacks is a reasoning model when ``reasoning_models`` names it; when
    ``reasoning_models`` names at least one model of this panel, the panel's other unflagged
    models count as non-reasoning; otherwise their flag stays NA (left out of every comparison).
    Before that, a model the table lacks whose name marks a thinking run ('X-think' beside 'X'
    or 'X-nothink', as spar names them) is flagged from its name, with its same-weight twin
    (:func:`metacog.hypotheses.shortcut.twins.name_twins`).
    """
    from metacog.data.model_metadata import DATASETS, flags_for

    models = list(models)
    dataset = str(source).split(":", 1)[0]
    if dataset not in DATASETS:
        dataset = "local" if models and all(str(m).startswith("local/") for m in models) else None
    out = flags_for(models, dataset)
    named = set(map(str, reasoning_models))
    declared = any(str(m) in named for m in models)
    out["flag_from"] = np.where(out["found"], np.where(out["verified"], "metadata table",
                                                       "metadata table (unverified)"), "")
    by_name = name_twins([m for i, m in enumerate(models) if not out.at[i, "found"]])
    for i, m in enumerate(models):
        if out.at[i, "found"]:
            continue
        if str(m) in by_name:
            out.loc[i, ["reasoning", "twin", "twin_exact"]] = [by_name[str(m)][0], by_name[str(m)][1], True]
            out.at[i, "flag_from"] = "model name (a '-think' run and its counterpart: same weights)"
        elif str(m) in named:
            out.at[i, "reasoning"], out.at[i, "flag_from"] = True, "reasoning_models parameter"
        elif declared:
            out.at[i, "reasoning"], out.at[i, "flag_from"] = False, "not in reasoning_models"
        else:
            out.at[i, "flag_from"] = "no flag"
    return out.drop(columns="found")


def item_subsets(domains: pd.Series, formal_domains=FORMAL, min_items: int = MIN_ITEMS) -> dict:
    """Boolean item masks: 'all items', 'formal items', 'other items' and one per domain.

    ``domains`` maps each item (in panel order) to its domain. Items without a domain are in
    'all items' only. Subsets with fewer than ``min_items`` items are left out.
    """
    d = pd.Series(domains).astype("string")
    known = d.notna().to_numpy()
    formal = d.isin(list(formal_domains)).to_numpy() & known
    masks = {"all items": np.ones(len(d), bool), "formal items": formal, "other items": known & ~formal}
    for name in sorted(d.dropna().unique()):
        masks[f"domain: {name}"] = (d == name).fillna(False).to_numpy()
    return {k: v for k, v in masks.items() if v.sum() >= min_items}


def _headline(groups: pd.DataFrame, twins: pd.DataFrame) -> pd.DataFrame:
    """Per subset (and panel, when the tables have one): the judge comparison and the mean over
    same-weight twins, each a difference with ``ci_low``/``ci_high`` and its n."""
    keys = ["panel"] if "panel" in groups else []
    g = groups.assign(design="judges by flag", n=groups["reasoning_judges"] + groups["other_judges"])
    t = twins[twins["pair"] == SAME].assign(design="same-weight twins", n=lambda d: d["pairs"])
    cols = [*keys, "design", "subset", "difference", "difference_ci_low", "difference_ci_high", "n"]
    parts = [x[cols] for x in (g, t) if len(x)]
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)
    return out.rename(columns={"difference_ci_low": "ci_low", "difference_ci_high": "ci_high"})


@chapter_result
class ShortcutAnalysis(ChapterResult):
    """:func:`analyse` of one panel: ``judges`` (self-advantage per judge and subset),
    ``groups`` (reasoning minus non-reasoning judges), ``twins`` (per twin pair and the means
    over pairs) and ``items`` ({subset: items})."""

    judges: pd.DataFrame
    groups: pd.DataFrame
    twins: pd.DataFrame
    items: dict

    def summary(self) -> pd.DataFrame:
        """Per design and subset: the difference, its interval and n."""
        return _headline(self.groups, self.twins)


@chapter_result
class ShortcutTables(ChapterResult):
    """:func:`tables` over a panel set: ``flags``, ``judges``, ``groups``, ``twins`` stacked with
    the panel's columns first, and ``notes`` (what could not be run, and why)."""

    flags: pd.DataFrame
    judges: pd.DataFrame
    groups: pd.DataFrame
    twins: pd.DataFrame
    notes: pd.DataFrame

    def summary(self) -> pd.DataFrame:
        """Per panel, design and subset: the difference, its interval and n."""
        return _headline(self.groups, self.twins)


def analyse(confidence: pd.DataFrame, correct: pd.DataFrame, domains: pd.Series, flags: pd.DataFrame, *,
            formal_domains=FORMAL, n_boot: int = 1000, seed: int = 0) -> ShortcutAnalysis:
    """The chapter's analysis of one panel. Returns a :class:`ShortcutAnalysis` of tidy tables:

    - ``judges``: per judge and subset, self-advantage with its item-bootstrap interval, flag;
    - ``groups``: reasoning minus non-reasoning judges' mean self-advantage per subset and for
      formal minus other, with intervals (items and judges resampled), judges per group and a
      one-sided Mann-Whitney p-value;
    - ``twins``: per twin pair and subset, the reasoning twin's self-advantage minus its
      non-reasoning twin's, then the mean over pairs (items and pairs resampled), with n.
    """
    models = list(confidence.columns)
    masks = item_subsets(pd.Series(domains).reindex(confidence.index), formal_domains)
    draws = advantage_draws(confidence, correct, masks, n_boot=n_boot, seed=seed)
    names = list(masks)
    flag = pd.Series(flags.set_index("model")["reasoning"]).reindex(models)
    rng = np.random.default_rng(seed + 1)

    judges = []
    for s, sub in enumerate(names):
        for j, m in enumerate(models):
            lo, hi = resample.percentile_interval(draws[1:, s, j], min_draws=MIN_DRAWS)
            judges.append({"subset": sub, "model": m, "reasoning": flag.iloc[j], "items": int(masks[sub].sum()),
                           "advantage": draws[0, s, j], "advantage_ci_low": lo, "advantage_ci_high": hi})
    judges = pd.DataFrame(judges)

    is_r = flag.eq(True).fillna(False).to_numpy(bool)
    is_n = flag.eq(False).fillna(False).to_numpy(bool)
    both = [s for s in ("formal items", "other items") if s in masks]
    groups = []
    for sub in [*[s for s in SUBSETS if s in masks], CONTRAST]:
        if sub == CONTRAST:
            if len(both) < 2:
                continue
            f, o = names.index("formal items"), names.index("other items")
            ok = np.isfinite(draws[0, f]) & np.isfinite(draws[0, o])
            vals = draws[:, f] - draws[:, o]
        else:
            vals = draws[:, names.index(sub)]
            ok = np.isfinite(vals[0])
        r, n = np.flatnonzero(ok & is_r), np.flatnonzero(ok & is_n)
        diff = resample.mean_over_resampled_units(vals, r, rng) - resample.mean_over_resampled_units(vals, n, rng)
        lo, hi = resample.percentile_interval(diff[1:], min_draws=MIN_DRAWS)
        p = np.nan
        if len(r) and len(n):
            from scipy.stats import mannwhitneyu
            p = float(mannwhitneyu(vals[0, r], vals[0, n], alternative="greater").pvalue)
        groups.append({"subset": sub, "reasoning_judges": len(r), "other_judges": len(n),
                       "mean_reasoning": np.nanmean(vals[0, r]) if len(r) else np.nan,
                       "mean_non_reasoning": np.nanmean(vals[0, n]) if len(n) else np.nan,
                       "difference": diff[0], "difference_ci_low": lo, "difference_ci_high": hi,
                       "p_mann_whitney": p})
    groups = pd.DataFrame(groups, columns=["subset", "reasoning_judges", "other_judges", "mean_reasoning",
                                           "mean_non_reasoning", "difference", "difference_ci_low",
                                           "difference_ci_high", "p_mann_whitney"])
    from metacog.hypotheses.shortcut.twins import twins

    return ShortcutAnalysis(judges, groups, twins(draws, names, models, flags, confidence, rng, contrast=CONTRAST),
                            {k: int(v.sum()) for k, v in masks.items()})


def panel_domains(panel) -> pd.Series:
    """Each item's domain in a panel (NA when its rows have none), in the panel's item order."""
    t = panel.table
    if "domain" not in t:
        return pd.Series(pd.NA, index=panel.confidence.index, dtype="string")
    d = t.dropna(subset=["domain"]).drop_duplicates("item_id").set_index("item_id")["domain"]
    return d.reindex(panel.confidence.index).astype("string")


def tables(panelset, *, formal_domains=FORMAL, reasoning_models=(), n_boot: int = 1000,
           seed: int = 0) -> ShortcutTables:
    """:func:`analyse` for every panel (remembered on disk by :func:`metacog.memo.memo`).

    Returns a :class:`ShortcutTables` of stacked tables, each with the panel's columns first: ``flags`` (one row per
    panel and model), ``judges``, ``groups``, ``twins``, and ``notes`` (one sentence per panel
    saying what could not be run and why; empty when everything ran).
    """
    from metacog.hypotheses.common import panel_columns
    from metacog.memo import memo

    parts = {k: [] for k in ("flags", "judges", "groups", "twins")}
    notes = []
    for p in panelset:
        cols = panel_columns(p)
        flags = reasoning_flags(p.models, p.source, reasoning_models)
        parts["flags"].append(flags.assign(**cols))
        n_r, n_n = int(flags["reasoning"].eq(True).sum()), int(flags["reasoning"].eq(False).sum())
        unflagged = int(flags["reasoning"].isna().sum())
        if n_r == 0 or n_n == 0:
            why = ("none of its models has a reasoning flag in the metadata table, and the "
                   "reasoning_models parameter names none of them" if n_r + n_n == 0 else
                   f"all its flagged models are {'non-reasoning' if n_r == 0 else 'reasoning'} models")
            notes.append({**cols, "note": f"The reasoning test cannot run on {p.name}: {why}."})
            continue
        if unflagged:
            notes.append({**cols, "note": f"{unflagged} model(s) of {p.name} have no reasoning flag and are "
                                          "left out of the comparisons (name them in reasoning_models)."})
        domains = panel_domains(p)
        res = memo(analyse, p.confidence, p.correct, domains, flags, formal_domains=tuple(formal_domains),
                   n_boot=n_boot, seed=seed)
        if domains.isna().all():
            notes.append({**cols, "note": f"{p.name} has no domain column, so the formal-domain test is "
                                          f"skipped and every item counts in 'all items' only."})
        elif "formal items" not in res.items or "other items" not in res.items:
            have = res.items.get("formal items", 0)
            notes.append({**cols, "note": f"{p.name} has {fmt_count(have, 'formal item')} (domains "
                                          f"{', '.join(formal_domains)}) or too few others; the formal-domain "
                                          f"test needs {MIN_ITEMS} of each."})
        for k in ("judges", "groups", "twins"):
            parts[k].append(getattr(res, k).assign(**cols))
    out = {}
    for k, frames in parts.items():
        frames = [f for f in frames if len(f)]
        if frames:
            t = pd.concat(frames, ignore_index=True)
            first = [c for c in ("panel", "source", "benchmark", "probe", "timing") if c in t]
            out[k] = t[first + [c for c in t.columns if c not in first]]
        else:
            out[k] = pd.DataFrame(columns=["panel", "source", "benchmark", "probe", "timing", *_EMPTY[k]])
    notes = pd.DataFrame(notes, columns=["panel", "source", "benchmark", "probe", "timing", "note"])
    return ShortcutTables(**out, notes=notes)


_EMPTY = {"flags": ["model", "reasoning", "twin", "twin_exact", "verified", "flag_from"],
          "judges": ["subset", "model", "reasoning", "items", "advantage"],
          "groups": ["subset", "reasoning_judges", "other_judges", "mean_reasoning", "mean_non_reasoning",
                     "difference", "difference_ci_low",
                     "difference_ci_high", "p_mann_whitney"],
          "twins": ["pair", "exact", "subset", "pairs", "difference", "difference_ci_low", "difference_ci_high",
              "pair_min", "pair_max", "loo_min", "loo_max", "loo_flips", "excluded"]}

_CLAIMS = {
    ("judges", "all items"): "reasoning judges are better calibrated to themselves than non-reasoning judges",
    ("judges", "formal items"): "on formal items, reasoning judges are better calibrated to themselves than "
                                "non-reasoning judges",
    ("judges", CONTRAST): "the reasoning judges' extra self-calibration is larger on formal items than on others",
    ("twins", "all items"): "a model with thinking is better calibrated to itself than its twin without",
    ("twins", "formal items"): "on formal items, a model with thinking is better calibrated to itself than "
                               "its twin without",
    ("twins", CONTRAST): "the thinking twin's extra self-calibration is larger on formal items than on others",
}


def verdicts(result: ShortcutTables) -> list:
    """Each claim of :data:`_CLAIMS` decided per panel with :func:`metacog.hypotheses.verdict.decide`.

    Judge comparisons need :data:`MIN_JUDGES` judges in each group; twin comparisons are
    decided on same-weight twins alone by :func:`metacog.hypotheses.shortcut.twins.twin_verdicts`
    (:data:`MIN_PAIRS` pairs, near-constant pairs out, leave-one-pair-out). The claim is that the
    difference (or difference of differences) lies above 0. Each claim names its panel and the
    design its judgments come from.
    """
    from metacog.hypotheses.verdict import SELF_OTHER_MARGIN, decide_meaningful

    out = []
    g = result.groups
    for r in g.to_dict("records"):
        key = ("judges", r["subset"])
        if key not in _CLAIMS:
            continue
        out.append(decide_meaningful(
            f"{label(r)}: {_CLAIMS[key]}", statistic("judges", r["subset"]), r["difference"],
            r["difference_ci_low"], r["difference_ci_high"], line=0.0, margin=SELF_OTHER_MARGIN,
            line_why=MARGIN_WHY, direction="greater",
            n={"reasoning judges": int(r["reasoning_judges"]), "non-reasoning judges": int(r["other_judges"])},
            min_counts={"reasoning judges": MIN_JUDGES, "non-reasoning judges": MIN_JUDGES}))
    from metacog.hypotheses.shortcut.twins import twin_verdicts

    out += twin_verdicts(result.twins, {sub: c for (kind, sub), c in _CLAIMS.items() if kind == "twins"})
    return out


def account_verdicts(decided: list) -> list:
    """The shortcut account per panel, decided on its DEFINING prediction: the extra
    self-calibration of reasoning models is concentrated on formal items.

    The twin design is used when it has :data:`MIN_PAIRS` pairs, else the judge comparison.
    Supported only when the concentration and the formal-item advantage are both supported;
    not supported when the concentration is not; otherwise insufficient evidence. A reasoning
    advantage without the concentration never makes the account "partly" supported.
    """
    from metacog.hypotheses.verdict import INSUFFICIENT, NOT_SUPPORTED, SUPPORTED

    by_panel: dict = {}
    for v in decided:
        panel, claim = v.claim.split(": ", 1)
        by_panel.setdefault(panel, {})[claim] = v
    out = []
    for panel, vs in by_panel.items():
        design = "twins" if vs.get(_CLAIMS[("twins", CONTRAST)]) is not None and \
            vs[_CLAIMS[("twins", CONTRAST)]].basis != "counts" else "judges"
        conc = vs.get(_CLAIMS[(design, CONTRAST)])
        formal = vs.get(_CLAIMS[(design, "formal items")])
        if conc is None:
            continue
        claim = f"{panel}: the symbolic-shortcut account ({'twin pairs' if design == 'twins' else 'judges by flag'})"
        status, reason = conc.status, f"its defining prediction, formal-item concentration: {conc.reason}"
        if conc.status == SUPPORTED and (formal is None or formal.status != SUPPORTED):
            status = INSUFFICIENT
            reason += ("; but reasoning models are not reliably better calibrated to themselves on formal "
                       "items, so the concentration alone does not carry the account")
        elif conc.status == NOT_SUPPORTED:
            reason = f"its defining prediction fails: {conc.reason}"
        out.append(dataclasses.replace(conc, claim=claim, status=status, reason=reason))
    return out
