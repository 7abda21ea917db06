"""The findings page's collector for paper 2's chapter (miscalibration): its verdicts as rows,
with the notes that say when a row was decided on another answerer, measurement or model size
than paper 2's."""

from __future__ import annotations

import pandas as pd

from metacog.data.designs import Design, design as design_of
from metacog.pages.findings.rows import Found, _panel_name, _prefix_design, _source_design


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
