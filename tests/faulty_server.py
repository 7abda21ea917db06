"""An OpenAI-compatible server on 127.0.0.1 that breaks every call the same way (issue #39, stress).

``FaultyServer(fault)`` is :class:`openai_server.OpenAIServer` (chat, files and batches
endpoints, its counters) with one fault applied to every request:

- ``'hang'``: the connection is accepted and the request read, and no answer ever comes
  (until the fault is lifted or the server stops);
- ``'no_choices'``: HTTP 200 with ``"choices": []``;
- ``'null_choices'``: HTTP 200 with ``"choices": null``;
- ``'no_message'``: HTTP 200 with one choice that has no ``message``;
- ``'cut'``: the status line, the headers (with the full ``Content-Length``) and the first half
  of the JSON body are sent, then the connection is closed.

The three 200 faults shape chat replies (also the ones a batch's output file holds); ``'hang'``
and ``'cut'`` hit every endpoint (a batch upload hangs or is cut too). ``srv.fault = None`` (or
:meth:`heal`, which also lets the hung requests go) makes it a good server on the same port,
answering like ``tests/fakeserver.py``. With ``mark``, only the chat requests whose JSON body
contains that text (a word of the prompt, or ``'"model": "b"'``) are broken (a partial failure);
the others, and every other endpoint, answer well. ``srv.hung`` and ``srv.cut`` count the requests each
fault took, by path (``srv.hung['/v1/chat/completions']``); ``srv.chat_calls`` counts the chat
requests that reached the handler (all but the hung ones).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent))
from openai_server import OpenAIServer  # noqa: E402

FAULTS = ("hang", "no_choices", "null_choices", "no_message", "cut")


def broken_reply(fault: str, model: str) -> dict[str, Any]:
    """The 200 body of one of the reply faults."""
    doc: dict[str, Any] = {"id": f"chatcmpl-{fault}", "object": "chat.completion", "created": 1700000000,
                           "model": model, "usage": {"prompt_tokens": 3, "completion_tokens": 0,
                                                     "total_tokens": 3}}
    if fault == "no_choices":
        doc["choices"] = []
    elif fault == "null_choices":
        doc["choices"] = None
    elif fault == "no_message":
        doc["choices"] = [{"index": 0, "finish_reason": "stop", "logprobs": None}]
    else:
        raise ValueError(f"broken_reply: {fault!r} is not a reply fault")
    return doc


class FaultyServer(OpenAIServer):
    """``with FaultyServer('hang') as srv: srv.base_url`` (every keyword of OpenAIServer works)."""

    def __init__(self, fault: str | None, mark: str | None = None, **kw):
        if fault is not None and fault not in FAULTS:
            raise ValueError(f"FaultyServer: fault {fault!r} is not one of {FAULTS}")
        super().__init__(**kw)
        self.fault = fault
        self.mark = mark
        self.hung: Counter[str] = Counter()  # path -> requests left hanging
        self.cut: Counter[str] = Counter()  # path -> replies cut off
        self._wake: asyncio.Event | None = None

    async def _start(self) -> None:
        self._wake = asyncio.Event()
        await super()._start()

    def heal(self) -> None:
        """Answer well from now on, and let the requests still hanging go (with a 503 nobody reads)."""
        self.fault = None
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._wake.set)
        super().stop()

    def _hit(self, body: dict) -> bool:
        return self.mark is None or self.mark in json.dumps(body)

    async def _answer(self, body: dict) -> tuple[int, dict]:
        if self.fault in ("no_choices", "null_choices", "no_message") and self._hit(body):
            return 200, broken_reply(self.fault, str(body.get("model") or self.model))
        return await super()._answer(body)

    def middlewares(self) -> list:
        @web.middleware
        async def faults(request: web.Request, handler):
            if self.mark is not None and (request.path != "/v1/chat/completions"
                                          or self.mark not in (await request.text())):
                return await handler(request)
            if self.fault == "hang":
                self.hung[request.path] += 1
                await request.read()
                await self._wake.wait()
                return web.json_response({"error": {"message": "woken"}}, status=503)
            if self.fault != "cut":
                return await handler(request)
            resp = await handler(request)
            body = resp.body if isinstance(resp.body, bytes) else b'{"choices": []}'
            self.cut[request.path] += 1
            head = (f"HTTP/1.1 {resp.status} OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1")
            request.transport.write(head + body[: max(1, len(body) // 2)])
            request.transport.close()
            raise asyncio.CancelledError  # aiohttp drops the connection without writing more

        return [faults]
