"""The miscalibration chapter beyond paper 2: confident errors across a population of models.

For every judgment panel (one source, benchmark and probe: items x models) with enough models
above chance, :func:`analyse` gives per domain (an MMLU-Pro category, say) and over all items:

- paper 2's *overconfident-wrong* share (OCW: confidence >= threshold and wrong) among the
  answers that carry a confidence, and among the errors, each with a two-way bootstrap
  interval (items and models resampled);
- a stability test paper 2 does not make: do confident errors fall on the same items across
  models more than the items themselves predict? The statistic is the number of model pairs
  that share a confident error on an item, summed over items, against its expectation under a
  null that keeps the shared item axis: each model's errors stay where they are, and whether
  an error is confident follows a main-effects model of confidence (the item's shared pull
  towards confidence, the model's level, its drop when wrong), fitted per domain
  (:func:`metacog.hypotheses.miscalibration.null.cooccurrence_item_axis`). An independence null,
  which flags each model's errors without regard to the item, would count models' shared sense
  of which items look easy as clustering. The ratio is 1 under the null; its interval comes
  from a bootstrap over items stratified by domain, its p-value from parametric draws; it is
  judged against :data:`RATIO_SESOI`, the smallest excess worth calling clustering.

Models at chance (:func:`metacog.hypotheses.adequacy.adequacy`) are left out before anything is computed
and listed by :func:`table` in its notes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.hypotheses.miscalibration import audit as mc
from metacog.hypotheses.adequacy import ungated
from metacog.hypotheses.common import ChapterResult, chapter_result, panel_columns, short_model
from metacog.hypotheses.miscalibration.hidden import EQUIVALENCE_MARGIN
from metacog.hypotheses.miscalibration.null import cooccurrence_item_axis
from metacog.hypotheses.verdict import decide_meaningful

#: Fewer models above chance than this and co-occurrence across models is not analysed.
MIN_MODELS = 10
#: Fewer confident errors than this and the co-occurrence verdict is not decided.
MIN_OCW = 30
ALL = "all items"
#: Smallest effect of interest for the shared-confident-error ratio: 10% more shared pairs than
#: the null expects. Below that the excess is smaller than the ±10% margin the chapter uses to
#: call two stabilities equal, too small to make a confident error "a property of the item".
RATIO_SESOI = EQUIVALENCE_MARGIN
#: Why :data:`RATIO_SESOI` is where it is.
RATIO_SESOI_WHY = ("1.1: 10% more shared confident errors than the item axis predicts, the chapter's one "
                   "margin for calling two quantities equal (±10%); paper 2 gives no figure for it")


def with_options(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``n_options`` (each item's number of answer options) for MMLU-Pro rows, so
    the adequacy gate's chance level is 1/k; other tables come back unchanged."""
    if "n_options" in df.columns or "benchmark" not in df.columns:
        return df
    if not (df["benchmark"].astype(str) == "mmlu_pro").any():
        return df
    from metacog.benchmarks import load_items

    k = {it.item_id: len(it.meta.get("options") or []) or np.nan for it in load_items("mmlu_pro")}
    out = df.copy()
    out["n_options"] = out["item_id"].astype(str).map(k)
    if out["n_options"].isna().any():
        return df
    return out


def panel_gate(panel) -> pd.DataFrame:
    """:func:`metacog.hypotheses.adequacy.adequacy` of the panel's models on its own rows (chance 1/k
    where the number of options is known)."""
    from metacog.hypotheses.adequacy import adequacy

    return adequacy(with_options(panel.table), probe=panel.probe)


def _threshold(confidence: pd.DataFrame, threshold):
    if threshold == "median":
        return confidence.median(axis=0)
    return float(threshold)


def analyse(confidence: pd.DataFrame, correct: pd.DataFrame, domains: pd.Series, *,
            threshold=0.8, n_boot: int = 1000, n_perm: int = 199, seed: int = 0) -> pd.DataFrame:
    """One row per domain and one for all items (``domain`` = "all items").

    Columns: domain, items, models, answers (with a confidence), errors, ocw; ocw_share
    (confident errors over answers) and ocw_of_errors (over errors), each with
    ``_ci_low``/``_ci_high`` (two-way bootstrap); observed and expected pairs of models sharing
    a confident error, ratio with ratio_ci_low/ratio_ci_high, null_mean (the permutations'
    mean, a check on expected) and p_perm (one-sided). ``domains`` maps item ids to domains;
    ``threshold`` is a number or "median" (each model's own median confidence).
    """
    thr = _threshold(confidence, threshold)
    rated, wrong, ocw = mc.ocw_flags(confidence, correct, thr)
    conf = confidence.to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        confident = rated & (conf >= (thr.reindex(confidence.columns).to_numpy(dtype=float)[None, :]
                                      if isinstance(thr, pd.Series) else float(thr)))
    dom = domains.reindex(confidence.index).astype(str).to_numpy()
    rows, pooled = [], []
    for j, d in enumerate(sorted(set(dom))):
        keep = dom == d
        r, w, o, c = rated[keep], wrong[keep], ocw[keep], confident[keep]
        s = seed + 7919 * j
        share = mc.share_two_way(o, r, n_boot=n_boot, seed=s)
        of_err = mc.share_two_way(o, w, n_boot=n_boot, seed=s + 1)
        co = cooccurrence_item_axis(r, c, w, n_boot=n_boot, n_perm=n_perm, seed=s + 2)
        pooled.append(co)
        rows.append(_row(d, r, share, of_err, co))
    if pooled:
        total = {k: sum(c[k] for c in pooled) for k in (
            "observed", "expected", "null_mean", "perm", "obs_boot", "exp_boot", "errors", "ocw",
            "dispersion", "dispersion_expected", "disp_boot", "disp_exp_boot")}
        total.update(items=int(rated.shape[0]), models=int(rated.shape[1]))
        share = mc.share_two_way(ocw, rated, n_boot=n_boot, seed=seed + 3)
        of_err = mc.share_two_way(ocw, wrong, n_boot=n_boot, seed=seed + 4)
        rows.append(_row(ALL, rated, share, of_err, total))
    return pd.DataFrame(rows)


def _row(domain, rated, share, of_err, co) -> dict:
    lo, hi = mc.ratio_interval(co["obs_boot"], co["exp_boot"])
    perm = np.asarray(co["perm"])
    dlo, dhi = mc.ratio_interval(co["disp_boot"], co["disp_exp_boot"])
    return {"domain": domain, "items": int(rated.shape[0]), "models": int(rated.shape[1]),
            "answers": int(rated.sum()), "errors": int(co["errors"]), "ocw": int(co["ocw"]),
            "ocw_share": share[0], "ocw_share_ci_low": share[1], "ocw_share_ci_high": share[2],
            "ocw_of_errors": of_err[0], "ocw_of_errors_ci_low": of_err[1],
            "ocw_of_errors_ci_high": of_err[2], "observed": co["observed"], "expected": co["expected"],
            "ratio": co["observed"] / co["expected"] if co["expected"] > 0 else np.nan,
            "ratio_ci_low": lo, "ratio_ci_high": hi, "null_mean": co["null_mean"],
            "dispersion": (co["dispersion"] / co["dispersion_expected"]
                           if co["dispersion_expected"] > 0 else np.nan),
            "dispersion_ci_low": dlo, "dispersion_ci_high": dhi,
            "p_perm": float((1 + (perm >= co["observed"]).sum()) / (1 + perm.size))}


@chapter_result
class PopulationTable(ChapterResult):
    """:func:`table`: ``results`` (:func:`analyse`'s rows for every analysed panel, the panel's
    columns first) and ``notes`` (one row per panel: models, those at chance or without a
    chance test, whether it was analysed and why not)."""

    results: pd.DataFrame
    notes: pd.DataFrame

    def summary(self) -> pd.DataFrame:
        """Per panel, over all items: the confident-error share and the co-occurrence ratio,
        each with ``ci_low``/``ci_high``."""
        cols = ["panel", "items", "models", "ocw_share", "ocw_share_ci_low", "ocw_share_ci_high",
                "ratio", "ratio_ci_low", "ratio_ci_high", "p_perm"]
        r = self.results
        return r.loc[r["domain"] == ALL, cols].reset_index(drop=True) if len(r) else pd.DataFrame(columns=cols)


def table(panelset, *, thresholds: dict | None = None, threshold=0.8, n_boot: int = 1000,
          n_perm: int = 199, seed: int = 0, skip_probes=("c1", "c2")) -> PopulationTable:
    """:func:`analyse` on the models above chance of every panel (not the
    policy probes ``skip_probes``, which the policy audit covers), remembered on disk: a
    :class:`PopulationTable` of ``results`` and ``notes``.

    ``thresholds`` maps a panel's source to its threshold (else ``threshold``). ``notes`` has
    one row per panel: panel, models, at_chance (their short names), chance_unknown (models kept
    without a chance test, :func:`metacog.hypotheses.adequacy.ungated`), analysed (bool), note.
    """
    from metacog.memo import memo

    parts, notes = [], []
    for p in panelset:
        if p.probe in skip_probes:
            continue
        g = panel_gate(p)
        signal = [m for m in g.loc[g["carries_signal"], "model"] if m in p.confidence_raw.columns]
        at = [short_model(m) for m in g.loc[~g["carries_signal"], "model"]]
        unknown = [short_model(m) for m in ungated(g)]
        note = {"panel": p.name, "models": len(p.models), "at_chance": ", ".join(at) or "none",
                "chance_unknown": ", ".join(unknown) or "none",
                "analysed": len(signal) >= MIN_MODELS, "note": ""}
        if len(signal) < MIN_MODELS:
            note["note"] = (f"{len(signal)} models answer above chance; co-occurrence across models "
                            f"needs at least {MIN_MODELS}")
            notes.append(note)
            continue
        first = p.table.drop_duplicates("item_id").set_index("item_id")
        domains = (first["domain"].astype(object) if "domain" in first.columns
                   else pd.Series(np.nan, index=first.index, dtype=object)).fillna(p.benchmark)
        thr = (thresholds or {}).get(p.source, threshold)
        res = memo(analyse, p.confidence_raw[signal], p.correct[signal], domains.astype(str),
                   threshold=thr, n_boot=n_boot, n_perm=n_perm, seed=seed)
        parts.append(res.assign(threshold=str(thr), **panel_columns(p)))
        notes.append(note)
    notes = pd.DataFrame(notes, columns=["panel", "models", "at_chance", "chance_unknown", "analysed", "note"])
    if not parts:
        return PopulationTable(pd.DataFrame(), notes)
    out = pd.concat(parts, ignore_index=True)
    first = ["panel", "source", "benchmark", "probe", "timing"]
    return PopulationTable(out[first + [c for c in out.columns if c not in first]], notes)


def verdicts(results: pd.DataFrame) -> list:
    """Per panel, over all items: "confident errors fall on the same items across models beyond
    what the items predict" — the ratio of shared confident errors to its item-axis null
    expectation lies above 1 + :data:`RATIO_SESOI` (with at least :data:`MIN_MODELS` models and
    :data:`MIN_OCW` confident errors). A ratio reliably above 1 but within the smallest effect of
    interest is "negligible": real, and too small to matter."""
    if results is None or results.empty:
        return []
    out = []
    for r in results[results["domain"] == ALL].to_dict("records"):
        out.append(decide_meaningful(
            f"{r['panel']}: confident errors fall on the same items across models beyond what the "
            f"items' shared pull towards confidence predicts", "shared confident errors, observed / expected",
            r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"], line=1.0, margin=RATIO_SESOI, direction="greater",
            line_why=RATIO_SESOI_WHY,
            n={"models": int(r["models"]), "items": int(r["items"]), "confident errors": int(r["ocw"])},
            min_counts={"models": MIN_MODELS, "confident errors": MIN_OCW}, digits=3))
    return out


def _shown(results: pd.DataFrame) -> pd.DataFrame:
    """``results`` without the "all items" row of a panel analysed on one domain only: that row
    repeats the domain's row under a name that promises more."""
    if results.empty or "panel" not in results:
        return results
    domains = results[results["domain"] != ALL].groupby("panel")["domain"].nunique()
    single = domains[domains == 1].index
    return results[~((results["domain"] == ALL) & results["panel"].isin(single))]


def display_shares(results: pd.DataFrame) -> pd.DataFrame:
    """Per panel and domain: answers, errors, confident errors, and the two OCW shares with
    their intervals in words (no "all items" row for a panel of one domain)."""
    from metacog.hypotheses.common import with_ci

    t = _shown(results)
    out = pd.DataFrame({"panel": t["panel"], "domain": t["domain"], "models": t["models"],
                        "items": t["items"], "answers": t["answers"], "confident errors": t["ocw"]})
    out = out.assign(**with_ci(t, "ocw_share", "confident and wrong, of answers (95% CI)", digits=1, pct=True))
    return out.assign(**with_ci(t, "ocw_of_errors", "confident, of errors (95% CI)", digits=1, pct=True))


def display_cooccurrence(results: pd.DataFrame) -> pd.DataFrame:
    """Per panel and domain: shared confident errors observed and expected, their ratio with
    its interval, and the permutation p-value (no "all items" row for a panel of one domain)."""
    from metacog.hypotheses.common import with_ci

    t = _shown(results)
    out = pd.DataFrame({"panel": t["panel"], "domain": t["domain"], "confident errors": t["ocw"],
                        "shared pairs observed": t["observed"].round().astype("int64"),
                        "shared pairs expected": t["expected"].round().astype("int64")})
    out = out.assign(**with_ci(t, "ratio", "observed / expected (95% CI)", digits=3))
    out = out.assign(**with_ci(t, "dispersion", "item dispersion, observed / null (95% CI)", digits=2))
    out["permutation p"] = t["p_perm"]
    return out


def by_domain(results: pd.DataFrame) -> pd.DataFrame:
    """The per-domain rows of :func:`table` sorted by dispersion (an empty frame with the
    plotting columns when nothing was analysed)."""
    cols = ["panel", "domain", "dispersion", "dispersion_ci_low", "dispersion_ci_high"]
    if results is None or results.empty:
        return pd.DataFrame(columns=cols)
    return results[results["domain"] != ALL].sort_values(["panel", "dispersion"])[cols]


def reading(results: pd.DataFrame) -> str:
    """What the co-occurrence results say, from each panel's verdict (:func:`verdicts`) and its
    dispersion interval, both against the item-axis null."""
    from metacog.hypotheses.verdict import SUPPORTED

    if results is None or results.empty:
        return ""
    rows = results[results["domain"] == ALL]
    decided = {v.claim.split(": ", 1)[0]: v for v in verdicts(results)}
    clustered = [r.panel for r in rows.itertuples()
                 if decided.get(r.panel) is not None and decided[r.panel].status == SUPPORTED]
    dispersed = [r.panel for r in rows.itertuples() if r.dispersion_ci_low > 1 + RATIO_SESOI]
    sesoi = f"{1 + RATIO_SESOI:g}"
    if clustered:
        return (f"In {len(clustered)} of {len(rows)} panels models share confident errors beyond "
                f"{sesoi} times what the items' shared pull towards confidence predicts: there a "
                f"confident error is partly a property of the item, not only of the model.")
    s = (f"No panel shows models sharing confident errors beyond {sesoi} times what the items' "
         f"shared pull towards confidence predicts (the smallest excess this page counts), so "
         f"shared confident errors are not shown to be a property of the item beyond how easy it looks.")
    if dispersed:
        s += (f" The item counts are more dispersed than that null allows on "
              f"{', '.join(dispersed)}: some items draw confident errors unevenly, without "
              f"raising the shared pairs enough to matter.")
    return s


def distinct_digits(lo, hi, digits: int = 1, most: int = 4) -> int:
    """The fewest decimals, from ``digits`` up to ``most``, at which the two ends of an interval
    print differently (so '1.1 (95% CI 1.1 at both ends)' becomes '1.10 (95% CI 1.06 to 1.14)').

    >>> distinct_digits(1.06, 1.14), distinct_digits(0.2, 0.9), distinct_digits(1.0, 1.0)
    (2, 1, 1)
    """
    from metacog.tidy.phrasing import number

    if pd.isna(lo) or pd.isna(hi) or float(lo) == float(hi):
        return digits
    for d in range(digits, most + 1):
        if number(float(lo), d) != number(float(hi), d):
            return d
    return most


def overall_sentence(results: pd.DataFrame) -> str:
    """Per tested panel, over all its items: the OCW shares, the shared-confident-error ratio with
    its p-value, and the dispersion ratio — each interval printed with enough digits for its
    two ends to differ — and the number of models above chance it was computed on."""
    from metacog.tidy.report import fmt_ci, fmt_num, fmt_p_eq

    if results is None or results.empty:
        return "No source was tested."
    out = []
    for r in results[results["domain"] == ALL].itertuples():
        share_d = distinct_digits(r.ocw_share_ci_low * 100, r.ocw_share_ci_high * 100)
        disp_d = distinct_digits(r.dispersion_ci_low, r.dispersion_ci_high)
        out.append(
            f"On {r.panel} ({r.models} models above chance, {r.items:,} items), "
            f"{fmt_ci(r.ocw_share, r.ocw_share_ci_low, r.ocw_share_ci_high, digits=share_d, pct=True)} of "
            f"the answers are confident and wrong, and {fmt_num(r.ocw_of_errors, pct=True)} of the errors "
            f"are confident; models share "
            f"{fmt_ci(r.ratio, r.ratio_ci_low, r.ratio_ci_high, digits=distinct_digits(r.ratio_ci_low, r.ratio_ci_high, 3))} "
            f"times the confident errors the null expects ({fmt_p_eq(r.p_perm)}), and the item counts "
            f"are {fmt_ci(r.dispersion, r.dispersion_ci_low, r.dispersion_ci_high, digits=disp_d)} times "
            f"as dispersed as the null allows.")
    return " ".join(out) or "No source was tested."
