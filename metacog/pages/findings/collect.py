"""Gathering the findings page's rows: each chapter's own verdict functions, run with that
chapter's parameter set (:func:`collect`), each verdict with the design of the panel it was
decided on (:class:`Found`)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

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
    {panel name: (Design, [chapters])}, in the order first read, and ``left_out``: {chapter: why}
    for the chapters the given sources cannot serve."""

    def __init__(self, found=(), read: dict | None = None):
        super().__init__(found)
        self.read = read if read is not None else {}
        self.left_out: dict[str, str] = {}


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


def _stated_figure(answerer: str, h_proxy: bool, gains: pd.DataFrame, ranks: pd.DataFrame) -> str:
    """The figure the P(Yes) answerer's own stated P(correct) gives for the same claim: its H_proxy
    ranking (ρ with its interval) or its C2 gain over C0; '' when the chapter has none."""
    from metacog.tidy.report import fmt_ci

    base = _base_model(answerer)
    if h_proxy:
        r = ranks[(ranks["model"] == base) & (ranks["predictor"] == "h_proxy")]
        return (f"H_proxy ρ = {fmt_ci(r.iloc[0]['spearman'], r.iloc[0]['ci_low'], r.iloc[0]['ci_high'], digits=2)}"
                if len(r) else "")
    r = gains[(gains["model"] == base) & (gains["policy"] == "c2")]
    return (f"a C2 gain of {fmt_ci(r.iloc[0]['gain'], r.iloc[0]['gain_ci_low'], r.iloc[0]['gain_ci_high'], digits=3)}"
            if len(r) else "")


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
            if p_yes:
                h_proxy = "H_proxy" in v.claim
                who = ([m for m in p_yes if label.endswith(short(m))] or p_yes) if h_proxy else p_yes
                v = _with_note(v, ". ".join(
                    _p_yes_note(m, _stated_figure(m, h_proxy, gains, ranks), g, None if h_proxy else g2,
                                PAPER2_MODELS["p2-h-proxy" if h_proxy else "p2-gain"]) for m in who))
            out.append(Found("miscalibration", v, label, d, answerers=signal))
    read = [(_panel_name(s), _source_design(s)) for s in frames]
    if p.get("probe_models"):
        responses = hm.probe_log(p["probe_run"], p["probe_models"], seed=p["seed"])
        pick = hm.group_answerer(p["probe_run"], seed=p["seed"])
        groups = hm.probe_groups(p["group_run"], pick["model"], n_per_group=p["n_per_group"], seed=p["seed"],
                                 threshold=p["threshold"])
        studies = hm.probe_studies(groups, p["probe_models"], audit.load_frame(), n_sweep=p["n_sweep"],
                                   seed=p["seed"], skip_missing=True)
        if studies:
            table = hm.hidden_table(studies, n_boot=p["n_boot"], seed=p["seed"])
            c0 = design_of(p["probe_run"], "c0")
            words = ("hidden-state displacement under Gaussian embedding noise; confident hits and errors "
                     f"inherited from one frozen audit log, {short(pick['model'])}'s C0 answers on "
                     f"{p['group_run']}")
            gate = hm.gate(responses)
            for v in hm.hidden_verdicts(table, gate):
                model = v.claim.split(": ", 1)[0]
                d = Design(c0.timing, words, c0.temperature, c0.prompt, c0.basis)
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


def collect(chapters: dict | None = None, parameter_sets: dict | None = None,
            sources: list[str] | None = None) -> list[Found]:
    """Every verdict of the hypothesis chapters, each chapter run with its parameter set (a
    :class:`Collected`: its ``read`` says which panels each chapter reads).

    ``chapters`` maps a chapter to the name of its parameter set (default :data:`CHAPTERS`);
    ``parameter_sets`` (default: those of ``notebooks/manifest.yml``) maps names to parameters.
    With ``sources`` (response files) every chapter runs on them instead of its own sources
    (:func:`metacog.hypotheses.serving.reaim`); a chapter they cannot serve is left out, with
    why, in the result's ``left_out``.
    """
    chapters = dict(CHAPTERS if chapters is None else chapters)
    sets = _manifest_sets() if parameter_sets is None else parameter_sets
    unknown = [c for c in chapters if c not in _COLLECTORS]
    if unknown:
        raise ValueError(f"findings.collect: no collector for {unknown}; known: {sorted(_COLLECTORS)}.")
    missing = [s for s in chapters.values() if s not in sets]
    if missing:
        raise ValueError(f"findings.collect: parameter set(s) {missing} are not defined; defined: {sorted(sets)}.")
    from metacog.hypotheses import serving
    from metacog.hypotheses.panels import reuse

    out = Collected()
    frames = serving.load(list(sources)) if sources else None
    with reuse():  # the chapters read the same sources: load and cut each once
        for chapter, set_name in chapters.items():
            params = dict(sets[set_name])
            if frames is not None:
                out.left_out[chapter] = serving.shortfall(chapter, frames, params)
                if out.left_out[chapter]:
                    continue
                del out.left_out[chapter]
                params = serving.reaim(chapter, params, frames)
            found, read = _COLLECTORS[chapter](params)
            out += found
            for name, d in read:
                _, who = out.read.setdefault(name, (d, []))
                if chapter not in who:
                    who.append(chapter)
    return out
