"""Replicate both papers on your own models: from a list of models to a whole book (``metacog replicate``).

:func:`plan` (:mod:`metacog.replicate.planning`) says, before any call, what a run will ask and what it will cost:

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
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from metacog.replicate.asks import DESIGN_OF, Ask, items_of
from metacog.replicate.planning import BudgetExceeded, Plan, ReplicateError, check, check_budget, plan
from metacog.replicate.sizes import ITEM_GRID, items_needed

__all__ = ["check", "plan", "run", "Plan", "Replication", "ReplicateError", "BudgetExceeded", "items_needed"]


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
        from metacog.elicit.failures import describe
        from metacog.elicit.redaction import redact, redact_url

        base = kwargs.get("api_base")
        what = describe(df.loc[failed, "error"].fillna(""), len(df), timeout=kwargs.get("timeout"),
                        api_base=redact_url(base) if base else None)
        raise ReplicateError(redact(
            f"{a.benchmark}: all {len(df):,} calls failed: {what}; nothing was lost (answers already cached "
            "are kept, and no failure is kept as an answer): rerun the same command once the models answer "
            "and it asks these calls again."))
    if failed.any():
        say(f"{a.benchmark}: {int(failed.sum()):,} of {len(df):,} calls failed; the next run of the same "
            "command asks them again.")
    df = df.copy()
    df["design"] = df["probe"].map(DESIGN_OF).astype("string")
    df.attrs = {"counts": c}
    return df


def run(models, out, *, benchmarks=None, n_items: int | None = None, audit: bool = True, budget: float | None = None,
        api_base: str | None = None, router=None, batch: bool = False, cache=None, concurrency: int = 8,
        timeout: float = 60.0, max_retries: int = 4, max_tokens: int | None = None, seed: int = 0,
        progress: bool = True,
        book: bool = True, jobs: int | None = None, panel: str | None = None, panel_items: int = 200,
        log: Callable[[str], None] | None = None) -> Replication:
    """Plan, check the budget, ask, write ``<out>/responses.parquet``, build ``<out>/book``.

    Every answer goes through the response cache (``cache``: see :func:`metacog.elicit.run`), so a
    rerun after a crash or SIGKILL replays what was asked and asks only the rest. Each call is
    tried ``max_retries`` + 1 times, ``timeout`` seconds each. Raises :class:`ReplicateError`
    (one line: what failed, that nothing was lost, how to rerun) when every call of a benchmark
    failed; failed calls are never kept as answers, so the same command asks them again. Raises
    :class:`BudgetExceeded` before any call when the plan costs more than ``budget``. ``panel``
    (e.g. 'calibration_study') also asks each model that public panel's own protocol on
    ``panel_items`` items and places it among the panel's models (:mod:`metacog.replicate.panel`,
    ``<out>/place/<model>/``).

    Examples
    --------
    Every plan is priced before any call; a budget below the plan's cost stops the run with
    nothing asked and nothing written:

    >>> try:
    ...     run(["openai/gpt-4o-mini", "openai/gpt-4.1-mini", "openai/gpt-4.1-nano"], "out", n_items=20,
    ...         budget=0.0001, book=False, progress=False)
    ... except BudgetExceeded as err:
    ...     print(err)
    --budget 0.0001: the plan costs up to $... calls at most); nothing was asked. ...
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
                  max_retries=max_retries, max_tokens=max_tokens, progress=progress)
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
                                     seed=seed, cache=cache, concurrency=concurrency, timeout=timeout,
                                     retries=max_retries, log=say)
    if book:
        from metacog.sourcebook import build

        result.book = build([responses], out / "book", jobs=jobs, log=say)
    return result
