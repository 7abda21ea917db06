"""Reshape tidy response tables: wide items x models matrices, binarisation, summaries.

These are the small steps every chapter shares: pivot a probe to an items x
models matrix, binarise verbal confidence, count how often models agree.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def wide(df: pd.DataFrame, value: str = "confidence", *, probe: str | None = None,
         complete: bool = False) -> pd.DataFrame:
    """Items x models matrix of ``value`` (one probe at a time).

    ``complete=True`` keeps only items every model has a value for.
    """
    if probe is not None:
        df = df[df["probe"] == probe]
    probes = df["probe"].unique()
    if len(probes) > 1:
        raise ValueError(f"wide: the table mixes probes {sorted(probes)}; pass probe=... to pick one.")
    dup = df.duplicated(["item_id", "model"])
    if dup.any():
        r = df[dup.to_numpy()].iloc[0]
        raise ValueError(f"wide: model {r['model']!r} has item {r['item_id']!r} more than once "
                         f"(repeated samples?); filter to one sample first.")
    m = df.pivot(index="item_id", columns="model", values=value).astype(float)
    m.columns.name = "model"
    if complete:
        m = m.dropna()
    return m


def _how(how, cut) -> tuple[str, float | None]:
    """('median', None) or ('fixed', cut) from ``how`` given as 'median', 'fixed' or a number."""
    if isinstance(how, str) and how not in ("median", "fixed"):
        try:
            how = float(how)
        except ValueError:
            raise ValueError(f"binarize: how={how!r}; use 'median', 'fixed' (with cut=...) or a "
                             "number (the fixed cut).") from None
    if isinstance(how, bool) or not isinstance(how, (str, int, float, np.integer, np.floating)):
        raise ValueError(f"binarize: how={how!r}; use 'median', 'fixed' (with cut=...) or a number.")
    if not isinstance(how, str):
        how, cut = "fixed", float(how)
    if how == "median":
        return "median", None
    if cut is None or not np.isfinite(float(cut)):
        raise ValueError(f"binarize: how='fixed' needs a finite cut, got cut={cut!r}.")
    return "fixed", float(cut)


def _plan(conf: pd.DataFrame, how, cut) -> pd.DataFrame:
    """Per model: the rule, the threshold and whether the comparison is strict (see :func:`binarize`)."""
    how, cut = _how(how, cut)
    values = conf.to_numpy(dtype=float)
    if how == "fixed":
        seen = values[~np.isnan(values)]
        lo, hi = min(0.0, seen.min(initial=0.0)), max(1.0, seen.max(initial=1.0))
        if not lo <= cut <= hi:
            scale = f"{lo:g}–{hi:g}"
            hint = (f"; {cut:g} looks like a 0–100 scale: use {cut / 100:g}" if hi <= 1 < cut <= 100
                    else "")
            raise ValueError(f"binarize: cut={cut:g} lies outside the confidence scale: confidence "
                             f"is on {scale} here{hint}.")
    present = ~np.isnan(values)
    n = present.sum(axis=0)
    binary = (n > 0) & ((values == 0) | (values == 1) | ~present).all(axis=0)
    if how == "fixed":
        rule = np.where(binary, "binary (unchanged)", "fixed: at or above")
        return pd.DataFrame({"rule": rule, "cut": np.where(binary, np.nan, cut), "strict": False},
                            index=conf.columns.rename("model"))
    with np.errstate(invalid="ignore", divide="ignore"):
        med = np.full(values.shape[1], np.nan)
        some = n > 0
        med[some] = np.nanmedian(values[:, some], axis=0)
        at_or_above = (values >= med).sum(axis=0) / n
        above = (values > med).sum(axis=0) / n
    strict = np.abs(above - 0.5) < np.abs(at_or_above - 0.5)
    rule = np.select([binary, n == 0, strict], ["binary (unchanged)", "median: no values",
                                                "median: strictly above"], "median: at or above")
    return pd.DataFrame({"rule": rule, "cut": np.where(binary, np.nan, med), "strict": strict & ~binary},
                        index=conf.columns.rename("model"))


def binarize(conf: pd.DataFrame, how: str | float = "median", cut: float = 0.5) -> pd.DataFrame:
    """Binarise an items x models confidence matrix; returns the same shape with 1 (yes), 0 or NaN.

    ``how="median"``: a per-model cut at the model's own median. The rule: yes when the
    confidence is at or above the median, except when ties at the median push the
    yes-share further from one half than "strictly above" would; then yes is strictly
    above the median. Whichever of the two gives a yes-share closer to 0.5 is used (at
    or above on a draw). A model with a single repeated value comes out constant.
    ``how="fixed"``: yes when confidence >= ``cut``. ``how`` may also be a number: the
    fixed cut itself (``binarize(conf, 0.7)``), so a chapter parameter can be "median"
    or a number. The cut must lie on the confidence scale (0-1 in the tidy schema;
    ``cut=90`` there is an error that suggests 0.9).
    Columns that hold only 0/1 already pass through unchanged; missing stays missing.
    :func:`binarize_report` says which rule each model got and its yes-share.
    """
    plan = _plan(conf, how, cut)
    x = conf.to_numpy(dtype=float)
    th, strict = plan["cut"].to_numpy(dtype=float), plan["strict"].to_numpy()
    with np.errstate(invalid="ignore"):
        yes = np.where(strict, x > th, x >= th).astype(float)
    binary = (plan["rule"] == "binary (unchanged)").to_numpy()
    yes[:, binary] = x[:, binary]
    yes[np.isnan(x)] = np.nan
    return pd.DataFrame(yes, index=conf.index, columns=conf.columns)


def binarize_report(conf: pd.DataFrame, how: str | float = "median", cut: float = 0.5) -> pd.DataFrame:
    """One row per model of :func:`binarize`: model, rule used, cut value, items, yes-share, constant.

    ``constant`` is True when the binarised column has one value only (it carries no
    information about items: a judgment that never varies).
    """
    plan = _plan(conf, how, cut)
    b = binarize(conf, how, cut)
    n = b.notna().sum()
    yes = b.mean()
    return pd.DataFrame({
        "model": plan.index, "rule": plan["rule"].to_numpy(), "cut": plan["cut"].to_numpy(),
        "items": n.to_numpy(), "yes_share": yes.to_numpy(),
        "constant": (b.nunique() <= 1).to_numpy(),
    })


def per_model(df: pd.DataFrame, *, probe: str | None = None) -> pd.DataFrame:
    """One row per model: items, accuracy, mean confidence and their gap (overconfidence)."""
    if probe is not None:
        df = df[df["probe"] == probe]
    g = df.groupby("model", observed=True)
    out = pd.DataFrame({
        "items": g["item_id"].nunique(),
        "accuracy": g["correct"].mean(),
        "mean_confidence": g["confidence"].mean(),
    })
    out["overconfidence"] = out["mean_confidence"] - out["accuracy"]
    return out.sort_values("accuracy", ascending=False)


def agreement(matrix: pd.DataFrame, *, min_models: int = 2) -> pd.DataFrame:
    """Per item: how many models gave a value, the share of 1s, and whether all agree.

    ``matrix`` is items x models with 0/1 (or missing). Items with fewer than
    ``min_models`` values are dropped.
    """
    values = matrix.to_numpy(dtype=float)
    n = np.sum(~np.isnan(values), axis=1)
    ones = np.nansum(values, axis=1)
    out = pd.DataFrame({"n_models": n, "share_ones": np.where(n > 0, ones / np.maximum(n, 1), np.nan)},
                       index=matrix.index)
    out = out[out["n_models"] >= min_models]
    out["unanimous"] = (out["share_ones"] == 0) | (out["share_ones"] == 1)
    out["unanimous_value"] = np.where(out["unanimous"], out["share_ones"], np.nan)
    return out


def unanimity(df: pd.DataFrame, *, by: str = "domain", value: str = "correct",
              probe: str | None = None) -> pd.DataFrame:
    """Share of items on which all models agree on ``value``, overall and per ``by`` group."""
    if probe is not None:
        df = df[df["probe"] == probe]
    m = wide(df, value)
    if by == "all":
        groups = pd.Series("all", index=m.index)
    else:
        groups = df.drop_duplicates("item_id").set_index("item_id")[by].reindex(m.index).fillna("(none)")
    a = agreement(m)
    a[by] = groups.reindex(a.index)
    rows = []
    groups_and_all = [] if by == "all" else list(a.groupby(by, observed=True))
    for name, part in groups_and_all + [("all", a)]:
        rows.append({by: name, "items": len(part),
                     "all_correct" if value == "correct" else "all_one": float((part["unanimous_value"] == 1).mean()),
                     "all_wrong" if value == "correct" else "all_zero": float((part["unanimous_value"] == 0).mean()),
                     "unanimous": float(part["unanimous"].mean())})
    return pd.DataFrame(rows).set_index(by)


def conformance(df: pd.DataFrame, *, min_rate: float = 0.8) -> pd.DataFrame:
    """Schema conformance per model and probe: the share of replies parsed as the format asks.

    Returns one row per model with a column per probe (share of rows with
    ``parse_status == 'ok'``), the overall rate, and ``conforms`` (overall rate
    at least ``min_rate``). Paper 1 leaves out models that cannot follow the
    output format; chapters do the same with :func:`conforming_models`.
    """
    ok = df.assign(ok=(df["parse_status"] == "ok").astype(float))
    out = ok.pivot_table(index="model", columns="probe", values="ok", aggfunc="mean")
    out.columns.name = None
    out["overall"] = ok.groupby("model")["ok"].mean()
    out["conforms"] = out["overall"] >= min_rate
    return out


def conforming_models(df: pd.DataFrame, *, min_rate: float = 0.8) -> list[str]:
    """Models whose replies parse at least ``min_rate`` of the time."""
    c = conformance(df, min_rate=min_rate)
    return list(c.index[c["conforms"]])


def context_accuracy(df: pd.DataFrame) -> pd.DataFrame:
    """Per model: accuracy with the context ('answer') and without it ('answer_no_context')."""
    parts = {}
    for probe, label in (("answer", "with context"), ("answer_no_context", "without context")):
        sub = df[df["probe"] == probe]
        if len(sub):
            parts[label] = sub.groupby("model")["correct"].mean()
    out = pd.DataFrame(parts)
    if {"with context", "without context"} <= set(out.columns):
        out["context gain"] = out["with context"] - out["without context"]
    return out


def base_rates(df: pd.DataFrame) -> pd.DataFrame:
    """Per model and judgment probe: items judged, share of 'yes' (confident), mean P(Yes)."""
    judged = df[df["probe"].isin(["prospective", "counterfactual", "c0", "c1", "c2"])]
    return judged.groupby(["model", "probe"]).agg(
        items=("item_id", "nunique"), share_yes=("confidence", "mean"), mean_p_yes=("p_yes", "mean"),
        accuracy=("correct", "mean")).reset_index()


def judgment_auroc(df: pd.DataFrame, probe: str = "prospective") -> pd.DataFrame:
    """Per model: how well a judgment probe predicts correctness (AUROC, NaN if one class).

    Two scores: the binary decision (``confidence``) and the first-token
    ``P(Yes)`` (``p_yes``), which ranks items more finely when the backend gives it.
    """
    from metacog.stats import auroc

    rows = []
    for model, g in df[df["probe"] == probe].groupby("model"):
        g = g.dropna(subset=["correct"])
        row = {"model": model, "items": len(g), "accuracy": g["correct"].mean()}
        for score in ("confidence", "p_yes"):
            ok = g.dropna(subset=[score])
            two = ok["correct"].nunique() == 2 and len(ok) >= 2
            row[f"auroc_{score}"] = auroc(ok["correct"], ok[score]) if two else np.nan
        rows.append(row)
    cols = ["model", "items", "accuracy", "auroc_confidence", "auroc_p_yes"]
    return pd.DataFrame(rows, columns=cols).set_index("model")  # empty when nobody was asked
