"""The rank-one chapter's claims, decided per panel against the lines of
:mod:`metacog.hypotheses.rank_one.lines`, and the paragraph that sums them up by design."""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.hypotheses.by_design import by_design, design_head, design_order, group_sentence
from metacog.hypotheses.rank_one.lines import (DOMINANCE_RATIO_WHY, MIN_ITEMS, MIN_MODELS, MIN_REMOVED_SHARE,
                                               NEGLIGIBLE_R, NEGLIGIBLE_R_WHY, SHARE_LINE, SHARE_LINE_WHY,
                                               removed_items)
from metacog.stats.structure import DOMINANCE_RATIO

DOMINANCE_CLAIM = "confidence is dominated by one factor"


#: The book's own claim on the eigenvalue ratio (no paper number: paper 1 reports no ratio).
RATIO_CLAIM = f"the first eigenvalue of confidence is at least {DOMINANCE_RATIO:g} times the second"


#: The link claim, paper 1's second finding.
LINK_CLAIM = "without unanimous items the confidence axis no longer follows the performance axis"


def verdicts(structure_table: pd.DataFrame, alignment_table: pd.DataFrame | None = None) -> list:
    """The chapter's claims, decided per panel (:func:`metacog.hypotheses.verdict.decide`), in
    the order of the panels' designs: prospective first, then counterfactual, after answering,
    and the rest (:data:`metacog.data.designs.TIMINGS`); :func:`by_design` groups them. Each
    verdict carries its line and why the line is there (``line_why``).

    1. Confidence is dominated by one factor (paper 1's claim, on paper 1's statistic): the
       first-factor share at least :data:`SHARE_LINE` (:data:`SHARE_LINE_WHY`), judged on its
       bootstrap interval, with at least :data:`MIN_MODELS` models and :data:`MIN_ITEMS` items.
    2. The book's own: eig1/eig2 at least :data:`DOMINANCE_RATIO` (:data:`DOMINANCE_RATIO_WHY`).
    3. (With ``alignment_table``) paper 1's "the confidence-performance link vanishes without
       unanimous items": the contested-item correlation of the two axes lies below
       :data:`NEGLIGIBLE_R`. When removing unanimous items removes less than
       :data:`MIN_REMOVED_SHARE` of the items (:func:`removed_items`), the check is not paper 1's
       manipulation and the verdict is "insufficient evidence": not informative, with the count.
    """
    from dataclasses import replace

    from metacog.hypotheses.verdict import INSUFFICIENT, decide
    from metacog.tidy.report import fmt_count

    out = []
    rows = structure_table[(structure_table["matrix"] == "confidence")
                           & (structure_table["subset"] == "all items")]
    for r in design_order(rows).to_dict("records"):
        n = {"models": int(r["models"]), "items": int(r["items"])}
        need = {"models": MIN_MODELS, "items": MIN_ITEMS}
        out.append(decide(
            f"{r['panel']}: {DOMINANCE_CLAIM}", "first-factor share",
            r.get("eig_share", np.nan), r.get("eig_share_ci_low", np.nan), r.get("eig_share_ci_high", np.nan),
            line=SHARE_LINE, direction="greater", n=n, min_counts=need, digits=2, line_why=SHARE_LINE_WHY))
        out.append(decide(
            f"{r['panel']}: {RATIO_CLAIM}", "eig1/eig2", r.get("eig_ratio", np.nan),
            r.get("eig_ratio_ci_low", np.nan), r.get("eig_ratio_ci_high", np.nan), line=DOMINANCE_RATIO,
            direction="greater", n=n, min_counts=need, digits=2, line_why=DOMINANCE_RATIO_WHY))
    if alignment_table is not None and len(alignment_table):
        removed = removed_items(alignment_table).set_index("panel")
        contested_rows = alignment_table[alignment_table["subset"] == "contested"]
        for r in design_order(contested_rows).to_dict("records"):
            v = decide(
                f"{r['panel']}: {LINK_CLAIM}", "correlation of item positions",
                r["r_items"], r["r_items_ci_low"], r["r_items_ci_high"], line=NEGLIGIBLE_R,
                direction="less", n={"models": int(r["models"]), "items": int(r["items"])},
                min_counts={"models": MIN_MODELS, "items": MIN_ITEMS}, digits=2, line_why=NEGLIGIBLE_R_WHY)
            k = removed.loc[r["panel"]] if r["panel"] in removed.index else None
            if k is not None and np.isfinite(k["removed_share"]):
                said = (f"removing unanimous items removes {fmt_count(int(k['removed']), 'item')} of "
                        f"{int(k['items']):,} ({k['removed_share']:.1%})")
                if not k["informative"] and v.basis not in ("counts", "missing"):
                    v = replace(v, status=INSUFFICIENT, basis="caveat",
                                reason=f"not informative: {said}, under {MIN_REMOVED_SHARE:.0%}, so the contested "
                                       f"items are nearly all the items and this is not paper 1's manipulation "
                                       f"({v.reason})")
                else:
                    v = replace(v, reason=f"{said}; {v.reason}")
            out.append(v)
    return out


def _design_noun(design: str) -> str:
    """The panels a count counts, named by their design ('prospective panels', 'after-answering
    panels'); the sentence's head already says whether the design is paper 1's."""
    return f"{str(design).replace(' ', '-')} panels"


def verdict_paragraph(verdicts: list, *tables: pd.DataFrame) -> str:
    """One paragraph summing up the verdicts, one sentence per design (prospective first), each
    counting panels within its design only, and naming that design in the count ('all 3 of its
    after-answering panels'): never a count across designs. ``tables``
    carry the design of each panel (:func:`table`, :func:`alignment_table`)."""

    parts = []
    for design, vs in by_design(verdicts, *tables).items():
        noun = _design_noun(design)
        dom = [v for v in vs if v.claim.endswith(DOMINANCE_CLAIM)]
        ratio = [v for v in vs if v.claim.endswith(RATIO_CLAIM)]
        link = [v for v in vs if v.claim.endswith(LINK_CLAIM)]
        said = []
        if dom:
            said.append(group_sentence(
                dom, f"the first-factor share reaches paper 1's line ({SHARE_LINE:g}) in",
                f"the first-factor share stays below paper 1's line ({SHARE_LINE:g}) in",
                f"whether the first-factor share reaches {SHARE_LINE:g} cannot be told in", noun=noun))
        if ratio:
            said.append(group_sentence(
                ratio, f"the first eigenvalue is at least {DOMINANCE_RATIO:g} times the second in",
                f"the first eigenvalue is less than {DOMINANCE_RATIO:g} times the second in",
                f"whether the first eigenvalue is {DOMINANCE_RATIO:g} times the second cannot be told in", noun=noun))
        if link:
            said.append(group_sentence(
                link, "paper 1's finding that the confidence axis stops following the performance axis "
                      "once unanimous items are removed holds in",
                "the two axes still align once unanimous items are removed (a non-replication) in",
                "whether the two axes still align once unanimous items are removed cannot be told "
                "(or the check is not informative) in", noun=noun))
        parts.append(f"{design_head(design)}: {'; '.join(said)}.")
    return " ".join(parts) if parts else "No panel could be analysed."
