"""The benchmark item: a minimal question plus an optional context the probes can hide.

Every benchmark loader returns a list of :class:`Item` (or a DataFrame made by
:func:`to_frame`); the elicitation engine turns items into prompts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

#: What the hidden context is, per benchmark kind.
CONTEXT_KINDS = ("passage", "options", "definition", "hints", "solution", "background", "none")


@dataclass(frozen=True)
class Item:
    item_id: str  # unique within the benchmark
    benchmark: str  # 'squad', 'mmlu_pro', 'legalbench', 'math', 'math500', 'omni_math', 'scicode', 'audit', ...
    question: str  # the minimal question, answerable (or not) without the context
    gold: Any  # the reference answer in the grader's format (text, letter, list of texts, bool ...)
    context: str | None = None  # the passage / options / definition / hints / background
    context_kind: str = "none"  # one of CONTEXT_KINDS
    domain: str = ""  # coarse grouping used for stratified subsets
    subject: str = ""  # finer grouping
    meta: dict[str, Any] = field(default_factory=dict)  # benchmark-specific extras

    def __post_init__(self) -> None:
        if self.context_kind not in CONTEXT_KINDS:
            raise ValueError(
                f"Item {self.benchmark}:{self.item_id}: context_kind {self.context_kind!r} "
                f"is not one of {CONTEXT_KINDS}."
            )
        if not str(self.question).strip():
            raise ValueError(f"Item {self.benchmark}:{self.item_id}: the question is empty.")


def to_frame(items: list[Item]) -> pd.DataFrame:
    """One row per item, columns as the Item fields."""
    return pd.DataFrame([asdict(i) for i in items])
