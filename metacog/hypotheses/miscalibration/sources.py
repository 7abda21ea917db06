"""The sources of the miscalibration chapter's policy audit: which carry the policies C0, C1
and C2, loaded as rows with a parsed yes / no / abstain decision (:func:`policy_frames`)."""

from __future__ import annotations

import pandas as pd

from metacog.hypotheses.common import ChapterResult, chapter_result
from metacog.stats.policy import POLICIES


@chapter_result
class PolicyFrames(ChapterResult):
    """:func:`policy_frames`: ``frames`` ({source: its rows of probes c0/c1/c2 with a parsed
    yes/no/abstain decision}) and ``lacking`` (one sentence per source the audit cannot use)."""

    frames: dict
    lacking: list

    def summary(self) -> pd.DataFrame:
        """One row per usable source: its rows, models, items and domains."""
        rows = [{"source": s, "rows": len(df), "models": df["model"].nunique(), "items": df["item_id"].nunique(),
                 "domains": df["domain"].nunique()} for s, df in self.frames.items()]
        return pd.DataFrame(rows, columns=["source", "rows", "models", "items", "domains"])


def policy_frames(sources) -> PolicyFrames:
    """The sources that carry the C0/C1/C2 policies, loaded, and one sentence for each that does
    not (a :class:`PolicyFrames`). A source narrowed to one probe ("run:c2") lacks the other
    two and gets a sentence too.
    """
    from metacog.data.responses import load_responses, source_label

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
    return PolicyFrames(frames, lacking)
