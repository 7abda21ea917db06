"""MMLU-Pro: the stem is the question, the answer options are the hidden context.

12,032 test questions in 14 categories, 3-10 options each. The gold is the
correct letter (the upstream ``answer`` field; where ``answer_index`` disagrees,
as for question 3983, the letter wins and ``meta['index_mismatch']`` is True); ``meta`` keeps the options, the answer index and the option
text so a reply given without the options can be graded against the text.
"""

from __future__ import annotations

import functools

from metacog.benchmarks._files import DataFileError, check_sizes, dataset_file, read_jsonl, require
from metacog.tidy.items import Item

LETTERS = "ABCDEFGHIJ"
FIELDS = ("question_id", "question", "options", "answer", "answer_index", "category")


def format_options(options: list[str]) -> str:
    """'A. first\\nB. second ...' — the context shown when the options are revealed."""
    return "\n".join(f"{LETTERS[i]}. {opt}" for i, opt in enumerate(options))


@functools.lru_cache(maxsize=1)
def _load() -> tuple[Item, ...]:
    path = dataset_file("mmlu_pro", "test.jsonl")
    items, seen = [], set()
    for lineno, row in read_jsonl(path):
        where = f"{path}, line {lineno}"
        require(row, FIELDS, where)
        options = [str(o) for o in row["options"]]
        letter = row["answer"]
        if not (2 <= len(options) <= 10) or letter not in LETTERS[: len(options)]:
            raise DataFileError(f"{where}: answer {letter!r} does not fit {len(options)} options.")
        # The letter is authoritative: one upstream row (question_id 3983) has an
        # answer_index that disagrees with its (correct) letter; we keep the letter.
        idx = LETTERS.index(letter)
        index_mismatch = row["answer_index"] != idx
        item_id = str(row["question_id"])
        if item_id in seen:
            raise DataFileError(f"{where}: duplicate question_id {item_id}.")
        seen.add(item_id)
        items.append(Item(
            item_id=item_id, benchmark="mmlu_pro", question=str(row["question"]).strip(),
            gold=letter, context=format_options(options), context_kind="options",
            domain=str(row["category"]), subject=str(row.get("src", "")),
            meta={"options": options, "answer_index": idx, "answer_text": options[idx],
                  "index_mismatch": index_mismatch},
        ))
    check_sizes("mmlu_pro")
    return tuple(items)


def load_items() -> list[Item]:
    """All 12,032 MMLU-Pro test items (domain = category, subject = source)."""
    return list(_load())
