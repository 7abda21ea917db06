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
import string
from collections import Counter
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

# ---------------------------------------------------------------------------
# Shared text helpers
# ---------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)
_MARKDOWN = re.compile(r"[*_`#]+")
_FINAL = re.compile(
    r"(?:final\s+answer|answer|label)\s*(?:is|would\s+be|:|：)\s*:?\s*(.+)", re.IGNORECASE
)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lowercase, drop punctuation, articles and extra whitespace."""
    text = str(text).lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def extract_final_answer(text: str) -> str:
    """The part of a reply after the last 'Answer:' / 'The answer is' / 'Final answer:'.

    Falls back to the whole reply (stripped) when there is no such marker.
    Markdown emphasis and a trailing full stop are removed.
    """
    text = _MARKDOWN.sub("", str(text)).strip()
    found = None
    for line in text.splitlines():
        m = _FINAL.search(line)
        if m:
            found = m.group(1)
    out = (found if found is not None else text).strip()
    return out[:-1].strip() if out.endswith(".") else out


def _as_list(gold: Any) -> list[str]:
    if gold is None:
        return [""]
    if isinstance(gold, str):
        return [gold]
    golds = [str(g) for g in gold]
    return golds or [""]


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

LETTERS = "ABCDEFGHIJ"


def extract_letter(text: str, n_options: int = 10) -> str | None:
    """The option letter a reply chooses, or None.

    Looks, in order, for 'answer is (X)', 'Answer: X', '\\boxed{X}', a reply that
    is just the letter ('C', '(C)', 'C.', 'C) text'), and the letter that opens
    the final-answer part. Only letters among the first ``n_options`` count.
    """
    valid = LETTERS[:n_options]
    text = _MARKDOWN.sub("", str(text))
    cls = f"[{valid}]"
    patterns = [  # the keyword in any case, the letter in capitals only ('the answer is a dog')
        rf"(?i:answer)\s+(?i:is)\s*:?\s*\(?({cls})\)?(?![A-Za-z])",
        rf"(?i:answer)\s*:\s*\(?({cls})\)?(?![A-Za-z])",
        rf"\\boxed\{{\s*(?:\\text\{{)?\(?({cls})\)?\}}",
        rf"(?i:option|choice)\s*(?i:is\s*)?\(?({cls})\)?(?![A-Za-z])",
    ]
    for pat in patterns:
        found = re.findall(pat, text)
        if found:
            return found[-1]
    stripped = text.strip()
    m = re.fullmatch(rf"\(?({cls})\)?[.):]?", stripped)
    if m:
        return m.group(1)
    m = re.match(rf"\(?({cls})\)?(?:[.):]\s|\s*$)", stripped)
    if m:
        return m.group(1)
    return None


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _first_number(text: str) -> float | None:
    m = re.search(r"-?\d+(?:\.\d+)?", str(text).replace(",", ""))
    return float(m.group()) if m else None


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

_YES = {"yes", "true", "correct", "y"}
_NO = {"no", "false", "incorrect", "n"}


def extract_yes_no(text: str) -> bool | None:
    """True for yes, False for no, None when the reply says neither (or both, unclearly).

    Order: a reply that opens with yes/no (or true/false), then an
    'answer: yes' style marker, then the only one of the two words present.
    """
    clean = _MARKDOWN.sub("", str(text)).strip().lower()
    if not clean:
        return None
    first = re.match(r"[\W_]*([a-z]+)", clean)
    if first and first.group(1) in (_YES | _NO) - {"y", "n", "correct", "incorrect"}:
        return first.group(1) in _YES
    marked = re.findall(r"(?:answer|judgment|judgement|decision)\s*(?:is|:)\s*:?\s*\W*(yes|no|true|false)\b", clean)
    if marked:
        return marked[-1] in _YES
    anywhere = set(re.findall(r"\b(yes|no|true|false)\b", clean))
    if anywhere & {"yes", "true"} and anywhere & {"no", "false"}:
        return None  # "I cannot say yes or no"
    # Only a yes/no that ends a clause counts here ("..., so no." but not "no idea").
    words = set(re.findall(r"\b(yes|no|true|false)\b(?=\s*[.!,;:)]|\s*$)", clean))
    has_yes, has_no = bool(words & {"yes", "true"}), bool(words & {"no", "false"})
    if has_yes != has_no:
        return has_yes
    return None


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


def extract_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} (or \\fbox{...}) in ``text``, braces matched."""
    text = str(text)
    starts = [m.end() for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text)]
    if not starts:
        return None
    i = starts[-1]
    depth = 1
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i:j].strip()
    return None


def math_equivalent(response: str, gold: str) -> bool:
    """math-verify equivalence of the reply's final answer and the gold answer.

    The gold is parsed as LaTeX (wrapped in $...$ when bare); the reply is
    parsed by math-verify's default extraction (last \\boxed{} first, then the
    last expression). Equivalent forms (\\frac{1}{2}, 0.5, 1/2; sets; intervals;
    tuples; expanded and factored polynomials) verify.
    """
    from math_verify import parse, verify

    gold = str(gold).strip()
    if not gold:
        return False
    has_math_delims = re.search(r"(?<!\\)\$", gold) is not None or "\\boxed" in gold
    gold_text = gold if has_math_delims else f"${gold}$"
    try:
        gold_parsed = parse(gold_text)
        if not gold_parsed:
            gold_parsed = parse(gold)
        pred_parsed = parse(str(response))
        if not gold_parsed or not pred_parsed:
            return False
        return bool(verify(gold_parsed, pred_parsed))
    except Exception:  # math-verify can raise on exotic LaTeX; such a reply is not graded correct
        return False


# ---------------------------------------------------------------------------
# LegalBench
# ---------------------------------------------------------------------------


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
