"""The miscalibration chapter (paper 2): policies, confident errors and their stability.

Three parts, each on any source that has what it needs:

- the policy audit (:func:`policy_frames`, from
  :mod:`metacog.hypotheses.miscalibration.sources`; :func:`policy_summary`, :func:`loss_gains`,
  :func:`domain_ranking`, :func:`policy_verdicts`) on sources with the C0/C1/C2 probes,
  behind the model adequacy gate (:func:`gate`): a model at chance stays in the tables,
  marked, and out of the verdicts;
- the hidden-state study replayed from ``data/probe/``, in
  :mod:`metacog.hypotheses.miscalibration.hidden` (re-exported here: :func:`hidden_table`,
  :func:`hidden_verdicts`, :func:`damping`, :func:`probe_log`, :func:`probe_groups`);
- confident errors across a population of models, in
  :mod:`metacog.hypotheses.miscalibration.population`.

:func:`verdict_paragraph` writes the closing prose from every verdict.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from scipy import stats as sps

from metacog.hypotheses.miscalibration import audit
from metacog.hypotheses.adequacy import adequacy
from metacog.hypotheses.common import ChapterResult, chapter_result, short_model
from metacog.tidy.report import fmt_list, fmt_num, fmt_range
from metacog.stats.intervals import correlation_ci, proportion_ci
from metacog.stats.policy import POLICIES, policy_table
from metacog.hypotheses.verdict import INSUFFICIENT, NEGLIGIBLE, NOT_SUPPORTED, SUPPORTED, decide

from metacog.hypotheses.miscalibration.sources import PolicyFrames, policy_frames  # noqa: F401
from metacog.hypotheses.miscalibration.hidden import (  # noqa: F401  (the chapter's one namespace)
    EQUIVALENCE_MARGIN, MIN_GROUP_ITEMS, audit_answerers, damping, display_hidden, equivalent,
    group_answerer, groups_sentence, hidden_table, hidden_verdicts, probe_chance_sentence, probe_groups,
    probe_log, probe_studies, recorded_sentence, sweep_sentence)

#: Abstaining on an item costs (0.5 - y)^2 = 0.25 whatever the label.
ABSTAIN_LOSS = 0.25
POLICY_NAMES = {"c0": "C0 forced answer", "c1": "C1 cautious abstention",
                "c2": "C2 self-critique, then abstention"}

short = short_model


# ---------------------------------------------------------------------------
# sources and the adequacy gate


def threshold_for(source: str, cuts: dict | None, default: float):
    """The confidence threshold of "confident" for ``source``: its entry of ``cuts`` (a number
    or "median", each model's own median), else ``default``."""
    from metacog.data.responses import source_label

    cuts = cuts or {}
    for key in (source, source_label(source)):
        if key in cuts:
            value = cuts[key]
            if value == "median":
                return "median"
            value = float(value)
            if not 0 <= value <= 1:
                raise ValueError(f"cuts[{key!r}] = {value!r}: a confidence threshold must lie in [0, 1].")
            return value
    return float(default)


def gate(df: pd.DataFrame, probe: str = "c0", **kw) -> pd.DataFrame:
    """:func:`metacog.hypotheses.adequacy.adequacy` of each model's ``probe`` answers, plus ``at_chance``
    (the model does not beat chance and its majority baseline) and ``model_short``."""
    rows = df[df["probe"].astype(str) == probe]
    a = adequacy(rows, probe=probe, **kw)
    if "decision" in rows.columns:
        said = rows["decision"].astype(str).str.lower()
        a["said_yes"] = a["model"].map((said == "yes").groupby(rows["model"].astype(str)).sum()).astype(int)
    return a.assign(at_chance=~a["carries_signal"], model_short=a["model"].map(short))


def _signal(gate_table: pd.DataFrame) -> list[str]:
    return gate_table.loc[gate_table["carries_signal"], "model"].tolist()


def _mean_ci(x, ci: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): a t interval of a mean; NaN ends with fewer than 2 values."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return np.nan, np.nan, np.nan
    m = float(x.mean())
    if x.size < 2:
        return m, np.nan, np.nan
    half = sps.t.ppf(0.5 + ci / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return m, float(m - half), float(m + half)


def scored(df: pd.DataFrame, threshold=0.8) -> pd.DataFrame:
    """:func:`metacog.stats.policy.policy_table` (loss, CC / OCW flags), with ``threshold`` a
    number or "median" (each model's median confidence over its answered C0 items)."""
    if threshold != "median":
        return policy_table(df, float(threshold))
    parts = []
    for _, rows in df.groupby("model", sort=False):
        c0 = rows[(rows["probe"] == "c0") & (rows["decision"] != "abstain")]["confidence"]
        parts.append(policy_table(rows, float(c0.median())))
    return pd.concat(parts, ignore_index=True)


# ---------------------------------------------------------------------------
# the policy audit


def policy_summary(df: pd.DataFrame, threshold=0.8, gate_table: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per model x policy: items, mean policy-aware ``loss`` (t interval over items),
    ``abstained`` and ``abstain_rate``, ``accuracy`` on answered items and ``ocw_rate``
    (confident wrong answers over items), each rate with its exact interval, and
    ``at_chance`` from ``gate_table`` (:func:`gate`)."""
    t = scored(df, threshold)
    chance = {} if gate_table is None else dict(zip(gate_table["model"], gate_table["at_chance"]))
    rows = []
    for (model, probe), g in t.groupby(["model", "probe"], sort=True):
        n, ans = len(g), int(g["answered"].sum())
        loss, lo, hi = _mean_ci(g["se"])
        row = {"model": model, "policy": probe, "at_chance": chance.get(model, np.nan), "items": n,
               "loss": loss, "loss_ci_low": lo, "loss_ci_high": hi, "abstained": n - ans}
        for name, k, m in (("abstain_rate", n - ans, n), ("accuracy", int((g["correct"] == 1).sum()), ans),
                           ("ocw_rate", int(g["ocw"].sum()), n)):
            ci = proportion_ci(k, m, method="exact")
            row.update({name: k / m if m else np.nan, f"{name}_ci_low": ci[0], f"{name}_ci_high": ci[1]})
        rows.append(row)
    return pd.DataFrame(rows)


def loss_gains(df: pd.DataFrame, threshold=0.8, gate_table: pd.DataFrame | None = None) -> pd.DataFrame:
    """The paired gain of C1 and C2 over C0 (mean over items of loss_C0 - loss_policy; positive:
    the policy lowers the loss) with a t interval over items, one row per model and policy, and
    one row per policy pooling the models above chance (the item's gain averaged over them;
    ``model`` = "models above chance"). Columns model, policy, at_chance, models, items, gain,
    gain_ci_low, gain_ci_high."""
    t = scored(df, threshold)
    wide = t.pivot_table(index=["model", "item_id"], columns="probe", values="se")
    signal = None if gate_table is None else _signal(gate_table)
    chance = {} if gate_table is None else dict(zip(gate_table["model"], gate_table["at_chance"]))
    rows = []
    for policy in ("c1", "c2"):
        if policy not in wide.columns or "c0" not in wide.columns:
            continue
        gain = (wide["c0"] - wide[policy]).dropna()
        for model, g in gain.groupby(level="model", sort=True):
            m, lo, hi = _mean_ci(g)
            rows.append({"model": model, "policy": policy, "at_chance": chance.get(model, np.nan),
                         "models": 1, "items": len(g), "gain": m, "gain_ci_low": lo, "gain_ci_high": hi})
        if signal:
            pooled = gain[gain.index.get_level_values("model").isin(signal)].groupby(level="item_id").mean()
            m, lo, hi = _mean_ci(pooled)
            rows.append({"model": "models above chance", "policy": policy, "at_chance": False,
                         "models": len(signal), "items": len(pooled), "gain": m, "gain_ci_low": lo,
                         "gain_ci_high": hi})
    return pd.DataFrame(rows)


@chapter_result
class DomainRanking(ChapterResult):
    """:func:`domain_ranking`: ``domains`` (per model and domain: the C2 gain over C0, H_proxy
    and the label baselines) and ``ranks`` (per model and predictor: the Spearman correlation
    with the gain across domains, ``ci_low``/``ci_high``, ``at_chance``)."""

    domains: pd.DataFrame
    ranks: pd.DataFrame

    def summary(self) -> pd.DataFrame:
        """The ranks: per model and predictor, Spearman's rho with its interval."""
        return self.ranks.copy()


def domain_ranking(df: pd.DataFrame, threshold=0.8, lam: float = 1.0,
                   gate_table: pd.DataFrame | None = None) -> DomainRanking:
    """:func:`metacog.hypotheses.miscalibration.audit.domain_table` and
    :func:`~metacog.hypotheses.miscalibration.audit.ranking` with Fisher-z intervals (a
    :class:`DomainRanking`)."""
    thr = 0.8 if threshold == "median" else float(threshold)
    domains = audit.domain_table(df, policy="c2", lam=lam, threshold=thr)
    ranks = audit.ranking(domains)
    ci = [correlation_ci(r, d, method="spearman") for r, d in zip(ranks["spearman"], ranks["domains"])]
    ranks["ci_low"], ranks["ci_high"] = [c[0] for c in ci], [c[1] for c in ci]
    if gate_table is not None:
        ranks["at_chance"] = ranks["model"].map(dict(zip(gate_table["model"], gate_table["at_chance"])))
    return DomainRanking(domains, ranks)


def audit_sentence(summary: pd.DataFrame, label: str) -> str:
    """What the policies did on one source, from :func:`policy_summary`: how often C1 and C2
    abstain, the range of the losses, and how many policies lose to abstaining on every item."""
    cautious = summary[summary["policy"].isin(("c1", "c2"))]
    above = summary["loss_ci_low"] > ABSTAIN_LOSS
    below = summary["loss_ci_high"] < ABSTAIN_LOSS
    n = len(summary)
    if above.all():
        verdict = (f"every one of the {n} model-policy pairs loses to abstaining on everything "
                   f"({fmt_num(ABSTAIN_LOSS)}): each 95% interval lies above it")
    else:
        verdict = (f"{int(above.sum())} of the {n} model-policy pairs lose to abstaining on everything "
                   f"({fmt_num(ABSTAIN_LOSS)}) and {int(below.sum())} beat it, judged on their 95% intervals")
    return (f"On {label}, the cautious policies C1 and C2 abstain on only "
            f"{fmt_range(cautious['abstain_rate'].min(), cautious['abstain_rate'].max(), digits=1, pct=True)} "
            f"of the items, and the mean policy-aware loss ranges over "
            f"{fmt_range(summary['loss'].min(), summary['loss'].max())}: {verdict}.")


def _chance_reason(gate_table: pd.DataFrame, what: str) -> str:
    at = gate_table[gate_table["at_chance"]]
    accs = ", ".join(f"{short(r.model)} {fmt_num(r.accuracy)} ({fmt_range(r.ci_low, r.ci_high)})"
                     for r in at.itertuples())
    base = fmt_list(sorted({b for b in gate_table["baseline_what"] if isinstance(b, str) and b}))
    return (f"none of the {len(gate_table)} models answers above both chance and {base} "
            f"(accuracy with exact 95% CI: {accs}); {what}. The models at chance stay in the "
            f"tables, marked, but are kept out of this verdict")


def _gated(verdict, gate_table: pd.DataFrame, what: str):
    """The verdict with the reason the gate gives when no model carries signal."""
    if gate_table["carries_signal"].any():
        return verdict
    return dataclasses.replace(verdict, reason=_chance_reason(gate_table, what), basis="")


def policy_verdicts(gains: pd.DataFrame, ranks: pd.DataFrame, gate_table: pd.DataFrame,
                    label: str) -> list:
    """Two claims of paper 2 on one source, over the models above chance only:

    1. self-critique with abstention (C2) lowers the policy-aware loss against C0 (pooled
       paired gain > 0);
    2. H_proxy ranks the domains by that gain (Spearman > 0), per model above chance.

    With no model above chance both read "insufficient evidence", saying why.
    """
    signal = _signal(gate_table)
    n_sig = {"models above chance": len(signal)}
    need = {"models above chance": 1}
    pooled = gains[(gains["model"] == "models above chance") & (gains["policy"] == "c2")]
    r = pooled.iloc[0] if len(pooled) else pd.Series({"gain": np.nan, "gain_ci_low": np.nan,
                                                      "gain_ci_high": np.nan, "items": 0})
    who = f"{label} · {fmt_list([short(m) for m in signal])}" if 0 < len(signal) <= 3 else label
    v1 = decide(f"{who}: self-critique with abstention lowers the policy-aware loss",
                "mean gain of C2 over C0", r["gain"], r["gain_ci_low"], r["gain_ci_high"], line=0.0,
                direction="greater", n={**n_sig, "items": int(r["items"])}, min_counts=need, digits=3)
    out = [_gated(v1, gate_table, "with no knowledge to protect, a lower loss from abstaining would "
                                  "say nothing about self-critique")]
    h = ranks[(ranks["predictor"] == "h_proxy") & ranks["model"].isin(signal)]
    if h.empty:
        v2 = decide(f"{label}: H_proxy ranks the domains where self-critique helps", "Spearman ρ",
                    np.nan, np.nan, np.nan, n=n_sig, min_counts=need, digits=2)
        out.append(_gated(v2, gate_table, "the gains it would rank are noise around zero"))
    for row in h.itertuples():
        out.append(decide(f"{label} · {short(row.model)}: H_proxy ranks the domains where self-critique "
                          f"helps", "Spearman ρ", row.spearman, row.ci_low, row.ci_high, line=0.0,
                          direction="greater", n={"domains": int(row.domains)},
                          min_counts={"domains": 5}, digits=2))
    return out


# ---------------------------------------------------------------------------
# pages


def display_gate(gate_table: pd.DataFrame) -> pd.DataFrame:
    """The adequacy table for a page: accuracy with its exact interval against chance and the
    majority baseline, and whether the model is at chance (kept out of the verdicts)."""
    from metacog.hypotheses.common import with_ci

    g = gate_table.rename(columns={"ci_low": "accuracy_ci_low", "ci_high": "accuracy_ci_high"})
    out = pd.DataFrame({"model": g["model"].map(short), "items": g["items"]})
    out = out.assign(**with_ci(g, "accuracy", "accuracy (exact 95% CI)", digits=2))
    if "said_yes" in g.columns:
        out["answered Yes"] = [f"{int(y)} of {int(n)}" for y, n in zip(g["said_yes"], g["items"])]
    known = g["chance_known"].astype(bool) if "chance_known" in g else pd.Series(True, index=g.index)
    out["chance"] = [fmt_num(c) if k else "unknown" for c, k in zip(g["chance"], known)]
    out["majority baseline"] = [f"{fmt_num(b)} ({w})" if isinstance(w, str) and w else "–"
                                for b, w in zip(g["baseline"], g["baseline_what"])]
    out["p"] = g["p_value"]
    out["in the verdicts"] = np.where(g["at_chance"], "no: at chance",
                                      np.where(known, "yes", "yes, not gated: chance unknown"))
    return out


def display_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`policy_summary` for a page, intervals in words."""
    from metacog.hypotheses.common import with_ci

    t = summary
    out = pd.DataFrame({"model": t["model"].map(short) + np.where(t["at_chance"] == True, " (answers at chance)", ""),  # noqa: E712
                        "policy": t["policy"].map(POLICY_NAMES), "items": t["items"]})
    out = out.assign(**with_ci(t, "loss", "loss (95% CI)", digits=3))
    out = out.assign(**with_ci(t, "abstain_rate", "abstained (exact 95% CI)", digits=1, pct=True))
    out = out.assign(**with_ci(t, "accuracy", "accuracy when answering", digits=2))
    out = out.assign(**with_ci(t, "ocw_rate", "confident and wrong", digits=1, pct=True))
    return out


def display_gains(gains: pd.DataFrame) -> pd.DataFrame:
    """:func:`loss_gains` for a page."""
    from metacog.hypotheses.common import with_ci

    t = gains
    name = [m if m == "models above chance" else short(m) + (" (answers at chance)" if c is True else "")
            for m, c in zip(t["model"], t["at_chance"])]
    out = pd.DataFrame({"model": name, "policy": t["policy"].str.upper(), "models": t["models"],
                        "items": t["items"]})
    return out.assign(**with_ci(t, "gain", "gain over C0 (95% CI)", digits=3))


def verdict_paragraph(verdicts: list) -> str:
    """The closing prose: for each kind of claim, where it is supported, not supported, or
    where the evidence is insufficient — and the reason for the latter, each distinct reason
    once (so two models at chance each have their own accuracy quoted)."""
    kinds = {}
    for v in verdicts:
        kinds.setdefault(v.claim.split(": ", 1)[-1], []).append(v)
    parts = []
    for claim, vs in kinds.items():
        said = []
        for status in (SUPPORTED, NEGLIGIBLE, NOT_SUPPORTED, INSUFFICIENT):
            names = [v.claim.split(": ", 1)[0] for v in vs if v.status == status]
            if names:
                said.append(f"{status} for {'each of ' if len(names) > 2 and len(names) == len(vs) else ''}"
                            f"{fmt_list(names)}")
        short_of = [v for v in vs if v.status == INSUFFICIENT]
        reasons = list(dict.fromkeys(v.reason for v in short_of))
        if len(reasons) == 1:
            why = f" The evidence falls short because {reasons[0]}."
        elif reasons:
            why = " The evidence falls short: " + "; ".join(
                v.reason if v.reason.startswith(short(v.claim.split(": ", 1)[0]))
                else f"for {v.claim.split(': ', 1)[0]}, {v.reason}" for v in short_of) + "."
        else:
            why = ""
        parts.append(f"“{claim[0].upper()}{claim[1:]}”: {'; '.join(said)}.{why}")
    return " ".join(parts) if parts else "No claim could be examined on these sources."


PREDICTOR_NAMES = {"h_proxy": "H_proxy", "c0_error": "C0 error rate", "c0_brier": "C0 Brier loss"}


def display_ranks(ranks: pd.DataFrame) -> pd.DataFrame:
    """:func:`domain_ranking`'s correlations for a page, intervals in words."""
    from metacog.hypotheses.common import with_ci

    t = ranks.rename(columns={"spearman": "rho", "ci_low": "rho_ci_low", "ci_high": "rho_ci_high"})
    out = pd.DataFrame({"model": t["model"].map(short) + np.where(t.get("at_chance", False) == True,  # noqa: E712
                                                                  " (answers at chance)", ""),
                        "predictor": t["predictor"].map(PREDICTOR_NAMES), "domains": t["domains"]})
    return out.assign(**with_ci(t, "rho", "Spearman ρ with the C2 gain (95% CI)", digits=2))


def abstention_sentence(summaries: dict, at_most: float = 0.05) -> str:
    """Whether the cautious policies (C1, C2) use their way out, from :func:`policy_summary`
    tables: when no model abstains on more than ``at_most`` of items, what separates the
    policies is the confidence they report."""
    rates = [t.loc[t["policy"].isin(["c1", "c2"]), "abstain_rate"] for t in summaries.values()]
    rates = pd.concat(rates) if rates else pd.Series(dtype=float)
    if rates.empty:
        return ""
    top = float(rates.max())
    shown = fmt_num(top, 1, pct=True)  # the tables' precision, so the bound is the table's largest rate
    if top <= at_most:
        return (f"The cautious policies barely use their way out (no model abstains on more than "
                f"{shown} of items), so what separates them is the confidence they report, not "
                f"their abstentions.")
    return (f"The cautious policies do use their way out (up to {shown} of items abstained), so "
            f"their losses mix abstentions with the confidence they report.")
