"""The measures chapter's computations beyond the hand tables: the bootstrap-coverage simulation,
one public model's measures with their intervals, smooth ECE from its definition, and phi against
tetrachoric on a pair of models (``notebooks/measures.md``)."""

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


def smoothed_area(confidence, correct, sigma: float, *, grid_points: int = 4000, images: int = 3) -> float:
    """The area under |kernel-smoothed residual| at bandwidth ``sigma``, from the definition:
    each residual (right 1 or wrong 0, minus the confidence) spread by a Gaussian reflected at 0
    and 1 (the images at 2j ± confidence, |j| ≤ ``images``), averaged over the answers, and the
    area taken by the midpoint rule on ``grid_points`` points of [0, 1]. An independent route to
    :func:`metacog.stats.smooth_ece` (which sums the kernel's cosine series instead)."""
    c, y = np.asarray(confidence, float), np.asarray(correct, float)
    t = (np.arange(grid_points) + 0.5) / grid_points
    k = sum(norm.pdf(t[:, None] - c[None, :] - 2 * j, scale=sigma)
            + norm.pdf(t[:, None] + c[None, :] - 2 * j, scale=sigma) for j in range(-images, images + 1))
    return float(np.abs(k @ (y - c) / len(c)).mean())


def smooth_ece_by_hand(confidence, correct, *, steps: int = 40) -> float:
    """Smooth ECE as its definition states it: the bandwidth at which :func:`smoothed_area`
    equals the bandwidth (the area falls as the bandwidth grows), found by bisection on [0.001, 1]."""
    lo, hi = 1e-3, 1.0
    for _ in range(int(steps)):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if smoothed_area(confidence, correct, mid) > mid else (lo, mid)
    return (lo + hi) / 2


def _phi_tet(a: np.ndarray) -> tuple[float, float]:
    return (float(np.corrcoef(a[:, 0], a[:, 1])[0, 1]),
            float(stats.tetrachoric(pd.DataFrame(a, columns=["a", "b"])).rho.iloc[0, 1]))


def phi_against_tetrachoric(pair: np.ndarray, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Phi (Pearson on 0/1), the tetrachoric correlation and their difference for two binary
    columns (items × 2), each with a 95% percentile interval from resampling items."""
    pair = np.asarray(pair, float)
    point = _phi_tet(pair)
    rng = np.random.default_rng(seed)
    boots = np.array([_phi_tet(pair[rng.integers(0, len(pair), len(pair))]) for _ in range(int(n_boot))])
    gap = boots[:, 1] - boots[:, 0]
    lo, hi = np.quantile(np.column_stack([boots, gap]), [0.025, 0.975], axis=0)
    return pd.DataFrame({"statistic": ["phi (= Pearson on 0/1)", "tetrachoric", "tetrachoric − phi"],
                         "estimate": [point[0], point[1], point[1] - point[0]],
                         "ci_low": lo, "ci_high": hi})
