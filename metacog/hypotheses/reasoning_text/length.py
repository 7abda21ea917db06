"""The reply's length alone against the confidence the model stated, model by model.

A public log can keep no reply texts and still keep each reply's length: the LLM Calibration
Study records ``token_length``, the tokens of the whole reply (explanation, answer and stated
confidence). Length is one of the text probe's features (:mod:`metacog.hypotheses.reasoning_text.probe`).
For each model :func:`compare_lengths` scores every answer by its reply's length, in the direction
(longer or shorter replies more often right) learned on the other folds, as a one-feature probe
fitted out of fold would; it sets that score's AUROC for correctness beside the AUROC of the
model's stated confidence on the same answers, with DeLong's paired interval for the difference
and a simultaneous one over the panel's models (Bonferroni). :func:`panel_mean` averages the
differences over the models, with a percentile interval that resamples models.

Length winning would show that a surface feature of the text beats the stated confidence;
length losing says only that length alone does not, not that no probe on the text could.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.hypotheses.common import ChapterResult, chapter_result
from metacog.hypotheses.reasoning_text.display import MIN_CLASS
from metacog.hypotheses.verdict import INSUFFICIENT, SELF_OTHER_MARGIN, Verdict, decide_meaningful
from metacog.memo import memo
from metacog.stats.population import delong_paired

#: The column holding each reply's length (:func:`compare_lengths` reads this one).
LENGTH = "token_length"
#: Where a source may record it, in order: a public log's token count of the reply, or the
#: completion tokens the book's own elicitation records for every call.
LENGTH_COLUMNS = ("token_length", "completion_tokens")
#: Fewest models for a panel mean (its interval resamples models).
MIN_MODELS = 5
#: The smallest difference of AUROCs the length verdict counts as an effect.
MARGIN = SELF_OTHER_MARGIN
MARGIN_WHY = ("0.02 AUROC: 2 in every 100 pairs of a right and a wrong answer ordered the other way; the "
              "book's smallest effect of interest, as for the self-minus-other contrasts")


def fold_directions(length, correct, *, folds: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(each answer's fold, each fold's direction): +1 where, on the other folds, right answers
    have the longer median reply, -1 where the shorter, 0 where the medians are equal. Answers
    are split into ``folds`` groups at random, from ``seed``."""
    x = np.asarray(length, dtype=float)
    y = np.asarray(correct, dtype=float)
    fold = np.random.default_rng(seed).permutation(np.arange(x.size) % folds)
    signs = np.zeros(folds)
    for k in range(folds):
        right, wrong = x[(fold != k) & (y == 1)], x[(fold != k) & (y == 0)]
        if right.size and wrong.size:
            signs[k] = np.sign(np.median(right) - np.median(wrong))
    return fold, signs


def length_score(length, correct, *, folds: int = 5, seed: int = 0) -> np.ndarray:
    """Each answer's length, signed so that a higher score means "more likely right" by the
    direction seen on the other folds (:func:`fold_directions`; 0 for a fold with no direction).

    >>> length_score([10, 20, 30, 40, 50, 60], [1, 1, 1, 0, 0, 0], folds=2)
    array([-10., -20., -30., -40., -50., -60.])
    """
    fold, signs = fold_directions(length, correct, folds=folds, seed=seed)
    return np.asarray(length, dtype=float) * signs[fold]


def compare_lengths(rows: pd.DataFrame, *, folds: int = 5, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Per model of ``rows`` (``model``, ``correct``, ``confidence``, ``token_length``): the
    length score's AUROC against the stated confidence's on the same answers. Columns: model,
    answers, n_pos, n_neg, median_length, longer_right and shorter_right (the share of folds for
    which the other folds' right answers have the longer, or the shorter, median reply),
    auroc_length, auroc_confidence, diff (length minus confidence), ci_low, ci_high (DeLong, ``level``), sim_low, sim_high (simultaneous over the models: each at
    1 - (1 - level) / models). Models with fewer than :data:`MIN_CLASS` right or wrong answers
    are left out. Sorted by diff."""
    need = {"model", "correct", "confidence", LENGTH}
    missing = sorted(need - set(rows.columns))
    if missing:
        raise ValueError(f"compare_lengths: the rows lack {', '.join(missing)}; give one row per model and "
                         f"answer with its grade, its stated confidence and its reply's length ({LENGTH}).")
    use = rows.assign(**{c: pd.to_numeric(rows[c], errors="coerce") for c in ("correct", "confidence", LENGTH)})
    use = use.dropna(subset=["correct", "confidence", LENGTH])
    groups = [(m, g) for m, g in use.groupby("model", observed=True, sort=True)
              if min((g["correct"] > 0).sum(), (g["correct"] <= 0).sum()) >= MIN_CLASS]
    wide = 1 - (1 - level) / max(len(groups), 1)
    out = []
    for m, g in groups:
        y = (g["correct"] > 0).to_numpy(dtype=float)
        fold, signs = fold_directions(g[LENGTH], y, folds=folds, seed=seed)
        score = g[LENGTH].to_numpy(dtype=float) * signs[fold]  # length_score, from the directions kept
        conf = g["confidence"].to_numpy(dtype=float)
        r, s = delong_paired(y, score, conf, ci=level), delong_paired(y, score, conf, ci=wide)
        out.append({"model": m, "answers": r["n_items"], "n_pos": r["n_pos"], "n_neg": r["n_neg"],
                    "median_length": float(g[LENGTH].median()),
                    "longer_right": float(np.mean(signs > 0)), "shorter_right": float(np.mean(signs < 0)),
                    "auroc_length": r["auroc_a"], "auroc_confidence": r["auroc_b"], "diff": r["diff"],
                    "ci_low": r["ci_low"], "ci_high": r["ci_high"], "sim_low": s["ci_low"], "sim_high": s["ci_high"]})
    cols = ["model", "answers", "n_pos", "n_neg", "median_length", "longer_right", "shorter_right", "auroc_length",
            "auroc_confidence", "diff", "ci_low", "ci_high", "sim_low", "sim_high"]
    return pd.DataFrame(out, columns=cols).sort_values("diff", ignore_index=True)


def panel_mean(table: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """The mean of ``table``'s per-model ``diff`` with a percentile interval resampling models
    (the answers within a model are many; the models are the panel's sample of models)."""
    d = table["diff"].to_numpy(dtype=float)
    if d.size < MIN_MODELS:
        return {"mean": float(d.mean()) if d.size else np.nan, "ci_low": np.nan, "ci_high": np.nan,
                "models": int(d.size)}
    rng = np.random.default_rng(seed)
    boots = d[rng.integers(0, d.size, size=(n_boot, d.size))].mean(axis=1)
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return {"mean": float(d.mean()), "ci_low": float(lo), "ci_high": float(hi), "models": int(d.size)}


@chapter_result
class LengthComparison(ChapterResult):
    """:func:`analyse`: ``table`` (per source and model, :func:`compare_lengths` with a
    ``source`` column), ``panel`` ({source: :func:`panel_mean`}), ``gates`` ({source: the gate's
    table}) and ``skipped`` ({source: why})."""

    table: pd.DataFrame
    panel: dict
    gates: dict
    skipped: dict

    def summary(self) -> pd.DataFrame:
        """One row per source: models, the mean difference (length minus stated confidence) and
        its interval, and the models whose simultaneous interval lies above or below 0."""
        rows = []
        for src, p in self.panel.items():
            t = self.table[self.table["source"] == src]
            rows.append({"source": src, **p, "length_better": int((t["sim_low"] > 0).sum()),
                         "confidence_better": int((t["sim_high"] < 0).sum())})
        return pd.DataFrame(rows)


def analyse(sources, *, min_conformance: float = 0.8, folds: int = 5, seed: int = 0,
            n_boot: int = 1000) -> LengthComparison:
    """:func:`compare_lengths` on every ``"source:probe"`` (its models that pass the chapter's
    gate, :func:`metacog.hypotheses.reasoning_text.gate_models`) and :func:`panel_mean` over them."""
    from metacog.data import load_responses
    from metacog.hypotheses.reasoning_text import gate_models, shown_source, split_source
    from metacog.tidy.phrasing import plural

    tables, panel, gates, skipped = [], {}, {}, {}
    for given in sources:
        src = shown_source(given)
        base, probe = split_source(given)
        full = load_responses(base)
        probe = probe or str(full["probe"].dropna().iloc[0])
        full = full[full["probe"] == probe]
        column = next((c for c in LENGTH_COLUMNS if c in full
                       and pd.to_numeric(full[c], errors="coerce").notna().any()), None)
        if column is None:
            skipped[src] = (f"{src} records no reply lengths (no {' or '.join(LENGTH_COLUMNS)} column with "
                            f"values under the probe {probe})")
            continue
        if (negative := int((pd.to_numeric(full[column], errors="coerce") < 0).sum())):
            skipped[src] = (f"{src} has {plural(negative, 'reply', 'replies')} of negative length in its column "
                            f"{column}, which counts tokens: fix those rows or drop the column")
            continue
        kept, gates[src] = gate_models(full, probe, min_conformance=min_conformance)
        use = full[full["model"].isin(kept)]
        if column != LENGTH:
            use = use.drop(columns=[LENGTH], errors="ignore").rename(columns={column: LENGTH})
        t = memo(compare_lengths, use[["model", "correct", "confidence", LENGTH]], folds=folds, seed=seed)
        if not len(t):
            skipped[src] = f"no model of {src} passes the gate with {MIN_CLASS} right and {MIN_CLASS} wrong answers"
            continue
        tables.append(t.assign(source=src))
        panel[src] = panel_mean(t, n_boot=n_boot, seed=seed)
    table = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    return LengthComparison(table, panel, gates, skipped)


def verdicts(result: LengthComparison) -> list[Verdict]:
    """Per source: the reply's length ranks correctness better than the stated confidence, on
    the panel's mean difference, judged against :data:`MARGIN` (supported beyond it, negligible
    within it, not supported below it). A skipped source is "insufficient evidence"."""
    out = []
    for src, p in result.panel.items():
        out.append(decide_meaningful(
            f"{src}: the reply's length alone ranks correctness better than the stated confidence",
            "mean AUROC difference over models, length minus stated confidence", p["mean"], p["ci_low"],
            p["ci_high"], margin=MARGIN, line_why=MARGIN_WHY, n={"models": p["models"]},
            min_counts={"models": MIN_MODELS}, digits=2))
    for src, why in result.skipped.items():
        out.append(Verdict(f"{src}: the reply's length alone ranks correctness better than the stated confidence",
                           "mean AUROC difference over models, length minus stated confidence", np.nan, np.nan,
                           np.nan, {}, INSUFFICIENT, why, 0.0, digits=2, basis="missing"))
    return out


#: Where a model's length score stands against its stated confidence, on the simultaneous interval.
SIDES = {"length ahead": "the simultaneous interval lies above 0",
         "confidence ahead": "the simultaneous interval lies below 0",
         "not told apart": "the simultaneous interval reaches 0"}


def sides(table: pd.DataFrame) -> pd.Series:
    """Each row's :data:`SIDES` key, from its simultaneous interval."""
    return pd.Series(np.where(table["sim_low"] > 0, "length ahead",
                              np.where(table["sim_high"] < 0, "confidence ahead", "not told apart")),
                     index=table.index)


def sentence(result: LengthComparison) -> str:
    """What the length comparison shows, per source, every number from ``result``."""
    from metacog.hypotheses.common import short_model
    from metacog.tidy.phrasing import join, number, plural, span, verb

    if not result.panel and not result.skipped:
        return ("No length source is given (the parameter length_sources), so this section has nothing "
                "to compare.")
    out = []
    for src, p in result.panel.items():
        t = result.table[result.table["source"] == src]
        gate = result.gates.get(src)
        side = sides(t)
        ahead, behind = t.loc[side == "length ahead"], t.loc[side == "confidence ahead"]
        tied = int((side == "not told apart").sum())
        of = len(gate) if gate is not None else len(t)
        s = (f"On {src}, " + ("its one model is" if of == len(t) == 1 else "both its models are" if of == len(t) == 2
                              else f"all {of} of its models are"
                              if of == len(t) else f"{len(t)} of its {plural(of, 'model')} {verb(len(t), 'is', 'are')}")
             + " compared")
        if gate is not None and len(gate) > len(t):
            off = int((~gate["conforms"]).sum())
            chance = int((gate["conforms"] & ~gate["carries_signal"]).sum())
            few = len(gate) - len(t) - off - chance
            parts = [f"{off} parse too few of their replies" if off else "",
                     f"{chance} answer at chance" if chance else "",
                     f"{few} have fewer than {MIN_CLASS} right or wrong answers" if few else ""]
            s += f" (of the others, {join([x for x in parts if x])})"
        if len(t) < MIN_MODELS:
            s += (f"; with fewer than {MIN_MODELS} there is no panel mean, so each is read alone: "
                  + "; ".join([f"for {short_model(r['model'])}, the stated confidence ranks correctness with an AUROC "
                          f"of {number(r['auroc_confidence'])} and the reply's length with {number(r['auroc_length'])}, "
                          f"a difference of {number(r['diff'])} (95% CI {span(r['ci_low'], r['ci_high'])})"
                          for r in t.to_dict("records")]) + ".")
            out.append(s)
            continue
        s += (". Their stated confidence ranks correctness "
             f"with a median AUROC of {number(t['auroc_confidence'].median())}, the reply's length with "
             f"{number(t['auroc_length'].median())}; on most folds shorter replies were right more often "
             f"for {plural(int((t['shorter_right'] > 0.5).sum()), 'model', zero='no')}, longer ones for "
             f"{int((t['longer_right'] > 0.5).sum()) or 'none'}"
             + (f", neither for {neither}" if (neither := int((t[['longer_right', 'shorter_right']] <= 0.5)
                                                              .all(axis=1).sum())) else "")
             + ". Length minus stated confidence averages "
             f"{number(p['mean'])} (95% CI {span(p['ci_low'], p['ci_high'])}) over the models. On the "
             f"simultaneous intervals the stated confidence is ahead for {plural(len(behind), 'model', zero='no')}, "
             f"length for {len(ahead) or 'none'}")
        s += (f" ({join([short_model(m) for m in ahead['model']], limit=8)})" if len(ahead) else "")
        s += f", and the two are not told apart for {tied or 'none'}."
        if len(ahead):
            top = float(ahead["auroc_confidence"].max())
            median = float(t["auroc_confidence"].median())
            if top < median:
                s += (f" Every model where length is ahead states a confidence that ranks at most "
                      f"{number(top)}, below the panel's median: length wins where the stated confidence is weak.")
        out.append(s)
    out += [f"{src} is left out: {why}." for src, why in result.skipped.items()]
    return " ".join(out)


def verdict_paragraph(vs: list[Verdict]) -> str:
    """One sentence per length verdict: its status and the reason, in words."""
    if not vs:
        return ""
    words = {"supported": "holds", "not supported": "does not hold", "negligible": "holds only negligibly",
             "insufficient evidence": "cannot be told"}
    return " ".join(f"On {v.claim.split(': ', 1)[0]}, that the reply's length alone ranks correctness better "
                    f"than the stated confidence {words.get(v.status, v.status)}: {v.reason}." for v in vs) + (
        " Length is one feature of the text: this decides whether length alone beats the stated confidence, "
        "not paper 1's claim about a probe on the whole text.")


def display(table: pd.DataFrame):
    """Every model's comparison for a page, length's lead first."""
    from metacog.hypotheses.common import short_model
    from metacog.tidy.phrasing import span
    from metacog.tidy.report import fmt_ci, pretty_or

    rows = [{"source": r["source"], "model": short_model(r["model"]), "answers": r["answers"], "right": r["n_pos"],
             "median length (tokens)": r["median_length"],
             "AUROC, stated confidence": r["auroc_confidence"], "AUROC, reply length": r["auroc_length"],
             "length minus confidence (95% CI)": fmt_ci(r["diff"], r["ci_low"], r["ci_high"]),
             "simultaneous 95% interval over the models": span(r["sim_low"], r["sim_high"], digits=3)}
            for r in table.sort_values("diff", ascending=False).to_dict("records")] if len(table) else []
    return pretty_or(pd.DataFrame(rows), "No length source was compared, so there is no table to show.")


def weakness(table: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Spearman's ρ across the models of ``table`` between the stated confidence's AUROC and (a)
    length's lead over it, (b) length's own AUROC, each with a percentile interval resampling
    models (the same resamples for both). Rows ``lead`` and ``length``: rho, ci_low, ci_high,
    models. The lead subtracts the confidence's AUROC, so (a) leans negative even when length
    has nothing to do with the confidence; (b) is the fair test."""
    from scipy.stats import spearmanr

    a = table["auroc_confidence"].to_numpy(dtype=float)
    ys = {"lead": table["diff"].to_numpy(dtype=float), "length": table["auroc_length"].to_numpy(dtype=float)}
    out = []
    for name, y in ys.items():
        row = {"against": name, "rho": np.nan, "ci_low": np.nan, "ci_high": np.nan, "models": int(a.size)}
        if a.size >= MIN_MODELS:
            rng = np.random.default_rng(seed)
            boots = []
            for _ in range(n_boot):
                i = rng.integers(0, a.size, a.size)
                if np.ptp(a[i]) > 0 and np.ptp(y[i]) > 0:
                    boots.append(spearmanr(a[i], y[i])[0])
            if boots and np.ptp(a) > 0 and np.ptp(y) > 0:  # no ranking when every model reads the same
                lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
                row.update(rho=float(spearmanr(a, y)[0]), ci_low=float(lo), ci_high=float(hi))
        out.append(row)
    return pd.DataFrame(out).set_index("against")


def weakness_sentence(table: pd.DataFrame, **kw) -> str:
    """:func:`weakness` per source, in words, with what the fair test shows."""
    from metacog.hypotheses.verdict import separating_digits
    from metacog.tidy.phrasing import number, span

    out = []
    for src, t in table.groupby("source", sort=False) if len(table) else []:
        w = weakness(t, **kw)
        lead, own = w.loc["lead"], w.loc["length"]
        if np.isnan(lead["rho"]) or np.isnan(own["rho"]):
            out.append(f"On {src} there are {int(lead['models'])} models, fewer than the {MIN_MODELS} a correlation "
                       f"across models needs." if lead["models"] < MIN_MODELS else
                       f"On {src} the models' AUROCs do not vary, so there is no ranking to correlate.")
            continue
        ci = lambda r: (f"{number(r['rho'])} (95% CI "  # noqa: E731 (digits enough to keep the ends off 0)
                        f"{span(r['ci_low'], r['ci_high'], separating_digits(r['ci_low'], r['ci_high'], [0.0], 2))})")
        said = (f"On {src}, across its {int(lead['models'])} models, Spearman's ρ between the stated confidence's "
                f"AUROC and length's lead over it is {ci(lead)}. But the lead is length's AUROC minus that same "
                f"AUROC, so it leans negative even if length has nothing to do with the confidence. The fair test "
                f"sets the confidence's AUROC against length's own: ρ = {ci(own)}, resampling models")
        if own["ci_low"] > 0:
            said += (": length ranks better, not worse, where the stated confidence ranks better, so length's lead "
                     "where the confidence is weak comes from the confidence falling, not from length knowing more.")
        elif own["ci_high"] < 0:
            said += ": length ranks better where the stated confidence ranks worse, so length does carry more there."
        else:
            said += (": whether length's own AUROC follows the confidence's cannot be told, so the lead's ρ shows "
                     "no more than what subtracting the same AUROC gives.")
        out.append(said)
    return " ".join(out) or "No length source was compared, so there is no correlation to compute."
