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

#: Paper 1's internal and population AUROC {benchmark: {model: (internal, population)}}, typed
#: from the paper (no intervals given).
PAPER1_AUROC = {"SQuAD": {"gpt-4o": (0.731, 0.751)}, "MMLU-Pro": {"gpt-4o": (0.632, 0.630)}}

#: The columns of :func:`internal_population_table`, panel first.
COLUMNS = ["panel", "model", "n_items", "n_correct", "auroc_internal", "auroc_population", "diff",
           "ci_low", "ci_high", "se", "p_value", "sufficient", "confidence_scale", "source",
           "benchmark", "probe", "timing"]


def _analyse(confidence_raw: pd.DataFrame, correct: pd.DataFrame, ci: float, min_class: int) -> pd.DataFrame:
    return stats.internal_population(confidence_raw, correct, ci=ci, min_class=min_class)


def internal_population_table(panelset, *, ci: float = 0.95, min_class: int = 10) -> pd.DataFrame:
    """Internal and population AUROC with DeLong's paired interval of internal - population, for
    every model of every panel of ``panelset``: one row per (panel, model) with the columns of
    :data:`COLUMNS`. ``confidence_scale`` says which confidence was ranked: the yes/no judgment
    itself, or the stated confidence before the book's cut. Remembered on disk (:mod:`metacog.memo`)."""
    from metacog.hypotheses.common import panel_columns
    from metacog.memo import memo

    parts = []
    for p in panelset:
        res = memo(_analyse, p.confidence_raw, p.correct, ci, min_class)
        scale = "yes/no judgment" if p.cut == "binary" else "stated confidence (before the cut)"
        parts.append(res.assign(confidence_scale=scale, **panel_columns(p)))
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(parts, ignore_index=True)[COLUMNS]


def counts(table: pd.DataFrame) -> pd.DataFrame:
    """Per panel: models, models with enough right and wrong answers (``sufficient``), and among
    those how many have internal clearly above population (interval above 0), clearly below
    (interval below 0) or an interval that covers 0."""
    rows = []
    for panel, g in table.groupby("panel", sort=False):
        ok = g[g["sufficient"].astype(bool)]
        rows.append({"panel": panel, "timing": g["timing"].iloc[0], "models": len(g), "sufficient": len(ok),
                     "internal_above": int((ok["ci_low"] > 0).sum()),
                     "internal_below": int((ok["ci_high"] < 0).sum()),
                     "covers_zero": int(((ok["ci_low"] <= 0) & (ok["ci_high"] >= 0)).sum()),
                     "median_diff": float(ok["diff"].median()) if len(ok) else np.nan})
    return pd.DataFrame(rows, columns=["panel", "timing", "models", "sufficient", "internal_above",
                                       "internal_below", "covers_zero", "median_diff"])


def count_sentence(table: pd.DataFrame) -> str:
    """One sentence per panel, computed from :func:`counts`: of the models with enough right and
    wrong answers, how many have internal AUROC clearly above the population's, clearly below, or
    an interval covering 0."""
    from metacog.tidy.report import fmt_count, fmt_num

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
            f"In {r['panel']} ({r['timing']}), internal AUROC is clearly above the population's (95% "
            f"interval above zero) for {r['internal_above']} of the {fmt_count(n, 'model')} with enough "
            f"right and wrong answers, clearly below it for {r['internal_below']}, and not distinguishable "
            f"from it for {r['covers_zero']}; the median difference is {fmt_num(r['median_diff'], 3)}"
            + (f" ({fmt_count(left, 'model')} with fewer than ten of a kind left out)." if left else "."))
    return " ".join(out)


#: Paper 1's per-model claim, as the book decides it per panel (paper 1 says it does not hold).
CLAIM = ("a model's own confidence predicts its correctness better than the other models' mean "
         "confidence (internal against population AUROC)")

#: The rule of :func:`verdicts`, for a page.
RULE = ("among the models with enough right and wrong answers whose paired 95% interval excludes 0, "
        "the share with internal AUROC clearly above the population's, with its exact (Clopper-Pearson) "
        "95% interval: supported when the interval lies above one half (more models clearly above than "
        "clearly below), not supported when it lies below one half, insufficient evidence when it "
        "straddles one half or the panel has too few models")


def verdicts(table: pd.DataFrame) -> list:
    """Per panel, paper 1's per-model test as a decided claim (:data:`RULE`), from :func:`counts`:
    of the sufficient models whose interval excludes 0, the share clearly above the population,
    judged against one half. Per-model intervals are not corrected for the number of models, but
    chance exclusions fall on both sides alike, so the share is fair. After answering the claim
    says so (:func:`metacog.hypotheses.pairwise.self_other_claim`'s rule)."""
    from metacog.hypotheses.pairwise import AFTER, MIN_MODELS
    from dataclasses import replace

    from metacog.hypotheses.verdict import decide
    from metacog.stats.intervals import proportion_ci
    from metacog.tidy.report import fmt_count

    out = []
    for r in counts(table).to_dict("records") if len(table) else []:
        above, below = int(r["internal_above"]), int(r["internal_below"])
        k = above + below
        est, (lo, hi) = (above / k, proportion_ci(above, k, method="exact")) if k else (np.nan, (np.nan, np.nan))
        when = "after answering, " if r["timing"] == AFTER else ""
        v = decide(f"{r['panel']}: {when}{CLAIM}",
                   "share of clearly differing models with internal above population AUROC", est, lo, hi,
                   line=0.5, direction="greater", digits=2, n={"models": int(r["sufficient"])},
                   min_counts={"models": MIN_MODELS})
        split = (f"internal AUROC is clearly above the population's for {above} and clearly below for "
                 f"{below} of the {fmt_count(int(r['sufficient']), 'model')} with enough right and wrong answers")
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
