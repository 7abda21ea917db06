"""Paper 2's audit: which domains does self-critique help, and can an audit score tell in advance?

For each model and domain, :func:`domain_table` puts side by side the paired gain
of a policy over the forced-answer baseline C0 (the outcome) and the candidate
predictors: H_proxy (label-aware audit score), and the label baselines C0 error
rate and C0 Brier loss. :func:`ranking` gives, per model, the Spearman
correlation of each predictor's domain ranking with the gains.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from metacog.stats import resample
from metacog.stats.policy import h_proxy, policy_gains, policy_table

PREDICTORS = ("h_proxy", "c0_error", "c0_brier")


def domain_table(df: pd.DataFrame, *, policy: str = "c2", lam: float = 1.0,
                 threshold: float = 0.8) -> pd.DataFrame:
    """One row per model x domain: ``gain`` of ``policy`` over C0 and the predictors.

    ``df`` is a tidy c0/c1/c2 response table (see :mod:`metacog.stats.policy`);
    rows whose reply could not be parsed must be removed first.
    """
    t = policy_table(df, threshold)
    gains = policy_gains(t)
    g = gains[gains["policy"] == policy].set_index(["model", "domain"])["gain"]
    if g.empty:
        raise ValueError(f"domain_table: no rows for policy {policy!r}.")
    h = h_proxy(df, lam=lam, threshold=threshold).set_index(["model", "domain"])
    c0 = t[t["probe"] == "c0"].groupby(["model", "domain"])
    out = pd.DataFrame({
        "gain": g,
        "h_proxy": h["h_proxy"],
        "ocw_rate": h["ocw_rate"],
        "c0_error": 1.0 - c0["correct"].mean(),
        "c0_brier": c0["se"].mean(),
        "n_items": h["n_items"],
    })
    return out.reset_index()


def ranking(table: pd.DataFrame, predictors=PREDICTORS) -> pd.DataFrame:
    """Per model and predictor: Spearman rho (and p) between the predictor and the gain across domains."""
    rows = []
    for model, g in table.groupby("model"):
        for pred in predictors:
            ok = g[[pred, "gain"]].dropna()
            if len(ok) >= 3 and ok[pred].nunique() > 1 and ok["gain"].nunique() > 1:
                rho, p = sps.spearmanr(ok[pred], ok["gain"])
            else:
                rho, p = np.nan, np.nan
            rows.append({"model": model, "predictor": pred, "spearman": float(rho), "p": float(p),
                         "domains": len(ok)})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# confident errors across a population of models (items x models matrices)


def ocw_flags(confidence: pd.DataFrame, correct: pd.DataFrame, threshold=0.8):
    """Three items x models boolean arrays: ``rated`` (a confidence and an outcome are known),
    ``wrong`` (rated and wrong) and ``ocw`` (wrong with confidence >= threshold).

    ``threshold`` is a number or a Series holding one threshold per model (column).
    """
    if list(confidence.columns) != list(correct.columns) or not confidence.index.equals(correct.index):
        raise ValueError("ocw_flags: confidence and correct must have the same items and models "
                         "(index and columns), in the same order.")
    conf = confidence.to_numpy(dtype=float)
    y = correct.to_numpy(dtype=float)
    if isinstance(threshold, pd.Series):
        thr = threshold.reindex(confidence.columns).to_numpy(dtype=float)[None, :]
    else:
        thr = float(threshold)
    rated = ~np.isnan(conf) & ~np.isnan(y)
    wrong = rated & (y == 0)
    with np.errstate(invalid="ignore"):
        ocw = wrong & (conf >= thr)
    return rated, wrong, ocw


def share_two_way(num: np.ndarray, den: np.ndarray, *, n_boot: int = 1000, ci: float = 0.95,
                  seed: int = 0) -> tuple[float, float, float]:
    """sum(num) / sum(den) of two items x models 0/1 arrays, with a percentile interval from a
    two-way bootstrap that resamples items and models independently (both are samples).

    Returns (estimate, ci_low, ci_high); NaN when ``den`` is empty.
    """
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if den.sum() == 0:
        return np.nan, np.nan, np.nan
    rng = np.random.default_rng(seed)
    wi = resample.count_weights(rng, num.shape[0], n_boot)
    wm = resample.count_weights(rng, num.shape[1], n_boot)
    top = ((wi @ num) * wm).sum(axis=1)
    bottom = ((wi @ den) * wm).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = top / bottom
    draws = draws[np.isfinite(draws)]
    lo, hi = np.quantile(draws, [(1 - ci) / 2, 1 - (1 - ci) / 2])
    return float(num.sum() / den.sum()), float(lo), float(hi)


def _pairs(k: np.ndarray) -> np.ndarray:
    return k * (k - 1) / 2.0


def expected_pairs(wrong: np.ndarray, ocw: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Expected number of model pairs sharing a confident error on each item, under the null
    that each model's confident errors are a random subset of its own errors.

    Under that null a model j with w_j errors of which c_j are confident flags each of its
    errors with probability q_j = c_j / w_j, independently of the other models, so an item's
    count k of confident errors has mean e = sum_j W_ij q_j and variance v = sum_j W_ij
    q_j (1 - q_j), and E[k (k - 1) / 2] = (v + e^2 - e) / 2. ``weights`` (resamples x items,
    bootstrap counts) recomputes q_j on each resample; the result then has one column per
    resample. Returns an array of items (or items x resamples).
    """
    e, v = _moments(wrong, ocw, weights)
    return (v + e * e - e) / 2.0


def permuted_pairs(wrong: np.ndarray, ocw: np.ndarray, *, n_perm: int = 199, seed: int = 0) -> np.ndarray:
    """Shared confident errors (sum over items of k (k - 1) / 2) in ``n_perm`` permutations that
    move each model's confident flags at random among that model's own errors: each model keeps
    its number of confident errors, each item its errors (its difficulty), and only the link
    between confidence and item is broken. Returns an array of n_perm totals."""
    rng = np.random.default_rng(seed)
    W = wrong.astype(bool)
    c = ocw.sum(axis=0)
    out = np.empty(n_perm)
    for b in range(n_perm):
        u = rng.random(W.shape)
        u[~W] = 2.0
        rank = np.argsort(np.argsort(u, axis=0), axis=0)
        k = (rank < c[None, :]).sum(axis=1).astype(float)
        out[b] = _pairs(k).sum()
    return out


def cooccurrence(wrong: np.ndarray, ocw: np.ndarray, *, n_boot: int = 1000, n_perm: int = 199,
                 ci: float = 0.95, seed: int = 0) -> dict:
    """Do confident errors fall on the same items across models beyond what difficulty predicts?

    ``observed``: pairs of models that share a confident error, summed over items; ``expected``:
    the same under the null of :func:`expected_pairs` (each model's confident-error rate and
    every item's errors kept); ``ratio`` = observed / expected (1 under the null) with a
    percentile interval from a bootstrap over items that recomputes the expectation on each
    resample; ``p_perm``: one-sided permutation p-value (:func:`permuted_pairs`);
    ``null_mean`` the permutations' mean (a check on ``expected``); ``dispersion``: the sum
    over items of (k - E k)^2, against ``dispersion_expected`` (its null expectation, the sum
    of the null variances): its ratio, 1 under the null, measures how item-specific
    confidence among errors is, free of the part of co-occurrence that errors alone explain. Also items, models,
    errors, confident errors (``ocw``) and the resampling draws of observed and expected
    (for pooling strata).
    """
    W, O = np.asarray(wrong, dtype=bool), np.asarray(ocw, dtype=bool)
    if (O & ~W).any():
        raise ValueError("cooccurrence: a confident error must be an error (ocw implies wrong).")
    k = O.sum(axis=1).astype(float)
    obs = float(_pairs(k).sum())
    exp = float(expected_pairs(W, O).sum())
    rng = np.random.default_rng(seed)
    wi = resample.count_weights(rng, W.shape[0], n_boot)
    obs_b = wi @ _pairs(k)
    exp_b = (wi * expected_pairs(W, O, wi).T).sum(axis=1)
    null = permuted_pairs(W, O, n_perm=n_perm, seed=seed + 1)
    e, v = _moments(W, O)
    eb, vb = _moments(W, O, wi)
    return {"items": int(W.shape[0]), "models": int(W.shape[1]), "errors": int(W.sum()),
            "ocw": int(O.sum()), "observed": obs, "expected": exp, "null_mean": float(null.mean()),
            "perm": null, "obs_boot": obs_b, "exp_boot": exp_b, "ci": ci,
            "dispersion": float(((k - e) ** 2).sum()), "dispersion_expected": float(v.sum()),
            "disp_boot": (wi * ((k[:, None] - eb) ** 2).T).sum(axis=1), "disp_exp_boot": (wi * vb.T).sum(axis=1)}


def _moments(W: np.ndarray, O: np.ndarray, weights: np.ndarray | None = None):
    """Null mean and variance of each item's confident-error count (see :func:`expected_pairs`)."""
    W, O = W.astype(float), O.astype(float)
    c, w = (O.sum(axis=0), W.sum(axis=0)) if weights is None else (weights @ O, weights @ W)
    q = np.divide(c, w, out=np.zeros_like(c), where=w > 0)
    return (W @ q, W @ (q * (1 - q))) if weights is None else (W @ q.T, W @ (q * (1 - q)).T)


def ratio_interval(obs_boot: np.ndarray, exp_boot: np.ndarray, ci: float = 0.95) -> tuple[float, float]:
    """Percentile interval of observed / expected from paired resampling draws."""
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.asarray(obs_boot) / np.asarray(exp_boot)
    r = r[np.isfinite(r)]
    if not r.size:
        return np.nan, np.nan
    lo, hi = np.quantile(r, [(1 - ci) / 2, 1 - (1 - ci) / 2])
    return float(lo), float(hi)
