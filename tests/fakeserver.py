"""A fake OpenAI-compatible chat server on 127.0.0.1, with fault injection.

Used by the tests and ``speed/bench_elicit.py``. Pure asyncio (HTTP/1.1,
keep-alive), no external tools. Replies are a deterministic function of the
request; faults are asked for by markers inside the prompt text, so they hit
the same call however requests interleave:

- ``[[429xN]]`` / ``[[500xN]]`` / ``[[503xN]]``: the first N requests with this
  prompt get that status, later ones succeed.
- ``[[hangxN]]``: the first N requests sleep ``hang_s`` seconds (past the
  client's timeout) before answering.
- ``[[badjsonxN]]``: the first N requests get a 200 with a broken JSON body.
- ``[[always500]]``, ``[[always400]]``: every request fails with that status.
- ``[[echoauth]]``: a 401 whose message echoes the Authorization header.
- ``[[echoreply]]``: a 200 whose reply text echoes the Authorization header.
- ``[[echokey]]``: a 401 echoing only the credential after the scheme (the bare key), as
  hosted APIs do ("Incorrect API key provided: ...").
- ``[[echobase]]``: a 401 echoing the Authorization header's credentials in base64
  (the whole header value, and its part after the scheme, e.g. the bare key).
- ``[[empty]]``: the reply content is the empty string.
- ``[[garbage]]``: the reply has no "Final answer:" line.
- ``[[answer:TEXT]]``: answer probes reply "Final answer: TEXT" (with token log-probabilities
  when asked: 0.9 per token, a one-letter answer 0.7 with the letters beside it 0.2 and 0.05).
- ``[[nologprobs]]``: no log-probabilities even when asked.
- ``[[yes]]`` / ``[[no]]``: judgments decide this way (default: by a hash).

Run standalone: ``python tests/fakeserver.py [--port 0] [--latency 0.2]``; it
prints ``PORT <n>`` on its first line.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import math
import re
import sys
import threading
import time
from collections import Counter

_MARK = re.compile(r"\[\[(\d{3}|[a-z]+?\d*)(?:x(\d+))?(?::([^\]]*))?\]\]")


class FakeServer:
    """Serve in a background thread: ``with FakeServer(latency=0.2) as srv: srv.base_url``."""

    def __init__(self, latency: float = 0.0, hang_s: float = 30.0, port: int = 0, model: str = "fake"):
        self.latency = latency
        self.hang_s = hang_s
        self.port = port
        self.model = model
        self.seen: Counter[str] = Counter()  # prompt hash -> requests received
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.auth_headers: set[str] = set()
        self.first_arrival: float | None = None  # time.monotonic() of the first chat request
        self.last_done: float | None = None  # ... and of the last reply sent
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._ready = threading.Event()

    # -- lifecycle ---------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "FakeServer":
        self._thread = threading.Thread(target=self._serve_thread, daemon=True, name="fakeserver")
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake server did not start")
        return self

    def _serve_thread(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, backlog=512)
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        if self._loop is None:
            return

        async def _close():
            self._server.close()
            for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                task.cancel()

        fut = asyncio.run_coroutine_threadsafe(_close(), self._loop)
        try:
            fut.result(5)
        except Exception:  # noqa: BLE001
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def __enter__(self) -> "FakeServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- HTTP --------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                method, path, _ = line.decode("latin-1").split(" ", 2)
                headers = {}
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                body = b""
                n = int(headers.get("content-length", "0") or 0)
                if n:
                    body = await reader.readexactly(n)
                if "authorization" in headers:
                    self.auth_headers.add(headers["authorization"])
                status, payload = await self._route(method, path, body,
                                                    headers.get("authorization", ""))
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                writer.write(
                    f"HTTP/1.1 {status} {'OK' if status == 200 else 'ERR'}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                    f"Connection: keep-alive\r\n\r\n".encode() + data
                )
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, asyncio.CancelledError):
            pass
        finally:
            try:
                writer.close()
            except Exception:  # noqa: BLE001
                pass

    async def _route(self, method: str, path: str, body: bytes, auth: str = ""):
        if method == "GET" and path.rstrip("/").endswith("/stats"):
            span = (self.last_done - self.first_arrival) if self.first_arrival and self.last_done else None
            return 200, {"requests": self.requests, "max_in_flight": self.max_in_flight,
                         "seconds": span, "seen": dict(self.seen)}
        if method == "POST" and path.rstrip("/").endswith("/stats/reset"):
            self.requests, self.max_in_flight, self.first_arrival, self.last_done = 0, 0, None, None
            return 200, {"reset": True}
        if method == "GET" and path.rstrip("/").endswith("/models"):
            return 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]}
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {method} {path}", "type": "not_found"}}
        try:
            req = json.loads(body)
        except json.JSONDecodeError:
            return 400, {"error": {"message": "bad json", "type": "invalid_request_error"}}
        self.requests += 1
        if self.first_arrival is None:
            self.first_arrival = time.monotonic()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._complete(req, auth)
        finally:
            self.in_flight -= 1
            self.last_done = time.monotonic()

    async def _complete(self, req: dict, auth: str = ""):
        msgs = req.get("messages") or []
        prompt = "\n".join(str(m.get("content", "")) for m in msgs)
        h = hashlib.sha256(json.dumps(msgs, sort_keys=True).encode()).hexdigest()[:16]
        self.seen[h] += 1
        nth = self.seen[h]
        marks = {m.group(1): (int(m.group(2)) if m.group(2) else None, m.group(3))
                 for m in _MARK.finditer(prompt)}
        if self.latency:
            await asyncio.sleep(self.latency)
        for code in ("429", "500", "503"):
            if code in marks and nth <= (marks[code][0] or 1):
                return int(code), {"error": {"message": f"injected {code}", "type": "server_error",
                                             "code": code}}
        if "always500" in marks:
            return 500, {"error": {"message": "injected permanent 500", "type": "server_error"}}
        if "echoauth" in marks:  # a careless provider echoing the key in its error text
            return 401, {"error": {"message": f"Incorrect API key provided: {auth}",
                                   "type": "invalid_request_error"}}
        if "echokey" in marks:
            return 401, {"error": {"message": f"Incorrect API key provided: {auth.partition(' ')[2]}",
                                   "type": "invalid_request_error"}}
        if "echobase" in marks:
            cred = auth.partition(" ")[2]
            enc = [base64.b64encode(x.encode()).decode() for x in (auth, cred)]
            return 401, {"error": {"message": f"Bad credentials (header {enc[0]}, token {enc[1]})",
                                   "type": "invalid_request_error"}}
        if "echoreply" in marks:
            return 200, {"id": "echo", "object": "chat.completion", "created": 1700000000,
                         "model": req.get("model", self.model),
                         "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                      "message": {"role": "assistant",
                                                  "content": f"You sent {auth}.\nFinal answer: 1"}}],
                         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        if "always400" in marks:
            return 400, {"error": {"message": "injected 400", "type": "invalid_request_error"}}
        if "hang" in marks and nth <= (marks["hang"][0] or 1):
            await asyncio.sleep(self.hang_s)
        if "badjson" in marks and nth <= (marks["badjson"][0] or 1):
            return 200, b'{"id": "x", "choices": [{"message": {"content": "trunc'
        content, logprobs = self._reply(prompt, marks, h, bool(req.get("logprobs")))
        resp = {
            "id": f"chatcmpl-{h}-{nth}", "object": "chat.completion", "created": 1700000000,
            "model": req.get("model", self.model),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content},
                         "logprobs": logprobs}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(content) // 4,
                      "total_tokens": len(prompt) // 4 + len(content) // 4},
        }
        return 200, resp

    def _reply(self, prompt: str, marks: dict, h: str, want_logprobs: bool):
        if "empty" in marks:
            return "", None
        if "garbage" in marks:
            return "I am not sure what you mean.\nPerhaps.", None
        yes = int(h, 16) % 2 == 0
        if "yes" in marks:
            yes = True
        if "no" in marks:
            yes = False
        word = "Yes" if yes else "No"
        if "Confidence:" in prompt:
            content = f"Final answer: {word}\nConfidence: {0.55 + (int(h[:4], 16) % 45) / 100:.2f}"
        elif "Final answer: Yes" in prompt:
            content = f"I considered what I know about this.\nFinal answer: {word}"
        else:
            ans = marks.get("answer", (None, "42"))[1] or "42"
            content = f"Let me think.\nFinal answer: {ans}"
            if not want_logprobs or "nologprobs" in marks:
                return content, None
            # every token at probability 0.9; a one-letter answer is 0.7 likely, the letter before
            # it 0.2 and the one after 0.05 (the reply's mean token probability is then known)
            items = []
            for t in re.findall(r"\s*\S+|\s+", content):
                top = []
                if len(t.strip()) == 1 and t.strip().isalpha() and t.strip().isupper():
                    L = t.strip()
                    top = [{"token": " " + L, "logprob": math.log(0.7), "bytes": None},
                           {"token": " " + chr(ord(L) - 1), "logprob": math.log(0.2), "bytes": None},
                           {"token": " " + chr(ord(L) + 1), "logprob": math.log(0.05), "bytes": None}]
                lp = math.log(0.7) if top else math.log(0.9)
                items.append({"token": t, "logprob": lp, "bytes": None, "top_logprobs": top})
            return content, {"content": items}
        if not want_logprobs:
            return content, None
        p = 0.9 if yes else 0.2  # P(Yes) at the decision position
        toks = re.findall(r"\s*\S+|\s+", content)
        items = []
        for t in toks:
            if t.strip() in ("Yes", "No"):
                top = [{"token": " Yes", "logprob": math.log(p), "bytes": None},
                       {"token": " No", "logprob": math.log(1 - p), "bytes": None}]
                items.append({"token": t, "logprob": math.log(p if t.strip() == "Yes" else 1 - p),
                              "bytes": None, "top_logprobs": top})
            else:
                items.append({"token": t, "logprob": -0.01, "bytes": None, "top_logprobs": []})
        return content, {"content": items}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--hang-s", type=float, default=30.0)
    a = ap.parse_args(argv)
    return serve_forever(FakeServer(latency=a.latency, hang_s=a.hang_s, port=a.port))


def serve_forever(srv: FakeServer) -> int:
    """Start ``srv``, print ``PORT <n>`` on the first line, serve until interrupted."""
    srv.start()
    print(f"PORT {srv.port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
