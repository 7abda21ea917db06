"""What the data chapter (``notebooks/data.md``) computes: every number it states, with its
interval and its n.

Counts (models, items, rows, files) are exact and carry no interval. Every estimate does:

- :func:`panel_size`, :func:`probe_counts` — models, items and rows of a tidy log;
- :func:`overview` / :func:`track_table` — accuracy, mean confidence or share confident per
  Atlas domain / Battery track, each with a percentile bootstrap over items;
- :func:`partial_models` — the Atlas models that lack items;
- :func:`mean_overconfidence` — the mean over models of confidence minus accuracy (t-interval);
- :func:`binarised_rates` / :func:`rate_spread` — the share of confident judgments per model at
  the median and at a fixed cut (Wilson), and its lowest, median and highest model
  (:func:`median_ci`: an order-statistic interval for the median over models);
- :func:`unanimity_shares` — items every model got right / wrong, with Wilson intervals;
- :func:`imputed_confidences`, :func:`imputed_accuracy`, :func:`stated_at`,
  :func:`with_confidence` — confidences a
  log filled in (Atlas's fallback 50s), counted per model and left out, and the ones kept;
- :func:`spar_coverage`, :func:`spar_left_out`, :func:`spar_lost_games`, :func:`spar_games`,
  :func:`spar_unnamed_variants`, :func:`spar_p_yes_by_decision` — the SPAR panel; :func:`spar_temperature_table` and
  :func:`spar_temperature_sentence` — its games at temperature 0 against 1;
- :func:`calibration_probes`, :func:`calibration_dropped`, :func:`key_differences_by_category`,
  :func:`key_agreement` — the LLM Calibration Study;
- :func:`models_without`, :func:`models_with_values` — which models lack / have a probe's values;
- :func:`fmt_estimate` — one row of these tables as prose: estimate, interval and n.

Interval columns are ``ci_low`` / ``ci_high`` (95% unless ``ci`` says otherwise).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from metacog.stats.intervals import bootstrap_items, proportion_ci
from metacog.tidy import tables
from metacog.tidy.report import fmt_ci, fmt_count
from metacog.tidy.phrasing import join
from metacog.pages.data.spar import (  # noqa: F401  (re-exported)
    SPAR_PROBES, TEMPERATURE_STATS, spar_coverage, spar_games, spar_left_out, spar_lost_games,
    spar_temperature_sentence, spar_temperature_table, spar_unnamed_variants)

#: The LLM Calibration Study's three confidences (probe -> the chapter's label).
CALIBRATION_PROBES = {"verbal_confidence": "stated number",
                      "logit_confidence": "from token probabilities",
                      "linguistic_confidence": "stated in words"}

_ESTIMATE = ["estimate", "ci_low", "ci_high"]


def _pooled_mean(stack: np.ndarray) -> np.ndarray:
    """Ratio of column sums of a stack of (sum, count) matrices: shape (B, n, 2) -> (B,)."""
    return stack[..., 0].sum(axis=-1) / stack[..., 1].sum(axis=-1)


def _cluster_mean(values: pd.Series, clusters: pd.Series, *, n_boot: int, ci: float,
                  seed: int) -> dict:
    """Mean of ``values`` over rows, with a percentile bootstrap that resamples whole clusters."""
    ok = values.notna().to_numpy()
    v = values.to_numpy(dtype=float)[ok]
    c = pd.Series(np.asarray(clusters)[ok])
    sums = pd.DataFrame({"s": v, "n": 1.0}).groupby(c.to_numpy(), observed=True).sum()
    est = float(v.mean()) if v.size else np.nan
    if len(sums) < 2:
        return {"estimate": est, "ci_low": np.nan, "ci_high": np.nan, "rows": int(v.size)}
    boot = bootstrap_items(_pooled_mean, sums.to_numpy(), n_boot=n_boot, ci=ci, seed=seed)
    return {"estimate": est, "ci_low": float(boot.ci_low[0]), "ci_high": float(boot.ci_high[0]),
            "rows": int(v.size)}


def _proportion(k: int, n: int, ci: float, method: str) -> dict:
    lo, hi = proportion_ci(k, n, ci=ci, method=method)
    return {"k": int(k), "n": int(n), "estimate": k / n if n else np.nan, "ci_low": lo, "ci_high": hi}


def panel_size(df: pd.DataFrame) -> pd.DataFrame:
    """One row: models, items, rows and domains (distinct non-missing values) of a tidy log."""
    return pd.DataFrame([{"models": df["model"].nunique(), "items": df["item_id"].nunique(),
                          "rows": len(df), "domains": df["domain"].nunique()}])


def probe_counts(df: pd.DataFrame) -> pd.DataFrame:
    """One row per probe present: models, items, rows and usable (non-missing) confidences."""
    g = df.groupby("probe", observed=True)
    return pd.DataFrame({"models": g["model"].nunique(), "items": g["item_id"].nunique(),
                         "rows": g.size(), "usable": g["confidence"].count()}).reset_index()


def overview(atlas: pd.DataFrame, *, n_boot: int = 2000, ci: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per Atlas domain and over all ('all'): items, models, rows, then one row per statistic
    (accuracy, mean_confidence) with its estimate and interval.

    The estimate is the mean over the model x item rows that have the value (``rows``: a
    missing confidence is not counted); its interval is a percentile bootstrap
    that resamples items (all the rows of an item together, since models share items).
    Columns domain, items, models, rows, statistic, estimate, ci_low, ci_high.
    """
    parts = [(str(d), g) for d, g in atlas.groupby("domain", observed=True, sort=True)] + [("all", atlas)]
    rows = []
    for name, g in parts:
        for stat, col in (("accuracy", "correct"), ("mean_confidence", "confidence")):
            r = _cluster_mean(g[col], g["item_id"], n_boot=n_boot, ci=ci, seed=seed)
            rows.append({"domain": name, "items": g["item_id"].nunique(), "models": g["model"].nunique(),
                         "rows": r["rows"], "statistic": stat, **{k: r[k] for k in _ESTIMATE}})
    return pd.DataFrame(rows)


def imputed_confidences(df: pd.DataFrame) -> pd.DataFrame:
    """Per model with at least one confidence the log filled in (``parse_status ==
    'imputed'``, confidence missing): rows, imputed (left out), their share of the model's
    rows and the rows left with a confidence. Most imputed first. Columns model, rows,
    imputed, share, with_confidence."""
    imputed = (df["parse_status"] == "imputed").fillna(False).to_numpy()
    per = pd.DataFrame({"model": df["model"].astype(str).to_numpy(), "imputed": imputed,
                        "has": df["confidence"].notna().to_numpy()}).groupby("model")
    out = pd.DataFrame({"rows": per.size(), "imputed": per["imputed"].sum().astype(int),
                        "with_confidence": per["has"].sum().astype(int)})
    out["share"] = out["imputed"] / out["rows"]
    out = out[out["imputed"] > 0].rename_axis("model").reset_index()
    return out[["model", "rows", "imputed", "share", "with_confidence"]].sort_values(
        ["imputed", "model"], ascending=[False, True], ignore_index=True)


def imputed_accuracy(df: pd.DataFrame, model: str, *, ci: float = 0.95,
                     method: str = "wilson") -> pd.DataFrame:
    """One model's accuracy on its rows with a confidence and on its imputed rows (their
    answers are kept), each with a Wilson (or exact) interval: are the rows it keeps easier
    or harder than the ones it loses? Columns rows ('with a confidence', 'imputed'), n, k,
    estimate, ci_low, ci_high."""
    own = df[(df["model"].astype(str) == model).to_numpy()]
    y = own["correct"].to_numpy(dtype=float)
    kinds = {"with a confidence": own["confidence"].notna().to_numpy(),
             "imputed": (own["parse_status"] == "imputed").fillna(False).to_numpy()}
    rows = []
    for kind, mask in kinds.items():
        v = y[mask & ~np.isnan(y)]
        rows.append({"rows": kind, **_proportion(int(v.sum()), int(v.size), ci, method)})
    return pd.DataFrame(rows, columns=["rows", "n", "k", *_ESTIMATE])


def stated_at(df: pd.DataFrame, value: float) -> pd.DataFrame:
    """Per model, the kept confidences exactly equal to ``value`` (e.g. Atlas's 0.5 that a
    model stated itself). Columns model, rows; models with none left out."""
    hit = df.loc[(df["confidence"] == value).to_numpy(), "model"].astype(str)
    out = hit.value_counts().rename_axis("model").rename("rows").reset_index()
    return out.sort_values(["rows", "model"], ascending=[False, True], ignore_index=True)


def with_confidence(df: pd.DataFrame) -> pd.DataFrame:
    """The rows that carry a confidence, so that accuracy and mean confidence are taken over
    the same rows (an imputed or unparsed confidence is missing; its answer is not)."""
    return df[df["confidence"].notna().to_numpy()]


def partial_models(atlas: pd.DataFrame) -> pd.DataFrame:
    """The models that lack at least one of the log's items: model, items, missing (fewest first)."""
    total = atlas["item_id"].nunique()
    per = atlas.groupby("model", observed=True)["item_id"].nunique()
    out = pd.DataFrame({"model": per.index.astype(str), "items": per.to_numpy(),
                        "missing": total - per.to_numpy()})
    return out[out["missing"] > 0].sort_values(["items", "model"], ignore_index=True)


def track_table(battery: pd.DataFrame, *, n_boot: int = 2000, ci: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per Battery track and probe: items, models, rows and the share of confident judgments
    (KEEP, BET, answering directly) with a percentile bootstrap over items.
    Columns track, probe, items, models, rows, share_confident, ci_low, ci_high."""
    rows = []
    for (track, probe), g in battery.groupby(["track", "probe"], observed=True, sort=True):
        r = _cluster_mean(g["confidence"], g["item_id"], n_boot=n_boot, ci=ci, seed=seed)
        rows.append({"track": track, "probe": probe, "items": g["item_id"].nunique(),
                     "models": g["model"].nunique(), "rows": r["rows"], "share_confident": r["estimate"],
                     "ci_low": r["ci_low"], "ci_high": r["ci_high"]})
    return pd.DataFrame(rows)


def declined_judgments(battery: pd.DataFrame) -> str:
    """One sentence counting the KEEP/BET judgments recorded for items a model declined to
    answer (Battery T6; ``parse_status == 'no_answer'``, confidence missing), which no analysis
    uses, with the model that has most of them."""
    from metacog.data.battery import NO_ANSWER

    gone = battery[(battery["parse_status"].astype(str) == NO_ANSWER).to_numpy()]
    if gone.empty:
        return "No judgment is recorded for an item its model declined to answer."
    per = gone.groupby(gone["model"].astype(str)).size().sort_values(ascending=False)
    probes = join(sorted(gone["probe"].astype(str).unique()))
    top = (f"; {per.index[0]} has {fmt_count(int(per.iloc[0]), 'of them', 'of them')}"
           if len(per) > 1 else f", all of them {per.index[0]}'s")
    return (f"Where a model declined to answer a T6 item, the files still record a judgment of "
            f"the answer ({probes}): {fmt_count(len(gone), 'such judgment')} by "
            f"{fmt_count(len(per), 'model')}{top}. There is no answer to judge, so they carry no "
            f"confidence and no analysis uses them.")


def mean_overconfidence(per_model_table: pd.DataFrame, *, ci: float = 0.95) -> pd.DataFrame:
    """Mean over models of overconfidence (mean confidence minus accuracy, one value per model,
    as :func:`metacog.tidy.tables.per_model` gives it), with a Student t-interval over models
    (models are the units; items are not resampled). One row: estimate, ci_low, ci_high, sd, n.
    """
    x = per_model_table["overconfidence"].dropna().to_numpy(dtype=float)
    n = x.size
    est = float(x.mean()) if n else np.nan
    sd = float(x.std(ddof=1)) if n > 1 else np.nan
    half = float(sps.t.ppf(0.5 + ci / 2, n - 1)) * sd / np.sqrt(n) if n > 1 else np.nan
    return pd.DataFrame([{"estimate": est, "ci_low": est - half, "ci_high": est + half, "sd": sd, "n": n}])


def binarised_rates(conf: pd.DataFrame, cut: float = 0.5, *, ci: float = 0.95,
                    method: str = "wilson") -> pd.DataFrame:
    """Per model and rule ('median': each model's own median; 'fixed': ``cut``): the threshold
    used, items (n), confident judgments (k) and their share with a Wilson (or exact) interval,
    after :func:`metacog.tidy.tables.binarize` of an items x models confidence matrix.
    Columns rule, model, threshold, n, k, estimate, ci_low, ci_high."""
    rows = []
    for rule in ("median", "fixed"):
        rep = tables.binarize_report(conf, rule, cut=cut)
        for r in rep.itertuples(index=False):
            k = int(round(r.yes_share * r.items)) if r.items else 0
            rows.append({"rule": rule, "model": r.model, "threshold": r.cut,
                         **_proportion(k, int(r.items), ci, method)})
    return pd.DataFrame(rows, columns=["rule", "model", "threshold", "n", "k", *_ESTIMATE])


def median_ci(values, *, ci: float = 0.95) -> tuple[float, float]:
    """Distribution-free interval for a median from order statistics: [x_(j), x_(n+1-j)] with
    the largest j whose binomial tail P(Bin(n, 1/2) < j) is at most (1 - ci) / 2, so that it
    covers at least ``ci``. (nan, nan) when n is too small for that (n < 6 at 95%)."""
    x = np.sort(np.asarray(values, dtype=float)[~np.isnan(np.asarray(values, dtype=float))])
    n = x.size
    ok = [j for j in range(1, n // 2 + 1) if sps.binom.cdf(j - 1, n, 0.5) <= (1 - ci) / 2]
    if not ok:
        return (np.nan, np.nan)
    j = max(ok)
    return (float(x[j - 1]), float(x[n - j]))


def rate_spread(rates: pd.DataFrame, *, ci: float = 0.95) -> pd.DataFrame:
    """Per rule of :func:`binarised_rates`: the lowest and highest model's share (with its own
    interval and n items) and the median over models (with :func:`median_ci`, n models).
    Columns rule, statistic ('lowest', 'median', 'highest'), model, n, unit, estimate, ci_low, ci_high."""
    rows = []
    for rule, g in rates.groupby("rule", sort=False):
        g = g.dropna(subset=["estimate"]).sort_values(["estimate", "model"])
        for stat, r in (("lowest", g.iloc[0]), ("highest", g.iloc[-1])):
            rows.append({"rule": rule, "statistic": stat, "model": r["model"], "n": int(r["n"]),
                         "unit": "items", **{k: float(r[k]) for k in _ESTIMATE}})
        lo, hi = median_ci(g["estimate"], ci=ci)
        rows.insert(len(rows) - 1, {"rule": rule, "statistic": "median", "model": "", "n": len(g),
                                    "unit": "models", "estimate": float(g["estimate"].median()),
                                    "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


def unanimity_shares(df: pd.DataFrame, *, by: str = "domain", probe: str | None = None,
                     ci: float = 0.95, method: str = "wilson") -> pd.DataFrame:
    """Shares of items on which every model that answered them was right ('all_correct'),
    wrong ('all_wrong') or either ('unanimous'), per ``by`` group and over all items ('all'),
    from :func:`metacog.tidy.tables.unanimity`, each with a Wilson (or exact) interval over items.
    Columns <by>, statistic, n (items), k, estimate, ci_low, ci_high."""
    u = tables.unanimity(df, by=by, probe=probe)
    rows = []
    for group, r in u.iterrows():
        n = int(r["items"])
        for stat in ("all_correct", "all_wrong", "unanimous"):
            rows.append({by: group, "statistic": stat, **_proportion(int(round(r[stat] * n)), n, ci, method)})
    return pd.DataFrame(rows, columns=[by, "statistic", "n", "k", *_ESTIMATE])


def spar_p_yes_by_decision(spar: pd.DataFrame, *, n_boot: int = 2000, ci: float = 0.95,
                           seed: int = 0) -> pd.DataFrame:
    """SPAR's answer-or-pass game, on the rows with a token probability: the mean probability
    of the "answer" digit per decision ('answer', 'pass'), pooled over model x question rows.
    The interval is a percentile bootstrap that resamples models (a model's rows move together:
    models differ far more than questions). Columns decision, models, n (model x question
    rows), estimate, ci_low, ci_high."""
    pro = spar[(spar["probe"] == "prospective") & spar["p_yes"].notna()]
    rows = []
    for decision, g in pro.groupby(pro["decision"].astype(str), sort=True):
        r = _cluster_mean(g["p_yes"], g["model"].astype(str), n_boot=n_boot, ci=ci, seed=seed)
        rows.append({"decision": decision, "models": g["model"].nunique(), "n": r["rows"],
                     **{k: r[k] for k in _ESTIMATE}})
    return pd.DataFrame(rows, columns=["decision", "models", "n", *_ESTIMATE])


def calibration_probes(cal: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Per confidence of the LLM Calibration Study: models, items, usable values, values missing
    upstream and values outside 0 to 1 (set missing on load; counted over the included models
    of :func:`metacog.data.calibration_study.calibration_study_summary`)."""
    counts = probe_counts(cal).set_index("probe")
    included = summary[summary["included"].astype(bool)]
    rows = []
    for probe, label in CALIBRATION_PROBES.items():
        c = counts.loc[probe] if probe in counts.index else pd.Series({"models": 0, "items": 0, "rows": 0, "usable": 0})
        out = int(included[f"{probe}_out_of_range"].sum())
        rows.append({"confidence": label, "models": int(c["models"]), "items": int(c["items"]),
                     "usable values": int(c["usable"]),
                     "missing upstream": int(c["rows"] - c["usable"]) - out,
                     "outside 0 to 1, set missing": out})
    return pd.DataFrame(rows)


def calibration_dropped(summary: pd.DataFrame) -> list[str]:
    """Models of the calibration summary left out (no extracted answer at all)."""
    return summary.loc[~summary["included"].astype(bool), "model"].astype(str).tolist()


def models_without(df: pd.DataFrame, probe: str) -> list[str]:
    """Models of a tidy log that have no row of ``probe``, sorted."""
    # unique() before str: a log has millions of rows but few models
    has = df.loc[df["probe"] == probe, "model"].unique()
    return sorted({str(m) for m in df["model"].unique()} - {str(m) for m in has})


def models_with_values(df: pd.DataFrame, probe: str, column: str) -> list[str]:
    """Models of a tidy log with at least one non-missing ``column`` on ``probe``, sorted."""
    rows = df[(df["probe"] == probe) & df[column].notna()]
    return sorted({str(m) for m in rows["model"].unique()})


def _category_sizes(cal: pd.DataFrame) -> pd.Series:
    return cal.drop_duplicates("item_id").groupby("domain", observed=True).size()


def key_differences_by_category(keys: pd.DataFrame, cal: pd.DataFrame, *, ci: float = 0.95,
                                method: str = "wilson") -> pd.DataFrame:
    """Per MMLU-Pro category: questions (n), questions whose study key differs from MMLU-Pro's
    (k) and that share with a Wilson (or exact) interval; most differences first.
    ``keys`` is :func:`metacog.data.calibration_study.calibration_study_key_differences`.
    Columns category, n, k, estimate, ci_low, ci_high."""
    sizes = _category_sizes(cal)
    differ = keys.groupby("category").size()
    rows = [{"category": str(c), **_proportion(int(differ.get(c, 0)), int(n), ci, method)}
            for c, n in sizes.items()]
    out = pd.DataFrame(rows, columns=["category", "n", "k", *_ESTIMATE])
    return out.sort_values(["k", "category"], ascending=[False, True], ignore_index=True)


def key_agreement(keys: pd.DataFrame, cal: pd.DataFrame, *, ci: float = 0.95,
                  method: str = "wilson") -> pd.DataFrame:
    """One row: questions (n), questions where the study's key agrees with MMLU-Pro's (k), and
    that share with a Wilson (or exact) interval. Columns n, k, estimate, ci_low, ci_high."""
    n = cal["item_id"].nunique()
    return pd.DataFrame([_proportion(n - len(keys), n, ci, method)])


def fmt_estimate(row, noun: str, *, digits: int | None = None, pct: bool = False,
                 estimate: bool = True, plural: str | None = None) -> str:
    """A row with estimate, ci_low, ci_high and n as prose: '0.84 (95% CI 0.80 to 0.88; 11 models)'
    for ``noun='model'`` (singular; ``plural`` when it is irregular); with ``estimate=False`` only
    the bracket's content ('95% CI 0.80 to 0.88; 11 models')."""
    text = fmt_ci(row["estimate"], row["ci_low"], row["ci_high"], digits=digits, pct=pct)
    n = fmt_count(row["n"], noun, plural)
    if "(" not in text:
        return f"{text} ({n})" if estimate else n
    head, inner = text.split(" (", 1)
    inner = f"{inner[:-1]}; {n}"
    return f"{head} ({inner})" if estimate else inner


#: The Battery model whose KEEP/BET judgments run against its correctness in the source files.
BATTERY_ODD_MODEL = "DeepSeek R1"


def battery_model_note(battery: pd.DataFrame, model: str = BATTERY_ODD_MODEL) -> str:
    """One sentence on a Battery model's KEEP judgments against its own correctness, split
    into tracks T1-T5 (judgment after answering) and T6 (where a declined item is scored wrong
    yet the file still records a KEEP, which the loader keeps as its decision with no
    confidence). Every number is counted from ``battery``."""
    kw = battery[(battery["model"] == model) & (battery["probe"] == "keep_withdraw")]
    if kw.empty:
        return f"Battery has no KEEP/WITHDRAW rows for {model}."
    t6 = kw["track"].astype(str) == "t6_prospective"
    main, pro = kw[~t6], kw[t6]
    right = main["correct"] == 1
    kept = int((main.loc[right, "confidence"] == 1).sum())
    choice = battery[(battery["model"] == model) & (battery["probe"] == "path_choice")]
    declined_ids = set(choice.loc[choice["decision"].astype(str) == "DECLINE", "item_id"])
    dec = pro[pro["item_id"].isin(declined_ids)]
    dec_keep = int((dec["decision"].astype(str) == "KEEP").sum())
    dec_right = int((dec["correct"] == 1).sum())
    judged = kw[kw["confidence"].notna()]
    r = float(np.corrcoef(judged["confidence"], judged["correct"])[0, 1]) \
        if judged["confidence"].nunique() > 1 and judged["correct"].nunique() > 1 else float("nan")
    r_txt = "undefined" if np.isnan(r) else f"{r:.2f}".replace("-", "−")
    return (f"Battery · {model}: the source files score it right on {int(right.sum())} of "
            f"{len(main)} items in tracks T1–T5 yet record KEEP on only {kept} of those "
            f"{int(right.sum())}, and in T6 it declines {len(dec)} of {len(pro)} items, which are "
            f"scored wrong ({dec_right} right) while {dec_keep} of them still carry KEEP (left out "
            f"here: there is no answer to keep); over the {len(judged)} items it judged, its KEEP "
            f"correlates r = {r_txt} with its correctness. Apart from the judgments of declined "
            f"items, the loader copies these columns unchanged: this is how the published files record the model, so a "
            f"result it drives describes that record.")
