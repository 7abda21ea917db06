"""The pieces every benchmark page's own section (:mod:`metacog.pages.benchmark.own`) is built from.

- :class:`OwnSection` — what a section returns: a tidy table, a sentence, a question;
- :func:`attempts` — the graded attempts of some probes, one per model x item x probe;
- :func:`rate_row` / :func:`rate_text` / :func:`share_text` — a count as a share with its Wilson
  95% interval, and in words ('4 of 37 (0.11, 95% CI 0.04 to 0.25)').
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from metacog.hypotheses.common import short_model
from metacog.stats.intervals import proportion_ci
from metacog.tidy import phrasing
from metacog.tidy.report import fmt_ci, fmt_num, fmt_range, pretty

#: The two designs of an attempt at the item, and how a page names them.
DESIGNS = {"answer": "with", "answer_no_context": "without"}


@dataclass
class OwnSection:
    """A benchmark page's own section: ``table`` (tidy, or None), ``sentence`` (MyST, every
    number from the table) and ``question`` (what only this benchmark asks, fixed)."""

    table: pd.DataFrame | None
    sentence: str
    question: str


def rate_row(k, n) -> dict:
    """k, n, the share k / n and its Wilson 95% interval (NaN when n is 0)."""
    k, n = int(k), int(n)
    lo, hi = proportion_ci(k, n)
    return {"k": k, "n": n, "rate": k / n if n else np.nan, "ci_low": lo, "ci_high": hi}


def share_text(r) -> str:
    """'0.11, 95% CI 0.04 to 0.25' for a row with rate, ci_low, ci_high."""
    return f"{fmt_num(r['rate'])}, 95% CI {fmt_range(r['ci_low'], r['ci_high'], sep=' to ')}"


def rate_text(r, what: str = "", plural: str | None = None) -> str:
    """'4 of 37 (0.11, 95% CI 0.04 to 0.25)' for a row with k, n, rate, ci_low, ci_high (``what``
    names the counted things after the total: '4 of 37 items (...)')."""
    total = phrasing.plural(r["n"], what, plural) if what else phrasing.count(r["n"])
    return f"{phrasing.count(r['k'])} of {total} ({share_text(r)})"


def apart(a, b) -> int:
    """+1 when ``a``'s interval lies wholly above ``b``'s, -1 wholly below, 0 when they overlap."""
    return 1 if a["ci_low"] > b["ci_high"] else -1 if a["ci_high"] < b["ci_low"] else 0


def attempts(data: pd.DataFrame, probes=("answer_no_context",)) -> pd.DataFrame:
    """Graded attempts of ``probes``: the first sample of each model x item x probe."""
    d = data[data["probe"].isin(list(probes))]
    if "sample" in d.columns:
        d = d[d["sample"].fillna(0) == 0]
    return d.dropna(subset=["correct"]).drop_duplicates(["model", "item_id", "probe"])


def by_item(items) -> dict:
    return {str(it.item_id): it for it in (items or [])}


def rate_table(d: pd.DataFrame, by: list[str], hit: str = "correct") -> pd.DataFrame:
    rows = [{**dict(zip(by, key if isinstance(key, tuple) else (key,))),
             **rate_row(g[hit].astype(float).sum(), len(g))} for key, g in d.groupby(by, sort=True)]
    out = pd.DataFrame(rows, columns=[*by, "k", "n", "rate", "ci_low", "ci_high"])
    if "model" in out:
        out["model"] = out["model"].map(short_model)
    return out


def display(table: pd.DataFrame | None):
    """A section's table for a page: each count as 'k of n' and its share with the interval in one
    cell, as the page's other tables print a rate; None shows a line saying there is no table."""
    if table is None:
        from IPython.display import Markdown

        return Markdown("No table for this benchmark.")
    rest = [c for c in table.columns if c not in ("k", "n", "rate", "ci_low", "ci_high")]
    shown = table[rest].copy()
    at = rest.index("cut_at_cap") if "cut_at_cap" in rest else len(rest)
    shown.insert(at, "count", [f"{int(k)} of {int(n)}" for k, n in zip(table["k"], table["n"])])
    shown.insert(at + 1, "share (95% CI)", [fmt_ci(r, lo, hi) if n else "–" for r, lo, hi, n in
                                           zip(table["rate"], table["ci_low"], table["ci_high"], table["n"])])
    return pretty(shown.rename(columns=lambda c: c.replace("_", " ")))
