"""The pairwise chapter's decision rules: which panels make a self claim, how the
self-against-other claim is worded and decided (against the smallest effect of interest, with the
counterfactual design's selection caveat), and the page's verdict table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.hypotheses.pairwise.prose import AFTER, MIN_MODELS, timing_of


def self_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a result table (with a ``timing`` column) whose judgments are a model's about
    itself: a panel of judgments about other people is the third-person baseline, not a self claim
    (:func:`metacog.hypotheses.pairwise.population.is_third_person`)."""
    from metacog.hypotheses.pairwise.population import is_third_person

    if table is None or not len(table) or "timing" not in table.columns:
        return table
    return table[[not is_third_person(str(t)) for t in table["timing"]]].reset_index(drop=True)


def self_other_claim(panel_subset: str, timing: str) -> str:
    """The self-against-other claim for one panel (and subset), worded for when its judgments were
    made: after answering it is a self-advantage after answering, not paper 1's measurement."""
    if timing == AFTER:
        return (f"{panel_subset}: after answering, a model's confidence tracks its own correctness better "
                f"than other models' (a self-advantage that reading its own answer can produce; not "
                f"paper 1's measurement)")
    return f"{panel_subset}: a model's confidence tracks its own correctness better than other models'"


#: Where the detectable effect of a self-minus-other verdict comes from, for its reason.
DETECTABLE_FROM = "80% power, read off the interval's width"


#: Why a counterfactual panel cannot decide self against other: its judgments exist only after a
#: correct answer, and that selection alone moves the statistic (a planted panel with no individual
#: signal gives about +0.03 τ-b; tests/test_hypotheses_pairwise_counterfactual.py).
COUNTERFACTUAL_CAVEAT = ("a counterfactual judgment is asked only after the model's own correct answer with "
                         "the context, and that selection on its own correctness alone lifts self minus other "
                         "above 0 with no individual signal at all (a planted panel with none reads about "
                         "+0.03 τ-b), so this design cannot tell")


def _excess_why() -> str:
    """Why the book's 0.02 line reads the mean pairwise τ-b's excess over the base-rate null."""
    from metacog.hypotheses.verdict import SMALLEST_REPORTED_WHY

    return (SMALLEST_REPORTED_WHY + "; an excess over the base-rate-matched null smaller than that is smaller "
            "than any pairwise calibration paper 1 reports")


def _margin(margin: float | None, *, excess: bool = False) -> tuple[float, str]:
    """The τ-b margin a pairwise verdict is read against (default the book's
    :data:`metacog.hypotheses.verdict.SELF_OTHER_MARGIN`) and why it is there: for a
    self-advantage, or with ``excess`` for the mean τ-b's excess over the base-rate null."""
    from metacog.hypotheses.verdict import SELF_OTHER_MARGIN, SELF_OTHER_MARGIN_WHY

    if margin is None or margin == SELF_OTHER_MARGIN:
        return SELF_OTHER_MARGIN, _excess_why() if excess else SELF_OTHER_MARGIN_WHY
    return margin, "the margin given here"


def verdicts(pairwise_table: pd.DataFrame, *, margin: float | None = None) -> list:
    """Per panel and subset: is a model's confidence calibrated to its own correctness better
    than to other models' by at least ``margin`` τ-b (default: the power chapter's smallest
    excess of interest, :data:`metacog.hypotheses.verdict.SELF_OTHER_MARGIN`)?

    Decided with :func:`metacog.hypotheses.verdict.decide_meaningful` on the bootstrap interval:
    "supported" needs the whole interval above the margin; "not supported" needs the interval
    wholly below 0, or its upper end below the margin (an equivalence reading: it rules out a
    self-advantage of the margin or more) *and* a design that detects an effect of the margin
    with 80% power, read off the interval's width
    (:func:`metacog.hypotheses.verdict.interval_detectable`), the power chapter's condition;
    otherwise "insufficient evidence". Where the judgments are made after answering, the claim is
    worded as a self-advantage after answering (:func:`self_other_claim`). A panel of judgments
    about other people is not a self claim and is left out
    (:func:`metacog.hypotheses.pairwise.population.is_third_person`). On a counterfactual panel
    (judged only after a correct answer) the verdict is capped at "insufficient evidence"
    (:data:`COUNTERFACTUAL_CAVEAT`): selection on correctness alone moves the statistic. The line
    and why it is there (:data:`metacog.hypotheses.verdict.SELF_OTHER_MARGIN_WHY`, or "the margin
    given here" for another ``margin``) travel with every verdict. Paper 1 claims there is none."""
    from metacog.hypotheses.common import TIMING
    from metacog.hypotheses.pairwise.population import is_third_person
    from metacog.hypotheses.verdict import (INSUFFICIENT, NEGLIGIBLE, NOT_SUPPORTED, SUPPORTED, TARGET_POWER, cap,
                                            decide_meaningful, interval_detectable)

    margin, why = _margin(margin)
    out = []
    for r in pairwise_table.to_dict("records"):
        if is_third_person(str(r.get("timing"))):
            continue
        lo, hi = r.get("self_minus_other_ci_low", np.nan), r.get("self_minus_other_ci_high", np.nan)
        det = interval_detectable(lo, hi, power=TARGET_POWER)
        v = decide_meaningful(
            self_other_claim(f"{r['panel']}, {r['subset']}", r.get("timing")), "self minus other τ-b",
            r.get("self_minus_other", np.nan), lo, hi, margin=margin, line=0.0, direction="greater",
            n={"models": int(r["models"]), "items": int(r["items"])},
            min_counts={"models": MIN_MODELS, "items": 10},
            detectable=round(det, 3) if np.isfinite(det) and det > 0 else None,
            detectable_from=DETECTABLE_FROM, line_why=why)
        if r.get("timing") == TIMING["counterfactual"]:
            v = cap(v, [COUNTERFACTUAL_CAVEAT], statuses=(SUPPORTED, NOT_SUPPORTED, NEGLIGIBLE, INSUFFICIENT))
        out.append(v)
    return out


def verdict_display(verdicts: list, *tables: pd.DataFrame) -> pd.DataFrame:
    """The verdicts of the page as one table (:func:`metacog.hypotheses.verdict.verdict_table`
    without ``direction``), with when each was judged first (:func:`timing_of` over ``tables``).
    A verdict judged against a smallest effect of interest shows it in ``line`` (the line its
    interval must clear: 0 + margin), not the 0 it starts from; ``threshold`` says it in words
    (±margin around 0) and ``line_why`` where it comes from."""
    from metacog.hypotheses.verdict import verdict_table

    shown = verdict_table(verdicts).drop(columns=["direction"])
    shown["line"] = [v.line + (v.margin if v.margin and v.direction == "greater" else 0.0) for v in verdicts]
    shown.insert(0, "judged", [timing_of(v.claim, *tables) for v in verdicts])
    return shown


#: Paper 1's pairwise claim as the book decides it: the statistic is the one paper 1 reports.
EXCESS_CLAIM = ("mean pairwise τ-b over pairs of different models lies above the base-rate-matched "
                "null's mean")
EXCESS_STATISTIC = "mean pairwise τ-b − base-rate-matched null mean (different-model pairs)"


def excess_verdicts(pairwise_table: pd.DataFrame, *, margin: float | None = None) -> list:
    """Per panel, on all items: does the mean pairwise τ-b over ordered pairs of different models
    (paper 1's pairs, :data:`metacog.hypotheses.pairwise.PAPER1_PAIRS_READING`) lie above the
    base-rate-matched null's mean (paper 1's null) by at least ``margin`` τ-b (default
    :data:`metacog.hypotheses.verdict.SELF_OTHER_MARGIN`)? The statistic is paper 1's own (its
    results table gives the mean τ-b and the null's mean), so the findings page sets the two side
    by side. The interval is the mean τ-b's bootstrap interval (over items and models) less the
    null's mean, which is held fixed (it is a mean over the null's permutations of the same
    items). Decided with :func:`metacog.hypotheses.verdict.decide_meaningful`: above the line,
    within the line (negligible), or cannot tell."""
    from metacog.hypotheses.pairwise.population import is_third_person
    from metacog.hypotheses.verdict import decide_meaningful

    margin, why = _margin(margin, excess=True)
    out = []
    for r in pairwise_table.to_dict("records"):
        if r.get("subset") != "all items" or is_third_person(str(r.get("timing"))):
            continue
        null = r.get("null_base_rate", np.nan)
        est, lo, hi = (r.get(k, np.nan) - null for k in ("mean_tau", "mean_tau_ci_low", "mean_tau_ci_high"))
        head = f"{r['panel']}, all items"
        claim = (f"{head}: after answering, {EXCESS_CLAIM} (not paper 1's measurement)"
                 if r.get("timing") == AFTER else f"{head}: {EXCESS_CLAIM}")
        out.append(decide_meaningful(claim, EXCESS_STATISTIC, est, lo, hi, margin=margin, line=0.0,
                                     direction="greater",
                                     n={"models": int(r["models"]), "items": int(r["items"])},
                                     min_counts={"models": MIN_MODELS, "items": 10}, line_why=why))
    return out
