"""MATH, MATH-500 and Omni-MATH-Rule: the problem is the question, the worked
solution is the hidden context (it holds the hints), the boxed answer is the gold.

- ``math``: the 5,000 MATH test problems; gold = the last \\boxed{} of the solution.
- ``math500``: the 500-problem MATH-500 split, with its extracted ``answer``.
- ``omni_math``: the 2,821 rule-gradable Omni-MATH problems, with their ``answer``
  (four answers lack a closing brace upstream; it is added, and
  ``meta['gold_repaired']`` / ``meta['raw_answer']`` record it).

Grading is math-verify equivalence (:func:`metacog.benchmarks.grading.math_equivalent`).
"""

from __future__ import annotations

import functools
import re

from metacog.benchmarks._files import DataFileError, check_sizes, dataset_file, read_jsonl, require
from metacog.benchmarks.grading import extract_boxed
from metacog.tidy.items import Item


def _level(value: object, where: str) -> int | None:
    """'Level 3' or 3 -> 3; 'Level ?' -> None."""
    m = re.search(r"\d+", str(value))
    if m:
        return int(m.group())
    if "?" in str(value):
        return None
    raise DataFileError(f"{where}: level {value!r} is not 'Level N'.")


@functools.lru_cache(maxsize=1)
def _load_math() -> tuple[Item, ...]:
    path = dataset_file("math", "test.jsonl")
    items, seen = [], set()
    for lineno, row in read_jsonl(path):
        where = f"{path}, line {lineno}"
        require(row, ("problem", "level", "type", "solution", "unique_id"), where)
        gold = extract_boxed(row["solution"])
        if gold is None:
            raise DataFileError(f"{where}: the solution has no \\boxed{{}} answer.")
        if row["unique_id"] in seen:
            raise DataFileError(f"{where}: duplicate unique_id {row['unique_id']}.")
        seen.add(row["unique_id"])
        items.append(Item(
            item_id=row["unique_id"], benchmark="math", question=row["problem"].strip(),
            gold=gold, context=row["solution"], context_kind="solution",
            domain=row["type"], subject=row["type"],
            meta={"level": _level(row["level"], where)},
        ))
    check_sizes("math")
    return tuple(items)


@functools.lru_cache(maxsize=1)
def _load_math500() -> tuple[Item, ...]:
    path = dataset_file("math500", "math500.jsonl")
    items, seen = [], set()
    for lineno, row in read_jsonl(path):
        where = f"{path}, line {lineno}"
        require(row, ("problem", "solution", "answer", "subject", "level", "unique_id"), where)
        if row["unique_id"] in seen:
            raise DataFileError(f"{where}: duplicate unique_id {row['unique_id']}.")
        seen.add(row["unique_id"])
        items.append(Item(
            item_id=row["unique_id"], benchmark="math500", question=row["problem"].strip(),
            gold=str(row["answer"]), context=row["solution"], context_kind="solution",
            domain=row["subject"], subject=row["subject"],
            meta={"level": _level(row["level"], where)},
        ))
    check_sizes("math500")
    return tuple(items)


def _balance_braces(answer: str) -> str:
    """Close unclosed LaTeX braces at the end (four upstream Omni-MATH answers lack a '}')."""
    opened = len(re.findall(r"(?<!\\)\{", answer)) - len(re.findall(r"(?<!\\)\}", answer))
    return answer + "}" * opened if opened > 0 else answer


@functools.lru_cache(maxsize=1)
def _load_omni() -> tuple[Item, ...]:
    path = dataset_file("omni_math", "omni_math_rule.jsonl")
    items = []
    for n, (lineno, row) in enumerate(read_jsonl(path)):
        where = f"{path}, line {lineno}"
        require(row, ("domain", "difficulty", "problem", "solution", "answer", "source"), where)
        paths = [str(d) for d in row["domain"]] if isinstance(row["domain"], list) else [str(row["domain"])]
        parts = paths[0].split(" -> ") if paths and paths[0] else []
        coarse = parts[1] if len(parts) > 1 else (parts[0] if parts else "Unknown")
        gold = _balance_braces(str(row["answer"]).strip())
        items.append(Item(
            item_id=f"omni_math/{n:04d}", benchmark="omni_math", question=row["problem"].strip(),
            gold=gold, context=row["solution"], context_kind="solution",
            domain=coarse, subject=paths[0] if paths and paths[0] else "Unknown",
            meta={"difficulty": float(row["difficulty"]), "source": row["source"], "domains": paths,
                  "raw_answer": str(row["answer"]), "gold_repaired": gold != str(row["answer"]).strip()},
        ))
    check_sizes("omni_math")
    return tuple(items)


def load_math() -> list[Item]:
    """The 5,000 MATH test problems (domain = subject; meta['level'] 1-5)."""
    return list(_load_math())


def load_math500() -> list[Item]:
    """The 500 MATH-500 problems (ids as in MATH: 'test/<subject>/<n>.json')."""
    return list(_load_math500())


def load_omni_math() -> list[Item]:
    """The 2,821 Omni-MATH-Rule problems (domain = second level of the first domain path;
    ids 'omni_math/NNNN' by line order of the pinned file)."""
    return list(_load_omni())
