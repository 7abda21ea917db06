"""Parallel analysis for binary ratings, tetrachoric against tetrachoric.

psych's ``fa.parallel(x, cor="tet")`` compares the observed tetrachoric eigenvalues with
eigenvalues of *Pearson* correlations of normal data; tetrachoric matrices of binary data with
uneven base rates have inflated noise eigenvalues, so that comparison overcounts factors.
Here the reference data are binary and go through the same tetrachoric estimator:

- ``reference="normal"``: independent standard normal latents cut at the observed thresholds
  (same number of items, same missing-value pattern) — null of no common factor with the
  observed base rates.
- ``reference="resampled"``: each column permuted independently (base rates and missing counts
  kept exactly) — the same null without a parametric model.

Observed and reference eigenvalues are computed both for components (eigenvalues of R) and
for factors (eigenvalues of R with one-factor minres communalities on the diagonal, psych's
``fa.values``). The suggested number is the count of leading observed eigenvalues above the
reference, stopping at the first that is not (psych's rule).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .blas import single_blas_thread
from .factor import _minres, factor_analysis, one_factor_share_stack, smc
from .tetrachoric import tetrachoric
from .validate import as_binary_frame


@dataclass
class ParallelResult:
    """table: one row per factor number with observed and reference eigenvalues.
    n_factors / n_components: suggested counts (factor and component versions)."""

    table: pd.DataFrame
    n_factors: int
    n_components: int
    reference: str
    n_iter: int
    statistic: str

    def summary(self) -> pd.DataFrame:
        return self.table


def _eigs(X: np.ndarray, nf: int):
    pc, fa = _eigs_stack([X], nf, None)
    return pc[0], fa[0]


def _eigs_stack(samples: list, nf: int, start):
    """Component and factor eigenvalues (each draws x k, descending) of the tetrachoric matrices
    of ``samples``, as ``factor_analysis(R, nf, rotate="none")`` gives them. With one factor the
    minres fits of all draws are solved together (:func:`one_factor_share_stack`, Newton from
    ``start`` uniquenesses or 1 - SMC); a draw it does not solve is fitted on its own."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # smoothing / Heywood notices on simulated data
        R = np.stack([tetrachoric(pd.DataFrame(S)).rho.to_numpy() for S in samples])
        pc = np.linalg.eigvalsh(R)[:, ::-1]
        if nf != 1:
            return pc, np.stack([factor_analysis(r, nf, rotate="none").eigenvalues for r in R])
        k = R.shape[1]
        _, psi, solved = one_factor_share_stack(R, np.clip(1.0 - smc(R[0]), 0.005, 1.0)
                                                if start is None else start)
        for i in np.flatnonzero(~solved):
            psi[i] = _minres(R[i], 1, None, 1e-12).x
    vals, vecs = np.linalg.eigh(R - psi[:, :, None] * np.eye(k))
    h2 = np.maximum(vals[:, -1], 0.0)[:, None] * vecs[:, :, -1] ** 2  # the one factor's communalities
    Rm = R.copy()
    idx = np.arange(k)
    Rm[:, idx, idx] = h2
    return pc, np.linalg.eigvalsh(Rm)[:, ::-1]


def _simulate(L, tau, miss, rng, names, max_redraw):
    """Binary data from the probit factor model with loadings L (k x f) and thresholds tau.

    The f common factors are drawn once per item and shared by every column, which is what
    makes the simulated columns correlate as the model says; a column that comes out constant
    (over the items it has) has its own noise drawn again (up to ``max_redraw`` times)."""
    n, k = miss.shape
    f = L.shape[1]
    sd = np.sqrt(1 - np.clip((L**2).sum(axis=1), 0.0, 0.999))
    common = rng.standard_normal((n, f)) @ L.T if f else np.zeros((n, k))
    seen = ~miss
    B = np.empty((n, k), bool)
    todo = np.arange(k)
    for _ in range(max_redraw + 1):
        full = todo.size == k
        z = rng.standard_normal((n, todo.size))
        z *= sd if full else sd[todo]
        z += common if full else common[:, todo]  # common + sd * noise, as one expression would
        b = z > (tau if full else tau[todo])
        s = seen if full else seen[:, todo]
        varies = (b & s).any(axis=0) & (~b & s).any(axis=0)
        B[:, todo] = b
        todo = todo[~varies]
        if not todo.size:
            return np.where(miss, np.nan, B.astype(float))
    j = todo[0]
    raise ValueError(
        f"parallel_analysis: simulated column {names[j]!r} stays constant (threshold "
        f"{tau[j]:.2f}, {int((~miss[:, j]).sum())} items); use reference='resampled'.")


def _count(obs, ref):
    above = obs > ref
    return int(np.argmin(above)) if not above.all() else int(above.size)


@single_blas_thread
def parallel_analysis(X, n_iter: int = 20, reference: str = "resampled", seed: int = 0,
                      *, rule: str = "revised", statistic: str | float = 0.95,
                      n_factors_fit: int = 1, max_redraw: int = 100) -> ParallelResult:
    """Parallel analysis of binary ratings (items as rows, raters as columns).

    Parameters
    ----------
    reference : "normal" (thresholded independent normals) or "resampled" (columns permuted).
    rule : "revised" (default): factor q+1 is kept when its observed eigenvalue exceeds that of
        data simulated from the fitted q-factor model (Green et al. 2012), the first factor
        being tested against ``reference``; "classic": every factor is tested against
        ``reference`` (psych's rule; overcounts with binary data because the noise of a
        tetrachoric matrix grows with its true correlations). Components always use "classic".
    statistic : a quantile in (0, 1) of the reference eigenvalues (default 0.95), or "mean"
        (psych's default, which lets noise factors through more often).
    n_factors_fit : factors in the minres fit that gives the factor eigenvalues (psych: 1).

    Examples
    --------
    >>> from metacog.power.examples import one_axis_panel
    >>> confidence, correct = one_axis_panel()  # one shared difficulty axis, no self-knowledge
    >>> parallel_analysis(confidence, seed=0).n_factors  # one shared axis
    1
    """
    if reference not in ("normal", "resampled"):
        raise ValueError(f"parallel_analysis: reference must be 'normal' or 'resampled', got {reference!r}.")
    if not (statistic == "mean" or (isinstance(statistic, float) and 0 < statistic < 1)):
        raise ValueError(f"parallel_analysis: statistic must be 'mean' or a quantile in (0, 1), got {statistic!r}.")
    if rule not in ("revised", "classic"):
        raise ValueError(f"parallel_analysis: rule must be 'revised' or 'classic', got {rule!r}.")
    if n_iter < 1:
        raise ValueError(f"parallel_analysis: n_iter must be >= 1, got {n_iter}.")
    Xf = as_binary_frame(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = tetrachoric(Xf)
    Xf = Xf[t.rho.columns]  # drop constant columns as tetrachoric does
    A = Xf.to_numpy()
    n, k = A.shape
    miss = np.isnan(A)
    tau = t.thresholds.to_numpy()
    obs_pc, obs_fa = _eigs(A, n_factors_fit)
    rng = np.random.default_rng(seed)
    samples = [rng.permuted(A, axis=0) if reference == "resampled"  # every column shuffled on its own
               else _simulate(np.zeros((k, 0)), tau, miss, rng, list(Xf.columns), max_redraw)
               for _ in range(n_iter)]
    ref_pc, ref_fa = _eigs_stack(samples, n_factors_fit, None)
    if statistic == "mean":
        rpc, rfa = ref_pc.mean(axis=0), ref_fa.mean(axis=0)
    else:
        rpc, rfa = np.quantile(ref_pc, statistic, axis=0), np.quantile(ref_fa, statistic, axis=0)
    table = pd.DataFrame({
        "factor": np.arange(1, k + 1),
        "observed_fa": obs_fa,
        "reference_fa": rfa,
        "reference_fa_sd": ref_fa.std(axis=0, ddof=1) if n_iter > 1 else np.nan,
        "observed_pc": obs_pc,
        "reference_pc": rpc,
        "reference_pc_sd": ref_pc.std(axis=0, ddof=1) if n_iter > 1 else np.nan,
    })
    table["fa_above"] = table.observed_fa > table.reference_fa
    table["pc_above"] = table.observed_pc > table.reference_pc
    n_fac = _count(obs_fa, rfa)
    if rule == "revised":
        # Revised parallel analysis (Green et al. 2012): the reference for factor q+1 comes from
        # data simulated under the q-factor model fitted to the observed matrix, so the noise
        # that the q real factors put into the binary-data tetrachoric matrix is in the reference.
        rev = np.full(k, np.nan)
        rev[0] = rfa[0]
        start = _minres(t.rho.to_numpy(), 1, None, 1e-12).x  # the observed one-factor fit's uniquenesses
        n_fac = 0 if obs_fa[0] <= rfa[0] else 1
        if n_fac:
            for q in range(1, k - 1):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    Lq = factor_analysis(t.rho, q, rotate="none").loadings.to_numpy()
                samples = [_simulate(Lq, tau, miss, rng, list(Xf.columns), max_redraw)
                           for _ in range(n_iter)]
                draws = _eigs_stack(samples, n_factors_fit, start)[1][:, q]
                rev[q] = draws.mean() if statistic == "mean" else np.quantile(draws, statistic)
                if obs_fa[q] > rev[q]:
                    n_fac = q + 1
                else:
                    break
        table["reference_fa_revised"] = rev
    return ParallelResult(
        table=table,
        n_factors=n_fac,
        n_components=_count(obs_pc, rpc),
        reference=reference,
        n_iter=n_iter,
        statistic=str(statistic),
    )
