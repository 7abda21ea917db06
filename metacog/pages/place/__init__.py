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

from functools import lru_cache

import numpy as np
import pandas as pd

from metacog.elicit.protocols.ask import PROBES, n_options, to_tidy  # noqa: F401 - part of this page's API
from metacog.hypotheses.adequacy import adequacy
from metacog.hypotheses.verdict import Verdict, cap, decide
from metacog.pages.place.stats import (ALPHA, LABELS, METRICS, MIN_CLASS, MIN_ITEMS, POWER, holm,  # noqa: F401
                                       metric_ranks, minimum_detectable, panel_mean_diff, recalibrate)
from metacog.stats.population import internal_population

PANELS = ("calibration_study",)
CLAIM = "its own confidence tells its right answers from its wrong ones better than the panel's"
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


from metacog.pages.place.placement import Placement  # noqa: E402,F401 (what place() returns)


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
    """Every model's loading and threshold on the panel's shared confidence axis (its first factor).

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


def first_items(new: pd.DataFrame, n_items: int) -> pd.DataFrame:
    """The rows of the first ``n_items`` distinct items in the file's order (a recorded run is in
    draw order, so its first k items are a random sample of MMLU-Pro)."""
    keep = list(dict.fromkeys(new["item_id"].astype(str)))[: int(n_items)]
    return new[new["item_id"].astype(str).isin(set(keep))].reset_index(drop=True)


# The page's words, tables and figure (metacog.pages.place.display), importable from here as before.
from metacog.pages.place.display import (  # noqa: E402,F401
    axis_sentence, headline_sentence, reply_counts, mdd_sentence, replies_sentence,
    panel_sentence, rank_table, recalibration_sentence, metrics_phrase, smece_sentence,
    population_table, truncation_table, truncation_sentence, population_figure, protocol_table,
    prompt_markdown)
