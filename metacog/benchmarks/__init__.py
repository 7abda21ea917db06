"""Benchmark items, graders and deterministic subsets.

:func:`load_items` is the single entry point: ``load_items(name, n_items=None,
seed=0, **kw)`` returns a list of :class:`metacog.tidy.items.Item`, optionally a
deterministic stratified subset of ``n_items`` (see :mod:`.subsets`).
:func:`grade` scores one reply (see :mod:`.grading`). Parsed items are cached
per process and shared between calls: treat them (and their ``meta``) as
read-only.

=============  =====================================  ==================  =========
name           items (default options)                hidden context      grader
=============  =====================================  ==================  =========
squad          5,928 answerable SQuAD v2.0 dev qs     passage             EM / F1
mmlu_pro       12,032                                 options             letter / option text
legalbench     1,290 (129 tasks x 10 test rows)       README definition   per task
math           5,000                                  solution            math-verify
math500        500                                    solution            math-verify
omni_math      2,821 (Omni-MATH-Rule)                 solution            math-verify
scicode        50 dev steps (291 'test', 341 'all')   step background     sandboxed tests
truthfulqa     817 statement checks                   none                yes/no
strategyqa     2,290                                  none                yes/no
selfaware      3,369 answerability items              none                yes/no
audit          (metacog.benchmarks.audit)             none                gold label
=============  =====================================  ==================  =========
"""

from __future__ import annotations

import importlib
from typing import Any

from metacog.benchmarks.grading import grade
from metacog.benchmarks.subsets import stratified_subset, stratum_of
from metacog.tidy.items import Item

#: name -> (module, function) of each loader.
LOADERS: dict[str, tuple[str, str]] = {
    "squad": ("metacog.benchmarks.squad", "load_items"),
    "mmlu_pro": ("metacog.benchmarks.mmlu_pro", "load_items"),
    "legalbench": ("metacog.benchmarks.legalbench", "load_items"),
    "math": ("metacog.benchmarks.mathsets", "load_math"),
    "math500": ("metacog.benchmarks.mathsets", "load_math500"),
    "omni_math": ("metacog.benchmarks.mathsets", "load_omni_math"),
    "scicode": ("metacog.benchmarks.scicode", "load_items"),
    "truthfulqa": ("metacog.benchmarks.truefalse", "load_truthfulqa"),
    "strategyqa": ("metacog.benchmarks.truefalse", "load_strategyqa"),
    "selfaware": ("metacog.benchmarks.truefalse", "load_selfaware"),
    "audit": ("metacog.benchmarks.audit", "load_items"),
}

BENCHMARKS = tuple(LOADERS)

#: The benchmarks of paper 1 (Moran & Whiting), in its order.
PAPER_BENCHMARKS = ("squad", "mmlu_pro", "legalbench", "math", "omni_math", "scicode")

#: Which confidence probes apply to each benchmark (LegalBench: prospective only, as in the paper).
APPLICABLE_PROBES: dict[str, tuple[str, ...]] = {
    name: ("prospective", "counterfactual") for name in ("squad", "mmlu_pro", "math", "math500",
                                                         "omni_math", "scicode")
}
APPLICABLE_PROBES["legalbench"] = ("prospective",)


def load_items(name: str, n_items: int | None = None, seed: int = 0, **kw: Any) -> list[Item]:
    """The items of benchmark ``name``; with ``n_items``, a stratified subset chosen by ``seed``.

    Extra keywords go to the benchmark's loader (e.g. ``version='v1'`` for
    SQuAD, ``tasks=[...]`` for LegalBench, ``split='all'`` for SciCode,
    ``pairing='both'`` for TruthfulQA, ``mode='answer'`` for SelfAware). The
    'audit' set is stratified by its own loader.

    Examples
    --------
    Twelve items of the binary factual audit set, the same twelve for the same seed:

    >>> items = load_items("audit", n_items=12, seed=0)
    >>> len(items), items[0].benchmark
    (12, 'audit')
    >>> [it.item_id for it in items] == [it.item_id for it in load_items("audit", n_items=12, seed=0)]
    True
    """
    if name not in LOADERS:
        raise ValueError(f"load_items: unknown benchmark {name!r}; choose one of {list(LOADERS)}.")
    module, func = LOADERS[name]
    loader = getattr(importlib.import_module(module), func)
    if name == "audit":
        return loader(n_items=n_items, seed=seed, **kw)
    items = loader(**kw)
    if n_items is None:
        return items
    return stratified_subset(items, n_items, seed=seed)


__all__ = ["APPLICABLE_PROBES", "BENCHMARKS", "LOADERS", "PAPER_BENCHMARKS", "grade", "load_items",
           "stratified_subset", "stratum_of"]
