"""The measures chapter's computations beyond the hand tables: the bootstrap-coverage simulation
and one public model's measures with their intervals (``notebooks/measures.md``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm, rankdata

from metacog import stats


def auroc_rows(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """The AUROC of each row's positives against its negatives (Mann–Whitney on ranks, ties
    counted half): ``pos`` is resamples × positives, ``neg`` resamples × negatives."""
    n_p, n_n = pos.shape[1], neg.shape[1]
    ranks = rankdata(np.concatenate([pos, neg], axis=1), axis=1)
    return (ranks[:, :n_p].sum(axis=1) - n_p * (n_p + 1) / 2) / (n_p * n_n)


def percentile_auroc(pos: np.ndarray, neg: np.ndarray, n_boot: int, rng) -> tuple[float, float]:
    """The 95% percentile-bootstrap interval of the AUROC of ``pos`` against ``neg``, each class
    resampled within itself."""
    ip = rng.integers(0, pos.size, (n_boot, pos.size))
    ineg = rng.integers(0, neg.size, (n_boot, neg.size))
    lo, hi = np.quantile(auroc_rows(pos[ip], neg[ineg]), [0.025, 0.975])
    return float(lo), float(hi)


def bootstrap_coverage(n_per_class: int, n_reps: int, n_boot: int, rng, *, d: float = 1.0) -> float:
    """The share of ``n_reps`` samples whose 95% percentile interval covers the true AUROC
    Φ(d/√2) of two unit normals ``d`` apart, with ``n_per_class`` answers of each kind."""
    truth = norm.cdf(d / np.sqrt(2))
    hits = 0
    for _ in range(n_reps):
        lo, hi = percentile_auroc(rng.normal(d, 1, n_per_class), rng.normal(0, 1, n_per_class), n_boot, rng)
        hits += lo <= truth <= hi
    return hits / n_reps


def _accuracy(y, c):
    return float(np.mean(y))


def _mean_confidence(y, c):
    return float(np.mean(c))


def _ece(y, c):
    return stats.ece(y, c).ece


def _smooth_ece(y, c):
    return float(stats.smooth_ece(y, c))


def _brier_part(part: str):
    def value(y, c):
        return getattr(stats.brier(y, c), part)
    return value


def one_model(correct, confidence, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Every measure of one model's confidence with its 95% interval: the type-2 AUROC with
    DeLong's, the rest (accuracy, mean confidence, ECE with 10 bins, smooth ECE, the Brier score
    and its reliability and resolution) by the percentile bootstrap over answers. Columns
    statistic, estimate, ci_low, ci_high."""
    y = np.asarray(correct, dtype=int)
    c = np.asarray(confidence, dtype=float)
    au = stats.auroc_ci(y, c)
    rows = [{"statistic": "type-2 AUROC (DeLong)", "estimate": au.estimate, "ci_low": au.ci_low,
             "ci_high": au.ci_high}]
    for name, fn in (("accuracy", _accuracy), ("mean confidence", _mean_confidence), ("ECE (10 bins)", _ece),
                     ("smooth ECE", _smooth_ece), ("Brier score", _brier_part("brier")),
                     ("Brier: reliability", _brier_part("reliability")), ("Brier: resolution", _brier_part("resolution"))):
        b = stats.bootstrap_ci(fn, y, c, n_boot=n_boot, seed=seed).iloc[0]
        rows.append({"statistic": name, "estimate": b["estimate"], "ci_low": b["ci_low"], "ci_high": b["ci_high"]})
    return pd.DataFrame(rows)
