"""Pairwise calibration: does judge A's confidence track target B's correctness?

For every ordered (judge, target) pair of models, self-pairs included, over the items where
the judge's binary confidence and the target's binary correctness are both present:

- ``tau``: Kendall's tau-b of the two binary vectors. For a 2x2 table tau-b equals the phi
  coefficient, ``(n*n11 - a*b) / sqrt(a (n-a) b (n-b))`` with ``a`` the judge's "yes" count,
  ``b`` the target's correct count and ``n11`` the items with both; so all pairs come from
  three matrix products. NaN when either vector is constant.
- ``p``: exact permutation p-value. Permuting items keeps both margins, so ``n11`` is
  hypergeometric(n, a, b) and tau is linear in ``n11``. ``alternative="greater"`` (default;
  paper 1 tests calibration > 0) gives P(N11 >= n11); "less" P(N11 <= n11); "two-sided"
  P(|N11 - ab/n| >= |n11 - ab/n|).
- ``q``: Benjamini-Hochberg q-values over all pairs of the table with a defined p.
- ``null_mean``: mean of tau under that permutation null. It is exactly 0 because tau is
  linear in n11 and E[n11] = ab/n (kept as a column so the table reads like paper 1's).

Base-rate control (``control=True``): the "shared difficulty" null. Items are stratified by
their difficulty seen by the *other* models — the mean correctness of all models except the
judge and the target (leave-two-out, so neither side's own data define the strata). With
complete data the default strata are the exact counts of other models correct (the sufficient
statistic for item easiness in a Rasch model); ``n_strata=K`` uses K equal-width bins of the
proportion instead (better with many missing values). Under the null the judge knows only
what the shared difficulty says, i.e. items are permuted *within* strata:

- ``tau_null_difficulty``: E[tau] under within-stratum permutation — the tau that base rates
  and the shared difficulty axis alone produce (paper 1's "base-rate matched null").
- ``tau_within``: pooled within-stratum correlation (partial phi controlling for stratum),
  ``sum_s (n11_s - a_s b_s/n_s) / sqrt(sum_s a_s(n_s-a_s)/n_s * sum_s b_s(n_s-b_s)/n_s)``;
  it equals tau when there is one stratum and has null mean 0.
- ``p_within`` / ``q_within``: exact p-value of sum_s n11_s under within-stratum permutation
  (the convolution of the strata's hypergeometric distributions), same ``alternative``.

``drop_unanimous`` removes items on which all models agree before anything is computed; see
:func:`unanimous_items` for the exact rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import gammaln
from scipy.stats import hypergeom

from .blas import single_blas_thread
from .validate import as_binary_frame, check_aligned

_ALTS = ("greater", "less", "two-sided")


def bh_fdr(p) -> np.ndarray:
    """Benjamini-Hochberg q-values; NaN entries stay NaN and are not counted."""
    p = np.asarray(p, dtype=float)
    q = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m == 0:
        return q
    pv = p[ok]
    order = np.argsort(pv, kind="mergesort")
    ranked = pv[order] * m / np.arange(1, m + 1)
    ranked = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(ranked, 1.0)
    q[ok] = out
    return q


def unanimous_items(confidence, correct, how: str = "either") -> pd.Series:
    """Boolean Series over items: True where the models are unanimous.

    An item's confidence is unanimous when all its non-missing confidence values are equal
    (every model says yes, or every model says no); likewise for correctness.
    how="either": unanimous on confidence OR on correctness (the default of
    ``drop_unanimous=True``: such items carry only the shared floor/ceiling);
    "both": unanimous on both; "confidence" / "correct": on that signal only.
    Items with no non-missing value in a signal count as unanimous on it.
    """
    C = as_binary_frame(confidence, "confidence", allow_all_missing=True)
    Y = as_binary_frame(correct, "correct", allow_all_missing=True)
    check_aligned(C, Y)

    def unan(F):
        A = F.to_numpy()
        mx = np.nanmax(np.where(np.isnan(A), -np.inf, A), axis=1)
        mn = np.nanmin(np.where(np.isnan(A), np.inf, A), axis=1)
        return (mx == mn) | np.isinf(mx)

    uc, uy = unan(C), unan(Y)
    rules = {"either": uc | uy, "both": uc & uy, "confidence": uc, "correct": uy}
    if how not in rules:
        raise ValueError(f"unanimous_items: how must be one of {list(rules)}, got {how!r}.")
    return pd.Series(rules[how], index=C.index, name="unanimous")


def _hyper_p(n11, n, a, b, alternative):
    """Exact hypergeometric tail for observed n11 with margins (n, a, b), vectorised."""
    n11, n, a, b = (np.asarray(v, dtype=float) for v in (n11, n, a, b))
    if alternative == "greater":
        return hypergeom.sf(n11 - 1, n, a, b)
    if alternative == "less":
        return hypergeom.cdf(n11, n, a, b)
    mu = a * b / n
    d = np.abs(n11 - mu)
    eps = 1e-7
    lo = np.floor(mu - d + eps)
    hi = np.ceil(mu + d - eps)
    p = hypergeom.cdf(lo, n, a, b) + hypergeom.sf(hi - 1, n, a, b)
    p = np.where(d < eps, 1.0, p)
    return np.minimum(p, 1.0)


#: Above this many possible values of the stratified sum, :func:`_stratified_p` uses the normal
#: approximation with continuity correction instead of the exact convolution (the sum of many
#: independent hypergeometrics is then very nearly normal, and the exact route costs seconds
#: per pair on thousands of items).
EXACT_MAX_SUPPORT = 1500


def _stratified_p_normal(T, ns, as_, bs, alternative):
    """Normal approximation (continuity-corrected) to :func:`_stratified_p`."""
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


def _stratified_p(T, ns, as_, bs, alternative, lf=None):
    """Exact p-value of T = sum_s N11_s with independent hypergeometric strata (one pair).

    ``lf`` is a table of log-factorials (log k! for k = 0..n) to avoid recomputing them.
    """
    ns, as_, bs = (np.asarray(v).astype(np.int64) for v in (ns, as_, bs))
    width = int(np.sum(np.minimum(as_, bs) - np.maximum(0, as_ + bs - ns)))
    if width > EXACT_MAX_SUPPORT:
        return _stratified_p_normal(T, ns, as_, bs, alternative)
    if lf is None:
        lf = gammaln(np.arange(int(ns.max()) + 2, dtype=float) + 1)
    lo = np.maximum(0, as_ + bs - ns)
    hi = np.minimum(as_, bs)
    pmf = np.array([1.0])
    offset = 0
    for n_s, a_s, b_s, l, h in zip(ns, as_, bs, lo, hi):
        offset += int(l)
        if h == l:
            continue
        x = np.arange(l, h + 1)
        lp = (lf[a_s] - lf[x] - lf[a_s - x] + lf[n_s - a_s] - lf[b_s - x] - lf[n_s - a_s - b_s + x]
              - lf[n_s] + lf[b_s] + lf[n_s - b_s])
        pmf = np.convolve(pmf, np.exp(lp))
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


@dataclass
class PairwiseResult:
    """pairs: one row per ordered (judge, target) pair. See the module docstring for columns."""

    pairs: pd.DataFrame
    alternative: str
    alpha: float
    n_items: int
    dropped_items: int
    control: bool

    def summary(self, alpha: float | None = None) -> pd.DataFrame:
        """Paper 1's table: per null ("independence", "difficulty") and pair group ("all",
        "self", "other"): mean tau, null mean, excess, number of pairs, % significant at
        BH-FDR ``alpha``, and the 5-95% range of tau.

        Every statistic is over the ``n_pairs`` pairs whose tau is defined; ``n_undefined``
        counts the pairs of the group left out because tau is undefined (the judge's
        confidence or the target's correctness is constant on their shared items), so
        ``n_pairs + n_undefined`` is the group's size."""
        alpha = self.alpha if alpha is None else alpha
        P = self.pairs
        rows = []
        nulls = [("independence", "null_mean", "q")]
        if self.control:
            nulls.append(("difficulty", "tau_null_difficulty", "q_within"))
        for null, ncol, qcol in nulls:
            for group, mask in (("all", np.ones(len(P), bool)), ("self", P.self.to_numpy()),
                                ("other", ~P.self.to_numpy())):
                defined = P.tau.notna().to_numpy()
                sub = P[mask & defined]
                tau = sub.tau.to_numpy()
                row = {
                    "null": null, "pairs": group, "n_pairs": len(sub),
                    "n_undefined": int((mask & ~defined).sum()),
                    "mean_tau": tau.mean() if len(sub) else np.nan,
                    "null_mean": sub[ncol].mean() if len(sub) else np.nan,
                    "pct_significant": 100.0 * (sub[qcol] < alpha).mean() if len(sub) else np.nan,
                    "tau_q05": np.quantile(tau, 0.05) if len(sub) else np.nan,
                    "tau_q95": np.quantile(tau, 0.95) if len(sub) else np.nan,
                }
                row["excess"] = row["mean_tau"] - row["null_mean"]
                if null == "difficulty":
                    row["mean_tau_within"] = sub.tau_within.mean() if len(sub) else np.nan
                rows.append(row)
        cols = ["null", "pairs", "mean_tau", "null_mean", "excess", "n_pairs", "n_undefined",
                "pct_significant", "tau_q05", "tau_q95"] + (["mean_tau_within"] if self.control else [])
        return pd.DataFrame(rows)[cols].set_index(["null", "pairs"])

    def matrix(self, value: str = "tau") -> pd.DataFrame:
        """A judge x target matrix of one column of ``pairs``."""
        return self.pairs.pivot(index="judge", columns="target", values=value)


@single_blas_thread
def pairwise_calibration(confidence, correct, drop_unanimous: bool | str = False, *,
                         alternative: str = "greater", alpha: float = 0.05, control: bool = True,
                         n_strata: int | None = None, min_items: int = 3) -> PairwiseResult:
    """Pairwise calibration of every judge's binary confidence against every target's correctness.

    confidence, correct : items x models DataFrames of 0/1/NaN with identical index and columns.
    drop_unanimous : False, True (= "either") or a rule of :func:`unanimous_items`.
    alternative : "greater" (default), "less" or "two-sided" for the exact permutation tests.
    control : also compute the shared-difficulty (base-rate) control.
    n_strata : None = exact leave-two-out difficulty values as strata; K = K equal-width bins.
    min_items : each pair needs at least this many shared items (else ValueError).
    """
    if alternative not in _ALTS:
        raise ValueError(f"pairwise_calibration: alternative must be one of {_ALTS}, got {alternative!r}.")
    C = as_binary_frame(confidence, "confidence")
    Y = as_binary_frame(correct, "correct")
    check_aligned(C, Y)
    n_all = len(C)
    dropped = 0
    if drop_unanimous:
        how = "either" if drop_unanimous is True else drop_unanimous
        un = unanimous_items(C, Y, how=how).to_numpy()
        dropped = int(un.sum())
        C, Y = C[~un], Y[~un]
        if len(C) == 0:
            raise ValueError(f"pairwise_calibration: every item is unanimous (rule {how!r}); nothing left.")
    models = list(C.columns)
    m = len(models)
    A = C.to_numpy()
    B = Y.to_numpy()
    Mc = (~np.isnan(A)).astype(float)
    My = (~np.isnan(B)).astype(float)
    A1 = np.nan_to_num(A)
    B1 = np.nan_to_num(B)
    n = Mc.T @ My
    n11 = A1.T @ B1
    a = A1.T @ My
    b = Mc.T @ B1
    if (n < min_items).any():
        j, k = np.argwhere(n < min_items)[0]
        raise ValueError(
            f"pairwise_calibration: judge {models[j]!r} / target {models[k]!r} share only {int(n[j, k])} "
            f"items with both values (need >= {min_items}); {int((n < min_items).sum())} pair(s) affected."
            + (f" ({dropped} unanimous items were dropped.)" if dropped else "")
        )
    den = np.sqrt(a * (n - a) * b * (n - b))
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(den > 0, (n * n11 - a * b) / den, np.nan)
        # E[n11] = ab/n under permutation and tau is linear in n11, so the null mean is exactly 0
        null_mean = np.where(den > 0, 0.0, np.nan)
    defined = den > 0
    p = np.full((m, m), np.nan)
    p[defined] = _hyper_p(n11[defined], n[defined], a[defined], b[defined], alternative)
    jj, kk = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
    out = pd.DataFrame({
        "judge": np.array(models, dtype=object)[jj.ravel()],
        "target": np.array(models, dtype=object)[kk.ravel()],
        "self": (jj == kk).ravel(),
        "n": n.ravel().astype(int),
        "n11": n11.ravel().astype(int),
        "judge_yes": a.ravel().astype(int),
        "target_correct": b.ravel().astype(int),
        "tau": tau.ravel(),
        "null_mean": null_mean.ravel(),
        "p": p.ravel(),
    })
    out["q"] = bh_fdr(out.p.to_numpy())
    out["significant"] = out.q < alpha
    if control:
        if not np.isnan(B).any() and n_strata is None and A.shape[1] >= 3:
            ctl = _difficulty_control_complete(A, B, alternative)
        else:
            ctl = _difficulty_control(A, B, n_strata, alternative)
        tn = np.where(defined, (n * ctl["E"] - a * b) / np.where(defined, den, 1.0), np.nan)
        out["strata"] = ctl["strata"].ravel()
        out["tau_null_difficulty"] = tn.ravel()
        out["tau_within"] = np.where(defined, ctl["tau_within"], np.nan).ravel()
        out["p_within"] = np.where(defined, ctl["p"], np.nan).ravel()
        out["q_within"] = bh_fdr(out.p_within.to_numpy())
        out["significant_within"] = out.q_within < alpha
    return PairwiseResult(pairs=out, alternative=alternative, alpha=alpha, n_items=n_all,
                          dropped_items=dropped, control=control)


def _difficulty_control(A, B, n_strata, alternative):
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
    return _stratified_tests(cnt, aa, bb, ab, N, m, alternative)


def _difficulty_control_complete(A, B, alternative):
    """:func:`_difficulty_control` for complete correctness (confidence may have gaps) and exact
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
    return _stratified_tests(cnt.reshape(m * m, ncode), aa.reshape(m * m, ncode),
                             bb.reshape(m * m, ncode), ab.reshape(m * m, ncode), N, m, alternative)


def _stratified_tests(cnt, aa, bb, ab, N, m, alternative):
    """Per-pair difficulty-matched expectation, within-strata tau and exact stratified p-value
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
        p[i] = _stratified_p(T[i] - fixed, cnt_i[i, nz], aa_i[i, nz], bb_i[i, nz], alternative, lf)
    return {
        "E": E.sum(axis=1).reshape(m, m),
        "tau_within": np.where(np.isfinite(tw), tw, np.nan).reshape(m, m),
        "p": p.reshape(m, m),
        "strata": (cnt > 0).sum(axis=1).reshape(m, m),
    }
