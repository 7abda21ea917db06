"""The direct path to an OpenAI-compatible server: one shared aiohttp session per run.

litellm costs 6-12 ms of CPU per call on the event loop, which caps a run at
about 45% of the ideal request rate at 32 calls in flight (issue #16). For
``openai/<name>`` with an ``api_base`` (vLLM, llama.cpp's server, any
OpenAI-compatible endpoint) and no extra litellm options, the engine instead
POSTs ``/chat/completions`` itself: about 0.3 ms of CPU per call (router
deployments of that kind too). Hosted providers and the local panel still go
through litellm.

The key comes from ``OPENAI_API_KEY`` (as litellm would take it), or from the
router deployment's ``api_key``; credentials in the URL (``http://user:pass@host``)
are sent as Basic auth instead of the key. Every key and URL password sent is
registered with :mod:`metacog.elicit.redaction`, so whatever a server echoes of
it is redacted. Errors are raised as :class:`HTTPError` with the status code, so
the engine's retry rules apply unchanged.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
from importlib.metadata import version
from typing import Any

from metacog.elicit.redaction import register, register_url, url_credentials

_SESSIONS: dict[int, Any] = {}


class HTTPError(RuntimeError):
    """A non-2xx reply: ``status_code`` and the server's message."""

    def __init__(self, status_code: int, message: str):
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code


class BadRequestError(HTTPError):
    pass


class AuthenticationError(HTTPError):
    pass


class PermissionDeniedError(HTTPError):
    pass


class NotFoundError(HTTPError):
    pass


class RateLimitError(HTTPError):
    pass


class InternalServerError(HTTPError):
    pass


_BY_STATUS = {400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
              404: NotFoundError, 429: RateLimitError}


def error_for(status: int, message: str) -> HTTPError:
    """The HTTPError subclass named as litellm and the openai client name this status."""
    cls = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else HTTPError)
    return cls(status, message)


def eligible(model: str, api_base: str | None, extra: dict[str, Any]) -> bool:
    """True when a call can take the direct path (OpenAI-compatible server, plain options)."""
    return bool(api_base) and model.startswith("openai/") and not extra


@functools.lru_cache(maxsize=1)
def backend_version() -> str:
    return f"metacog-http (aiohttp {version('aiohttp')})"


def _session():
    import aiohttp

    loop = asyncio.get_running_loop()
    sess = _SESSIONS.get(id(loop))
    if sess is None or sess.closed:
        sess = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
                                     json_serialize=json.dumps, trust_env=False)
        _SESSIONS[id(loop)] = sess
    return sess


async def close() -> None:
    """Close the running loop's session (the end of a run)."""
    sess = _SESSIONS.pop(id(asyncio.get_running_loop()), None)
    if sess is not None:
        await sess.close()


@functools.lru_cache(maxsize=64)
def _endpoint(api_base: str) -> tuple[str, str | None]:
    """(chat-completions URL without userinfo, the Basic Authorization value of the URL's
    credentials or None)."""
    register_url(api_base)
    bare, user, pw = url_credentials(api_base)
    auth = None
    if user is not None:
        auth = "Basic " + base64.b64encode(f"{user}:{pw or ''}".encode("utf-8")).decode("ascii")
        register(auth)
    return bare.rstrip("/") + "/chat/completions", auth


def _message(body: bytes) -> str:
    try:
        doc = json.loads(body)
        err = doc.get("error", doc) if isinstance(doc, dict) else doc
        return str(err.get("message", err) if isinstance(err, dict) else err)[:1000]
    except (ValueError, AttributeError):
        return body[:500].decode("utf-8", "replace")


def request_body(model: str, messages: list[dict[str, str]], params: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of a chat completion for ``openai/<name>``: the name as the server knows it."""
    return {"model": model.split("/", 1)[1], "messages": messages, **params}


async def complete(api_base: str, model: str, messages: list[dict[str, str]], params: dict[str, Any],
                   timeout: float, api_key: str | None) -> dict[str, Any]:
    """POST one chat completion; returns the reply as a dict (raises HTTPError, TimeoutError, ...)."""
    import aiohttp

    url, auth = _endpoint(api_base)
    headers = {"Content-Type": "application/json"}
    if auth is not None:
        headers["Authorization"] = auth
    elif api_key:
        register(api_key)
        headers["Authorization"] = f"Bearer {api_key}"
    body = request_body(model, messages, params)
    async with _session().post(url, data=json.dumps(body), headers=headers,
                               timeout=aiohttp.ClientTimeout(total=timeout)) as r:
        raw = await r.read()
        if r.status >= 400:
            raise error_for(r.status, _message(raw))
    doc = json.loads(raw)
    if not isinstance(doc, dict):
        raise ValueError("the reply is not a JSON object")
    return doc


def extract(doc: dict[str, Any]) -> dict[str, Any]:
    """The fields the engine keeps from a chat-completion reply (text, logprobs, usage, ...)."""
    choices = doc.get("choices") or []
    ch = choices[0] if choices and isinstance(choices[0], dict) else {}
    msg = ch.get("message") or {}
    lp = ch.get("logprobs")
    usage = doc.get("usage") or {}
    return {
        "has_choice": bool(choices),
        "has_message": isinstance(ch.get("message"), dict),
        "text": msg.get("content"),
        "reasoning_content": msg.get("reasoning_content"),
        "finish_reason": ch.get("finish_reason"),
        "logprobs": lp.get("content") if isinstance(lp, dict) else None,
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "response_model": doc.get("model"),
    }
