"""Deterministic stratified subsets."""

from __future__ import annotations

import collections

import pytest

from metacog.benchmarks import _files, load_items
from metacog.benchmarks.subsets import allocate, strata_table, stratified_subset, stratum_of
from metacog.tidy.items import Item


def _items(sizes: dict[str, int]) -> list[Item]:
    return [Item(f"{dom}-{i}", "toy", f"question {dom} {i}", "a", domain=dom)
            for dom, n in sizes.items() for i in range(n)]


def test_allocate_proportional_with_minimum_one():
    # 100 items from strata of 50/30/15/5: quotas 10, 6, 3, 1 exactly
    assert allocate({"a": 50, "b": 30, "c": 15, "d": 5}, 20) == {"a": 10, "b": 6, "c": 3, "d": 1}
    # quota of d is 0.2 -> raised to 1; the extra unit comes from the most over-served stratum
    alloc = allocate({"a": 90, "b": 8, "c": 2}, 10)
    assert alloc == {"a": 8, "b": 1, "c": 1}
    # largest remainder: quotas 3.33, 3.33, 3.33 -> 4, 3, 3 in some seeded order, total 10
    alloc = allocate({"a": 10, "b": 10, "c": 10}, 10)
    assert sorted(alloc.values()) == [3, 3, 4] and sum(alloc.values()) == 10
    # never more than a stratum has; asking for everything returns everything
    assert allocate({"a": 2, "b": 100}, 50) == {"a": 1, "b": 49}  # quotas 0.98 -> 1 and 49.02 -> 49
    assert allocate({"a": 2, "b": 3}, 99) == {"a": 2, "b": 3}
    # fewer slots than strata: the largest strata get one each
    assert allocate({"a": 5, "b": 9, "c": 1}, 2) == {"a": 1, "b": 1, "c": 0}
    with pytest.raises(ValueError, match="n must be >= 0"):
        allocate({"a": 1}, -1)


def test_allocate_caps_and_sums():
    sizes = {"a": 1, "b": 1, "c": 200}
    alloc = allocate(sizes, 20)
    assert alloc == {"a": 1, "b": 1, "c": 18}
    for n in range(0, 203):
        alloc = allocate(sizes, n)
        assert sum(alloc.values()) == min(n, 202)
        assert all(0 <= alloc[k] <= sizes[k] for k in sizes)


def test_subset_is_deterministic_stratified_and_ordered():
    items = _items({"x": 60, "y": 30, "z": 10})
    a = stratified_subset(items, 20, seed=5)
    b = stratified_subset(list(items), 20, seed=5)
    assert [i.item_id for i in a] == [i.item_id for i in b]
    counts = collections.Counter(i.domain for i in a)
    assert counts == {"x": 12, "y": 6, "z": 2}
    positions = [items.index(i) for i in a]
    assert positions == sorted(positions)  # original order kept
    c = stratified_subset(items, 20, seed=6)
    assert {i.item_id for i in a} != {i.item_id for i in c}  # another seed, other items
    assert collections.Counter(i.domain for i in c) == counts
    # the choice does not depend on the input order
    shuffled = items[::-1]
    assert {i.item_id for i in stratified_subset(shuffled, 20, seed=5)} == {i.item_id for i in a}


def test_subset_edge_cases():
    items = _items({"x": 3, "y": 2})
    assert stratified_subset(items, 100) == items
    assert stratified_subset(items, 0) == []
    assert stratified_subset(items, None) == items
    with pytest.raises(ValueError, match="non-negative integer"):
        stratified_subset(items, -2)
    with pytest.raises(ValueError, match="unique"):
        stratified_subset(items + items[:1], 2)


def test_custom_key_and_table():
    items = _items({"x": 8, "y": 2})
    sub = stratified_subset(items, 5, key=lambda it: it.item_id.endswith(("0", "1")))
    assert len(sub) == 5
    table = strata_table(items, stratified_subset(items, 5))
    assert list(table["n_total"]) == [8, 2] and list(table["n_subset"]) == [4, 1]


def test_stratum_defaults():
    it = Item("1", "math", "q", "1", domain="Algebra", meta={"level": 3})
    assert stratum_of(it) == ("Algebra", 3)
    assert stratum_of(Item("2", "unknown_bench", "q", "a", domain="d")) == "d"


def _have_mirror() -> bool:
    try:
        _files.dataset_dir("legalbench")
    except (FileNotFoundError, ValueError):
        return False
    return True


@pytest.mark.skipif(not _have_mirror(), reason="benchmark data mirror not found")
def test_load_items_subsets_on_real_data():
    lb = load_items("legalbench", n_items=258, seed=0)
    assert collections.Counter(i.meta["task"] for i in lb) == {t: 2 for t in {i.meta["task"] for i in lb}}
    assert len({i.meta["task"] for i in lb}) == 129
    # fewer items than tasks: the seed decides which tasks (all the same size)
    t1 = {i.meta["task"] for i in load_items("legalbench", n_items=50, seed=1)}
    t2 = {i.meta["task"] for i in load_items("legalbench", n_items=50, seed=2)}
    assert len(t1) == len(t2) == 50 and t1 != t2
    mmlu = load_items("mmlu_pro", n_items=140, seed=3)
    assert collections.Counter(i.domain for i in mmlu).most_common()[-1][1] >= 4  # history: 381/12032*140
    assert [i.item_id for i in mmlu] == [i.item_id for i in load_items("mmlu_pro", n_items=140, seed=3)]
    m = load_items("math", n_items=35, seed=0)
    assert len({stratum_of(i) for i in m}) == 35  # one per subject x level
