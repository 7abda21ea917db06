"""Yes/no factual benchmarks used as binary alternatives to the audit set.

- ``truthfulqa``: each of the 817 questions becomes one statement check,
  "question + proposed answer: is this answer true?". Rows alternate, by file
  order, between the best answer (gold True, even rows) and the first listed
  incorrect answer (gold False, odd rows); ``pairing='both'`` gives both
  checks for every question (1,634 items).
- ``strategyqa``: 2,290 implicit-reasoning yes/no questions (BIG-bench task
  file); gold True for Yes. The explanation is kept in ``meta``, not as context.
- ``selfaware``: 3,369 questions; by default the gold is whether the question
  is answerable (True for 2,337, False for 1,032). ``mode='answer'`` returns
  only the answerable questions with their gold answers (a list of strings).

None of these has a hidden context (``context_kind='none'``).
"""

from __future__ import annotations

import functools

from metacog.benchmarks._files import DataFileError, check_sizes, dataset_file, read_json, read_table, require
from metacog.tidy.items import Item

TRUTHFULQA_FIELDS = ("Type", "Category", "Question", "Best Answer", "Correct Answers", "Incorrect Answers")


def _split_answers(text: str) -> list[str]:
    return [a.strip() for a in text.split(";") if a.strip()]


def _statement(question: str, answer: str) -> str:
    return f"{question.strip()}\nProposed answer: {answer.strip()}\nIs the proposed answer true?"


@functools.lru_cache(maxsize=2)
def _load_truthfulqa(pairing: str) -> tuple[Item, ...]:
    if pairing not in ("alternate", "both"):
        raise ValueError(f"truthfulqa pairing must be 'alternate' or 'both', not {pairing!r}.")
    path = dataset_file("truthfulqa", "truthfulqa.csv")
    items = []
    for n, (lineno, row) in enumerate(read_table(path)):
        where = f"{path}, line {lineno}"
        require(row, TRUTHFULQA_FIELDS, where)
        best = row["Best Answer"].strip()
        incorrect = _split_answers(row["Incorrect Answers"])
        if not best or not incorrect:
            raise DataFileError(f"{where}: needs a best answer and at least one incorrect answer.")
        meta = {"type": row["Type"], "correct_answers": _split_answers(row["Correct Answers"]),
                "incorrect_answers": incorrect, "raw_question": row["Question"].strip()}
        sides = [True, False] if pairing == "both" else [n % 2 == 0]
        for truth in sides:
            answer = best if truth else incorrect[0]
            suffix = ("/true" if truth else "/false") if pairing == "both" else ""
            items.append(Item(
                item_id=f"truthfulqa/{n:03d}{suffix}", benchmark="truthfulqa",
                question=_statement(row["Question"], answer), gold=truth,
                domain=row["Category"], subject=row["Category"],
                meta={**meta, "proposed_answer": answer},
            ))
    check_sizes("truthfulqa")
    return tuple(items)


@functools.lru_cache(maxsize=1)
def _load_strategyqa() -> tuple[Item, ...]:
    path = dataset_file("strategyqa", "strategyqa.json")
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("examples"), list):
        raise DataFileError(f"{path}: expected a BIG-bench task file with an 'examples' list.")
    items = []
    for n, ex in enumerate(doc["examples"]):
        where = f"{path}: examples[{n}]"
        require(ex, ("input", "target_scores"), where)
        scores = ex["target_scores"]
        if set(scores) != {"Yes", "No"} or sorted(scores.values()) != [0, 1]:
            raise DataFileError(f"{where}: target_scores must be {{'Yes': 0/1, 'No': 1/0}}, got {scores}.")
        target = str(ex.get("target", ""))
        explanation = target.split(".", 1)[1].strip() if target.startswith(("Yes.", "No.")) else target
        items.append(Item(
            item_id=f"strategyqa/{n:04d}", benchmark="strategyqa", question=ex["input"].strip(),
            gold=scores["Yes"] == 1, domain="strategyqa", subject="strategyqa",
            meta={"explanation": explanation},
        ))
    check_sizes("strategyqa")
    return tuple(items)


@functools.lru_cache(maxsize=2)
def _load_selfaware(mode: str) -> tuple[Item, ...]:
    if mode not in ("answerability", "answer"):
        raise ValueError(f"selfaware mode must be 'answerability' or 'answer', not {mode!r}.")
    path = dataset_file("selfaware", "selfaware.json")
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("example"), list):
        raise DataFileError(f"{path}: expected the SelfAware layout with an 'example' list.")
    items, seen = [], set()
    for n, ex in enumerate(doc["example"]):
        where = f"{path}: example[{n}]"
        require(ex, ("question_id", "question", "answer", "answerable", "source"), where)
        answerable = bool(ex["answerable"])
        if answerable and not ex["answer"]:
            raise DataFileError(f"{where}: answerable but has no answer.")
        if mode == "answer" and not answerable:
            continue
        qid = f"selfaware/{ex['question_id']}"
        if qid in seen:
            raise DataFileError(f"{where}: duplicate question_id {ex['question_id']}.")
        seen.add(qid)
        answers = [str(a) for a in ex["answer"]] if ex["answer"] else []
        items.append(Item(
            item_id=qid, benchmark="selfaware", question=str(ex["question"]).strip(),
            gold=answerable if mode == "answerability" else answers,
            domain="answerable" if answerable else "unanswerable", subject=str(ex["source"]),
            meta={"answerable": answerable, "answers": answers, "mode": mode},
        ))
    check_sizes("selfaware")
    return tuple(items)


def load_truthfulqa(pairing: str = "alternate") -> list[Item]:
    """TruthfulQA as statement checks (817 items; 1,634 with ``pairing='both'``)."""
    return list(_load_truthfulqa(pairing))


def load_strategyqa() -> list[Item]:
    """The 2,290 StrategyQA yes/no questions."""
    return list(_load_strategyqa())


def load_selfaware(mode: str = "answerability") -> list[Item]:
    """SelfAware: 3,369 answerability items, or the 2,337 answerable ones with ``mode='answer'``."""
    return list(_load_selfaware(mode))
