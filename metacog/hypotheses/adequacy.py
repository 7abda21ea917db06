"""The model adequacy gate: does a model's answering carry any signal worth judging?

A model that answers yes/no items at 0.51 accuracy, or gets 3% of ten-option items right, has
no knowledge for its confidence to track; verdicts about its metacognition say nothing. This
module checks that first.

:func:`adequacy` — one row per model: items with a known outcome, accuracy with its exact
(Clopper-Pearson) 95% interval, the chance level, the majority baseline (e.g. always
answering Yes), a one-sided binomial p-value of the accuracy against the higher of those
two, ``carries_signal`` and a plain ``reason``. :func:`signal_models` lists the models that
pass. :func:`judgment_gate` checks a judgment probe for constant (or nearly constant)
judgments.

Which answers are judged. ``correct`` on a judgment row ('prospective', 'counterfactual')
is not the judgment's own accuracy: :mod:`metacog.elicit` copies it from the same model's
'answer_no_context' attempt at that item. The gate always judges the *attempt that produced
``correct``*: asked about a judgment probe, it uses the 'answer_no_context' rows when the
table has them (the values are the same; the chance level can then be read from the
attempt's yes/no decisions), and says so in ``scored_from``. Without them it uses the
judgment rows' ``correct`` but never reads the judgment's yes/no as an answer. With
repeated samples only the first sample of each item counts.

Chance level: ``chance`` when given (a number, a {model: number} dict, or the name of a
column holding each item's number of options k, giving 1/k); else a column 'n_options' or
'n_choices' if present; else 0.5 when every parsed decision of an answer probe is yes/no
(the true label is then known: the decision when correct, the other one when not); else the
majority-class rate when a 'truth' column holds the true labels; else 0 (free answers).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from metacog.tidy.report import fmt_num, fmt_p_eq, fmt_range
from metacog.stats.intervals import proportion_ci

#: Judgment probes whose ``correct`` is copied from another probe's attempt.
SCORED_FROM = {"prospective": "answer_no_context", "counterfactual": "answer_no_context"}
JUDGMENTS = ("prospective", "counterfactual", "keep_withdraw", "bet_nobet")
OPTION_COLUMNS = ("n_options", "n_choices")
_YES, _NO = "yes", "no"


def _need(df: pd.DataFrame, cols, where: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{where}: the table has no column(s) {missing}; it needs {list(cols)} "
                         f"(the tidy response schema, metacog.tidy.schema).")


def _pick_probe(df: pd.DataFrame, probe: str | None) -> tuple[str, str]:
    """(asked probe, probe whose rows are scored)."""
    present = list(pd.unique(df["probe"].dropna()))
    if probe is not None:
        if probe not in present:
            raise ValueError(f"adequacy: probe {probe!r} is not in the table; it has {present}.")
        src = SCORED_FROM.get(probe)
        return probe, src if src in present else probe
    if len(present) == 1:
        return _pick_probe(df, present[0])
    if "answer_no_context" in present and any(p in present for p in SCORED_FROM):
        return "answer_no_context", "answer_no_context"
    if "answer" in present:
        return "answer", "answer"
    raise ValueError(f"adequacy: the table has several probes {present} and none is 'answer'; "
                     f"pass probe= to say whose answers to judge.")


def _first_sample(rows: pd.DataFrame) -> pd.DataFrame:
    if "sample" not in rows.columns or rows["sample"].isna().all():
        return rows
    keys = [c for c in ("model", "benchmark", "item_id") if c in rows.columns]
    first = rows.groupby(keys, dropna=False)["sample"].transform("min")
    return rows[rows["sample"] == first]


def _truth_yes(rows: pd.DataFrame) -> pd.Series | None:
    """True label as 'yes'/'no' per row, when every parsed decision is yes/no; else None."""
    if "decision" not in rows.columns:
        return None
    d = rows["decision"].astype("string").str.strip().str.lower()
    known = d.isin([_YES, _NO]) & rows["correct"].notna()
    if not known.any() or d[d.notna()].isin([_YES, _NO, "abstain"]).mean() < 1:
        return None
    said_yes = d == _YES
    return (said_yes == (rows["correct"] == 1)).where(known)


def _chance_for(model: str, rows: pd.DataFrame, chance, truth) -> tuple[float, str]:
    if isinstance(chance, (int, float)) and not isinstance(chance, bool):
        return float(chance), "given"
    if isinstance(chance, dict):
        if model not in chance:
            raise ValueError(f"adequacy: chance has no entry for model {model!r}; "
                             f"it has {sorted(chance)}.")
        return float(chance[model]), "given"
    col = chance if isinstance(chance, str) else next((c for c in OPTION_COLUMNS if c in rows.columns), None)
    if col is not None:
        if col not in rows.columns:
            raise ValueError(f"adequacy: chance={col!r} names no column of the table.")
        k = pd.to_numeric(rows[col], errors="coerce")
        if k.isna().any() or (k < 1).any():
            bad = rows.index[(k.isna() | (k < 1)).to_numpy()][0]
            raise ValueError(f"adequacy: column {col!r} must hold each item's number of options "
                             f"(>= 1); row {bad} has {rows.at[bad, col]!r}.")
        ks = sorted(set(k.astype(int)))
        return float((1 / k).mean()), (f"1 in {ks[0]} options" if len(ks) == 1 else "1/k options")
    if truth is not None:
        return 0.5, "yes/no items"
    if "truth" in rows.columns and rows["truth"].notna().any():
        return float(rows["truth"].value_counts(normalize=True).iloc[0]), "majority class"
    return 0.0, "free answers"


def _baseline(rows: pd.DataFrame, truth) -> tuple[float, str]:
    if truth is not None and truth.notna().any():
        share_yes = float(truth.dropna().mean())
        return (share_yes, "always answering Yes") if share_yes >= 0.5 else (1 - share_yes, "always answering No")
    if "truth" in rows.columns and rows["truth"].notna().any():
        vc = rows["truth"].value_counts(normalize=True)
        return float(vc.iloc[0]), f"always answering {vc.index[0]}"
    return float("nan"), ""


def _reason(n, k, lo, hi, bar, bar_what, p, min_items, ok) -> str:
    if n < min_items:
        return f"only {n} items with a known outcome; at least {min_items} are needed"
    acc = f"accuracy {fmt_num(k / n)} ({fmt_range(lo, hi)})"
    verb = "is above" if ok else "is not above"
    what = "0 (free answers: no chance level known)" if bar == 0 else f"the {fmt_num(bar)} {bar_what}"
    return f"{acc} {verb} {what} (one-sided {fmt_p_eq(p)})"


def adequacy(df: pd.DataFrame, *, probe: str | None = None, chance=None, alpha: float = 0.05,
             min_items: int = 20) -> pd.DataFrame:
    """One row per model: does its answering carry signal above chance and the majority baseline?

    Returns columns model, probe, scored_from, items, n_correct, accuracy, ci_low, ci_high
    (exact 95%), chance, chance_basis, baseline, baseline_what, p_value (one-sided binomial
    against max(chance, baseline)), carries_signal, reason. ``probe=None`` picks the probe
    whose ``correct`` the judgments are scored against (see the module docstring).
    """
    _need(df, ("model", "item_id", "probe", "correct"), "adequacy")
    if not 0 < alpha < 1:
        raise ValueError(f"adequacy: alpha must be in (0, 1), got {alpha!r}.")
    asked, src = _pick_probe(df, probe)
    rows_all = _first_sample(df[df["probe"] == src])
    out = []
    for model, rows in rows_all.groupby("model", sort=False):
        rows = rows[rows["correct"].notna()]
        n, k = len(rows), int((rows["correct"] == 1).sum())
        truth = _truth_yes(rows) if src not in JUDGMENTS else None
        ch, basis = _chance_for(model, rows, chance, truth)
        base, base_what = _baseline(rows, truth)
        if np.isfinite(base) and base >= ch:
            bar, bar_what = base, f"you get by {base_what}"
        else:
            bar, bar_what = ch, ("chance level" if basis == "given" else f"chance level ({basis})")
        lo, hi = proportion_ci(k, n, method="exact") if n else (np.nan, np.nan)
        p = float(sps.binom.sf(k - 1, n, bar)) if n else np.nan
        ok = bool(n >= min_items and p < alpha)
        out.append({"model": model, "probe": asked, "scored_from": src, "items": n, "n_correct": k,
                    "accuracy": k / n if n else np.nan, "ci_low": lo, "ci_high": hi, "chance": ch,
                    "chance_basis": basis, "baseline": base, "baseline_what": base_what,
                    "p_value": p, "carries_signal": ok,
                    "reason": _reason(n, k, lo, hi, bar, bar_what, p, min_items, ok)})
    return pd.DataFrame(out)


def signal_models(df: pd.DataFrame, **kw) -> list[str]:
    """The models whose answering carries signal (:func:`adequacy` with the same arguments)."""
    a = adequacy(df, **kw)
    return a.loc[a["carries_signal"], "model"].tolist()


def judgment_gate(df: pd.DataFrame, probe: str = "prospective", *, min_each: int = 5) -> pd.DataFrame:
    """One row per model: is its judgment on ``probe`` constant or nearly so?

    A judgment is Yes when its decision is 'yes' (case-insensitive), No when 'no'; rows
    with another decision fall back to ``confidence >= 0.5``, and rows with neither are
    counted as unparsed. ``nearly_constant`` means fewer than ``min_each`` of one kind.
    Returns columns model, probe, judgments, n_yes, n_no, unparsed, share_yes, constant,
    nearly_constant, usable, reason.
    """
    _need(df, ("model", "probe"), "judgment_gate")
    rows_all = df[df["probe"] == probe]
    if rows_all.empty:
        raise ValueError(f"judgment_gate: probe {probe!r} is not in the table; it has "
                         f"{list(pd.unique(df['probe'].dropna()))}.")
    out = []
    for model, rows in _first_sample(rows_all).groupby("model", sort=False):
        d = (rows["decision"].astype("string").str.strip().str.lower() if "decision" in rows
             else pd.Series(pd.NA, index=rows.index, dtype="string"))
        conf = rows["confidence"] if "confidence" in rows else pd.Series(np.nan, index=rows.index)
        yes = (d == _YES).fillna(False)
        no = (d == _NO).fillna(False)
        other = ~(yes | no)
        yes |= other & (conf >= 0.5)
        no |= other & (conf < 0.5)
        ny, nn = int(yes.sum()), int(no.sum())
        total = ny + nn
        constant = total > 0 and min(ny, nn) == 0
        nearly = total > 0 and min(ny, nn) < min_each
        if total == 0:
            reason = "no parsed judgments"
        elif constant:
            kind = "Yes" if ny else "No"
            reason = (f"always {kind} ({total} of {total}): a constant judgment cannot tell right "
                      f"answers from wrong ones")
        elif nearly:
            few = "Yes" if ny < nn else "No"
            reason = (f"nearly always {'No' if few == 'Yes' else 'Yes'} ({ny} Yes, {nn} No): fewer "
                      f"than {min_each} {few}")
        else:
            reason = f"{ny} Yes and {nn} No"
        out.append({"model": model, "probe": probe, "judgments": total, "n_yes": ny, "n_no": nn,
                    "unparsed": int(len(rows) - total), "share_yes": ny / total if total else np.nan,
                    "constant": constant, "nearly_constant": nearly,
                    "usable": bool(total > 0 and not nearly), "reason": reason})
    return pd.DataFrame(out)
