"""The findings page: every claim of both papers, per panel, with the book's verdict.

Nothing is recomputed here. :func:`collect` runs each hypothesis chapter's own public functions
with that chapter's parameter set from ``notebooks/manifest.yml`` (so the slow parts replay
from :mod:`metacog.memo` when the chapter has run) and keeps only their
:class:`~metacog.hypotheses.verdict.Verdict` objects, each with the design of the panel it was
decided on (:mod:`metacog.data.designs`). :func:`findings_table` puts them beside the papers'
own values (:data:`PAPER_CLAIMS`, typed from the papers, with where each comes from), and
:func:`untestable` says which claims the book cannot decide, and why.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np
import pandas as pd

from metacog.data.designs import UNKNOWN, Design, design as design_of, timing_rank
from metacog.pages.findings.claims import PAPER_CLAIMS

__all__ = ["PAPER_CLAIMS", "Found", "collect", "findings_table", "display", "untestable", "CHAPTERS"]

#: The chapters whose verdicts the page collects, with the parameter set each runs with.
CHAPTERS = {"rank_one": "rank-one-default", "pairwise": "pairwise-default",
            "shortcut": "shortcut-default", "reasoning_text": "reasoning-text-default",
            "miscalibration": "miscalibration-default"}

#: The designs (panel timings, :mod:`metacog.data.designs`) each paper makes its claims on: a
#: verdict on a panel of another design is a different measurement, never agreement or
#: disagreement with the paper.
PAPER_DESIGNS = {"paper 1": ("prospective", "counterfactual"), "paper 2": ("after answering",)}

#: What the "against the paper" column says, and the count columns of :func:`agreement_counts`.
AGREES, DISAGREES, CANNOT_TELL, OWN = ("agrees with the paper", "disagrees with the paper", "cannot tell",
                                       "the book's own question")
OTHER_DESIGN, OTHER_CONTRAST = "different design: not comparable", "different contrast: not comparable"
NOT_COMPARABLE = "not comparable (different design or contrast)"

_BY_ID = {c["id"]: c for c in PAPER_CLAIMS}


@dataclass
class Found:
    """One chapter verdict with the panel (or source) it was decided on and that panel's design."""

    chapter: str
    verdict: object
    panel: str
    design: Design


def _manifest_sets() -> dict:
    import yaml

    from metacog import settings

    root = settings.require_project_root("the findings page")
    spec = yaml.safe_load((root / "notebooks" / "manifest.yml").read_text()) or {}
    return spec.get("parameter_sets", {}) or {}


def _call(fn, *args, **kwargs):
    """``fn`` with only the keyword arguments it takes (chapters' signatures evolve)."""
    sig = inspect.signature(fn)
    if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
        return fn(*args, **kwargs)
    return fn(*args, **{k: v for k, v in kwargs.items() if k in sig.parameters})


def _prefix_design(claim: str, known: dict[str, Design]) -> tuple[str, Design]:
    """The verdict's panel label (its claim before ': ') and the design of the longest known
    panel or source name that starts the claim."""
    label = claim.split(": ", 1)[0]  # the panel with what the chapter adds (subset, model)
    hits = [k for k in known if claim.startswith(k)]
    if not hits:
        return label, Design(UNKNOWN, "not matched to a panel")
    return label, known[max(hits, key=len)]


def _source_design(source: str) -> Design:
    name, _, probe = str(source).partition(":")
    return design_of(source, probe or "c0")


def _rank_one(p: dict) -> list[Found]:
    from metacog.hypotheses import rank_one as hr
    from metacog.hypotheses.panels import panels

    ps = panels(p["sources"], cuts=p.get("cuts") or {})
    structure = hr.table(ps, n_iter=p["pa_iterations"], reference=p["pa_reference"], n_boot=p["n_boot"],
                         unanimous_rule=p["unanimous_rule"], seed=p["seed"])
    aligned = hr.alignment_table(ps, unanimous_rule=p["unanimous_rule"])
    known = {q.name: q.design for q in ps}
    whole = hr.verdicts(structure, aligned)
    sensitivity = hr.temperature_sensitivity(ps, whole, n_iter=p["pa_iterations"], reference=p["pa_reference"],
                                             n_boot=p["n_boot"], unanimous_rule=p["unanimous_rule"],
                                             seed=p["seed"])
    return [Found("rank_one", v, *_prefix_design(v.claim, known)) for v in hr.temper(whole, sensitivity)]


def _pairwise(p: dict) -> list[Found]:
    from metacog.hypotheses import pairwise as hp
    from metacog.hypotheses.panels import panels

    ps = panels(p["sources"], cuts=p.get("cuts") or {})
    results = _call(hp.table, ps, alpha=p["alpha"], unanimous_rule=p["unanimous_rule"],
                    n_perm=p["n_permutations"], n_boot=p["n_boot"], seed=p["seed"])
    from metacog.hypotheses.pairwise import population as pp

    known = {q.name: q.design for q in ps}
    decided = hp.verdicts(results) + pp.verdicts(pp.internal_population_table(ps))
    return [Found("pairwise", v, *_prefix_design(v.claim, known)) for v in decided]


def _shortcut(p: dict) -> list[Found]:
    from metacog.hypotheses import shortcut as hs
    from metacog.hypotheses.panels import panels

    ps = panels(p["sources"], cuts=p.get("cuts") or {})
    res = _call(hs.tables, ps, formal_domains=p["formal_domains"], reasoning_models=p["reasoning_models"],
                n_boot=p["n_boot"], seed=p["seed"])
    known = {q.name: q.design for q in ps}
    return [Found("shortcut", _shortcut_statistic(v), *_prefix_design(v.claim, known))
            for v in hs.account_verdicts(hs.verdicts(res))]


def _shortcut_statistic(v):
    """An account verdict with its statistic named as computed: the account is decided on the
    formal-item concentration, a difference in differences (formal items minus other items) of
    the reasoning-minus-non-reasoning (or thinking-minus-twin) self-advantage."""
    from dataclasses import replace

    who = "thinking-minus-twin" if "twin pairs" in v.claim else "reasoning-minus-non-reasoning"
    return replace(v, statistic=f"(formal − other) {who} self-advantage (τ-b)")


def _reasoning_text(p: dict) -> list[Found]:
    from metacog.hypotheses import reasoning_text as hrt

    result = _call(hrt.analyse, p["sources"], min_conformance=p["min_conformance"], cv=p["cv"], C=p["C"],
                   seed=p["seed"], n_boot=p["n_boot"])
    known = {s: _source_design(s) for s in p["sources"]}
    return [Found("reasoning_text", v, *_prefix_design(v.claim, known))
            for v in hrt.verdicts(result.table, result.skipped)]


def _miscalibration(p: dict) -> list[Found]:
    """The miscalibration chapter's verdict cell, step by step with its own functions."""
    from metacog.benchmarks import audit
    from metacog.hypotheses import miscalibration as hm
    from metacog.hypotheses.miscalibration import population as hpop
    from metacog.hypotheses.panels import panels

    sources, cuts = p["sources"], p.get("cuts") or {}
    frames = hm.policy_frames(sources, read_p_yes=p.get("read_p_yes", False), seed=p["seed"]).frames
    thresholds = {s: hm.threshold_for(s, cuts, p["threshold"]) for s in sources}
    out = []
    for s, df in frames.items():
        g = hm.gate(df)
        gains = hm.loss_gains(df, thresholds[s], g)
        ranks = hm.domain_ranking(df, thresholds[s], p["lam"], g).ranks
        d = _source_design(s)
        if ":" not in s:
            d = Design(d.timing, "verbal P(correct) after a yes/no answer under policies C0, C1 and C2",
                       d.temperature, "c0@1, c1@1, c2@1", d.basis)
        out += [Found("miscalibration", v, s, d) for v in hm.policy_verdicts(gains, ranks, g, s)]
    if p.get("probe_models"):
        responses = hm.probe_log(p["probe_run"], p["probe_models"], seed=p["seed"])
        studies = hm.probe_studies(responses, p["probe_models"], audit.load_frame(),
                                   n_per_group=p["n_per_group"], n_sweep=p["n_sweep"], seed=p["seed"])
        if studies:
            table = hm.hidden_table(studies, n_boot=p["n_boot"], seed=p["seed"])
            c0 = design_of(p["probe_run"], "c0")
            d = Design(c0.timing, "hidden-state displacement under Gaussian embedding noise; confident "
                                  "hits and errors from the run's C0 answers (a '· P(Yes)' "
                                  "answerer's from its first-token P(Yes))", c0.temperature, c0.prompt,
                       c0.basis)
            for v in hm.hidden_verdicts(table, hm.gate(responses)):
                out.append(Found("miscalibration", v, v.claim.split(": ", 1)[0], d))
    ps = panels(sources, cuts=cuts, min_models=2)
    population = hpop.table(ps, thresholds=thresholds, threshold=p["threshold"], n_boot=p["n_boot"],
                            n_perm=p["n_perm"], seed=p["seed"]).results
    known = {q.name: q.design for q in ps}
    out += [Found("miscalibration", v, *_prefix_design(v.claim, known)) for v in hpop.verdicts(population)]
    return out


_COLLECTORS = {"rank_one": _rank_one, "pairwise": _pairwise, "shortcut": _shortcut,
               "reasoning_text": _reasoning_text, "miscalibration": _miscalibration}


def collect(chapters: dict | None = None, parameter_sets: dict | None = None) -> list[Found]:
    """Every verdict of the hypothesis chapters, each chapter run with its parameter set.

    ``chapters`` maps a chapter to the name of its parameter set (default :data:`CHAPTERS`);
    ``parameter_sets`` (default: those of ``notebooks/manifest.yml``) maps names to parameters.
    """
    chapters = dict(CHAPTERS if chapters is None else chapters)
    sets = _manifest_sets() if parameter_sets is None else parameter_sets
    unknown = [c for c in chapters if c not in _COLLECTORS]
    if unknown:
        raise ValueError(f"findings.collect: no collector for {unknown}; known: {sorted(_COLLECTORS)}.")
    missing = [s for s in chapters.values() if s not in sets]
    if missing:
        raise ValueError(f"findings.collect: parameter set(s) {missing} are not defined; defined: {sorted(sets)}.")
    out = []
    for chapter, set_name in chapters.items():
        out += _COLLECTORS[chapter](dict(sets[set_name]))
    return out


def _claim_of(f: Found) -> dict:
    """The paper claim a verdict decides (the longest ``match``), or a row saying it is the book's own."""
    hits = [c for c in PAPER_CLAIMS if c["chapter"] == f.chapter and c["match"] in f.verdict.claim]
    if hits:
        return max(hits, key=lambda c: len(c["match"]))
    return dict(id=f"book-{f.chapter}", paper="beyond both papers", chapter=f.chapter, match="",
                paper_says="holds", claim=f.verdict.claim.split(": ", 1)[-1],
                value="not a claim of either paper", where="—", paper_design="—")


def _agreement(status: str, claim: dict, design: str) -> str:
    """Whether a verdict agrees with the paper: only on a panel of the paper's own design
    (:data:`PAPER_DESIGNS`) and with the paper's own contrast; otherwise it is not comparable."""
    if claim["paper"] == "beyond both papers":
        return OWN
    if design not in PAPER_DESIGNS.get(claim["paper"], ()):
        return OTHER_DESIGN
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
                     "status": v.status, "reason": v.reason,
                     "agreement": _agreement(v.status, c, f.design.timing),
                     "_order": (order.get(c["id"], len(order)), timing_rank(f.design.timing))})
    cols = ["paper", "claim_id", "claim", "paper_value", "where_in_paper", "paper_design", "chapter",
            "panel", "chapter_claim", "design", "elicitation", "statistic", "estimate", "ci_low", "ci_high", "book_value",
            "n", "status", "reason", "agreement"]
    if not rows:
        return pd.DataFrame(columns=cols)
    t = pd.DataFrame(rows)
    t = t.iloc[sorted(range(len(t)), key=lambda i: t["_order"].iloc[i])]
    return t[cols].reset_index(drop=True)


def display(table: pd.DataFrame) -> pd.DataFrame:
    """The findings table for a page: every cell in words (a missing interval reads so)."""
    out = pd.DataFrame({
        "paper": table["paper"], "claim": table["claim"], "paper's value": table["paper_value"],
        "where in the paper": table["where_in_paper"], "panel": table["panel"],
        "the chapter's claim": table["chapter_claim"], "design": table["design"],
        "how confidence was asked": table["elicitation"], "statistic": table["statistic"],
        "book's value (95% CI)": table["book_value"], "n": table["n"], "verdict": table["status"],
        "why": table["reason"], "against the paper": table["agreement"]})
    return out.fillna("—").replace("", "—")


def untestable(table: pd.DataFrame, chapters=None) -> pd.DataFrame:
    """Claims of the papers the book cannot decide on any panel: every verdict on them is
    "insufficient evidence" (with each panel's reason), or their chapter decided nothing.
    ``chapters`` (default: all) are the chapters whose verdicts ``table`` gathers; claims of
    other chapters are left out rather than called untestable."""
    rows = []
    for c in PAPER_CLAIMS:
        if chapters is not None and c["chapter"] not in chapters:
            continue
        t = table[table["claim_id"] == c["id"]]
        if len(t) and (t["status"] != "insufficient evidence").any():
            continue
        why = ("no panel of the chapter's sources decides it" if not len(t) else
               "; ".join(dict.fromkeys(f"{r.panel}: {r.reason}" for r in t.itertuples()).keys()))
        rows.append({"paper": c["paper"], "claim": c["claim"], "panels tried": len(t), "why": why})
    return pd.DataFrame(rows, columns=["paper", "claim", "panels tried", "why"])


def prospective_panels(table: pd.DataFrame) -> pd.DataFrame:
    """The panels whose judgments are made before answering (or counterfactually), paper 1's
    designs, with the chapters that use them."""
    t = table[table["design"].isin(["prospective", "counterfactual"])]
    g = t.groupby(["design", "panel", "elicitation"], sort=False)["chapter"].agg(lambda s: ", ".join(dict.fromkeys(s)))
    return g.reset_index().rename(columns={"elicitation": "how confidence was asked", "chapter": "chapters"})


def agreement_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Per paper claim and design: how many panels agree with the paper, disagree, cannot tell,
    are not comparable with it (a design other than the paper's, or another contrast: counted in
    their own column, never as agreement or disagreement), or ask the book's own question.
    Counts are made within one design only."""
    cols = [AGREES, DISAGREES, CANNOT_TELL, NOT_COMPARABLE, OWN]
    if not len(table):
        return pd.DataFrame(columns=["paper", "claim", "design", *cols])
    t = table.assign(_d=[timing_rank(d) for d in table["design"]],
                     agreement=table["agreement"].replace({OTHER_DESIGN: NOT_COMPARABLE,
                                                           OTHER_CONTRAST: NOT_COMPARABLE}))
    first = {c: i for i, c in enumerate(dict.fromkeys(table["claim_id"]))}
    t = t.assign(_c=t["claim_id"].map(first))
    g = t.groupby(["_c", "paper", "claim", "_d", "design"], sort=True)["agreement"].value_counts().unstack(fill_value=0)
    g = g.reindex(columns=cols, fill_value=0).reset_index().drop(columns=["_c", "_d"])
    return g[[c for c in g.columns if c in ("paper", "claim", "design") or g[c].any()]].rename_axis(None, axis=1)
