"""The pairwise self-versus-other test: is a model's confidence more calibrated to its own
correctness than to other models'?

For every ordered pair (model A's confidence, model B's correctness) compute Kendall's
tau-b over items (the matrix ``K``; for 0/1 data tau-b equals the phi coefficient, so
``K`` is one matrix product and agrees with :func:`metacog.stats.pairwise_calibration`).
The statistic is ``T = mean_j K[j, j] - mean_{j != k} K[j, k]``. It is tested one-sided by
a permutation test that shuffles which correctness column is paired with which confidence
column, or by a paired t-test over models of ``D_j = K[j, j] - mean_{k != j} K[j, k]``.
Its power is studied in :mod:`metacog.power.curves`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special

from .blas import single_blas_thread

__all__ = ["SelfOtherTest", "self_other_test"]


def _phi_matrix(C: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """K[j, k] = tau-b (= phi) of confidence column j with correctness column k."""
    if not (np.isnan(C).any() or np.isnan(Y).any()):
        Cc = C - C.mean(axis=0)
        Yc = Y - Y.mean(axis=0)
        sc = np.sqrt((Cc ** 2).sum(axis=0))
        sy = np.sqrt((Yc ** 2).sum(axis=0))
        with np.errstate(divide="ignore", invalid="ignore"):
            K = (Cc.T @ Yc) / np.outer(sc, sy)
        K[~np.isfinite(K)] = np.nan  # a constant column has no tau
        return K
    # with gaps each pair has its own items: phi from the pair's complete-case 2x2 table, all
    # pairs at once (the Pearson correlation of the pair's items, to rounding)
    from .pairwise import TauTables

    return TauTables(C, Y).tau()


def _align(C: pd.DataFrame, Y: pd.DataFrame) -> pd.DataFrame:
    """``Y`` reordered to ``C``'s items (index) and models (columns); ValueError when the sets differ."""
    for what, a, b in (("item", C.index, Y.index), ("model", C.columns, Y.columns)):
        for name, idx in (("confidence", a), ("correct", b)):
            if idx.has_duplicates:
                dup = list(idx[idx.duplicated()].unique()[:3])
                raise ValueError(f"self_other_test: {name} has duplicated {what} label(s) {dup}; "
                                 f"each {what} must appear once.")
        if a.equals(b):
            continue
        only_c, only_y = a.difference(b), b.difference(a)
        if len(only_c) or len(only_y):
            fix = ("keep the shared items, e.g. items = confidence.index.intersection(correct.index); "
                   "confidence.loc[items], correct.loc[items] (an inner join), or correct.reindex("
                   "confidence.index) if missing correctness should count as unknown"
                   if what == "item" else "select the same models in both, e.g. correct[confidence.columns]")
            raise ValueError(
                f"self_other_test: confidence and correct have different {what} sets: "
                f"{len(only_c)} {what}(s) only in confidence (e.g. {list(only_c[:3])}), "
                f"{len(only_y)} only in correct (e.g. {list(only_y[:3])}). Fix: {fix}.")
    if C.index.equals(Y.index) and C.columns.equals(Y.columns):
        return Y
    return Y.reindex(index=C.index, columns=C.columns)


def _as_pair(confidence, correct) -> tuple[np.ndarray, np.ndarray, list]:
    """Two float arrays (items x models) paired item by item and model by model, and the model names.

    Two DataFrames are aligned by their labels; anything else pairs by position.
    """
    if isinstance(confidence, pd.DataFrame) and isinstance(correct, pd.DataFrame):
        C, Y = confidence, _align(confidence, correct)
    else:
        C = confidence if isinstance(confidence, pd.DataFrame) else pd.DataFrame(confidence)
        Y = correct if isinstance(correct, pd.DataFrame) else pd.DataFrame(correct)
        if C.shape != Y.shape:
            raise ValueError(f"self_other_test: confidence has shape {C.shape} but correct has {Y.shape}; "
                             "arrays pair by position, so both must be items x models with the same "
                             "models in the same order.")
        Y = pd.DataFrame(Y.to_numpy(), index=C.index, columns=C.columns)
    if C.shape[1] < 3:
        raise ValueError(f"self_other_test: need at least 3 models, got {C.shape[1]}.")
    c, y = C.to_numpy(dtype=float), Y.to_numpy(dtype=float)
    for name, arr in (("confidence", c), ("correct", y)):
        vals = arr[~np.isnan(arr)]
        if not np.isin(vals, (0.0, 1.0)).all():
            raise ValueError(f"self_other_test: {name} must be 0/1 (NaN for missing); dichotomise first "
                             "(metacog.tidy.tables.binarize).")
    return c, y, list(C.columns)


_UNANIMOUS = ("either", "both", "confidence", "correct")


def _constant_rows(X: np.ndarray) -> np.ndarray:
    """Rows whose non-missing values are all equal (all-missing rows count as constant)."""
    Z = np.where(np.isnan(X), 0.0, X)
    n = (~np.isnan(X)).sum(axis=1)
    s = Z.sum(axis=1)
    return (s == 0) | (s == n)


def _unanimous(C: np.ndarray, Y: np.ndarray, how) -> np.ndarray:
    """Unanimous items, with the rules of :func:`metacog.stats.pairwise.unanimous_items`.

    'either' (the rule of ``drop_unanimous=True``): every model gives the same
    confidence, or every model has the same correctness; 'both'; 'confidence'; 'correct'.
    """
    how = "either" if how is True else how
    if how not in _UNANIMOUS:
        raise ValueError(f"self_other_test: drop_unanimous must be False, True or one of {_UNANIMOUS}, "
                         f"got {how!r}.")
    uc, uy = _constant_rows(C), _constant_rows(Y)
    return {"either": uc | uy, "both": uc & uy, "confidence": uc, "correct": uy}[how]


@dataclass
class SelfOtherTest:
    """Result of :func:`self_other_test`."""

    statistic: float  # mean self tau - mean other tau
    self_mean: float
    other_mean: float
    share_self_above: float  # share of models whose self tau beats their mean other tau
    p_value: float
    method: str
    n_items: int
    n_models: int
    tau: pd.DataFrame = field(repr=False)  # rows: confidence model, columns: correctness model

    def summary(self) -> pd.DataFrame:
        return pd.DataFrame(
            [("mean self-pair tau", self.self_mean), ("mean other-pair tau", self.other_mean),
             ("self minus other", self.statistic), ("share of models self > other", self.share_self_above),
             (f"p-value ({self.method}, one-sided)", self.p_value), ("items", self.n_items),
             ("models", self.n_models)], columns=["quantity", "value"])


def _stats_from_K(K: np.ndarray) -> tuple[float, float, float, np.ndarray]:
    m = K.shape[0]
    off = ~np.eye(m, dtype=bool)
    d = np.diag(K)
    with warnings.catch_warnings():  # a model whose taus are all missing gives NaN, on purpose
        warnings.simplefilter("ignore", RuntimeWarning)
        other_row = np.nanmean(np.where(off, K, np.nan), axis=1)
        self_mean = float(np.nanmean(d))
        other_mean = float(np.nanmean(K[off]))
    return self_mean - other_mean, self_mean, other_mean, d - other_row


def _ttest_greater(D: np.ndarray) -> float:
    """One-sided p-value of the one-sample t-test of mean(D) > 0: ``scipy.stats.ttest_1samp(D, 0,
    alternative="greater")``, computed directly (the power simulations ask thousands of times,
    and scipy's wrapper costs ~0.5 ms a call); tests/test_power_simulate.py checks it against scipy."""
    n = D.size
    with np.errstate(divide="ignore", invalid="ignore"):
        t = D.mean() / (D.std(ddof=1) / np.sqrt(n))
    return float(special.stdtr(n - 1, -t))


def _perm_p(K: np.ndarray, n_perm: int, rng: np.random.Generator) -> float:
    """One-sided permutation p-value of the matched (diagonal) sum of K."""
    m = K.shape[0]
    fill = np.nanmean(K) if np.isfinite(K).any() else 0.0
    Kz = np.where(np.isnan(K), fill, K)  # a missing tau counts as the average
    observed = np.trace(Kz)
    perms = np.argsort(rng.random((n_perm, m)), axis=1)
    sums = Kz[np.arange(m)[None, :], perms].sum(axis=1)
    return float((1 + np.sum(sums >= observed - 1e-12)) / (n_perm + 1))


@single_blas_thread
def self_other_test(confidence, correct, method: str = "permutation", n_perm: int = 999,
                    drop_unanimous: bool | str = False, seed: int = 0) -> SelfOtherTest:
    """Is a model's confidence more calibrated to its own correctness than to other models'?

    ``confidence`` and ``correct`` are items x models (0/1, NaN allowed). Two DataFrames are
    aligned on their labels: the same items (index) and models (columns) in any order pair
    up correctly; different item or model sets raise ValueError (say how many differ and
    show the first few). NumPy arrays (or a DataFrame with an array) pair by position:
    row i of one is row i of the other, column j is column j.
    ``drop_unanimous`` first removes items on which all models agree (True = 'either':
    same confidence from every model, or the same correctness; or 'both', 'confidence',
    'correct'), the rules of :func:`metacog.stats.pairwise_calibration`.
    ``method``: 'permutation' (shuffle correctness columns, ``n_perm`` draws) or
    'ttest' (one-sided paired t-test over models). See the module docstring.

    >>> from metacog.power.examples import one_axis_panel
    >>> confidence, correct = one_axis_panel()  # one shared difficulty axis, no self-knowledge
    >>> r = self_other_test(confidence, correct, n_perm=199, seed=0)
    >>> round(r.statistic, 3), r.p_value, r.n_models  # no self-knowledge planted: T near 0
    (-0.021, 0.87, 5)
    """
    if method not in ("permutation", "ttest"):
        raise ValueError(f"self_other_test: method must be 'permutation' or 'ttest', got {method!r}.")
    C, Y, models = _as_pair(confidence, correct)
    if drop_unanimous:
        keep = ~_unanimous(C, Y, drop_unanimous)
        C, Y = C[keep], Y[keep]
    if C.shape[0] < 3:
        raise ValueError(f"self_other_test: only {C.shape[0]} items left (after dropping unanimous "
                         "items); need at least 3.")
    K = _phi_matrix(C, Y)
    stat, s_mean, o_mean, D = _stats_from_K(K)
    if method == "permutation":
        p = _perm_p(K, int(n_perm), np.random.default_rng(seed))
    else:
        D = D[~np.isnan(D)]
        p = _ttest_greater(D) if D.size > 1 else np.nan
    Dfin = D[~np.isnan(D)]
    return SelfOtherTest(statistic=stat, self_mean=s_mean, other_mean=o_mean,
                         share_self_above=float(np.mean(Dfin > 0)) if Dfin.size else np.nan,
                         p_value=p, method=method, n_items=int(C.shape[0]), n_models=len(models),
                         tau=pd.DataFrame(K, index=pd.Index(models, name="confidence_of"),
                                          columns=pd.Index(models, name="correct_of")))
