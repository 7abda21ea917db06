"""The pairwise chapter: is a model's confidence calibrated to its own correctness?

For every judgment panel (items x models binary confidence, with the same models'
correctness) this module computes paper 1's pairwise table — mean Kendall tau-b of judge
confidence against target correctness, the share of pairs significant after FDR, two nulls
with one name each (paper 1's base-rate-matched null and the book's stricter
difficulty-stratified null) — and the self-versus-other test, each on all items and on
contested items (items on which the models do not all agree), with bootstrap intervals
over items and the counts behind them. Paper 1's per-model internal against population
AUROC is in :mod:`metacog.hypotheses.pairwise.population`.

Paper 1's own prospective figures are in :data:`PAPER1` for the side-by-side table; they
are typed from the paper, not computed here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from metacog import stats
from metacog.stats.pairwise import BASE_RATE, DIFFICULTY, TauTables, tau_matrix, unordered_pairs  # noqa: F401 (re-exported)
from metacog.stats.validate import as_binary_frame, check_aligned
from metacog.hypotheses.pairwise.prose import (AFTER, MIN_MODELS, TIMING_HEADS, shared_sentence, timing_of,  # noqa: F401
                                               verdict_paragraph)
from metacog.hypotheses.pairwise.rules import (COUNTERFACTUAL_CAVEAT, DETECTABLE_FROM, EXCESS_CLAIM,  # noqa: F401
                                               EXCESS_STATISTIC, excess_verdicts, self_other_claim, self_rows,
                                               verdict_display, verdicts)

#: Paper 1's prospective figures {benchmark: (mean tau-b, mean of its base-rate-matched null,
#: % of pairs significant after FDR, first-factor share %)}; None where the paper gives no figure.
PAPER1 = {
    "SQuAD": (0.037, 0.000, 46.2, None),
    "MMLU-Pro": (0.041, 0.001, 35.8, 48.3),
    "LegalBench": (0.024, 0.000, 25.7, 36.4),
    "MathBench": (0.072, 0.000, 28.9, 25.3),
}


#: The book's one reading of paper 1's pairs, used for every "mean pairwise τ-b" the book sets beside
#: paper 1's: printed once on the page.
PAPER1_PAIRS_READING = (
    "Paper 1's pairs are the pairs of two different models: its results table counts 171 SQuAD pairs, "
    "which is C(19, 2), the unordered pairs of 19 models, so no model is paired with itself. A pair's "
    "calibration is Kendall τ-b between one model's yes/no confidence and the other model's correctness "
    "over their shared items (§1, fourth finding: one model's self-assessment is set against another "
    "model's performance). An unordered pair has two such directions, and the book counts both, so "
    "paper 1's mean pairwise τ-b is the mean over the n(n − 1) ordered pairs of different models, "
    "self-pairs left out. The abstract's wording (do two models that differ in confidence also differ in "
    "performance?) also allows a statistic on the two models' differences; the book does not compute "
    "that one. Self-pairs enter only the self-minus-other statistic, a row of its own that paper 1 "
    "reports no number for")


#: Paper 1's pair counts {benchmark: unordered model pairs}: 171 SQuAD pairs are C(19, 2), so 19
#: models there (the paper's 20 models are the whole study's). Benchmarks not listed: no count typed.
PAPER1_PAIRS = {"SQuAD": 171}

SUBSETS = ("all items", "contested items")


def models_from_pairs(pairs: int) -> int:
    """The n with C(n, 2) = ``pairs`` (ValueError when there is none): 171 -> 19."""
    n = int(round((1 + np.sqrt(1 + 8 * pairs)) / 2))
    if unordered_pairs(n) != pairs:
        raise ValueError(f"models_from_pairs: {pairs} is not C(n, 2) for any n.")
    return n


def _summaries(K: np.ndarray, w: np.ndarray | None = None) -> tuple[float, float, float]:
    """(mean pairwise tau: the mean over defined pairs of different models, paper 1's pairs
    (:data:`PAPER1_PAIRS_READING`); mean self tau; mean other tau) of a tau matrix. The first and
    the last are the same number: paper 1's mean over pairs is the mean other-pair tau. ``w``
    (one count per model, a bootstrap draw of the models) weights model j's self pair by w[j] and
    the pair (j, k) by w[j] w[k]; None weighs every model once."""
    m = K.shape[0]
    w = np.ones(m) if w is None else np.asarray(w, dtype=float)
    finite = np.isfinite(K)
    Kz = np.where(finite, K, 0.0)
    pair_w = np.outer(w, w) * ~np.eye(m, dtype=bool) * finite
    self_w = w * np.diag(finite)
    mean_self = float((np.diag(Kz) * self_w).sum() / self_w.sum()) if self_w.sum() > 0 else np.nan
    mean_other = float((Kz * pair_w).sum() / pair_w.sum()) if pair_w.sum() > 0 else np.nan
    return mean_other, mean_self, mean_other


@stats.single_blas_thread
def bootstrap_taus(C: np.ndarray, Y: np.ndarray, *, n_boot: int = 1000, seed: int = 0,
                   ci: float = 0.95, models: bool = True) -> pd.DataFrame:
    """Percentile intervals of the mean pairwise tau (over pairs of different models, self-pairs
    left out: :data:`PAPER1_PAIRS_READING`) and of self minus other, from a two-way bootstrap:
    each resample draws the items and, independently, the models, with replacement, so the
    interval carries both the items' noise and which models happen to be on the panel (issue
    #37). ``models=False`` resamples items only (the narrower interval of a fixed panel).

    Returns one row per statistic ("mean tau", "self minus other") with estimate, ci_low,
    ci_high and n_boot (the resamples in which the statistic was defined). Each resample is a
    vector of item counts (:func:`metacog.stats.resample.item_weights`) that weights the 2x2
    tables of :func:`metacog.stats.tau_matrix`, and a vector of model counts
    (:func:`metacog.stats.resample.count_weights`) that weights the models' pairs in the means;
    no matrix is copied, and a chunk of resamples is counted at once
    (:meth:`metacog.stats.pairwise.TauTables.tau_stack`).
    """
    tables = TauTables(C, Y)
    est_all, est_self, est_other = _summaries(tables.tau())
    m = C.shape[1]
    rng_models = np.random.default_rng([seed, 37])  # its own stream: the item draws stay as they were
    draws = []
    for W in stats.resample.item_weights(C.shape[0], n_boot, seed=seed):
        stack = tables.tau_stack(W)
        V = (stats.resample.count_weights(rng_models, m, len(stack)) if models
             else np.ones((len(stack), m)))
        for K, v in zip(stack, V):
            a, s, o = _summaries(K, v)
            draws.append((a, s - o))
    return stats.resample.percentile_table(("mean tau", "self minus other"),
                                           (est_all, est_self - est_other), np.array(draws), ci=ci)


def analyse(confidence: pd.DataFrame, correct: pd.DataFrame, *, alpha: float = 0.05,
            unanimous_rule: str = "either", n_perm: int = 999, n_boot: int = 200,
            control: bool = True, n_null: int = 200, seed: int = 0) -> pd.DataFrame:
    """Paper 1's pairwise statistics for one panel, on all items and on contested items.

    ``confidence`` and ``correct`` are items x models 0/1 tables with the same index and columns.
    One row per subset with: models, items (and unanimous items dropped), (judge, target) pairs of
    different models with a defined tau and pairs without one (a constant column), the mean
    pairwise tau over those pairs (paper 1's pairs, self-pairs left out: :data:`PAPER1_PAIRS_READING`)
    with its bootstrap interval, two nulls
    with one name each: paper 1's base-rate-matched null (``null_base_rate``: the mean of the
    mean tau over ``n_null`` draws of :func:`metacog.stats.base_rate_null`, with the null's 95%
    range ``null_base_rate_low``/``_high``) and the book's stricter difficulty-stratified null
    (``null_difficulty``), both over the same pairs, % of those pairs significant after
    Benjamini-Hochberg at ``alpha`` (over those pairs) against
    each (``pct_significant``: the exact per-pair test of the base-rate-matched null;
    ``pct_significant_within``: within difficulty strata), and the self-minus-other statistic
    with its bootstrap interval, permutation p-value and share of models above their others.
    A subset that cannot be analysed (too few items left) has a ``note`` and missing numbers.
    ``control=False`` skips the difficulty-stratified null (slow on thousands of items x dozens of
    models); its columns are then missing.
    """
    C = as_binary_frame(confidence, "confidence", allow_all_missing=True)
    Y = as_binary_frame(correct, "correct", allow_all_missing=True)
    check_aligned(C, Y)
    rows = []
    for subset in SUBSETS:
        row = {"subset": subset, "models": C.shape[1], "note": ""}
        if subset == "all items":
            Cs, Ys, dropped = C, Y, 0
        else:
            un = stats.unanimous_items(C, Y, how=unanimous_rule).to_numpy()
            Cs, Ys, dropped = C[~un], Y[~un], int(un.sum())
        row.update(items=len(Cs), unanimous_dropped=dropped)
        if len(Cs) < 10:
            row["note"] = f"only {len(Cs)} items left after dropping {dropped} unanimous ones (need 10)"
            rows.append(row)
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = stats.pairwise_calibration(Cs, Ys, alpha=alpha, control=control)
                so = stats.self_other_test(Cs, Ys, n_perm=n_perm, seed=seed)
                brn = stats.base_rate_null(Cs, Ys, n_null=n_null, seed=seed, self_pairs=False).iloc[0]
        except ValueError as exc:
            row["note"] = str(exc)
            rows.append(row)
            continue
        P = res.pairs
        P = P[P["judge"] != P["target"]].copy()  # paper 1's pairs: two different models
        P["q"] = stats.bh_fdr(P["p"].to_numpy())  # FDR over those pairs only
        if control:
            P["q_within"] = stats.bh_fdr(P["p_within"].to_numpy())
        defined = P["tau"].notna()
        boot = bootstrap_taus(Cs.to_numpy(), Ys.to_numpy(), n_boot=n_boot, seed=seed).set_index("statistic")
        row.update({
            "pairs": int(defined.sum()),
            "pairs_unordered": unordered_pairs(Cs.shape[1]),
            "pairs_undefined": int((~defined).sum()),
            "mean_tau": boot.at["mean tau", "estimate"],
            "mean_tau_ci_low": boot.at["mean tau", "ci_low"],
            "mean_tau_ci_high": boot.at["mean tau", "ci_high"],
            "null_base_rate": brn["null_mean"],
            "null_base_rate_low": brn["null_low"],
            "null_base_rate_high": brn["null_high"],
            "null_difficulty": float(P.loc[defined, "tau_null_difficulty"].mean()) if control else np.nan,
            "pct_significant": 100.0 * float((P.loc[defined, "q"] < alpha).mean()),
            "pct_significant_within": (100.0 * float((P.loc[defined, "q_within"] < alpha).mean())
                                       if control else np.nan),
            "self_minus_other": boot.at["self minus other", "estimate"],
            "self_minus_other_ci_low": boot.at["self minus other", "ci_low"],
            "self_minus_other_ci_high": boot.at["self minus other", "ci_high"],
            "self_other_p": so.p_value,
            "share_self_above": so.share_self_above,
        })
        rows.append(row)
    return pd.DataFrame(rows)


def table(panelset, *, alpha: float = 0.05, unanimous_rule: str = "either", n_perm: int = 999,
          n_boot: int = 200, control: bool = True, n_null: int = 200, seed: int = 0) -> pd.DataFrame:
    """:func:`analyse` for every panel of a :class:`metacog.hypotheses.panels.PanelSet`, one row per
    (panel, subset), with the panel's name, source, benchmark, probe and judgment timing.

    Results are remembered on disk (:mod:`metacog.memo`) while data, settings and code are unchanged.
    """
    from metacog.hypotheses.common import per_panel

    return per_panel(panelset, analyse, alpha=alpha, unanimous_rule=unanimous_rule, n_perm=n_perm,
                     n_boot=n_boot, control=control, n_null=n_null, seed=seed)


def paper1_comparison(pairwise_table: pd.DataFrame, structure_table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Paper 1's reported prospective figures beside the same statistics on our panels.

    One row per paper 1 benchmark (marked "paper 1: ...") and per panel of ours (all items):
    models and unordered model pairs (paper 1's unit: C(n, 2); for paper 1 only where it gives a
    pair count, :data:`PAPER1_PAIRS`, the models then being the n of C(n, 2)), the book's own
    count of ordered (judge, target) pairs with a τ (ours only), mean τ-b with its interval, the
    base-rate-matched null's mean (paper 1's null, like with like), the book's stricter
    difficulty-stratified null (ours only), % of pairs significant after FDR against the
    base-rate-matched null, and (with ``structure_table``) the first-factor share with its
    interval. Paper 1 gives no intervals, so its rows have none.
    """
    rows = []
    for b, (t, nm, pct, share) in PAPER1.items():
        pairs = PAPER1_PAIRS.get(b)
        rows.append({"data": f"paper 1: {b}", "timing": "before answering",
                     "models": np.nan if pairs is None else models_from_pairs(pairs),
                     "items": np.nan, "pairs_unordered": np.nan if pairs is None else pairs,
                     "pairs_ordered": np.nan, "mean_tau": t, "mean_tau_ci_low": np.nan,
                     "mean_tau_ci_high": np.nan, "null_base_rate": nm, "null_difficulty": np.nan,
                     "pct_significant": pct, "first_factor_share": (np.nan if share is None else share / 100),
                     "first_factor_share_ci_low": np.nan, "first_factor_share_ci_high": np.nan})
    ours = pairwise_table[pairwise_table["subset"] == "all items"]
    shares = {}
    if structure_table is not None and len(structure_table):
        s = structure_table[(structure_table["matrix"] == "confidence")
                            & (structure_table["subset"] == "all items")].set_index("panel")
        shares = s.to_dict("index")
    for r in ours.to_dict("records"):
        sh = shares.get(r["panel"], {})
        rows.append({"data": r["panel"], "timing": r["timing"], "models": r["models"], "items": r["items"],
                     "pairs_unordered": unordered_pairs(r["models"]), "pairs_ordered": r.get("pairs", np.nan),
                     "mean_tau": r.get("mean_tau", np.nan), "mean_tau_ci_low": r.get("mean_tau_ci_low", np.nan),
                     "mean_tau_ci_high": r.get("mean_tau_ci_high", np.nan),
                     "null_base_rate": r.get("null_base_rate", np.nan),
                     "null_difficulty": r.get("null_difficulty", np.nan),
                     "pct_significant": r.get("pct_significant", np.nan),
                     "first_factor_share": sh.get("eig_share", np.nan),
                     "first_factor_share_ci_low": sh.get("eig_share_ci_low", np.nan),
                     "first_factor_share_ci_high": sh.get("eig_share_ci_high", np.nan)})
    return pd.DataFrame(rows)


#: The nulls' column names on every page table.
NULL_LABELS = {"null_base_rate": f"{BASE_RATE} null mean (paper 1's)",
               "null_difficulty": f"{DIFFICULTY} null mean (stricter)"}


def display_comparison(comparison: pd.DataFrame) -> pd.DataFrame:
    """The paper 1 comparison for a page, intervals in words."""
    from metacog.hypotheses.common import with_ci

    t = comparison
    out = pd.DataFrame({"data": t["data"], "judgment made": t["timing"], "models": t["models"],
                        "items": t["items"], "model pairs (unordered)": t["pairs_unordered"],
                        "ordered pairs of different models with τ (both directions of each)": t["pairs_ordered"]})
    out = out.assign(**with_ci(t, "mean_tau", "mean τ-b (95% CI)", digits=3))
    for col, label in NULL_LABELS.items():
        out[label] = t[col]
    # one unit per column: paper 1 counts its unordered model pairs, the book its ordered ones
    paper = t["data"].astype(str).str.startswith("paper 1:")
    out[f"% of pairs significant (FDR, {BASE_RATE} null): paper 1, over its unordered model pairs"] = \
        t["pct_significant"].where(paper)
    out[f"% of pairs significant (FDR, {BASE_RATE} null): ours, over ordered pairs of different models"] = \
        t["pct_significant"].where(~paper)
    out = out.assign(**with_ci(t, "first_factor_share", "first-factor share (95% CI)", digits=2))
    return out


def display_table(pairwise_table: pd.DataFrame) -> pd.DataFrame:
    """The pairwise table for a page: one row per (panel, subset), intervals in words."""
    from metacog.hypotheses.common import with_ci

    t = pairwise_table
    out = pd.DataFrame({"panel": t["panel"], "items": t["subset"], "n items": t["items"],
                        "models": t["models"]})
    out = out.assign(**with_ci(t, "mean_tau", "mean τ-b (95% CI)", digits=3))
    for col, label in NULL_LABELS.items():
        out[label] = t.get(col)
    out[f"% pairs significant (FDR, {BASE_RATE} null)"] = t.get("pct_significant")
    out[f"% pairs significant (FDR, {DIFFICULTY} null)"] = t.get("pct_significant_within")
    out["pairs of different models without τ"] = t.get("pairs_undefined")
    out = out.assign(**with_ci(t, "self_minus_other", "self − other τ-b (95% CI)", digits=3))
    out["permutation p"] = t.get("self_other_p")
    out["share of models self > other"] = t.get("share_self_above")
    out["not analysed because"] = t["note"].fillna("")
    return out


def tau_frame(confidence: pd.DataFrame, correct: pd.DataFrame) -> pd.DataFrame:
    """:func:`tau_matrix` as a judge x target DataFrame."""
    K = tau_matrix(confidence.to_numpy(dtype=float), correct.to_numpy(dtype=float))
    return pd.DataFrame(K, index=confidence.columns, columns=correct.columns)


def model_vendors(models) -> pd.Series:
    """Each model's vendor: from the model metadata table (:mod:`metacog.data.model_metadata`)
    where it lists the model, else the part of the id before '/' ('openai/gpt-4o' -> 'openai'),
    else missing (a name such as 'gpt-4o' or 'model-01' says nothing about its vendor)."""
    from metacog.data.model_metadata import model_metadata

    try:
        table = model_metadata()
        known = dict(zip(table["model"], table["vendor"]))
    except (OSError, ValueError):
        known = {}
    out = {}
    for m in models:
        name = str(m).split("@", 1)[0]
        v = known.get(name)
        if not isinstance(v, str) or not v:
            v = name.split("/", 1)[0] if "/" in name else None
        out[m] = v
    return pd.Series(out, dtype=object)


def vendor_blocks(panels: list) -> pd.DataFrame:
    """Mean cross-calibration tau of judge-target pairs from the same vendor and from different
    vendors in the first of ``panels`` (:func:`model_vendors`; self-pairs and models of unknown
    vendor left out), with the number of pairs. With no panel, or without two vendors and a
    same-vendor pair to compare, one row (``result``) saying why."""
    from metacog.tidy.report import fmt_count

    if not panels:
        return pd.DataFrame({"result": [f"No panel has {MIN_MODELS} or more models."]})
    taus = tau_frame(panels[0].confidence, panels[0].correct)
    vendor = model_vendors(taus.index)
    unknown = int(vendor.isna().sum())
    rows = []
    for j in taus.index:
        for k in taus.columns:
            if j != k and np.isfinite(taus.at[j, k]) and pd.notna(vendor[j]) and pd.notna(vendor.get(k)):
                rows.append({"same vendor": vendor[j] == vendor[k], "tau": taus.at[j, k]})
    t = pd.DataFrame(rows, columns=["same vendor", "tau"])
    if t["same vendor"].nunique() < 2:
        if unknown:
            why = (f"the vendor is unknown for {fmt_count(unknown, 'model')} of {panels[0].name} (no "
                   f"'vendor/' prefix in the name, and not in the model metadata)")
        else:
            why = ("all its models are from one vendor" if t["same vendor"].all()
                   else "no two of its models share a vendor")
        return pd.DataFrame({"result": [f"Same- and different-vendor pairs cannot be compared: {why}, "
                                        f"so there are not both kinds of pair."]})
    out = t.groupby("same vendor")["tau"].agg(["mean", "count"]).reset_index()
    return out.rename(columns={"mean": "mean τ-b", "count": "pairs"})


def vendor_difference(panels: list, *, n_boot: int = 1000, seed: int = 0) -> dict | None:
    """Mean cross-calibration tau of same-vendor pairs minus different-vendor pairs in the first
    of ``panels`` (the pairs of :func:`vendor_blocks`), with a percentile interval from resampling
    *models* (pairs that share a model are not independent, so models are the unit): each
    resample draws the panel's models with replacement and averages over the pairs of two
    different draws. Returns estimate, ci_low, ci_high, models, n_boot (the resamples that hold
    both kinds of pair); None when the panel does not hold both kinds of pair."""
    if not panels:
        return None
    taus = tau_frame(panels[0].confidence, panels[0].correct)
    vendor = model_vendors(taus.index)
    keep = [m for m in taus.index if pd.notna(vendor.get(m))]
    T = taus.loc[keep, keep].to_numpy(dtype=float)
    v = vendor[keep].to_numpy()
    same = v[:, None] == v[None, :]

    def diff(idx):
        pick = np.asarray(idx)
        t, s = T[np.ix_(pick, pick)], same[np.ix_(pick, pick)]
        off = (pick[:, None] != pick[None, :]) & np.isfinite(t)
        a, b = t[off & s], t[off & ~s]
        return a.mean() - b.mean() if len(a) and len(b) else np.nan

    est = diff(np.arange(len(keep)))
    if not np.isfinite(est):
        return None
    rng = np.random.default_rng(seed)
    boots = np.array([diff(rng.integers(0, len(keep), len(keep))) for _ in range(int(n_boot))])
    boots = boots[np.isfinite(boots)]
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return {"estimate": float(est), "ci_low": float(lo), "ci_high": float(hi), "models": len(keep),
            "n_boot": int(len(boots))}


def rerun_first(panels: list, **settings) -> pd.DataFrame:
    """:func:`analyse` of the first of ``panels`` with other settings (no difficulty control),
    labelled with its name; an empty result table when there is no panel. Give it the page's
    ``n_boot`` and ``seed``: the self-minus-other interval is then the page's on identical items
    (the same :func:`bootstrap_taus`, resamples and seed). Remembered on disk (:mod:`metacog.memo`)."""
    from metacog.memo import memo

    if not panels:
        return pd.DataFrame(columns=["panel", "subset", "items", "models", "note"])
    p = panels[0]
    return memo(analyse, p.confidence, p.correct, control=False, **settings).assign(panel=p.name)
