"""Positions of models and items on the shared one-factor axis, and confidence/performance alignment.

A one-factor probit model for binary ratings: item i has a latent position theta_i ~ N(0, 1)
and model j says 1 when ``lambda_j * theta_i + e_ij > tau_j`` with var(e_ij) = 1 - lambda_j^2.
``lambda`` comes from minres factor analysis of the tetrachoric matrix and ``tau`` from the
base rates (the tetrachoric thresholds). Then

- model location ``b_j = tau_j / lambda_j``: the item position at which model j says 1 half the
  time, in factor (theta) units — its threshold on the shared axis;
- discrimination ``a_j = lambda_j / sqrt(1 - lambda_j^2)``;
- item score: posterior mean (EAP) of theta_i given the item's observed ratings, by
  Gauss-Hermite quadrature (missing ratings are skipped), with its posterior SD.

Higher theta = more 1s (psych's sign convention: loadings sum positive): "easier" for a
correctness matrix, "more confidently claimed" for a confidence matrix.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import log_ndtr
from scipy.stats import pearsonr, spearmanr

from .blas import single_blas_thread
from .factor import FactorResult, factor_analysis
from .pairwise import unanimous_items
from .tetrachoric import TetrachoricResult, tetrachoric
from .validate import as_binary_frame, check_aligned


@dataclass
class AxisResult:
    models: pd.DataFrame  # loading, threshold, location, discrimination
    items: pd.DataFrame  # score, se, n_obs
    factor: FactorResult
    tetrachoric: TetrachoricResult

    def summary(self) -> pd.DataFrame:
        return self.models


def item_scores(X, loadings, thresholds, n_quad: int = 61) -> pd.DataFrame:
    """EAP item positions under the one-factor probit model (see module docstring)."""
    Xf = as_binary_frame(X, allow_all_missing=True)
    lam = np.clip(np.asarray(loadings, float), -0.999, 0.999)
    tau = np.asarray(thresholds, float)
    A = Xf.to_numpy()
    obs = ~np.isnan(A)
    A1 = np.nan_to_num(A)
    A0 = obs - A1
    nodes, w = np.polynomial.hermite_e.hermegauss(n_quad)
    w = w / w.sum()
    z = (lam[None, :] * nodes[:, None] - tau[None, :]) / np.sqrt(1 - lam**2)[None, :]  # Q x k
    lp1, lp0 = log_ndtr(z), log_ndtr(-z)
    ll = A1 @ lp1.T + A0 @ lp0.T + np.log(w)[None, :]  # N x Q
    ll -= ll.max(axis=1, keepdims=True)
    post = np.exp(ll)
    post /= post.sum(axis=1, keepdims=True)
    mean = post @ nodes
    sd = np.sqrt(np.maximum(post @ nodes**2 - mean**2, 0.0))
    return pd.DataFrame({"score": mean, "se": sd, "n_obs": obs.sum(axis=1)}, index=Xf.index)


@single_blas_thread
def axis_positions(X, n_quad: int = 61) -> AxisResult:
    """Fit the shared axis to binary ratings X (items x models): model thresholds and item scores."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tet = tetrachoric(X)
    fa = factor_analysis(tet.rho, 1)
    lam = fa.loadings.iloc[:, 0]
    tau = tet.thresholds
    lam_c = lam.clip(-0.999, 0.999)
    models = pd.DataFrame({"loading": lam, "threshold": tau, "location": tau / lam,
                           "discrimination": lam_c / np.sqrt(1 - lam_c**2)})
    Xf = as_binary_frame(X)[list(tet.rho.columns)]
    items = item_scores(Xf, lam.to_numpy(), tau.to_numpy(), n_quad)
    return AxisResult(models=models, items=items, factor=fa, tetrachoric=tet)


def _corr(a, b):
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3 or np.std(a[ok]) == 0 or np.std(b[ok]) == 0:
        return np.nan, np.nan
    return float(pearsonr(a[ok], b[ok])[0]), float(spearmanr(a[ok], b[ok])[0])


@single_blas_thread
def axis_alignment(confidence, correct, unanimous: str = "either") -> pd.DataFrame:
    """How well the confidence axis aligns with the performance axis, on all and contested items.

    For each subset ("all" items; "contested" = not unanimous by :func:`unanimous_items` rule
    ``unanimous``) both axes are fitted on that subset and compared: Pearson / Spearman
    correlation of item scores (``r_items``, ``rho_items``), of model locations and of loadings
    across models. ``r_items_fullfit`` correlates the all-item scores restricted to the subset.
    """
    C = as_binary_frame(confidence, "confidence")
    Y = as_binary_frame(correct, "correct")
    check_aligned(C, Y)
    full_c, full_y = axis_positions(C), axis_positions(Y)
    un = unanimous_items(C, Y, how=unanimous).to_numpy()
    rows = []
    for name, keep in (("all", np.ones(len(C), bool)), ("contested", ~un)):
        row = {"subset": name, "n_items": int(keep.sum())}
        try:
            ac = full_c if name == "all" else axis_positions(C[keep])
            ay = full_y if name == "all" else axis_positions(Y[keep])
        except ValueError as e:
            row["error"] = str(e)
            rows.append(row)
            continue
        common = ac.items.index.intersection(ay.items.index)
        row["r_items"], row["rho_items"] = _corr(ac.items.score.reindex(common).to_numpy(),
                                                 ay.items.score.reindex(common).to_numpy())
        sel = C.index[keep]
        row["r_items_fullfit"], _ = _corr(full_c.items.score.reindex(sel).to_numpy(),
                                          full_y.items.score.reindex(sel).to_numpy())
        ms = ac.models.index.intersection(ay.models.index)
        row["r_location"], row["rho_location"] = _corr(ac.models.location.reindex(ms).to_numpy(),
                                                       ay.models.location.reindex(ms).to_numpy())
        row["r_loading"], _ = _corr(ac.models.loading.reindex(ms).to_numpy(),
                                    ay.models.loading.reindex(ms).to_numpy())
        row["share_confidence"] = float(ac.factor.share.iloc[0])
        row["share_correct"] = float(ay.factor.share.iloc[0])
        rows.append(row)
    return pd.DataFrame(rows)
