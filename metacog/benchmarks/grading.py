"""Graders: is a model's reply to an item correct?

One entry point, :func:`grade`, dispatches on the benchmark name; the
per-benchmark functions are public so the book can show and test them:

- SQuAD: :func:`squad_em`, :func:`squad_f1` (the official normalisation:
  lowercase, drop punctuation, drop the articles a/an/the, collapse spaces; the
  maximum over the gold answers).
- MMLU-Pro: :func:`extract_letter` when the options were shown,
  :func:`option_text_match` against the correct option's text when they were not.
- LegalBench: :func:`legalbench_correct` per item, :func:`balanced_accuracy` and
  :func:`legalbench_task_score` over a task's items.
- MATH / MATH-500 / Omni-MATH: :func:`math_equivalent` (math-verify).
- Yes/no benchmarks: :func:`extract_yes_no`, :func:`yes_no_correct`.

Parsers return ``None`` when a reply holds no usable answer; graders then
count the reply as wrong (never raise), so unparseable replies stay in the data.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

# The parsers and the LegalBench graders live in their own modules; they are re-exported here so
# that every grader has one import point (``from metacog.benchmarks.grading import ...``).
from metacog.benchmarks.answers import (  # noqa: F401
    LETTERS, _as_list, _first_number, _number, extract_boxed, extract_final_answer, extract_letter,
    extract_yes_no, normalize_answer)
from metacog.benchmarks.grading_legalbench import (  # noqa: F401
    SUCCESSOR_CLASSES, balanced_accuracy, citation_open_correct, legalbench_correct,
    legalbench_extract_label, legalbench_task_score, sara_numeric_correct)

# ---------------------------------------------------------------------------
# SQuAD
# ---------------------------------------------------------------------------


def _f1_one(prediction: str, gold: str) -> float:
    pred = normalize_answer(prediction).split()
    ref = normalize_answer(gold).split()
    if not pred or not ref:  # the official rule: both empty -> 1, else 0
        return float(pred == ref)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def squad_em(prediction: str, gold: str | Sequence[str]) -> bool:
    """Exact match after normalisation, against any of the gold answers."""
    p = normalize_answer(prediction)
    return any(p == normalize_answer(g) for g in _as_list(gold))


def squad_f1(prediction: str, gold: str | Sequence[str]) -> float:
    """Token F1 after normalisation; the maximum over the gold answers."""
    return max(_f1_one(prediction, g) for g in _as_list(gold))


# ---------------------------------------------------------------------------
# MMLU-Pro
# ---------------------------------------------------------------------------


def option_text_match(response: str, options: Sequence[str], answer_index: int) -> bool:
    """Does a reply given without the options name the correct option's text?

    Numeric options: the first number of the final answer equals the option's
    number. Other options: the normalised final answer equals the normalised
    option text, or contains it as a whole-word phrase while containing no
    other option's text that is not part of the correct one.
    """
    final = extract_final_answer(response)
    gold_raw = str(options[answer_index]).strip()
    gold_num = _number(gold_raw.replace("$", "").replace("%", "").strip())
    if gold_num is not None:
        said = _first_number(final)
        return said is not None and abs(said - gold_num) <= 1e-9 * max(1.0, abs(gold_num))
    norm = [normalize_answer(o) for o in options]
    gold = norm[answer_index]
    if not gold:
        return False
    c = normalize_answer(final)
    if c == gold or normalize_answer(response) == gold:
        return True

    def has(phrase: str) -> bool:
        return bool(phrase) and re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", c) is not None

    if not has(gold):
        return False
    rivals = [o for i, o in enumerate(norm) if i != answer_index and o and o != gold and o not in gold]
    return not any(has(o) for o in rivals)


def mmlu_pro_correct(response: str, item: Any, options_shown: bool = True) -> bool:
    """MMLU-Pro: the letter when the options were shown, the option text when not.

    A reply to the shown options that names no letter but copies an option's text
    is graded by that text, as if no options had been shown: small models often
    answer "Final answer: <option text>".
    """
    options = item.meta["options"]
    if options_shown:
        letter = extract_letter(response, n_options=len(options))
        if letter is not None:
            return letter == item.gold
    return option_text_match(response, options, item.meta["answer_index"])


# ---------------------------------------------------------------------------
# Yes / no
# ---------------------------------------------------------------------------


def yes_no_correct(response: str, gold: bool) -> bool:
    """Does the reply's yes/no match the gold label? Unparseable replies are wrong."""
    said = extract_yes_no(response)
    return said is not None and said == bool(gold)


def answer_in_response(response: str, gold: str | Sequence[str]) -> bool:
    """Short-answer check: a normalised gold answer appears as a whole phrase in the reply."""
    c = normalize_answer(response)
    for g in _as_list(gold):
        g = normalize_answer(g)
        if g and re.search(rf"(?<!\w){re.escape(g)}(?!\w)", c):
            return True
    return False


# ---------------------------------------------------------------------------
# MATH family
# ---------------------------------------------------------------------------


def math_equivalent(response: str, gold: str) -> bool:
    """math-verify equivalence of the reply's final answer and the gold answer.

    The gold is parsed as LaTeX (wrapped in $...$ when bare); the reply is
    parsed by math-verify's default extraction (last \\boxed{} first, then the
    last expression). Equivalent forms (\\frac{1}{2}, 0.5, 1/2; sets; intervals;
    tuples; expanded and factored polynomials) verify.
    """
    import threading

    from math_verify import parse, verify

    gold = str(gold).strip()
    if not gold:
        return False
    has_math_delims = re.search(r"(?<!\\)\$", gold) is not None or "\\boxed" in gold
    gold_text = gold if has_math_delims else f"${gold}$"
    # math-verify's timeouts are signal alarms, which only the main thread can set: elsewhere (elicit.run
    # inside a running event loop, as in a notebook, runs in a worker thread) it raises, so every reply
    # was graded wrong. There it runs without its timeouts.
    main = threading.current_thread() is threading.main_thread()
    p_kw, v_kw = ({}, {}) if main else ({"parsing_timeout": None}, {"timeout_seconds": None})
    try:
        gold_parsed = parse(gold_text, **p_kw)
        if not gold_parsed:
            gold_parsed = parse(gold, **p_kw)
        pred_parsed = parse(str(response), **p_kw)
        if not gold_parsed or not pred_parsed:
            return False
        return bool(verify(gold_parsed, pred_parsed, **v_kw))
    except Exception:  # math-verify can raise on exotic LaTeX; such a reply is not graded correct
        return False


# ---------------------------------------------------------------------------
# Dispatch
# ---------------------------------------------------------------------------

MATH_BENCHMARKS = ("math", "math500", "omni_math")
YES_NO_BENCHMARKS = ("truthfulqa", "strategyqa", "selfaware", "audit")


def grade(benchmark: str, response_text: str, item: Any, **kw: Any) -> bool | float:
    """Grade one reply to one item.

    Returns a bool, except SQuAD's default F1 and the float LegalBench
    graders (successor liability, SSLA extraction). Keyword options:
    ``metric='f1'|'em'`` and ``threshold`` for SQuAD (with a threshold the
    result is ``f1 >= threshold``); ``options_shown`` for MMLU-Pro (default
    True); ``timeout`` for SciCode. Yes/no benchmarks take a bool gold (or
    'yes'/'no'/'true'/'false'); a list or string gold is a short answer that
    must appear in the reply.
    """
    if response_text is None:
        response_text = ""
    if benchmark == "squad":
        metric = kw.get("metric", "f1")
        pred = extract_final_answer(response_text)
        if metric == "em":
            return squad_em(pred, item.gold)
        if metric != "f1":
            raise ValueError(f"grade('squad'): metric must be 'f1' or 'em', not {metric!r}.")
        f1 = squad_f1(pred, item.gold)
        threshold = kw.get("threshold")
        return f1 if threshold is None else f1 >= threshold
    if benchmark == "mmlu_pro":
        return mmlu_pro_correct(response_text, item, options_shown=kw.get("options_shown", True))
    if benchmark == "legalbench":
        return legalbench_correct(response_text, item)
    if benchmark in MATH_BENCHMARKS:
        return math_equivalent(response_text, item.gold)
    if benchmark == "scicode":
        from metacog.benchmarks.scicode import grade_step

        return grade_step(response_text, item, timeout=kw.get("timeout", 120.0)).passed
    if benchmark in YES_NO_BENCHMARKS:
        gold = item.gold
        if isinstance(gold, str) and gold.strip().lower() in ("yes", "no", "true", "false"):
            gold = gold.strip().lower() in ("yes", "true")
        if isinstance(gold, bool):
            return yes_no_correct(response_text, gold)
        return answer_in_response(response_text, gold)
    raise ValueError(
        f"grade: unknown benchmark {benchmark!r}; known: squad, mmlu_pro, legalbench, "
        f"{', '.join(MATH_BENCHMARKS)}, scicode, {', '.join(YES_NO_BENCHMARKS)}."
    )
