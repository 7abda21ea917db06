"""Match the simulator to a real dataset, so that power is computed for *that* dataset.

:func:`metacog.power.simulate.population` has nuisance parameters — per-model abilities and
thresholds, the spread ``sigma_u`` of model-specific item effects, the loading ``lam``
of the shared axis on confidence and the judgment noise ``sigma_e``. A power analysis
answers "what could this dataset have detected?" only when they are set to values like
the dataset's. :func:`fit_population` estimates them from a binary items x models
confidence matrix and the matching correctness matrix by the method of moments, under
the null ``kappa = 0``; :func:`match_population` returns them as keyword arguments
for :func:`~metacog.power.simulate.population` and the functions of :mod:`metacog.power.curves`.

Moment equations
----------------
The simulator draws ``z_ij = a_j - d_i + u_ij`` (correct when ``z_ij > 0``) and
``c*_ij = lam (-d_i / sigma_d) + kappa u_ij / sigma_u + e_ij`` (confident when
``c*_ij > t_j``). Binary data fix neither scale, so we set ``sigma_d = 1`` and, at
``kappa = 0``, ``lam^2 + sigma_e^2 = 1``. With ``s_z^2 = sigma_d^2 + sigma_u^2``:

* accuracy of model j: ``P(correct) = Phi(a_j / s_z)``, so ``a_j = s_z Phi^-1(acc_j)``;
* confidence rate of model j: ``P(confident) = Phi(-t_j)``, so ``t_j = -Phi^-1(rate_j)``;
* tetrachoric correlation of two models' correctness: ``rho_y = sigma_d^2 / s_z^2``, so
  ``sigma_u = sigma_d sqrt(1 / rho_y - 1)``;
* tetrachoric correlation of two models' confidence: ``rho_c = lam^2``, so
  ``lam = sqrt(rho_c)`` and ``sigma_e = sqrt(1 - rho_c)``;
* the confidence-correctness link, tetrachoric correlation of model j's confidence with
  model k's correctness: ``Corr(c*_j, z_k) = lam sigma_d / s_z = sqrt(rho_c rho_y)`` for
  every pair at ``kappa = 0`` (``kappa`` adds ``kappa sigma_u / (s_c s_z)`` to self-pairs).

``rho_y``, ``rho_c`` and the links are the means of the off-diagonal pairwise tetrachoric
correlations (:func:`metacog.stats.tetrachoric`). The model has one confidence parameter
for two confidence moments (``rho_c`` and the other-pair link), so the link is a check of
fit: ``alignment = observed other-pair link / sqrt(rho_c rho_y)`` is 1 when the axis models
share in confidence is the axis they share in correctness, and below 1 when models agree
about confidence for reasons that do not predict correctness. ``lam_from="link"`` fits
``lam`` to the link instead (``lam = link / sqrt(rho_y)``), a sensitivity check.

Also here: :func:`complete_block` (the largest complete models x items block of a
ragged dataset). The matched populations are put to work in :mod:`metacog.power.null`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri


from metacog.stats.blas import single_blas_thread  # small matrices: faster on one BLAS thread

LAM_FROM = ("confidence", "link")


# ---------------------------------------------------------------------------
# input checks and the complete-case block

def _binary_pair(confidence, correct, where: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables as float 0/1/NaN frames with the same items and models, or a clear error."""
    C = confidence if isinstance(confidence, pd.DataFrame) else pd.DataFrame(confidence)
    Y = correct if isinstance(correct, pd.DataFrame) else pd.DataFrame(correct)
    if C.shape != Y.shape:
        raise ValueError(f"{where}: confidence has shape {C.shape} but correct has {Y.shape}; both must "
                         "be items x models with the same items and models.")
    if not (C.columns.equals(Y.columns) and C.index.equals(Y.index)):
        raise ValueError(f"{where}: confidence and correct have different items or models; align them "
                         "first (correct = correct.loc[confidence.index, confidence.columns]).")
    out = []
    for name, X in (("confidence", C), ("correct", Y)):
        try:
            A = X.to_numpy(dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: {name} must be numeric 0/1 (NaN for missing).") from None
        vals = A[~np.isnan(A)]
        bad = vals[~np.isin(vals, (0.0, 1.0))]
        if bad.size:
            raise ValueError(f"{where}: {name} has values other than 0/1 (e.g. {bad[0]!r}); "
                             "binarise first, e.g. metacog.tidy.tables.binarize(conf, 'median').")
        out.append(pd.DataFrame(A, index=X.index, columns=X.columns))
    return out[0], out[1]


@dataclass
class Block:
    """Result of :func:`complete_block`: the kept complete matrices and what was dropped."""

    confidence: pd.DataFrame  # items x models, no missing value
    correct: pd.DataFrame
    dropped_models: list  # models left out to make the block larger
    constant_models: list  # models left out because their confidence or correctness never varies
    n_items_total: int  # items in the input
    n_models_total: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.confidence.shape

    def summary(self) -> pd.DataFrame:
        n, m = self.shape
        return pd.DataFrame(
            [("items kept", n), ("items in the input", self.n_items_total), ("models kept", m),
             ("models in the input", self.n_models_total), ("cells kept", n * m),
             ("models dropped for coverage", len(self.dropped_models)),
             ("models dropped as constant", len(self.constant_models))], columns=["quantity", "value"])


def _constant_columns(X: pd.DataFrame) -> list:
    lo, hi = X.min(), X.max()
    return [c for c in X.columns if not (lo[c] < hi[c])]


def complete_block(confidence, correct, min_models: int = 3) -> Block:
    """The largest complete-case block of a ragged items x models dataset.

    Models are dropped in order of fewest answered items (a cell counts when both
    confidence and correctness are present); for each number dropped, the items that
    every remaining model answered form a complete block. The block with the most cells
    (models x items) is kept; ties go to more models. Models whose confidence or
    correctness is constant inside the block are then removed (they carry no information
    for correlations), and the block is recomputed. Deterministic.
    """
    C, Y = _binary_pair(confidence, correct, "complete_block")
    ok = C.notna() & Y.notna()
    constant: list = []
    while True:
        cover = ok.sum()
        # fewest answered items first; model name breaks ties so the order is deterministic
        order = sorted(cover.index, key=lambda c: (cover[c], str(c)))
        best = None
        for k in range(0, len(order) - min_models + 1):
            keep = order[k:]
            n = int(ok[keep].all(axis=1).sum())
            cells = n * len(keep)
            if best is None or cells > best[0]:
                best = (cells, k, keep)
        if best is None or best[0] == 0:
            raise ValueError(f"complete_block: no item is answered by {min_models} or more models together; "
                             "check the tables or lower min_models.")
        _, k, keep = best
        rows = ok[keep].all(axis=1)
        Cb, Yb = C.loc[rows, keep], Y.loc[rows, keep]
        const = sorted(set(_constant_columns(Cb)) | set(_constant_columns(Yb)), key=str)
        if not const:
            break
        constant += const
        ok = ok.drop(columns=const)
        if ok.shape[1] < min_models:
            raise ValueError(f"complete_block: fewer than {min_models} models vary in both confidence "
                             "and correctness.")
    kept_cols = [c for c in C.columns if c in set(keep)]
    dropped = [c for c in C.columns if c not in set(keep) and c not in set(constant)]
    return Block(confidence=Cb[kept_cols], correct=Yb[kept_cols], dropped_models=dropped,
                 constant_models=constant, n_items_total=int(C.shape[0]), n_models_total=int(C.shape[1]))


# ---------------------------------------------------------------------------
# observed moments and the fit

def _mean_offdiag(R: np.ndarray) -> float:
    m = R.shape[0]
    return float(R[~np.eye(m, dtype=bool)].mean())


@single_blas_thread
def moments(confidence, correct) -> dict[str, Any]:
    """The observed moments the fit uses: rates and mean pairwise tetrachoric correlations.

    Returns a dict with ``accuracy`` and ``confidence_rate`` (Series per model),
    ``rho_correct`` and ``rho_confidence`` (mean off-diagonal tetrachoric correlation
    across models), ``link_self`` and ``link_other`` (mean tetrachoric correlation of a
    model's confidence with its own / other models' correctness), ``n_items`` and
    ``n_models``. Raw pairwise fits are used (no smoothing).
    """
    C, Y = _binary_pair(confidence, correct, "moments")
    if C.shape[1] < 3:
        raise ValueError(f"moments: need at least 3 models, got {C.shape[1]}.")
    for name, X in (("confidence", C), ("correct", Y)):
        const = _constant_columns(X)
        if const:
            raise ValueError(f"moments: {name} never varies for model(s) {const}; drop them first "
                             "(complete_block does this).")
    from metacog.stats import tetrachoric

    m = C.shape[1]
    both = pd.concat([C, Y], axis=1, ignore_index=True)
    with warnings.catch_warnings():  # zero-cell corrections are expected with extreme base rates
        warnings.simplefilter("ignore", UserWarning)
        R = tetrachoric(both, smooth=False).raw_rho.to_numpy()
    Rc, Ry, X = R[:m, :m], R[m:, m:], R[:m, m:]  # X[j, k]: confidence of j with correctness of k
    return {
        "accuracy": Y.mean(),
        "confidence_rate": C.mean(),
        "rho_correct": _mean_offdiag(Ry),
        "rho_confidence": _mean_offdiag(Rc),
        "link_self": float(np.diag(X).mean()),
        "link_other": _mean_offdiag(X),
        "n_items": int(C.shape[0]),
        "n_models": int(m),
    }


def _probit(p: pd.Series, n: int, name: str) -> pd.Series:
    """Phi^-1 of rates, clipped half an item from 0 and 1 so a perfect model stays finite."""
    eps = 0.5 / max(n, 1)
    clipped = p.clip(eps, 1 - eps)
    return pd.Series(ndtri(clipped.to_numpy(dtype=float)), index=p.index, name=name)


@dataclass
class PopulationMatch:
    """Result of :func:`fit_population`: simulator parameters matched to a dataset.

    ``kwargs(per_model=...)`` gives keyword arguments for :func:`metacog.power.simulate.population`
    and the power functions; ``summary()`` the fit next to the observed moments.
    """

    n_models: int
    n_items: int
    sigma_d: float
    sigma_u: float
    lam: float
    sigma_e: float
    ability: pd.Series  # a_j per model
    thresholds: pd.Series  # t_j per model
    observed: dict[str, Any] = field(repr=False)  # the moments of :func:`moments`
    lam_from: str = "confidence"

    @property
    def implied_link(self) -> float:
        """Confidence-correctness link the fitted model implies at kappa = 0 (every pair)."""
        return float(self.lam * self.sigma_d / np.hypot(self.sigma_d, self.sigma_u)
                     / np.sqrt(self.lam ** 2 + self.sigma_e ** 2))

    @property
    def alignment(self) -> float:
        """Observed other-pair link / link the model implies from rho_c and rho_y (1 = consistent)."""
        implied = np.sqrt(max(self.observed["rho_confidence"], 0.0) * max(self.observed["rho_correct"], 0.0))
        return float(self.observed["link_other"] / implied) if implied > 0 else float("nan")

    def kwargs(self, per_model: bool = False) -> dict[str, Any]:
        """Keyword arguments for :func:`metacog.power.simulate.population` (and power functions).

        ``per_model=False``: abilities and thresholds as normal distributions with the
        fitted mean and standard deviation (exchangeable models; works at any number of
        models). ``per_model=True``: the fitted value of every model (``ability`` and
        ``thresholds`` arrays; only for populations of exactly ``n_models`` models).
        """
        out = {"lam": self.lam, "sigma_d": self.sigma_d, "sigma_u": self.sigma_u, "sigma_e": self.sigma_e,
               "ability_mean": float(self.ability.mean()), "ability_sd": float(self.ability.std(ddof=1)),
               "threshold_mean": float(self.thresholds.mean()),
               "threshold_sd": float(self.thresholds.std(ddof=1))}
        if per_model:
            out["ability"] = self.ability.to_numpy(dtype=float)
            out["thresholds"] = self.thresholds.to_numpy(dtype=float)
        return out

    def latent_gap(self, kappa: float) -> float:
        """Latent self-minus-other correlation of confidence with performance at ``kappa``."""
        if not np.isfinite(kappa) or kappa < 0:
            raise ValueError(f"latent_gap: kappa must be a finite number >= 0, got {kappa!r}.")
        s_c = np.sqrt(self.lam ** 2 + kappa ** 2 + self.sigma_e ** 2)
        s_z = np.hypot(self.sigma_d, self.sigma_u)
        return float(kappa * self.sigma_u / (s_c * s_z))

    def summary(self) -> pd.DataFrame:
        """Fitted parameters and the observed moments they reproduce, as a two-column table."""
        o = self.observed
        rows = [
            ("models", self.n_models), ("items", self.n_items),
            ("mean accuracy", float(o["accuracy"].mean())),
            ("mean confidence rate", float(o["confidence_rate"].mean())),
            ("rho correctness (mean tetrachoric)", o["rho_correct"]),
            ("rho confidence (mean tetrachoric)", o["rho_confidence"]),
            ("link, own correctness (mean tetrachoric)", o["link_self"]),
            ("link, other models' correctness (mean tetrachoric)", o["link_other"]),
            ("link implied at kappa = 0", self.implied_link),
            ("alignment (observed / implied other link)", self.alignment),
            ("sigma_u", self.sigma_u), ("lam", self.lam), ("sigma_e", self.sigma_e),
            ("ability mean", float(self.ability.mean())), ("ability sd", float(self.ability.std(ddof=1))),
            ("threshold mean", float(self.thresholds.mean())),
            ("threshold sd", float(self.thresholds.std(ddof=1))),
        ]
        return pd.DataFrame(rows, columns=["quantity", "value"])


def fit_population(confidence, correct, lam_from: str = "confidence") -> PopulationMatch:
    """Estimate simulator parameters from binary confidence and correctness (items x models).

    Method of moments under ``kappa = 0`` (see the module docstring for the equations):
    abilities from accuracies, thresholds from confidence rates, ``sigma_u`` from the mean
    tetrachoric correlation of correctness across models, ``lam`` and ``sigma_e`` from the
    mean tetrachoric correlation of confidence (``lam_from="confidence"``) or from the
    confidence-correctness link of other-model pairs (``lam_from="link"``). Missing values
    are allowed (pairwise complete), but every model must vary in both signals.
    """
    if lam_from not in LAM_FROM:
        raise ValueError(f"fit_population: lam_from must be one of {LAM_FROM}, got {lam_from!r}.")
    o = moments(confidence, correct)
    rho_y = o["rho_correct"]
    if not 0 < rho_y < 1:
        raise ValueError(f"fit_population: the mean tetrachoric correlation of correctness is {rho_y:.3f}; "
                         "the simulator needs it strictly between 0 and 1 (models must share some, "
                         "but not all, of their performance).")
    sigma_d = 1.0
    sigma_u = sigma_d * float(np.sqrt(1.0 / rho_y - 1.0))
    s_z = float(np.hypot(sigma_d, sigma_u))
    if lam_from == "confidence":
        r = o["rho_confidence"]
        what = "mean tetrachoric correlation of confidence"
    else:
        r = (o["link_other"] / np.sqrt(rho_y)) ** 2 if o["link_other"] > 0 else 0.0
        what = "other-pair confidence-correctness link squared over rho_correct"
    if r >= 1:
        raise ValueError(f"fit_population: the {what} is {r:.3f}; the simulator needs it below 1 "
                         "(some judgment noise). A negative value is read as 0.")
    r = max(float(r), 0.0)
    lam, sigma_e = float(np.sqrt(r)), float(np.sqrt(1.0 - r))
    n = o["n_items"]
    ability = s_z * _probit(o["accuracy"], n, "ability")
    thresholds = -_probit(o["confidence_rate"], n, "threshold")
    return PopulationMatch(n_models=o["n_models"], n_items=n, sigma_d=sigma_d, sigma_u=sigma_u, lam=lam,
                           sigma_e=sigma_e, ability=ability, thresholds=thresholds, observed=o,
                           lam_from=lam_from)


def match_population(confidence, correct, per_model: bool = False,
                     lam_from: str = "confidence") -> dict[str, Any]:
    """Keyword arguments for :func:`metacog.power.simulate.population` matched to a dataset.

    Shorthand for ``fit_population(confidence, correct, lam_from).kwargs(per_model)``.
    """
    return fit_population(confidence, correct, lam_from=lam_from).kwargs(per_model=per_model)
