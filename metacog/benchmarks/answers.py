"""Reading an answer out of a model's reply: the final answer, a letter, yes/no, a boxed expression.

Shared by the graders (:mod:`metacog.benchmarks.grading`, :mod:`metacog.benchmarks.grading_legalbench`).
Parsers return ``None`` when a reply holds no usable answer; the graders count such a reply as wrong.
"""

from __future__ import annotations

import re
import string
from typing import Any


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
