"""The model adequacy gate: does a model's answering carry any signal worth judging?

A model that answers yes/no items at 0.51 accuracy, gets 3% of ten-option items right, or
gets 2 of 40 free answers right while most of its replies do not even parse, has no
knowledge for its confidence to track; verdicts about its metacognition say nothing. This
module checks that first.

:func:`adequacy` — one row per model, passing only when every rule holds:

1. at least ``min_items`` items with a known outcome;
2. at least ``min_correct`` (:data:`MIN_CORRECT`) correct answers: a handful of hits is no
   base for an AUROC whatever the chance level;
3. at least ``min_parse`` (:data:`MIN_PARSE`) of its answers parsed (``parse_status`` 'ok');
4. accuracy above the higher of the chance level and the majority baseline (one-sided exact
   binomial test at ``alpha``), wherever a chance level is known.

``reason`` names every rule that failed, with its numbers ("3 correct of 40, below the
minimum of 10"). Where no chance level is known (free answers), rule 4 cannot be applied:
``chance_known`` is False, ``chance`` is NaN, and the reason says the model is ungated against
chance; it passes on rules 1-3 alone, and says so. :func:`signal_models` lists the models
that pass; :func:`judgment_gate` checks a judgment probe for constant (or nearly constant)
judgments.

Which answers are judged. ``correct`` on a judgment row ('prospective', 'counterfactual')
is not the judgment's own accuracy: :mod:`metacog.elicit` copies it from the same model's
'answer_no_context' attempt at that item. The gate always judges the *attempt that produced
``correct``*: asked about a judgment probe, it uses the 'answer_no_context' rows when the
table has them, and says so in ``scored_from``. Without them it uses the judgment rows'
``correct`` but never reads the judgment's yes/no as an answer (and knows no parse rate for
the attempt). With repeated samples only the first sample of each item counts.

Chance level, from each item's own answer set: ``chance`` when given (a number, a {model:
number} dict, or the name of a column holding each item's number of options k); else
``items`` (a list of :class:`~metacog.tidy.items.Item` or the frame of
:func:`metacog.hypotheses.answer_sets.answer_sets`, or 'auto' to load them by the table's
``benchmark`` column: label sets such as LegalBench's "Answer with one of: No, Yes", shown
options, bool golds); else a column 'n_options' or
'n_choices'; else yes/no when every parsed decision of an answer probe is yes/no (the true
label is then known: the decision when correct, the other one when not); else the
majority-class rate of a 'truth' column. Items differing in k give the mean of 1/k over
the items with a known set; items without one (free answers) are left out of the chance
test and counted in the basis. The majority baseline is the share of the most common true
label (within each answer set of at least :data:`MIN_GROUP` items, 1/k elsewhere).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from metacog.tidy.report import fmt_count, fmt_num, fmt_p_eq, fmt_range
from metacog.stats.intervals import proportion_ci

#: Judgment probes whose ``correct`` is copied from another probe's attempt.
SCORED_FROM = {"prospective": "answer_no_context", "counterfactual": "answer_no_context"}
JUDGMENTS = ("prospective", "counterfactual", "keep_withdraw", "bet_nobet")
OPTION_COLUMNS = ("n_options", "n_choices")
#: Fewest correct answers a model needs to pass the gate.
MIN_CORRECT = 10
#: Smallest share of a model's answers that must parse (``parse_status`` 'ok') to pass.
MIN_PARSE = 0.5
#: An answer set needs this many items before its most common label counts as a baseline
#: when items differ in their answer sets.
MIN_GROUP = 10
FREE = "free answers: no chance level known"
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


def _sets_frame(items, df: pd.DataFrame, probe: str) -> pd.DataFrame | None:
    if items is None:
        return None
    if isinstance(items, str):
        if items != "auto":
            raise ValueError(f"adequacy: items must be a list of items, their answer_sets frame or "
                             f"'auto', got {items!r}.")
        from metacog.hypotheses.answer_sets import answer_sets_for
        sets = answer_sets_for(df[df["probe"] == probe], probe)
    elif isinstance(items, pd.DataFrame):
        _need(items, ("item_id", "n_options"), "adequacy(items=...)")
        sets = items.copy()
    else:
        from metacog.hypotheses.answer_sets import answer_sets
        sets = answer_sets(items, probe)
    for c in ("answer_set", "truth"):
        if c not in sets.columns:
            sets[c] = None
    return sets.assign(item_id=sets["item_id"].astype(str)).drop_duplicates("item_id").set_index("item_id")


def _per_item(rows: pd.DataFrame, chance, truth_yes, sets) -> tuple[pd.Series, pd.Series, pd.Series, str]:
    """(k, truth, group, source) per row: the number of possible answers (NaN for a free
    answer), the true label (missing when unknown), the answer set's key, where k came from."""
    idx = rows.index
    truth = (rows["truth"].astype(object) if "truth" in rows.columns
             else pd.Series(None, index=idx, dtype=object))
    if sets is not None:
        ids = rows["item_id"].astype(str)
        if not ids.isin(sets.index).all():
            raise ValueError(f"adequacy: item {ids[~ids.isin(sets.index)].iloc[0]!r} has no answer set "
                             f"in items=; pass the items the responses answer.")
        m = sets.reindex(ids)
        k = pd.Series(pd.to_numeric(m["n_options"], errors="coerce").to_numpy(float), index=idx)
        group = pd.Series(m["answer_set"].to_numpy(object), index=idx)
        return k, pd.Series(m["truth"].to_numpy(object), index=idx), group.where(group.notna(), k), "answer set"
    col = chance if isinstance(chance, str) else next((c for c in OPTION_COLUMNS if c in rows.columns), None)
    if col is not None:
        if col not in rows.columns:
            raise ValueError(f"adequacy: chance={col!r} names no column of the table.")
        k = pd.to_numeric(rows[col], errors="coerce")
        bad = (k.isna() & rows[col].notna()) | (k < 1)
        if bad.any():
            first = rows.index[bad.to_numpy()][0]
            raise ValueError(f"adequacy: column {col!r} must hold each item's number of options "
                             f"(>= 1, or missing for a free answer); row {first} has {rows.at[first, col]!r}.")
        return k.astype(float), truth, k, "options"
    if truth_yes is not None:
        t = truth_yes.map({True: "Yes", False: "No"}).astype(object)
        return pd.Series(2.0, index=idx), t, pd.Series("No, Yes", index=idx), "yes/no"
    return pd.Series(np.nan, index=idx), truth, pd.Series("all", index=idx), "truth" if truth.notna().any() else "none"


def _chance(model, k: pd.Series, truth: pd.Series, source: str, chance) -> tuple[float, str, bool, pd.Series]:
    """(chance, basis, known, rows in the chance test)."""
    every = pd.Series(True, index=k.index)
    if isinstance(chance, (int, float)) and not isinstance(chance, bool):
        return float(chance), "given", True, every
    if isinstance(chance, dict):
        if model not in chance:
            raise ValueError(f"adequacy: chance has no entry for model {model!r}; "
                             f"it has {sorted(chance)}.")
        return float(chance[model]), "given", True, every
    known = k.notna()
    if known.any():
        ks = sorted(set(k[known].astype(int)))
        if source == "yes/no":
            basis = "yes/no items"
        elif len(ks) == 1:
            basis = f"1 in {ks[0]} {'options' if source == 'options' else 'answers'}"
        else:
            basis = f"mean 1/k over {fmt_count(int(known.sum()), 'item')}, k from {ks[0]} to {ks[-1]}"
        if not known.all():
            basis += f"; {fmt_count(int((~known).sum()), 'free-answer item')} left out"
        return float((1 / k[known]).mean()), basis, True, known
    if source == "truth":
        return float(truth.value_counts(normalize=True).iloc[0]), "majority class", True, every
    return float("nan"), FREE, False, every


def _top(labels: pd.Series) -> tuple[str, float]:
    vc = labels.astype(str).value_counts()
    best = max(vc.index[vc == vc.iloc[0]])  # ties: the later label ('Yes' before 'No')
    return best, float(vc[best] / vc.sum())


def _baseline(k: pd.Series, truth: pd.Series, group: pd.Series) -> tuple[float, str]:
    """The majority baseline over the rows given, and how it is earned."""
    t = truth.notna()
    if not t.any():
        return float("nan"), ""
    groups = group[t].astype(str)
    if groups.nunique() == 1:
        label, share = _top(truth[t])
        return share, f"always answering {label[:1].upper() + label[1:]}"
    if k.isna().any():
        return float("nan"), ""
    total, used = 0.0, 0
    for _, g in truth[t].groupby(groups):
        kk = float(k[g.index].iloc[0])
        if len(g) >= MIN_GROUP:
            total, used = total + len(g) * max(1 / kk, _top(g)[1]), used + 1
        else:
            total += len(g) / kk
    if not used or t.sum() < len(truth):
        return float("nan"), ""
    return total / len(truth), (f"giving the most common label of each answer set with {MIN_GROUP} or more "
                                f"items, 1/k elsewhere")


def _rules(n, k, parsed, n_rows, min_items, min_correct, min_parse) -> list[tuple[str, str]]:
    """The count rules that fail, as (rule, reason)."""
    out = []
    if n < min_items:
        out.append(("items", f"only {n} items with a known outcome; at least {min_items} are needed"))
    if k < min_correct:
        out.append(("correct", f"{k} correct of {n}, below the minimum of {min_correct}"))
    if n_rows and parsed is not None and parsed / n_rows < min_parse:
        out.append(("parsed", f"{fmt_num(parsed / n_rows, pct=True)} of answers parsed ({parsed} of "
                              f"{n_rows}), below the minimum of {fmt_num(min_parse, pct=True)}"))
    return out


def adequacy(df: pd.DataFrame, *, probe: str | None = None, chance=None, items=None, alpha: float = 0.05,
             min_items: int = 20, min_correct: int = MIN_CORRECT, min_parse: float = MIN_PARSE) -> pd.DataFrame:
    """One row per model: does its answering carry signal? (the rules: module docstring)

    Returns columns model, probe, scored_from, items, n_correct, accuracy, ci_low, ci_high
    (exact 95%), n_rows (first-sample attempts, graded or not), parsed, parse_rate (NaN when
    unknown), chance (NaN when unknown), chance_basis, chance_known, chance_items (items in
    the chance test), baseline, baseline_what, p_value (one-sided binomial against
    max(chance, baseline) on the chance_items), failed (the failed rules: 'items', 'correct',
    'parsed', 'chance', comma-separated; '' when none), failures (their reasons), carries_signal,
    reason (the failures, then the chance test or that there is none). ``attrs['rules']`` holds
    the thresholds used.
    """
    _need(df, ("model", "item_id", "probe", "correct"), "adequacy")
    if not 0 < alpha < 1:
        raise ValueError(f"adequacy: alpha must be in (0, 1), got {alpha!r}.")
    if not 0 <= min_parse <= 1:
        raise ValueError(f"adequacy: min_parse is a share in [0, 1], got {min_parse!r}.")
    asked, src = _pick_probe(df, probe)
    sets = _sets_frame(items, df, src)
    rows_all = _first_sample(df[df["probe"] == src])
    out = []
    for model, every in rows_all.groupby("model", sort=False):
        rows = every[every["correct"].notna()]
        n, k = len(rows), int((rows["correct"] == 1).sum())
        status = every["parse_status"] if "parse_status" in every.columns else None
        parsed = (None if src in JUDGMENTS or status is None or status.isna().all()
                  else int((status.astype("string") == "ok").sum()))
        truth_yes = _truth_yes(rows) if src not in JUDGMENTS else None
        kk, truth, group, source = _per_item(rows, chance, truth_yes, sets)
        ch, basis, known, tested = _chance(model, kk, truth, source, chance)
        base, base_what = _baseline(kk[tested], truth[tested], group[tested]) if known else (np.nan, "")
        use_base = np.isfinite(base) and base >= ch
        bar = base if use_base else ch
        bar_what = (f"you get by {base_what}" if use_base else
                    "chance level" if basis == "given" else f"chance level ({basis})")
        nt, kt = int(tested.sum()), int((rows.loc[tested, "correct"] == 1).sum())
        lo, hi = proportion_ci(k, n, method="exact") if n else (np.nan, np.nan)
        p = float(sps.binom.sf(kt - 1, nt, bar)) if known and nt else np.nan
        fails = _rules(n, k, parsed, len(every), min_items, min_correct, min_parse)
        if known and not any(rule == "items" for rule, _ in fails):
            above = bool(nt and p < alpha)
            tlo, thi = proportion_ci(kt, nt, method="exact") if nt else (np.nan, np.nan)
            on = "" if nt == n else f" on the {nt} items with an answer set"
            test = (f"accuracy{on} {fmt_num(kt / nt if nt else np.nan)} ({fmt_range(tlo, thi)}) "
                    f"{'is above' if above else 'is not above'} the {fmt_num(bar)} {bar_what} "
                    f"(one-sided {fmt_p_eq(p)})")
            if not above:
                fails.append(("chance", test))
        elif known:
            above, test = True, ""
        else:
            above, test = True, "ungated against chance: free answers, no chance level known, so only the count rules apply"
        ok = not fails
        reasons = [r for _, r in fails]
        if test and above and not any(rule == "items" for rule, _ in fails):
            reasons.append(test)
        out.append({"model": model, "probe": asked, "scored_from": src, "items": n, "n_correct": k,
                    "accuracy": k / n if n else np.nan, "ci_low": lo, "ci_high": hi,
                    "n_rows": len(every), "parsed": np.nan if parsed is None else parsed,
                    "parse_rate": parsed / len(every) if parsed is not None and len(every) else np.nan,
                    "chance": ch, "chance_basis": basis, "chance_known": known, "chance_items": nt,
                    "baseline": base, "baseline_what": base_what, "p_value": p,
                    "failed": ",".join(rule for rule, _ in fails),
                    "failures": "; ".join(r for _, r in fails), "carries_signal": ok,
                    "reason": "; ".join(reasons)})
    table = pd.DataFrame(out)
    table.attrs["rules"] = {"min_items": min_items, "min_correct": min_correct,
                            "min_parse": min_parse, "alpha": alpha}
    return table


def failed_rules(row) -> str:
    """The rules one row of :func:`adequacy` fails, in words ('' when the model passes)."""
    if "failures" in row and isinstance(row["failures"], str):
        return row["failures"]
    return "" if row["carries_signal"] else str(row.get("reason", ""))


def ungated(table: pd.DataFrame) -> list[str]:
    """The models of an :func:`adequacy` table that pass without a chance test: no chance level
    is known for their items (no ``n_options`` column, answer set or ``chance``), so they are
    kept on the count rules alone. A page names them beside the verdicts they enter."""
    if table is None or not len(table) or "chance_known" not in table:
        return []
    mask = table["carries_signal"].astype(bool) & ~table["chance_known"].astype(bool)
    return [str(m) for m in table.loc[mask, "model"]]


def ungated_sentence(table: pd.DataFrame, name=str) -> str:
    """One sentence naming the models :func:`ungated` returns (``name`` shortens a model id),
    or '' when every model that passes was tested against chance."""
    from metacog.tidy.report import fmt_list

    models = ungated(table)
    if not models:
        return ""
    many = len(models) > 1
    return (f"Chance is unknown for {fmt_list([name(m) for m in models])} (no n_options column or "
            f"answer set gives the number of options), so {'they are' if many else 'it is'} not "
            f"tested against chance: {'they pass' if many else 'it passes'} on the count rules alone.")


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
