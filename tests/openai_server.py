"""A local OpenAI-compatible server with the files and batches endpoints, on 127.0.0.1.

For the tests of provider batch mode (``metacog elicit --batch``) and for other helpers'
simulated panels: ``answer`` is any callable ``body(dict) -> chat.completion dict`` (or
``(status, dict)``; a coroutine function works too). The default answers like
``tests/fakeserver.py`` (its reply logic and prompt markers are reused as they are).

Endpoints (shapes as OpenAI documents them):

- ``POST /v1/chat/completions``
- ``POST /v1/files`` (multipart: ``file``, ``purpose=batch``), ``GET /v1/files/{id}``,
  ``GET /v1/files/{id}/content``
- ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window``),
  ``GET /v1/batches`` (newest first; ``limit``, ``after``), ``GET /v1/batches/{id}``,
  ``POST /v1/batches/{id}/cancel``
- ``GET /v1/_stats``: the counters below as JSON (for a server in its own process).

A batch is ``validating`` for its first tenth of ``batch_seconds``, then ``in_progress``; once
``batch_seconds`` have passed since its creation it ends (at the first look after that) as
``completed``, or as ``self.end`` when that is ``'expired'`` (the first half of its requests
are answered, the rest land in the error file with code ``batch_expired``) or ``'failed'``
(no output at all). Requests whose ``custom_id`` is in ``error_ids``, or whose messages contain
``[[batcherror]]``, land in the error file; answers with a status >= 400 too. Output lines
are ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``.

With ``batch=False`` the files and batches endpoints answer 404 (a plain server).

Counters: ``chat_calls`` (POST /chat/completions), ``chat_digests`` (requests per
:func:`digest` of their model and messages), ``files_uploaded``, ``batches_created``,
``batch_lines`` (times each custom_id was in a created batch), ``batch_answered``.

Standalone: ``python tests/openai_server.py --port 0 [--batch-seconds S] [--no-batch]
[--end expired|failed]`` prints ``PORT <n>`` on its first line.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import inspect
import json
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fakeserver import FakeServer, serve_forever  # noqa: E402

ERROR_MARK = "[[batcherror]]"
TERMINAL = ("completed", "failed", "expired", "cancelled")


def digest(model: str, messages: list[dict]) -> str:
    """The key the server counts chat requests by: sha256 of (model, messages), 16 hex digits."""
    blob = json.dumps({"model": model, "messages": messages}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _err(status: int, message: str, kind: str = "invalid_request_error"):
    return web.json_response({"error": {"message": message, "type": kind, "code": None}}, status=status)


class OpenAIServer(FakeServer):
    """Serve in a background thread: ``with OpenAIServer() as srv: srv.base_url`` (the thread,
    ``base_url`` and the default replies are FakeServer's)."""

    def __init__(self, answer: Callable[[dict], Any] | None = None, batch: bool = True,
                 batch_seconds: float = 0.5, port: int = 0, error_ids=(), end: str | None = None):
        super().__init__(port=port)
        self.answer = answer or self._complete
        self.batch = batch
        self.batch_seconds = batch_seconds
        self.error_ids = set(error_ids)
        self.end = end  # None (completed), 'expired' or 'failed'
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.chat_calls = 0
        self.chat_digests: Counter[str] = Counter()
        self.files_uploaded = 0
        self.batches_created = 0
        self.batch_lines: Counter[str] = Counter()
        self.batch_answered = 0
        self._runner: web.AppRunner | None = None

    async def _start(self) -> None:
        app = web.Application(client_max_size=512 * 1024 * 1024, middlewares=self.middlewares())
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{fid}", self._file)
        app.router.add_get("/v1/files/{fid}/content", self._content)
        app.router.add_post("/v1/batches", self._create)
        app.router.add_get("/v1/batches", self._list)
        app.router.add_get("/v1/batches/{bid}", self._retrieve)
        app.router.add_post("/v1/batches/{bid}/cancel", self._cancel)
        app.router.add_get("/v1/_stats", self._stats)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    def middlewares(self) -> list:
        """aiohttp middlewares wrapped around every endpoint (none here; tests/faulty_server.py adds
        its faults this way)."""
        return []

    def stop(self) -> None:
        if self._loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop = None

    def stats(self) -> dict[str, Any]:
        """The counters as one JSON-able dict (also ``GET /v1/_stats``)."""
        return {"chat_calls": self.chat_calls, "chat_digests": dict(self.chat_digests),
                "files_uploaded": self.files_uploaded, "batches_created": self.batches_created,
                "batch_lines": dict(self.batch_lines), "batch_answered": self.batch_answered,
                "batches": {b["id"]: b["status"] for b in self.batches.values()}}

    # -- answering ---------------------------------------------------------
    async def _answer(self, body: dict) -> tuple[int, dict]:
        out = self.answer(body)
        if inspect.isawaitable(out):
            out = await out
        status, doc = out if isinstance(out, tuple) else (200, out)
        if isinstance(doc, bytes):  # fakeserver's broken-JSON fault
            doc = {"error": {"message": "broken reply", "type": "server_error"}}
            status = 500
        return status, doc

    async def _chat(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _err(400, "bad json")
        self.chat_calls += 1
        self.chat_digests[digest(str(body.get("model")), body.get("messages") or [])] += 1
        status, doc = await self._answer(body)
        return web.json_response(doc, status=status)

    # -- files -------------------------------------------------------------
    def _gate(self) -> web.Response | None:
        return None if self.batch else _err(404, "Not Found: this server has no batch endpoints",
                                            "not_found")

    def _find(self, table: dict, key: str, what: str) -> tuple[dict | None, web.Response | None]:
        """(the file or batch, None), or (None, the 404 to answer)."""
        if (no := self._gate()) is not None:
            return None, no
        x = table.get(key)
        return x, (None if x is not None else _err(404, f"No such {what}"))

    async def _upload(self, request: web.Request) -> web.Response:
        if (no := self._gate()) is not None:
            return no
        form = await request.post()
        f, purpose = form.get("file"), form.get("purpose")
        if f is None or not hasattr(f, "file"):
            return _err(400, "missing multipart field 'file'")
        if purpose != "batch":
            return _err(400, f"purpose must be 'batch', got {purpose!r}")
        data = f.file.read()
        fid = f"file-{uuid.uuid4().hex[:24]}"
        self.files[fid] = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                           "filename": f.filename or "input.jsonl", "purpose": "batch",
                           "status": "processed", "_data": data}
        self.files_uploaded += 1
        return web.json_response(self._public(self.files[fid]))

    def _public(self, f: dict) -> dict:
        return {k: v for k, v in f.items() if not k.startswith("_")}

    def _add_file(self, lines: list[dict], purpose: str) -> str:
        data = "".join(json.dumps(x) + "\n" for x in lines).encode("utf-8")
        fid = f"file-{uuid.uuid4().hex[:24]}"
        self.files[fid] = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                           "filename": f"{purpose}.jsonl", "purpose": purpose, "status": "processed",
                           "_data": data}
        return fid

    async def _file(self, request: web.Request) -> web.Response:
        f, no = self._find(self.files, request.match_info["fid"], "file")
        return no or web.json_response(self._public(f))

    async def _content(self, request: web.Request) -> web.Response:
        f, no = self._find(self.files, request.match_info["fid"], "file")
        return no or web.Response(body=f["_data"], content_type="application/octet-stream")

    # -- batches -----------------------------------------------------------
    async def _create(self, request: web.Request) -> web.Response:
        if (no := self._gate()) is not None:
            return no
        try:
            req = await request.json()
        except ValueError:
            return _err(400, "bad json")
        f = self.files.get(req.get("input_file_id") or "")
        if f is None:
            return _err(400, f"input_file_id {req.get('input_file_id')!r} does not exist")
        if req.get("endpoint") != "/v1/chat/completions":
            return _err(400, f"endpoint {req.get('endpoint')!r} is not supported here")
        if req.get("completion_window") != "24h":
            return _err(400, "completion_window must be '24h'")
        lines, errors = [], []
        for n, raw in enumerate(f["_data"].decode("utf-8").splitlines(), 1):
            if not raw.strip():
                continue
            try:
                x = json.loads(raw)
            except ValueError:
                errors.append({"code": "invalid_json_line", "line": n, "message": "not JSON"})
                continue
            if not x.get("custom_id") or x.get("method") != "POST" or x.get("url") != req["endpoint"]:
                errors.append({"code": "invalid_request", "line": n,
                               "message": "each line needs custom_id, method POST and the batch's url"})
            lines.append(x)
        ids = [x.get("custom_id") for x in lines]
        if len(set(ids)) != len(ids):
            errors.append({"code": "duplicate_custom_id", "line": None, "message": "custom_id repeats"})
        now = int(time.time())
        bid = f"batch_{uuid.uuid4().hex[:24]}"
        b = {"id": bid, "object": "batch", "endpoint": req["endpoint"], "errors": None,
             "input_file_id": f["id"], "completion_window": "24h", "status": "validating",
             "output_file_id": None, "error_file_id": None, "created_at": now,
             "in_progress_at": None, "expires_at": now + 86400, "finalizing_at": None,
             "completed_at": None, "failed_at": None, "expired_at": None, "cancelling_at": None,
             "cancelled_at": None, "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
             "metadata": req.get("metadata"), "_t0": time.monotonic(), "_lines": lines}
        if errors:
            b.update(status="failed", failed_at=now, errors={"object": "list", "data": errors})
        self.batches[bid] = b
        self.batches_created += 1
        self.batch_lines.update(ids)
        return web.json_response(self._public(b))

    async def _retrieve(self, request: web.Request) -> web.Response:
        b, no = self._find(self.batches, request.match_info["bid"], "batch")
        if no is not None:
            return no
        await self._advance(b)
        return web.json_response(self._public(b))

    async def _list(self, request: web.Request) -> web.Response:
        if (no := self._gate()) is not None:
            return no
        every = list(reversed(self.batches.values()))
        after = request.query.get("after")
        if after in self.batches:
            every = every[[b["id"] for b in every].index(after) + 1:]
        limit = int(request.query.get("limit", 20))
        for b in every[:limit]:
            await self._advance(b)
        page = [self._public(b) for b in every[:limit]]
        return web.json_response({"object": "list", "data": page, "has_more": len(every) > limit,
                                  "first_id": page[0]["id"] if page else None,
                                  "last_id": page[-1]["id"] if page else None})

    async def _cancel(self, request: web.Request) -> web.Response:
        b, no = self._find(self.batches, request.match_info["bid"], "batch")
        if no is not None:
            return no
        if b["status"] not in TERMINAL:
            b.update(status="cancelled", cancelling_at=int(time.time()), cancelled_at=int(time.time()))
        return web.json_response(self._public(b))

    async def _stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def _advance(self, b: dict) -> None:
        """Move ``b`` along its life: validating, in_progress, then its end (answering it then)."""
        if b["status"] in TERMINAL:
            return
        age = time.monotonic() - b["_t0"]
        if age < self.batch_seconds / 10:
            return
        if b["status"] == "validating":
            b.update(status="in_progress", in_progress_at=int(time.time()))
        if age < self.batch_seconds:
            return
        now = int(time.time())
        if self.end == "failed":
            b.update(status="failed", failed_at=now, errors={"object": "list", "data": [
                {"code": "server_error", "line": None, "message": "injected: the batch failed"}]})
            return
        lines = b["_lines"]
        keep = len(lines) // 2 if self.end == "expired" else len(lines)
        out, err = [], []
        for x in lines[:keep]:
            body = x.get("body") or {}
            if x["custom_id"] in self.error_ids or ERROR_MARK in json.dumps(body.get("messages")):
                err.append({"id": f"batch_req_{uuid.uuid4().hex[:12]}", "custom_id": x["custom_id"],
                            "response": None, "error": {"code": "injected_error",
                                                        "message": "injected: this request failed"}})
                continue
            status, doc = await self._answer(body)
            self.batch_answered += 1
            line = {"id": f"batch_req_{uuid.uuid4().hex[:12]}", "custom_id": x["custom_id"],
                    "response": {"status_code": status, "request_id": uuid.uuid4().hex, "body": doc},
                    "error": None}
            (out if status < 400 else err).append(line)
        for x in lines[keep:]:
            err.append({"id": f"batch_req_{uuid.uuid4().hex[:12]}", "custom_id": x["custom_id"],
                        "response": None, "error": {"code": "batch_expired",
                                                    "message": "This request could not be executed "
                                                    "before the completion window expired."}})
        status = "expired" if self.end == "expired" else "completed"
        b.update(status=status, finalizing_at=now, **{f"{status}_at": now},
                 output_file_id=self._add_file(out, "batch_output") if out else None,
                 error_file_id=self._add_file(err, "batch_output") if err else None,
                 request_counts={"total": len(lines), "completed": len(out), "failed": len(err)})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--batch-seconds", type=float, default=0.5)
    ap.add_argument("--no-batch", action="store_true", help="no files/batches endpoints (404)")
    ap.add_argument("--end", choices=("expired", "failed"), default=None)
    a = ap.parse_args(argv)
    return serve_forever(OpenAIServer(batch=not a.no_batch, batch_seconds=a.batch_seconds, port=a.port,
                                      end=a.end))


if __name__ == "__main__":
    sys.exit(main())
