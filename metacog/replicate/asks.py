"""What ``metacog replicate`` asks, and what it will cost: the calls of both papers' designs.

Paper 1 (Moran & Whiting) asks every model, on each of its six benchmarks
(:data:`metacog.benchmarks.PAPER_BENCHMARKS`), a *prospective* judgment ("could you answer
without the context?") and the answer without the context it is scored against; where the
benchmark has a *counterfactual* design (:data:`metacog.benchmarks.APPLICABLE_PROBES`; LegalBench
has none), also the answer with the context and, after a correct one, the counterfactual
judgment. Paper 2 (Okutomi) asks its three policies C0, C1 and C2 on the audit set.

:func:`calls_table` counts the calls and tokens of such a run from the prompts themselves (the
rendered templates of the items that will be asked: prompt tokens as the engine estimates them,
reply tokens at each template's cap), and :func:`cost_table` prices them per model from
litellm's offline price map, with the provider batch discount where it applies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

#: Paper 2's policies, asked on the audit set.
POLICIES = ("c0", "c1", "c2")
AUDIT = "audit"

#: The probes whose rows are judgments, with the design (``metacog.data.designs`` timing) the
#: replicate file records for them.
DESIGN_OF = {"prospective": "prospective", "counterfactual": "counterfactual",
             "c0": "after answering", "c1": "after answering", "c2": "after answering"}


def probes_for(benchmark: str) -> tuple[str, ...]:
    """The probes asked on ``benchmark``, in asking order ('audit': paper 2's policies)."""
    from metacog.benchmarks import APPLICABLE_PROBES

    if benchmark == AUDIT:
        return POLICIES
    designs = APPLICABLE_PROBES.get(benchmark, ("prospective",))
    probes = ["prospective", "answer_no_context"]
    if "counterfactual" in designs:
        probes += ["answer", "counterfactual"]
    return tuple(probes)


@dataclass(frozen=True)
class Ask:
    """One benchmark of the run: how many items were planned, exist and will be asked."""

    benchmark: str
    planned: int | None  # None: every item (the audit set)
    available: int
    asked: int
    probes: tuple[str, ...]

    @property
    def short(self) -> bool:
        return self.planned is not None and self.asked < self.planned


def available(benchmark: str) -> int:
    """How many items ``benchmark`` has here (the loader's default split)."""
    from metacog.benchmarks import load_items

    return len(load_items(benchmark))


def plan_asks(benchmarks, n_items: int | None, audit: bool = True) -> list[Ask]:
    """One :class:`Ask` per benchmark (and the audit set when ``audit``): ``n_items`` items each,
    or all a benchmark has when it has fewer."""
    out = []
    for b in benchmarks:
        have = available(b)
        out.append(Ask(b, n_items, have, min(have, n_items) if n_items else have, probes_for(b)))
    if audit:
        have = available(AUDIT)
        out.append(Ask(AUDIT, None, have, have, POLICIES))
    return out


def items_of(ask: Ask, seed: int = 0):
    """The items ``ask`` asks: a stratified subset chosen by ``seed`` (:func:`metacog.benchmarks.load_items`)."""
    from metacog.benchmarks import load_items

    n = None if ask.asked >= ask.available else ask.asked
    return load_items(ask.benchmark, n_items=n, seed=seed)


def calls_table(asks: list[Ask], n_models: int, *, seed: int = 0, max_tokens: int | None = None) -> pd.DataFrame:
    """Calls and tokens per benchmark and probe, for ``n_models`` models.

    Every template is rendered for every item that will be asked (the counterfactual one with
    the item's gold answer standing in for the model's own), and tokens counted as the engine's
    :func:`metacog.elicit.cost.estimate_cost` counts them: prompt characters / 4 plus 4 per
    message, and the template's reply cap (``max_tokens`` when given). Counterfactual calls are
    an upper bound: they are asked only after a correct answer with the context.
    """
    from metacog.elicit.tasks import Settings, make_task

    s = Settings(max_tokens=max_tokens)
    rows = []
    for a in asks:
        items = items_of(a, seed)
        for probe in a.probes:
            pt = ct = 0
            for it in items:
                fill = {"own_answer": str(it.gold)} if probe == "counterfactual" else {}
                t = make_task("planner/model", it, probe, 0, s, **fill)
                pt += sum(len(m["content"]) for m in t.messages) // 4 + 4 * len(t.messages)
                ct += int(t.params.get("max_tokens", 128))
            rows.append({"benchmark": a.benchmark, "probe": probe, "items": len(items),
                         "calls": len(items) * n_models, "at_most": probe == "counterfactual",
                         "prompt_tokens": pt * n_models, "completion_tokens": ct * n_models})
    return pd.DataFrame(rows, columns=["benchmark", "probe", "items", "calls", "at_most", "prompt_tokens",
                                       "completion_tokens"])


def panel_calls(panel: str, n_items: int, n_models: int, *, seed: int = 0) -> pd.DataFrame:
    """The calls of a public panel's own protocol (``metacog replicate --panel``), counted like
    :func:`calls_table`: its prompts rendered for the items it will draw, replies at its cap."""
    import importlib

    from metacog.elicit.protocols.ask import panel_items

    proto = importlib.import_module(f"metacog.elicit.protocols.{panel}").protocol()
    items = panel_items(n_items, seed)
    pt = 0
    for q, opts in zip(items["question"], items["options"]):
        msgs = proto.messages(q, list(opts))
        pt += sum(len(m["content"]) for m in msgs) // 4 + 4 * len(msgs)
    return pd.DataFrame([{"benchmark": f"{panel} protocol", "probe": "verbal_confidence", "items": len(items),
                          "calls": len(items) * n_models, "at_most": False, "prompt_tokens": pt * n_models,
                          "completion_tokens": len(items) * proto.max_tokens * n_models}])


def _unit_prices(model: str, batch: bool) -> tuple[float, float] | None:
    """(USD per prompt token, per reply token) of ``model`` in litellm's offline map, the batch
    prices when ``batch`` (the map's own batch prices where it has them, else half the ordinary
    ones, as the providers' batch APIs charge); None when the map has no price."""
    from metacog.elicit.backend import get_litellm
    from metacog.elicit.pricemap import surely_unpriced

    if surely_unpriced(model):
        return None
    try:
        info = get_litellm().get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises its own errors for unknown models
        return None
    pin, pout = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if pin is None or pout is None:
        return None
    if batch:
        bin_, bout = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
        return (float(bin_) if bin_ is not None else pin / 2, float(bout) if bout is not None else pout / 2)
    return float(pin), float(pout)


def cost_table(calls: pd.DataFrame, models, *, api_base: str | None = None, batch: bool = False,
               n_models: int | None = None) -> pd.DataFrame:
    """Per model: calls, prompt and reply tokens (upper bounds) and the estimated cost in USD.

    ``calls`` is :func:`calls_table` for ``n_models`` models (default ``len(models)``); each model
    asks an equal share. Local models cost 0; a model litellm cannot price costs NaN, or 0 when
    ``api_base`` names your own server (you pay for the machine, not per token).
    """
    from metacog.elicit.tasks import is_local

    models = list(models)
    share = 1.0 / (n_models or len(models))
    n = int(round(calls["calls"].sum() * share))
    pt = int(round(calls["prompt_tokens"].sum() * share))
    ct = int(round(calls["completion_tokens"].sum() * share))
    rows = []
    for m in models:
        if is_local(m):
            usd = 0.0
        else:
            unit = _unit_prices(m, batch)
            usd = (pt * unit[0] + ct * unit[1]) if unit else (0.0 if api_base else math.nan)
        rows.append({"model": m, "calls": n, "prompt_tokens": pt, "completion_tokens": ct, "cost_usd": usd})
    return pd.DataFrame(rows, columns=["model", "calls", "prompt_tokens", "completion_tokens", "cost_usd"])
