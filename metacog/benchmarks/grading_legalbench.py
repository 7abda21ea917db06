"""LegalBench graders: per-item correctness, and the balanced accuracy LegalBench reports per task.

:func:`legalbench_correct` grades one reply by the item's task type (a label, a number, a
citation, a list of names or of classes); :func:`legalbench_task_score` is the task-level
balanced accuracy. Dispatched from :func:`metacog.benchmarks.grading.grade`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

from metacog.benchmarks.answers import LETTERS, _PUNCT, _number, extract_final_answer, extract_letter, extract_yes_no


def _lb_norm(text: str) -> str:
    """LegalBench-style normalisation: drop punctuation, lowercase, collapse spaces."""
    text = "".join(ch for ch in str(text) if ch not in _PUNCT)
    return " ".join(text.lower().split())


def legalbench_extract_label(response: str, labels: Sequence[str]) -> str | None:
    """Which of a task's labels a reply gives, or None.

    Yes/No label sets use :func:`extract_yes_no`; single-letter or single-digit
    labels use the option-letter rules; other labels are matched whole after
    normalisation, first on the final-answer part, then on the reply's earliest
    mention.
    """
    labels = list(labels)
    norm_labels = {_lb_norm(lab): lab for lab in labels}
    if set(norm_labels) == {"yes", "no"}:
        said = extract_yes_no(response)
        return None if said is None else norm_labels["yes" if said else "no"]
    if all(len(lab) == 1 and lab in LETTERS for lab in labels):
        letter = extract_letter(response, n_options=LETTERS.index(max(labels)) + 1)
        return letter if letter in labels else None
    final = extract_final_answer(response)
    for cand in (final, response):
        key = _lb_norm(cand)
        if key in norm_labels:
            return norm_labels[key]
    if all(lab.isdigit() for lab in labels):
        nums = re.findall(r"(?<![\d.])(\d+)(?![\d.])", final)
        hits = [n for n in nums if n in labels]
        return hits[0] if hits else None
    text = _lb_norm(final) or _lb_norm(response)
    best = None
    for key, lab in sorted(norm_labels.items(), key=lambda kv: -len(kv[0])):
        m = re.search(rf"(?<!\w){re.escape(key)}(?!\w)", text)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), lab)
    return None if best is None else best[1]


def balanced_accuracy(golds: Sequence[Any], preds: Sequence[Any]) -> float:
    """Mean over the gold classes of the share of that class predicted right.

    A prediction of None (unparseable) counts as wrong. Same definition as
    sklearn.metrics.balanced_accuracy_score on the classes present in ``golds``.
    """
    if len(golds) != len(preds):
        raise ValueError(f"balanced_accuracy: {len(golds)} golds but {len(preds)} predictions.")
    if not golds:
        raise ValueError("balanced_accuracy: no items.")
    recalls = []
    for cls in sorted(set(golds), key=str):
        idx = [i for i, g in enumerate(golds) if g == cls]
        recalls.append(sum(preds[i] == cls for i in idx) / len(idx))
    return sum(recalls) / len(recalls)


SUCCESSOR_CLASSES = ("express agreement", "fraudulent conveyance", "de facto merger", "mere continuation")


def _multilabel_f1(response: str, gold: Sequence[str], classes: Sequence[str]) -> float:
    text = _lb_norm(response)
    said = {c for c in classes if _lb_norm(c) in text}
    want = set(gold)
    tp = len(said & want)
    if not said and not want:
        return 1.0
    if tp == 0:
        return 0.0
    p, r = tp / len(said), tp / len(want)
    return 2 * p * r / (p + r)


def _partial_ratio(short: str, long: str) -> float:
    """Best similarity of ``short`` against same-length windows of ``long`` (0..1)."""
    if not short or not long:
        return 0.0
    if len(short) > len(long):
        short, long = long, short
    best = 0.0
    n = len(short)
    for i in range(0, len(long) - n + 1):
        r = SequenceMatcher(None, short, long[i:i + n]).ratio()
        if r > best:
            best = r
            if best == 1.0:
                break
    return best


def _names_f1(response: str, gold: Sequence[str], threshold: float = 0.8) -> float:
    """Extraction F1: predicted names (split on , ; and newlines) vs gold names, fuzzy-matched."""
    gold = [g for g in gold if g.strip()]
    gold_norm = [_lb_norm(g) for g in gold]
    if gold_norm == ["not named"]:
        return float("not named" in _lb_norm(response))
    parts = re.split(r"[,;\n]|\band\b", extract_final_answer(response))
    preds = [_lb_norm(p) for p in parts if _lb_norm(p) and _lb_norm(p) != "not named"]
    if not preds:
        return 0.0
    tp_gold = sum(any(_partial_ratio(g, p) >= threshold for p in preds) for g in gold_norm)
    tp_pred = sum(any(_partial_ratio(g, p) >= threshold for g in gold_norm) for p in preds)
    if tp_gold == 0:
        return 0.0
    precision, recall = tp_pred / len(preds), tp_gold / len(gold_norm)
    return 2 * precision * recall / (precision + recall)


def sara_numeric_correct(response: str, gold: str) -> bool:
    """SARA numeric: the first number in the reply is within 10% of the gold amount."""
    target = _number(str(gold).replace("$", "").strip())
    if target is None:
        raise ValueError(f"sara_numeric: gold {gold!r} is not a number.")
    text = extract_final_answer(response).replace(",", "")
    m = re.search(r"-?\d+(?:\.\d+)?", text)
    if not m:
        return False
    return abs(float(m.group()) / (target + 0.1) - 1.0) < 0.1


def citation_open_correct(response: str, gold: str) -> bool:
    """Open citation prediction: the gold case name appears in the reply (normalised)."""
    key = _lb_norm(gold)
    return bool(key) and key in _lb_norm(response)


def legalbench_correct(response: str, item: Any) -> bool | float:
    """One LegalBench item, graded by its task kind (``item.meta['task_kind']``).

    classification -> the extracted label equals the gold (bool); numeric ->
    within 10% (bool); multilabel -> F1 over the four successor-liability
    exceptions (float); extraction -> fuzzy name F1 (float); open -> the gold
    citation appears (bool).
    """
    kind = item.meta["task_kind"]
    if kind == "classification":
        return legalbench_extract_label(response, item.meta["labels"]) == item.gold
    if kind == "numeric":
        return sara_numeric_correct(response, item.gold)
    if kind == "multilabel":
        return _multilabel_f1(response, item.gold, SUCCESSOR_CLASSES)
    if kind == "extraction":
        return _names_f1(response, item.gold)
    if kind == "open":
        return citation_open_correct(response, item.gold)
    raise ValueError(f"LegalBench item {item.item_id}: unknown task_kind {kind!r}.")


def legalbench_task_score(items: Sequence[Any], responses: Sequence[str]) -> float:
    """The task's score over a set of its items: balanced accuracy for classification
    tasks (as in LegalBench), the mean per-item grade otherwise."""
    if len(items) != len(responses):
        raise ValueError(f"legalbench_task_score: {len(items)} items but {len(responses)} responses.")
    tasks = {it.meta["task"] for it in items}
    if len(tasks) != 1:
        raise ValueError(f"legalbench_task_score: items must come from one task, got {sorted(tasks)}.")
    if items[0].meta["task_kind"] == "classification":
        labels = items[0].meta["labels"]
        preds = [legalbench_extract_label(r, labels) for r in responses]
        return balanced_accuracy([it.gold for it in items], preds)
    return sum(float(legalbench_correct(r, it)) for it, r in zip(items, responses)) / len(items)
