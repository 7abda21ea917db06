"""What :func:`metacog.pages.place.place` returns: one model placed among a public panel."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from metacog.hypotheses.verdict import Verdict


@dataclass
class Placement:
    model: str
    panel: str
    probe: str
    headline: dict  # the new model's internal vs population row
    population: pd.DataFrame  # every model's row, the new one marked (column 'new')
    ranks: pd.DataFrame  # the new model's rank per metric
    recalibration: pd.DataFrame
    gate: dict
    verdict: Verdict
    probes: pd.DataFrame = field(default_factory=pd.DataFrame)  # the headline on each probe
    axis: pd.DataFrame = field(default_factory=pd.DataFrame)  # loading/threshold per model ('new')
    truncation: pd.DataFrame = field(default_factory=pd.DataFrame)  # the headline, cut replies missing / wrong
    panel_mean: dict = field(default_factory=dict)  # mean internal − population over the panel
    n_asked: int = 0  # items asked on the probe
    n_cut: int = 0  # of them, cut at the cap before answering (missing in the headline)

    def summary(self) -> pd.DataFrame:
        h = self.headline
        return pd.DataFrame([{"model": self.model, "panel": self.panel, "probe": self.probe,
                              "n_items": h["n_items"], "n_correct": h["n_correct"],
                              "auroc_internal": h["auroc_internal"],
                              "auroc_population": h["auroc_population"], "diff": h["diff"],
                              "ci_low": h["ci_low"], "ci_high": h["ci_high"], "mdd": h.get("mdd", np.nan),
                              "gate": self.gate["status"], "verdict": self.verdict.status}])
