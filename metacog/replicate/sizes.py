"""How many items a panel of ``n_models`` needs, from the power chapter's own functions.

The book's central test is paper 1's: does a model's confidence track its *own* correctness
better than other models' correctness (the self-minus-other statistic T of
:func:`metacog.stats.self_other_test`)? Its smallest effect of interest is
:data:`metacog.hypotheses.verdict.SELF_OTHER_MARGIN` (0.02 in τ-b units, the margin of the power
chapter's verdicts). :func:`items_needed`

1. finds the planted signal ``kappa`` of the book's simulator (:func:`metacog.power.simulate.population`,
   default settings) at which T's expected excess over ``kappa = 0`` equals that margin
   (:func:`metacog.power.curves.pairwise_power`'s mean statistic, bisection on ``kappa``);
2. finds the fewest items, on :data:`ITEM_GRID`, at which the chapter's test
   (:func:`metacog.hypotheses.power.pairwise_method`: the permutation test, or the paired t-test
   when the permutation test cannot reach ``alpha`` with so few models) rejects at ``alpha`` with
   the target power (:data:`metacog.hypotheses.verdict.TARGET_POWER`).

So the number printed is the one the power chapter would call adequate: a design of that size
detects the margin with that power. It assumes the simulator's default settings; the power
chapter matches the simulator to the data once they exist, and says then what the panel could
detect.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

#: The item counts the search walks (the answer is the first that reaches the target power).
ITEM_GRID = (50, 75, 100, 150, 200, 300, 400, 500, 750, 1000, 1500, 2000, 3000, 5000)

#: Items and simulations of the step that ties the margin to the simulator's ``kappa`` (a mean
#: statistic: large panels, few simulations).
_CALIBRATE_ITEMS, _CALIBRATE_SIMS = 4000, 20


@dataclass
class Sizing:
    """What :func:`items_needed` found; ``path`` holds every (items, power) it evaluated."""

    n_models: int
    n_items: int | None  # None: not reached on the grid
    margin: float
    kappa: float  # the simulator's kappa whose expected excess is the margin
    power: float  # estimated power at n_items
    target_power: float
    alpha: float
    method: str
    n_sims: int
    path: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)

    def summary(self) -> pd.DataFrame:
        reached = f"{self.n_items:,}" if self.n_items else f"more than {ITEM_GRID[-1]:,}"
        return pd.DataFrame([
            ("models", f"{self.n_models}"),
            ("smallest effect of interest (self minus other τ-b)", f"{self.margin:g}"),
            ("simulator kappa with that expected effect", f"{self.kappa:.3f}"),
            ("test", f"{self.method}, one-sided at alpha {self.alpha:g}"),
            ("target power", f"{self.target_power:g}"),
            ("items needed per panel", reached),
            ("estimated power there", f"{self.power:.2f} ({self.n_sims} simulations)"),
        ], columns=["quantity", "value"])


def _expected_excess(n_models: int, kappa: float, seed: int) -> float:
    from metacog.power.curves import pairwise_power

    t = pairwise_power(n_models, _CALIBRATE_ITEMS, kappas=(0.0, kappa), n_sims=_CALIBRATE_SIMS,
                       method="ttest", seed=seed)["mean_statistic"].to_numpy()
    return float(t[1] - t[0])


def margin_kappa(n_models: int, margin: float, *, seed: int = 0, tol: float = 0.002) -> float:
    """The simulator's ``kappa`` at which T's expected excess over ``kappa = 0`` is ``margin``
    (bisection on [0, 2]; common random numbers, so the excess rises smoothly with kappa)."""
    lo, hi = 0.0, 2.0
    if _expected_excess(n_models, hi, seed) < margin:
        raise ValueError(f"items_needed: even kappa {hi} gives an expected excess below {margin}.")
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if _expected_excess(n_models, mid, seed) >= margin:
            hi = mid
        else:
            lo = mid
    return hi


def items_needed(n_models: int, *, margin: float | None = None, power: float | None = None,
                 alpha: float = 0.05, n_sims: int = 400, seed: int = 0) -> Sizing:
    """The fewest items per panel at which ``n_models`` models detect the book's smallest
    self-minus-other effect of interest with the target power (see the module docstring).

    >>> s = items_needed(20, n_sims=50)
    >>> s.n_items in ITEM_GRID and s.power >= s.target_power
    True
    """
    from metacog.hypotheses.power import pairwise_method
    from metacog.hypotheses.verdict import SELF_OTHER_MARGIN, TARGET_POWER
    from metacog.power.curves import pairwise_power

    if int(n_models) != n_models or n_models < 3:
        raise ValueError(f"items_needed: the self-versus-other test needs at least 3 models, got {n_models!r}.")
    margin = SELF_OTHER_MARGIN if margin is None else float(margin)
    power = TARGET_POWER if power is None else float(power)
    kappa = margin_kappa(int(n_models), margin, seed=seed)
    method = pairwise_method(int(n_models), alpha)

    def power_at(n: int) -> float:
        return float(pairwise_power(int(n_models), n, kappas=(kappa,), n_sims=n_sims, alpha=alpha,
                                    method=method, seed=seed)["power"].iloc[0])

    seen: dict[int, float] = {}
    lo, hi = 0, len(ITEM_GRID) - 1
    seen[ITEM_GRID[hi]] = power_at(ITEM_GRID[hi])
    if seen[ITEM_GRID[hi]] < power:
        found = None
    else:
        while lo < hi:  # power rises with items: the first grid point that reaches the target
            mid = (lo + hi) // 2
            seen[ITEM_GRID[mid]] = power_at(ITEM_GRID[mid])
            if seen[ITEM_GRID[mid]] >= power:
                hi = mid
            else:
                lo = mid + 1
        found = ITEM_GRID[hi]
    path = pd.DataFrame(sorted(seen.items()), columns=["n_items", "power"])
    at = seen[found] if found else seen[ITEM_GRID[-1]]
    return Sizing(int(n_models), found, margin, kappa, at, power, alpha, method, n_sims, path)


def sizes_table(model_counts, **kwargs) -> pd.DataFrame:
    """:func:`items_needed` for several panel sizes: one row per number of models."""
    rows = []
    for m in model_counts:
        s = items_needed(int(m), **kwargs)
        rows.append({"models": s.n_models, "items_needed": s.n_items if s.n_items else np.nan,
                     "power": s.power, "kappa": s.kappa, "method": s.method})
    return pd.DataFrame(rows)
