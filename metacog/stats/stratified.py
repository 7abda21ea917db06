"""The shared-difficulty control of pairwise calibration: items stratified by how the *other*
models fared, and exact tests of the within-stratum association.

:func:`difficulty_control` builds per-pair, per-stratum counts from leave-two-out difficulty
(any missing pattern, exact values or ``n_strata`` bins); :func:`difficulty_control_complete`
does the same for complete correctness with matrix products per item-total group, without the
items x models x models arrays. :func:`stratified_tests` turns the counts into the expectation
of n11 under the difficulty-stratified null (the book's stricter null; paper 1's
base-rate-matched null is :func:`metacog.stats.base_rate_null`), the pooled within-stratum
tau and the p-value of sum_s n11_s under within-stratum permutation (:func:`stratified_p`:
the convolution of the strata's hypergeometric distributions, or a normal approximation
above :data:`EXACT_MAX_SUPPORT`).
Used by :func:`metacog.stats.pairwise.pairwise_calibration`; its docstring defines the columns.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln


#: Above this many possible values of the stratified sum, :func:`stratified_p` uses the normal
#: approximation with continuity correction instead of the exact convolution (the sum of many
#: independent hypergeometrics is then very nearly normal, and the exact route costs seconds
#: per pair on thousands of items).
EXACT_MAX_SUPPORT = 1500


def stratified_p_normal(T, ns, as_, bs, alternative):
    """Normal approximation (continuity-corrected) to :func:`stratified_p`."""
    from scipy.stats import norm

    n, a, b = (v.astype(float) for v in (ns, as_, bs))
    mu = float(np.sum(a * b / n))
    with np.errstate(divide="ignore", invalid="ignore"):
        var = float(np.sum(np.where(n > 1, a * b * (n - a) * (n - b) / (n * n * (n - 1)), 0.0)))
    if var <= 0:
        return 1.0
    sd = np.sqrt(var)
    if alternative == "greater":
        return float(norm.sf((T - 0.5 - mu) / sd))
    if alternative == "less":
        return float(norm.cdf((T + 0.5 - mu) / sd))
    return float(min(1.0, 2 * norm.sf((abs(T - mu) - 0.5) / sd)))


def stratified_p(T, ns, as_, bs, alternative, lf=None):
    """Exact p-value of T = sum_s N11_s with independent hypergeometric strata (one pair).

    ``lf`` is a table of log-factorials (log k! for k = 0..n) to avoid recomputing them.
    """
    ns, as_, bs = (np.asarray(v).astype(np.int64) for v in (ns, as_, bs))
    width = int(np.sum(np.minimum(as_, bs) - np.maximum(0, as_ + bs - ns)))
    if width > EXACT_MAX_SUPPORT:
        return stratified_p_normal(T, ns, as_, bs, alternative)
    if lf is None:
        lf = gammaln(np.arange(int(ns.max()) + 2, dtype=float) + 1)
    lo = np.maximum(0, as_ + bs - ns)
    hi = np.minimum(as_, bs)
    offset = int(lo.sum())
    vary = hi > lo
    # every stratum's hypergeometric pmf in one pass (the same arithmetic, term by term, as one
    # stratum at a time), then convolved stratum after stratum in the data's order
    size = (hi - lo + 1)[vary]
    first = np.repeat(np.cumsum(size) - size, size)
    x = np.repeat(lo[vary], size) + (np.arange(int(size.sum())) - first)
    n_s, a_s, b_s = (np.repeat(v[vary], size) for v in (ns, as_, bs))
    lp = (lf[a_s] - lf[x] - lf[a_s - x] + lf[n_s - a_s] - lf[b_s - x] - lf[n_s - a_s - b_s + x]
          - lf[n_s] + lf[b_s] + lf[n_s - b_s])
    pmf = np.array([1.0])
    e = np.exp(lp)
    ends = np.cumsum(size).tolist()
    for start, end in zip([0] + ends[:-1], ends):
        pmf = np.convolve(pmf, e[start:end])
    support = offset + np.arange(pmf.size)
    if alternative == "greater":
        p = pmf[support >= T - 1e-9].sum()
    elif alternative == "less":
        p = pmf[support <= T + 1e-9].sum()
    else:
        mu = float(np.sum(as_ * bs / ns))
        d = abs(T - mu)
        p = pmf[np.abs(support - mu) >= d - 1e-7].sum()
    return min(max(p, 0.0), 1.0)


def difficulty_control(A, B, n_strata, alternative):
    """Per-pair stratified counts and exact tests (see the module docstring)."""
    N, m = A.shape
    obs_b = ~np.isnan(B)
    B1 = np.nan_to_num(B)
    S = B1.sum(axis=1)  # correct count per item
    M = obs_b.sum(axis=1).astype(float)  # models with a correctness value
    # leave-two-out (judge j, target k) sums, shape (N, m, m)
    bj = B1[:, :, None]
    bk = B1[:, None, :]
    oj = obs_b[:, :, None].astype(float)
    ok = obs_b[:, None, :].astype(float)
    same = np.eye(m, dtype=bool)[None, :, :]
    Ssub = S[:, None, None] - bj - np.where(same, 0.0, bk)
    Msub = M[:, None, None] - oj - np.where(same, 0.0, ok)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(Msub > 0, Ssub / Msub, np.nan)
    if n_strata is None:
        key = np.round(np.nan_to_num(d, nan=-1.0), 9)
        _, code = np.unique(key, return_inverse=True)
        code = code.reshape(d.shape)
    else:
        if n_strata < 1:
            raise ValueError(f"pairwise_calibration: n_strata must be >= 1, got {n_strata}.")
        code = np.where(np.isnan(d), n_strata, np.minimum(np.floor(np.nan_to_num(d) * n_strata), n_strata - 1))
        code = code.astype(int)
    ncode = int(code.max()) + 1
    # shared mask and indicators for every (item, judge, target)
    obs_a = ~np.isnan(A)
    A1 = np.nan_to_num(A)
    shared = obs_a[:, :, None] & obs_b[:, None, :]
    pair = np.arange(m * m).reshape(1, m, m)
    key = (pair * ncode + code)[shared]
    size = m * m * ncode
    cnt = np.bincount(key, minlength=size).reshape(m * m, ncode).astype(float)
    aa = np.bincount(key, weights=np.broadcast_to(A1[:, :, None], shared.shape)[shared],
                     minlength=size).reshape(m * m, ncode)
    bb = np.bincount(key, weights=np.broadcast_to(B1[:, None, :], shared.shape)[shared],
                     minlength=size).reshape(m * m, ncode)
    ab = np.bincount(key, weights=(A1[:, :, None] * B1[:, None, :])[shared],
                     minlength=size).reshape(m * m, ncode)
    return stratified_tests(cnt, aa, bb, ab, N, m, alternative)


def difficulty_control_complete(A, B, alternative):
    """:func:`difficulty_control` for complete correctness (confidence may have gaps) and exact
    strata, without the items x models x models arrays.

    With no missing correctness, the leave-two-out difficulty of item i for pair (j, k) is
    (S_i - b_ij - b_ik) / (m - 2) (for a self pair, (S_i - b_ij) / (m - 1)), so the stratum is
    the integer s = S_i - b_ij - b_ik. Items are grouped by their total S_i = g; within a group
    the four (b_ij, b_ik) combinations fall in strata g, g - 1 and g - 2, and every per-stratum
    count is a matrix product over the group's rows.
    """
    N, m = A.shape
    S = B.sum(axis=1).astype(int)
    Oa = (~np.isnan(A)).astype(float)  # a judge counts only the items it judged
    A = np.nan_to_num(A)
    ncode = m + 1
    cnt = np.zeros((m, m, ncode))
    aa = np.zeros((m, m, ncode))
    bb = np.zeros((m, m, ncode))
    ab = np.zeros((m, m, ncode))
    dcnt, daa, dbb, dab = (np.zeros((m, ncode)) for _ in range(4))  # self pairs
    for g in np.unique(S):
        rows = S == g
        Bg, Ag, Og = B[rows], A[rows], Oa[rows]
        if g >= 1:  # on the diagonal b_ik = b_ij: the correct items sit in stratum g - 1
            dbb[:, g - 1] += (Bg * Og).sum(axis=0)
            dab[:, g - 1] += (Ag * Bg).sum(axis=0)
        for u in (0, 1):
            Bv_all = Bg if u else 1.0 - Bg
            Bu = Bv_all * Og
            ABu = Ag * Bv_all
            dcnt[:, g - u] += Bu.sum(axis=0)
            daa[:, g - u] += ABu.sum(axis=0)
            for v in (0, 1):
                if g - u - v < 0:
                    continue
                Bv = Bg if v else 1.0 - Bg
                c = Bu.T @ Bv
                a = ABu.T @ Bv
                cnt[:, :, g - u - v] += c
                aa[:, :, g - u - v] += a
                if v:
                    bb[:, :, g - u - v] += c
                    ab[:, :, g - u - v] += a
    idx = np.arange(m)
    for arr, diag in ((cnt, dcnt), (aa, daa), (bb, dbb), (ab, dab)):
        arr[idx, idx, :] = diag
    return stratified_tests(cnt.reshape(m * m, ncode), aa.reshape(m * m, ncode),
                             bb.reshape(m * m, ncode), ab.reshape(m * m, ncode), N, m, alternative)


def stratified_tests(cnt, aa, bb, ab, N, m, alternative):
    """Per-pair difficulty-stratified expectation, within-strata tau and exact stratified p-value
    from per-pair, per-stratum counts (rows: pairs, columns: strata)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        E = np.where(cnt > 0, aa * bb / cnt, 0.0)
        va = np.where(cnt > 0, aa * (cnt - aa) / cnt, 0.0)
        vb = np.where(cnt > 0, bb * (cnt - bb) / cnt, 0.0)
        tw = (ab - E).sum(axis=1) / np.sqrt(va.sum(axis=1) * vb.sum(axis=1))
    T = ab.sum(axis=1)
    p = np.full(m * m, np.nan)
    lf = gammaln(np.arange(N + 2, dtype=float) + 1)
    cnt_i, aa_i, bb_i = (np.rint(v).astype(np.int64) for v in (cnt, aa, bb))
    for i in range(m * m):
        if va[i].sum() <= 0 or vb[i].sum() <= 0:
            continue
        # only strata where both sides vary contribute randomness
        nz = (va[i] > 0) & (vb[i] > 0)
        fixed = float((ab[i] * ~nz).sum())
        p[i] = stratified_p(T[i] - fixed, cnt_i[i, nz], aa_i[i, nz], bb_i[i, nz], alternative, lf)
    return {
        "E": E.sum(axis=1).reshape(m, m),
        "tau_within": np.where(np.isfinite(tw), tw, np.nan).reshape(m, m),
        "p": p.reshape(m, m),
        "strata": (cnt > 0).sum(axis=1).reshape(m, m),
    }
