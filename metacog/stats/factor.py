"""Minimum-residual (minres / ULS) factor analysis of a correlation matrix, matching psych ``fa``.

psych's ``fa(r, fm="minres")`` minimises over uniquenesses Psi with L-BFGS-B (bounds
[0.005, 1]), loadings being the top ``n_factors`` eigenvectors of ``R - diag(Psi)`` scaled by
the square roots of their (non-negative) eigenvalues. Its search direction is the gradient of
the unweighted least-squares criterion ``||R - diag(Psi) - L L'||^2``, whose stationary point is
the ULS solution (diagonal residuals zero). We minimise that criterion with its exact gradient
and tight tolerances, which reaches the same solution more precisely.

Sign and order conventions follow psych: each factor's loadings sum to a positive number;
after rotation factors are ordered by variance accounted for. Rotations: ``"none"``,
``"varimax"`` (R's ``stats::varimax``, Kaiser-normalised, eps 1e-5 — psych's ``varimax``) and
``"oblimin"`` (GPArotation's quartimin, gamma 0, by gradient projection — psych's default for
``n_factors > 1``). The default here is ``"oblimin"`` like psych; it has no effect for one factor.

Agreement with psych: loadings within 1e-4 whenever the solution is interior. In Heywood cases
(a uniqueness at the 0.005 bound) psych's answer depends on where its L-BFGS-B run, which
searches along the ULS gradient while judging progress by the off-diagonal residual, happens
to stop; there we return the ULS optimum on the bounded set, set ``heywood=True`` and warn.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from .blas import single_blas_thread


@dataclass
class FactorResult:
    """Result of :func:`factor_analysis`.

    loadings: variables x factors (pattern matrix for oblique rotations).
    communalities: h2 = row sums of squared loadings (psych ``communality``) — or, for oblique
        rotations, diag(L Phi L').
    uniquenesses: 1 - h2 (psych ``uniquenesses``).
    psi: the fitted uniquenesses from the optimiser (psych ``1 - communalities``).
    eigenvalues: eigenvalues of R with communalities on the diagonal (psych ``values``).
    e_values: eigenvalues of R itself (psych ``e.values``).
    variance: psych's ``Vaccounted`` (SS loadings, Proportion Var, ... per factor) as a DataFrame.
    phi: factor correlations (oblique rotations), else None.
    """

    loadings: pd.DataFrame
    communalities: pd.Series
    uniquenesses: pd.Series
    psi: pd.Series
    eigenvalues: np.ndarray
    e_values: np.ndarray
    variance: pd.DataFrame
    phi: pd.DataFrame | None
    rotation: str
    method: str
    objective: float
    converged: bool
    heywood: bool = False

    @property
    def share(self) -> pd.Series:
        """Share of total variance accounted for by each factor (psych 'Proportion Var')."""
        return self.variance.loc["Proportion Var"]

    def summary(self) -> pd.DataFrame:
        """Loadings with h2 and u2, like psych's printout."""
        out = self.loadings.copy()
        out["h2"] = self.communalities
        out["u2"] = self.uniquenesses
        return out


def _as_corr(R):
    if hasattr(R, "rho") and isinstance(getattr(R, "rho"), pd.DataFrame):
        R = R.rho
    if isinstance(R, pd.DataFrame):
        names = list(R.columns)
        A = R.to_numpy(dtype=float)
    else:
        A = np.asarray(R, dtype=float)
        names = [f"V{i + 1}" for i in range(A.shape[0])] if A.ndim == 2 else []
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"factor_analysis: R must be a square correlation matrix, got shape {A.shape}.")
    if np.isnan(A).any():
        i, j = np.argwhere(np.isnan(A))[0]
        raise ValueError(f"factor_analysis: R has missing values, e.g. at ({names[i]!r}, {names[j]!r}).")
    if not np.allclose(A, A.T, atol=1e-10):
        raise ValueError("factor_analysis: R is not symmetric.")
    if not np.allclose(np.diag(A), 1.0, atol=1e-8):
        raise ValueError("factor_analysis: R must have a unit diagonal (pass a correlation matrix, "
                         "e.g. tetrachoric(X).rho).")
    return A, names


def _top_loadings(S, psi, nf):
    vals, vecs = np.linalg.eigh(S - np.diag(psi))
    order = np.argsort(vals)[::-1][:nf]
    return vecs[:, order] * np.sqrt(np.maximum(vals[order], 0.0))


def _uls(psi, S, nf):
    L = _top_loadings(S, psi, nf)
    E = S - np.diag(psi) - L @ L.T
    f = float((E * E).sum())
    g = -2.0 * np.diag(E)
    return f, g


def _minres(S, nf, start, tol):
    """The ULS (minres) optimum over uniquenesses in [0.005, 1], from ``start`` (default 1 - SMC)."""
    if start is None:
        start = np.clip(1.0 - smc(S), 0.005, 1.0)
    return minimize(_uls, start, args=(S, nf), jac=True, method="L-BFGS-B",
                    bounds=[(0.005, 1.0)] * S.shape[0],
                    options={"ftol": tol * 1e-3, "gtol": tol, "maxiter": 10000, "maxcor": 30})


def one_factor_share(R, start=None, *, tol: float = 1e-12) -> tuple[float, np.ndarray]:
    """The one-factor minres solution's share of variance (psych's "Proportion Var", the same
    number as ``factor_analysis(R, 1).share``) and its uniquenesses, without the result object.

    ``R`` is a correlation matrix (array). ``start`` (uniquenesses) replaces the default 1 - SMC
    start; a resample's fit started from the full sample's uniquenesses needs fewer steps.
    """
    S = np.asarray(R, dtype=float)
    psi = _minres(S, 1, start, tol).x
    L = _top_loadings(S, psi, 1)
    return float((L ** 2).sum() / S.shape[0]), psi


def one_factor_share_stack(R, start, *, tol: float = 1e-12, max_iter: int = 50):
    """:func:`one_factor_share` of a stack of correlation matrices ``R`` (b x k x k) at once:
    (shares (b,), uniquenesses (b x k), solved (b,) bool).

    Each matrix's one-factor minres optimum is the root of the gradient of the ULS criterion,
    ``diag(R - diag(psi) - L L') = 0``; it is found for the whole stack by Newton steps whose
    Hessian comes from the eigendecomposition of ``R - diag(psi)`` (first-order perturbation of
    the top eigenpair), from ``start`` (k uniquenesses, e.g. the full sample's). A matrix whose
    Newton iteration leaves the interior of the bounds [0.005, 1] (a Heywood case), or does not
    converge to a gradient below ``tol`` in ``max_iter`` steps, is not solved here (``solved``
    False; its entries NaN) and is fitted by :func:`one_factor_share` instead. Where it is
    solved, the optimum is the one :func:`one_factor_share` reaches, to its tolerance.
    """
    S = np.asarray(R, dtype=float)
    b, k, _ = S.shape
    psi = np.broadcast_to(np.clip(np.asarray(start, float), 0.005, 1.0), (b, k)).copy()
    active = np.ones(b, bool)
    solved = np.zeros(b, bool)
    eye = np.eye(k)
    diagS = np.diagonal(S, axis1=1, axis2=2)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        M = S[idx] - psi[idx][:, :, None] * eye
        vals, vecs = np.linalg.eigh(M)
        lam, v = vals[:, -1], vecs[:, :, -1]
        g = diagS[idx] - psi[idx] - lam[:, None] * v * v  # diag(E): the gradient is -2 g
        conv = np.abs(g).max(axis=1) < tol
        solved[idx[conv]] = True
        active[idx[conv]] = False
        go = ~conv & (lam > 0)
        active[idx[~conv & ~go]] = False
        if not go.any():
            break
        idx, g, lam, v, vals, vecs = idx[go], g[go], lam[go], v[go], vals[go], vecs[go]
        gap = lam[:, None] - vals[:, :-1]
        with np.errstate(divide="ignore", invalid="ignore"):
            C = np.einsum("bim,bjm->bij", vecs[:, :, :-1] / gap[:, None, :], vecs[:, :, :-1])
        # Jacobian of g in psi: -I + v_i^2 v_j^2 + 2 lam v_i v_j C_ij
        J = -eye + (v * v)[:, :, None] * (v * v)[:, None, :] + 2.0 * lam[:, None, None] * v[:, :, None] * v[:, None, :] * C
        try:
            step = np.linalg.solve(J, g[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            active[idx] = False
            break
        new = psi[idx] - step
        bad = ~np.isfinite(new).all(axis=1) | (new <= 0.005).any(axis=1) | (new > 1.0).any(axis=1)
        active[idx[bad]] = False
        psi[idx[~bad]] = new[~bad]
    L2 = np.full(b, np.nan)
    if solved.any():
        sel = np.flatnonzero(solved)
        lam = np.linalg.eigvalsh(S[sel] - psi[sel][:, :, None] * eye)[:, -1]
        L2[sel] = np.maximum(lam, 0.0)
    out_psi = np.where(solved[:, None], psi, np.nan)
    return L2 / k, out_psi, solved


def smc(R: np.ndarray) -> np.ndarray:
    """Squared multiple correlations 1 - 1/diag(R^-1) (pseudo-inverse if R is singular)."""
    try:
        inv = np.linalg.inv(R)
    except np.linalg.LinAlgError:
        inv = np.linalg.pinv(R)
    out = 1.0 - 1.0 / np.diag(inv)
    return np.clip(out, 0.0, 1.0)


def varimax(L: np.ndarray, normalize: bool = True, eps: float = 1e-5):
    """R's stats::varimax (same iteration and stopping rule). Returns (loadings, rotmat)."""
    nc = L.shape[1]
    if nc < 2:
        return L, np.eye(nc)
    x = L.copy()
    if normalize:
        sc = np.sqrt((x**2).sum(axis=1))
        x = x / sc[:, None]
    p = x.shape[0]
    TT = np.eye(nc)
    d = 0.0
    for _ in range(1000):
        z = x @ TT
        B = x.T @ (z**3 - z @ np.diag((z**2).sum(axis=0)) / p)
        u, s, vt = np.linalg.svd(B)
        TT = u @ vt
        dpast = d
        d = s.sum()
        if d < dpast * (1 + eps):
            break
    z = x @ TT
    if normalize:
        z = z * sc[:, None]
    return z, TT


def _quartimin(L):
    L2 = L**2
    X = L2 @ (1.0 - np.eye(L.shape[1]))
    return L * X, float((L2 * X).sum() / 4.0)


def oblimin(A: np.ndarray, eps: float = 1e-5, maxit: int = 1000):
    """GPArotation's oblimin (quartimin, gamma 0) by gradient projection (GPFoblq).

    Same start (identity), step rule and stopping rule (projected-gradient norm < eps).
    Returns (pattern loadings, Phi, Th).
    """
    T = np.eye(A.shape[1])
    al = 1.0
    L = A @ np.linalg.inv(T).T
    Gq, f = _quartimin(L)
    G = -(L.T @ Gq @ np.linalg.inv(T)).T
    for _ in range(maxit + 1):
        Gp = G - T @ np.diag((T * G).sum(axis=0))
        s = np.sqrt((Gp * Gp).sum())
        if s < eps:
            break
        al *= 2.0
        for _i in range(11):
            X = T - al * Gp
            v = 1.0 / np.sqrt((X**2).sum(axis=0))
            Tt = X * v
            L = A @ np.linalg.inv(Tt).T
            Gqt, ft = _quartimin(L)
            if f - ft > 0.5 * s**2 * al:
                break
            al /= 2.0
        T = Tt
        f = ft
        G = -(L.T @ Gqt @ np.linalg.inv(Tt)).T
    return L, T.T @ T, T


@single_blas_thread
def factor_analysis(R, n_factors: int = 1, method: str = "minres", rotate: str = "oblimin",
                    *, tol: float = 1e-12) -> FactorResult:
    """Minres factor analysis of a correlation matrix (psych ``fa(r, nfactors, fm="minres")``).

    R : correlation matrix (DataFrame or array), or a TetrachoricResult.
    n_factors : number of factors.
    method : only "minres" (alias "uls").
    rotate : "none", "varimax" or "oblimin" (psych's default; ignored when n_factors == 1).

    >>> from metacog.power.examples import one_axis_panel
    >>> confidence, correct = one_axis_panel()  # one shared difficulty axis, no self-knowledge
    >>> from metacog.stats import tetrachoric
    >>> fa = factor_analysis(tetrachoric(confidence), n_factors=1)
    >>> fa.loadings.iloc[:, 0].round(2).tolist()
    [0.6, 0.66, 0.72, 0.62, 0.71]
    """
    if method not in ("minres", "uls"):
        raise ValueError(f"factor_analysis: method {method!r} not supported; use 'minres'.")
    if rotate not in ("none", "varimax", "oblimin"):
        raise ValueError(f"factor_analysis: rotate {rotate!r} not supported; use 'none', 'varimax' or 'oblimin'.")
    S, names = _as_corr(R)
    p = S.shape[0]
    if not 1 <= n_factors < p:
        raise ValueError(f"factor_analysis: n_factors must be between 1 and {p - 1} for {p} variables, got {n_factors}.")
    res = _minres(S, n_factors, None, tol)
    psi = res.x
    heywood = bool((psi <= 0.005 + 1e-9).any())
    if heywood:
        warnings.warn(
            "factor_analysis: Heywood case (a uniqueness is at its 0.005 bound; a communality "
            "reaches 1). The minres solution there depends on the optimiser: we return the ULS "
            "optimum on the bounded set, psych's L-BFGS-B path can stop elsewhere (differences "
            "of ~1e-3 in loadings). Consider fewer factors or dropping the variable.", stacklevel=2)
    L = _top_loadings(S, psi, n_factors)
    # psych's sign convention before rotation
    if n_factors > 1:
        sg = np.sign(L.sum(axis=0))
        sg[sg == 0] = 1.0
        L = L * sg
    elif L.sum() < 0:
        L = -L
    model = L @ L.T
    h2_unrot = np.diag(model).copy()
    Sm = S.copy()
    np.fill_diagonal(Sm, h2_unrot)
    values = np.sort(np.linalg.eigvalsh(Sm))[::-1]
    e_values = np.sort(np.linalg.eigvalsh(S))[::-1]
    phi = None
    if n_factors > 1 and rotate == "varimax":
        L, _ = varimax(L)
    elif n_factors > 1 and rotate == "oblimin":
        L, phi, _ = oblimin(L)
    if n_factors > 1:
        sg = np.sign(L.sum(axis=0))
        sg[sg == 0] = 1.0
        L = L * sg
        if phi is not None:
            phi = phi * np.outer(sg, sg)
        ev = np.diag(L.T @ L) if phi is None else np.diag(phi @ L.T @ L)
        order = np.argsort(-ev, kind="stable")
        L = L[:, order]
        if phi is not None:
            phi = phi[np.ix_(order, order)]
    cols = [f"MR{i + 1}" for i in range(n_factors)]
    vx = np.diag(L.T @ L) if phi is None else np.diag(phi @ L.T @ L)
    vtotal = float(p)  # sum(communality + uniquenesses) == p for a correlation matrix
    rows = {"SS loadings": vx, "Proportion Var": vx / vtotal}
    if n_factors > 1:
        rows["Cumulative Var"] = np.cumsum(vx / vtotal)
        rows["Proportion Explained"] = vx / vx.sum()
        rows["Cumulative Proportion"] = np.cumsum(vx / vx.sum())
    variance = pd.DataFrame(rows, index=cols).T
    h2 = h2_unrot  # rotation leaves the model L L' (or L Phi L') unchanged
    idx = pd.Index(names)
    return FactorResult(
        loadings=pd.DataFrame(L, index=idx, columns=cols),
        communalities=pd.Series(h2, index=idx, name="h2"),
        uniquenesses=pd.Series(1.0 - h2, index=idx, name="u2"),
        psi=pd.Series(psi, index=idx, name="psi"),
        eigenvalues=values,
        e_values=e_values,
        variance=variance,
        phi=None if phi is None else pd.DataFrame(phi, index=cols, columns=cols),
        rotation=rotate if n_factors > 1 else "none",
        method="minres",
        objective=float(res.fun),
        converged=bool(res.success),
        heywood=heywood,
    )
