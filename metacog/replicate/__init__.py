"""Replicate both papers on your own models: from a list of models to a whole book (``metacog replicate``).

:func:`plan` says, before any call, what a run will ask and what it will cost:

- the items each benchmark needs, from the power chapter's own functions
  (:func:`metacog.replicate.sizes.items_needed`: the fewest items at which this many models detect
  the book's smallest self-minus-other effect of interest with 80% power), capped at what each
  benchmark has;
- the calls and tokens, from the rendered prompts and each template's reply cap
  (:func:`metacog.replicate.asks.calls_table`), and the cost per model from litellm's offline
  price map, with the batch discount under ``batch`` (:func:`metacog.replicate.asks.cost_table`).

:func:`run` refuses a plan above ``budget`` before any call, then asks paper 1's probes on its
benchmarks and paper 2's policies on the audit set through :func:`metacog.elicit.run` (the
resumable response cache: a killed run asks nothing twice; ``batch`` sends the calls through the
providers' batch APIs), writes one tidy parquet of every response with each judgment's design
(``<out>/responses.parquet``), and builds the book on it (:func:`metacog.sourcebook.build`,
``<out>/book``): every chapter the panel can serve, and a findings page deciding each claim on it.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from metacog.replicate.asks import AUDIT, DESIGN_OF, Ask, calls_table, cost_table, items_of, plan_asks
from metacog.replicate.sizes import ITEM_GRID, Sizing, items_needed

__all__ = ["check", "plan", "run", "Plan", "Replication", "ReplicateError", "BudgetExceeded", "items_needed"]


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


@dataclass
class Replication:
    """What :func:`run` produced: the plan, the responses file, per-benchmark counts, the book."""

    plan: Plan
    responses: Path
    counts: pd.DataFrame
    book: object = None  # a metacog.sourcebook result, when the book was built
    placed: pd.DataFrame | None = None  # with a public panel: each model's responses and place page

    def summary(self) -> pd.DataFrame:
        return self.counts


def _asked(a: Ask, models, seed: int, say: Callable, **kwargs) -> pd.DataFrame:
    """Ask one benchmark (every model, every probe) through the cache; raise when nothing came back."""
    from metacog.elicit import run as elicit_run

    items = items_of(a, seed)
    say(f"{a.benchmark}: {len(items):,} items x {len(models)} models, probes {', '.join(a.probes)}")
    df = elicit_run(items, models, list(a.probes), seed=seed, **kwargs)
    c = df.attrs.get("counts", {})
    failed = df["parse_status"].astype(str).eq("error")
    if len(df) and failed.all():
        first = str(df.loc[failed, "error"].dropna().iloc[0]) if df["error"].notna().any() else "no reply"
        raise ReplicateError(f"{a.benchmark}: all {len(df):,} calls failed ({first.splitlines()[0][:200]}); "
                             "nothing is lost: answers already cached are kept, and failures like an "
                             "unreachable server are asked again when you rerun the same command.")
    df = df.copy()
    df["design"] = df["probe"].map(DESIGN_OF).astype("string")
    df.attrs = {"counts": c}
    return df


def run(models, out, *, benchmarks=None, n_items: int | None = None, audit: bool = True, budget: float | None = None,
        api_base: str | None = None, router=None, batch: bool = False, cache=None, concurrency: int = 8,
        timeout: float = 60.0, max_tokens: int | None = None, seed: int = 0, progress: bool = True,
        book: bool = True, jobs: int | None = None, panel: str | None = None, panel_items: int = 200,
        log: Callable[[str], None] | None = None) -> Replication:
    """Plan, check the budget, ask, write ``<out>/responses.parquet``, build ``<out>/book``.

    Every answer goes through the response cache (``cache``: see :func:`metacog.elicit.run`), so a
    rerun after a crash or SIGKILL replays what was asked and asks only the rest. Raises
    :class:`BudgetExceeded` before any call when the plan costs more than ``budget``. ``panel``
    (e.g. 'calibration_study') also asks each model that public panel's own protocol on
    ``panel_items`` items and places it among the panel's models (:mod:`metacog.replicate.panel`,
    ``<out>/place/<model>/``).
    """
    from metacog.paths import writable_folder

    say = log or (lambda msg: None)
    try:
        out = writable_folder(out, f"--out {out}")
    except ValueError as exc:
        raise ReplicateError(str(exc)) from None
    p = plan(models, benchmarks=benchmarks, n_items=n_items, audit=audit, api_base=api_base, batch=batch,
             max_tokens=max_tokens, seed=seed, panel=panel, panel_items=panel_items)
    check_budget(p, budget)
    say(f"plan: {p.total_calls:,} calls at most, " + ("cost unknown" if math.isnan(p.total_cost)
                                                      else f"at most ${p.total_cost:,.2f}"))
    kwargs = dict(cache=cache, api_base=api_base, router=router, concurrency=concurrency, timeout=timeout,
                  max_tokens=max_tokens, progress=progress)
    if batch:
        kwargs["batch"] = True
    if budget is not None:
        kwargs["max_cost"] = float(budget)
    parts, counts = [], []
    folder = out / "responses"
    folder.mkdir(exist_ok=True)
    for a in p.asks:
        try:
            df = _asked(a, p.models, seed, say, **kwargs)
        except ReplicateError:
            raise
        except ValueError as exc:  # the engine's own checks: unknown model, bad router, budget ...
            raise ReplicateError(f"{a.benchmark}: {str(exc).splitlines()[0]}") from None
        c = df.attrs.get("counts", {})
        if "max_cost" in kwargs:
            kwargs["max_cost"] = max(0.0, kwargs["max_cost"] - float(c.get("spent_usd", 0.0) or 0.0))
        df.to_parquet(folder / f"{a.benchmark}.parquet", index=False)
        parts.append(df)
        counts.append({"benchmark": a.benchmark, "rows": len(df), "asked": c.get("done", 0),
                       "replayed": c.get("cached", 0), "failed": c.get("failed", 0),
                       "spent_usd": c.get("spent_usd", 0.0)})
    responses = out / "responses.parquet"
    tmp = responses.with_suffix(f".{os.getpid()}.tmp")
    pd.concat(parts, ignore_index=True).to_parquet(tmp, index=False)
    tmp.replace(responses)  # whole or not at all
    result = Replication(p, responses, pd.DataFrame(counts))
    if panel:
        from metacog.replicate.panel import place_models

        result.placed = place_models(p.models, out / "place", panel=panel, api_base=api_base, n_items=panel_items,
                                     seed=seed, cache=cache, concurrency=concurrency, log=say)
    if book:
        from metacog.sourcebook import build

        result.book = build([responses], out / "book", jobs=jobs, log=say)
    return result
