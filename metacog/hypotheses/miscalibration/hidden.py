"""The miscalibration chapter's hidden-state part: the study recorded in ``data/probe/``
(:mod:`metacog.probe.study`), replayed without torch, as contrasts with intervals and verdicts.

As in paper 2 the CC / OCW groups come from one frozen audit log: :func:`group_answerer` picks
the most accurate audit answerer of a run (one the adequacy gate passes), :func:`probe_groups`
draws its confident hits and errors from its C0 log, and every probed model reads those same
item texts (:func:`probe_studies`). :func:`hidden_table` gives one relative change per model
and contrast with a bootstrap interval over items; :func:`damping` reads the prompt contrasts;
:func:`hidden_verdicts` decides "confident errors are as stable as confident hits" (an
equivalence claim, :func:`equivalent`, never judged on fewer items per group than paper 2's)
and "self-critique damps the perturbation beyond its length".
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from metacog.hypotheses.common import short_model as short
from metacog.tidy.phrasing import capital, join, percent, verb, which
from metacog.tidy.report import fmt_num, fmt_range
from metacog.hypotheses.verdict import INSUFFICIENT, NOT_SUPPORTED, SUPPORTED, decide
from metacog.probe.study import PAPER_GROUP_ITEMS

#: "As stable": OCW and CC displacement within this relative distance of each other.
EQUIVALENCE_MARGIN = 0.10
#: Why :data:`EQUIVALENCE_MARGIN` is where it is, printed beside every verdict that uses it.
EQUIVALENCE_MARGIN_WHY = ("±10%: the book's own margin, a tenth of the confident hits' displacement (paper 2 "
                          "gives no figure for a difference it would call clear)")
#: Fewer items per group than paper 2's (12 CC + 12 OCW) and a displacement contrast is not judged.
MIN_GROUP_ITEMS = PAPER_GROUP_ITEMS


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


def audit_answerers(run: str, *, seed: int = 0) -> pd.DataFrame:
    """Every answerer of ``run``'s C0 answers — each model's words and, where it recorded one, its
    first-token P(Yes) read as an answer (the chapter's reading) — with its accuracy, exact 95%
    interval and the adequacy gate, most accurate first. Columns model, items, accuracy, ci_low,
    ci_high, at_chance."""
    from metacog.hypotheses.adequacy import adequacy
    from metacog.hypotheses.miscalibration.sources import policy_frames

    frame = policy_frames([run], read_p_yes=True, seed=seed).frames.get(run)
    if frame is None:
        raise ValueError(f"run {run!r} carries no C0/C1/C2 policy answers, so it has no audit "
                         f"answerer; name an audit run of data/responses/runs.yml (e.g. audit_policies).")
    g = adequacy(frame[frame["probe"].astype(str) == "c0"], probe="c0")
    g = g.assign(at_chance=~g["carries_signal"])
    cols = ["model", "items", "accuracy", "ci_low", "ci_high", "at_chance"]
    return g[cols].sort_values(["accuracy", "model"], ascending=[False, True]).reset_index(drop=True)


def group_answerer(run: str, *, seed: int = 0) -> pd.Series:
    """The most accurate answerer of ``run`` (:func:`audit_answerers`), as its row; an error
    when none passes the adequacy gate (its confident hits and errors would be guesses)."""
    table = audit_answerers(run, seed=seed)
    ok = table[~table["at_chance"]]
    if ok.empty:
        raise ValueError(f"run {run!r}: no answerer beats chance (best: {table['model'].iloc[0]} at "
                         f"{table['accuracy'].iloc[0]:.3f}), so its CC / OCW groups would be guesses; "
                         f"name a run with an answerer the adequacy gate passes.")
    return ok.iloc[0]


def probe_groups(run: str, answerer: str, *, n_per_group: int = MIN_GROUP_ITEMS, seed: int = 0,
                 threshold: float = 0.8) -> pd.DataFrame:
    """The probe's CC and OCW items: up to ``n_per_group`` of each from ``answerer``'s C0 answers in
    ``run`` at confidence >= ``threshold`` (:func:`metacog.probe.study.select_items`; a P(Yes)
    answerer read as the chapter reads it), with a ``run`` column. One frozen log for every
    probed model, as in paper 2."""
    from metacog.hypotheses.miscalibration.sources import policy_frames
    from metacog.probe import study

    frame = policy_frames([run], read_p_yes=True, seed=seed).frames.get(run)
    if frame is None:
        raise ValueError(f"group run {run!r} carries no C0/C1/C2 policy answers; name an audit run of "
                         f"data/responses/runs.yml (e.g. audit_full).")
    name = answerer if "/" in answerer else f"local/{answerer}"
    return study.select_items(frame, name, n_per_group, seed, threshold).assign(run=run)


def probe_studies(groups: pd.DataFrame, probe_models, items, *, n_sweep=MIN_GROUP_ITEMS, seed: int = 0,
                  compute: bool = False, skip_missing: bool = False) -> dict:
    """{model: :class:`metacog.probe.study.Study`} on the same ``groups`` (:func:`probe_groups`) for
    every model: replayed from ``data/probe/`` (no torch), or recorded there with ``compute=True``.
    ``n_sweep`` (items per group in the sigma sweep) is one number, or one per model (a dict).
    ``skip_missing`` leaves out, instead of failing on, a model whose files are not recorded."""
    from metacog.probe import study

    out = {}
    for m in probe_models:
        try:
            out[m] = study.study(m, groups, items, n_sweep=per_model(n_sweep, m, "n_sweep"), seed=seed,
                                 compute=compute)
        except FileNotFoundError:
            if not skip_missing or compute:
                raise
    return out


def groups_sentence(groups: pd.DataFrame, answerers: pd.DataFrame, log_answerers: pd.DataFrame,
                    choose_run: str, probed) -> str:
    """Where the probe's groups come from, in words: the answerer, why it (its accuracy against the
    others' on ``choose_run``), its accuracy on the group log and the CC / OCW counts."""
    from metacog.data.responses import source_name
    from metacog.probe.study import network
    from metacog.tidy.report import fmt_ci

    who = groups["answerer"].iloc[0]
    run = groups["run"].iloc[0]
    mine = answerers[answerers["model"] == who].iloc[0]
    others = answerers[answerers["model"] != who]
    log = log_answerers[log_answerers["model"] == who].iloc[0]
    counts = groups["group"].value_counts()
    same = [short(m) for m in probed if network(m) == network(who)]
    tail = (f" For {join(same)} the log comes from the probed network itself, so on that row the groups "
            f"are also the model's own answers." if same else "")
    return (f"The groups are inherited from one frozen audit log, the C0 answers of {short(who)}: "
            f"the most accurate audit answerer on {source_name(choose_run)} (accuracy "
            f"{fmt_ci(mine.accuracy, mine.ci_low, mine.ci_high, digits=3)} on "
            f"{int(mine['items'])} items; the next best, {short(others['model'].iloc[0])}, "
            f"{fmt_num(others['accuracy'].iloc[0], 3)}). Its log on {source_name(run)} (accuracy "
            f"{fmt_ci(log.accuracy, log.ci_low, log.ci_high, digits=3)} on {int(log['items'])} items) "
            f"gives {int(counts.get('CC', 0))} CC and {int(counts.get('OCW', 0))} OCW items, the same "
            f"texts for every probed model.{tail}")


def recorded_sentence(probe_models, recorded) -> str:
    """Which probed models have the study recorded on the current groups, and which not (left out
    of every table and verdict until ``metacog probe`` records them), in words."""
    missing = [m for m in probe_models if m not in set(recorded)]
    if not missing:
        return ""
    cmd = " ".join(f"'{m}'" if " " in m else m for m in missing)
    had = f"Recorded on these groups so far: {join(list(recorded))}. " if recorded else ""
    one = len(missing) == 1
    return (f"{had}Not yet recorded: {join(missing)}, so {'it is' if one else 'they are'} left out of the "
            f"tables, figures and verdicts below until `metacog probe {cmd}` records {'it' if one else 'them'}.")


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
    """One sentence on whether the probed models answer above chance, and what that means for the
    OCW-against-CC contrast when the groups are the audit log's, not the model's."""
    if gate_table is None or not len(models):
        return ""
    at = [m for m in models if gate_table.loc[gate_table["model"].map(short) == short(m), "at_chance"].all()]
    if not at:
        return "Every probed model answers the audit above chance."
    accs = join([f"{short(m)} {fmt_num(a, pct=True)} correct"
                     for m, a in zip(gate_table["model"], gate_table["accuracy"])
                     if short(m) in {short(x) for x in at}])
    many = len(at) > 1
    return (f"{capital(which(at, len(list(models)), 'probed model'))} {verb(len(at), 'answers', 'answer')} "
            f"the audit at chance by the adequacy gate ({accs}). The groups do not depend on that — they "
            f"are the audit log's — but a model that does not know the answers can only respond to how the "
            f"two groups' texts differ, not to whether the log's answer was right, so for "
            f"{'them' if many else 'it'} the OCW-against-CC contrast, whatever its size, says nothing about "
            f"paper 2's claim.")


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
               min_counts: dict, digits: int = 3, line_why: str = EQUIVALENCE_MARGIN_WHY):
    """A claim of no difference, decided with two one-sided checks of the interval against
    ±``margin``: supported when it lies inside, not supported when it lies wholly outside,
    insufficient evidence otherwise (or with too few counts). Returns a Verdict whose line is
    '±margin around 0' and whose ``line_why`` says where the margin comes from."""
    upper = decide(claim, statistic, estimate, ci_low, ci_high, line=margin, direction="less", n=n,
                   min_counts=min_counts, digits=digits)
    lower = decide(claim, statistic, estimate, ci_low, ci_high, line=-margin, direction="greater", n=n,
                   min_counts=min_counts, digits=digits)
    upper = dataclasses.replace(upper, line=0.0, margin=margin, line_why=line_why)
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
    plain prompt within ±:data:`EQUIVALENCE_MARGIN`, the groups inherited from the audit log);
    (2) self-critique damps the perturbation beyond its length (self-critique against the
    length-matched prompt below 0), its reason quoting paper 2's own contrast against the plain
    prompt beside it. (1) is "insufficient evidence" (the data cannot tell) with fewer than
    paper 2's :data:`MIN_GROUP_ITEMS` items in either group, whatever the interval. Both are kept
    out when the probed model answers at chance, like every verdict in the chapter: a model that
    does not know the answers can only respond to how the groups' texts differ, and says nothing about how a knowing model's hidden state reacts to self-critique. The reason
    quotes each model's accuracy and size (:func:`at_chance_reason`)."""
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
        if v.basis == "counts":
            v = dataclasses.replace(v, reason=(
                f"{v.reason} (paper 2's {MIN_GROUP_ITEMS} + {MIN_GROUP_ITEMS}), so the data cannot tell"))
        elif guessing:
            v = dataclasses.replace(v, status=INSUFFICIENT, basis="", reason=(
                f"{why}: the CC / OCW items are the audit log's, but a model that does not know the answers "
                f"can only respond to how the two groups' texts differ, not to whether the log's answer was "
                f"right, so its interval, wherever it lies, says nothing about paper 2's claim"))
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
    """Record the chapter's hidden-state study (torch): the same frozen group log, groups and
    prompts the chapter replays, so the replay finds every probe in ``data/probe/``. Resumable:
    each batch of items is one cache file, and a recorded batch is never run again."""
    import argparse

    from metacog.benchmarks import audit
    from metacog.probe import unload_models

    p = argparse.ArgumentParser(prog="metacog probe", description=main.__doc__)
    p.add_argument("models", nargs="+", help="panel names, e.g. smollm2-135m, or "
                                             "'qwen2.5-coder-1.5b · P(Yes)' for a P(Yes) answerer")
    p.add_argument("--run", default="audit_policies",
                   help="the audit run whose most accurate answerer gives the groups (the chapter's probe_run)")
    p.add_argument("--group-run", default="audit_full",
                   help="the run holding that answerer's frozen C0 log (the chapter's group_run)")
    p.add_argument("--n-per-group", type=int, default=MIN_GROUP_ITEMS)
    p.add_argument("--n-sweep", type=int, default=MIN_GROUP_ITEMS, help="items per group in the sigma sweep")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    who = group_answerer(args.run, seed=args.seed)
    groups = probe_groups(args.group_run, who["model"], n_per_group=args.n_per_group, seed=args.seed)
    print(f"groups from {who['model']} on {args.group_run}: {groups['group'].value_counts().to_dict()}",
          flush=True)
    items = audit.load_frame()
    for m in args.models:
        s = probe_studies(groups, [m], items, n_sweep=args.n_sweep, seed=args.seed, compute=True)[m]
        print(f"{m}: {len(s.groups)} items\n{s.summary().round(5)}", flush=True)
        unload_models()
    return 0
