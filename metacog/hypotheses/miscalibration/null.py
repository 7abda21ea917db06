"""A population null for shared confident errors that keeps the shared item axis.

Models agree on which items look easy: an item that draws confidence from one model tends to
draw it from all of them. A null that flags each model's errors as confident independently of
the item (each model's own rate, :func:`metacog.hypotheses.miscalibration.audit.cooccurrence`)
ignores that shared axis, so any agreement on which items *feel* easy shows up as "confident
errors clustering on items", however small. This null keeps it: the confident flag of model
``j`` on item ``i`` follows a main-effects (rank-one on the logit scale) model

    logit P(confident_ij) = a_i + b_j + e_j * wrong_ij,

fitted on rated answers (right or wrong): ``a_i`` is the item's shared pull towards
confidence, ``b_j`` the model's level and ``e_j`` how much less confident the model is when
wrong. The fit is crossed over two random halves of the models (each half's item effects
come from the other half's answers), so the null never explains a model's confident errors
with item effects fitted on those same errors; each model keeps its number of confident
errors. Under the null the confident flags
among errors are independent draws from these probabilities, so the expected number of
model pairs sharing a confident error, and the null variance of each item's count, have closed
forms; the p-value comes from parametric draws. The dispersion of the items' counts is
taken within each half of the models (see :func:`fit_item_axis`), whose residuals are free
of the item effects their null uses.
"""

from __future__ import annotations

import numpy as np

from metacog.hypotheses.miscalibration.audit import _pairs
from metacog.stats import resample

#: Ridge on the item effects (log-odds): keeps items where every answer is (or none is) confident finite.
RIDGE = 0.1


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _fit(R, C, W, a, b, e, *, fit_a: bool, n_iter: int, ridge: float):
    for _ in range(n_iter):
        for part in (("a", "b", "e") if fit_a else ("b", "e")):
            p = _sigmoid(a[:, None] + b[None, :] + e[None, :] * W)
            r, h = R * (C - p), R * p * (1 - p)
            if part == "a":
                a = np.clip(a + (r.sum(axis=1) - ridge * a) / (h.sum(axis=1) + ridge), -30, 30)
            elif part == "b":
                b = b + (r.sum(axis=0) - 1e-6 * b) / (h.sum(axis=0) + 1e-6)
            else:
                e = e + ((r * W).sum(axis=0) - 1e-6 * e) / ((h * W).sum(axis=0) + 1e-6)
    return a, b, e


def fit_item_axis(rated: np.ndarray, confident: np.ndarray, wrong: np.ndarray, *, n_iter: int = 40,
                  ridge: float = RIDGE, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(Q, half): Q is P(confident | error) for every items x models cell under the
    main-effects model above (0 where the cell is not an error); ``half`` marks the models of
    the first half. ``rated``, ``confident`` and ``wrong`` are boolean
    items x models arrays (confident and wrong only where rated).

    Cross-fitted, so that a model's own flags never set the item effect its null uses: the
    models are split in two halves at random; each half's item effects ``a`` are fitted on the
    other half's answers, then its models' ``b`` and ``e`` on their own answers given those."""
    R = np.asarray(rated, bool).astype(float)
    C = (np.asarray(confident, bool) & (R > 0)).astype(float)
    W = (np.asarray(wrong, bool) & (R > 0)).astype(float)
    n, m = R.shape
    half = np.random.default_rng(seed).permutation(m) < m // 2
    Q = np.zeros((n, m))
    for fold in (half, ~half):
        other = ~fold
        a, _, _ = _fit(R[:, other], C[:, other], W[:, other], np.zeros(n), np.zeros(other.sum()),
                       np.zeros(other.sum()), fit_a=True, n_iter=n_iter, ridge=ridge)
        _, b, e = _fit(R[:, fold], C[:, fold], W[:, fold], a, np.zeros(fold.sum()), np.zeros(fold.sum()),
                       fit_a=False, n_iter=n_iter, ridge=ridge)
        Q[:, fold] = W[:, fold] * _sigmoid(a[:, None] + b[None, :] + e[None, :])
    return Q, half


def _half_dispersion(O: np.ndarray, Q: np.ndarray, half: np.ndarray) -> np.ndarray:
    """Per item, the squared residual of the confident-error count within each half, summed."""
    return sum((O[:, h].sum(axis=1) - Q[:, h].sum(axis=1)) ** 2 for h in (half, ~half))


def cooccurrence_item_axis(rated: np.ndarray, confident: np.ndarray, wrong: np.ndarray, *,
                           n_boot: int = 1000, n_perm: int = 199, n_refit: int = 10, ci: float = 0.95,
                           seed: int = 0) -> dict:
    """The co-occurrence statistics of :func:`metacog.hypotheses.miscalibration.audit.cooccurrence`
    (same keys) against the item-axis null of :func:`fit_item_axis`: observed and expected pairs
    of models sharing a confident error, their item-bootstrap draws, parametric null draws
    (``perm``), and the dispersion of the items' confident-error counts.

    The dispersion is taken within each half of the models; its null expectation is the sum of
    the null variances times an inflation factor (``dispersion_inflation``) that accounts for
    the noise of the fitted item effects, measured on ``n_refit`` data sets drawn from the
    main-effects model fitted on all models and run through the same crossed fit."""
    R = np.asarray(rated, bool)
    W = np.asarray(wrong, bool) & R
    O = W & np.asarray(confident, bool)
    Q, half = fit_item_axis(R, confident, W, seed=seed)
    k = O.sum(axis=1).astype(float)
    mean = Q.sum(axis=1)
    var = (Q * (1 - Q)).sum(axis=1)
    exp_i = (mean ** 2 - (Q ** 2).sum(axis=1)) / 2
    disp_i = _half_dispersion(O, Q, half)
    rng = np.random.default_rng(seed)
    Rf, Wf = R.astype(float), W.astype(float)
    n, m = R.shape
    a, b, e = _fit(Rf, (np.asarray(confident, bool) & R).astype(float), Wf, np.zeros(n), np.zeros(m),
                   np.zeros(m), fit_a=True, n_iter=40, ridge=RIDGE)
    P = _sigmoid(a[:, None] + b[None, :] + e[None, :] * Wf)
    ratios = []
    for _ in range(int(n_refit)):
        Cs = R & (rng.random(P.shape) < P)
        Qs, hs = fit_item_axis(R, Cs, W, seed=seed)
        vs = (Qs * (1 - Qs)).sum()
        if vs > 0:
            ratios.append(_half_dispersion(W & Cs, Qs, hs).sum() / vs)
    inflation = float(np.mean(ratios)) if ratios else 1.0
    wi = resample.count_weights(rng, n, n_boot)
    null = np.array([_pairs((rng.random(Q.shape) < Q).sum(axis=1).astype(float)).sum() for _ in range(int(n_perm))])
    return {"items": int(n), "models": int(m), "errors": int(W.sum()), "ocw": int(O.sum()),
            "observed": float(_pairs(k).sum()), "expected": float(exp_i.sum()), "null_mean": float(null.mean()),
            "perm": null, "obs_boot": wi @ _pairs(k), "exp_boot": wi @ exp_i, "ci": ci,
            "dispersion": float(disp_i.sum()), "dispersion_expected": float(var.sum() * inflation),
            "disp_boot": wi @ disp_i, "disp_exp_boot": (wi @ var) * inflation, "dispersion_inflation": inflation}
