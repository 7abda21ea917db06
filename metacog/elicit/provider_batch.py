"""Provider batch APIs: the uncached calls of a model sent as one batch job, at the batch price.

With ``run(..., batch=True)`` (``metacog elicit --batch``), the uncached calls of every
``openai/<name>`` model (OpenAI itself, or any OpenAI-compatible server with the files and
batches endpoints, given as ``api_base``) are written as JSON lines (``custom_id`` = the
call's cache key, ``body`` = exactly what an ordinary call sends), uploaded, and submitted
as a batch through litellm's files and batches functions. The batch id is recorded with
its keys in the response cache (table ``provider_batches``; no URL, no key: the server is
named by a digest of its address) in the transaction that releases the keys' leases, so
two runs on one cache never both submit a key. The run then looks at the batch (first
after ``batch_poll`` seconds, then 1.5 times longer each time, at most a minute apart),
downloads its output and stores each reply as the row an ordinary call gives (the same
extraction; ``backend`` is 'batch', ``latency_s`` is missing because a batch has no
per-call latency, the payload keeps the batch id and its wall time as ``batch_seconds``,
``cost_usd`` is at the batch price: :func:`metacog.elicit.cost.token_cost`).

Calls in the error file, missing from the output, or in a batch that failed, expired or
was cancelled, are asked one by one through the ordinary path. A run killed at any point
loses nothing: a rerun finds the batch ids recorded for its keys and collects them
(also without ``batch=True``), and asks again only what no batch holds. With
``batch_wait``, a run stops waiting after that many seconds: the calls still in a batch
are rows with ``parse_status`` 'missing', and the next run collects them.

Batches recorded at another server (another ``api_base``) are left alone; a batch (or its
output) the server no longer knows (404) is given up and its calls asked one by one; any
other error while looking at a batch leaves it recorded for the next run. A server
without batch endpoints (HTTP 404 on ``/files``) is not an error: the run prints
one line and asks those calls one by one. Models of other providers, router models and
runs with extra litellm options are asked one by one too (one printed line).

Each batch carries in its metadata a digest of its server and keys (:func:`keys_tag`);
before submitting, a run looks through the server's latest batches (``list_batches``) for
one with the same digest that did not fail, and adopts it: a run killed between the server
accepting a batch and the cache recording it does not pay for that batch twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import sys
import time
from typing import Any

from metacog.elicit import http
from metacog.elicit.backend import _backend_version, _extract_http, _status_code, get_litellm, priced
from metacog.elicit.cache import Cache, CacheError, canonical
from metacog.elicit.cost import token_cost
from metacog.elicit.redaction import redact, redact_payload, register, url_credentials
from metacog.elicit.tasks import Settings, Task

#: A batch job's end states (OpenAI's names).
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
#: Requests and bytes per batch job (OpenAI's limits are 50,000 requests and 200 MB).
MAX_REQUESTS = 50_000
MAX_BYTES = 150_000_000
#: Seconds between looks at keys another run holds (submitting or asking them).
WAIT_SECONDS = 0.5
_NO_BATCH: set[str] = set()  # endpoints that answered 404 on /files in this process


def eligible(model: str, s: Settings) -> bool:
    """True when ``model``'s calls can go in a provider batch (an ``openai/<name>`` model,
    not served by a router, no extra litellm options)."""
    return model.startswith("openai/") and not s.extra and not (s.router is not None and s.router.serves(model))


def endpoint_id(api_base: str | None) -> str:
    """A digest naming the batch server in the cache (neither the URL nor its password is stored)."""
    bare = url_credentials(api_base)[0].rstrip("/") if api_base else "openai-default"
    return hashlib.sha256(bare.encode("utf-8")).hexdigest()[:16]


def keys_tag(endpoint: str, keys: list[str]) -> str:
    """The digest of a batch's server and keys, kept in its metadata (``metacog_keys``)."""
    return hashlib.sha256(canonical([endpoint, sorted(keys)]).encode("utf-8")).hexdigest()[:32]


def request_line(t: Task) -> dict[str, Any]:
    """One line of a batch's input file: the body an ordinary call of ``t`` sends."""
    return {"custom_id": t.key, "method": "POST", "url": "/v1/chat/completions",
            "body": http.request_body(t.model, t.messages, {**t.params, **t.wire})}


def chunks(tasks: list[Task]) -> list[tuple[list[Task], bytes]]:
    """``tasks`` cut into batches within :data:`MAX_REQUESTS` and :data:`MAX_BYTES`, each with
    its input file (JSON lines)."""
    out: list[tuple[list[Task], bytes]] = []
    part: list[Task] = []
    lines: list[bytes] = []
    size = 0
    for t in tasks:
        line = (json.dumps(request_line(t), ensure_ascii=False) + "\n").encode("utf-8")
        if part and (len(part) >= MAX_REQUESTS or size + len(line) > MAX_BYTES):
            out.append((part, b"".join(lines)))
            part, lines, size = [], [], 0
        part.append(t)
        lines.append(line)
        size += len(line)
    if part:
        out.append((part, b"".join(lines)))
    return out


def _connection(s: Settings) -> dict[str, Any]:
    """litellm's arguments reaching the batch server: provider, base URL, key, Basic auth."""
    conn: dict[str, Any] = {"custom_llm_provider": "openai"}
    key = os.environ.get("OPENAI_API_KEY")
    if s.api_base:
        conn["api_base"] = url_credentials(s.api_base)[0].rstrip("/")
        auth = http._endpoint(s.api_base)[1]
        if auth is not None:
            conn["extra_headers"] = {"Authorization": auth}
        key = key or "none"  # a server of your own may want no key; the client wants one
    if key:
        register(key)
        conn["api_key"] = key
    return conn


def _say(msg: str) -> None:
    print(f"metacog.elicit: {redact(msg)}", file=sys.stderr)


def _first_line(exc: BaseException) -> str:
    return redact((str(exc).strip().splitlines() or [type(exc).__name__])[0][:300])


def payload(doc: dict[str, Any], t: Task, batch: dict[str, Any]) -> dict[str, Any]:
    """The cached payload of one batch reply: an ordinary call's, at the batch price, without
    latency (raises like an ordinary call on a reply without choices)."""
    p = _extract_http(doc, t, math.nan, 1)
    if priced(t.model):
        try:
            p["cost_usd"] = token_cost(t.model, p["prompt_tokens"] or 0, p["completion_tokens"] or 0, batch=True)
        except Exception:  # noqa: BLE001 - unknown price: missing
            p["cost_usd"] = None
    end = next((batch.get(f"{st}_at") for st in ("completed", "expired", "cancelled", "failed")
                if batch.get(f"{st}_at")), None)
    return {**p, "latency_s": None, "backend": "batch", "backend_version": f"provider batch, {_backend_version()}",
            "batch_id": batch["id"], "batch_seconds": (end - batch["created_at"]) if end else None}


class _Run:
    """One phase's batch work on one cache: submit, record, poll, store."""

    def __init__(self, cache: Cache, s: Settings, counts, results: dict, bar, started: float):
        self.cache, self.s, self.counts, self.results, self.bar = cache, s, counts, results, bar
        self.started = started
        self.ep = endpoint_id(s.api_base)
        self.deadline = None if s.batch_wait is None else time.monotonic() + s.batch_wait
        self.rest: list[Task] = []
        self._litellm = None

    @property
    def litellm(self):
        if self._litellm is None:
            self._litellm = get_litellm()
        return self._litellm

    async def call(self, name: str, **kw):
        """``litellm.<name>(**kw)`` on the batch server, in a thread (litellm's are blocking), with
        the run's ``timeout`` per network operation and no retries of the client's own (a server
        that never answers would otherwise hold the run for litellm's ten minutes, three times)."""
        return await asyncio.to_thread(getattr(self.litellm, name), **_connection(self.s),
                                       timeout=self.s.timeout, max_retries=0, **kw)

    def _tick(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    async def model(self, tasks: list[Task]) -> None:
        """Get every task of one model into a batch (found or submitted), then collect them."""
        by_key = {t.key: t for t in tasks}
        waiting = set(by_key)
        held: dict[str, set[str]] = {}  # batch id -> our keys in it
        while waiting:
            for k, b in self.cache.pending_batches(waiting, self.ep).items():
                held.setdefault(b, set()).add(k)
                waiting.discard(k)
            if not waiting:
                break
            if not self.s.batch or self.ep in _NO_BATCH:
                self.rest += [by_key[k] for k in waiting]
                break
            mine = self.cache.claim([k for k in by_key if k in waiting], answered_since=self.started)
            taken = self.cache.pending_batches(mine, self.ep)  # recorded between our two looks
            for k, b in taken.items():
                held.setdefault(b, set()).add(k)
            mine = [k for k in mine if k not in taken]
            self.cache.release(taken)
            waiting -= set(mine) | set(taken)
            for chunk, data in chunks([by_key[k] for k in mine]):
                bid = await self.submit(chunk, data)
                if bid is None:
                    self.rest += chunk  # leases kept: the ordinary path asks them
                else:
                    held[bid] = {t.key for t in chunk}
            if waiting and not mine and not taken:
                self._landed(waiting)  # another run holds them: take its rows as they land
                if waiting:
                    await asyncio.sleep(WAIT_SECONDS)
        await asyncio.gather(*(self.collect(b, [by_key[k] for k in keys]) for b, keys in held.items()))

    def _landed(self, waiting: set[str]) -> None:
        for k, e in self.cache.get_many(waiting).items():
            if e.status == "ok" or e.created >= self.started:
                self.results[k] = (e.status, e.payload, True)
                self.counts.waited += 1
                self.counts.failed += e.status == "error"
                waiting.discard(k)
                self._tick()

    async def submit(self, tasks: list[Task], data: bytes) -> str | None:
        """Upload ``data`` (the input file of ``tasks``), create its batch and record it; None when
        the server refused."""
        model = tasks[0].model
        tag = keys_tag(self.ep, [t.key for t in tasks])
        try:
            b = await self._adopt(tag)
            if b is None:
                f = await self.call("create_file", file=("metacog-batch.jsonl", data), purpose="batch")
                b = await self.call("create_batch", completion_window="24h", endpoint="/v1/chat/completions",
                                    input_file_id=f.id, metadata={"source": "metacog.elicit", "metacog_keys": tag})
                self.counts.batches += 1
        except Exception as exc:  # noqa: BLE001 - any refusal: ask one by one
            if _status_code(exc) == 404:
                _NO_BATCH.add(self.ep)
                _say(f"the server of {model} has no batch endpoints (HTTP 404 on /files): asking its "
                     f"{len(tasks)} call(s) one by one, at the ordinary price.")
            else:
                _say(f"could not submit a batch of {len(tasks)} call(s) of {model} ({_first_line(exc)}): "
                     "asking them one by one.")
            return None
        self.cache.record_batch(b.id, model, self.ep, [t.key for t in tasks])
        if self.s.progress:
            _say(f"submitted batch {b.id}: {len(tasks)} call(s) of {model}.")
        return b.id

    async def _adopt(self, tag: str):
        """The server's latest batch (of the last 100) carrying ``tag`` that did not fail, or None."""
        try:
            page = await self.call("list_batches", limit=100)
        except Exception:  # noqa: BLE001 - no listing: nothing to adopt
            return None
        for b in getattr(page, "data", None) or []:
            if (getattr(b, "metadata", None) or {}).get("metacog_keys") == tag and \
                    b.status not in ("failed", "expired", "cancelled", "cancelling"):
                _say(f"found batch {b.id} on the server for these calls (an earlier run was stopped "
                     "before recording it): collecting it instead of submitting again.")
                return b
        return None

    async def collect(self, bid: str, tasks: list[Task]) -> None:
        """Wait for batch ``bid`` to end, store its replies, hand the others to ordinary calls."""
        delay, fails = max(0.01, self.s.batch_poll), 0
        while True:
            try:
                b = (await self.call("retrieve_batch", batch_id=bid)).model_dump()
                fails = 0
            except Exception as exc:  # noqa: BLE001
                if _status_code(exc) == 404:
                    _say(f"batch {bid} is unknown to the server (404): asking its {len(tasks)} call(s) "
                         "one by one.")
                    return self._store(bid, [], list(tasks), tasks)
                fails += 1
                if fails > self.s.max_retries:
                    return self._unfinished(bid, tasks, f"the server did not answer ({_first_line(exc)})")
                b = {"status": "unknown"}
            if b["status"] in TERMINAL:
                break
            if self.deadline is not None and time.monotonic() + delay > self.deadline:
                return self._unfinished(bid, tasks, f"still {b['status']}")
            await asyncio.sleep(delay)
            delay = min(60.0, delay * 1.5)
        try:
            lines = await self._lines(b.get("output_file_id"))
        except Exception as exc:  # noqa: BLE001 - the output stays on the server: collect it later
            if _status_code(exc) == 404:  # gone (outputs expire): nothing left to collect
                _say(f"the output of batch {bid} is gone from the server (404): asking its {len(tasks)} "
                     "call(s) one by one.")
                return self._store(bid, [], list(tasks), tasks)
            return self._unfinished(bid, tasks, f"{b['status']} but its output could not be read "
                                    f"({_first_line(exc)})")
        mine = {t.key: t for t in tasks}
        rows, bad = [], 0
        for line in lines:
            t = mine.get(line.get("custom_id"))
            resp = line.get("response") or {}
            if t is None or line.get("error") or resp.get("status_code") != 200:
                continue
            try:
                rows.append((t.key, t.model, "ok", t.request(),
                             redact_payload(payload(resp.get("body") or {}, t, b))))
            except Exception:  # noqa: BLE001 - a reply without choices: asked again one by one
                bad += 1
        got = {r[0] for r in rows}
        back = [t for t in tasks if t.key not in got]
        if back:
            why = await self._why(b)
            what = ("were not answered" if not why and not bad else f"failed ({why})" if not bad
                    else f"came back without a usable reply ({bad} without choices or message)")
            _say(f"batch {bid} {b['status']}: {len(back)} of its {len(tasks)} call(s) {what}; asking them "
                 "one by one.")
        self._store(bid, rows, back, tasks)

    async def _lines(self, file_id: str | None) -> list[dict[str, Any]]:
        if not file_id:
            return []
        raw = (await self.call("file_content", file_id=file_id)).content
        out = []
        for x in raw.splitlines():
            try:
                out.append(json.loads(x))
            except ValueError:
                continue  # a broken line: its call is asked one by one
        return out

    async def _why(self, b: dict[str, Any]) -> str:
        """The most common error of a batch (its error file or its errors), '' when none is given."""
        errs = [e.get("code") or e.get("message") for e in ((b.get("errors") or {}).get("data") or [])]
        try:
            errs += [(x.get("error") or {}).get("code") or f"HTTP {(x.get('response') or {}).get('status_code')}"
                     for x in await self._lines(b.get("error_file_id"))]
        except Exception:  # noqa: BLE001 - the reason is only informative
            pass
        errs = [str(e) for e in errs if e]
        return max(set(errs), key=errs.count) if errs else ""

    def _store(self, bid: str, rows: list, back: list[Task], tasks: list[Task]) -> None:
        stored = self.cache.finish_batch(bid, rows, [t.key for t in back])
        theirs = [r[0] for r in rows if r[0] not in stored]
        known = self.cache.get_many(theirs) if theirs else {}
        by_key = {t.key: t for t in tasks}
        for k, m, st, rq, pl in rows:
            if k in stored:
                self.results[k] = (st, pl, False)
                self.counts.done += 1
                self.counts.batched += 1
                self.counts.spent += pl.get("cost_usd") or 0.0
                self._tick()
            elif k in known:  # another run collected this batch first
                self.results[k] = (known[k].status, known[k].payload, True)
                self.counts.waited += 1
                self._tick()
            else:  # handed to ordinary calls by another run
                back.append(by_key[k])
        self.rest += back

    def _unfinished(self, bid: str, tasks: list[Task], why: str) -> None:
        _say(f"batch {bid} ({len(tasks)} call(s)) is {why}; it stays recorded: run again to collect it.")
        for t in tasks:
            self.results[t.key] = ("missing", {"error": f"waiting in provider batch {bid}: run again to "
                                               "collect it"}, False)
            self.counts.pending += 1
            self._tick()


async def ask(todo: list[Task], cache: Cache | None, s: Settings, counts, results: dict, bar,
              started: float) -> list[Task]:
    """Send the batchable tasks of ``todo`` in provider batches (``s.batch``), or collect the
    batches already recorded for them; fills ``results`` and returns the tasks left to ask one
    by one."""
    if cache is None or not todo:
        return todo
    try:
        if not s.batch and not cache.pending_batches([t.key for t in todo], endpoint_id(s.api_base)):
            return todo
        run = _Run(cache, s, counts, results, bar, started)
        groups: dict[str, list[Task]] = {}
        for t in todo:
            (groups.setdefault(t.model, []) if eligible(t.model, s) else run.rest).append(t)
        others = sorted({t.model for t in run.rest})
        if others and s.batch:
            _say(f"batch mode covers openai/<name> models without a router or extra options; asking "
                 f"{', '.join(others)} one by one.")
        await asyncio.gather(*(run.model(ts) for ts in groups.values()))
    except CacheError as exc:
        counts.broke(exc)
        return [t for t in todo if t.key not in results]
    return run.rest
