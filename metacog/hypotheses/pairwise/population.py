"""The pairwise chapter's per-model test, as paper 1 defines it: internal against population AUROC.

For model m, the *internal AUROC* is the AUROC of m's own confidence for m's correctness; the
*population AUROC* is the AUROC, for the same answers, of the other models' mean confidence on
the same items (m left out). A model with individual self-knowledge beats the population; a model
that knows only how hard an item is for everyone does not. :func:`internal_population_table`
computes both with DeLong's paired interval of the difference
(:func:`metacog.stats.internal_population`) for every model of every panel, from the panel's
confidence before the cut (a rank statistic needs no cut; for yes/no probes it is the judgment
itself). Paper 1's reported GPT-4o figures are in :data:`PAPER1_AUROC`, typed from the paper.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog import stats
from metacog.stats.pairwise import holm  # the per-model family's correction (CORRECTION)

#: Paper 1's internal and population AUROC {benchmark: {model: (internal, population)}}, typed
#: from the paper (no intervals given).
PAPER1_AUROC = {"SQuAD": {"gpt-4o": (0.731, 0.751)}, "MMLU-Pro": {"gpt-4o": (0.632, 0.630)}}

#: The columns of :func:`internal_population_table`, panel first. The ``*_matched`` columns hold
#: the fair variant for a yes/no judge (:func:`matched_population`); they are missing otherwise.
COLUMNS = ["panel", "model", "n_items", "n_correct", "auroc_internal", "auroc_population", "diff",
           "ci_low", "ci_high", "se", "p_value", "sufficient", "judge_binary", "auroc_population_matched",
           "diff_matched", "ci_low_matched", "ci_high_matched", "confidence_scale", "source",
           "benchmark", "probe", "timing"]

#: What the population's confidence is, per comparison, for a page.
POPULATION_MEAN = "the other models' mean confidence"
POPULATION_MATCHED = "the other models' mean confidence, binarised at the model's own yes-rate"

def _analyse(confidence_raw: pd.DataFrame, correct: pd.DataFrame, ci: float, min_class: int) -> pd.DataFrame:
    return stats.internal_population(confidence_raw, correct, ci=ci, min_class=min_class)


def matched_population(confidence: pd.DataFrame, correct: pd.DataFrame, *, ci: float = 0.95,
                       seed: int = 0) -> pd.DataFrame:
    """Internal against population AUROC made fair for a yes/no judge.

    ``confidence`` holds 0/1 judgments (items x models), ``correct`` 0/1 correctness. For each
    model, on the items where it has a judgment and a correctness and some other model has a
    judgment, the population's leave-one-out mean is binarised at the model's own yes-rate: the
    ``k`` items with the highest mean say yes, where ``k`` is the number of items the model says
    yes to (ties at the cut broken by a seeded random order). Both predictors then have two
    levels and the same yes-rate, and DeLong's paired interval compares their AUROCs. One row per
    model: model, auroc_population_matched, diff_matched, ci_low_matched, ci_high_matched.
    """
    from metacog.stats.population import delong_paired, population_means

    correct = correct.reindex(index=confidence.index, columns=confidence.columns)
    C = confidence.to_numpy(dtype=float)
    Y = correct.to_numpy(dtype=float)
    P = population_means(C)
    rng = np.random.default_rng(seed)
    rows = []
    for j, model in enumerate(confidence.columns):
        own = C[:, j]
        pop = P[:, j]
        use = ~(np.isnan(own) | np.isnan(pop) | np.isnan(Y[:, j]))
        binar = np.full(own.shape, np.nan)
        idx = np.flatnonzero(use)
        k = int(own[idx].sum())
        tie = rng.permutation(idx.size)
        order = np.lexsort((tie, -pop[idx]))  # highest mean first, ties in random order
        b = np.zeros(idx.size)
        b[order[:k]] = 1.0
        binar[idx] = b
        r = delong_paired(Y[:, j], own, binar, ci=ci)
        rows.append({"model": model, "auroc_population_matched": r["auroc_b"], "diff_matched": r["diff"],
                     "ci_low_matched": r["ci_low"], "ci_high_matched": r["ci_high"]})
    return pd.DataFrame(rows, columns=["model", "auroc_population_matched", "diff_matched",
                                       "ci_low_matched", "ci_high_matched"])


def is_third_person(panel_or_timing) -> bool:
    """Is this panel (or timing) a judgment about other people rather than about the model itself?
    Such a panel is the third-person baseline (:mod:`metacog.hypotheses.pairwise.third_person`),
    never a self claim."""
    from metacog.hypotheses.common import TIMING, panel_timing

    t = panel_or_timing if isinstance(panel_or_timing, str) else panel_timing(panel_or_timing)
    return t == TIMING["other_confidence"]


def internal_population_table(panelset, *, ci: float = 0.95, min_class: int = 10) -> pd.DataFrame:
    """Internal and population AUROC with DeLong's paired interval of internal - population, for
    every model of every panel of ``panelset``: one row per (panel, model) with the columns of
    :data:`COLUMNS`. ``confidence_scale`` says which confidence was ranked: the yes/no judgment
    itself, or the stated confidence before the book's cut. For a yes/no judge (``judge_binary``)
    the ``*_matched`` columns hold the fair variant (:func:`matched_population`), on which its
    verdict is decided. A panel of judgments about other people (:func:`is_third_person`) is left
    out: it is the third-person baseline, not a self claim. Remembered on disk (:mod:`metacog.memo`)."""
    from metacog.hypotheses.common import panel_columns
    from metacog.memo import memo

    parts = []
    for p in panelset:
        if is_third_person(p):
            continue
        res = memo(_analyse, p.confidence_raw, p.correct, ci, min_class)
        binary = p.cut == "binary"
        if binary:
            res = res.merge(memo(matched_population, p.confidence, p.correct, ci=ci), on="model", how="left")
        scale = "yes/no judgment" if binary else "stated confidence (before the cut)"
        parts.append(res.assign(judge_binary=binary, confidence_scale=scale, **panel_columns(p)))
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(parts, ignore_index=True).reindex(columns=COLUMNS)


def decided(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with ``diff``/``ci_low``/``ci_high`` taken from the comparison each row is decided
    on: the binarised population (``*_matched``) for a yes/no judge, the population's mean
    otherwise; ``compared_with`` says which (:data:`POPULATION_MATCHED`, :data:`POPULATION_MEAN`)."""
    t = table.copy()
    binary = (t["judge_binary"].fillna(False).astype(bool) if "judge_binary" in t.columns
              else pd.Series(False, index=t.index))
    for col in ("diff", "ci_low", "ci_high"):
        if f"{col}_matched" in t.columns:
            t[col] = np.where(binary, t[f"{col}_matched"], t[col])
    t["compared_with"] = np.where(binary, POPULATION_MATCHED, POPULATION_MEAN)
    return t


#: The correction for the family of per-model tests within one panel, named on the page.
CORRECTION = "Holm"


def _p_two_sided(diff, lo, hi, ci: float = 0.95) -> np.ndarray:
    """The two-sided normal p-value of each difference, its standard error read off its ``ci``
    interval (DeLong's intervals are normal: half-width over z)."""
    from scipy.stats import norm

    z = norm.ppf(0.5 + ci / 2)
    se = (np.asarray(hi, dtype=float) - np.asarray(lo, dtype=float)) / (2 * z)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 2 * norm.sf(np.abs(np.asarray(diff, dtype=float) / se))


def corrected(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`decided` with, per panel, each sufficient model's two-sided p-value of internal −
    population (``p_decided``, on the comparison it is decided on) and its Holm-adjusted p-value
    over the panel's sufficient models (``p_holm``; missing for a model without enough right and
    wrong answers)."""
    t = decided(table)
    t["p_decided"] = _p_two_sided(t["diff"], t["ci_low"], t["ci_high"])
    t["p_holm"] = np.nan
    for _, g in t.groupby("panel", sort=False):
        ok = g.index[g["sufficient"].astype(bool)]
        t.loc[ok, "p_holm"] = holm(t.loc[ok, "p_decided"].to_numpy())
    return t


def mean_difference(diffs, *, n_boot: int = 2000, seed: int = 0, ci: float = 0.95) -> tuple[float, float, float]:
    """The mean over models of internal − population AUROC with a percentile bootstrap interval
    over models (each model's difference already carries its items' sampling error, so resampling
    models covers both): (estimate, ci_low, ci_high); NaN with fewer than two models."""
    d = np.asarray(diffs, dtype=float)
    d = d[np.isfinite(d)]
    if d.size < 2:
        return float(d.mean()) if d.size else np.nan, np.nan, np.nan
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(int(n_boot), d.size))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - ci) / 2, 1 - (1 - ci) / 2])
    return float(d.mean()), float(lo), float(hi)


def counts(table: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """Per panel: models, models with enough right and wrong answers (``sufficient``), and among
    those how many have internal clearly above the population after Holm's correction over the
    panel's sufficient models (``internal_above``: adjusted p below ``alpha`` and the difference
    positive), clearly below (``internal_below``), or neither (``covers_zero``); the uncorrected
    counts (interval above or below 0) as ``internal_above_uncorrected`` /
    ``internal_below_uncorrected``; and the panel's mean difference over its sufficient models
    with its bootstrap interval over models (``mean_diff``, ``mean_diff_ci_low``,
    ``mean_diff_ci_high``), on the comparison each panel is decided on (:func:`decided`;
    ``compared_with`` names it)."""
    rows = []
    for panel, g in corrected(table).groupby("panel", sort=False):
        ok = g[g["sufficient"].astype(bool)]
        sig = ok["p_holm"] < alpha
        md = mean_difference(ok["diff"])
        rows.append({"panel": panel, "timing": g["timing"].iloc[0], "compared_with": g["compared_with"].iloc[0],
                     "models": len(g), "sufficient": len(ok),
                     "internal_above": int((sig & (ok["diff"] > 0)).sum()),
                     "internal_below": int((sig & (ok["diff"] < 0)).sum()),
                     "covers_zero": int((~sig).sum()),
                     "internal_above_uncorrected": int((ok["ci_low"] > 0).sum()),
                     "internal_below_uncorrected": int((ok["ci_high"] < 0).sum()),
                     "median_diff": float(ok["diff"].median()) if len(ok) else np.nan,
                     "mean_diff": md[0], "mean_diff_ci_low": md[1], "mean_diff_ci_high": md[2]})
    return pd.DataFrame(rows, columns=["panel", "timing", "compared_with", "models", "sufficient",
                                       "internal_above", "internal_below", "covers_zero",
                                       "internal_above_uncorrected", "internal_below_uncorrected",
                                       "median_diff", "mean_diff", "mean_diff_ci_low", "mean_diff_ci_high"])


def count_sentence(table: pd.DataFrame) -> str:
    """One sentence per panel, computed from :func:`counts`: of the models with enough right and
    wrong answers, how many have internal AUROC clearly above the population's, clearly below, or
    neither, after Holm's correction over the panel's models, and the panel's mean difference with
    its interval. Uncorrected counts are never shown: a vote over uncorrected tests is not a result."""
    from metacog.tidy.report import fmt_ci, fmt_count

    if table is None or len(table) == 0:
        return "No panel has a model to compare."
    out = []
    for r in counts(table).to_dict("records"):
        n = r["sufficient"]
        if n == 0:
            out.append(f"In {r['panel']} no model has ten right and ten wrong answers, so none is compared.")
            continue
        left = r["models"] - n
        out.append(
            f"In {r['panel']} ({r['timing']}; population: {r['compared_with']}), after {CORRECTION}'s correction "
            f"over its {fmt_count(n, 'model')} with enough right and wrong answers, internal AUROC is clearly "
            f"above the population's for {r['internal_above']}, clearly below it for {r['internal_below']}, and "
            f"not distinguishable from it for {r['covers_zero']}; the mean "
            f"difference over those models is {fmt_ci(r['mean_diff'], r['mean_diff_ci_low'], r['mean_diff_ci_high'], digits=3)}"
            + (f" ({fmt_count(left, 'model')} with fewer than ten of a kind left out)." if left else "."))
    return " ".join(out)


#: Paper 1's per-model claim, as the book decides it per panel (paper 1 says it does not hold).
CLAIM = ("a model's own confidence predicts its correctness better than the other models' mean "
         "confidence (internal against population AUROC)")

#: The rule of :func:`verdicts`, for a page.
RULE = ("the panel's mean over models of internal − population AUROC (models with enough right and "
        "wrong answers), with a 95% percentile bootstrap interval over models: supported when the whole "
        "interval lies above 0, not supported when it lies wholly below 0, insufficient evidence (cannot "
        "tell) when it straddles 0 or the panel has too few models; no smallest effect of interest is set "
        "for an AUROC difference, so no interval reads negligible. The per-model tests are reported with "
        f"{CORRECTION}'s correction over each panel's models and do not decide the claim (a count of "
        "uncorrected per-model tests is not a panel estimate). For a yes/no judge the other models' mean "
        "confidence is first binarised at the model's own yes-rate, since a two-level judgment ranked "
        "against a many-level mean is tilted towards the mean")

#: The statistic of :func:`verdicts`.
STATISTIC = "mean internal − population AUROC over models"


def verdicts(table: pd.DataFrame) -> list:
    """Per panel, paper 1's per-model test as a decided claim (:data:`RULE`), from :func:`counts`:
    the mean over the sufficient models of internal − population AUROC, with its bootstrap
    interval over models, judged against 0; the reason gives the per-model counts after Holm's
    correction. A yes/no judge is decided on the binarised population (:func:`decided`). A panel
    of judgments about other people is not decided (:func:`is_third_person`). After answering the
    claim says so (:func:`metacog.hypotheses.pairwise.self_other_claim`'s rule)."""
    from metacog.hypotheses.pairwise.prose import AFTER, MIN_MODELS
    from dataclasses import replace

    from metacog.hypotheses.verdict import decide
    from metacog.tidy.report import fmt_count

    out = []
    for r in counts(table).to_dict("records") if len(table) else []:
        if is_third_person(str(r["timing"])):
            continue
        when = "after answering, " if r["timing"] == AFTER else ""
        v = decide(f"{r['panel']}: {when}{CLAIM}", STATISTIC, r["mean_diff"], r["mean_diff_ci_low"],
                   r["mean_diff_ci_high"], line=0.0, direction="greater", digits=3,
                   n={"models": int(r["sufficient"])}, min_counts={"models": MIN_MODELS},
                   line_why="0: any advantage of a model's own confidence over the population's; paper 1 "
                            "gives no smallest AUROC difference of interest")
        split = (f"against {r['compared_with']}, after {CORRECTION}'s correction over the "
                 f"{fmt_count(int(r['sufficient']), 'model')} with enough right and wrong answers, internal AUROC "
                 f"is clearly above the population's for {r['internal_above']} and clearly below for "
                 f"{r['internal_below']}")
        out.append(replace(v, reason=f"{split}; {v.reason}"))
    return out


def same_model(model_id: str, model: str) -> bool:
    """Is ``model_id`` the model ``model``, up to a provider prefix and a release date
    ('openai/gpt-4o', 'gpt-4o-2024-08-06' are gpt-4o; 'gpt-4o-mini' is not)?"""
    import re

    from metacog.hypotheses.common import short_model

    return re.fullmatch(re.escape(model) + r"(-\d{4}-\d{2}-\d{2})?", short_model(model_id)) is not None


def reference_rows(table: pd.DataFrame, model: str = "gpt-4o") -> pd.DataFrame:
    """Paper 1's reported internal and population AUROC for ``model`` beside every row of
    ``table`` that is the same model (:func:`same_model`), each labelled with its design (when
    the judgment was made) and benchmark. Paper 1 gives no intervals."""
    rows = [{"data": f"paper 1: {bench}", "benchmark": bench, "judgment made": "before answering",
             "model": model, "n_items": np.nan, "auroc_internal": v[0], "auroc_population": v[1],
             "diff": v[0] - v[1], "ci_low": np.nan, "ci_high": np.nan}
            for bench, by_model in PAPER1_AUROC.items() for m, v in by_model.items() if m == model]
    mine = table[[same_model(m, model) for m in table["model"]]] if len(table) else table
    for r in mine.to_dict("records"):
        rows.append({"data": r["panel"], "benchmark": r["benchmark"], "judgment made": r["timing"],
                     "model": r["model"], "n_items": r["n_items"], "auroc_internal": r["auroc_internal"],
                     "auroc_population": r["auroc_population"], "diff": r["diff"],
                     "ci_low": r["ci_low"], "ci_high": r["ci_high"]})
    return pd.DataFrame(rows, columns=["data", "benchmark", "judgment made", "model", "n_items",
                                       "auroc_internal", "auroc_population", "diff", "ci_low", "ci_high"])


def display(table: pd.DataFrame) -> pd.DataFrame:
    """Internal against population for a page: one row per model, the difference with its interval
    in words; models with too few right or wrong answers are marked, not hidden."""
    from metacog.hypotheses.common import with_ci

    t = table.rename(columns={"diff": "d", "ci_low": "d_ci_low", "ci_high": "d_ci_high"})
    out = pd.DataFrame({"model": t["model"], "items": t["n_items"], "correct": t["n_correct"],
                        "internal AUROC": t["auroc_internal"], "population AUROC": t["auroc_population"]})
    out = out.assign(**with_ci(t, "d", "internal − population (95% CI, DeLong paired)", digits=3))
    if "judge_binary" in t.columns and t["judge_binary"].fillna(False).astype(bool).any():
        m = t.rename(columns={"diff_matched": "dm", "ci_low_matched": "dm_ci_low", "ci_high_matched": "dm_ci_high"})
        out["population AUROC, binarised at the model's yes-rate"] = t["auroc_population_matched"]
        out = out.assign(**with_ci(m, "dm", "internal − binarised population (95% CI, DeLong paired; decides)",
                                   digits=3))
    out["enough right and wrong answers (≥ 10 each)"] = np.where(t["sufficient"].astype(bool), "yes", "no")
    return out.reset_index(drop=True)


def display_reference(rows: pd.DataFrame) -> pd.DataFrame:
    """:func:`reference_rows` for a page, the difference with its interval in words."""
    from metacog.hypotheses.common import with_ci

    t = rows.rename(columns={"diff": "d", "ci_low": "d_ci_low", "ci_high": "d_ci_high"})
    out = t[["data", "benchmark", "judgment made", "model", "n_items", "auroc_internal",
             "auroc_population"]].rename(columns={"n_items": "items", "auroc_internal": "internal AUROC",
                                                  "auroc_population": "population AUROC"})
    return out.assign(**with_ci(t, "d", "internal − population (95% CI)", digits=3))


def model_sentence(table: pd.DataFrame, model: str = "gpt-4o") -> str:
    """What our panels say about ``model`` (its id without a provider prefix), one clause per
    panel with its design: internal and population AUROC and the difference with its interval."""
    from metacog.tidy.report import fmt_ci, fmt_num

    rows = reference_rows(table, model)
    ours = rows[~rows["data"].str.startswith("paper 1")]
    if ours.empty:
        return f"No panel here has {model}."
    parts = [f"in {r['data']} (judged {r['judgment made']}, {int(r['n_items']):,} items) its internal AUROC is "
             f"{fmt_num(r['auroc_internal'], 3)} and the population's {fmt_num(r['auroc_population'], 3)}, a "
             f"difference of {fmt_ci(r['diff'], r['ci_low'], r['ci_high'], digits=3)}"
             for r in ours.to_dict("records")]
    return f"For {model}, " + "; ".join(parts) + "."
