"""What a replicate run asks and costs, before any call (:func:`plan`), and the checks of its input
(:func:`check`, :func:`check_budget`). The book's "Replicate on your models" page reads only this
module, so it is re-executed when planning changes, not when a chapter does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from metacog.replicate.asks import Ask, cost_table, calls_table, plan_asks
from metacog.replicate.sizes import ITEM_GRID, Sizing, items_needed


class ReplicateError(ValueError):
    """Bad input, or a run that cannot go on (the CLI prints it as one line and exits 2)."""


class BudgetExceeded(ReplicateError):
    """The plan's estimated cost is above ``budget``, or cannot be known: nothing was asked."""


@dataclass
class Plan:
    """What a replicate run asks and costs (:func:`plan`); ``summary()`` per benchmark."""

    models: list[str]
    sizing: Sizing
    n_items: int
    asks: list[Ask]
    calls: pd.DataFrame
    cost: pd.DataFrame
    batch: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def total_calls(self) -> int:
        return int(self.calls["calls"].sum())

    @property
    def total_cost(self) -> float:
        """USD, NaN when some model has no price."""
        c = self.cost["cost_usd"]
        return math.nan if c.isna().any() else float(c.sum())

    def summary(self) -> pd.DataFrame:
        """One row per benchmark: items planned, available, asked; probes; calls; tokens."""
        asks = {a.benchmark: a for a in self.asks}
        rows = []
        for b, g in self.calls.groupby("benchmark", sort=False):
            a = asks.get(b)
            items = int(g["items"].iloc[0])
            rows.append({"benchmark": b, "items planned": (f"{a.planned:,}" if a.planned else "all") if a else f"{items:,}",
                         "items available": a.available if a else None, "items asked": items,
                         "probes": ", ".join(g["probe"]), "calls (at most)": int(g["calls"].sum()),
                         "prompt tokens": int(g["prompt_tokens"].sum()),
                         "reply tokens (at most)": int(g["completion_tokens"].sum())})
        out = pd.DataFrame(rows)
        out["items available"] = out["items available"].astype("Int64")
        return out

    def text(self) -> str:
        """The plan as ``metacog replicate --plan`` prints it."""
        s = self.sizing
        need = f"{s.n_items:,}" if s.n_items else f"more than {ITEM_GRID[-1]:,}"
        head = [f"Plan for {len(self.models)} models: {', '.join(self.models)}",
                f"Items per benchmark: {self.n_items:,}. With {s.n_models} models the self-versus-other "
                f"test ({s.method}, alpha {s.alpha:g}) needs {need} items per panel to detect the book's "
                f"smallest effect of interest, a self-minus-other τ-b of {s.margin:g}, with power "
                f"{s.target_power:g} (estimated {s.power:.2f} there; metacog.replicate.sizes, the "
                "power chapter's simulator at its default settings).", ""]
        total = self.total_cost
        price = ("unknown (no price for " + ", ".join(self.cost.loc[self.cost["cost_usd"].isna(), "model"])
                 + " in litellm's offline price map)") if math.isnan(total) else f"${total:,.2f}"
        tail = ["", self.cost.to_string(index=False), "",
                f"Total: {self.total_calls:,} calls at most, {int(self.calls['prompt_tokens'].sum()):,} prompt "
                f"tokens, {int(self.calls['completion_tokens'].sum()):,} reply tokens at most; estimated cost "
                f"at most {price}" + (" at batch prices" if self.batch else "") + "."]
        return "\n".join(head + [self.summary().to_string(index=False)] + [f"Note: {n}" for n in self.notes]
                         + tail)


def _models(models) -> list[str]:
    if isinstance(models, str):
        models = [m.strip() for m in models.split(",")]
    models = list(dict.fromkeys(m for m in models if m))
    if len(models) < 3:
        raise ReplicateError(f"--models: {len(models)} model(s) given; paper 1's analyses compare each model "
                             "with the others and need at least 3 (give them comma-separated).")
    return models


def _benchmarks(benchmarks, notes: list[str]) -> list[str]:
    from metacog.benchmarks import PAPER_BENCHMARKS

    if benchmarks is None:
        chosen = list(PAPER_BENCHMARKS)
        from metacog.benchmarks.sandbox import available

        ok, why = available()
        if not ok and "scicode" in chosen:
            chosen.remove("scicode")
            notes.append(f"SciCode left out: its answers are graded only in the sealed sandbox, not "
                         f"available here ({why}).")
        return chosen
    if isinstance(benchmarks, str):
        benchmarks = [b.strip() for b in benchmarks.split(",") if b.strip()]
    unknown = [b for b in benchmarks if b not in PAPER_BENCHMARKS]
    if unknown or not benchmarks:
        raise ReplicateError(f"--benchmarks: {unknown or 'none given'}; choose from paper 1's "
                             f"{', '.join(PAPER_BENCHMARKS)}.")
    return list(dict.fromkeys(benchmarks))


def check(models, benchmarks=None, n_items: int | None = None, panel: str | None = None,
          panel_items: int = 200, api_base: str | None = None) -> tuple[list[str], list[str], list[str]]:
    """The models and benchmarks a run asks, with notes on what was left out; :class:`ReplicateError`
    (one line) for too few models, an unknown benchmark or panel, or too few items. Asks nothing."""
    models = _models(models)
    notes: list[str] = []
    chosen = _benchmarks(benchmarks, notes)
    if n_items is not None and (int(n_items) != n_items or n_items < 10):
        raise ReplicateError(f"--n-items: {n_items!r}; give at least 10 items per benchmark.")
    if panel:
        from metacog.pages.place import run as placing

        try:
            for m in models:  # the protocol is asked of your own servers or the local panel
                placing.check(panel, m, api_base, panel_items)
        except ValueError as exc:
            msg = str(exc).replace("--n-items", "--panel-items")
            raise ReplicateError(msg if msg.startswith("--panel") else f"--panel {panel}: {msg}") from None
    return models, chosen, notes


def plan(models, *, benchmarks=None, n_items: int | None = None, audit: bool = True,
         api_base: str | None = None, batch: bool = False, max_tokens: int | None = None, seed: int = 0,
         panel: str | None = None, panel_items: int = 200, n_sims: int = 400) -> Plan:
    """What :func:`run` would ask and what it would cost; no call is made (see the module docstring).

    ``n_items`` overrides the planned items per benchmark; ``benchmarks`` defaults to paper 1's
    six (SciCode only where its sandbox grader runs); ``audit`` adds paper 2's policies on the
    audit set; ``panel`` a public panel's own protocol on ``panel_items`` items.

    >>> p = plan(["openai/gpt-4o-mini", "openai/gpt-4.1-mini", "openai/gpt-4.1-nano"],
    ...          benchmarks="mmlu_pro", n_items=100, audit=False, n_sims=50)
    >>> p.summary()[["benchmark", "items asked", "calls (at most)", "prompt tokens"]]
      benchmark  items asked  calls (at most)  prompt tokens
    0  mmlu_pro          100             1200         243231
    >>> round(p.total_cost, 2)  # US dollars at litellm's offline prices
    0.19
    """
    models, chosen, notes = check(models, benchmarks, n_items, panel, panel_items, api_base)
    from metacog.memo import memo

    sizing = memo(items_needed, len(models), n_sims=n_sims, seed=seed)
    planned = int(n_items) if n_items else (sizing.n_items or ITEM_GRID[-1])
    if n_items is None and not sizing.n_items:
        notes.append(f"{ITEM_GRID[-1]:,} items do not reach the target power with {len(models)} models; "
                     "the plan asks that many and the power chapter will say what they can detect.")
    elif n_items is not None and sizing.n_items and n_items < sizing.n_items:
        notes.append(f"--n-items {n_items:,} is below the {sizing.n_items:,} the power analysis asks for: "
                     "a null result on such panels reads 'cannot tell'.")
    asks = plan_asks(chosen, planned, audit)
    for a in asks:
        if a.short:
            notes.append(f"{a.benchmark} has {a.available:,} items, fewer than planned: its panels are "
                         "smaller than the power analysis asks for.")
    notes.append("Counterfactual judgments are asked only after a correct answer with the context, so "
                 "their calls are an upper bound and their panels hold only such items.")
    calls = calls_table(asks, len(models), seed=seed, max_tokens=max_tokens)
    if panel:
        from metacog.replicate.asks import panel_calls

        calls = pd.concat([calls, panel_calls(panel, panel_items, len(models), seed=seed)], ignore_index=True)
    cost = cost_table(calls, models, api_base=api_base, batch=batch)
    return Plan(models, sizing, planned, asks, calls, cost, batch, notes)


def check_budget(p: Plan, budget: float | None) -> None:
    """:class:`BudgetExceeded` (one line) when the plan's cost is above ``budget`` or unknown."""
    if budget is None:
        return
    unknown = p.cost.loc[p.cost["cost_usd"].isna(), "model"].tolist()
    if unknown:
        raise BudgetExceeded(f"--budget {budget:g}: no price for {', '.join(unknown)} in litellm's offline price "
                             "map, so the cost cannot be checked; nothing was asked. Pass --api-base for your "
                             "own server, or drop --budget.")
    if p.total_cost > budget:
        raise BudgetExceeded(f"--budget {budget:g}: the plan costs up to ${p.total_cost:,.2f} "
                             f"({p.total_calls:,} calls at most); nothing was asked. Lower --n-items or "
                             "--benchmarks, use --batch, or raise --budget.")
