"""From a finished call to a tidy row: parsing, grading and the judgment columns."""

from __future__ import annotations

import json
import math
from typing import Any, Callable

import numpy as np

from metacog.benchmarks.grading import grade, normalize_answer
from metacog.elicit import parse
from metacog.elicit.tasks import CODE_BENCHMARKS, Task
from metacog.tidy.items import Item


def default_grader(item: Item, reply: str | None, probe: str) -> float:
    """1.0/0.0 when the reply answers ``item`` correctly, NaN when it cannot be graded.

    Uses :func:`metacog.benchmarks.grading.grade` (options hidden
    for 'answer_no_context'; SQuAD counts F1 >= 0.5 as correct, and so do the
    partial-credit LegalBench tasks, whose grader returns an F1), else a
    match against the gold answer(s) after the same normalisation
    (:func:`metacog.benchmarks.grading.normalize_answer`) for benchmarks it does not know. The result is
    always binary: the judgments are scored against it.
    """
    if reply is None:
        return math.nan
    kw: dict[str, Any] = {}
    if item.benchmark == "mmlu_pro":
        kw["options_shown"] = probe != "answer_no_context"
    if item.benchmark == "squad":
        kw["threshold"] = 0.5
    try:
        score = float(grade(item.benchmark, reply, item, **kw))
        return score if score in (0.0, 1.0) or math.isnan(score) else float(score >= 0.5)
    except ValueError:
        pass  # unknown benchmark: fall through
    except Exception:  # noqa: BLE001 - a grader crash must not lose the row
        return math.nan
    return _simple_grade(item.gold, parse.parse_answer(reply).decision)


def _simple_grade(gold: Any, answer: str | None) -> float:
    if answer is None or gold is None:
        return math.nan
    if isinstance(gold, bool):
        d = parse._choice_of(answer, ("Yes", "No"))
        return math.nan if d is None else float((d == "yes") == gold)
    golds = gold if isinstance(gold, (list, tuple)) else [gold]
    a = normalize_answer(answer)
    normed = [normalize_answer(g) for g in golds]
    return float(any(g and (g == a or f" {g} " in f" {a} ") for g in normed))


def _gold_yes(gold: Any) -> bool | None:
    if isinstance(gold, bool):
        return gold
    if isinstance(gold, (int, np.integer)) and gold in (0, 1):
        return bool(gold)
    if isinstance(gold, str) and gold.strip().lower() in ("yes", "no", "true", "false"):
        return gold.strip().lower() in ("yes", "true")
    return None


def _row(t: Task, status: str, payload: dict[str, Any], grader: Callable) -> dict[str, Any]:
    tpl = t.template
    row: dict[str, Any] = {
        "model": t.model, "item_id": t.item.item_id, "benchmark": t.item.benchmark,
        "probe": t.probe, "sample": t.sample, "domain": t.item.domain, "subject": t.item.subject,
        "template_version": tpl.tag, "cache_key": t.key,
        "backend": payload.get("backend"), "backend_version": payload.get("backend_version"),
        "latency_s": payload.get("latency_s"), "attempts": payload.get("attempts"),
        "error": payload.get("error"),
    }
    if status != "ok":
        row["parse_status"] = "error" if status == "error" else "missing"
        return row
    text = payload.get("text")
    if tpl.kind == "answer" and t.item.benchmark in CODE_BENCHMARKS:
        p = parse.parse_code(text)
    elif tpl.kind == "answer":
        p = parse.parse_answer(text, tpl.final_prefix)
    else:
        p = parse.parse_judgment(text, tpl.choices, tpl.final_prefix, tpl.confidence_prefix)
    reasoning = p.reasoning
    rc = payload.get("reasoning_content")
    if rc:
        reasoning = f"{rc.strip()}\n\n{reasoning}".strip()
    p_yes = payload.get("p_yes")
    probs = payload.get("option_probs")  # absent from replies cached before it was kept: missing
    row.update({
        "decision": p.decision, "parse_status": p.status, "raw_text": text,
        "reasoning_text": reasoning, "p_yes": p_yes, "mean_token_p": payload.get("mean_token_p"),
        "option_probs": json.dumps(probs, sort_keys=True) if isinstance(probs, dict) and probs else None,
        "prompt_tokens": payload.get("prompt_tokens"),
        "completion_tokens": payload.get("completion_tokens"),
        "cost_usd": payload.get("cost_usd"),
    })
    if tpl.kind == "judgment":
        row["confidence"] = {"yes": 1.0, "no": 0.0}.get(p.decision, math.nan)
    elif tpl.kind == "confidence":
        row["confidence"] = p.confidence if p.confidence is not None else math.nan
        gy = _gold_yes(t.item.gold)
        if gy is not None and p.decision in ("yes", "no"):
            row["correct"] = float((p.decision == "yes") == gy)
    else:
        row["correct"] = grader(t.item, text, t.probe)
    return row
