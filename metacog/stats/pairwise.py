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
  This permutation null is paper 1's *base-rate-matched null*: it keeps every model's base
  rates of confidence and correctness and breaks only which item goes with which.
  :func:`base_rate_null` draws it by shuffling every column on its own (paper 1's recipe)
  and returns the null distribution of the mean tau over pairs; ``p`` is its exact per-pair
  test.

Difficulty control (``control=True``): the *difficulty-stratified null*, stricter than
paper 1's base-rate-matched null. Items are stratified by
their difficulty seen by the *other* models — the mean correctness of all models except the
judge and the target (leave-two-out, so neither side's own data define the strata). With
complete data the default strata are the exact counts of other models correct (the sufficient
statistic for item easiness in a Rasch model); ``n_strata=K`` uses K equal-width bins of the
proportion instead (better with many missing values). Under the null the judge knows only
what the shared difficulty says, i.e. items are permuted *within* strata:

- ``tau_null_difficulty``: E[tau] under within-stratum permutation — the tau that base rates
  and the shared difficulty axis alone produce (the difficulty-stratified null; not paper
  1's base-rate-matched null, whose mean is 0).
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
from scipy.stats import hypergeom

from . import stratified
from .blas import single_blas_thread
from .tables import BinaryTables, cross_counts, cross_counts_stack
from .validate import as_binary_frame, check_aligned

_ALTS = ("greater", "less", "two-sided")

#: The two nulls' names, the same in every table: paper 1's null (each model's base rates
#: kept, item alignment broken) and the book's stricter one (items permuted only within
#: strata of difficulty for the other models).
BASE_RATE = "base-rate-matched"
DIFFICULTY = "difficulty-stratified"


def bh_fdr(p) -> np.ndarray:
    """Benjamini-Hochberg q-values (``scipy.stats.false_discovery_control``); NaN entries stay
    NaN and are not counted.

    >>> bh_fdr([0.01, 0.04, 0.03, 0.2]).round(3).tolist()
    [0.04, 0.053, 0.053, 0.2]
    """
    from scipy.stats import false_discovery_control

    p = np.asarray(p, dtype=float)
    q = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        q[ok] = false_discovery_control(p[ok], method="bh")
    return q


def holm(p) -> np.ndarray:
    """Holm's step-down adjusted p-values of one family of tests (NaN stays NaN and is not
    counted): the k-th smallest of m p-values times (m − k + 1), made monotone, capped at 1.

    >>> [round(float(x), 3) for x in holm([0.01, 0.04, 0.03])]
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if not ok.size:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    m = order.size
    adj = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out[order] = adj
    return out


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
        """Paper 1's table: per null ("base-rate-matched": the permutation null, mean 0;
        "difficulty-stratified": within strata of shared difficulty) and pair group ("all",
        "self", "other"): mean tau, null mean, excess, number of pairs, % significant at
        BH-FDR ``alpha``, and the 5-95% range of tau.

        Every statistic is over the ``n_pairs`` pairs whose tau is defined; ``n_undefined``
        counts the pairs of the group left out because tau is undefined (the judge's
        confidence or the target's correctness is constant on their shared items), so
        ``n_pairs + n_undefined`` is the group's size."""
        alpha = self.alpha if alpha is None else alpha
        P = self.pairs
        rows = []
        nulls = [(BASE_RATE, "null_mean", "q")]
        if self.control:
            nulls.append((DIFFICULTY, "tau_null_difficulty", "q_within"))
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
                if null == DIFFICULTY:
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

    >>> from metacog.power.examples import one_axis_panel
    >>> confidence, correct = one_axis_panel()  # one shared difficulty axis, no self-knowledge
    >>> s = pairwise_calibration(confidence, correct).summary()
    >>> s[["mean_tau", "null_mean", "excess", "n_pairs"]].round(3)
                                 mean_tau  null_mean  excess  n_pairs
    null                  pairs
    base-rate-matched     all       0.324      0.000   0.324       25
                          self      0.308      0.000   0.308        5
                          other     0.328      0.000   0.328       20
    difficulty-stratified all       0.324      0.206   0.118       25
                          self      0.308      0.222   0.085        5
                          other     0.328      0.202   0.126       20

    Every pair beats paper 1's base-rate-matched null on shared difficulty alone; a model's
    confidence tracks its own correctness (self) no better than the others' (other).
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
            ctl = stratified.difficulty_control_complete(A, B, alternative)
        else:
            ctl = stratified.difficulty_control(A, B, n_strata, alternative)
        tn = np.where(defined, (n * ctl["E"] - a * b) / np.where(defined, den, 1.0), np.nan)
        out["strata"] = ctl["strata"].ravel()
        out["tau_null_difficulty"] = tn.ravel()
        out["tau_within"] = np.where(defined, ctl["tau_within"], np.nan).ravel()
        out["p_within"] = np.where(defined, ctl["p"], np.nan).ravel()
        out["q_within"] = bh_fdr(out.p_within.to_numpy())
        out["significant_within"] = out.q_within < alpha
    return PairwiseResult(pairs=out, alternative=alternative, alpha=alpha, n_items=n_all,
                          dropped_items=dropped, control=control)


class TauTables:
    """Confidence ``C`` and correctness ``Y`` (items x models, 0/1/NaN) prepared once for many
    weighted tau-b matrices (:meth:`tau`), e.g. one per bootstrap resample; the tables come from
    :func:`metacog.stats.tables.cross_counts`."""

    def __init__(self, C: np.ndarray, Y: np.ndarray):
        self.confidence, self.correct = BinaryTables(C), BinaryTables(Y)
        self.n_items = self.confidence.n_items

    def tau(self, weights=None) -> np.ndarray:
        """K[j, k] = Kendall tau-b (phi) of confidence column j and correctness column k, over the
        items both have, each item weighted by ``weights`` (default 1); NaN where undefined."""
        return _phi(*cross_counts(self.confidence, self.correct, weights))

    def tau_stack(self, W) -> np.ndarray:
        """:meth:`tau` under every row of item weights ``W`` (b x items) at once: b x k x k,
        from :func:`metacog.stats.tables.cross_counts_stack` (the same counts, so the same taus).
        For one weighting :meth:`tau` is faster: a full product per margin beats the per-column
        gap corrections, which pay off only when a chunk of resamples shares them."""
        return _phi(*cross_counts_stack(self.confidence, self.correct, W))


def _phi(n, a, b, n11) -> np.ndarray:
    """tau-b (phi) of 2x2 tables given by their margins: (n n11 - a b) / sqrt(a (n-a) b (n-b)),
    NaN where a margin is 0 or n."""
    den = a * (n - a) * b * (n - b)
    with np.errstate(divide="ignore", invalid="ignore"):
        K = (n * n11 - a * b) / np.sqrt(den)
    K[~(den > 0)] = np.nan
    return K


def tau_matrix(C: np.ndarray, Y: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """K[j, k] = Kendall tau-b (= phi for 0/1 data) of confidence column j and correctness column k.

    ``C`` and ``Y`` are items x models arrays of 0/1/NaN; each pair uses the items where both are
    present. ``weights`` (one per item, e.g. bootstrap counts) weight the items. A pair with a
    constant column has no tau (NaN). For many weightings of the same data use :class:`TauTables`.
    """
    return TauTables(C, Y).tau(weights)


def shuffle_columns(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``X`` with every column's items shuffled on their own (missing values move with them), so
    each column keeps its counts of 1s, 0s and gaps exactly and loses its alignment with the rest."""
    return rng.permuted(np.asarray(X, dtype=float), axis=0)


def unordered_pairs(n_models: int) -> int:
    """Pairs of distinct models, C(n, 2): the unit paper 1 counts (171 for its 19 SQuAD models).
    The book's own pairwise table has n * n ordered (judge, target) pairs, self-pairs included."""
    n = int(n_models)
    return n * (n - 1) // 2 if n >= 2 else 0


@single_blas_thread
def base_rate_null(confidence, correct, *, n_null: int = 200, seed: int = 0,
                   ci: float = 0.95, self_pairs: bool = True) -> pd.DataFrame:
    """Paper 1's base-rate-matched null of the mean pairwise tau-b, drawn by simulation.

    Every model's confidence column and every model's correctness column is shuffled over items
    on its own (:func:`shuffle_columns`), ``n_null`` times: each model keeps its base rates of
    confidence and correctness exactly, and no judgment is aligned with any correctness any more.
    Each draw gives the mean tau-b over all (judge, target) pairs with a defined tau, the
    statistic of the observed table. One row: observed mean tau, the null's mean and the central
    ``ci`` range of the null draws (null_low, null_high), the share of draws at or above the
    observed mean (p_value, one-sided, with the +1 correction) and n_null. The expectation is 0
    for every pair, so the null mean is 0 up to simulation noise; the per-pair exact version of
    this null is the ``p`` column of :func:`pairwise_calibration`. ``self_pairs=False`` leaves the
    (j, j) pairs out of every mean (paper 1's pairs are two different models).
    """
    C = as_binary_frame(confidence, "confidence", allow_all_missing=True).to_numpy(dtype=float)
    Y = as_binary_frame(correct, "correct", allow_all_missing=True).to_numpy(dtype=float)
    rng = np.random.default_rng(seed)

    def mean_tau(K):
        ok = np.isfinite(K)
        if not self_pairs:
            ok &= ~np.eye(K.shape[0], dtype=bool)
        return float(K[ok].mean()) if ok.any() else np.nan

    observed = mean_tau(tau_matrix(C, Y))
    draws = np.array([mean_tau(tau_matrix(shuffle_columns(C, rng), shuffle_columns(Y, rng)))
                      for _ in range(int(n_null))])
    d = draws[np.isfinite(draws)]
    lo, hi = (np.quantile(d, [(1 - ci) / 2, 1 - (1 - ci) / 2]) if d.size else (np.nan, np.nan))
    p = float((1 + np.sum(d >= observed - 1e-12)) / (d.size + 1)) if d.size and np.isfinite(observed) else np.nan
    return pd.DataFrame([{"null": BASE_RATE, "mean_tau": observed,
                          "null_mean": float(d.mean()) if d.size else np.nan,
                          "null_low": float(lo), "null_high": float(hi), "p_value": p,
                          "n_null": int(d.size)}])
