"""The sources of the miscalibration chapter's policy audit: which carry the policies C0, C1
and C2, loaded as rows with a parsed yes / no / abstain decision, on the items every policy was
asked, with each model's P(Yes) answerer beside it when asked for (:func:`policy_frames`)."""

from __future__ import annotations

import pandas as pd

from metacog.hypotheses.common import ChapterResult, chapter_result
from metacog.hypotheses.miscalibration.answerers import FIT_COLUMNS, add_p_yes, complete_items
from metacog.stats.policy import POLICIES


@chapter_result
class PolicyFrames(ChapterResult):
    """:func:`policy_frames`: ``frames`` ({source: its rows of probes c0/c1/c2 with a parsed
    yes/no/abstain decision}), ``lacking`` (one sentence per source the audit cannot use, or
    uses on part of its items) and ``p_yes`` (the fits of the P(Yes) answerers added, one row per
    source, answerer and policy; empty when none was asked for or none recorded a P(Yes))."""

    frames: dict
    lacking: list
    p_yes: pd.DataFrame

    def summary(self) -> pd.DataFrame:
        """One row per usable source: its rows, models, items and domains."""
        rows = [{"source": s, "rows": len(df), "models": df["model"].nunique(), "items": df["item_id"].nunique(),
                 "domains": df["domain"].nunique()} for s, df in self.frames.items()]
        return pd.DataFrame(rows, columns=["source", "rows", "models", "items", "domains"])


def policy_frames(sources, *, read_p_yes: bool = False, seed: int = 0) -> PolicyFrames:
    """The sources that carry the C0/C1/C2 policies, loaded, and one sentence for each that does
    not (a :class:`PolicyFrames`). A source narrowed to one probe ("run:c2") lacks the other
    two and gets a sentence too. Each model keeps the items it answered under all three policies
    (:func:`~metacog.hypotheses.miscalibration.answerers.complete_items`); with ``read_p_yes``
    every model that recorded a P(Yes) gets its P(Yes) answerer beside it
    (:func:`~metacog.hypotheses.miscalibration.answerers.add_p_yes`, folds drawn from ``seed``).
    """
    from metacog.data.responses import load_responses, source_name as source_label

    frames, lacking = {}, []
    for source in sources:
        df = load_responses(source)
        probes = sorted(map(str, df["probe"].dropna().unique()))
        missing = [p for p in POLICIES if p not in probes]
        if missing or "decision" not in df.columns:
            what = (f"lacks the policy probe(s) {', '.join(m.upper() for m in missing)}" if missing
                    else "has no decision column (yes / no / abstain)")
            lacking.append(f"{source_label(source)} {what} (its probes: {', '.join(probes)}), so the "
                           f"policy audit does not apply to it.")
            continue
        rows = df[df["probe"].astype(str).isin(POLICIES)].copy()
        if "parse_status" in rows.columns:
            status = rows["parse_status"].astype("string")
            rows = rows[(status.isna() | (status == "ok")).to_numpy()]
        rows["decision"] = rows["decision"].astype(str).str.lower()
        rows = rows[rows["decision"].isin(("yes", "no", "abstain"))]
        if "domain" not in rows.columns or rows["domain"].isna().all():
            rows["domain"] = rows["benchmark"]
        if rows.empty:
            lacking.append(f"{source_label(source)} has no parsed yes / no / abstain decisions on its "
                           f"policy probes, so the policy audit does not apply to it.")
            continue
        frames[source] = rows.reset_index(drop=True)
    frames, partial = complete_items(frames)
    fits = pd.DataFrame(columns=FIT_COLUMNS)
    if read_p_yes:
        frames, fits = add_p_yes(frames, seed=seed)
    return PolicyFrames(frames, lacking + partial, fits)
