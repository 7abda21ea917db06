"""The rank-one chapter: is the models' binary confidence close to rank one?

For each judgment panel (items x models, 0/1) this module fits the tetrachoric matrix,
a one-factor solution and parallel analysis (:func:`metacog.stats.structure.rank_one`), and adds
bootstrap intervals over items for the first-factor share and for the ratio of the first
two eigenvalues, the same for the models' correctness (the "performance factor"), and the
same again on contested items (items on which the models do not all agree).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from metacog import stats
from metacog.hypotheses.by_design import (by_design, design_head, design_of, design_order,  # noqa: F401
                                          design_sentence, group_sentence, verdict_frame)
from metacog.hypotheses.common import ChapterResult, chapter_result
from metacog.hypotheses.by_design import verdict_frame_text as display_verdicts  # noqa: F401
from metacog.stats.structure import DOMINANCE_RATIO, classify, rank_one  # noqa: F401 (DOMINANCE_RATIO re-exported)
from metacog.tidy.phrasing import plural
from metacog.hypotheses.rank_one.display import (ROTATION, adequacy_counts, display_alignment,  # noqa: F401
                                                  display_table, ordered_correlations, paper1_blocks,
                                                  paper1_sentence, random_raters, second_factor)
from metacog.hypotheses.rank_one import protocols
from metacog.hypotheses.rank_one.lines import (DOMINANCE_RATIO_WHY, MIN_ITEMS, MIN_MODELS,  # noqa: F401
                                               MIN_REMOVED_SHARE, NEGLIGIBLE_R, NEGLIGIBLE_R_WHY, SHARE_LINE,
                                               SHARE_LINE_WHY, removed_items)
from metacog.hypotheses.rank_one.decide import (DOMINANCE_CLAIM, LINK_CLAIM, RATIO_CLAIM,  # noqa: F401
                                                verdict_paragraph, verdicts)
from metacog.hypotheses.rank_one.protocols import (SENSITIVITY_TEMPERATURE, mixed_protocols, temper,  # noqa: F401
                                                   sensitivity_sentence)


def _eigen_stats(X: np.ndarray) -> tuple[float, float, float]:
    """(first-eigenvalue share, eig1/eig2, one-factor variance share) of binary ``X``: the plain
    computation, on a matrix (the bootstrap reaches the same numbers from weighted tables)."""
    return _fit_matrix(X)[0]


def _fit_matrix(X: np.ndarray):
    """(:func:`_eigen_stats`'s three numbers, the unsmoothed tetrachoric matrix, the one-factor
    uniquenesses) of binary ``X``; the last two are None when fewer than two columns vary."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tet = stats.tetrachoric(pd.DataFrame(X))
    rho = tet.rho.to_numpy()
    if rho.shape[0] < 2:
        return (np.nan, np.nan, np.nan), None, None
    numbers, psi = _from_rho(rho)
    return numbers, tet.raw_rho.to_numpy(), psi


def _from_rho(rho: np.ndarray, start=None):
    """The three numbers of a correlation matrix, and the one-factor uniquenesses they came with."""
    m = rho.shape[0]
    ev = np.sort(np.linalg.eigvalsh(rho))[::-1]
    share, psi = stats.one_factor_share(rho, start)[:2]
    return (float(ev[0] / m), float(ev[0] / ev[1]) if ev[1] > 0 else np.nan, share), psi


def _from_rho_stack(rho: np.ndarray, ok: np.ndarray, psi0) -> list:
    """:func:`_from_rho`'s three numbers for every matrix of a stack (b x k x k) whose ``ok`` is
    True, started from the uniquenesses ``psi0``; None for the others (and for all when ``psi0``
    does not fit). The eigenvalues come from one batched call and the one-factor fits from
    :func:`metacog.stats.factor.one_factor_share_stack` (its unsolved cases from
    :func:`metacog.stats.one_factor_share`, as :func:`_from_rho` fits them)."""
    out = [None] * len(rho)
    if psi0 is None or rho.shape[1] != psi0.size or not ok.any():
        return out
    sel = np.flatnonzero(ok)
    m = rho.shape[1]
    ev = np.linalg.eigvalsh(rho[sel])[:, ::-1]
    share, _, solved = stats.factor.one_factor_share_stack(rho[sel], psi0)
    for i, r in enumerate(sel):
        sh = share[i] if solved[i] else stats.one_factor_share(rho[r], psi0)[0]
        out[r] = (float(ev[i, 0] / m), float(ev[i, 0] / ev[i, 1]) if ev[i, 1] > 0 else np.nan, float(sh))
    return out


STRUCTURE_STATISTICS = ("first eigenvalue share", "eig1/eig2", "one-factor share")

#: The values each statistic can take: a share lies in [0, 1]; the first eigenvalue is the
#: largest, so eig1/eig2 is at least 1.
STRUCTURE_BOUNDS = {"first eigenvalue share": (0.0, 1.0), "eig1/eig2": (1.0, np.inf),
                    "one-factor share": (0.0, 1.0)}


@stats.single_blas_thread
def bootstrap_structure(X: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0,
                        ci: float = 0.95) -> pd.DataFrame:
    """Percentile intervals, resampling items, of the first-eigenvalue share, eig1/eig2 and
    the one-factor variance share of binary ratings ``X`` (items x models).

    Returns one row per statistic with estimate, ci_low, ci_high and n_boot (resamples in
    which the statistic was defined). A resample repeats some items, which adds noise to every
    tetrachoric correlation and pulls the eigenvalue statistics down (by a tenth or more of the
    ratio); the draws are therefore re-centred on the estimate before the percentiles are taken
    (a first-order bias correction), so the interval measures spread, not the resampling bias;
    an end that the shift carries past the statistic's range (eig1/eig2 below 1, a share
    outside [0, 1]) is clipped to it (:func:`metacog.stats.resample.clip_to_range`, column ``clipped``).
    Resamples come from :mod:`metacog.stats.resample` (weighted 2x2 tables, every pair fitted at
    once); one in which a model's judgments are all equal is computed on the resampled matrix
    with that model dropped, as the estimate would be.
    """
    A = X.to_numpy(dtype=float)
    n = A.shape[0]
    est, raw, psi0 = _fit_matrix(A)  # the full-sample fit gives the estimate and every resample's start
    tables = stats.tables.BinaryTables(A)
    draws = []
    for W in stats.resample.item_weights(n, n_boot, seed=seed):
        rho, ok = stats.resample.tetrachoric_stack(tables, W, start=raw if raw is not None and
                                                   raw.shape[0] == A.shape[1] else None)
        fitted = _from_rho_stack(rho, ok, psi0)
        for r in range(len(W)):
            draws.append(fitted[r] if fitted[r] is not None else
                         _eigen_stats(np.repeat(A, W[r].astype(int), axis=0)))
    return stats.resample.clip_to_range(stats.resample.percentile_table(
        STRUCTURE_STATISTICS, est, np.array(draws), ci=ci, recentre=True), STRUCTURE_BOUNDS)


def structure(X: pd.DataFrame, *, n_iter: int = 20, reference: str = "resampled", n_boot: int = 1000,
              seed: int = 0, parallel: bool = True) -> dict:
    """Factor structure of one binary matrix with intervals, as one dict (a table row).

    Keys: models, items, models_dropped (constant columns), share (one-factor variance share)
    and eig_share (first eigenvalue over the number of models) and eig_ratio (eig1/eig2), each
    with ``_ci_low``/``_ci_high``; mean_rho; pa_factors (parallel analysis); shape (rank one /
    one dominant factor / several factors); and note (why a matrix was not analysed).
    ``parallel=False`` skips parallel analysis (seconds per draw with 80 models); pa_factors is
    then missing and the shape rests on the eigenvalue ratio alone.
    """
    varying = X.loc[:, X.nunique() == 2]
    row = {"models": varying.shape[1], "items": int(varying.notna().any(axis=1).sum()),
           "models_dropped": X.shape[1] - varying.shape[1], "note": ""}
    if varying.shape[1] < MIN_MODELS:
        row["note"] = (f"{plural(varying.shape[1], 'model')} with varying judgments; a rank-one question needs "
                       f"at least {MIN_MODELS}")
        return row
    if row["items"] < MIN_ITEMS:
        row["note"] = f"{row['items']} items; a factor analysis needs at least {MIN_ITEMS}"
        return row
    if parallel:
        r = rank_one(varying, n_iter=n_iter, reference=reference, seed=seed)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rho = stats.tetrachoric(varying).rho.to_numpy()
        ev = np.sort(np.linalg.eigvalsh(rho))[::-1]
        r = {"mean_rho": float(rho[~np.eye(len(rho), dtype=bool)].mean()), "pa_factors": np.nan,
             "eig1": float(ev[0]), "eig2": float(ev[1])}
    boot = bootstrap_structure(varying, n_boot=n_boot, seed=seed).set_index("statistic")
    for key, name in (("eig_share", "first eigenvalue share"), ("eig_ratio", "eig1/eig2"),
                      ("share", "one-factor share")):
        row[key] = boot.at[name, "estimate"]
        row[f"{key}_ci_low"] = boot.at[name, "ci_low"]
        row[f"{key}_ci_high"] = boot.at[name, "ci_high"]
    # without parallel analysis pa_factors is NaN, so classify() decides on the eigenvalue ratio alone
    row.update(mean_rho=r["mean_rho"], pa_factors=r["pa_factors"], shape=classify(r))
    return row


def contested(confidence: pd.DataFrame, correct: pd.DataFrame, rule: str = "either") -> pd.Index:
    """Items on which the models do not all agree (rule of :func:`metacog.stats.unanimous_items`)."""
    un = stats.unanimous_items(confidence, correct, how=rule)
    return confidence.index[~un.to_numpy()]


def analyse(confidence: pd.DataFrame, correct: pd.DataFrame, *, n_iter: int = 20,
            reference: str = "resampled", n_boot: int = 1000, unanimous_rule: str = "either",
            seed: int = 0) -> pd.DataFrame:
    """The rank-one table of one panel: confidence and correctness, on all and contested items.

    One row per (matrix, subset) with the columns of :func:`structure`. Parallel analysis runs
    on the confidence matrix over all items only, the matrix the chapter's claim is about.
    """
    keep = contested(confidence, correct, unanimous_rule)
    rows = []
    for matrix, X in (("confidence", confidence), ("correctness", correct)):
        for subset, part in (("all items", X), ("contested items", X.loc[keep])):
            with warnings.catch_warnings():
                # a Heywood case moves the one-factor loadings by ~1e-3 (metacog.stats.factor), below
                # the two decimals any page shows; it is not a warning for the reader
                warnings.filterwarnings("ignore", message="factor_analysis: Heywood case")
                row = structure(part, n_iter=n_iter, reference=reference, n_boot=n_boot, seed=seed,
                                parallel=(matrix, subset) == ("confidence", "all items"))
            rows.append({"matrix": matrix, "subset": subset, **row})
    return pd.DataFrame(rows)


def table(panelset, *, n_iter: int = 20, reference: str = "resampled", n_boot: int = 1000,
          unanimous_rule: str = "either", seed: int = 0) -> pd.DataFrame:
    """:func:`analyse` for every panel of a :class:`metacog.hypotheses.panels.PanelSet`: one row per
    (panel, matrix, subset) with the panel's design (when its judgments were made), remembered on
    disk while data, settings and code are unchanged.

    The defaults are the book's (``notebooks/manifest.yml``, rank-one-default), so a page that
    shows these statistics with the defaults shows the same intervals as this chapter."""
    from metacog.hypotheses.common import per_panel

    return with_design(per_panel(panelset, analyse, n_iter=n_iter, reference=reference, n_boot=n_boot,
                                 unanimous_rule=unanimous_rule, seed=seed), panelset)


def with_design(t: pd.DataFrame, panelset) -> pd.DataFrame:
    """``t`` with a ``design`` column after ``probe``: each panel's timing
    (:attr:`metacog.hypotheses.panels.Panel.design`), "unknown" for a panel not in ``panelset``."""
    if not len(t) or "panel" not in t:
        return t
    timing = {p.name: p.design.timing for p in panelset}
    t = t.drop(columns=["design"], errors="ignore")
    at = list(t.columns).index("probe") + 1 if "probe" in t else 1
    t.insert(at, "design", t["panel"].map(timing).fillna("unknown"))
    return t


#: Draws of paper 1's base-rate-matched null behind the comparison table's null means (the pairwise
#: chapter's default, so the remembered results are shared).
N_NULL = 200


def mean_tau_table(panelset, *, n_boot: int = 1000, unanimous_rule: str = "either",
                   seed: int = 0) -> pd.DataFrame:
    """Paper 1's pairwise statistics for the comparison table: the pairwise chapter's own
    :func:`metacog.hypotheses.pairwise.table`, called as that chapter calls it (with its
    difficulty-stratified null, ``control=True``), so with the same ``n_boot`` and ``seed`` its
    mean-τ intervals and both nulls are the pairwise page's, not a second estimate of the same
    thing (and the remembered results are shared)."""
    from metacog.hypotheses import pairwise

    return pairwise.table(panelset, n_boot=n_boot, unanimous_rule=unanimous_rule, control=True, n_null=N_NULL,
                          seed=seed)


def alignment(confidence: pd.DataFrame, correct: pd.DataFrame, *, unanimous_rule: str = "either") -> pd.DataFrame:
    """Does the confidence axis line up with the performance axis, on all and contested items?

    Both one-factor axes are fitted on each subset (:func:`metacog.stats.axis_alignment`); one
    row per subset with items, the correlation of item positions ``r_items`` and its Fisher-z
    interval, and a note when the axes could not be fitted.
    """
    varying = confidence.columns[(confidence.nunique() == 2) & (correct.nunique() == 2)]
    rows = []
    if len(varying) < MIN_MODELS:
        # items counted as the structure table counts them: those the varying models judged
        judged = int(confidence[varying].notna().any(axis=1).sum())
        for subset in ("all", "contested"):
            rows.append({"subset": subset, "items": judged, "models": len(varying),
                         "r_items": np.nan, "r_items_ci_low": np.nan, "r_items_ci_high": np.nan,
                         "note": f"{plural(len(varying), 'model')} {'varies' if len(varying) == 1 else 'vary'} "
                                 f"in both confidence and correctness; need {MIN_MODELS}"})
        return pd.DataFrame(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = stats.axis_alignment(confidence[varying], correct[varying], unanimous=unanimous_rule)
    for r in a.to_dict("records"):
        lo, hi = stats.correlation_ci(r.get("r_items", np.nan), int(r["n_items"]))
        rows.append({"subset": r["subset"], "items": int(r["n_items"]), "models": len(varying),
                     "r_items": r.get("r_items", np.nan), "r_items_ci_low": lo, "r_items_ci_high": hi,
                     "note": r.get("error", "") if isinstance(r.get("error", ""), str) else ""})
    return pd.DataFrame(rows)


def alignment_table(panelset, *, unanimous_rule: str = "either") -> pd.DataFrame:
    """:func:`alignment` for every panel, one row per (panel, subset), with the panel's design."""
    from metacog.hypotheses.common import per_panel

    return with_design(per_panel(panelset, alignment, unanimous_rule=unanimous_rule), panelset)


def confidence_row(panel, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The structure of one panel's confidence over all items, without parallel analysis, as a
    one-row table in the layout of :func:`table` (for quick what-ifs)."""
    row = structure(panel.confidence, n_boot=n_boot, seed=seed, parallel=False)
    return pd.DataFrame([{"panel": panel.name, "matrix": "confidence", "subset": "all items", **row}])


@chapter_result
class Recut(ChapterResult):
    """:func:`what_if_cut`'s ``table`` (one row as in :func:`table`, or a ``result`` row saying why
    nothing was re-cut), ``sentence`` (how many models become constant) and ``cut``."""

    table: pd.DataFrame
    sentence: str
    cut: float

    def summary(self) -> pd.DataFrame:
        """The re-cut row with the ``cut`` and the ``sentence`` beside it."""
        return self.table.assign(cut=self.cut, sentence=self.sentence)


def what_if_cut(panelset, cut: float, *, n_boot: int = 1000, seed: int = 0) -> Recut:
    """Re-cut the first panel with continuous confidence at a fixed ``cut`` and refit its
    structure (a :class:`Recut`). Panels that are yes/no already cannot be re-cut."""
    from metacog.hypotheses.panels import panels

    first = next((p for p in panelset if p.cut != "binary"), None)
    if first is None:
        return Recut(pd.DataFrame({"result": ["Every panel is yes/no already: there is nothing to re-cut."]}),
                     "No panel has continuous confidence.", float(cut))
    again = panels([first.source], cuts={first.source: cut})
    p = next(q for q in again if (q.benchmark, q.probe) == (first.benchmark, first.probe))
    n_const = int(p.cut_report["constant"].sum())
    who = "none" if n_const == 0 else str(n_const)
    verb = "gives" if n_const == 1 else "give"
    text = (f"At a fixed cut of {cut:g}, {who} of the {len(p.cut_report)} models of {p.name} "
            f"{verb} the same judgment on every item.")
    return Recut(confidence_row(p, n_boot=n_boot, seed=seed), text, float(cut))


def temperature_sensitivity(panelset, decided: list, *, n_iter: int = 20, reference: str = "resampled",
                            n_boot: int = 1000, unanimous_rule: str = "either", seed: int = 0,
                            temperature: float = SENSITIVITY_TEMPERATURE) -> pd.DataFrame:
    """:func:`metacog.hypotheses.rank_one.protocols.temperature_sensitivity` with this chapter's
    :func:`table`, :func:`alignment_table` and :func:`verdicts` and their settings."""
    def decide(ps):
        return verdicts(table(ps, n_iter=n_iter, reference=reference, n_boot=n_boot,
                              unanimous_rule=unanimous_rule, seed=seed),
                        alignment_table(ps, unanimous_rule=unanimous_rule))
    return protocols.temperature_sensitivity(panelset, decided, decide, temperature=temperature)
