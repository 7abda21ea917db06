"""The findings page: every claim of both papers, per panel, with the book's verdict.

No new statistic is computed here. :func:`collect` runs each hypothesis chapter's own public functions
with that chapter's parameter set from ``notebooks/manifest.yml`` (so the slow parts replay
from :mod:`metacog.memo` when the chapter has run) and keeps only their
:class:`~metacog.hypotheses.verdict.Verdict` objects, each with the design of the panel it was
decided on (:mod:`metacog.data.designs`). :func:`findings_table` puts them beside the papers'
own values (:data:`PAPER_CLAIMS`, typed from the papers, with where each comes from), and
:func:`untestable` says which claims the book cannot decide, and why.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.pages.findings.collect import (  # noqa: F401  (the page's one namespace)
    AGREES, CANNOT_TELL, DISAGREES, OTHER_CONTRAST, OTHER_DESIGN, OWN, CHAPTERS, Collected, Found, NOT_COMPARABLE, OTHER_MEASUREMENT, PAPER_CLAIMS, PAPER_DESIGNS,
    RAW_SELF_OTHER, _is_p_yes, _p_yes_note, _panel_name, _shortcut_statistic, _size_clause, collect,
    timing_rank)


def _claim_of(f: Found) -> dict:
    """The paper claim a verdict decides (the longest ``match``), or a row saying it is the book's own."""
    hits = [c for c in PAPER_CLAIMS if c["chapter"] == f.chapter and c["match"] in f.verdict.claim]
    if hits:
        return max(hits, key=lambda c: len(c["match"]))
    return dict(id=f"book-{f.chapter}", paper="beyond both papers", chapter=f.chapter, match="",
                paper_says="holds", claim=f.verdict.claim.split(": ", 1)[-1],
                value="not a claim of either paper", where="—", paper_design="—")


def _agreement(status: str, claim: dict, design: str, answerers=()) -> str:
    """Whether a verdict agrees with the paper: only on a panel of the paper's own design
    (:data:`PAPER_DESIGNS`), with the paper's own measurement (never a first-token P(Yes)
    answerer, a model named '<model> · P(Yes)': both papers read stated judgments) and the
    paper's own contrast; otherwise it is not comparable."""
    if claim["paper"] == "beyond both papers":
        return OWN
    if design not in PAPER_DESIGNS.get(claim["paper"], ()):
        return OTHER_DESIGN
    if any(_is_p_yes(m) for m in answerers):
        return OTHER_MEASUREMENT
    if claim.get("contrast"):
        return OTHER_CONTRAST
    if status == "insufficient evidence":
        return CANNOT_TELL
    same = (status == "supported") == (claim["paper_says"] == "holds")
    return AGREES if same else DISAGREES


def findings_table(found: list[Found]) -> pd.DataFrame:
    """One row per (claim, panel): the paper, its claim and value (and where in the paper), the
    panel with its design and elicitation, the book's statistic with estimate, ci_low, ci_high
    and n, the verdict with its reason, and whether it agrees with the paper (only on a panel of
    the paper's design and contrast: otherwise "not comparable", :func:`_agreement`). Paper 1's claims
    first, prospective and counterfactual panels first within each claim."""
    from metacog.hypotheses.verdict import fmt_n
    from metacog.tidy.report import fmt_ci

    rows = []
    order = {c["id"]: i for i, c in enumerate(PAPER_CLAIMS)}
    for f in found:
        c, v = _claim_of(f), f.verdict
        value = (fmt_ci(v.estimate, v.ci_low, v.ci_high, digits=v.digits)
                 if np.isfinite(v.estimate) else "no estimate")
        rows.append({"paper": c["paper"], "claim_id": c["id"], "claim": c["claim"],
                     "paper_value": c["value"], "where_in_paper": c["where"],
                     "paper_design": c["paper_design"], "chapter": f.chapter, "panel": f.panel,
                     "chapter_claim": v.claim.split(": ", 1)[-1],
                     "design": f.design.timing, "elicitation": f.design.elicitation,
                     "statistic": v.statistic, "estimate": v.estimate, "ci_low": v.ci_low,
                     "ci_high": v.ci_high, "book_value": value, "n": fmt_n(v.n) or "no count",
                     "status": v.status, "reason": v.reason, "line": v.threshold(),
                     "verdict_value": f"{v.status} ({_short_value(v)})",
                     "agreement": _agreement(v.status, c, f.design.timing, f.answerers),
                     "_order": (order.get(c["id"], len(order)), timing_rank(f.design.timing))})
    cols = ["paper", "claim_id", "claim", "paper_value", "where_in_paper", "paper_design", "chapter",
            "panel", "chapter_claim", "design", "elicitation", "statistic", "estimate", "ci_low", "ci_high", "book_value",
            "n", "status", "reason", "line", "verdict_value", "agreement"]
    if not rows:
        return pd.DataFrame(columns=cols)
    t = _base_rate_notes(_number_own_claims(pd.DataFrame(rows)))
    t = t.iloc[sorted(range(len(t)), key=lambda i: t["_order"].iloc[i])]
    return t[cols].reset_index(drop=True)


def _short_value(v) -> str:
    """'0.093, 95% CI 0.009 to 0.186' for a summary cell; 'no estimate' or '0.093, no interval'."""
    from metacog.tidy.report import fmt_num, fmt_range

    if not np.isfinite(v.estimate):
        return "no estimate"
    if not (np.isfinite(v.ci_low) and np.isfinite(v.ci_high)):
        return f"{fmt_num(v.estimate, v.digits)}, no interval"
    return (f"{fmt_num(v.estimate, v.digits)}, {v.level * 100:g}% CI "
            f"{fmt_range(v.ci_low, v.ci_high, digits=v.digits, sep=' to ')}")


def _number_own_claims(t: pd.DataFrame) -> pd.DataFrame:
    """The book's own questions get an id each ('book-shortcut', or 'book-shortcut-2' for a
    chapter's second), in the order they first appear."""
    own = t["paper"] == "beyond both papers"
    if not own.any():
        return t
    t = t.copy()
    for chapter, g in t[own].groupby("chapter", sort=False):
        claims = list(dict.fromkeys(g["claim"]))
        slug = f"book-{chapter.replace('_', '-')}"
        ids = {c: slug if k == 0 else f"{slug}-{k + 1}" for k, c in enumerate(claims)}
        t.loc[g.index, "claim_id"] = g["claim"].map(ids)
    return t


def _base_rate_notes(t: pd.DataFrame) -> pd.DataFrame:
    """Pairwise's self-against-other rows show the raw self-minus-other τ-b, which base rates can
    move; each says so, with the power chapter's base-rate-controlled verdict on the same panel
    when the page gathers it."""
    raw = (t["chapter"] == "pairwise") & (t["statistic"] == RAW_SELF_OTHER)
    if not raw.any():
        return t
    power = t[t["chapter"] == "power"]
    t = t.copy()
    t.loc[raw, "statistic"] = f"{RAW_SELF_OTHER}, raw (not controlled for base rates)"
    for i in t.index[raw]:
        hit = [r for r in power.itertuples() if str(t.at[i, "panel"]).startswith(r.panel)]
        if hit:
            r = max(hit, key=lambda r: len(r.panel))
            note = (f"This raw contrast is not controlled for base rates; beyond base rates (the power "
                    f"chapter's excess over its simulated null) this panel reads {r.status}, "
                    f"{r.book_value}")
        elif len(power):
            note = ("This raw contrast is not controlled for base rates, and the power chapter, which "
                    "controls them, does not test this panel")
        else:
            note = "This raw contrast is not controlled for base rates"
        t.at[i, "reason"] = f"{t.at[i, 'reason']}. {note}"
    return t


def display(table: pd.DataFrame, *, elicitation: bool = False) -> pd.DataFrame:
    """The findings rows for a page, every cell in words (a missing interval reads so), each
    row named by its claim's id (:func:`claims_table` gives the claim in full, once); with
    ``elicitation`` also how each panel's confidence was asked."""
    out = pd.DataFrame({
        "claim": table["claim_id"], "panel": table["panel"], "design": table["design"],
        **({"how confidence was asked": table["elicitation"]} if elicitation else {}),
        "statistic": table["statistic"], "book's value (95% CI)": table["book_value"], "n": table["n"],
        "judged against": table["line"], "verdict": table["status"], "why": table["reason"],
        "against the paper": table["agreement"]})
    return out.fillna("—").replace("", "—")


def _claims(table: pd.DataFrame, chapters=None) -> list[dict]:
    """The claims a page lists: the papers' (of the gathered ``chapters``, default all) in
    :data:`PAPER_CLAIMS` order, then the book's own questions in the order of ``table``."""
    out = [c for c in PAPER_CLAIMS if chapters is None or c["chapter"] in chapters]
    own = table[table["paper"] == "beyond both papers"].drop_duplicates("claim_id")
    return out + [dict(id=r.claim_id, paper=r.paper, chapter=r.chapter, claim=r.claim, value=r.paper_value,
                       where=r.where_in_paper, paper_design=r.paper_design) for r in own.itertuples()]


def claims_table(table: pd.DataFrame, chapters=None) -> pd.DataFrame:
    """One row per claim some panel tests: its id, paper, the claim as the paper makes it, as
    the chapter words and tests it (each distinct wording), the paper's value, where in the
    paper, and the paper's design. (A claim no panel tests is in :func:`summary_table` and
    :func:`untestable`.)"""
    rows = []
    for c in _claims(table, chapters):
        words = list(dict.fromkeys(table.loc[table["claim_id"] == c["id"], "chapter_claim"]))
        if not words:
            continue
        rows.append({"claim": c["id"], "paper": c["paper"], "what is claimed": c["claim"],
                     "as the chapter tests it": "; ".join(words) or "—", "paper's value": c["value"],
                     "where in the paper": c["where"], "paper's design": c["paper_design"]})
    return pd.DataFrame(rows, columns=["claim", "paper", "what is claimed", "as the chapter tests it",
                                       "paper's value", "where in the paper", "paper's design"])


#: What a summary cell adds to a row that is not the paper's measurement or contrast.
_NOT_SAME = {OTHER_MEASUREMENT: "different measurement", OTHER_CONTRAST: "different contrast"}


def _cell(t: pd.DataFrame) -> str:
    """One summary cell: 'verdict (value, 95% CI)' for one panel; for several, how many panels
    reach each verdict, then each panel's, one a line."""
    from metacog.tidy.report import fmt_count

    if not len(t):
        return "—"
    lines = [r.verdict_value + (f" ({_NOT_SAME[r.agreement]})" if r.agreement in _NOT_SAME else "")
             for r in t.itertuples()]
    if len(t) == 1:
        return lines[0]
    counts = t["status"].value_counts(sort=False)
    tally = ", ".join(f"{s} on {n}" for s, n in counts.items())
    panels = t["panel"].astype(str).str.split(", ", n=1).str[0].nunique()
    of = (f"{len(t)} panels" if panels == len(t) else
          f"{len(t)} panel-subsets ({fmt_count(panels, 'panel')}, each on more than one item subset)")
    return "\n".join([f"{tally} of {of}:", *(f"{p}: {x}" for p, x in zip(t["panel"], lines))])


def _standing(t: pd.DataFrame) -> str:
    """Where a claim stands against its paper, from its rows on panels of the paper's design,
    measurement and contrast that decide it: every one agrees, every one disagrees, they differ,
    or none decides it."""
    if len(t) and (t["paper"] == "beyond both papers").all():
        return OWN
    marks = set(t.loc[t["agreement"].isin([AGREES, DISAGREES]), "agreement"])
    if marks == {AGREES}:
        return "agrees with the paper on every panel of its design that decides it"
    if marks == {DISAGREES}:
        return "disagrees with the paper on every panel of its design that decides it"
    if marks:
        return "the panels that decide it differ"
    return "not decided in the paper's design"


def summary_table(table: pd.DataFrame, chapters=None) -> pd.DataFrame:
    """The page's summary: one row per claim (:func:`claims_table`'s ids and claims), one
    column per design of the gathered panels (paper 1's
    designs first) whose cell is 'verdict (value, 95% CI)' on each panel of that design ('—'
    when there is none), and where the claim stands against the paper (:func:`_standing`)."""
    designs = sorted(dict.fromkeys(table["design"]), key=timing_rank)
    rows = []
    for c in _claims(table, chapters):
        t = table[table["claim_id"] == c["id"]]
        rows.append({"claim": c["id"], "what is claimed": c["claim"],
                     **{d: _cell(t[t["design"] == d]) for d in designs}, "against the paper": _standing(t)})
    return pd.DataFrame(rows, columns=["claim", "what is claimed", *designs, "against the paper"])


def decided_sentence(table: pd.DataFrame, chapters=None) -> str:
    """How many of the papers' claims are decided in their own design (:func:`untestable` lists
    the others), and of those, on how many every deciding panel agrees with the paper."""
    from metacog.tidy.report import fmt_list

    claims = [c for c in PAPER_CLAIMS if chapters is None or c["chapter"] in chapters]
    if not claims:
        return "No chapter that decides a claim of either paper was gathered here."
    out = set(untestable(table, chapters=chapters)["claim"])
    ids = [c["id"] for c in claims if c["claim"] not in out]
    n, k = len(claims), len(ids)
    verb = f"{k} are decided in their" if k > 1 else f"{k or 'none'} is decided in its"
    text = (f"Of the {n} claim{'s' if n != 1 else ''} of both papers gathered here, {verb} own design (on at "
            f"least one panel of the paper's design, measurement and contrast)")
    if ids:
        text += f": {fmt_list(ids, max_names=k)}"
    if not ids:
        return text + "."
    stand = {i: _standing(table[table["claim_id"] == i]) for i in ids}
    parts = [f"{fmt_list([i for i in ids if stand[i].startswith(w)], max_names=len(ids))} {w} the paper"
             for w in ("agrees with", "disagrees with") if any(stand[i].startswith(w) for i in ids)]
    mixed = [i for i in ids if stand[i] == "the panels that decide it differ"]
    if mixed:
        parts.append(f"on {fmt_list(mixed, max_names=len(ids))} the deciding panels differ")
    return f"{text}; of those, " + "; ".join(parts) + "."


class Wide:
    """A table shown within the page's width: it scrolls sideways when it is wider, in a smaller
    type, and a line break in a cell shows as one. ``min_width`` (CSS, e.g. '60rem') keeps its
    columns from being squeezed to a few words a line."""

    def __init__(self, table: pd.DataFrame, min_width: str = ""):
        from metacog.tidy.report import pretty

        self.table = pretty(table)
        self.min_width = min_width

    def _repr_html_(self) -> str:
        import html

        def cell(x):
            return html.escape(str(x)).replace("\n", "<br>")

        style = f' style="min-width: {self.min_width};"' if self.min_width else ""
        inner = (self.table.style.format(cell).format_index(escape="html", axis=1).hide(axis="index")
                 .set_table_attributes(f'class="dataframe"{style}').to_html())
        return (f'<div class="table-wrapper" style="overflow-x: auto; max-width: 100%; font-size: 0.85em;">'
                f'{inner}</div>')

    def __repr__(self) -> str:
        return self.table.to_string(index=False)


def untestable(table: pd.DataFrame, chapters=None) -> pd.DataFrame:
    """Claims of the papers the book cannot decide on a panel comparable with the paper: every
    verdict on them is "insufficient evidence" (with each panel's reason) or is decided only on
    panels of another design, measurement or contrast (named, with their verdicts), or their
    chapter decided nothing. ``chapters`` (default: all) are the chapters whose verdicts
    ``table`` gathers; claims of other chapters are left out rather than called untestable."""
    other = {OTHER_DESIGN, OTHER_MEASUREMENT, OTHER_CONTRAST}
    rows = []
    for c in PAPER_CLAIMS:
        if chapters is not None and c["chapter"] not in chapters:
            continue
        t = table[table["claim_id"] == c["id"]]
        decided = t["status"] != "insufficient evidence"
        elsewhere = t["agreement"].isin(other)
        if len(t) and (decided & ~elsewhere).any():
            continue
        # each undecided panel's own reason, without the notes the page adds after it
        parts = list(dict.fromkeys(f"{r.panel}: {r.reason.split('. ', 1)[0]}" for r in t[~decided].itertuples()))
        if (decided & elsewhere).any():
            named = ", ".join(f"{r.panel} ({r.status}; {r.agreement})" for r in t[decided & elsewhere].itertuples())
            parts.append(f"decided only where it is not comparable with the paper: {named}")
        why = "; ".join(parts) if len(t) else "no panel of the chapter's sources decides it"
        rows.append({"paper": c["paper"], "claim": c["claim"], "panels tried": len(t), "why": why})
    return pd.DataFrame(rows, columns=["paper", "claim", "panels tried", "why"])


def paper_designs_panels(found: Collected) -> pd.DataFrame:
    """The panels whose judgments are made before answering or counterfactually (paper 1's
    designs), with every chapter that reads each (``found.read``, from :func:`collect`), whether
    or not it decides a claim on it."""
    rows = [{"design": d.timing, "panel": name, "how confidence was asked": d.elicitation,
             "chapters": ", ".join(who)}
            for name, (d, who) in getattr(found, "read", {}).items()
            if d.timing in PAPER_DESIGNS["paper 1"]]
    out = pd.DataFrame(rows, columns=["design", "panel", "how confidence was asked", "chapters"])
    order = np.array([timing_rank(x) for x in out["design"]])
    return out.iloc[np.argsort(order, kind="stable")].reset_index(drop=True)


def agreement_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Per paper claim (by its id) and design: how many panels agree with the paper, disagree, cannot tell,
    are not comparable with it (a design other than the paper's, another measurement or another
    contrast: counted in their own column, never as agreement or disagreement), or ask the
    their own column, never as agreement or disagreement), or ask the book's own question.
    Counts are made within one design only."""
    cols = [AGREES, DISAGREES, CANNOT_TELL, NOT_COMPARABLE, OWN]
    if not len(table):
        return pd.DataFrame(columns=["paper", "claim", "design", *cols])
    t = table.assign(_d=[timing_rank(d) for d in table["design"]],
                     agreement=table["agreement"].replace({OTHER_DESIGN: NOT_COMPARABLE,
                                                           OTHER_MEASUREMENT: NOT_COMPARABLE,
                                                           OTHER_CONTRAST: NOT_COMPARABLE}))
    first = {c: i for i, c in enumerate(dict.fromkeys(table["claim_id"]))}
    t = t.assign(_c=t["claim_id"].map(first), claim=t["claim_id"])  # the claim by its id, as in the summary
    g = t.groupby(["_c", "paper", "claim", "_d", "design"], sort=True)["agreement"].value_counts().unstack(fill_value=0)
    g = g.reindex(columns=cols, fill_value=0).reset_index().drop(columns=["_c", "_d"])
    return g[[c for c in g.columns if c in ("paper", "claim", "design") or g[c].any()]].rename_axis(None, axis=1)


def scope_note(sources: list, left_out: dict) -> str:
    """The sentence saying which panels the page decides on: every chapter's own sources, or the
    response files ``sources`` (by file name), with each chapter they cannot serve and why."""
    from metacog.data.responses import source_name
    from metacog.tidy.report import fmt_list

    if not sources:
        return "Every chapter is run on its own sources, the panels of the book."
    text = f"Every chapter is run on {fmt_list([source_name(s) for s in sources])} instead of its own sources."
    if left_out:
        text += " Left out, because the file cannot serve them: " + "; ".join(
            f"{c.replace('_', ' ')} ({why})" for c, why in left_out.items()) + "."
    return text


def limits_note(sources: list) -> str:
    """What the page cannot test whatever the data say: the papers' own panels are not public
    (for the book's panels), or the panel is the researcher's own (``sources``)."""
    if sources:
        return ("Every verdict here is decided on the panel of the given file(s), in each panel's own "
                "design; a claim of either paper is compared with the paper only where the file records "
                "the paper's design (a 'design' column, see the designs table above).")
    return ("Two limits hold whatever the data say. Paper 1's own panel (20 frontier models asked "
            "prospective and counterfactual yes/no questions on six benchmarks) is not public, so its "
            "claims are tested on the public panels and the small local panel listed above, each in its "
            "own design. Paper 2's policy logs (gpt-4.1-mini on its 532 audit items) and its three 7–8B "
            "open models are not among the data this book reads, so its claims are tested on the local "
            "panel's own runs of the audit policies and on the small models the hidden-state probe can "
            "run here.")


def designs_of(sources: list) -> pd.DataFrame:
    """The designs table of the page (:func:`metacog.data.designs.designs_table`, without its basis):
    every documented panel, or with response files ``sources`` one row per probe of each file
    (:func:`metacog.data.designs.design` on its rows), the file named by its file name only."""
    from metacog.data.designs import design as design_of, designs_table, timing_rank
    from metacog.data.responses import load_responses, source_name

    if not sources:
        return designs_table().drop(columns=["basis"])
    rows = [{"source": source_name(f), "probe": str(p), **design_of(f, str(p), g).row()}
            for f in sources for p, g in load_responses(f).groupby("probe", observed=True)]
    out = pd.DataFrame(rows, columns=["source", "probe", "timing", "elicitation", "temperature", "prompt", "basis"])
    order = np.array([timing_rank(t) for t in out["timing"]], dtype=int)
    return out.iloc[np.argsort(order, kind="stable")].drop(columns=["basis"]).reset_index(drop=True)
