"""Gathering the findings page's rows: each chapter's own verdict functions, run with that
chapter's parameter set (:func:`collect`), each verdict with the design of the panel it was
decided on (:class:`Found`)."""

from __future__ import annotations

import inspect
import pandas as pd

from metacog.data.designs import timing_rank  # noqa: F401 (the page's one namespace)
from metacog.pages.findings.claims import PAPER_CLAIMS
from metacog.pages.findings.rows import Found, _panel_name, _prefix_design, _source_design  # noqa: F401

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
    decided = hp.excess_verdicts(results) + hp.verdicts(results) + pp.verdicts(pp.internal_population_table(ps))
    return [Found("pairwise", v, *_prefix_design(v.claim, known)) for v in decided], list(known.items())


def _shortcut(p: dict) -> list[Found]:
    from metacog.hypotheses import shortcut as hs
    from metacog.hypotheses.panels import panels

    ps = panels(p["sources"], cuts=p.get("cuts") or {})
    res = _call(hs.tables, ps, formal_domains=p["formal_domains"], reasoning_models=p["reasoning_models"],
                n_boot=p["n_boot"], seed=p["seed"])
    known = {q.name: q.design for q in ps}
    decided = hs.verdicts(res)
    out = [Found("shortcut", _shortcut_statistic(v), *_prefix_design(v.claim, known))
           for v in hs.account_verdicts(decided)]
    out += [Found("shortcut", v, *_prefix_design(v.claim, known)) for v in _twin_verdicts(res.twins, decided)]
    return out, list(known.items())


def _twin_verdicts(twins: pd.DataFrame, decided: list) -> list:
    """The twin design's claim on all items, per panel: the chapter's verdict on the mean over
    same-weight pairs where the panel has :data:`~metacog.hypotheses.shortcut.MIN_PAIRS` of
    them; where it has fewer (no mean is decided), each same-weight pair with its item-bootstrap
    interval from the chapter's twin table, named as one pair and "insufficient evidence" as in the
    chapter, so that a prospective twin the account cannot use still reaches the page. A
    near-constant pair is shown with why it is out."""
    from metacog.hypotheses import shortcut as hs
    from metacog.hypotheses.shortcut import twins as st
    from metacog.hypotheses.verdict import INSUFFICIENT, Verdict

    claim = hs._CLAIMS[("twins", "all items")]
    means = {v.claim.split(": ", 1)[0]: v for v in decided if v.claim.endswith(f": {claim}")}
    t = twins[twins["subset"] == "all items"] if len(twins) else twins
    out = []
    for panel, g in (t.groupby("panel", sort=False) if len(t) else []):
        same = g[g["pair"] == st.SAME]
        label = st.label(same.iloc[0]) if len(same) else str(panel)
        if len(same) and int(same.iloc[0]["pairs"]) >= st.MIN_PAIRS and label in means:
            out.append(means[label])
            continue
        design = f" ({st.design(g.iloc[0]['timing'])})" if "timing" in g else ""
        pairs = g[(g["pairs"] == 1) & g["exact"].fillna(False).astype(bool)]
        kept = int((pairs["excluded"] == "").sum())
        for r in pairs.to_dict("records"):
            head = f"{panel} · {r['pair']}{design}: {claim}"
            stat = f"{st.statistic('twins', 'all items')}, one same-weight pair"
            why = (f"the pair is left out of the twin design: {r['excluded']}" if r["excluded"] else
                   f"the shortcut chapter decides the twin design on a mean over at least {st.MIN_PAIRS} "
                   f"same-weight pairs and this panel has {kept}, so it draws no verdict here; the one "
                   f"pair's difference and item-bootstrap interval are shown as the chapter's twin table "
                   f"gives them, a result on these two runs of the same weights, not on thinking models "
                   f"in general")
            out.append(Verdict(head, stat, r["difference"], r["difference_ci_low"], r["difference_ci_high"],
                               {"same-weight twin pairs": 1}, INSUFFICIENT, why, 0.0, basis="caveat"))
    return out


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
        if label in result.skipped:
            v = _models_tried(v, label, result)
        out.append(Found("reasoning_text", v, _panel_name(label) if ":" in label else label, d))
    from metacog.hypotheses.reasoning_text import length as hlen

    given = p["length_sources"]
    lengths = _call(hlen.analyse, given, min_conformance=p["min_conformance"], folds=p["cv"], seed=p["seed"],
                    n_boot=p["n_boot"])
    known_lengths = {s: _source_design(s) for s in given}
    for v in hlen.verdicts(lengths):
        label, d = _prefix_design(v.claim, known_lengths)
        out.append(Found("reasoning_text", v, _panel_name(label) if ":" in label else label, d))
    return out, [(_panel_name(s), d) for s, d in {**known, **known_lengths}.items()]


def _models_tried(v, source: str, result):
    """A reasoning-text verdict on a source the chapter could not fit, with the models it tried
    and why each was not usable (the chapter's gate: at chance, too few answers, off-format),
    and the counts in ``n``: models with texts, and how many the gate kept."""
    from dataclasses import replace

    from metacog.hypotheses.adequacy import failed_rules
    from metacog.hypotheses.common import short_model

    kept, texts = result.models.get(source, ([], []))
    if not texts:
        return replace(v, n={"models with reasoning texts": 0})
    gate = result.gates.get(source)
    rows = {r["model"]: r for r in gate.to_dict("records")} if gate is not None and len(gate) else {}

    def why(m):
        if m in kept:
            return "passes the gate"
        r = rows.get(m)
        return (failed_rules(r) or "does not follow the format") if r is not None else "not gated"

    tried = "; ".join(f"{short_model(m)} ({why(m)})" for m in texts)
    return replace(v, n={"models with reasoning texts": len(texts), "models usable": len(kept)},
                   reason=f"{v.reason}. Models tried: {tried}")


from metacog.pages.findings.paper2 import (P_YES_ELICITATION, _is_p_yes, _miscalibration,  # noqa: E402,F401
                                            _p_yes_note, _size_clause)


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
