"""Parse replies: decision, reasoning, verbal confidence, first-token P(Yes).

Parsers never raise on odd replies: they return a status ('ok', 'unparseable',
'empty') so unparseable replies stay in the data, flagged.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

_MD = re.compile(r"[*_`#>]+")
_NUM = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?|\.\d+)\s*(%?)")

#: First-token spellings that count as each choice when reading logprobs or text.
CHOICE_WORDS = {
    "yes": ("yes", "y", "true"),
    "no": ("no", "n", "false"),
    "abstain": ("abstain", "abst", "ab", "abs"),
}


@dataclass(frozen=True)
class Parsed:
    decision: str | None  # 'yes'/'no'/'abstain' for judgments, the answer text for attempts
    reasoning: str  # the text before the final decision
    confidence: float | None  # verbal P(correct) in [0, 1], or None
    status: str  # 'ok', 'unparseable', 'empty'


def _clean(s: str) -> str:
    return _MD.sub("", s).strip()


def _split_final(text: str, prefix: str) -> tuple[str, str] | None:
    """(before, after) around the LAST occurrence of ``prefix`` (case-insensitive), markdown-tolerant."""
    pat = re.compile(r"[*_`#]*" + r"[*_`#\s]*".join(re.escape(w) for w in prefix.rstrip(":").split()) +
                     r"[*_`\s]*:", re.IGNORECASE)
    last = None
    for m in pat.finditer(text):
        last = m
    if last is None:
        return None
    return text[: last.start()], text[last.end():]


def _choice_of(word_text: str, choices: tuple[str, ...]) -> str | None:
    words = re.findall(r"[A-Za-z]+", _clean(word_text))
    if not words:
        return None
    w = words[0].lower()
    allowed = {c.lower() for c in choices}
    for choice, spellings in CHOICE_WORDS.items():
        if choice in allowed and (w == choice or (w in spellings and len(w) > 2)
                                  or (choice == "abstain" and w.startswith("abst"))):
            return choice
    return None


def parse_confidence(text: str, prefix: str | None = "Confidence:") -> float | None:
    """Verbal P(correct) after ``prefix``: '0.85', '.85', '85%', '85' (rescaled /100). None if absent."""
    if text is None:
        return None
    if prefix:
        found = _split_final(text, prefix)
        if found is None:
            return None
        text = found[1]
    m = _NUM.search(_clean(text))
    if not m:
        return None
    x = float(m.group(1))
    if m.group(2) == "%" or (1 < x <= 100):
        x = x / 100
    return x if 0 <= x <= 1 else None


def parse_judgment(text: str | None, choices: tuple[str, ...] = ("Yes", "No"),
                   final_prefix: str = "Final answer:",
                   confidence_prefix: str | None = None) -> Parsed:
    """A reasoning-then-decision reply: decision in lower-cased ``choices``.

    The decision is the first word after the last ``final_prefix``; failing
    that, the first word of the last non-empty line.
    """
    if text is None or not str(text).strip():
        return Parsed(None, "", None, "empty")
    text = str(text)
    conf = parse_confidence(text, confidence_prefix) if confidence_prefix else None
    found = _split_final(text, final_prefix)
    if found is not None:
        before, after = found
        decision = _choice_of(after, choices)
        if decision is not None:
            return Parsed(decision, before.strip(), conf, "ok")
    lines = [ln for ln in text.strip().splitlines() if _clean(ln)]
    decision = _choice_of(lines[-1], choices) if lines else None
    if decision is not None:
        return Parsed(decision, "\n".join(lines[:-1]).strip(), conf, "ok")
    return Parsed(None, text.strip(), conf, "unparseable")


def parse_answer(text: str | None, final_prefix: str = "Final answer:") -> Parsed:
    """An attempt: the answer is the text after the last ``final_prefix`` (to the end of its line).

    A one-line reply without the prefix is taken as the answer; a longer reply
    without it is 'unparseable' (its last line is kept as the decision).
    """
    if text is None or not str(text).strip():
        return Parsed(None, "", None, "empty")
    text = str(text)
    found = _split_final(text, final_prefix)
    if found is not None:
        before, after = found
        ans = _clean(after.strip().splitlines()[0] if after.strip() else "").rstrip(".").strip()
        if ans:
            return Parsed(ans, before.strip(), None, "ok")
    lines = [ln for ln in text.strip().splitlines() if _clean(ln)]
    if len(lines) == 1:
        return Parsed(_clean(lines[0]).rstrip(".").strip(), "", None, "ok")
    return Parsed(_clean(lines[-1]).rstrip(".").strip(), "\n".join(lines[:-1]), None, "unparseable")


_FENCE = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n(.*?)```", re.DOTALL)
_DEF = re.compile(r"^(?:def|class)\s+\w+", re.MULTILINE)


def parse_code(text: str | None) -> Parsed:
    """A code attempt (SciCode): the code is the last fenced block, else the text from the
    first top-level ``def``/``class`` on. 'ok' when there is code; the decision is its first
    line (the graders run the whole reply, see :mod:`metacog.benchmarks.scicode`), the
    reasoning is the prose before it."""
    if text is None or not str(text).strip():
        return Parsed(None, "", None, "empty")
    text = str(text)
    blocks = list(_FENCE.finditer(text))
    if blocks:
        code, start = blocks[-1].group(1), blocks[0].start()
    else:
        m = _DEF.search(text)
        code, start = (text[m.start():], m.start()) if m else ("", len(text))
    lines = [ln.strip() for ln in code.splitlines() if ln.strip()]
    if not lines:
        return Parsed(None, text.strip(), None, "unparseable")
    return Parsed(lines[0], text[:start].strip(), None, "ok")


def _token_choice(token: str) -> str | None:
    t = re.sub(r"[^A-Za-z]", "", token).lower()
    for choice, spellings in CHOICE_WORDS.items():
        if t == choice or t in spellings:
            return choice
    return None


def p_yes_from_top(top: dict[str, float]) -> float | None:
    """P(Yes)/(P(Yes)+P(No)) from one position's {token: logprob}; None if neither appears."""
    py = sum(math.exp(lp) for tok, lp in top.items() if _token_choice(tok) == "yes")
    pn = sum(math.exp(lp) for tok, lp in top.items() if _token_choice(tok) == "no")
    if py + pn <= 0:
        return None
    return py / (py + pn)


def p_yes_from_logprobs(content: list[dict[str, Any]] | None, final_prefix: str = "Final answer:") -> float | None:
    """First-token P(Yes) from OpenAI-style ``logprobs.content`` of a reasoning-then-decision reply.

    Finds the first token after the last ``final_prefix`` whose text is a yes/no
    spelling and reads that position's ``top_logprobs``.
    """
    if not content:
        return None
    toks = [c.get("token", "") or "" for c in content]
    text = "".join(toks)
    found = _split_final(text, final_prefix)
    start_char = len(text) - len(found[1]) if found is not None else 0
    pos = 0
    for c, tok in zip(content, toks):
        end = pos + len(tok)
        if end > start_char and _token_choice(tok) in ("yes", "no"):
            top = {t.get("token", ""): t.get("logprob", -math.inf) for t in (c.get("top_logprobs") or [])}
            top.setdefault(tok, c.get("logprob", -math.inf))
            return p_yes_from_top(top)
        pos = end
    return None


def mean_token_p(content: list[dict[str, Any]] | None) -> float | None:
    """Mean probability of a reply's tokens (the exponential of each ``logprob``, averaged) from
    OpenAI-style ``logprobs.content``; None without token log-probabilities."""
    lps = [c.get("logprob") for c in (content or []) if isinstance(c, dict)]
    ps = [math.exp(lp) for lp in lps if isinstance(lp, (int, float)) and math.isfinite(lp)]
    return sum(ps) / len(ps) if ps else None


def option_probs(content: list[dict[str, Any]] | None, letters: str,
                 final_prefix: str = "Final answer:") -> dict[str, float] | None:
    """Probability of each option letter at the answer token, from ``top_logprobs``.

    The answer token is the first token after the last ``final_prefix`` (in a one-line reply
    without it, from the reply's start: the whole line is then the answer) whose text, stripped of spaces and brackets, is one of ``letters``. Spellings of a
    letter (' B', 'B', '(B') are summed. Letters the server did not list among the top
    log-probabilities are left out (their probability is below the smallest listed). None when
    there is no such token or no letters.
    """
    if not content or not letters:
        return None
    toks = [c.get("token", "") or "" for c in content]
    text = "".join(toks)
    found = _split_final(text, final_prefix)
    if found is None and "\n" in text.strip():
        return None  # no final answer line to read the letter at (as parse_answer: unparseable)
    start_char = len(text) - len(found[1]) if found is not None else 0
    pos = 0
    for c, tok in zip(content, toks):
        end = pos + len(tok)
        if end > start_char and tok.strip(" ()*.:") in letters and tok.strip(" ()*.:"):
            top = {t.get("token", ""): t.get("logprob", -math.inf) for t in (c.get("top_logprobs") or [])}
            top.setdefault(tok, c.get("logprob", -math.inf))
            out: dict[str, float] = {}
            for t, lp in top.items():
                L = (t or "").strip(" ()*.:")
                if len(L) == 1 and L in letters and lp is not None and math.isfinite(lp):
                    out[L] = out.get(L, 0.0) + math.exp(lp)
            return dict(sorted(out.items())) or None
        pos = end
    return None


def logprob_fields(content: list[dict[str, Any]] | None, letters: str = "",
                   final_prefix: str = "Final answer:") -> dict[str, Any]:
    """The payload fields kept from a reply's token log-probabilities: ``mean_token_p`` and
    ``option_probs`` (for multiple-choice items)."""
    return {"mean_token_p": mean_token_p(content),
            "option_probs": option_probs(content, letters, final_prefix) if letters else None}
