"""LegalBench: the task input is the question, the task's definition from its
README is the hidden context.

Each of the 129 mirrored tasks contributes its 10 official test rows (1,290
items). The question is the task's instruction (the text of ``base_prompt.txt``
before its worked examples) followed by the row's input filled into the
prompt's final template (e.g. "Clause: ..."); without the instruction many
inputs (a bare contract clause) would not say what is asked. The template's
trailing answer cue ("Label:", "A:") is dropped from the question and kept in
``meta['answer_cue']``. The hidden context is the README's "Task description"
section (or "Description"), else its one-line summary;
``meta['context_source']`` records which.

As in the paper, only the prospective probe applies: the tasks lack the
question-plus-removable-context structure the counterfactual probe needs
(:data:`APPLICABLE_PROBES`, also in every item's ``meta['probes']``).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from metacog.benchmarks._files import DataFileError, check_sizes, dataset_dir, read_table
from metacog.tidy.items import Item

APPLICABLE_PROBES = ("prospective",)

#: Tasks whose grading is not "extract one label": kind by task name.
SPECIAL_KINDS = {
    "sara_numeric": "numeric",
    "successor_liability": "multilabel",
    "citation_prediction_open": "open",
    "ssla_plaintiff": "extraction",
    "ssla_company_defendants": "extraction",
    "ssla_individual_defendants": "extraction",
}

_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")


def tasks_dir() -> Path:
    """The folder holding one sub-folder per task."""
    folder = dataset_dir("legalbench") / "tasks"
    if not folder.is_dir():
        raise FileNotFoundError(f"LegalBench: {folder} is missing; expected tasks/<task>/ folders.")
    return folder


def _readme(task_dir: Path) -> Path:
    for name in ("README.md", "README.MD", "readme.md"):
        if (task_dir / name).is_file():
            return task_dir / name
    raise FileNotFoundError(f"LegalBench task {task_dir.name}: no README.md in {task_dir}.")


def _sections(text: str) -> dict[str, str]:
    """'## Heading' -> body text, headings lowercased and stripped."""
    out: dict[str, str] = {}
    parts = re.split(r"^##\s+(.+?)\s*$", text, flags=re.MULTILINE)
    for head, body in zip(parts[1::2], parts[2::2]):
        out.setdefault(head.strip().lower(), body.strip())
    return out


@functools.lru_cache(maxsize=256)
def task_info(task: str) -> dict:
    """What the README and base prompt say about one task.

    Keys: summary, task_type, reasoning_type, kind, definition, context_source,
    instruction, template.
    """
    task_dir = tasks_dir() / task
    if not task_dir.is_dir():
        raise ValueError(f"LegalBench: unknown task {task!r} (no folder {task_dir}).")
    readme_path = _readme(task_dir)
    readme = readme_path.read_text(encoding="utf-8")
    m = re.search(r"^###\s+(.+?)\s*$", readme, flags=re.MULTILINE)
    summary = m.group(1).strip() if m else ""
    fields = dict(re.findall(r"^\*\*(.+?)\*\*:\s*(.*?)\s*$", readme, flags=re.MULTILINE))
    task_type = fields.get("Task type", "")
    secs = _sections(readme)
    if secs.get("task description"):
        definition, source = secs["task description"], "README task description"
    elif secs.get("description"):
        definition, source = secs["description"], "README description"
    elif summary:
        definition, source = summary, "README summary line"
    else:
        raise DataFileError(f"{readme_path}: no '## Task description' section and no '###' summary line.")
    if task in SPECIAL_KINDS:
        kind = SPECIAL_KINDS[task]
    elif "classification" in task_type.lower():
        kind = "classification"
    else:
        raise DataFileError(f"{readme_path}: task type {task_type!r} has no grader; add it to SPECIAL_KINDS.")
    instruction, template = _split_prompt(task_dir / "base_prompt.txt")
    return {
        "summary": summary, "task_type": task_type, "reasoning_type": fields.get("Legal reasoning type", ""),
        "kind": kind, "definition": definition, "context_source": source,
        "instruction": instruction, "template": template,
    }


def _split_prompt(path: Path) -> tuple[str, str]:
    """(instruction, query template) of a base prompt.

    The template is the last blank-line-separated block run that holds
    ``{{placeholders}}``; the instruction is the text before the first worked
    example (the first block opening like the template does).
    """
    if not path.is_file():
        raise FileNotFoundError(f"LegalBench: {path} is missing.")
    text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    blocks = re.split(r"\n\s*\n", text.strip())
    first_ph = next((i for i, b in enumerate(blocks) if _PLACEHOLDER.search(b)), None)
    if first_ph is None:
        raise DataFileError(f"{path}: no {{{{placeholder}}}} in the base prompt.")
    template = "\n\n".join(blocks[first_ph:]).strip()
    opener = re.match(r"\s*([^:{\n]{1,40}:)", template)
    start = first_ph
    if opener:
        for i, b in enumerate(blocks[:first_ph]):
            if b.lstrip().startswith(opener.group(1)):
                start = i
                break
    instruction = "\n\n".join(blocks[:start]).strip()
    return instruction, template


def _fill(template: str, row: dict[str, str], where: str) -> tuple[str, str]:
    """(filled template without its trailing answer cue, the cue) for one row."""
    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key not in row:
            raise DataFileError(f"{where}: the base prompt uses {{{{{key}}}}} but the row has no {key!r} column.")
        return row[key].strip()

    filled = _PLACEHOLDER.sub(sub, template)
    # Drop the trailing answer cue ("Label:", "A:", "Answer:"): the elicitation adds its own.
    lines = filled.rstrip().split("\n")
    cue = ""
    if lines and re.fullmatch(r"[A-Za-z ]{1,20}:", lines[-1].strip()):
        cue = lines.pop().strip()
    return "\n".join(lines).strip(), cue


def _label_hint(labels: list[str], question: str) -> str:
    """The answer format of a classification task, when the question does not already state it.

    LegalBench's own prompts teach the labels through few-shot examples, which the
    minimal question leaves out; without them a model cannot know that "Yes"/"No"
    (or "Option A".."Option D") is expected. The labels are part of the question,
    not of the hidden context.
    """
    if not labels:
        return ""
    named = all(re.search(rf"(?<!\w){re.escape(lab)}(?!\w)", question) for lab in labels)
    if named and (len(labels) > 2 or re.search(r"\b(answer|respond|reply|label)\b", question, re.I)):
        return ""
    return f"\n\nAnswer with one of: {', '.join(labels)}."


def _parse_gold(kind: str, answer: str, where: str):
    answer = answer.strip()
    if kind == "extraction":
        if answer.startswith("["):
            try:
                names = ast.literal_eval(answer)
            except (ValueError, SyntaxError):
                raise DataFileError(f"{where}: answer {answer[:60]!r} is not a list literal.") from None
            return [str(n).strip() for n in names]
        return [a.strip() for a in answer.split(",") if a.strip()]
    if kind == "multilabel":
        return [a.strip() for a in answer.split(",") if a.strip()]
    return answer


@functools.lru_cache(maxsize=256)
def _load_task(task: str) -> tuple[Item, ...]:
    info = task_info(task)
    task_dir = tasks_dir() / task
    test_path = task_dir / "test.tsv"
    train_path = task_dir / "train.tsv"
    test = read_table(test_path, "\t")
    train = read_table(train_path, "\t") if train_path.is_file() else ()
    for path, rows in ((test_path, test), (train_path, train)):
        for lineno, row in rows:
            if "answer" not in row or "index" not in row:
                raise DataFileError(f"{path}, line {lineno}: needs 'answer' and 'index' columns.")
    labels: list[str] = []
    if info["kind"] == "classification":
        seen = {r["answer"].strip() for _, r in (*train, *test)}
        seen |= set(re.findall(r"^Option ([A-J]):", info["instruction"], flags=re.MULTILINE))
        seen |= set(re.findall(r"\{\{\s*choice_(\d)\s*\}\}", info["template"]))
        labels = sorted(seen)
    items = []
    for lineno, row in test:
        where = f"{test_path}, line {lineno}"
        question, cue = _fill(info["template"], row, where)
        if info["instruction"]:
            question = f"{info['instruction']}\n\n{question}"
        question += _label_hint(labels, question)
        items.append(Item(
            item_id=f"{task}/{row['index'].strip()}", benchmark="legalbench", question=question,
            gold=_parse_gold(info["kind"], row["answer"], where),
            context=info["definition"], context_kind="definition",
            domain=info["reasoning_type"] or "unknown", subject=task,
            meta={"task": task, "task_kind": info["kind"], "task_type": info["task_type"],
                  "labels": labels, "context_source": info["context_source"], "answer_cue": cue,
                  "probes": APPLICABLE_PROBES},
        ))
    ids = [it.item_id for it in items]
    if len(set(ids)) != len(ids):
        raise DataFileError(f"{test_path}: duplicate 'index' values.")
    check_sizes("legalbench")
    return tuple(items)


def task_names() -> list[str]:
    """The mirrored task names, sorted."""
    return sorted(p.name for p in tasks_dir().iterdir() if p.is_dir())


def load_items(tasks: list[str] | tuple[str, ...] | None = None) -> list[Item]:
    """The test items of ``tasks`` (all 129 by default), 10 per task."""
    names = task_names() if tasks is None else list(tasks)
    out: list[Item] = []
    for task in names:
        out.extend(_load_task(task))
    return out
