"""One call through litellm, with retries: the only module that imports litellm.

litellm is imported lazily (the import takes seconds and must stay offline:
the cost map is the bundled one). :func:`call_one` asks one task with
exponential backoff and jitter on 429, 5xx, timeouts and broken replies, and
returns ('ok', payload) or ('error', payload): it never raises for a failed call.

A failed call's payload says whether it is *transient* (:func:`is_transient`:
the server could not be reached, dropped the connection, timed out, was rate
limited or unavailable, cut its reply off mid-body, or answered 200 with nothing
in it: no choices, a choice without a message, not JSON): such a failure says
nothing about the call, so a later run asks it again by itself; other failures
are final until ``retry_failed``.
"""

from __future__ import annotations

import asyncio
import functools
import os
import random
import threading
import time
from typing import Any

from metacog.elicit import http, parse
from metacog.elicit.local import litellm_version, register
from metacog.elicit.pricemap import surely_unpriced
from metacog.elicit.redaction import redact, redact_url
from metacog.elicit.tasks import Settings, Task, is_local

# litellm fetches its price map from GitHub at import unless told not to; set this as
# early as possible, in case anything else in the process imports litellm first.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

_litellm = None
_litellm_lock = threading.Lock()


def get_litellm():
    """Import litellm with the offline cost map and the local provider registered."""
    global _litellm
    with _litellm_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            os.environ.setdefault("LITELLM_LOG", "ERROR")
            import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            register(litellm)
            _litellm = litellm
    return _litellm


_RETRY_STATUS = {408, 409, 425, 429}


def _status_code(exc: BaseException) -> int | None:
    for attr in ("status_code", "code", "http_status"):
        v = getattr(exc, attr, None)
        if isinstance(v, int):
            return v
    resp = getattr(exc, "response", None)
    v = getattr(resp, "status_code", None)
    return v if isinstance(v, int) else None


def is_retryable(exc: BaseException) -> bool:
    """429, 5xx, timeouts, dropped connections and unreadable replies are worth another try."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError, EmptyReply)):
        return True
    if type(exc).__module__.startswith("aiohttp") and not isinstance(exc, http.HTTPError):
        return True  # connection reset, refused, payload errors
    code = _status_code(exc)
    if code is not None:
        return code in _RETRY_STATUS or code >= 500
    name = type(exc).__name__
    if name in ("Timeout", "APITimeoutError", "APIConnectionError", "RateLimitError",
                "InternalServerError", "ServiceUnavailableError", "BadGatewayError",
                "JSONDecodeError", "APIResponseValidationError"):
        return True
    msg = str(exc).lower()
    return any(w in msg for w in ("timed out", "timeout", "connection", "json", "expecting value"))


#: Statuses and exception names of failures that say nothing about the call itself.
TRANSIENT_STATUS = {408, 429, 502, 503, 504}
TRANSIENT_NAMES = {
    "TimeoutError", "Timeout", "APITimeoutError", "ServerTimeoutError", "ConnectionError",
    "ConnectionRefusedError", "ConnectionResetError", "ConnectionAbortedError", "BrokenPipeError",
    "APIConnectionError", "ClientConnectorError", "ClientConnectionError", "ClientOSError",
    "ServerDisconnectedError", "ClientConnectorDNSError", "ServerConnectionError",
    "ClientConnectionResetError", "RateLimitError", "ServiceUnavailableError",
    # a reply cut off mid-body, or a 200 with nothing in it (no choices, no message, not JSON):
    # the server failed, not the call
    "ClientPayloadError", "ContentLengthError", "TransferEncodingError", "EmptyReply", "JSONDecodeError",
}


_TRANSIENT_WORDS = ("connection error", "connection refused", "connection reset", "cannot connect",
                    "server disconnected", "timed out", "timeout")


def _transient(name: str | None, status: int | None, message: str) -> bool:
    if name in TRANSIENT_NAMES or status in TRANSIENT_STATUS:
        return True
    if status is not None and 400 <= status < 500:
        return False  # the server read the request and refused it
    # litellm reports a refused connection as InternalServerError (500) "... Connection error."
    msg = message.lower()
    return any(w in msg for w in _TRANSIENT_WORDS)


def is_transient(exc: BaseException) -> bool:
    """True when the call failed for a reason outside it: connection refused or reset, a
    timeout, 429/502/503/504. A later run asks such calls again without ``retry_failed``."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError)):
        return True
    return _transient(type(exc).__name__, _status_code(exc), str(exc)[:2000])


def transient_payload(payload: dict[str, Any]) -> bool:
    """Whether a cached failure is transient (rows stored before the flag existed: by their error)."""
    if payload.get("error_type") in TRANSIENT_NAMES:
        return True  # also rows stored while such failures were counted final (an empty reply)
    if "transient" in payload:
        return bool(payload["transient"])
    err = str(payload.get("error") or "").rpartition(" [")[0]  # without the '[retries exhausted]' tag
    return _transient(payload.get("error_type"), payload.get("status_code"), err)


@functools.lru_cache(maxsize=None)
def priced(model: str) -> bool:
    """True when litellm's offline cost map has a per-token price for ``model`` (litellm is not
    imported for a model its bundled map surely lacks: :mod:`metacog.elicit.pricemap`)."""
    if is_local(model):
        return True
    if surely_unpriced(model):
        return False
    try:
        info = get_litellm().get_model_info(model)
    except Exception:  # noqa: BLE001
        return False
    return info.get("input_cost_per_token") is not None


class EmptyReply(RuntimeError):
    """The provider answered 200 but with no choices, or a choice without a message (transient:
    the next run asks again)."""


def _backend_version(litellm=None) -> str:
    return f"litellm {litellm_version()}"


def _reads_p_yes(task: Task) -> bool:
    """P(Yes) is read for judgments, and for answers only where the key's own parameters asked
    for log-probabilities (as before answers' log-probabilities were asked outside the key)."""
    return task.template.kind != "answer" or "logprobs" in task.params


def _extract(resp: Any, task: Task, latency: float, attempts: int, litellm) -> dict[str, Any]:
    choices = getattr(resp, "choices", None) or []
    if not choices:
        raise EmptyReply("the reply has no choices")
    ch = choices[0]
    msg = getattr(ch, "message", None)
    if msg is None:
        raise EmptyReply("the reply's choice has no message")
    text = getattr(msg, "content", None) if msg is not None else None
    reasoning = getattr(msg, "reasoning_content", None) if msg is not None else None
    p_yes = None
    content = None
    lp = getattr(ch, "logprobs", None)
    if lp is not None:
        content = lp.get("content") if isinstance(lp, dict) else getattr(lp, "content", None)
        if content:
            content = [c if isinstance(c, dict) else c.model_dump() for c in content]
            if _reads_p_yes(task):
                p_yes = parse.p_yes_from_logprobs(content, task.template.final_prefix)
    usage = getattr(resp, "usage", None)
    hidden = getattr(resp, "_hidden_params", None) or {}
    local = is_local(task.model)
    if local:
        cost = 0.0
    elif not priced(task.model):
        cost = None  # unknown price: missing, not zero
    else:
        cost = hidden.get("response_cost")
        if cost is None:
            try:
                cost = float(litellm.completion_cost(completion_response=resp))
            except Exception:  # noqa: BLE001 - unknown price: leave it missing
                cost = None
    if local and hidden.get("local_seconds") is not None:
        latency = float(hidden["local_seconds"])  # compute time, not time queued for the CPU
    return {
        "text": text,
        "reasoning_content": reasoning,
        "finish_reason": getattr(ch, "finish_reason", None),
        "p_yes": p_yes,
        **parse.logprob_fields(content, task.letters, task.template.final_prefix),
        "prompt_tokens": getattr(usage, "prompt_tokens", None),
        "completion_tokens": getattr(usage, "completion_tokens", None),
        "cost_usd": cost,
        "latency_s": latency,
        "attempts": attempts,
        "response_model": getattr(resp, "model", None),
        "backend": "llama_cpp" if local else "litellm",
        "backend_version": hidden.get("backend_version") or _backend_version(litellm),
    }


def _extract_http(doc: dict[str, Any], task: Task, latency: float, attempts: int) -> dict[str, Any]:
    f = http.extract(doc)
    if not f.pop("has_choice"):
        raise EmptyReply("the reply has no choices")
    if not f.pop("has_message"):
        raise EmptyReply("the reply's choice has no message")
    lp = f.pop("logprobs")
    cost = None
    if priced(task.model):
        try:
            pc, cc = get_litellm().cost_per_token(model=task.model, prompt_tokens=f["prompt_tokens"] or 0,
                                                  completion_tokens=f["completion_tokens"] or 0)
            cost = float(pc + cc)
        except Exception:  # noqa: BLE001 - unknown price: leave it missing
            cost = None
    return {**f, "p_yes": parse.p_yes_from_logprobs(lp, task.template.final_prefix) if lp and _reads_p_yes(task) else None,
            **parse.logprob_fields(lp, task.letters, task.template.final_prefix),
            "cost_usd": cost, "latency_s": latency, "attempts": attempts, "backend": "http",
            "backend_version": http.backend_version()}


async def _ask(task: Task, s: Settings, kwargs: dict[str, Any], timeout: float | None, attempt: int,
               litellm, direct: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    if direct:
        doc = await http.complete(s.api_base, task.model, task.messages, {**task.params, **task.wire}, timeout,
                                  os.environ.get("OPENAI_API_KEY"))
        return _extract_http(doc, task, time.perf_counter() - t0, attempt)
    coro = litellm.acompletion(model=task.model, messages=task.messages, timeout=timeout,
                               max_retries=0, num_retries=0, **kwargs)
    resp = await (coro if timeout is None else asyncio.wait_for(coro, timeout + 1.0))
    return _extract(resp, task, time.perf_counter() - t0, attempt, litellm)


async def _ask_routed(task: Task, s: Settings, name: str, timeout: float, attempt: int) -> dict[str, Any]:
    """One attempt on the deployment of ``name`` with the most room (waits for room)."""
    tokens = sum(len(m["content"]) for m in task.messages) // 4 + int(task.params.get("max_tokens", 128))
    d = await s.router.acquire(name, tokens)
    t0 = time.perf_counter()
    try:
        p = d.resolved()
        model, base = p.pop("model"), p.get("api_base")
        if s.transport == "auto" and http.eligible(model, base, {k: v for k, v in p.items() if k != "api_base"}):
            doc = await http.complete(base, model, task.messages, {**task.params, **task.wire}, timeout,
                                      d.api_key or os.environ.get("OPENAI_API_KEY"))
            out = _extract_http(doc, task, time.perf_counter() - t0, attempt)
        else:
            litellm = get_litellm()
            kw = {**task.params, **task.wire, **p, "drop_params": True, **({"api_key": d.api_key} if d.api_key else {})}
            coro = litellm.acompletion(model=model, messages=task.messages, timeout=timeout,
                                       max_retries=0, num_retries=0, **kw)
            out = _extract(await asyncio.wait_for(coro, timeout + 1.0), task, time.perf_counter() - t0,
                           attempt, litellm)
        out["deployment"] = redact_url(d.describe())
        return out
    finally:
        s.router.release(d)


async def call_one(task: Task, s: Settings, litellm=None, sleep=asyncio.sleep) -> tuple[str, dict[str, Any]]:
    """Ask one task with retries (then its router fallbacks, if any); returns ('ok'|'error', payload).

    Never raises for a failed call.
    """
    routed = s.router is not None and s.router.serves(task.model)
    names = [task.model, *s.router.fallbacks.get(task.model, [])] if routed else [task.model]
    direct = not routed and s.transport == "auto" and http.eligible(task.model, s.api_base, s.extra)
    if not routed and not direct:
        litellm = litellm or get_litellm()
    kwargs = {**task.params, **task.wire}
    if s.api_base and not is_local(task.model):
        kwargs["api_base"] = s.api_base
    if is_local(task.model):
        t = task.template
        kwargs["metacog_protocol"] = {
            "kind": t.kind, "final_prefix": t.final_prefix, "choices": list(t.choices),
            "confidence_prefix": t.confidence_prefix, "template": t.tag,
            "logprobs": bool(s.logprobs), "letters": task.letters,
        }
        timeout = None  # CPU generation cannot hang on a network; a timed-out thread would keep running
    else:
        kwargs["drop_params"] = True
        timeout = s.timeout
    rng = random.Random(f"{task.key}")
    t_first = time.perf_counter()
    last: BaseException | None = None
    attempt = 0
    for name in names:
        for tries in range(1, s.max_retries + 2):
            attempt += 1
            try:
                if routed:
                    return "ok", await _ask_routed(task, s, name, timeout, attempt)
                return "ok", await _ask(task, s, kwargs, timeout, attempt, litellm, direct)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure becomes a row
                last = exc
                if not is_retryable(exc) or tries > s.max_retries:
                    break
                delay = min(s.max_backoff, s.backoff * 2 ** (tries - 1)) * rng.uniform(0.5, 1.5)
                await sleep(delay)
    exc = last
    retryable = is_retryable(exc)
    transient = is_transient(exc)
    reason = ("transient: asked again by the next run" if transient
              else "retries exhausted" if retryable else "not retryable")
    backend = "llama_cpp" if is_local(task.model) else ("http" if direct else "litellm")
    return "error", {
        "error": redact(f"{type(exc).__name__}: {str(exc)[:1900]} [{reason}]"),
        "error_type": type(exc).__name__,
        "status_code": _status_code(exc),
        "final_status": f"failed after {attempt} attempt(s): {reason}",
        "transient": transient,
        "attempts": attempt,
        "latency_s": time.perf_counter() - t_first,
        "backend": backend,
        "backend_version": http.backend_version() if backend == "http" else _backend_version(),
    }
