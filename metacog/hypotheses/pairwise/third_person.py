"""The pairwise chapter's built-in "other": a model judging other people.

spar asks each model, before it answers, both whether it will answer or pass (a judgment about
itself) and what share of educated people would get the item right (a judgment about others).
:func:`third_person_baseline` sets the two against the model's own correctness: a first-person
judgment that carries private self-knowledge should predict it better. Tables and verdicts for
the page are here too; the rest of the chapter is :mod:`metacog.hypotheses.pairwise`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.hypotheses.pairwise import MIN_MODELS
from metacog.stats import resample
from metacog.stats.pairwise import TauTables


def third_person_baseline(own_confidence: pd.DataFrame, own_correct: pd.DataFrame,
                          third_confidence: pd.DataFrame, *, n_boot: int = 200, seed: int = 0,
                          ci: float = 0.95) -> pd.DataFrame:
    """Does a model's judgment about itself predict its correctness better than its judgment of
    how many *people* would get the item right?

    ``own_confidence`` (items x models) holds first-person judgments (e.g. spar's prospective
    answer-or-pass), ``own_correct`` the models' correctness, and ``third_confidence`` the same
    models' third-person judgments on the same items (all 0/1). For every
    model in both, tau-b of each judgment against the model's own correctness on the items it
    has both, and their difference; the last row ("mean over models") averages them, with a
    percentile bootstrap interval over items. A first-person judgment that carries private
    self-knowledge should beat the third-person one.
    """
    models = [m for m in own_confidence.columns if m in third_confidence.columns]
    items = own_confidence.index.intersection(third_confidence.index)
    cols = ["model", "items", "tau_own", "tau_third_person", "difference", "ci_low", "ci_high"]
    if not models or len(items) < 10:
        return pd.DataFrame(columns=cols)
    A = own_confidence.loc[items, models].to_numpy(dtype=float)
    B = third_confidence.loc[items, models].to_numpy(dtype=float)
    Y = own_correct.loc[items, models].to_numpy(dtype=float)

    own, third = TauTables(A, Y), TauTables(B, Y)

    def diag_taus(w):  # each model's judgment against its own correctness
        return np.diag(own.tau(w)), np.diag(third.tau(w))

    ta, tb = diag_taus(None)
    n = len(items)
    draws = []
    for W in resample.item_weights(n, n_boot, seed=seed):
        for w in W:
            a, b = diag_taus(w)
            d = a - b
            draws.append(np.nanmean(d) if np.isfinite(d).any() else np.nan)
    lo, hi = resample.percentile_interval(draws, ci=ci)
    rows = [{"model": m, "items": int((~np.isnan(A[:, j]) & ~np.isnan(B[:, j]) & ~np.isnan(Y[:, j])).sum()),
             "tau_own": ta[j], "tau_third_person": tb[j], "difference": ta[j] - tb[j],
             "ci_low": np.nan, "ci_high": np.nan} for j, m in enumerate(models)]
    d = ta - tb
    rows.append({"model": "mean over models", "items": n, "tau_own": np.nanmean(ta),
                 "tau_third_person": np.nanmean(tb), "difference": np.nanmean(d) if np.isfinite(d).any() else np.nan,
                 "ci_low": float(lo), "ci_high": float(hi)})
    return pd.DataFrame(rows, columns=cols)


def third_person_table(panelset, *, own: str = "prospective", third: str = "other_confidence",
                       n_boot: int = 200, seed: int = 0) -> pd.DataFrame:
    """:func:`third_person_baseline` for every source and benchmark that has both a first-person
    judgment probe ``own`` and a third-person probe ``third`` (spar has both)."""
    from metacog.hypotheses.common import panel_columns
    from metacog.memo import memo

    by_key = {(p.label, p.benchmark, p.probe): p for p in panelset}
    parts = []
    for (label, bench, probe), p in by_key.items():
        other = by_key.get((label, bench, third))
        if probe != own or other is None:
            continue
        res = memo(third_person_baseline, p.confidence, p.correct, other.confidence, n_boot=n_boot,
                   seed=seed)
        parts.append(res.assign(**panel_columns(p)))
    if not parts:
        return pd.DataFrame(columns=["model", "items", "tau_own", "tau_third_person", "difference",
                                     "ci_low", "ci_high", "panel", "source", "benchmark", "probe",
                                     "timing"])
    return pd.concat(parts, ignore_index=True)


def third_person_verdicts(table: pd.DataFrame) -> list:
    """Per panel: does the first-person judgment beat the same model's third-person judgment at
    predicting its own correctness (mean difference in tau-b > 0)?"""
    from metacog.hypotheses.verdict import decide

    out = []
    for r in table[table["model"] == "mean over models"].to_dict("records"):
        n_models = int((table["panel"] == r["panel"]).sum() - 1)
        out.append(decide(
            f"{r['panel']}: a model's judgment about itself predicts its correctness better than its "
            f"judgment about other people", "mean own minus third-person τ-b", r["difference"],
            r["ci_low"], r["ci_high"], line=0.0, direction="greater",
            n={"models": n_models, "items": int(r["items"])}, min_counts={"models": MIN_MODELS, "items": 10}))
    return out


def display_third_person(table: pd.DataFrame) -> pd.DataFrame:
    """The third-person baseline for a page (one row per model and the mean with its interval)."""
    from metacog.hypotheses.common import with_ci

    if table is None or len(table) == 0:
        return pd.DataFrame({"result": ["No source has both a first-person and a third-person judgment."]})
    out = pd.DataFrame({"panel": table["panel"], "model": table["model"], "items": table["items"],
                        "τ-b, judging itself": table["tau_own"],
                        "τ-b, judging other people": table["tau_third_person"]})
    from metacog.tidy.report import fmt_num

    ci = with_ci(table.rename(columns={"difference": "d", "ci_low": "d_ci_low", "ci_high": "d_ci_high"}),
                 "d", "difference", digits=3)["difference"]
    # only the mean over models has an interval; a model's own row is its point difference
    out["difference, itself − other people (95% CI for the mean over models only)"] = [
        c if m == "mean over models" else fmt_num(d, 3)
        for c, m, d in zip(ci, table["model"], table["difference"])]
    return out
