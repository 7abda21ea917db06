"""What went wrong when calls failed, in the words of the commands' one-line reports.

Every command that asks a server (``metacog elicit``, ``metacog place``, ``metacog replicate``)
stops with one line when nothing usable came back; :func:`describe` is the part of that line
saying what failed, from the failed calls' error texts ('ErrorType: message [...]'):

>>> describe(["TimeoutError:  [transient]"] * 3, 3, api_base="http://127.0.0.1:8000/v1", timeout=2)
'3 of 3 calls timed out after 2 s at http://127.0.0.1:8000/v1'
>>> describe(["EmptyReply: the reply has no choices"] * 2 + ["TimeoutError: "], 4)
'2 of 4 replies had no choices; 1 timed out'
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

#: Error types of a server that could not be reached, by what the phrase calls them.
_REFUSED = ("ClientConnectorError", "ConnectionRefusedError", "ClientConnectorDNSError",
            "APIConnectionError", "ClientConnectionError", "ConnectionError")
_CUT = ("ClientPayloadError", "ServerDisconnectedError", "ClientConnectionResetError",
        "ConnectionResetError", "ClientOSError", "ContentLengthError", "TransferEncodingError")
_TIMEOUT = ("TimeoutError", "Timeout", "APITimeoutError", "ServerTimeoutError")


#: The engine's tag at the end of an error text: why the call is not asked again now.
_TAG = re.compile(r"\s*\[(?:transient[^\]]*|retries exhausted|not retryable)\]\s*$")


def kind(error: str) -> str:
    """The kind of one failure: 'refused', 'timeout', 'cut', 'no_choices', 'no_message',
    'not_json', 'http <status>' or 'other'."""
    text = str(error)
    name = text.split(":", 1)[0].strip()
    low = text.lower()
    if name == "EmptyReply":
        return "no_message" if "no message" in low else "no_choices"
    if name in _TIMEOUT or "timed out" in low:
        return "timeout"
    if name in _CUT or "payload is not completed" in low or "server disconnected" in low:
        return "cut"
    if name in _REFUSED or "connection refused" in low or "cannot connect" in low or "connection error" in low:
        return "refused"
    if name in ("JSONDecodeError", "ValueError") and ("json" in low or "expecting" in low):
        return "not_json"
    m = re.search(r"HTTP (\d{3})", text)
    if m:
        return f"http {m.group(1)}"
    return "other"


def _phrase(k: str, n: int, example: str, where: str, timeout: float | None) -> str:
    if k == "timeout":
        return "timed out" + (f" after {timeout:g} s" if timeout else "") + where
    if k == "refused":
        return "found no server (connection refused)" + where
    if k == "cut":
        return "were cut off: the server closed the connection in the middle of the reply"
    if k == "no_choices":
        return "had no choices"
    if k == "no_message":
        return "had a choice without a message"
    if k == "not_json":
        return "were not JSON"
    first = _TAG.sub("", example).strip()
    return f"failed ({first[:200]})" if first else "failed"


def describe(errors: Iterable[str], n_calls: int, *, api_base: str | None = None,
             timeout: float | None = None) -> str:
    """'K of N calls timed out after T s at URL' (the most common kind of failure first, then the
    count of each other kind): the 'what failed' of a one-line report. ``n_calls`` is every call
    asked, failed or not; ``api_base`` should be redacted already."""
    errs = [str(e) for e in errors]
    if not errs:
        return f"none of {n_calls} calls failed"
    kinds = Counter(kind(e) for e in errs)
    example = {}
    for e in errs:
        example.setdefault(kind(e), e)
    where = f" at {api_base}" if api_base else ""
    parts = []
    for i, (k, c) in enumerate(kinds.most_common()):
        noun = "replies" if k in ("no_choices", "no_message", "not_json") else "calls"
        head = f"{c} of {n_calls} {noun}" if i == 0 else f"{c}"
        parts.append(f"{head} {_phrase(k, c, example[k], where if i == 0 else '', timeout)}")
    return "; ".join(parts)
