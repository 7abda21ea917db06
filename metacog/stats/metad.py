"""meta-d' and M-ratio by maximum likelihood (Maniscalco & Lau 2012), equal-variance model.

When it applies: a *two-class* task with a known true class per trial (S1/S2, e.g. gold
"no"/"yes" for paper 2's binary factual items), a type-1 response (the model's yes/no answer)
and a confidence rating on K ordered levels (verbal P(correct) binned into K levels). It does
not apply to open-ended answers (no stimulus classes), to abstentions (drop them first), or
when a response class is never used. meta-d' is the type-1 sensitivity that would produce
the observed confidence-accuracy relation if confidence were an ideal readout of the same
evidence; M-ratio = meta-d' / d' (1 = metacognitively ideal).

Counts follow the usual layout: ``nR_S1`` (length 2K) are the counts of responses to S1
trials ordered from "S1, rating K" down to "S1, rating 1", then "S2, rating 1" up to
"S2, rating K"; ``nR_S2`` likewise for S2 trials. By default 1/(2K) is added to every cell
(``padding``), as in the reference implementation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import ndtr, ndtri


@dataclass
class MetaDResult:
    dprime: float
    criterion: float
    meta_d: float
    m_ratio: float
    m_diff: float
    t2_criteria_rS1: np.ndarray
    t2_criteria_rS2: np.ndarray
    loglik: float
    n_ratings: int
    converged: bool

    def summary(self) -> pd.DataFrame:
        """One row: dprime, meta_d, m_ratio, m_diff, loglik."""
        return pd.DataFrame([{"dprime": self.dprime, "meta_d": self.meta_d, "m_ratio": self.m_ratio,
                              "m_diff": self.m_diff, "loglik": self.loglik}])


def _unpack(theta, K):
    meta = theta[0]
    e1 = np.exp(theta[1:K])
    e2 = np.exp(theta[K:])
    lower = -np.cumsum(e1)[::-1]  # K-1 criteria below 0, ascending
    upper = np.cumsum(e2)  # K-1 criteria above 0, ascending
    return meta, lower, upper


def _negll(theta, n1, n2, K, d1, c1):
    meta, lower, upper = _unpack(theta, K)
    shift = meta * c1 / d1
    m1 = -meta / 2 - shift
    m2 = meta / 2 - shift
    xl = np.concatenate(([-np.inf], lower, [0.0]))
    xu = np.concatenate(([0.0], upper, [np.inf]))
    # S1 responses (x < 0): bins ordered rating K..1 = xl bins from -inf up
    pC1 = (ndtr(xl[1:] - m1) - ndtr(xl[:-1] - m1)) / ndtr(-m1)
    pI1 = (ndtr(xl[1:] - m2) - ndtr(xl[:-1] - m2)) / ndtr(-m2)
    # S2 responses (x > 0): bins ordered rating 1..K = xu bins from 0 up
    pC2 = (ndtr(xu[1:] - m2) - ndtr(xu[:-1] - m2)) / ndtr(m2)
    pI2 = (ndtr(xu[1:] - m1) - ndtr(xu[:-1] - m1)) / ndtr(m1)
    tiny = 1e-300
    ll = (n1[:K] @ np.log(np.maximum(pC1, tiny)) + n2[:K] @ np.log(np.maximum(pI1, tiny))
          + n2[K:] @ np.log(np.maximum(pC2, tiny)) + n1[K:] @ np.log(np.maximum(pI2, tiny)))
    return -ll


def metad(nR_S1, nR_S2, *, padding: bool = True, pad_amount: float | None = None) -> MetaDResult:
    """meta-d' by maximum likelihood from response counts (see module docstring for layout).

    Paper 2's yes/no items: 100 items whose answer is no (S1) and 100 whose answer is yes
    (S2), each answered and rated low or high (K = 2):

    >>> r = metad([35, 25, 25, 15], [10, 20, 30, 40])
    >>> round(r.dprime, 3), round(r.meta_d, 3), round(r.m_ratio, 2)
    (0.769, 0.893, 1.16)
    """
    n1 = np.asarray(nR_S1, dtype=float)
    n2 = np.asarray(nR_S2, dtype=float)
    if n1.shape != n2.shape or n1.ndim != 1 or n1.size % 2 or n1.size < 4:
        raise ValueError("metad: nR_S1 and nR_S2 must be 1-D of the same even length 2K (K >= 2 ratings), "
                         f"got shapes {n1.shape} and {n2.shape}.")
    if (n1 < 0).any() or (n2 < 0).any():
        raise ValueError("metad: counts must be non-negative.")
    K = n1.size // 2
    if padding:
        pad = 1.0 / (2 * K) if pad_amount is None else pad_amount
        n1, n2 = n1 + pad, n2 + pad
    if n1.sum() == 0 or n2.sum() == 0:
        raise ValueError("metad: both stimulus classes need trials.")
    hr = n2[K:].sum() / n2.sum()
    far = n1[K:].sum() / n1.sum()
    if hr in (0.0, 1.0) or far in (0.0, 1.0):
        raise ValueError("metad: a type-1 hit or false-alarm rate is 0 or 1; use padding=True.")
    d1 = ndtri(hr) - ndtri(far)
    c1 = -0.5 * (ndtri(hr) + ndtri(far))
    if abs(d1) < 1e-8:
        raise ValueError("metad: d' is 0, meta-d' is undefined (M-ratio divides by d').")
    # start: type-2 criteria from the cumulative rating rates, as in the reference code
    cum_hr = np.array([n2[c:].sum() / n2.sum() for c in range(1, 2 * K)])
    cum_far = np.array([n1[c:].sum() / n1.sum() for c in range(1, 2 * K)])
    cc = -0.5 * (ndtri(np.clip(cum_hr, 1e-6, 1 - 1e-6)) + ndtri(np.clip(cum_far, 1e-6, 1 - 1e-6)))
    t2 = np.delete(cc, K - 1) - d1 * (c1 / d1)
    low = np.sort(np.minimum(t2[:K - 1], -1e-3))
    up = np.sort(np.maximum(t2[K - 1:], 1e-3))
    e1 = np.maximum(np.diff(np.concatenate((low, [0.0])))[::-1], 1e-3)
    e2 = np.maximum(np.diff(np.concatenate(([0.0], up))), 1e-3)
    theta0 = np.concatenate(([d1], np.log(e1), np.log(e2)))
    best = None
    for start in (theta0, np.concatenate(([0.5 * d1], np.log(e1), np.log(e2)))):
        res = minimize(_negll, start, args=(n1, n2, K, d1, c1), method="BFGS",
                       options={"gtol": 1e-9, "maxiter": 5000})
        if best is None or res.fun < best.fun:
            best = res
    meta, lower, upper = _unpack(best.x, K)
    shift = meta * c1 / d1
    return MetaDResult(
        dprime=float(d1), criterion=float(c1), meta_d=float(meta), m_ratio=float(meta / d1),
        m_diff=float(meta - d1), t2_criteria_rS1=lower + shift, t2_criteria_rS2=upper + shift,
        loglik=float(-best.fun), n_ratings=K, converged=bool(best.success or best.status == 2),
    )


def trials_to_counts(stimulus, response, rating, n_ratings: int):
    """Counts (nR_S1, nR_S2) from per-trial stimulus (0/1), response (0/1) and rating (1..K)."""
    s = np.asarray(stimulus)
    r = np.asarray(response)
    k = np.asarray(rating)
    if not (s.shape == r.shape == k.shape):
        raise ValueError("trials_to_counts: stimulus, response and rating must have the same length.")
    for name, v in (("stimulus", s), ("response", r)):
        if not np.isin(v, (0, 1)).all():
            raise ValueError(f"trials_to_counts: {name} must be 0 (S1 / no) or 1 (S2 / yes).")
    if not np.isin(k, np.arange(1, n_ratings + 1)).all():
        raise ValueError(f"trials_to_counts: ratings must be integers 1..{n_ratings}.")
    out = []
    for stim in (0, 1):
        m = s == stim
        left = [np.sum(m & (r == 0) & (k == q)) for q in range(n_ratings, 0, -1)]
        right = [np.sum(m & (r == 1) & (k == q)) for q in range(1, n_ratings + 1)]
        out.append(np.array(left + right, dtype=float))
    return out[0], out[1]


def confidence_to_ratings(confidence, n_ratings: int = 4, lo: float = 0.5, hi: float = 1.0):
    """Bin confidence in [lo, hi] into ratings 1..n_ratings with equal-width bins.

    For verbal P(correct) on a two-class task the meaningful range is [0.5, 1]; values below
    ``lo`` go to rating 1.
    """
    c = np.asarray(confidence, dtype=float)
    if np.isnan(c).any():
        raise ValueError("confidence_to_ratings: missing confidence values; drop them first.")
    x = (np.clip(c, lo, hi) - lo) / (hi - lo)
    return np.minimum(np.floor(x * n_ratings).astype(int) + 1, n_ratings)


def metad_trials(stimulus, response, confidence, n_ratings: int = 4, **kw) -> MetaDResult:
    """meta-d' from trials: stimulus/response 0/1 and confidence in [0.5, 1] (binned).

    An ideal observer: confidence read from the same evidence as the answer gives an M-ratio
    near 1.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> stimulus = rng.integers(0, 2, 2000)
    >>> evidence = rng.normal(np.where(stimulus == 1, 0.75, -0.75), 1)
    >>> r = metad_trials(stimulus, (evidence > 0).astype(int), 0.5 + 0.5 * np.tanh(np.abs(evidence)))
    >>> round(r.dprime, 2), round(r.m_ratio, 2)
    (1.52, 0.99)
    """
    ratings = confidence_to_ratings(confidence, n_ratings)
    n1, n2 = trials_to_counts(stimulus, response, ratings, n_ratings)
    return metad(n1, n2, **kw)
