"""SQuAD as closed-book question answering: the question is asked without its passage.

The passage is the hidden context. By default the items are the answerable
questions of the SQuAD v2.0 dev set (5,928 of 11,873); the gold is the list of
distinct reference answers, graded with SQuAD exact match / token F1.
"""

from __future__ import annotations

import functools

from metacog.benchmarks._files import DataFileError, check_sizes, dataset_file, read_json
from metacog.tidy.items import Item

FILES = {"v2": "dev-v2.0.json", "v1": "dev-v1.1.json"}


@functools.lru_cache(maxsize=4)
def _load(version: str, answerable_only: bool) -> tuple[Item, ...]:
    if version not in FILES:
        raise ValueError(f"SQuAD version must be one of {sorted(FILES)}, not {version!r}.")
    path = dataset_file("squad", FILES[version])
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise DataFileError(f"{path}: expected the SQuAD layout {{'data': [articles]}}.")
    items, seen = [], set()
    for a_i, article in enumerate(doc["data"]):
        title = str(article.get("title", "")).replace("_", " ")
        for p_i, para in enumerate(article.get("paragraphs", [])):
            where = f"{path}: data[{a_i}].paragraphs[{p_i}]"
            if "context" not in para or "qas" not in para:
                raise DataFileError(f"{where}: missing 'context' or 'qas'.")
            for q_i, qa in enumerate(para["qas"]):
                if "id" not in qa or "question" not in qa:
                    raise DataFileError(f"{where}.qas[{q_i}]: missing 'id' or 'question'.")
                impossible = bool(qa.get("is_impossible", False))
                if answerable_only and impossible:
                    continue
                golds = list(dict.fromkeys(str(ans["text"]) for ans in qa.get("answers", [])))
                if not impossible and not golds:
                    raise DataFileError(f"{where}.qas[{q_i}] (id {qa['id']}): answerable but no answers.")
                if qa["id"] in seen:
                    raise DataFileError(f"{where}.qas[{q_i}]: duplicate question id {qa['id']}.")
                seen.add(qa["id"])
                items.append(Item(
                    item_id=qa["id"], benchmark="squad", question=qa["question"].strip(),
                    gold=golds, context=para["context"], context_kind="passage",
                    domain=title, subject=title,
                    meta={"version": version, "is_impossible": impossible},
                ))
    check_sizes("squad")
    return tuple(items)


def load_items(version: str = "v2", answerable_only: bool = True) -> list[Item]:
    """SQuAD dev items; ``version`` 'v2' (default) or 'v1'; answerable questions only by default.

    Unanswerable v2 questions (when ``answerable_only=False``) have gold ``[]``.
    """
    return list(_load(version, answerable_only))
