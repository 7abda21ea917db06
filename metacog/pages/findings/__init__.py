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

import inspect
from dataclasses import dataclass

import numpy as np
import pandas as pd

from metacog.data.designs import UNKNOWN, Design, design as design_of, timing_rank
from metacog.pages.findings.claims import PAPER_CLAIMS

__all__ = ["PAPER_CLAIMS", "Found", "Collected", "collect", "findings_table", "display", "untestable",
           "CHAPTERS", "paper_designs_panels"]

#: The chapters whose verdicts the page collects, with the parameter set each runs with.
CHAPTERS = {"rank_one": "rank-one-default", "pairwise": "pairwise-default",
            "shortcut": "shortcut-default", "power": "power-default",
            "reasoning_text": "reasoning-text-default", "miscalibration": "miscalibration-default"}

#: The designs (panel timings, :mod:`metacog.data.designs`) each paper makes its claims on: a
#: verdict on a panel of another design is a different measurement, never agreement or
#: disagreement with the paper.
PAPER_DESIGNS = {"paper 1": ("prospective", "counterfactual"), "paper 2": ("after answering",)}

#: What the "against the paper" column says, and the count columns of :func:`agreement_counts`.
AGREES, DISAGREES, CANNOT_TELL, OWN = ("agrees with the paper", "disagrees with the paper", "cannot tell",
                                       "the book's own question")
OTHER_DESIGN, OTHER_CONTRAST = "different design: not comparable", "different contrast: not comparable"
OTHER_MEASUREMENT = "different measurement: not comparable"
NOT_COMPARABLE = "not comparable (different design, measurement or contrast)"

#: The statistic of pairwise's self-against-other rows: a raw contrast, not controlled for base rates.
RAW_SELF_OTHER = "self minus other τ-b"

_BY_ID = {c["id"]: c for c in PAPER_CLAIMS}


@dataclass
class Found:
    """One chapter verdict with the panel (or source) it was decided on and that panel's design."""

    chapter: str
    verdict: object
    panel: str
    design: Design
    #: the models the verdict rests on, where the chapter names them (a P(Yes) answerer among
    #: them makes the row a different measurement from the papers', :func:`_agreement`)
    answerers: tuple = ()


class Collected(list):
    """:func:`collect`'s list of :class:`Found`, with ``read``: every panel each chapter reads,
    {panel name: (Design, [chapters])}, in the order first read."""

    def __init__(self, found=(), read: dict | None = None):
        super().__init__(found)
        self.read = read if read is not None else {}


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


def _panel_name(source: str) -> str:
    """A "source:probe" string named as :attr:`metacog.hypotheses.panels.Panel.name` names a
    panel ("squad · prospective"), so that one panel has one name on the page."""
    from metacog.data import recorded
    from metacog.data.responses import source_label

    name, _, probe = str(source).partition(":")
    label = source_label(source)
    try:
        run = recorded.runs().get(name)
    except (OSError, ValueError):
        run = None
    parts = [label]
    if run is not None and str(run.benchmark).lower() != label.lower():
        parts.append(str(run.benchmark))
    if probe:
        parts.append(probe.replace("_", " "))
    return " · ".join(parts)


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
    return ([Found("rank_one", v, *_prefix_design(v.claim, known)) for v in hr.temper(whole, sensitivity)],
            list(known.items()))


def _pairwise(p: dict) -> list[Found]:
    from metacog.hypotheses import pairwise as hp
    from metacog.hypotheses.panels import panels

    ps = panels(p["sources"], cuts=p.get("cuts") or {})
    results = _call(hp.table, ps, alpha=p["alpha"], unanimous_rule=p["unanimous_rule"],
                    n_perm=p["n_permutations"], n_boot=p["n_boot"], seed=p["seed"])
    from metacog.hypotheses.pairwise import population as pp

    known = {q.name: q.design for q in ps}
    decided = hp.verdicts(results) + pp.verdicts(pp.internal_population_table(ps))
    return [Found("pairwise", v, *_prefix_design(v.claim, known)) for v in decided], list(known.items())


def _shortcut(p: dict) -> list[Found]:
    from metacog.hypotheses import shortcut as hs
    from metacog.hypotheses.panels import panels

    ps = panels(p["sources"], cuts=p.get("cuts") or {})
    res = _call(hs.tables, ps, formal_domains=p["formal_domains"], reasoning_models=p["reasoning_models"],
                n_boot=p["n_boot"], seed=p["seed"])
    known = {q.name: q.design for q in ps}
    return ([Found("shortcut", _shortcut_statistic(v), *_prefix_design(v.claim, known))
             for v in hs.account_verdicts(hs.verdicts(res))], list(known.items()))


def _power(p: dict) -> list[Found]:
    """The power chapter's verdict cell: self against other *beyond base rates* (the excess of
    T over its simulated null without self-knowledge), with the chapter's own functions."""
    from metacog.hypotheses import power as hw
    from metacog.hypotheses.panels import panels

    ps = panels(p["sources"], cuts=p.get("cuts") or {})
    results = _call(hw.table, ps, power_target=p["power_target"], alpha=p["alpha"], n_sims=p["n_sims"],
                    n_sims_factor=p["n_sims_factor"], n_perm=p["n_perm"], n_null=p["n_null"],
                    kappa_max=p["kappa_max"], kappa_tol=p["kappa_tol"], n_boot=p["n_boot"],
                    max_items=p["max_items"], seed=p["seed"])
    known = {q.name: q.design for q in ps}
    return ([Found("power", v, *_prefix_design(v.claim, known)) for v in hw.verdicts(results, margin=p["margin"])],
            list(known.items()))


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
    out = []
    for v in hrt.verdicts(result.table, result.skipped):
        label, d = _prefix_design(v.claim, known)
        out.append(Found("reasoning_text", v, _panel_name(label) if ":" in label else label, d))
    return out, [(_panel_name(s), d) for s, d in known.items()]


#: How a P(Yes) answerer's confidence is read (:mod:`metacog.stats.p_yes`), for the elicitation column.
P_YES_ELICITATION = ("first-token P(Yes) at the answer position, not a stated P(correct): the answer is "
                     "Yes where the shifted P(Yes) is at least ½, the confidence max(q, 1 − q), with q "
                     "the P(Yes) after one log-odds shift per model and policy fitted on the other "
                     "items (cross-fitted)")


def _is_p_yes(model) -> bool:
    from metacog.stats.p_yes import LABEL

    return str(model).endswith(LABEL)


def _base_model(model: str) -> str:
    from metacog.stats.p_yes import LABEL

    return str(model)[: -len(LABEL)] if _is_p_yes(model) else str(model)


def _accuracy(row) -> str:
    from metacog.tidy.report import fmt_num, fmt_range

    return f"accuracy {fmt_num(row.accuracy)}, exact 95% CI {fmt_range(row.ci_low, row.ci_high)}"


def _size_clause(model: str, paper: str) -> str:
    """'it is a 1.5B model, where paper 2 <paper>' from the size the model's name states."""
    from metacog.hypotheses.common import short_model as short
    from metacog.hypotheses.miscalibration.hidden import model_size

    size = model_size(model)
    return (f"{short(_base_model(model))} is a {size} model, where paper 2 {paper}" if size
            else f"paper 2 {paper}")


def _p_yes_note(answerer: str, verbal: str, gate0, gate2=None, paper: str = "") -> str:
    """Why a row decided on a P(Yes) answerer is not paper 2's measurement: what the same model's
    stated P(correct) gives (``verbal``, a phrase with its interval, or ''), whether its stated
    answers are at chance (``gate0``: the C0 gate), whether the P(Yes) answers are at chance
    under C2 (``gate2``), and the model's size against paper 2's models (``paper``)."""
    from metacog.hypotheses.common import short_model as short

    base, name = _base_model(answerer), short(answerer)

    def by_name(g):  # gates name models with their provider ('local/...'), probe_models without
        return g.assign(_short=g["model"].map(short)).set_index("_short") if g is not None and len(g) else None

    g0, g2 = by_name(gate0), by_name(gate2)
    parts = [f"decided on {name}, the model's first-token P(Yes) (see how confidence was asked), not on "
             f"the P(correct) it states, which is what paper 2 reads"]
    if verbal:
        parts.append(f"{short(base)}'s stated P(correct) gives {verbal}")
    if g0 is not None and short(base) in g0.index:
        r = g0.loc[short(base)]
        parts.append(f"its stated answers are at chance (C0 {_accuracy(r)}), so the chapter keeps that "
                     f"figure out of its verdicts" if bool(r["at_chance"]) else
                     f"its stated answers are above chance (C0 {_accuracy(r)})")
    if g2 is not None and name in g2.index and bool(g2.loc[name, "at_chance"]):
        parts.append(f"under C2 its P(Yes) answers are themselves at chance ({_accuracy(g2.loc[name])})")
    if paper:
        parts.append(_size_clause(answerer, paper))
    return "; ".join(parts)


def _with_note(v, note: str):
    from dataclasses import replace

    return replace(v, reason=f"{v.reason}. {note[:1].upper()}{note[1:]}") if note else v


def _miscalibration(p: dict) -> list[Found]:
    """The miscalibration chapter's verdict cell, step by step with its own functions. A verdict
    decided on a P(Yes) answerer (a model named '<model> · P(Yes)', :mod:`metacog.stats.p_yes`)
    is named by it, its elicitation says how its confidence is read, and its reason gives the
    same model's stated P(correct) figures beside it, with their gate and the model's size."""
    from metacog.benchmarks import audit
    from metacog.hypotheses import miscalibration as hm
    from metacog.hypotheses.common import short_model as short
    from metacog.hypotheses.miscalibration import population as hpop
    from metacog.hypotheses.panels import panels
    from metacog.pages.findings.claims import PAPER2_MODELS
    from metacog.tidy.report import fmt_ci

    sources, cuts = p["sources"], p.get("cuts") or {}
    frames = hm.policy_frames(sources, read_p_yes=p.get("read_p_yes", False), seed=p["seed"]).frames
    thresholds = {s: hm.threshold_for(s, cuts, p["threshold"]) for s in sources}
    out, gates = [], {}
    for s, df in frames.items():
        g = hm.gate(df)
        gates[s] = g
        gains = hm.loss_gains(df, thresholds[s], g)
        ranks = hm.domain_ranking(df, thresholds[s], p["lam"], g).ranks
        d = _source_design(s)
        if ":" not in s:
            d = Design(d.timing, "verbal P(correct) after a yes/no answer under policies C0, C1 and C2",
                       d.temperature, "c0@1, c1@1, c2@1", d.basis)
        signal = tuple(g.loc[g["carries_signal"], "model"])
        p_yes = [m for m in signal if _is_p_yes(m)]
        if p_yes:
            named = ", ".join(short(m) for m in p_yes)
            words = (P_YES_ELICITATION if len(p_yes) == len(signal) else
                     f"{named}: {P_YES_ELICITATION}; the others: {d.elicitation}")
            d = Design(d.timing, f"{words}; policies C0, C1 and C2", d.temperature, d.prompt, d.basis)
            g2 = hm.gate(df, "c2") if (df["probe"].astype(str) == "c2").any() else None
        for v in hm.policy_verdicts(gains, ranks, g, s):
            label = v.claim.split(": ", 1)[0]
            if p_yes and "H_proxy" in v.claim:
                who = [m for m in p_yes if label.endswith(short(m))] or p_yes
                notes = []
                for m in who:
                    r = ranks[(ranks["model"] == _base_model(m)) & (ranks["predictor"] == "h_proxy")]
                    verbal = (f"H_proxy ρ = {fmt_ci(r.iloc[0]['spearman'], r.iloc[0]['ci_low'], r.iloc[0]['ci_high'], digits=2)}"
                              if len(r) else "")
                    notes.append(_p_yes_note(m, verbal, g, None, PAPER2_MODELS["p2-h-proxy"]))
                v = _with_note(v, ". ".join(notes))
            elif p_yes:
                notes = []
                for m in p_yes:
                    r = gains[(gains["model"] == _base_model(m)) & (gains["policy"] == "c2")]
                    verbal = (f"a C2 gain of {fmt_ci(r.iloc[0]['gain'], r.iloc[0]['gain_ci_low'], r.iloc[0]['gain_ci_high'], digits=3)}"
                              if len(r) else "")
                    notes.append(_p_yes_note(m, verbal, g, g2, PAPER2_MODELS["p2-gain"]))
                v = _with_note(v, ". ".join(notes))
            out.append(Found("miscalibration", v, label, d, answerers=signal))
    read = [(_panel_name(s), _source_design(s)) for s in frames]
    if p.get("probe_models"):
        responses = hm.probe_log(p["probe_run"], p["probe_models"], seed=p["seed"])
        studies = hm.probe_studies(responses, p["probe_models"], audit.load_frame(),
                                   n_per_group=p["n_per_group"], n_sweep=p["n_sweep"], seed=p["seed"])
        if studies:
            table = hm.hidden_table(studies, n_boot=p["n_boot"], seed=p["seed"])
            c0 = design_of(p["probe_run"], "c0")
            words = ("hidden-state displacement under Gaussian embedding noise; confident hits and errors "
                     "from the run's C0 answers")
            gate = hm.gate(responses)
            for v in hm.hidden_verdicts(table, gate):
                model = v.claim.split(": ", 1)[0]
                how = (f"{words}, read from its first-token P(Yes) ({P_YES_ELICITATION})" if _is_p_yes(model)
                       else f"{words} (its stated answers and P(correct))")
                d = Design(c0.timing, how, c0.temperature, c0.prompt, c0.basis)
                if _is_p_yes(model):
                    from metacog.hypotheses.miscalibration.hidden import PAPER_PROBE_SIZES
                    v = _with_note(v, _p_yes_note(model, "", gate, None,
                                                  "" if "paper 2 probed" in v.reason else
                                                  f"probed {PAPER_PROBE_SIZES} models"))
                out.append(Found("miscalibration", v, f"{p['probe_run']} · {short(model)}", d, answerers=(model,)))
    ps = panels(sources, cuts=cuts, min_models=2)
    population = hpop.table(ps, thresholds=thresholds, threshold=p["threshold"], n_boot=p["n_boot"],
                            n_perm=p["n_perm"], seed=p["seed"]).results
    known = {q.name: q.design for q in ps}
    out += [Found("miscalibration", v, *_prefix_design(v.claim, known)) for v in hpop.verdicts(population)]
    return out, read + list(known.items())


_COLLECTORS = {"rank_one": _rank_one, "pairwise": _pairwise, "shortcut": _shortcut, "power": _power,
               "reasoning_text": _reasoning_text, "miscalibration": _miscalibration}


def collect(chapters: dict | None = None, parameter_sets: dict | None = None) -> list[Found]:
    """Every verdict of the hypothesis chapters, each chapter run with its parameter set (a
    :class:`Collected`: its ``read`` says which panels each chapter reads).

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
    out = Collected()
    for chapter, set_name in chapters.items():
        found, read = _COLLECTORS[chapter](dict(sets[set_name]))
        out += found
        for name, d in read:
            _, who = out.read.setdefault(name, (d, []))
            if chapter not in who:
                who.append(chapter)
    return out


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
                     "status": v.status, "reason": v.reason,
                     "agreement": _agreement(v.status, c, f.design.timing, f.answerers),
                     "_order": (order.get(c["id"], len(order)), timing_rank(f.design.timing))})
    cols = ["paper", "claim_id", "claim", "paper_value", "where_in_paper", "paper_design", "chapter",
            "panel", "chapter_claim", "design", "elicitation", "statistic", "estimate", "ci_low", "ci_high", "book_value",
            "n", "status", "reason", "agreement"]
    if not rows:
        return pd.DataFrame(columns=cols)
    t = _base_rate_notes(pd.DataFrame(rows))
    t = t.iloc[sorted(range(len(t)), key=lambda i: t["_order"].iloc[i])]
    return t[cols].reset_index(drop=True)


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
    """Per paper claim and design: how many panels agree with the paper, disagree, cannot tell,
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
    t = t.assign(_c=t["claim_id"].map(first))
    g = t.groupby(["_c", "paper", "claim", "_d", "design"], sort=True)["agreement"].value_counts().unstack(fill_value=0)
    g = g.reindex(columns=cols, fill_value=0).reset_index().drop(columns=["_c", "_d"])
    return g[[c for c in g.columns if c in ("paper", "claim", "design") or g[c].any()]].rename_axis(None, axis=1)
