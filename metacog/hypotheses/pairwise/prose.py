"""The pairwise chapter's closing prose: verdicts and the shared-difficulty reading, one
sentence per design (before answering first), every panel named."""

from __future__ import annotations

import pandas as pd

#: Fewer models than this cannot separate self-pairs from other-pairs meaningfully.
MIN_MODELS = 5

#: The judgment timing (:func:`metacog.hypotheses.common.timing`) at which a model can read its
#: own answer before judging it: a self-advantage there is not paper 1's measurement.
AFTER = "after answering"

#: How each timing heads its sentence in the closing paragraphs, paper 1's design first.
TIMING_HEADS = {
    "before answering": "Judged before answering (paper 1's design)",
    "after a correct answer with the context": "Judged after a correct answer made with the context "
                                               "(paper 1's counterfactual design)",
    AFTER: "Judged after answering (not paper 1's design: a model that sees its own answer can read it)",
    "before answering, about other people": "Judged before answering, about other people (not a "
                                            "judgment of the model itself)",
}


def timing_of(claim: str, *tables: pd.DataFrame) -> str:
    """When the judgments behind a verdict were made: the ``timing`` of the longest panel name of
    ``tables`` (columns ``panel`` and ``timing``) that starts ``claim``; "unknown" where none does."""
    known: dict = {}
    for t in tables:
        if t is not None and len(t) and {"panel", "timing"} <= set(t.columns):
            known.update(dict(zip(t["panel"].astype(str), t["timing"].fillna("unknown"))))
    hits = [p for p in known if claim.startswith(p)]
    return str(known[max(hits, key=len)]) if hits else "unknown"


def _timing_order(timing: str) -> int:
    """Before answering first, then the counterfactual design, then after answering, then the rest."""
    order = list(TIMING_HEADS)
    return order.index(timing) if timing in order else len(order)


def _by_timing(verdicts: list, tables) -> dict:
    groups: dict = {}
    for v in verdicts:
        groups.setdefault(timing_of(v.claim, *tables), []).append(v)
    return dict(sorted(groups.items(), key=lambda kv: _timing_order(kv[0])))


def _clauses(verdicts: list, words: dict, noun: str, negative=()) -> str:
    """'<words> 2 of its 3 <noun> (A and B); ...' for the verdicts of ONE timing, every name
    listed (:func:`metacog.tidy.phrasing.join`, no 'and N more'). A status in ``negative`` has
    words that already deny ('cannot be told in'), so all of two reads 'either of its two', all
    of more 'any of its n'."""
    from metacog.tidy.phrasing import join

    n = len(verdicts)
    out = []
    for status, w in words.items():
        names = [v.claim.split(": ", 1)[0] for v in verdicts if v.status == status]
        if not names:
            continue
        if n == 1:
            which = f"its one {noun.rstrip('s')}"
        elif len(names) == n and status in negative:
            which = f"either of its two {noun}" if n == 2 else f"any of its {n} {noun}"
        elif len(names) == n:
            which = f"all {n} of its {noun}" if n > 2 else f"both its {noun}"
        else:
            which = f"{len(names)} of its {n} {noun}"
        out.append(f"{w} {which} ({join(names)})")
    return "; ".join(out)


def verdict_paragraph(verdicts: list, third_person: list | None = None, *tables: pd.DataFrame,
                      internal: list | None = None, margin: float | None = None) -> str:
    """The closing paragraph: one sentence per judgment timing (read from ``tables``, the result
    tables with ``panel`` and ``timing`` columns) for the self-against-other τ-b contrast and, with
    ``internal``, paper 1's per-model internal against population test; then one sentence for the
    third-person test. Counts are made within one timing only and every panel is named."""
    from metacog.hypotheses.verdict import SELF_OTHER_MARGIN as MARGIN
    from metacog.hypotheses.verdict import INSUFFICIENT, NEGLIGIBLE, NOT_SUPPORTED, SUPPORTED

    m = f"{MARGIN if margin is None else margin:g}"
    tau_words = {SUPPORTED: f"self-pairs beat other-pairs by more than {m} τ-b, the smallest effect of "
                            f"interest (above the line), in",
                 NEGLIGIBLE: f"any difference between self-pairs and other-pairs is negligible (the interval "
                             f"lies inside ±{m} τ-b, within the line) in",
                 NOT_SUPPORTED: "self-pairs do worse than other-pairs in",
                 INSUFFICIENT: "whether self-pairs beat other-pairs cannot be told in"}
    after_words = {**tau_words, SUPPORTED: f"a self-advantage after answering exceeds {m} τ-b in"}
    auc_words = {SUPPORTED: "the mean internal − population AUROC over models lies above 0 in",
                 NOT_SUPPORTED: "the mean internal − population AUROC over models lies below 0 in",
                 INSUFFICIENT: "the mean internal − population AUROC over models cannot tell in"}
    sentences = []
    groups = _by_timing(list(verdicts) + list(internal or []), tables)
    internal_ids = {id(v) for v in internal or []}
    for timing, vs in groups.items():
        head = TIMING_HEADS.get(timing, f"Judged {timing}")
        tau = [v for v in vs if id(v) not in internal_ids]
        auc = [v for v in vs if id(v) in internal_ids]
        parts = []
        if tau:
            parts.append("on the self minus other τ-b, " + _clauses(tau, after_words if timing == AFTER else tau_words,
                                                                    "panel-subsets", (NOT_SUPPORTED, INSUFFICIENT)))
        if auc:
            parts.append("on paper 1's per-model test, " + _clauses(auc, auc_words, "panels", (INSUFFICIENT,)))
        if parts:
            sentences.append(f"{head}: " + "; ".join(parts) + ".")
    if third_person:
        sentences.append("The third-person test (a model's judgment about itself against its judgment about "
                         "other people, at predicting its own correctness): " + _clauses(
                             third_person, {SUPPORTED: "judging oneself beats judging other people in",
                                            NOT_SUPPORTED: "judging other people does better in",
                                            INSUFFICIENT: "the evidence is insufficient in"}, "panels") + ".")
    return " ".join(sentences)


def shared_sentence(results: pd.DataFrame) -> str:
    """How much of each panel's mean tau is shared difficulty, from :func:`table`'s rows on all
    items, one sentence per judgment timing (never counted across timings): the panels whose
    difficulty-stratified null mean exceeds half their mean tau, and those where it does not,
    every name listed; then when the judgments were made
    (:func:`metacog.hypotheses.by_design.timing_sentence`)."""
    from metacog.hypotheses.by_design import timing_sentence
    from metacog.tidy.phrasing import join

    on_all = results[(results["subset"] == "all items") & results["mean_tau"].notna()
                     & results["null_difficulty"].notna()] if len(results) else results
    if not len(on_all):
        return "No panel has both a mean τ-b and a difficulty-stratified null to compare."
    sentences = []
    for timing, g in _by_timing_rows(on_all).items():
        shared = g["null_difficulty"] > g["mean_tau"] / 2
        mostly, rest = list(g.loc[shared, "panel"]), list(g.loc[~shared, "panel"])
        n = len(g)
        head = TIMING_HEADS.get(timing, f"Judged {timing}")

        def which(names):
            if n == 1:
                return f"its one panel ({join(names)})"
            return (f"all {n} of its panels" if len(names) == n else f"{len(names)} of its {n} panels") + f" ({join(names)})"

        if not rest:
            sentences.append(f"{head}: most of the pairwise calibration is shared difficulty in {which(mostly)}: "
                             f"the difficulty-stratified null mean is more than half the mean τ-b.")
        elif not mostly:
            sentences.append(f"{head}: the difficulty-stratified null mean is less than half the mean τ-b in "
                             f"{which(rest)}, where more of the calibration is left once shared difficulty is "
                             f"controlled.")
        else:
            sentences.append(f"{head}: the difficulty-stratified null mean is more than half the mean τ-b in "
                             f"{which(mostly)}, and less than half in {join(rest)}, where more of the calibration "
                             f"is left once shared difficulty is controlled.")
    return " ".join(sentences) + " " + timing_sentence(on_all)


def _by_timing_rows(t: pd.DataFrame) -> dict:
    groups = {k: g for k, g in t.assign(timing=t["timing"].fillna("unknown")).groupby("timing", sort=False)}
    return dict(sorted(groups.items(), key=lambda kv: _timing_order(kv[0])))
