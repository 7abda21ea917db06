"""Cost: an upper-bound estimate of the calls still to make, and the --max-cost check."""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from metacog.elicit.pricemap import surely_unpriced
from metacog.elicit.tasks import Task, is_local


class BudgetError(RuntimeError):
    """The estimated cost of the calls still to make exceeds ``max_cost``."""


def token_cost(model: str, prompt_tokens: int, completion_tokens: int, batch: bool = False) -> float:
    """USD cost of one call's tokens from litellm's offline price map (raises when it has no price).

    With ``batch``, the price of a provider batch: the map's ``input_cost_per_token_batches`` /
    ``output_cost_per_token_batches`` where it lists them, else half the ordinary price (the
    discount OpenAI, Anthropic and others give their batch APIs)."""
    from metacog.elicit.backend import get_litellm

    litellm = get_litellm()
    pc, cc = litellm.cost_per_token(model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    if not batch:
        return float(pc + cc)
    info = litellm.get_model_info(model)
    bi, bo = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
    pc = prompt_tokens * bi if bi is not None else pc / 2
    cc = completion_tokens * bo if bo is not None else cc / 2
    return float(pc + cc)


def estimate_cost(tasks: Sequence[Task], api_base: str | None = None, batch: bool = False) -> pd.DataFrame:
    """Upper-bound cost of ``tasks`` per model from litellm's offline price map.

    Prompt tokens are estimated as characters / 4; completion tokens as
    ``max_tokens``. Local models cost 0; models the map does not know cost NaN
    (0 when ``api_base`` points at your own server). With ``batch``, at the price of a
    provider batch (:func:`token_cost`: the map's batch prices where it has them, else half
    the ordinary price). Returns one row per model: model, calls, prompt_tokens,
    completion_tokens, cost_usd.
    """
    by: dict[str, list[int]] = {}
    for t in tasks:
        chars = sum(len(m["content"]) for m in t.messages)
        acc = by.setdefault(t.model, [0, 0, 0])
        acc[0] += 1
        acc[1] += chars // 4 + 4 * len(t.messages)
        acc[2] += int(t.params.get("max_tokens", 128))
    rows = []
    for model, (n, pt, ct) in by.items():
        if is_local(model):
            cost = 0.0
        elif surely_unpriced(model):  # not in the price map: known without importing litellm
            cost = 0.0 if api_base else math.nan
        else:
            try:
                cost = token_cost(model, pt, ct, batch)
            except Exception:  # noqa: BLE001 - not in the price map
                cost = 0.0 if api_base else math.nan
        rows.append({"model": model, "calls": n, "prompt_tokens": pt, "completion_tokens": ct,
                     "cost_usd": cost})
    return pd.DataFrame(rows, columns=["model", "calls", "prompt_tokens", "completion_tokens", "cost_usd"])


def check_budget(est: pd.DataFrame, max_cost: float | None) -> None:
    """Raise :class:`BudgetError` when ``est`` (from :func:`estimate_cost`) exceeds ``max_cost``."""
    if max_cost is None or est.empty:
        return
    unknown = est.loc[est["cost_usd"].isna(), "model"].tolist()
    if unknown:
        raise BudgetError(
            f"--max-cost {max_cost}: no price for model(s) {unknown} in litellm's offline cost map; "
            "pass --api-base for your own server, or drop --max-cost to run without a cap."
        )
    total = float(est["cost_usd"].sum())
    if total > max_cost:
        raise BudgetError(
            f"estimated cost ${total:.4f} of {int(est['calls'].sum())} uncached call(s) exceeds "
            f"max_cost ${max_cost:.4f}:\n{est.to_string(index=False)}\n"
            "Raise --max-cost, lower --n-items, or use cheaper models."
        )
