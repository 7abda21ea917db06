"""What the rank-one page shows: its structure and alignment tables for display, and the
tetrachoric matrix with its models ordered by first-factor loading."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from metacog import stats


def ordered_correlations(X: pd.DataFrame) -> tuple[pd.DataFrame, list]:
    """The tetrachoric matrix of ``X`` and its models ordered by first-factor loading."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tet = stats.tetrachoric(X.loc[:, X.nunique() == 2])
        fa = stats.factor_analysis(tet.rho, 1)
    order = list(fa.loadings.iloc[:, 0].sort_values(ascending=False).index)
    return tet.rho, order


def display_table(structure_table: pd.DataFrame) -> pd.DataFrame:
    """The structure table for a page: one row per (panel, matrix, subset), intervals in words."""
    from metacog.hypotheses.common import with_ci

    t = structure_table
    if "panel" not in t:  # a message table ("result"), shown as it is
        return t
    out = pd.DataFrame({"panel": t["panel"], "design": t.get("design", "unknown"), "matrix": t["matrix"],
                        "subset": t["subset"], "models": t["models"], "items": t["items"]})
    out = out.assign(**with_ci(t, "eig_share", "first-factor share (95% CI)", digits=2))
    if "share" in t:  # the fitted one-factor model's share: the other reading of paper 1's statistic
        out = out.assign(**with_ci(t, "share", "one-factor share, minres (95% CI)", digits=2))
    out = out.assign(**with_ci(t, "eig_ratio", "eig1/eig2 (95% CI)", digits=2))
    out["factors kept by parallel analysis"] = t.get("pa_factors")
    out["shape, against the stated lines"] = shape_labels(t)
    out["not analysed because"] = t["note"].fillna("")
    return out


def _side(lo, hi, line: float, what: str) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{what}: no interval"
    if lo > line:
        return f"{what} ≥ {line:g}"
    if hi < line:
        return f"{what} < {line:g}"
    return f"{what} vs {line:g}: cannot tell"


def shape_labels(structure_table: pd.DataFrame) -> list:
    """Each row's shape in the words of the chapter's stated lines, read off the 95% intervals
    (never parallel analysis alone): the first-factor share against
    :data:`metacog.hypotheses.rank_one.SHARE_LINE` and eig1/eig2 against
    :data:`metacog.stats.structure.DOMINANCE_RATIO` — 'share ≥ 0.3; eig1/eig2 < 4'."""
    from metacog.hypotheses.rank_one.lines import SHARE_LINE
    from metacog.stats.structure import DOMINANCE_RATIO

    t = structure_table
    out = []
    for r in t.to_dict("records"):
        g = lambda k: float(r.get(k, np.nan)) if r.get(k) is not None else np.nan  # noqa: E731
        out.append(f"{_side(g('eig_share_ci_low'), g('eig_share_ci_high'), SHARE_LINE, 'share')}; "
                   f"{_side(g('eig_ratio_ci_low'), g('eig_ratio_ci_high'), DOMINANCE_RATIO, 'eig1/eig2')}")
    return out


def display_removed(alignment_table: pd.DataFrame) -> pd.DataFrame:
    """:func:`metacog.hypotheses.rank_one.removed_items` for a page."""
    from metacog.hypotheses.rank_one.lines import MIN_REMOVED_SHARE, removed_items

    k = removed_items(alignment_table)
    return pd.DataFrame({"panel": k["panel"], "items": k["items"], "unanimous items removed": k["removed"],
                         "share removed": k["removed_share"], "items left (contested)": k["contested"],
                         f"informative (≥ {MIN_REMOVED_SHARE:.0%} removed)":
                             np.where(k["informative"], "yes", "no: not informative")})


def display_alignment(alignment_table: pd.DataFrame) -> pd.DataFrame:
    """The alignment table for a page, the correlation with its interval in words."""
    from metacog.hypotheses.common import with_ci

    t = alignment_table
    out = pd.DataFrame({"panel": t["panel"], "design": t.get("design", "unknown"),
                        "items": t["subset"].map({"all": "all", "contested": "contested"}),
                        "n items": t["items"], "models": t["models"]})
    out = out.assign(**with_ci(t, "r_items", "correlation of item positions (95% CI)", digits=2))
    out["not analysed because"] = t["note"].fillna("")
    return out


#: The fewest models of a panel that must pass the adequacy gate for its mean pairwise τ-b to be
#: shown beside paper 1's: one pair of models whose answers carry signal.
MIN_GATED = 2


def adequacy_counts(panelset) -> pd.DataFrame:
    """The adequacy gate (:func:`metacog.hypotheses.adequacy.adequacy`, on each panel's own rows as
    :func:`metacog.hypotheses.miscalibration.population.panel_gate` runs it) counted per panel:
    panel, models, passing, and ``reasons`` (the rules each failing model breaks)."""
    from metacog.hypotheses.adequacy import failed_rules
    from metacog.hypotheses.miscalibration.population import panel_gate

    rows = []
    for p in panelset:
        g = panel_gate(p)
        fail = g[~g["carries_signal"].astype(bool)]
        rows.append({"panel": p.name, "models": len(g), "passing": int(g["carries_signal"].astype(bool).sum()),
                     "reasons": [f"{r['model']}: {failed_rules(r)}" for r in fail.to_dict("records")]})
    return pd.DataFrame(rows, columns=["panel", "models", "passing", "reasons"])


def paper1_blocks(comparison: pd.DataFrame, gate: pd.DataFrame, *, n_null: int) -> dict:
    """Paper 1's comparison table (:func:`metacog.hypotheses.pairwise.paper1_comparison`, shown with
    :func:`~metacog.hypotheses.pairwise.display_comparison`) in two blocks: ``"comparable"``, paper 1's
    rows with our panels judged when paper 1's were (before answering), and ``"other"``, our panels
    judged at another time, which paper 1's figures do not describe.

    A column gives how many of each panel's models pass the adequacy gate (``gate``, from
    :func:`adequacy_counts`); where fewer than :data:`MIN_GATED` pass, the mean τ-b reads
    "no estimate (models at chance ...)" and the statistics computed from the same pairs are left
    missing (a page table shows '–').
    Our base-rate-matched null means are the mean of ``n_null`` simulated draws (the exact null's
    mean is 0), which the column's name says; paper 1's are its own figures."""
    from metacog.hypotheses import pairwise as hp

    shown = hp.display_comparison(comparison).reset_index(drop=True)
    c = comparison.reset_index(drop=True)
    ours = ~c["data"].astype(str).str.startswith("paper 1:")
    by_panel = gate.set_index("panel") if len(gate) else pd.DataFrame(columns=["models", "passing"])
    passing = ["–" if not o or d not in by_panel.index else
               f"{int(by_panel.at[d, 'passing'])} of {int(by_panel.at[d, 'models'])}"
               for o, d in zip(ours, c["data"])]
    at = list(shown.columns).index("models") + 1
    shown.insert(at, "models passing the adequacy gate", passing)
    tau = next(col for col in shown.columns if col.startswith("mean τ-b"))
    blank = [col for col in shown.columns if "null mean" in col or col.startswith("% of pairs significant")]
    for i, (o, d) in enumerate(zip(ours, c["data"])):
        if o and d in by_panel.index and int(by_panel.at[d, "passing"]) < MIN_GATED:
            shown.at[i, tau] = (f"no estimate (models at chance: {int(by_panel.at[d, 'passing'])} of "
                                f"{int(by_panel.at[d, 'models'])} pass the adequacy gate)")
            for col in blank:
                shown.at[i, col] = np.nan  # a page table shows it as '–
    base = next(col for col in shown.columns if col.startswith(hp.NULL_LABELS["null_base_rate"]))
    shown = shown.rename(columns={base: f"{base}; ours: mean of {n_null} simulated draws, exact value 0"})
    paper_timing = set(c.loc[~ours, "timing"])
    same = c["timing"].isin(paper_timing).to_numpy()
    return {"comparable": shown[same].reset_index(drop=True),
            "other": shown[~same].reset_index(drop=True)}


def paper1_sentence(comparison: pd.DataFrame, gate: pd.DataFrame, *, n_null: int) -> str:
    """What the page says under the comparison: which of our panels give no estimate because their
    models fail the adequacy gate (with the gate's reasons), which means include models that fail
    it, and how far our simulated null means lie from the exact null's 0."""
    from metacog.tidy.phrasing import join

    ours = comparison[~comparison["data"].astype(str).str.startswith("paper 1:")]
    g = gate[gate["panel"].isin(set(ours["data"]))]
    parts = []
    none = g[g["passing"] < MIN_GATED]
    for r in none.to_dict("records"):
        parts.append(f"In {r['panel']} {r['passing']} of {r['models']} models pass the adequacy gate "
                     f"({'; '.join(r['reasons'])}), so its row gives no estimate.")
    some = g[(g["passing"] >= MIN_GATED) & (g["passing"] < g["models"])]
    if len(some):
        parts.append("The means of " + join([f"{r['panel']} ({r['passing']} of {r['models']} models pass)"
                                             for r in some.to_dict("records")])
                     + " include the pairs of the models that fail the gate.")
    shown = ours[~ours["data"].isin(set(none["panel"]))]["null_base_rate"].dropna()
    if len(shown):
        far = float(shown.abs().max())
        spread = (f"the draws' means all round to 0.000" if far < 0.0005 else
                  f"the draws' means lie within {far:.3f} of it, which is simulation noise")
        parts.append(f"Our base-rate-matched null means are each the mean of {n_null} simulated draws; the exact "
                     f"null's mean is 0, and {spread}.")
    return " ".join(parts)


def random_raters(n_items: int, n_models: int, seed: int = 0) -> pd.DataFrame:
    """Independent yes/no raters (each yes with probability one half): no shared axis at all."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame((rng.random((n_items, n_models)) < 0.5).astype(float),
                        columns=[f"rater {j + 1}" for j in range(n_models)])


#: The rotation of :func:`second_factor`'s two-factor solution (psych's default for ``fa``).
ROTATION = "oblimin"


def second_factor(panels: list, top: int = 5) -> pd.DataFrame:
    """The models loading most on the second factor of a two-factor minres fit of the first
    panel's tetrachoric matrix, rotated by :data:`ROTATION` (oblique: the two factors may
    correlate, and after rotation factor 1 is no longer the first eigen-axis): panel, model,
    loading on rotated factor 1 and factor 2, and the same model's loadings on the unrotated
    factors ("unrotated 1", the first eigen-axis of the fit, and "unrotated 2"), strongest
    rotated second loading first. ``attrs`` hold ``rotation`` and ``factor_correlation`` (the
    rotated factors' correlation). With no panel, one row saying so."""

    if not panels:
        return pd.DataFrame({"result": ["No panel has enough models to fit two factors."]})
    X = panels[0].confidence
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tet = stats.tetrachoric(X.loc[:, X.nunique() == 2])
        fa = stats.factor_analysis(tet.rho, 2, rotate=ROTATION)
        plain = stats.factor_analysis(tet.rho, 2, rotate="none")
    L = fa.loadings.copy()
    L.columns = ["factor 1", "factor 2"]
    U = plain.loadings.copy()
    U.columns = ["unrotated 1", "unrotated 2"]
    L = L.join(U)
    order = L["factor 2"].abs().sort_values(ascending=False).index[:top]
    out = L.loc[order].rename_axis("model").reset_index().assign(panel=panels[0].name)[
        ["panel", "model", "factor 1", "factor 2", "unrotated 1", "unrotated 2"]]
    out.attrs["rotation"] = fa.rotation
    out.attrs["factor_correlation"] = (float(fa.phi.iloc[0, 1]) if fa.phi is not None else 0.0)
    return out
