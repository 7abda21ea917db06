"""Deterministic stratified subsets of benchmark items.

Same items, size and seed -> same subset, on any machine and any numpy
version: items are ranked within a stratum by sha256("<seed>:<item_id>"), not by
a random generator. The size is shared across strata in proportion to their
sizes (largest remainder), with at least one item per stratum whenever the
size allows it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import pandas as pd

from metacog.tidy.items import Item


def _level_stratum(item: Item) -> Hashable:
    return (item.domain, item.meta.get("level"))


#: The stratum of an item, per benchmark (default: the item's ``domain``).
STRATA: dict[str, Callable[[Item], Hashable]] = {
    "squad": lambda it: it.domain,  # article
    "mmlu_pro": lambda it: it.domain,  # category
    "legalbench": lambda it: it.meta["task"],  # task
    "math": _level_stratum,  # subject x level
    "math500": _level_stratum,
    "omni_math": lambda it: it.domain,  # coarse domain
    "scicode": lambda it: it.domain,  # problem
    "truthfulqa": lambda it: it.domain,  # category
    "strategyqa": lambda it: it.gold,  # yes / no
    "selfaware": lambda it: (it.domain, it.subject),  # answerable x source
}


def stratum_of(item: Item) -> Hashable:
    """The stratum used for ``item``'s benchmark."""
    return STRATA.get(item.benchmark, lambda it: it.domain)(item)


def _rank(seed: int, item_id: str) -> str:
    return hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest()


def allocate(sizes: dict[Any, int], n: int, seed: int = 0) -> dict[Any, int]:
    """How many items to take from each stratum.

    Proportional to the stratum sizes by largest remainder, at least one per
    stratum when ``n`` >= the number of strata, never more than a stratum has.
    When ``n`` is smaller than the number of strata, the ``n`` largest strata get
    one each. Ties break on a seeded hash of the stratum name, so they are
    deterministic but differ between seeds.
    """
    total = sum(sizes.values())
    if n < 0:
        raise ValueError(f"allocate: n must be >= 0, got {n}.")
    if n >= total:
        return dict(sizes)
    tie = {k: _rank(seed, f"stratum:{k}") for k in sizes}
    keys = sorted(sizes, key=lambda k: tie[k])
    if n < len(keys):
        top = sorted(keys, key=lambda k: (-sizes[k], tie[k]))[:n]
        return {k: int(k in top) for k in keys}
    quota = {k: n * sizes[k] / total for k in keys}
    alloc = {k: min(sizes[k], max(1, math.floor(quota[k]))) for k in keys}
    while sum(alloc.values()) > n:  # the minimum of one pushed us over: trim the most over-served
        k = max((k for k in keys if alloc[k] > 1), key=lambda k: (alloc[k] - quota[k], tie[k]))
        alloc[k] -= 1
    while sum(alloc.values()) < n:  # hand out the rest by largest shortfall
        k = max((k for k in keys if alloc[k] < sizes[k]), key=lambda k: (quota[k] - alloc[k], tie[k]))
        alloc[k] += 1
    return alloc


def stratified_subset(items: Sequence[Item], n_items: int, seed: int = 0,
                      key: Callable[[Item], Hashable] | None = None) -> list[Item]:
    """``n_items`` of ``items``, stratified by ``key`` (default :func:`stratum_of`).

    Returns the chosen items in their original order. Asking for at least as
    many items as there are returns them all.
    """
    if n_items is None:
        return list(items)
    if not isinstance(n_items, int) or isinstance(n_items, bool) or n_items < 0:
        raise ValueError(f"stratified_subset: n_items must be a non-negative integer, got {n_items!r}.")
    ids = [it.item_id for it in items]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"stratified_subset: item ids must be unique; {dup!r} repeats.")
    key = key or stratum_of
    groups: dict[Any, list[int]] = {}
    for pos, it in enumerate(items):
        groups.setdefault(key(it), []).append(pos)
    alloc = allocate({k: len(v) for k, v in groups.items()}, n_items, seed=seed)
    chosen: set[int] = set()
    for k, positions in groups.items():
        ranked = sorted(positions, key=lambda p: _rank(seed, items[p].item_id))
        chosen.update(ranked[: alloc[k]])
    return [items[p] for p in sorted(chosen)]


def strata_table(items: Sequence[Item], subset: Sequence[Item] | None = None,
                 key: Callable[[Item], Hashable] | None = None) -> pd.DataFrame:
    """Per stratum: how many items there are and (given a subset) how many were taken."""
    key = key or stratum_of
    full = pd.Series([str(key(it)) for it in items]).value_counts()
    out = pd.DataFrame({"stratum": full.index, "n_total": full.to_numpy()})
    if subset is not None:
        sub = pd.Series([str(key(it)) for it in subset]).value_counts()
        out["n_subset"] = out["stratum"].map(sub).fillna(0).astype(int)
        out["share_total"] = out["n_total"] / out["n_total"].sum()
        out["share_subset"] = out["n_subset"] / max(1, out["n_subset"].sum())
    return out.sort_values("stratum").reset_index(drop=True)
