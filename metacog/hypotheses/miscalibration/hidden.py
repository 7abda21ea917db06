"""The miscalibration chapter's hidden-state part: the study recorded in ``data/probe/``
(:mod:`metacog.probe.study`), replayed without torch, as contrasts with intervals and verdicts.

:func:`hidden_table` gives one relative change per model and contrast with a bootstrap
interval over items; :func:`damping` reads the prompt contrasts; :func:`hidden_verdicts`
decides "confident errors are as stable as confident hits" (an equivalence claim,
:func:`equivalent`, kept out for models at chance) and "self-critique damps the
perturbation beyond its length".
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from metacog.hypotheses.common import short_model as short
from metacog.tidy.phrasing import capital, join, percent, verb, which
from metacog.tidy.report import fmt_num, fmt_range
from metacog.hypotheses.verdict import INSUFFICIENT, NOT_SUPPORTED, SUPPORTED, decide

#: "As stable": OCW and CC displacement within this relative distance of each other.
EQUIVALENCE_MARGIN = 0.10
#: Fewer items per group than this and a displacement contrast is not judged.
MIN_GROUP_ITEMS = 5


CONTRAST_NAMES = {"self_critique - plain": "self-critique against plain",
                  "length_control - plain": "length-matched plain against plain",
                  "self_critique - length_control": "self-critique against length-matched plain"}


def probe_log(run: str, probe_models, *, seed: int = 0) -> pd.DataFrame:
    """The log the probe's CC / OCW groups are drawn from: the recorded ``run``'s rows and, for
    every probed answerer named ``'<model> · P(Yes)'``, its P(Yes) answers exactly as the chapter
    reads them (:func:`~metacog.hypotheses.miscalibration.sources.policy_frames` with
    ``read_p_yes``: the items it answered under all three policies, the shift of the log-odds
    cross-fitted with folds from ``seed``)."""
    from metacog.data.responses import load_responses
    from metacog.hypotheses.miscalibration.answerers import is_p_yes
    from metacog.hypotheses.miscalibration.sources import policy_frames

    df = load_responses(run)
    wanted = {f"local/{m}" if "/" not in m else m for m in probe_models if is_p_yes(m)}
    if not wanted:
        return df
    frame = policy_frames([run], read_p_yes=True, seed=seed).frames.get(run)
    rows = frame[frame["model"].isin(wanted)] if frame is not None else frame
    found = set() if rows is None else set(rows["model"])
    if wanted - found:
        raise ValueError(f"probe_models: no P(Yes) answers for {sorted(wanted - found)} in run {run!r} "
                         f"(its models: {sorted(df['model'].unique())}); name a model that recorded "
                         f"a first-token P(Yes) under C0, C1 and C2, or drop it from probe_models.")
    return pd.concat([df, rows], ignore_index=True)


def per_model(setting, model: str, name: str) -> int:
    """``setting`` for ``model``: the number itself, or its entry when ``setting`` is a
    {model: number} dict (a missing entry is an error naming the parameter)."""
    if isinstance(setting, dict):
        if model not in setting:
            raise ValueError(f"{name} has no entry for probed model {model!r} (its keys: "
                             f"{sorted(setting)}); add one, or give one number for every model.")
        return int(setting[model])
    return int(setting)


def probe_studies(responses: pd.DataFrame, probe_models, items, *, n_per_group=8, n_sweep=4,
                  seed: int = 0, compute: bool = False) -> dict:
    """{model: :class:`metacog.probe.study.Study`}: replayed from ``data/probe/`` (no torch), or
    recorded there with ``compute=True``. ``responses`` is :func:`probe_log`'s table;
    ``n_per_group`` and ``n_sweep`` are one number, or one per model (a dict)."""
    from metacog.probe import study
    return {m: study.study(m, responses, items, n_per_group=per_model(n_per_group, m, "n_per_group"),
                           n_sweep=per_model(n_sweep, m, "n_sweep"), seed=seed, compute=compute)
            for m in probe_models}


def sizes_sentence(probe_models, n_per_group) -> str:
    """How many CC and OCW items each probed model was asked for, in words."""
    from collections import defaultdict

    by = defaultdict(list)
    for m in probe_models:
        by[per_model(n_per_group, m, "n_per_group")].append(m)
    if len(by) == 1:
        return str(next(iter(by)))
    return join([f"{n} ({join(list(ms))})" for n, ms in sorted(by.items(), reverse=True)])


def hidden_table(studies: dict, *, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One row per probed model and contrast, each a relative change of the displacement
    averaged over layers with a bootstrap interval over items: the three prompt contrasts
    (paired, ``items`` per prompt) and OCW minus CC under each prompt (``n_cc``, ``n_ocw``).
    Columns model, kind ("prompt" / "OCW - CC"), contrast, items, n_cc, n_ocw, estimate,
    ci_low, ci_high."""
    rows = []
    for model, st in studies.items():
        for r in st.contrast_intervals(n_boot=n_boot, seed=seed).itertuples():
            rows.append({"model": model, "kind": "prompt", "contrast": r.contrast, "items": r.items,
                         "n_cc": np.nan, "n_ocw": np.nan, "estimate": r.rel_change,
                         "ci_low": r.ci_low, "ci_high": r.ci_high})
        for cond in ("plain", "self_critique", "length_control"):
            g = st.group_contrast(condition=cond, n_boot=n_boot, seed=seed)
            rows.append({"model": model, "kind": "OCW - CC", "contrast": f"OCW - CC ({cond.replace('_', ' ')})",
                         "items": g["n_cc"] + g["n_ocw"], "n_cc": g["n_cc"], "n_ocw": g["n_ocw"],
                         "estimate": g["rel_diff"], "ci_low": g["ci_low"], "ci_high": g["ci_high"]})
    return pd.DataFrame(rows)


def sweep_sentence(studies: dict, *, n_boot: int = 2000, seed: int = 0) -> str:
    """How far displacement per unit of noise varies across the sigma sweep, per probed model,
    with its bootstrap interval over the swept prompts and their number."""
    from metacog.tidy.report import fmt_ci, fmt_count

    if not studies:
        return "n/a (no model probed)"
    parts = []
    for m, st in studies.items():
        r = st.sweep_linearity(n_boot=n_boot, seed=seed).iloc[0]
        parts.append(f"{fmt_ci(r.estimate, r.ci_low, r.ci_high, digits=1, pct=True)} for {short(m)} "
                     f"({fmt_count(r.prompts, 'prompt')} at {fmt_count(r.sigmas, 'noise level')})")
    return join(parts)


def probe_chance_sentence(gate_table: pd.DataFrame | None, models) -> str:
    """One sentence on whether the probed models answer above chance (and what follows)."""
    if gate_table is None or not len(models):
        return ""
    at = [m for m in models if gate_table.loc[gate_table["model"].map(short) == short(m), "at_chance"].all()]
    if not at:
        return "Every probed model answers above chance, so its CC and OCW items differ in knowledge."
    accs = join([f"{short(m)} {fmt_num(a, pct=True)} correct"
                     for m, a in zip(gate_table["model"], gate_table["accuracy"])
                     if short(m) in {short(x) for x in at}])
    many = len(at) > 1
    return (f"{capital(which(at, len(list(models)), 'probed model'))} {verb(len(at), 'answers', 'answer')} "
            f"the probed items at chance by the adequacy gate ({accs}): {'their' if many else 'its'} "
            f"confident hits and confident errors are confident guesses that happen to match the label "
            f"or not, so for {'them' if many else 'it'} the OCW-against-CC contrast is null by "
            f"construction and says nothing about paper 2's claim.")


def _row(table: pd.DataFrame, model: str, contrast: str) -> pd.Series:
    return table[(table["model"] == model) & (table["contrast"] == contrast)].iloc[0]


def damping(table: pd.DataFrame, model: str) -> str:
    """What self-critique does to the perturbation on ``model``, judged on the intervals of
    :func:`hidden_table`: a rise, no damping, damping that prompt length alone explains, or
    damping beyond length. The caller names the model ("On m, ...")."""
    sc = _row(table, model, "self_critique - plain")
    lc = _row(table, model, "length_control - plain")
    beyond = _row(table, model, "self_critique - length_control")
    if sc["ci_low"] > 0:
        return f"self-critique raises the perturbation, by {percent(sc['estimate'])}"
    if not sc["ci_high"] < 0:
        return "self-critique does not damp the perturbation"
    if beyond["ci_high"] < 0:
        return "self-critique damps the perturbation by more than its length alone"
    if lc["ci_high"] < 0:
        how = ("the data cannot tell the two apart" if not beyond["ci_low"] > 0
               else "self-critique damps it less than the length-matched prompt")
        return (f"the damping is a matter of prompt length: a length-matched plain prompt reduces the "
                f"perturbation by {percent(-lc['estimate'])}, self-critique by {percent(-sc['estimate'])}, "
                f"and {how}")
    return "self-critique damps the perturbation, but the data cannot tell it from its length"


def equivalent(claim: str, statistic: str, estimate, ci_low, ci_high, *, margin: float, n: dict,
               min_counts: dict, digits: int = 3):
    """A claim of no difference, decided with two one-sided checks of the interval against
    ±``margin``: supported when it lies inside, not supported when it lies wholly outside,
    insufficient evidence otherwise (or with too few counts). Returns a Verdict."""
    upper = decide(claim, statistic, estimate, ci_low, ci_high, line=margin, direction="less", n=n,
                   min_counts=min_counts, digits=digits)
    lower = decide(claim, statistic, estimate, ci_low, ci_high, line=-margin, direction="greater", n=n,
                   min_counts=min_counts, digits=digits)
    if upper.basis in ("counts", "missing"):
        return upper
    band = f"±{fmt_num(margin, digits)}"
    iv = f"the 95% interval ({fmt_range(ci_low, ci_high, digits=digits, sep=' to ')})"
    if upper.status == SUPPORTED and lower.status == SUPPORTED:
        return dataclasses.replace(upper, reason=f"{iv} lies within {band}", basis="")
    if upper.status == NOT_SUPPORTED or lower.status == NOT_SUPPORTED:
        return dataclasses.replace(upper, status=NOT_SUPPORTED, basis="",
                                   reason=f"{iv} lies wholly outside {band}")
    return dataclasses.replace(upper, status=INSUFFICIENT, basis="",
                               reason=f"{iv} reaches beyond {band}, so the data cannot tell")


#: The sizes of the models paper 2 probes, for the reason an at-chance probed model is kept out.
PAPER_PROBE_SIZES = "7–8B"


def model_size(model: str) -> str:
    """The parameter count a model's name states ('135M', '0.5B'), or '' when it states none.

    >>> model_size("HuggingFaceTB/SmolLM2-135M-Instruct"), model_size("qwen2.5-coder-0.5b"), model_size("gpt-4o")
    ('135M', '0.5B', '')
    """
    import re

    found = re.findall(r"(?<![\w.])(\d+(?:\.\d+)?)([mb])(?![a-z])", str(model).lower())
    return f"{found[-1][0]}{found[-1][1].upper()}" if found else ""


def at_chance_reason(model: str, row) -> str:
    """Why a probed model at chance is kept out of a hidden-state verdict: its accuracy with the
    exact interval, and its size against the models paper 2 probes."""
    where = (f"C0 accuracy {fmt_num(row.accuracy)}, exact 95% CI {fmt_range(row.ci_low, row.ci_high)}"
             if row is not None else "it has no gated C0 answers")
    size = model_size(model)
    scale = (f"; it is a {size} model, where paper 2 probed {PAPER_PROBE_SIZES} models" if size
             else f"; paper 2 probed {PAPER_PROBE_SIZES} models")
    return f"{short(model)} answers at chance ({where}){scale}"


def versus_plain(table: pd.DataFrame, model: str) -> str:
    """Paper 2's own contrast, self-critique against the plain prompt, in words with its interval."""
    from metacog.tidy.report import fmt_ci

    r = _row(table, model, "self_critique - plain")
    return (f"against the plain prompt (paper 2's contrast) the change is "
            f"{fmt_ci(r['estimate'], r['ci_low'], r['ci_high'], digits=1, pct=True)}")


def hidden_verdicts(table: pd.DataFrame, gate_table: pd.DataFrame) -> list:
    """Per probed model: (1) confident errors are as stable as confident hits (OCW - CC under the
    plain prompt within ±:data:`EQUIVALENCE_MARGIN`); (2) self-critique damps the perturbation
    beyond its length (self-critique against the length-matched prompt below 0), its reason
    quoting paper 2's own contrast against the plain prompt beside it. Both are kept out
    ("insufficient evidence") when the model answers at chance, like every verdict in the
    chapter: its CC and OCW items are then both confident guesses, and a model that does not
    know the answers says nothing about how a knowing model's hidden state reacts to
    self-critique. The reason quotes each model's accuracy and size (:func:`at_chance_reason`)."""
    chance = dict(zip(gate_table["model"].map(short), gate_table["at_chance"]))
    acc = {short(r.model): r for r in gate_table.itertuples()}
    out = []
    for model in dict.fromkeys(table["model"]):
        guessing = chance.get(short(model), True)
        why = at_chance_reason(model, acc.get(short(model))) if guessing else ""
        g = _row(table, model, "OCW - CC (plain)")
        v = equivalent(f"{model}: confident errors are as stable as confident hits",
                       "relative OCW − CC displacement", g["estimate"], g["ci_low"], g["ci_high"],
                       margin=EQUIVALENCE_MARGIN, n={"CC items": int(g["n_cc"]), "OCW items": int(g["n_ocw"])},
                       min_counts={"CC items": MIN_GROUP_ITEMS, "OCW items": MIN_GROUP_ITEMS})
        if guessing:
            v = dataclasses.replace(v, status=INSUFFICIENT, basis="", reason=(
                f"{why}, so its confident hits and confident errors are both confident guesses and "
                f"the CC-vs-OCW comparison is null by construction"))
        out.append(v)
        b = _row(table, model, "self_critique - length_control")
        d = decide(f"{model}: self-critique damps the perturbation beyond its length",
                   "relative change, self-critique against length-matched plain", b["estimate"],
                   b["ci_low"], b["ci_high"], line=0.0, direction="less",
                   n={"items": int(b["items"])}, min_counts={"items": 2 * MIN_GROUP_ITEMS})
        plain = versus_plain(table, model)
        if guessing:
            d = dataclasses.replace(d, status=INSUFFICIENT, basis="", reason=(
                f"{why}, so how its hidden state reacts to a self-critique prompt says nothing about a "
                f"model that knows the answers; {plain}"))
        else:
            d = dataclasses.replace(d, reason=f"{d.reason}; {plain}")
        out.append(d)
    return out


def display_hidden(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`hidden_table` for a page: relative changes as percentages with their intervals."""
    from metacog.hypotheses.common import with_ci

    t = table.rename(columns={"estimate": "x", "ci_low": "x_ci_low", "ci_high": "x_ci_high"})
    n = [f"{int(i)} per prompt" if k == "prompt" else f"{int(c)} CC, {int(o)} OCW"
         for k, i, c, o in zip(t["kind"], t["items"], t["n_cc"].fillna(0), t["n_ocw"].fillna(0))]
    out = pd.DataFrame({"model": t["model"], "contrast": t["contrast"].map(lambda c: CONTRAST_NAMES.get(c, c)),
                        "items": n})
    return out.assign(**with_ci(t, "x", "relative change (95% CI)", digits=1, pct=True))


def main(argv: list[str] | None = None) -> int:
    """Record the chapter's hidden-state study (torch): the same log, groups and prompts the
    chapter replays, so the replay finds every probe in ``data/probe/``."""
    import argparse

    from metacog.benchmarks import audit
    from metacog.probe import unload_models

    p = argparse.ArgumentParser(prog="metacog probe",
                                description=main.__doc__)
    p.add_argument("models", nargs="+", help="panel names, e.g. smollm2-135m, or "
                                             "'qwen2.5-coder-1.5b · P(Yes)' for a P(Yes) answerer")
    p.add_argument("--run", default="audit_policies")
    p.add_argument("--n-per-group", type=int, default=8)
    p.add_argument("--n-sweep", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    responses = probe_log(args.run, args.models, seed=args.seed)
    items = audit.load_frame()
    for m in args.models:
        s = probe_studies(responses, [m], items, n_per_group=args.n_per_group, n_sweep=args.n_sweep,
                          seed=args.seed, compute=True)[m]
        print(f"{m}: {len(s.groups)} items\n{s.summary().round(5)}", flush=True)
        unload_models()
    return 0
