"""Asking a batch of tasks: replay from the cache, lease, ask with bounded concurrency, store.

Identical keys are asked once. Keys another live run holds a lease on are
not asked here: this run waits for their rows (or takes the lease over when
that run dies), so two runs on one cache never ask the same call twice.

A cached failure is replayed unless it was transient (server unreachable,
timeout, 429/502/503/504: asked again) or ``retry_failed`` is set. When the
cache fails in the middle of a run (corrupted file, full disk), no further call
is started, the calls in flight finish, and their answers stay in the results
(``Counts.cache_error`` says what happened; the engine raises it afterwards
with the fetched rows attached), and the HTTP session is closed on every way out.

Rows are written by one thread with its own connection to the cache (:class:`_Writer`),
so that a slow commit never stalls the event loop and the replies of the other calls; a
call still counts as finished only once its row is committed.
"""

from __future__ import annotations

import asyncio
import functools
import math
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from metacog.elicit import http, provider_batch
from metacog.elicit.backend import call_one, get_litellm, priced, transient_payload
from metacog.elicit.cache import LEASE_SECONDS, Cache, CacheError
from metacog.elicit.cost import check_budget, estimate_cost
from metacog.elicit.redaction import current, redact, redact_payload
from metacog.elicit.tasks import Settings, Task, is_local

#: Seconds between looks at keys another run is asking.
POLL_SECONDS = 0.5


@dataclass
class Counts:
    """What a run did: asked, replayed, failed, skipped (budget), waited for (other run), spent."""

    done: int = 0
    cached: int = 0
    failed: int = 0
    skipped: int = 0
    waited: int = 0
    spent: float = 0.0
    cached_failed: int = 0  # failures replayed from the cache (final ones: re-asked with retry_failed)
    cache_error: str | None = None  # the cache failed mid-run: its message
    unasked: set = field(default_factory=set)  # keys not asked because the cache failed
    batches: int = 0  # provider batches submitted (metacog.elicit.provider_batch)
    batched: int = 0  # replies stored from provider batches (also counted in ``done``)
    pending: int = 0  # calls left waiting in a provider batch (batch_wait ran out)

    def broke(self, exc: CacheError) -> None:
        """Note the first cache failure of the run (later ones say nothing new)."""
        if self.cache_error is None:
            self.cache_error = str(exc)


class _Writer:
    """The run's cache writes, off the event loop: one thread with its own connection to the
    cache file, so a slow commit (a WAL checkpoint's fsync, a busy or network disk) stalls
    only the call being stored, not the replies of the others. Each row is still its own
    transaction, and a call counts as finished only once its row is written."""

    def __init__(self, cache: Cache):
        self.cache = cache.sibling()
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metacog-cache")

    async def __call__(self, counts: Counts, method: str, *args) -> None:
        """``cache.<method>(*args)`` in the writer thread; a CacheError marks the cache broken."""
        try:
            await asyncio.get_running_loop().run_in_executor(
                self.pool, functools.partial(getattr(self.cache, method), *args))
        except CacheError as exc:
            counts.broke(exc)

    def close(self) -> None:
        self.pool.shutdown(wait=True)  # a write whose caller was cancelled still lands whole
        self.cache.close()


def _not_asked(t: Task, results: dict, counts: Counts) -> None:
    results[t.key] = ("missing", {"error": "not asked: the response cache failed during the run"}, False)
    counts.unasked.add(t.key)


def _progress(total: int, desc: str, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="call", dynamic_ncols=True, leave=True)


def _usable(entry, s: Settings) -> bool:
    """A cached answer, or a cached failure that is final (not transient) when not retrying failures."""
    if entry is None:
        return False
    return entry.status == "ok" or not (s.retry_failed or transient_payload(entry.payload))


def _announce(todo: list[Task], s: Settings, counts: Counts) -> None:
    paid = [t for t in todo if not is_local(t.model)]
    if paid and (s.max_cost is not None or s.progress):
        est = estimate_cost(paid, s.api_base, batch=s.batch)
        if s.progress:
            total = est["cost_usd"].sum(min_count=1)
            print(f"metacog.elicit: {len(paid)} uncached remote call(s), estimated cost at most "
                  f"${total:.4f}" + (" at batch prices" if s.batch else "")
                  + (" (some models have no price)" if est["cost_usd"].isna().any() else ""), file=sys.stderr)
        if s.max_cost is not None:
            check_budget(est, s.max_cost - counts.spent)


async def _heartbeat(cache: Cache, stop: asyncio.Event, counts: Counts) -> None:
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), LEASE_SECONDS / 3)
        except asyncio.TimeoutError:
            try:
                await asyncio.to_thread(cache.renew)
            except CacheError as exc:
                counts.broke(exc)
                return


async def run_tasks(tasks: list[Task], cache: Cache | None, s: Settings, counts: Counts,
                    desc: str) -> dict[str, tuple[str, dict[str, Any], bool]]:
    """key -> (status, payload, from_cache) for every task."""
    unique: dict[str, Task] = {}
    for t in tasks:
        unique.setdefault(t.key, t)
    started = time.time()
    results: dict[str, tuple[str, dict[str, Any], bool]] = {}
    if counts.cache_error is not None:  # broken in an earlier phase: ask nothing more
        for t in unique.values():
            _not_asked(t, results, counts)
        return results
    try:
        known = cache.get_many(unique) if cache is not None else {}
    except CacheError as exc:
        counts.broke(exc)
        for t in unique.values():
            _not_asked(t, results, counts)
        return results
    todo: list[Task] = []
    sec = current()  # rows stored before a secret was known are redacted on the way out too
    for k, t in unique.items():
        e = known.get(k)
        if _usable(e, s):
            results[k] = (e.status, redact_payload(e.payload, sec), True)
        else:
            todo.append(t)
    counts.cached += len(results)
    n_failed = sum(1 for st, _, _ in results.values() if st == "error")
    counts.failed += n_failed
    counts.cached_failed += n_failed
    bar = _progress(len(unique), desc, s.progress)
    if bar is not None:
        bar.update(len(results))
    if todo:
        _announce(todo, s, counts)
        stop = asyncio.Event()
        beat = asyncio.create_task(_heartbeat(cache, stop, counts)) if cache is not None else None
        try:
            todo = await provider_batch.ask(todo, cache, s, counts, results, bar, started)
            if todo:
                await _ask_all(todo, cache, s, counts, results, bar, started)
        finally:
            stop.set()
            if beat is not None:
                await beat
    if bar is not None:
        bar.close()
    return results


def check_models(models: list[str], s: Settings, litellm) -> None:
    """ValueError naming the model when litellm cannot tell which provider serves it."""
    for m in dict.fromkeys(models):
        if is_local(m) or (s.router is not None and s.router.serves(m)):
            continue
        try:
            litellm.get_llm_provider(model=m, api_base=s.api_base)
        except Exception as exc:  # noqa: BLE001 - litellm raises its own BadRequestError
            first = redact((str(exc).strip().splitlines() or [type(exc).__name__])[0][:300])
            raise ValueError(
                f"model {m!r}: litellm does not know its provider ({first}). Use 'openai/<name>' with "
                "--api-base for an OpenAI-compatible server (vLLM, llama.cpp, ...), 'local/<name>' for "
                "the offline panel, or a provider prefix litellm lists.") from None


async def _ask_all(todo: list[Task], cache: Cache | None, s: Settings, counts: Counts,
                   results: dict, bar, started: float) -> None:
    via_litellm = [t.model for t in todo
                   if not (s.router is not None and s.router.serves(t.model))
                   and not (s.transport == "auto" and http.eligible(t.model, s.api_base, s.extra))]
    litellm = get_litellm() if via_litellm else None
    if via_litellm:
        check_models(via_litellm, s, litellm)
    for m in dict.fromkeys(t.model for t in todo):
        # Look prices up (importing litellm: seconds) before any call is in flight: done at the
        # first reply, it would block the loop and time the other calls out.
        priced(m)
    sems: dict[str, asyncio.Semaphore] = {}
    writer = None
    if cache is not None:
        try:
            writer = _Writer(cache)
        except CacheError as exc:
            counts.broke(exc)  # nothing is asked (_drain)

    async def worker(t: Task) -> None:
        # Local models run one call at a time (one process-wide llama.cpp lock anyway).
        width = 1 if is_local(t.model) else max(1, s.concurrency)
        sem = sems.setdefault(t.model, asyncio.Semaphore(width))
        async with sem:
            if counts.cache_error is not None:
                _not_asked(t, results, counts)
            elif s.max_cost is not None and counts.spent >= s.max_cost and not is_local(t.model):
                counts.skipped += 1
                results[t.key] = ("missing", {"error": "skipped: max_cost reached"}, False)
                if writer is not None:
                    await writer(counts, "release", [t.key])
            else:
                status, payload = await call_one(t, s, litellm)
                payload = redact_payload(payload)
                results[t.key] = (status, payload, False)  # kept even if the cache cannot store it
                if writer is not None and counts.cache_error is None:
                    await writer(counts, "put", t.key, t.model, status, t.request(), payload)
                counts.done += 1
                counts.failed += status == "error"
                c = payload.get("cost_usd")
                if c is not None and not (isinstance(c, float) and math.isnan(c)):
                    counts.spent += float(c)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(done=counts.done, cached=counts.cached, failed=counts.failed, refresh=False)

    try:
        await _drain(todo, cache, s, counts, results, bar, started, worker)
    finally:
        if writer is not None:
            writer.close()
        await http.close()


async def _gather(coros) -> None:
    """Run ``coros`` together; if one raises, cancel the others and wait for them (no orphan
    keeps using the HTTP session after it is closed)."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _drain(todo, cache, s, counts, results, bar, started, worker) -> None:
    """Ask what this run can lease; take the rows of what another run is asking as they land."""
    pending = {t.key: t for t in todo}
    while pending:
        if counts.cache_error is not None:
            for t in pending.values():
                _not_asked(t, results, counts)
            return
        try:
            mine = cache.claim(pending, answered_since=started) if cache is not None else list(pending)
        except CacheError as exc:
            counts.broke(exc)
            continue
        batch = [pending.pop(k) for k in mine]
        await _gather(worker(t) for t in batch)
        if not pending or counts.cache_error is not None:
            continue
        # The rest is being asked by another run: take its rows as they land.
        await asyncio.sleep(POLL_SECONDS)
        try:
            landed = cache.get_many(pending)
        except CacheError as exc:
            counts.broke(exc)
            continue
        for k in list(pending):
            e = landed.get(k)
            if e is not None and (e.status == "ok" or e.created >= started):
                results[k] = (e.status, e.payload, True)
                counts.waited += 1
                counts.failed += e.status == "error"
                del pending[k]
                if bar is not None:
                    bar.update(1)


def run_coro(coro):
    """Run ``coro`` to completion, also from inside a running loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target():
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc

    th = threading.Thread(target=target, name="metacog-elicit")
    th.start()
    th.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
