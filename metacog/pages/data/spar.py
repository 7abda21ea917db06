"""The SPAR parts of the data chapter (re-exported by :mod:`metacog.pages.data`): which runs
are used and why, and the answer-or-pass game at temperature 0 against 1."""

from __future__ import annotations

import pandas as pd

from metacog.tidy import phrasing
from metacog.tidy.report import fmt_ci, fmt_count, fmt_list

#: SPAR's four kinds of judgment (probe -> the chapter's label), in the chapter's order.
SPAR_PROBES = {"answer": "answer (letter probability)",
               "prospective": "answer or pass (before answering)",
               "verbal_confidence": "own chance of being right (before answering)",
               "other_confidence": "share of people right (judging others)"}


def spar_coverage(spar: pd.DataFrame) -> pd.DataFrame:
    """Items per SPAR model (rows) and kind of judgment (columns, labelled as in
    :data:`SPAR_PROBES`); 0 where the model has no such run."""
    counts = spar.groupby(["model", "probe"], observed=True)["item_id"].nunique().unstack()
    out = counts.reindex(columns=list(SPAR_PROBES)).fillna(0).astype(int).rename(columns=SPAR_PROBES)
    out.index = out.index.astype(str).rename("model")
    out.columns.name = None
    return out


def _short_reason(reason: str) -> str:
    if reason.startswith("incomplete:"):
        return "incomplete (fewer than 450 valid judgments)"
    if reason.startswith("scored against"):
        return reason.split(" (")[0]
    return reason


def spar_left_out(runs: pd.DataFrame) -> pd.DataFrame:
    """The SPAR log files left out (:func:`metacog.data.spar.spar_runs` with chosen False), by
    reason: files and the models they belong to. Columns reason, files, models."""
    out = runs.loc[~runs["chosen"].astype(bool)]
    reasons = out["reason"].map(_short_reason)
    rows = []
    for reason, g in out.groupby(reasons, sort=True):
        rows.append({"reason": reason, "files": len(g), "models": ", ".join(sorted(set(g["model"].astype(str))))})
    return pd.DataFrame(rows, columns=["reason", "files", "models"])


def spar_lost_games(runs: pd.DataFrame) -> list[str]:
    """Models with answer-or-pass files of which none is chosen (the rule left them no game)."""
    pro = runs[runs["probe"] == "prospective"]
    return sorted(set(pro["model"].astype(str)) - set(pro.loc[pro["chosen"].astype(bool), "model"].astype(str)))


def spar_games(runs: pd.DataFrame) -> pd.DataFrame:
    """The answer-or-pass runs used (:func:`metacog.data.spar.spar_runs`, chosen): model,
    temperature, wording (an id of the instructions' text) and whether the file is one the
    repository names as a copy (``_bak``, ``_g``). Columns model, temperature, wording, copy."""
    pro = runs[(runs["probe"] == "prospective") & runs["chosen"].astype(bool)]
    out = pd.DataFrame({"model": pro["model"].astype(str), "temperature": pro["temperature"].astype(float),
                        "wording": pro["wording"].astype(str),
                        "copy": pro["file"].astype(str).str.contains(r"_game_data_(?:bak|g)\.json$")})
    return out.sort_values(["temperature", "model"], ignore_index=True)


def spar_unnamed_variants(runs: pd.DataFrame) -> list[str]:
    """Models with a run in the no-points ('consider') framing whose file name does not say
    so (only its ``run_parameters`` do)."""
    hit = (runs["variant"] == "consider").fillna(False) & ~runs["file"].astype(str).str.contains("_consider_")
    return sorted(set(runs.loc[hit.to_numpy(), "model"].astype(str)))


#: spar_temperature_check statistics -> the chapter's label.
TEMPERATURE_STATS = {"answer_rate": "share answered", "auroc": "AUROC of the decision",
                     "auroc_p_yes": "AUROC of P(answer digit)", "agreement": "same decision at 0 and 1"}


def spar_temperature_table(check: pd.DataFrame, *, digits: int = 2) -> pd.DataFrame:
    """:func:`metacog.data.spar.spar_temperature_check` as one row per model and statistic:
    the estimate with its interval at temperature 0 and at 1 (agreement: in the first
    column), and whether the two runs share a wording. Columns model, statistic,
    temperature 0, temperature 1, same wording."""
    rows = []
    for model, g in check.groupby("model", sort=True):
        runs = g.dropna(subset=["temperature"]).drop_duplicates("temperature")
        same = runs["wording"].nunique() == 1
        for stat, label in TEMPERATURE_STATS.items():
            part = g[g["statistic"] == stat]
            if part.empty:
                continue
            cell = {t: fmt_ci(r["estimate"], r["ci_low"], r["ci_high"], digits=digits)
                    for t, r in zip(part["temperature"], part.to_dict("records"))}
            if stat == "agreement":
                cell = {0.0: next(iter(cell.values())), 1.0: ""}
            rows.append({"model": model, "statistic": label, "temperature 0": cell.get(0.0, "n/a"),
                         "temperature 1": cell.get(1.0, "n/a"), "same wording": "yes" if same else "no"})
    return pd.DataFrame(rows, columns=["model", "statistic", "temperature 0", "temperature 1", "same wording"])


def _overlap(part: pd.DataFrame) -> bool:
    a, b = part.sort_values("temperature").to_dict("records")
    return a["ci_low"] <= b["ci_high"] and b["ci_low"] <= a["ci_high"]


def _between(low: str, high: str) -> str:
    """'between −0.10 and +0.21', or 'the same +0.05 in every model' when the ends print alike."""
    return f"the same {low} in every model" if low == high else f"between {low} and {high}"


def spar_temperature_sentence(check: pd.DataFrame) -> str:
    """What :func:`metacog.data.spar.spar_temperature_check` shows, in one computed paragraph:
    how many models, whether their two runs also differ in wording, how far the share
    answered and the AUROC of the decision move from temperature 0 to 1, in how many
    models the two intervals are disjoint, and what that means for pooling runs."""
    models = sorted(check["model"].unique())
    if not models:
        return "No model has a usable answer-or-pass game at both temperatures."
    pairs = check.dropna(subset=["temperature"])
    differ = [m for m, g in pairs.groupby("model") if g.drop_duplicates("temperature")["wording"].nunique() > 1]
    text = [f"{fmt_count(len(models), 'model')} ({', '.join(models)}) "
            f"{phrasing.verb(len(models), 'has', 'have')} a usable game at both temperatures; "
            + (f"for {fmt_list(differ, of=len(models), noun='models')} the two runs also differ in "
               "wording, so the comparison mixes temperature with wording. " if differ else
               "each model's two runs share one wording. ")]
    moved = {}
    for stat, label in (("answer_rate", "the share answered"), ("auroc", "the AUROC of the decision")):
        d = pairs[pairs["statistic"] == stat]
        by = {m: g for m, g in d.groupby("model") if g["temperature"].nunique() == 2}
        if not by:
            continue
        delta = [float(g.sort_values("temperature")["estimate"].diff().iloc[-1]) for g in by.values()]
        apart = [m for m, g in by.items() if not _overlap(g)]
        moved[stat] = bool(apart)
        text.append(f"From temperature 0 to 1 {label} changes by "
                    f"{_between(phrasing.signed(min(delta)), phrasing.signed(max(delta)))}; the two intervals are disjoint for "
                    f"{fmt_list(apart, of=len(by), noun='models')}. ")
    agree = check[check["statistic"] == "agreement"]
    if len(agree):
        text.append(f"The two runs make the same decision on "
                    f"{phrasing.span(agree['estimate'].min(), agree['estimate'].max(), fmt=phrasing.percent)} "
                    f"of the items. ")
    if moved.get("answer_rate") and not moved.get("auroc"):
        text.append("So the protocol changes how often a model answers, while these intervals "
                    "resolve no change in how well its decisions separate its right answers from its "
                    "wrong ones (one run per temperature, so run-to-run noise is not separated from "
                    "temperature); shares answered are comparable only within one protocol.")
    elif moved.get("auroc"):
        text.append("So the protocol changes how well the decisions separate right from wrong "
                    "answers: games at different temperatures are not one measurement.")
    elif "answer_rate" in moved:
        text.append("These intervals resolve no change in either the share answered or the AUROC "
                    "(one run per temperature and model).")
    return "".join(text).strip()
