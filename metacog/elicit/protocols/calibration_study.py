"""The LLM Calibration Study's MMLU-Pro protocol, as data: prompt, sampling, parsers, key.

Upstream: Linwei94/LLM-Calibration-Study @ ddc349e31695f3c2f8b8dfb2c3376a720914df55 (MIT),
mirrored unchanged in ``<mirror>/multimodel/calibration_study/protocol/``.

Which prompt made the panel's numbers. The panel's files are ``mmlu_pro_<model>_eval_all_None.csv``:
``eval_all`` (``mmlu_pro_eval.py``) does not ask anything; it re-reads the replies that
``conf_mode="sampling"`` stored (``shared_sampling_path``) and extracts from each one reply the
answer letter, the stated number (``verbal_numerical_confidence``) and the mean token
probability (``logit_perplexity_confidence``). So the panel's prompt is
``format_multichoice_question(row, conf_mode="sampling", choices=0)``, i.e.
``MULTI_CHOICE_NO_OPTIONS_SHARED_SAMPLING_TEMPLATE`` (the verbal-numerical template plus one
sentence asking to hedge in words). ``VARIANTS['verbal_numerical']`` keeps the brief's
``MULTI_CHOICE_NO_OPTIONS_COT_VERBAL_CONFIDENCE_TEMPLATE`` for comparison; it is not the default.

Sampling (``sampler/chat_completion_sampler.py``): temperature 0, ``max_tokens`` 1024,
``logprobs=True, top_logprobs=5`` with the system message prepended. The system message the
panel used is set in the study's ``simple_evals.py``, which the mirror does not hold; we use the
sampler module's ``OPENAI_SYSTEM_MESSAGE_API`` ("You are a helpful assistant.") and say so.

Parsers (``utils/post_processing_answer.py``: ``extract_answer``,
``extract_verbal_numerical_confidence``; ``utils/post_processing_confidence.py``:
``calculate_logit_perplexity``) are re-implemented below with the same patterns in the same
order (English ``Answer:`` only of the multilingual list). Like upstream, a stated number
outside 0-100 is returned as is (the loader then drops it as out of range).
Grading: the study's own key (it differs from the mirror's MMLU-Pro key on 173 questions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

UPSTREAM = ("Linwei94/LLM-Calibration-Study @ ddc349e31695f3c2f8b8dfb2c3376a720914df55 (MIT); "
            "mirror: multimodel/calibration_study/protocol/")

# utils/query_templates.py: MULTI_CHOICE_NO_OPTIONS_SHARED_SAMPLING_TEMPLATE (verbatim; the "\n"
# escapes inside the triple-quoted string are upstream's, so each makes an extra blank line).
SHARED_SAMPLING_TEMPLATE = """
Read the question, analyze step by step, provide your answer and your confidence in this answer. Note: The confidence indicates how likely you think your answer is true.\n
If you are uncertain about your answer to the question, convey this uncertainty linguistically by precisely hedging this answer.\n
Use the following format to answer:\n
```
Explanation: [insert short step-by-step analysis here]\n
Answer: [ONLY the option LETTER, where the LETTER is one of {Letters}]\n
Confidence (0-100): [Your confidence level, please only include the numerical number in the range of 0-100]%
```\n
Only give me the reply according to this format, don't give me any other words.

{Question}

""".strip()

# utils/query_templates.py: MULTI_CHOICE_NO_OPTIONS_COT_VERBAL_CONFIDENCE_TEMPLATE (verbatim).
VERBAL_NUMERICAL_TEMPLATE = """
Read the question, analyze step by step, provide your answer and your confidence in this answer. Note: The confidence indicates how likely you think your answer is true.\n
Use the following format to answer:\n
```
Explanation: [insert short step-by-step analysis here]\n
Answer: [ONLY the option LETTER, where the LETTER is one of {Letters}]\n
Confidence (0-100): [Your confidence level, please only include the numerical number in the range of 0-100]%
```\n
Only give me the reply according to this format, don't give me any other words.

{Question}

""".strip()

VARIANTS = {"sampling": SHARED_SAMPLING_TEMPLATE, "verbal_numerical": VERBAL_NUMERICAL_TEMPLATE}

# sampler/chat_completion_sampler.py: OPENAI_SYSTEM_MESSAGE_API (assumed; see the docstring).
SYSTEM_MESSAGE = "You are a helpful assistant."


@dataclass(frozen=True)
class Protocol:
    """How one panel asked: its template, system message and sampling settings."""

    panel: str
    variant: str
    template: str
    system: str
    temperature: float = 0.0
    max_tokens: int = 1024
    top_logprobs: int = 5
    source: str = UPSTREAM
    notes: tuple[str, ...] = field(default=())

    @property
    def tag(self) -> str:
        return f"{self.panel}:{self.variant}@1"

    def messages(self, question: str, options: list[str]) -> list[dict[str, str]]:
        """The chat messages for one MMLU-Pro item (system first, as the study's sampler does)."""
        user = format_question(question, options, self.template)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]

    def params(self, max_tokens: int | None = None) -> dict:
        """Request parameters for an OpenAI-compatible server (token log-probabilities on)."""
        return {"temperature": self.temperature, "max_tokens": int(max_tokens or self.max_tokens),
                "logprobs": True, "top_logprobs": self.top_logprobs}


def protocol(variant: str = "sampling") -> Protocol:
    if variant not in VARIANTS:
        raise ValueError(f"calibration_study protocol: unknown variant {variant!r}; one of {list(VARIANTS)}.")
    return Protocol("calibration_study", variant, VARIANTS[variant], SYSTEM_MESSAGE, notes=(
        "system message assumed (simple_evals.py is not mirrored)",
        "answer parser: English 'Answer:' only of upstream's multilingual list"))


def format_question(question: str, options: list[str], template: str = SHARED_SAMPLING_TEMPLATE) -> str:
    """``format_multichoice_question(row, conf_mode, choices=0)``: template, then 'A) ...' lines.

    Options equal to "N/A" are dropped first, as upstream's ``preprocess`` does.
    """
    options = [o for o in options if o != "N/A"]
    letters = [chr(ord("A") + i) for i in range(len(options))]
    block = "\n" + "".join(f"{k}) {v}\n" for k, v in zip(letters, options))
    return template.format(Question=question, Letters=",".join(letters)) + block


# ---- parsers (utils/post_processing_answer.py) ------------------------------------------------

def normalize_response(text: str | None) -> str:
    """Strip the markdown and LaTeX wrappers upstream strips before matching."""
    if not text:
        return ""
    for old in ("**", "$\\boxed{", "}$", "\\$", "$\\text{", "$", "\\mathrm{", "\\{", "\\text", "\\(",
                "\\mathbf{", "{", "\\boxed"):
        text = text.replace(old, "")
    return text


_FIRST = re.compile(r"(?i)Answer\s*:[ \t]*([A-D])")  # upstream's first pass: A-D only
_PATTERNS = [
    r"[Aa]nswer:?[\s]*[\n]*([A-J])",
    r"[Aa]nswer:[\s]*[\n]*\(?([A-J])\)?",
    r"[Aa]nswer:[\s]*[\n]*\[?([A-J])\]?",
    r"[Aa]nswer:[\s]*[\n]*([A-J])[,)]",
    r"[Aa]nswer:[\s]*[\n]*([A-J])\s*,?.*",
    r"Answer:\n([A-J])\nConfidence",
    r"answer is\s*\[?\(?([A-J])\]?\)?",
    r"answer should be\s*\[?\(?([A-J])\]?\)?",
    r"best option is \(?([A-J])\)?",
    r"best match is option \(?([A-J])\)?",
    r"the closest is \(?([A-J])\)?",
    r"Answer:\n*^([A-J])$",
    r"^([A-J])$",
]
_CONF = [
    r"[Cc]onfidence\s*\(0-100\):\s*[\(]?[\[]?(\d+)[\)]?[\]]?%?",
    r"[Cc]onfidence[:]?\s*(\d+)%?",
    # upstream lacks a comma after the next pattern, so Python joins it with the one after
    r"[Cc]onfidence [\(0-100\)]?:\s*\[(\d+)%?\]" r"[Cc]onfidence [Ll]evel\s*\(0-100\):\s*(\d+)%?",
    r"[Cc]onfidence [Ll]evel[:]?\s*(\d+)%?",
    r"[Cc]onfidence [Ll]evel[\(0-100\)]?:\s*\[(\d+)%?\]",
    r"[Cc]onfidence \(100\):\s*\w*,\s*(\d+)%?",
    r"[Cc]onfidence\s*\(\d+\)\s*:\s*(\d+)%?",
    r"[Cc]onfidence\s*[\(]?(\d+)[\)]?%?",
]


def _reversed_lines(text: str) -> str:
    return "\n".join(normalize_response(text).splitlines()[::-1])


def extract_answer(text: str | None) -> str | None:
    """The answer letter (A-J) or None, searching the reply's lines last to first."""
    scope = _reversed_lines(text or "")
    m = _FIRST.search(scope)
    if m and m.group(1).strip() in "ABCDEFGHIJ":
        return m.group(1).strip()
    for pat in _PATTERNS:
        for flags in (re.IGNORECASE, re.MULTILINE):
            m = re.search(pat, scope, flags)
            if m:
                letter = m.group(1).strip()
                if letter and letter in "ABCDEFGHIJ":
                    return letter
    return None


def extract_verbal_confidence(text: str | None) -> float | None:
    """The stated confidence / 100 (0-1); a number outside 0-100 is returned raw, as upstream."""
    scope = _reversed_lines(text or "")
    found = None
    for pat in _CONF:
        m = re.search(pat, scope, re.IGNORECASE)
        if m:
            found = int(m.group(1))
            if 0 <= found <= 100:
                return found / 100
    return None if found is None else float(found)


#: A line that states the answer or the confidence (what the reasoning part leaves out).
_STATED = re.compile(r"(?i)^\W*(answer\b|confidence\b|the answer is\b)")
_INLINE = re.compile(r"(?i)\**\banswer\s*:|\bconfidence\s*[(:]")


def reasoning_part(text: str | None) -> str | None:
    """The reply without the lines that state its answer or its confidence (and without the
    'Explanation:' label the template asks for), so a probe on it reads the reasoning, not the
    stated verdict. None for no reply."""
    if text is None:
        return None
    kept = [ln for ln in str(text).splitlines() if not _STATED.match(ln)]
    if kept:  # an answer and a confidence written at the end of the last line of reasoning
        kept[-1] = _INLINE.split(kept[-1], maxsplit=1)[0]
    out = "\n".join(kept).strip()
    return re.sub(r"(?i)^explanation\s*:\s*", "", out)


def logit_confidence(token_logprobs) -> float | None:
    """``calculate_logit_perplexity``: the mean probability of the reply's tokens."""
    arr = np.array([p for p in (token_logprobs or []) if p is not None], dtype=float)
    return float(np.exp(arr).mean()) if arr.size else None
