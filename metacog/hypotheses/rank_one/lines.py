"""The rank-one chapter's decision lines, each with why it is where it is (printed beside every
verdict that uses it), and the count behind the unanimous-item check."""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.stats.structure import DOMINANCE_RATIO


#: Fewer raters than this make a rank-one question meaningless: with two or three columns
#: every correlation matrix has one or two eigenvalues and "one factor" is nearly automatic.
MIN_MODELS = 5


#: Fewer items than this give tetrachoric correlations too noisy to factor.
MIN_ITEMS = 30


#: The confidence-performance link "vanishes" when the item positions on the two axes
#: correlate below this on contested items (a negligible correlation).
NEGLIGIBLE_R = 0.1


#: Why :data:`NEGLIGIBLE_R` is where it is (printed beside every verdict that uses it).
NEGLIGIBLE_R_WHY = ("0.1: below it the items' positions on the performance axis account for less than 1% "
                    "of the variance of their positions on the confidence axis (r² < 0.01), under the "
                    "conventional lower edge of a small correlation (Cohen); paper 1 says the link "
                    "vanishes without giving a figure, so no paper number stands beside this row")


#: The first-factor share at or above which paper 1's own figures call the structure "one dominant
#: factor": it calls 36.4% (LegalBench) and 48.3% (MMLU-Pro) dominant and 25.3% (MathBench) more complex.
SHARE_LINE = 0.30


#: Why :data:`SHARE_LINE` is where it is.
SHARE_LINE_WHY = ("0.30: paper 1 calls a first-factor share of 36.4% (LegalBench) and 48.3% (MMLU-Pro) one "
                  "dominant factor and 25.3% (MathBench) a more complex structure (§1, first finding, and its "
                  "results table), so its own figures put the line between 25.3% and 36.4%; with m models the "
                  "share cannot fall below 1/m, so on a panel of far fewer models than paper 1's 20 the line "
                  "asks less")


#: Why :data:`metacog.stats.structure.DOMINANCE_RATIO` is where it is.
def _ratio_why() -> str:
    from metacog.hypotheses.pairwise import PAPER1

    shares = {b: v[3] / 100 * 20 for b, v in PAPER1.items() if v[3] is not None}
    first = ", ".join(f"{e:.1f} ({b})" for b, e in shares.items())
    second = ", ".join(f"{e / DOMINANCE_RATIO:.1f}" for e in shares.values())
    return (f"{DOMINANCE_RATIO:g}: the book's own line for one factor dominating the next (the first eigenvalue "
            f"at least {DOMINANCE_RATIO:g} times the second). Paper 1's first-factor shares times 20 models give "
            f"first eigenvalues of about {first}, so at {DOMINANCE_RATIO:g} the second may reach {second} "
            f"respectively, each above the 1 of a factor that carries no more than one model's own variance; "
            f"paper 1 reports no second eigenvalue, so no paper number stands beside this row")


DOMINANCE_RATIO_WHY = _ratio_why()


#: Removing unanimous items is paper 1's manipulation only when it removes something: below this
#: share of the items removed, the contested set is nearly the whole set and the check is "not
#: informative" (with many models almost no item is unanimous).
MIN_REMOVED_SHARE = 0.10


def removed_items(alignment_table: pd.DataFrame) -> pd.DataFrame:
    """Per panel: items on all items, items left once unanimous items are removed, the number and
    share removed, and whether the check is informative (at least :data:`MIN_REMOVED_SHARE` of the
    items removed)."""
    rows = []
    for panel, g in alignment_table.groupby("panel", sort=False):
        by = g.set_index("subset")["items"]
        total, left = by.get("all", np.nan), by.get("contested", np.nan)
        removed = total - left if np.isfinite(total) and np.isfinite(left) else np.nan
        share = removed / total if np.isfinite(removed) and total else np.nan
        rows.append({"panel": panel, "items": total, "contested": left, "removed": removed,
                     "removed_share": share,
                     "informative": bool(np.isfinite(share) and share >= MIN_REMOVED_SHARE)})
    return pd.DataFrame(rows, columns=["panel", "items", "contested", "removed", "removed_share", "informative"])
