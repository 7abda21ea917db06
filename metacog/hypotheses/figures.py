"""Figures the rank-one and pairwise chapters show, drawn from panels (matplotlib/seaborn).

Each function returns a figure even when no panel qualifies: a figure that says so in words,
so a page never breaks on a source with too few models. A page publishes figures through
:func:`glue_figure`, which puts one sentence saying why in place of a figure with no data.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from metacog.hypotheses.common import short_models


def large_panels(panelset, min_models: int) -> list:
    """The panels with at least ``min_models`` models, in source order."""
    return [p for p in panelset if p.confidence.shape[1] >= min_models]


def _message(text: str):
    fig, ax = plt.subplots(figsize=(7, 1.6))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    fig.metacog_empty = text  # what glue_figure says instead of this figure
    return fig


def _reference_line(line) -> bool:
    """A line drawn by ``axhline``/``axvline``: two points spanning the axes (0 to 1 in axes
    coordinates) along one axis, constant along the other."""
    xy = np.asarray(line.get_xydata(), dtype=float)
    if xy.shape != (2, 2):
        return False
    x, y = xy[:, 0], xy[:, 1]
    return bool((x[0] == x[1] and list(y) == [0.0, 1.0]) or (y[0] == y[1] and list(x) == [0.0, 1.0]))


def has_data(fig) -> bool:
    """Whether ``fig`` draws any data: a line in data coordinates, a non-empty collection
    (points, error bars, a heat map's mesh), an image or a bar. Reference lines (``axhline``,
    ``axvline``), axes, ticks and text do not count."""
    from matplotlib.collections import PathCollection

    for ax in fig.axes:
        if ax.images or any(p.get_width() != 0 or p.get_height() != 0 for p in ax.patches
                            if hasattr(p, "get_width")):
            return True
        if any(len(line.get_xdata()) and not _reference_line(line) for line in ax.lines):
            return True
        if any(len(c.get_offsets()) if isinstance(c, PathCollection) else len(c.get_paths())
               for c in ax.collections):  # a scatter's path is its marker: count its points
            return True
    return False


def glue_figure(key: str, fig, caption: str, *, empty: str | None = None) -> None:
    """Glue ``fig`` as ``key`` and ``caption`` as ``key + '_caption'`` (a page's
    ``{glue:figure}`` shows the first, captioned with ``{glue:text}`` of the second), then close
    the figure. A figure without data (:func:`has_data`) is not published: the figure slot stays
    empty and the caption is one sentence saying why (``empty``, else the figure's own message,
    else a generic one)."""
    from IPython.display import Markdown
    from myst_nb import glue

    drawn = fig is not None and has_data(fig)
    why = empty or getattr(fig, "metacog_empty", None) or "No panel of this run has data for this figure."
    if drawn:
        glue(key, fig, display=False)
    else:
        glue(key, Markdown("\u00a0"), display=False)  # an empty slot: the caption says why
    glue(f"{key}_caption", caption if drawn else why.rstrip(".") + "; there is nothing to draw.",
         display=False)
    if fig is not None:
        plt.close(fig)


def heatmap(matrix: pd.DataFrame, order: list, *, title: str, label: str, cmap: str = "viridis",
            vmin=None, vmax=None, center=None, xlabel: str = "", ylabel: str = ""):
    """A models x models heat map in ``order``; tick labels only when there are at most 40.
    Signed values (correlations, τ) take a diverging ``cmap`` with ``center=0`` and limits that
    hold the negative values too, so none is clipped."""
    import seaborn as sns

    short = short_models(order)
    fig, ax = plt.subplots(figsize=(9.5, 8))
    sns.heatmap(matrix.loc[order, order].set_axis(short, axis=0).set_axis(short, axis=1), cmap=cmap,
                vmin=vmin, vmax=vmax, center=center, ax=ax, cbar_kws={"label": label},
                xticklabels=len(order) <= 40, yticklabels=len(order) <= 40)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    fig.tight_layout()
    return fig


def correlation_heatmap(panelset, min_models: int):
    """Tetrachoric correlations of the first large panel, models by first-factor loading.
    Returns (figure, the panel's name or a sentence)."""
    from metacog.hypotheses.rank_one import ordered_correlations

    big = large_panels(panelset, min_models)
    if not big:
        return _message(f"No panel has {min_models} or more models."), "none"
    rho, order = ordered_correlations(big[0].confidence)
    return heatmap(rho, order, title=f"{big[0].name}: tetrachoric correlations", label="tetrachoric ρ",
                   cmap="RdBu_r", vmin=-1, vmax=1, center=0), big[0].name


def calibration_heatmap(panelset, min_models: int):
    """Judge x target tau-b of the first large panel. Returns (figure, the panel's name)."""
    from metacog.hypotheses.pairwise import tau_frame

    big = large_panels(panelset, min_models)
    if not big:
        return _message(f"No panel has {min_models} or more models."), "none"
    M = tau_frame(big[0].confidence, big[0].correct)
    order = list(M.mean(axis=1).sort_values(ascending=False).index)
    top = float(np.nanmax(np.abs(M.to_numpy(dtype=float)))) if np.isfinite(M.to_numpy(dtype=float)).any() else 1.0
    return heatmap(M, order, title=f"{big[0].name}: judge's confidence (rows) against target's correctness",
                   label="Kendall τ-b", cmap="RdBu_r", vmin=-top, vmax=top, center=0,
                   xlabel="target (correctness)", ylabel="judge (confidence)"), big[0].name


def scree_plot(panelset, min_models: int, n_factors: int = 8):
    """Eigenvalues of every large panel's tetrachoric matrix, first ``n_factors`` factors."""
    import seaborn as sns

    from metacog.stats.structure import scree

    big = large_panels(panelset, min_models)
    if not big:
        return _message(f"No panel has {min_models} or more models.")
    ev = scree({p.name: p.confidence.loc[:, p.confidence.nunique() == 2] for p in big})
    ev = ev[ev["factor"] <= n_factors]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    sns.lineplot(data=ev, x="factor", y="eigenvalue", hue="matrix", marker="o", ax=ax)
    ax.axhline(1, ls="--", color="grey", lw=1)
    ax.set(title="Scree plot of the confidence panels", xlabel="factor", ylabel="eigenvalue")
    ax.legend(fontsize=8, title="")
    fig.tight_layout()
    return fig
