"""Your model in the panel (``notebooks/place.md``): one new model, asked the way a public
panel was asked, placed among the panel's models.

- :func:`to_tidy` — the rows of :func:`metacog.elicit.protocols.ask.ask` as a tidy responses
  table (one row per item x probe: ``verbal_confidence``, the stated number, and
  ``logit_confidence``, the mean token probability of the reply, as the study named them);
- :func:`load_new` — the new model's tidy table from a file or a recorded run;
- :func:`score_truncated` — a reply cut at the reply cap before it gave an answer and a
  confidence is *missing* (the headline) or *wrong* (the sensitivity row);
- :func:`place` — the placement (:class:`Placement`): internal vs population AUROC with
  DeLong's paired interval (:func:`metacog.stats.population.internal_population`) and its
  minimum detectable difference for the new model, the same row for every panel model on the
  same items with Holm's correction over the panel's family of tests, the panel-level mean
  difference with a bootstrap interval over items and models, its rank on type-2 AUROC, ECE,
  smooth ECE, Brier and accuracy with bootstrap rank intervals, Platt and isotonic
  recalibration on held-out items, the adequacy gate and the gated verdict.

The page's items are the new model's *scored* items on the probe: asked, not cut at the cap
before answering, and with a confidence. Every model's row, rank and accuracy is on these
items, so every accuracy on the page has one denominator: the items that enter the AUROC.

"Population" is the mean confidence of the *other* models on the same item (the model itself
left out). The panel's rows are computed on the panel alone (the newcomer does not enter
their population), the newcomer's with all panel models as its population.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd

from metacog.elicit.protocols.ask import PROBES, n_options, to_tidy  # noqa: F401 - part of this page's API
from metacog.hypotheses.adequacy import adequacy
from metacog.hypotheses.verdict import Verdict, cap, decide
from metacog.pages.place.stats import (LABELS, METRICS, holm, metric_ranks, minimum_detectable,
                                       panel_mean_diff, recalibrate)
from metacog.stats.population import internal_population
from metacog.tidy.report import escape_text, fmt_ci, fmt_count, fmt_num

PANELS = ("calibration_study",)
#: Fewest items a placement needs (the gate's ``min_items``), and correct and wrong answers.
MIN_ITEMS, MIN_CLASS = 30, 10
CLAIM = "its own confidence tells its right answers from its wrong ones better than the panel's"
#: The level and power of the minimum detectable difference, and the family-wise level of Holm's
#: correction over the panel's tests.
ALPHA, POWER = 0.05, 0.8
#: How a reply cut at the cap without an answer and a confidence is scored: the headline's
#: treatment first, then the sensitivity row's.
TRUNCATION = ("missing", "wrong")


def cut_unanswered(rows: pd.DataFrame) -> pd.Series:
    """True for a row whose reply was cut at the reply cap (``finish_reason`` 'length') before it
    gave both an answer letter and a stated confidence (``parse_status`` not 'ok'). A cut reply
    that gave both had finished its answer and is scored as it stands."""
    if "finish_reason" not in rows.columns:
        return pd.Series(False, index=rows.index)
    cut = rows["finish_reason"].astype(str) == "length"
    ok = rows["parse_status"].astype(str) == "ok" if "parse_status" in rows.columns else pd.Series(True, index=rows.index)
    return cut & ~ok


def score_truncated(rows: pd.DataFrame, how: str = "missing") -> pd.DataFrame:
    """``rows`` with every reply of :func:`cut_unanswered` scored as ``how`` says.

    'missing': no correctness and no confidence, so it enters no AUROC and no accuracy (the
    model was stopped before it could answer; the study's cap of 1024 tokens might have let it).
    'wrong': a wrong answer (correct 0), keeping the confidence the probe has for it (a cut
    reply's mean token probability) and 0, the lowest confidence, where it stated none.
    """
    if how not in TRUNCATION:
        raise ValueError(f"score_truncated: how={how!r}; one of {list(TRUNCATION)}.")
    out = rows.copy()
    cut = cut_unanswered(out).to_numpy()
    if how == "missing":
        out["correct"] = out["correct"].astype(float).where(~cut)
        out["confidence"] = out["confidence"].astype(float).where(~cut)
    else:
        out["correct"] = out["correct"].astype(float).where(~cut, 0.0)
        out["confidence"] = out["confidence"].astype(float).where(~cut | out["confidence"].notna(), 0.0)
    return out


def load_new(source: str) -> pd.DataFrame:
    """The new model's tidy table: a recorded run's name (runs.yml) or a .parquet/.csv file."""
    from pathlib import Path

    from metacog.data import recorded

    p = Path(str(source)).expanduser()
    if p.suffix in (".parquet", ".csv") and p.exists():
        df = pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p, dtype={"item_id": str})
    else:
        df = recorded.load(str(source))
    need = {"model", "item_id", "probe", "confidence", "correct"} - set(df.columns)
    if need:
        raise ValueError(f"{source}: the responses lack column(s) {sorted(need)}.")
    df = df.assign(item_id=df["item_id"].astype(str), model=df["model"].astype(str),
                   probe=df["probe"].astype(str))
    if "n_options" not in df.columns or df["n_options"].isna().all():
        df["n_options"] = df["item_id"].map(n_options()).astype(float)
    return df


@lru_cache(maxsize=4)
def _panel(panel: str, probe: str) -> pd.DataFrame:
    """The panel's rows for one probe: item_id, model, confidence, correct (read once per process)."""
    from metacog import data

    df = data.load(panel)
    df = df.loc[df["probe"].astype(str) == probe, ["item_id", "model", "confidence", "correct"]]
    return df.assign(item_id=df["item_id"].astype(str), model=df["model"].astype(str))


def panel_tables(items, probe: str, panel: str = "calibration_study") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(confidence, correct): items x panel models on ``items`` for ``probe``."""
    if panel not in PANELS:
        raise ValueError(f"panel {panel!r}: placement reproduces {list(PANELS)} only.")
    df = _panel(panel, probe)
    df = df[df["item_id"].isin(set(map(str, items)))]
    conf = df.pivot_table(index="item_id", columns="model", values="confidence", aggfunc="first", dropna=False)
    corr = df.pivot_table(index="item_id", columns="model", values="correct", aggfunc="first", dropna=False)
    order = [str(i) for i in items if str(i) in conf.index]
    return conf.reindex(order), corr.reindex(index=order, columns=conf.columns)


@dataclass
class Placement:
    model: str
    panel: str
    probe: str
    headline: dict  # the new model's internal vs population row
    population: pd.DataFrame  # every model's row, the new one marked (column 'new')
    ranks: pd.DataFrame  # the new model's rank per metric
    recalibration: pd.DataFrame
    gate: dict
    verdict: Verdict
    probes: pd.DataFrame = field(default_factory=pd.DataFrame)  # the headline on each probe
    axis: pd.DataFrame = field(default_factory=pd.DataFrame)  # loading/threshold per model ('new')
    truncation: pd.DataFrame = field(default_factory=pd.DataFrame)  # the headline, cut replies missing / wrong
    panel_mean: dict = field(default_factory=dict)  # mean internal − population over the panel
    n_asked: int = 0  # items asked on the probe
    n_cut: int = 0  # of them, cut at the cap before answering (missing in the headline)

    def summary(self) -> pd.DataFrame:
        h = self.headline
        return pd.DataFrame([{"model": self.model, "panel": self.panel, "probe": self.probe,
                              "n_items": h["n_items"], "n_correct": h["n_correct"],
                              "auroc_internal": h["auroc_internal"],
                              "auroc_population": h["auroc_population"], "diff": h["diff"],
                              "ci_low": h["ci_low"], "ci_high": h["ci_high"], "mdd": h.get("mdd", np.nan),
                              "gate": self.gate["status"], "verdict": self.verdict.status}])


def gate_status(row: dict) -> str:
    """'adequate', or the plainest failed rule: 'at chance', 'too few items', 'too few correct',
    'too few parsed'."""
    failed = [f for f in str(row.get("failed", "")).split(",") if f]
    for rule, word in (("items", "too few items"), ("chance", "at chance"),
                       ("correct", "too few correct"), ("parsed", "too few parsed")):
        if rule in failed:
            return word
    return "adequate"


def _gate(new: pd.DataFrame, probe: str) -> dict:
    rows = new[new["probe"] == probe].assign(probe="answer")
    table = adequacy(rows, probe="answer", chance="n_options", min_items=MIN_ITEMS, min_correct=MIN_CLASS)
    row = table.iloc[0].to_dict() if len(table) else {"failed": "items", "reason": "no answers", "items": 0}
    row["status"] = gate_status(row)
    return row


def panel_gates(confidence: pd.DataFrame, correct: pd.DataFrame, options: pd.Series) -> pd.Series:
    """The adequacy gate of :func:`_gate` applied to every column of an items x models table:
    chance from each item's number of options, at least :data:`MIN_ITEMS` items and
    :data:`MIN_CLASS` right answers, and a reply counted as parsed where it has a confidence.
    One status per model ('adequate', 'at chance', ...)."""
    long = correct.stack(future_stack=True).rename("correct").reset_index()
    long.columns = ["item_id", "model", "correct"]
    conf = confidence.reindex_like(correct).stack(future_stack=True).to_numpy()
    long = long.assign(probe="answer", n_options=long["item_id"].map(options).to_numpy(),
                       decision=np.where(long["correct"].notna(), "answered", None),
                       parse_status=np.where(pd.notna(conf), "ok", "unparseable"))
    long = long[long["correct"].notna()]
    table = adequacy(long, probe="answer", chance="n_options", min_items=MIN_ITEMS, min_correct=MIN_CLASS)
    status = {str(r["model"]): gate_status(r) for r in table.to_dict("records")}
    return pd.Series({str(m): status.get(str(m), "too few items") for m in correct.columns})


def place(new: pd.DataFrame, *, panel: str = "calibration_study", probe: str = "verbal_confidence",
          n_boot: int = 1000, seed: int = 0) -> Placement:
    """Place the one model of tidy table ``new`` among ``panel``'s models on its items."""
    if probe not in PROBES:
        raise ValueError(f"probe {probe!r}: one of {list(PROBES)}.")
    models = new["model"].astype(str).unique()
    if len(models) != 1:
        raise ValueError(f"place: the responses hold {len(models)} models ({list(models)[:5]}); pass one.")
    model = str(models[0])
    label = f"{model.split('/')[-1]} (new)"
    asked = new[new["probe"] == probe].drop_duplicates("item_id")
    scored = score_truncated(new, "missing")
    mine = scored[scored["probe"] == probe].drop_duplicates("item_id").set_index("item_id")
    items = _scored_items(mine) or list(mine.index)
    mine = mine.reindex(items)
    conf, corr = panel_tables(items, probe, panel)
    conf, corr = conf.reindex(items), corr.reindex(index=items)
    conf_all = conf.assign(**{label: mine["confidence"].astype(float)})
    corr_all = corr.assign(**{label: mine["correct"].astype(float)})
    head = internal_population(conf_all[[label] + list(conf.columns)], corr_all[[label] + list(conf.columns)],
                               min_class=MIN_CLASS).iloc[0].to_dict()
    head["mdd"] = minimum_detectable(head["se"], alpha=ALPHA, power=POWER)
    panel_rows = internal_population(conf, corr, min_class=MIN_CLASS)
    gate = _gate(scored, probe)
    # one gate for every row: the new model's from its own replies, each panel model's from its
    # answers on the same items (chance from each item's options)
    options = mine["n_options"] if "n_options" in mine.columns else pd.Series(dtype=float)
    panel_rows["gate"] = panel_rows["model"].astype(str).map(panel_gates(conf, corr, options)).to_numpy()
    population = pd.concat([pd.DataFrame([head]).assign(new=True, gate=gate["status"]),
                            panel_rows.assign(new=False)], ignore_index=True)
    population["sufficient"] = population["sufficient"].astype(bool) & (population["gate"] == "adequate")
    # the panel's family of tests: one per panel model that passes the gate (the new model's is
    # the page's one headline test, outside the family)
    family = ~population["new"] & population["sufficient"]
    h_ = holm(population["p_value"].where(family), alpha=ALPHA)
    population["p_holm"], population["holm_reject"] = h_["p_holm"].to_numpy(), h_["reject"].to_numpy()
    panel_mean = panel_mean_diff(conf, corr, list(population.loc[family, "model"]), n_boot=n_boot, seed=seed)
    ranks = metric_ranks(conf_all, corr_all, n_boot=n_boot, seed=seed)
    v = decide(CLAIM, "internal − population AUROC", head["diff"], head["ci_low"], head["ci_high"],
               line=0.0, direction="greater",
               n={"items": int(head["n_items"]), "correct": int(head["n_correct"]),
                  "wrong": int(head["n_items"] - head["n_correct"])},
               min_counts={"correct": MIN_CLASS, "wrong": MIN_CLASS})
    if gate["status"] != "adequate":
        v = cap(v, [f"the model is {gate['status']} ({gate.get('reason', '')})"])
    per_probe = []
    for p in PROBES:
        sub = scored[scored["probe"] == p].drop_duplicates("item_id").set_index("item_id")
        if sub["confidence"].notna().sum() == 0:
            continue
        # the adequacy gate stops the verdict on every probe as it does on the headline, so a
        # probe is 'sufficient' only with enough right and wrong answers and the gate passed
        g = _gate(scored, p)["status"]
        row = against_panel(sub, p, panel, label) | {"probe": p, "gate": g}
        row["sufficient"] = bool(row["sufficient"]) and g == "adequate"
        per_probe.append(row)
    truncation = []
    for how in TRUNCATION:
        s = score_truncated(new, how)
        row = against_panel(s[s["probe"] == probe].drop_duplicates("item_id").set_index("item_id"), probe,
                            panel, label)
        truncation.append({"cut replies": how} | row | {"accuracy": row["n_correct"] / row["n_items"]
                                                        if row["n_items"] else np.nan})
    return Placement(model, panel, probe, head, population,
                     ranks[ranks["model"] == label].reset_index(drop=True),
                     recalibrate(mine["confidence"], mine["correct"], seed=seed), gate, v,
                     pd.DataFrame(per_probe), confidence_axis(conf_all, label),
                     pd.DataFrame(truncation).drop(columns=["model", "se"]), panel_mean,
                     n_asked=len(asked), n_cut=int(cut_unanswered(asked).sum()))


def _scored_items(rows: pd.DataFrame) -> list:
    """The items (index) of one probe's rows that have both a correctness and a confidence."""
    return list(rows.index[rows["correct"].notna() & rows["confidence"].notna()])


def against_panel(rows: pd.DataFrame, probe: str, panel: str, label: str) -> dict:
    """The internal vs population row of the new model (``rows``: one probe, indexed by item)
    on its scored items, against the panel's confidence of the same probe on those items."""
    items = _scored_items(rows)
    c, y = panel_tables(items, probe, panel)
    c, y = c.reindex(items), y.reindex(index=items)
    others = list(c.columns)
    c[label], y[label] = rows["confidence"].reindex(items).astype(float), rows["correct"].reindex(items).astype(float)
    return internal_population(c[[label] + others], y[[label] + others], min_class=MIN_CLASS).iloc[0].to_dict()


def confidence_axis(confidence: pd.DataFrame, new: str) -> pd.DataFrame:
    """Every model's loading and threshold on the panel's rank-one confidence axis.

    Each model's confidence is cut at its own median (1 = above it) and the one-factor probit
    model of :func:`metacog.stats.axis.axis_positions` is fitted to all models together, the new
    one included. Empty when the fit fails (too few items or models with both values).
    """
    from metacog.stats.axis import axis_positions

    X = confidence.gt(confidence.median()).astype(float).where(confidence.notna())
    X = X.loc[:, X.nunique() > 1]
    if new not in X.columns or X.shape[0] < MIN_ITEMS:
        return pd.DataFrame()
    try:
        m = axis_positions(X).models
    except (ValueError, np.linalg.LinAlgError):
        return pd.DataFrame()
    return m.reset_index(names="model").assign(new=lambda d: d["model"] == new)


def axis_sentence(r: Placement) -> str:
    """Where the new model sits on the panel's confidence axis, or why it is not shown."""
    a = r.axis
    if a.empty:
        return (f"The panel's confidence axis is not fitted: it needs at least {MIN_ITEMS} items on "
                f"which the new model's confidence varies.")
    me, others = a[a["new"]].iloc[0], a[~a["new"]]
    rank = int((others["loading"] > me["loading"]).sum()) + 1
    return (f"On the panel's rank-one confidence axis (one factor fitted to the {len(a)} models whose "
            f"confidence, cut at its own median, varies on these items), {escape_text(r.model)} loads {fmt_num(me['loading'], 2)} (rank {rank} of "
            f"{len(a)}; panel models {fmt_num(others['loading'].min(), 2)} to "
            f"{fmt_num(others['loading'].max(), 2)}, median {fmt_num(others['loading'].median(), 2)}) "
            f"with threshold {fmt_num(me['threshold'], 2)} (panel {fmt_num(others['threshold'].min(), 2)} "
            f"to {fmt_num(others['threshold'].max(), 2)}). A high loading means its confidence rises and "
            f"falls with the other models' on the same items.")


# ---- sentences computed from a Placement --------------------------------------------------------

_GATE_WORDS = {"at chance": "The model answers at chance",
               "too few items": "There are too few items to judge",
               "too few correct": "The model has too few correct answers to judge",
               "too few parsed": "Too few of its replies could be parsed"}


def headline_sentence(r: Placement) -> str:
    h = r.headline
    diff = fmt_ci(h["diff"], h["ci_low"], h["ci_high"], digits=3)
    n, k = int(h["n_items"]), int(h["n_correct"])
    cut = (f"; {r.n_cut} cut at the reply cap before answering are missing, not wrong, and left out"
           if r.n_cut else "")
    s = (f"On {fmt_count(n, 'item')} with a scored answer and a {r.probe.replace('_', ' ')} (of "
         f"{r.n_asked} asked{cut}), {escape_text(r.model)} answered {k} correctly: accuracy "
         f"{fmt_num(k / n if n else np.nan, 3)}, out of these {n}, the denominator of every accuracy "
         f"on this page. Its own confidence has AUROC "
         f"{fmt_num(h['auroc_internal'], 3)} for telling its right answers from its wrong ones; the "
         f"panel's mean confidence on the same items has {fmt_num(h['auroc_population'], 3)}; "
         f"internal − population {diff}.")
    if r.gate["status"] != "adequate":
        s += (f" {_GATE_WORDS[r.gate['status']]}: {r.gate.get('reason', '')}. No claim about its "
              f"metacognition rests on these numbers.")
    return s


def reply_counts(new: pd.DataFrame) -> dict:
    """The replies of one probe split four ways, which add up to the replies: finished or cut at
    the reply cap (``finish_reason`` 'length'), crossed with usable (an answer letter and a
    stated confidence both parsed) or not. A cut reply can still be usable when the answer and
    the confidence came before the cap."""
    one = new[new["probe"] == new["probe"].iloc[0]]
    usable = (one["parse_status"].astype(str) == "ok") & one["confidence"].notna()
    cut = (one["finish_reason"].astype(str) == "length") if "finish_reason" in one else pd.Series(False, one.index)
    return {"n": len(one), "finished_usable": int((usable & ~cut).sum()),
            "finished_unusable": int((~usable & ~cut).sum()), "cut_usable": int((usable & cut).sum()),
            "cut_unusable": int((~usable & cut).sum())}


def mdd_sentence(r: Placement) -> str:
    """The headline comparison's minimum detectable difference, from its standard error."""
    h = r.headline
    from scipy import stats as sps

    if not np.isfinite(h.get("mdd", np.nan)):
        return "The comparison has no standard error, so no minimum detectable difference."
    s = (f"With its standard error of {fmt_num(h['se'], 3)} (DeLong), this comparison detects a true "
         f"internal − population difference of {fmt_num(h['mdd'], 3)} or more with probability "
         f"{POWER:g} at two-sided level {ALPHA:g} (({fmt_num(sps.norm.ppf(1 - ALPHA / 2), 2)} + "
         f"{fmt_num(sps.norm.ppf(POWER), 2)}) × standard error), the smallest "
         f"difference these {int(h['n_items'])} items can show")
    if h["ci_low"] <= 0 <= h["ci_high"]:
        s += ("; a true difference smaller than that is likely to be missed, so an interval "
              "containing 0 here does not show that there is none")
    return s + "."


def replies_sentence(new: pd.DataFrame, max_tokens: int = 0) -> str:
    """The reply cap the replies were asked with, and how many were parsed and how many were cut
    at it, as counts that partition the replies (:func:`reply_counts`)."""
    from metacog.elicit.protocols import calibration_study as cs

    study = cs.protocol().max_tokens
    cap_ = int(max_tokens) if max_tokens else study
    c = reply_counts(new)
    n_cut = c["cut_usable"] + c["cut_unusable"]
    s = (f"The replies were asked with a cap of {cap_} tokens"
         + (" (the study's own)" if cap_ == study else f" (the study asked with {study})")
         + f". Of {fmt_count(c['n'], 'reply', 'replies')}, {c['finished_usable']} finished and gave both an "
         f"answer letter and a stated confidence")
    if c["finished_unusable"]:
        s += f"; {c['finished_unusable']} finished without both"
    if n_cut:
        s += (f"; {n_cut} {'was' if n_cut == 1 else 'were'} cut at the reply-length cap before "
              f"finishing, of which {c['cut_usable']} still gave both (and {'is' if c['cut_usable'] == 1 else 'are'} used) and "
              f"{c['cut_unusable']} did not")
    s += ". "
    if c["cut_unusable"]:
        s += ("A reply cut at the cap before it gave an answer and a confidence is missing, not wrong: "
              "the model was stopped before it could answer, so the headline leaves it out, and the "
              "sensitivity table below counts it wrong instead. ")
    return s + "A reply that finished without an answer counts as wrong, as in the study."


def panel_sentence(r: Placement) -> str:
    """The panel-level estimate (mean internal − population over the models that pass the gate,
    bootstrap over items and models) and the Holm-corrected count of the per-model tests."""
    p = r.population[~r.population["new"]]
    ok = p[p["sufficient"]]
    m = r.panel_mean
    rej = ok[ok["holm_reject"].astype(bool)]
    above, below = int((rej["diff"] > 0).sum()), int((rej["diff"] < 0).sum())
    s = (f"Of the {len(p)} panel models, {len(ok)} pass the same gate as the new model on these "
         f"items (above chance, at least {MIN_CLASS} right and {MIN_CLASS} wrong answers). ")
    if not len(ok) or not np.isfinite(m.get("mean", np.nan)):
        return s + "No panel-level estimate can be made without them."
    lo, hi = m["ci_low"], m["ci_high"]
    where = ("The interval lies above 0: on average a panel model's own confidence tells its right answers from its "
             "wrong ones better than its population's does" if lo > 0 else
             "The interval lies below 0: on average a panel model's own confidence does worse than its population's"
             if hi < 0 else "The interval contains 0: on these items the data cannot tell whether the "
             "average panel model's own confidence does better or worse than its population's, and an "
             f"average difference beyond {fmt_num(lo, 3)} to {fmt_num(hi, 3)} is ruled out at the 95% level")
    s += (f"Across them the mean internal − population AUROC is {fmt_num(m['mean'], 3)}, with a 95% "
          f"interval from {fmt_num(lo, 3)} to {fmt_num(hi, 3)} (percentiles of {m['n_boot']} "
          f"bootstrap resamples of both the items and the models). {where}. This estimate, not a "
          f"count of models, is the page's statement about the panel. ")
    s += (f"Model by model, DeLong's test of each difference is one of a family of {len(ok)}; with "
          f"Holm's correction (family-wise error {ALPHA:g}) {above} "
          f"{'has' if above == 1 else 'have'} internal AUROC above population and {below} below it "
          f"(column p_holm of the table). Were no model different from its population, about "
          f"{fmt_num(ALPHA * len(ok), 1)} of {len(ok)} uncorrected tests would still reach p < {ALPHA:g}.")
    return s


def rank_table(r: Placement) -> pd.DataFrame:
    t = r.ranks[["metric", "value", "rank", "rank_ci_low", "rank_ci_high", "n_models", "n_items"]].copy()
    t["metric"] = t["metric"].map(LABELS)
    return t


def recalibration_sentence(r: Placement) -> str:
    t = r.recalibration.set_index("method")
    if t.loc["Platt", "n_items"] < t.loc["as stated", "n_items"]:
        return ("Too few right or wrong answers to fit a recalibration map on both halves of the "
                "items, so recalibration is not assessed.")
    e0, ep, ei = t.loc["as stated", "ece"], t.loc["Platt", "ece"], t.loc["isotonic", "ece"]
    s0, sp, si = t.loc["as stated", "smece"], t.loc["Platt", "smece"], t.loc["isotonic", "smece"]
    b0, bp, bi = t.loc["as stated", "brier"], t.loc["Platt", "brier"], t.loc["isotonic", "brier"]

    def change(a, b):
        return f"{'lowers' if b < a else 'raises'} it to {fmt_num(b, 3)}"

    s = (f"Held out, the stated confidence has ECE {fmt_num(e0, 3)}, smooth ECE {fmt_num(s0, 3)} and "
         f"Brier {fmt_num(b0, 3)}. Platt scaling {change(e0, ep)} (smooth ECE {fmt_num(sp, 3)}, Brier "
         f"{fmt_num(bp, 3)}); isotonic regression {change(e0, ei)} (smooth ECE {fmt_num(si, 3)}, Brier "
         f"{fmt_num(bi, 3)}). An increasing map moves the confidence toward the accuracy without "
         f"changing which answers it ranks above which, so it cannot add information about which "
         f"answers are right; isotonic regression is increasing by construction (it can only merge "
         f"levels into ties).")
    k = int(t.loc["Platt", "decreasing"])
    slopes = [t.loc["Platt", c] for c in ("slope_1", "slope_2")]
    if k:
        s += (f" Platt's fitted slope is negative on {k} of the 2 halves (slopes "
              f"{fmt_num(slopes[0], 2)} and {fmt_num(slopes[1], 2)}): on the items it was fitted to, "
              f"higher stated confidence went with fewer right answers, so the map is decreasing and "
              f"reverses the order of the answers it is applied to. That is why Platt's held-out AUROC "
              f"({fmt_num(t.loc['Platt', 'auroc'], 3)}) differs from the stated confidence's "
              f"({fmt_num(t.loc['as stated', 'auroc'], 3)}): a sign the stated confidence carries too "
              f"little ranking information for its direction to hold from one half of the items to the "
              f"other, not information added or lost by recalibration.")
    else:
        s += (f" Platt's fitted slope is positive on both halves ({fmt_num(slopes[0], 2)} and "
              f"{fmt_num(slopes[1], 2)}), so it keeps the stated ranking.")
    return s


def metrics_phrase() -> str:
    """The ranked metrics as the page's prose lists them, from :data:`METRICS`."""
    names = [LABELS[m].replace(" (10 bins)", "") for m in METRICS]
    return ", ".join(names[:-1]) + " and " + names[-1]


def smece_sentence(r: Placement) -> str:
    """The new model's smooth ECE beside its binned ECE, and whether either is just the gap
    between its mean confidence and its accuracy (residuals of one sign: nothing cancels)."""
    t = r.ranks.set_index("metric")
    e, s = t.loc["ece", "value"], t.loc["smece", "value"]
    a = r.recalibration.set_index("method").loc["as stated"]
    gap = abs(a["mean_confidence"] - a["accuracy"])
    out = f"{escape_text(r.model)}'s smooth ECE is {fmt_num(s, 3)}, its ECE with 10 bins {fmt_num(e, 3)}."
    if np.isfinite(s) and abs(s - gap) < 1e-3:
        out += (f" The smooth ECE equals the gap between its mean confidence and its accuracy "
                f"({fmt_num(gap, 3)}): its confidence is off in the same direction at every level, "
                f"so no part of the error cancels and no bandwidth changes it.")
    return out


def first_items(new: pd.DataFrame, n_items: int) -> pd.DataFrame:
    """The rows of the first ``n_items`` distinct items in the file's order (a recorded run is in
    draw order, so its first k items are a random sample of MMLU-Pro)."""
    keep = list(dict.fromkeys(new["item_id"].astype(str)))[: int(n_items)]
    return new[new["item_id"].astype(str).isin(set(keep))].reset_index(drop=True)


def population_table(r: Placement) -> pd.DataFrame:
    """Every model's internal vs population row, best difference first, the new one marked;
    p_holm is Holm's adjusted p-value within the panel's family (empty for the new model and
    for a panel model outside the family)."""
    t = r.population.sort_values("diff", ascending=False, na_position="last").reset_index(drop=True)
    t.insert(0, "rank", np.arange(1, len(t) + 1))
    t["model"] = np.where(t["new"], "▶ " + t["model"].astype(str), t["model"].astype(str))
    return t.drop(columns=["new", "se", "holm_reject"])


def truncation_table(r: Placement) -> pd.DataFrame:
    """The headline with cut replies missing (as on the page) and counted wrong (sensitivity)."""
    t = r.truncation.copy()
    t["cut replies"] = t["cut replies"].map({"missing": "missing (headline)", "wrong": "counted wrong"})
    return t[["cut replies", "n_items", "n_correct", "accuracy", "auroc_internal", "auroc_population",
              "diff", "ci_low", "ci_high", "p_value"]]


def truncation_sentence(r: Placement) -> str:
    """What counting the cut replies wrong does to the headline (the sensitivity row)."""
    t = r.truncation.set_index("cut replies")
    if not r.n_cut:
        return "No reply was cut at the cap before answering, so both rows are the same."
    a, b = t.loc["missing"], t.loc["wrong"]

    def side(row):
        return "lies above 0" if row["ci_low"] > 0 else "lies below 0" if row["ci_high"] < 0 else "contains 0"

    same = side(a) == side(b)
    return (f"Counting the {r.n_cut} cut replies wrong (with confidence 0 where the reply stated none) "
            f"puts {int(b['n_items'])} items in the comparison instead of {int(a['n_items'])}, moves "
            f"accuracy from {fmt_num(a['accuracy'], 3)} to {fmt_num(b['accuracy'], 3)} and the "
            f"internal − population difference from {fmt_num(a['diff'], 3)} to {fmt_num(b['diff'], 3)}; "
            f"its interval {side(b)} under both scorings, so the headline's reading does not hinge on "
            f"how they are scored" if same else
            f"Counting the {r.n_cut} cut replies wrong (with confidence 0 where the reply stated none) "
            f"puts {int(b['n_items'])} items in the comparison instead of {int(a['n_items'])}, moves "
            f"accuracy from {fmt_num(a['accuracy'], 3)} to {fmt_num(b['accuracy'], 3)} and the "
            f"internal − population difference from {fmt_num(a['diff'], 3)} to {fmt_num(b['diff'], 3)}, "
            f"and its interval from one that {side(a)} to one that {side(b)}: the headline depends on how the cut "
            f"replies are scored") + "."


def population_figure(r: Placement):
    """Internal − population AUROC of every model with its (uncorrected, per-model) 95% DeLong
    interval, sorted; the new model in red, the panel mean and its bootstrap interval as a band."""
    import matplotlib.pyplot as plt

    p = r.population.dropna(subset=["diff"]).sort_values("diff").reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(6.5, max(4.0, 0.11 * len(p) + 1.4)))
    y = np.arange(len(p))
    m = r.panel_mean
    if np.isfinite(m.get("mean", np.nan)):
        ax.axvspan(m["ci_low"], m["ci_high"], color="tab:blue", alpha=0.15, lw=0,
                   label=f"panel mean, {m['n_models']} gated models (bootstrap 95%)")
        ax.axvline(m["mean"], color="tab:blue", lw=1)
    ax.axvline(0, color="0.2", lw=0.8, ls="--")
    kinds = [("panel: below the gate", ~p["new"] & ~p["sufficient"], dict(mfc="white", color="0.65")),
             ("panel: gated, not kept by Holm", ~p["new"] & p["sufficient"] & ~p["holm_reject"].astype(bool),
              dict(mfc="white", color="0.25")),
             ("panel: kept by Holm", ~p["new"] & p["holm_reject"].astype(bool), dict(color="0.25")),
             (r.model.replace("$", r"\$") + " (new)", p["new"], dict(color="crimson", ms=5))]
    for name, sel, style in kinds:
        q = p[sel.to_numpy(bool)]
        if len(q):
            ax.errorbar(q["diff"], y[sel.to_numpy(bool)], xerr=[q["diff"] - q["ci_low"], q["ci_high"] - q["diff"]],
                        fmt="o", lw=0.8, label=name, **({"ms": 3} | style))
    ax.set_yticks(y, [str(s).replace("$", r"\$") for s in p["model"]], fontsize=5)
    ax.set_ylim(-1, len(p))
    ax.set_xlabel("internal − population AUROC (95% DeLong interval, per model)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def protocol_table(max_tokens: int = 0) -> pd.DataFrame:
    """How the panel was asked and how the new model is asked: one row per setting
    (``max_tokens``: the cap the new model was asked with; 0: the study's own)."""
    from metacog.data.designs import DESIGNS
    from metacog.elicit.protocols import calibration_study as cs

    p = cs.protocol()
    cap_ = (f"{p.max_tokens}" if not max_tokens or int(max_tokens) == p.max_tokens
            else f"{int(max_tokens)} for this model (the study: {p.max_tokens})")
    rows = [("prompt", "MULTI_CHOICE_NO_OPTIONS_SHARED_SAMPLING_TEMPLATE (conf_mode 'sampling', choices=0)"),
            ("system message", p.system), ("temperature", f"{p.temperature:g} for this model (the panel: {DESIGNS[('calibration_study', 'verbal_confidence')].temperature})"), ("max_tokens", cap_),
            ("token log-probabilities", f"on, top {p.top_logprobs}"),
            ("answer", "extract_answer: the last 'Answer:' letter, then the study's fallback patterns"),
            ("stated confidence", "extract_verbal_numerical_confidence / 100"),
            ("logit confidence", "calculate_logit_perplexity: mean probability of the reply's tokens"),
            ("key", "the study's own (it differs from the MMLU-Pro mirror on 173 questions)"),
            ("source", p.source)] + [("assumption", n) for n in p.notes]
    return pd.DataFrame(rows, columns=["setting", "value"])


def prompt_markdown() -> str:
    """The study's prompt template verbatim, as a Markdown code block."""
    from metacog.elicit.protocols import calibration_study as cs

    return ("The prompt, verbatim (then one line per option, 'A) ...'):\n\n"
            f"````text\n{cs.protocol().template}\n````")
