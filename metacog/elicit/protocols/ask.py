"""Ask one new model the calibration study's MMLU-Pro items the way the study asked its panel.

:func:`panel_items` draws the items (MMLU-Pro question, options, and the study's own key);
:func:`ask` asks them through the response cache (resumable: a re-run asks only what is not
stored; concurrent for a server, one at a time for a local GGUF model) and returns one tidy row
per item: model, item_id, decision, verbal_confidence, logit_confidence (the mean token
probability of the reply), correct, parse_status, finish_reason, completion_tokens, seconds,
error (why a failed call failed), raw_text (the reply) and reasoning_text (the reply without
its answer and confidence lines, :func:`~metacog.elicit.protocols.calibration_study.reasoning_part`).
A server reached over the direct HTTP path (:mod:`metacog.elicit.http`) must be
OpenAI-compatible; its token log-probabilities are requested (``logprobs``/``top_logprobs``)
and a server that returns none leaves ``logit_confidence`` missing.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache
import time
from pathlib import Path

import numpy as np
import pandas as pd

from metacog.elicit.cache import Cache, cache_key
from metacog.elicit.protocols import calibration_study as cs

COLUMNS = ["model", "item_id", "category", "decision", "key", "correct", "verbal_confidence",
           "logit_confidence", "parse_status", "finish_reason", "completion_tokens", "seconds", "error",
           "raw_text", "reasoning_text"]


@lru_cache(maxsize=2)
def _mmlu_pro(mirror: str | None) -> pd.DataFrame:
    return _read_mmlu_pro(mirror)


def mmlu_pro_table(mirror: str | None = None) -> pd.DataFrame:
    """Every MMLU-Pro test item in file order (a copy; read once per process): see
    :func:`_read_mmlu_pro`."""
    return _mmlu_pro(mirror).copy()


def _read_mmlu_pro(mirror: str | None = None) -> pd.DataFrame:
    """Every MMLU-Pro test item in file order: item_id (question_id as a string), category,
    question, options, key (the study's answer letter where it differs from MMLU-Pro's)."""
    from metacog.data.calibration_study import calibration_study_key_differences
    from metacog.data.fetch import locate
    from metacog.data.files import read_jsonl

    rows = read_jsonl(Path(locate("mmlu_pro", path=mirror)) / "test.jsonl")
    df = pd.DataFrame({"item_id": [str(r["question_id"]) for r in rows],
                       "category": [r["category"] for r in rows],
                       "question": [r["question"] for r in rows],
                       "options": [list(r["options"]) for r in rows],
                       "key": [r["answer"] for r in rows]})
    diff = calibration_study_key_differences().set_index("item_id")["study_answer"]
    df["key"] = df["item_id"].map(diff).fillna(df["key"])
    return df


def panel_items(n_items: int, seed: int = 0, mirror: str | None = None) -> pd.DataFrame:
    """``n_items`` MMLU-Pro questions drawn with ``seed`` (same draw for the same arguments), in
    draw order, so the first k items of a run stopped early are still a random sample.
    Columns as :func:`mmlu_pro_table`."""
    if int(n_items) < 1:
        raise ValueError(f"panel_items: n_items must be >= 1, got {n_items}.")
    df = mmlu_pro_table(mirror)
    n = min(int(n_items), len(df))
    pick = np.random.default_rng(int(seed)).choice(len(df), size=n, replace=False)
    return df.iloc[pick].reset_index(drop=True)


def _from_http(doc: dict, seconds: float) -> dict:
    from metacog.elicit import http
    from metacog.elicit.backend import EmptyReply

    f = http.extract(doc)
    if not f["has_choice"]:
        raise EmptyReply("the reply has no choices")
    if not f["has_message"]:
        raise EmptyReply("the reply's choice has no message")
    content = f.get("logprobs") or []
    lps = [c.get("logprob") for c in content if isinstance(c, dict)]
    top = {}
    if content and isinstance(content[0], dict):
        top = {t.get("token"): t.get("logprob") for t in content[0].get("top_logprobs") or []}
    return {"text": f.get("text"), "token_logprobs": lps or None, "top_logprobs": top,
            "finish_reason": f.get("finish_reason"), "prompt_tokens": f.get("prompt_tokens"),
            "completion_tokens": f.get("completion_tokens"), "seconds": seconds}


async def _ask_http(todo, api_base: str, model: str, concurrency: int, timeout: float, retries: int,
                    api_key: str | None, store, progress, backoff: float = 0.5) -> None:
    from metacog.elicit import http

    sem = asyncio.Semaphore(max(1, int(concurrency)))

    async def one(key, messages, params):
        async with sem:
            last = None
            for attempt in range(retries + 1):
                if attempt:
                    await asyncio.sleep(min(8.0, backoff * 2 ** (attempt - 1)))
                t0 = time.perf_counter()
                try:
                    doc = await http.complete(api_base, model, messages, params, timeout, api_key)
                    store(key, "ok", messages, params, _from_http(doc, time.perf_counter() - t0))
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a failed item becomes an error row
                    last = exc
            from metacog.elicit.backend import is_transient
            from metacog.elicit.redaction import redact
            # never an answer: the next run asks it again (transient or not, as it always did)
            store(key, "error", messages, params, {"error": redact(f"{type(last).__name__}: {last}"[:500]),
                                                   "error_type": type(last).__name__,
                                                   "transient": is_transient(last), "attempts": retries + 1})

    try:
        await asyncio.gather(*(one(*t) for t in todo))
    finally:
        await http.close()


def ask(items: pd.DataFrame, model: str, *, api_base: str | None = None, cache=None,
        concurrency: int = 4, timeout: float = 600.0, retries: int = 2, max_tokens: int | None = None,
        variant: str = "sampling", api_key: str | None = None, progress: bool = False,
        backoff: float = 0.5) -> pd.DataFrame:
    """Ask ``model`` every item of ``items`` (from :func:`panel_items`); one graded row per item.

    ``model`` is 'local/<name>' (the offline GGUF panel) or 'openai/<name>' with ``api_base``
    an OpenAI-compatible server. ``max_tokens`` caps the reply (None: the study's 1024).
    Replies are stored in ``cache`` (a :class:`~metacog.elicit.cache.Cache`, a folder, or None
    for the user's default cache) and replayed from there. A call is tried ``retries`` + 1
    times, ``timeout`` seconds each, waiting ``backoff`` s, then twice that, ... (at most 8 s)
    in between; a reply without choices or message, cut off or not JSON counts as failed. A
    failed call is a row with parse_status 'error' and its ``error``, never an answer: the next
    run asks it again.
    """
    import os

    proto = cs.protocol(variant)
    params = proto.params(max_tokens)
    local = model.startswith("local/")
    if not local and not api_base:
        raise ValueError(f"ask: model {model!r} needs api_base (an OpenAI-compatible server's URL).")
    store_obj = cache if isinstance(cache, Cache) else Cache(cache)
    jobs = []
    for it in items.itertuples(index=False):
        messages = proto.messages(it.question, list(it.options))
        jobs.append((cache_key(model, messages, params, proto.tag), messages))
    have = store_obj.get_many([k for k, _ in jobs])
    todo = [(k, m, params) for k, m in jobs if k not in have or have[k].status != "ok"]

    def store(key, status, messages, p, payload):
        store_obj.put(key, model, status, {"model": model, "messages": messages, "params": p,
                                           "template": proto.tag}, payload)
        if progress:
            print(f"[place] {model}: {status} {payload.get('seconds', 0):.1f} s", flush=True)

    if todo and local:
        from metacog.elicit.protocols.local_reply import reply

        for key, messages, p in todo:
            try:
                store(key, "ok", messages, p, reply(model, messages, max_tokens=p["max_tokens"]))
            except Exception as exc:  # noqa: BLE001
                store(key, "error", messages, p, {"error": f"{type(exc).__name__}: {exc}"[:500]})
    elif todo:
        from metacog.elicit.batch import run_coro

        run_coro(_ask_http(todo, api_base, model, concurrency, timeout, retries,
                           api_key or os.environ.get("OPENAI_API_KEY"), store, progress, backoff))
    have = store_obj.get_many([k for k, _ in jobs])
    if cache is not store_obj:
        store_obj.close()
    rows = []
    for it, (key, _) in zip(items.itertuples(index=False), jobs):
        e = have.get(key)
        ok = e is not None and e.status == "ok"
        p = e.payload if ok else {}
        error = None if ok else (e.payload.get("error") if e is not None else "not asked")
        text = p.get("text")
        decision = cs.extract_answer(text) if ok else None
        verbal = cs.extract_verbal_confidence(text) if ok else None
        rows.append({"model": model, "item_id": it.item_id, "category": it.category,
                     "decision": decision, "key": it.key,
                     "correct": float(decision == it.key) if ok else np.nan,
                     "verbal_confidence": verbal if verbal is not None and 0 <= verbal <= 1 else np.nan,
                     "logit_confidence": cs.logit_confidence(p.get("token_logprobs")) if ok else np.nan,
                     "parse_status": ("error" if not ok else "ok" if decision and verbal is not None
                                      else "unparseable"),
                     "finish_reason": p.get("finish_reason"),
                     "completion_tokens": p.get("completion_tokens"), "seconds": p.get("seconds"),
                     "error": error, "raw_text": text if ok else None,
                     "reasoning_text": cs.reasoning_part(text) if ok else None})
    out = pd.DataFrame(rows, columns=COLUMNS)
    out["logit_confidence"] = out["logit_confidence"].astype(float)
    return out


PROBES = ("verbal_confidence", "logit_confidence")


@lru_cache(maxsize=2)
def n_options(mirror: str | None = None) -> pd.Series:
    """Each MMLU-Pro item's number of options (without 'N/A'), by item_id."""
    t = _mmlu_pro(mirror)
    return pd.Series([len([o for o in opts if o != "N/A"]) for opts in t["options"]], index=t["item_id"])


def to_tidy(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`ask` as a tidy responses table (:mod:`metacog.tidy.schema`): one row
    per item x probe, ``verbal_confidence`` (the stated number) and ``logit_confidence`` (the
    mean token probability), as the study named them; benchmark 'mmlu_pro', domain the
    category, and ``n_options`` (the item's number of options, for the chance level)."""
    from metacog.tidy import schema

    keep = ["model", "item_id", "category", "decision", "correct", "parse_status", "finish_reason",
            "completion_tokens", "seconds", *[c for c in ("raw_text", "reasoning_text") if c in rows]]
    if "error" in rows and rows["error"].notna().any():
        keep.append("error")  # why calls failed (recorded runs of answered calls have no such column)
    base = rows[keep].rename(columns={"category": "domain"})
    base = base.assign(benchmark="mmlu_pro", sample=0,
                       n_options=base["item_id"].astype(str).map(n_options()).astype(float))
    parts = [base.assign(probe=p, confidence=rows[p].astype(float)) for p in PROBES]
    return schema.conform(pd.concat(parts, ignore_index=True), source="placement responses")
