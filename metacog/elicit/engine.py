"""The elicitation engine: items x models x probes -> tidy response rows.

Calls go through litellm (:mod:`metacog.elicit.backend`) with a bounded number
in flight per model, a per-call timeout, and retries with exponential backoff
and jitter on 429, 5xx, timeouts and broken replies. Every finished call is
appended to the :class:`~metacog.elicit.cache.Cache` (secrets redacted);
replies already there are replayed without importing litellm. One failing
call never stops a run: it becomes a row with ``parse_status='error'`` and the
error text.

Counterfactual probes need the model's own correct answer with the context, so
a run asks in two phases: everything else first, then ``counterfactual`` for
the (model, item, sample) whose ``answer`` was graded correct.

The pieces: :mod:`~metacog.elicit.tasks` (what a call is),
:mod:`~metacog.elicit.backend` (one call), :mod:`~metacog.elicit.batch` (many,
through the cache), :mod:`~metacog.elicit.rows` (grading and rows),
:mod:`~metacog.elicit.cost`, :mod:`~metacog.elicit.redaction`.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Iterable, Sequence

import pandas as pd

from metacog.tidy import schema
from metacog.elicit import prompts
from metacog.elicit.backend import EmptyReply, call_one, get_litellm, is_retryable, priced  # noqa: F401
from metacog.elicit.batch import Counts, run_coro, run_tasks
from metacog.elicit.cache import Cache, CacheError
from metacog.elicit.cost import BudgetError, check_budget, estimate_cost  # noqa: F401
from metacog.elicit import http
from metacog.elicit.redaction import check_kwargs, from_env, redact, register_url  # noqa: F401
from metacog.elicit.rows import _row, default_grader  # noqa: F401
from metacog.elicit.tasks import (CODE_BENCHMARKS, DEFAULT_MODELS, LOCAL_PREFIX, Settings, Task,  # noqa: F401
                                  is_local, make_task)
from metacog.tidy.items import Item

def _check_inputs(items, models, probes, router=None) -> tuple[list[Item], list[str], list[str]]:
    items = list(items)
    bad = [i for i, it in enumerate(items) if not isinstance(it, Item)]
    if bad:
        raise ValueError(f"run: items[{bad[0]}] is a {type(items[bad[0]]).__name__}, not a "
                         "metacog.tidy.items.Item; build items with metacog.tidy.items.Item(...) or a loader.")
    ids = [(it.benchmark, it.item_id) for it in items]
    if len(set(ids)) != len(ids):
        dup = next(x for x in ids if ids.count(x) > 1)
        raise ValueError(f"run: item {dup[0]}:{dup[1]} appears more than once; item ids must be unique.")
    if isinstance(models, str):
        models = [m for m in models.split(",") if m]
    if isinstance(probes, str):
        probes = [p for p in probes.split(",") if p]
    models, probes = list(dict.fromkeys(models)), list(dict.fromkeys(probes))
    if not models:
        raise ValueError("run: no models given; e.g. models=['local/smollm2-135m'].")
    for m in models:
        if router is not None and router.serves(m):
            continue
        if "/" not in m:
            raise ValueError(f"run: model id {m!r} has no provider prefix; use litellm ids such as "
                             "'openai/gpt-4o-mini', 'openai/<name>' with api_base, or 'local/<name>'.")
        if is_local(m):
            from metacog.elicit.panel import get as get_model

            get_model(m)
    unknown = [p for p in probes if p not in prompts.PROBES]
    if unknown:
        raise ValueError(f"run: unknown probe(s) {unknown}; choose from {list(prompts.PROBES)}.")
    if not probes:
        raise ValueError(f"run: no probes given; choose from {list(prompts.PROBES)}.")
    return items, models, probes


def _check_sandbox(items: list[Item], probes: list[str], grader) -> None:
    """Code benchmarks are graded only in the sealed sandbox: refuse before asking anything."""
    answers = {"answer", "answer_no_context", "counterfactual"} & set(probes)
    if grader is None and answers and any(it.benchmark in CODE_BENCHMARKS for it in items):
        from metacog.benchmarks.sandbox import SandboxUnavailable, require

        try:
            require()
        except SandboxUnavailable as exc:
            raise ValueError(f"run: cannot grade {sorted({it.benchmark for it in items} & CODE_BENCHMARKS)}"
                             f" here: {exc}") from None


def run(items: Iterable[Item], models: Sequence[str] | str = DEFAULT_MODELS,
        probes: Sequence[str] | str = ("prospective", "answer"), *,
        cache: Cache | str | os.PathLike | None | bool = None, api_base: str | None = None,
        samples: int = 1, concurrency: int = 8, timeout: float = 60.0, max_retries: int = 4,
        backoff: float = 1.0, retry_failed: bool = False, max_cost: float | None = None,
        temperature: float = 0.0, max_tokens: int | None = None, seed: int = 0,
        logprobs: bool = True, grader: Callable[[Item, str | None, str], float] | None = None,
        progress: bool = True, router: Any = None, transport: str = "auto", batch: bool = False,
        batch_poll: float = 5.0, batch_wait: float | None = None,
        **litellm_kwargs: Any) -> pd.DataFrame:
    r"""Ask every model every probe on every item; return the tidy response table.

    Parameters
    ----------
    items : the benchmark items (:class:`metacog.tidy.items.Item`).
    models : litellm model ids: 'local/<name>' for the offline panel
        (:mod:`metacog.elicit.panel`), 'openai/<name>' with ``api_base`` for any
        OpenAI-compatible server, or any hosted model litellm knows (keys come
        from the environment only).
    probes : any of 'answer', 'answer_no_context', 'prospective',
        'counterfactual', 'c0', 'c1', 'c2'. 'counterfactual' also asks 'answer'
        and is asked only where that answer was correct.
    cache : a :class:`Cache`, a folder / .sqlite path, None for the default
        folder (``$METACOG_ELICIT_CACHE`` or ~/.cache/metacog/elicit), or False
        for no cache.
    api_base : the OpenAI-compatible server of 'openai/<name>' models, or 'os.environ/NAME' to
        read it from the environment (then redacted like a key); a password in the URL is sent
        as Basic auth and redacted from everything stored or printed.
    samples : repeats per call (sample s uses seed ``seed + s``).
    concurrency : requests in flight per model. timeout : seconds per call.
    max_retries, backoff : retries on 429/5xx/timeouts, first wait ~``backoff`` s, doubling, jittered.
    retry_failed : re-ask calls whose cached result is a final failure (transient ones, such as
        connection refused, timeouts, 429/502/503/504, are asked again without it).
    max_cost : refuse to start (BudgetError) when the estimated cost of
        uncached paid calls exceeds it; stop asking once spent.
    logprobs : ask for token log-probabilities (default True): judgments keep the first-token
        ``p_yes``; every reply keeps ``mean_token_p`` (the mean probability of its tokens) and a
        multiple-choice answer ``option_probs`` (each option letter's probability at the answer
        token, JSON). Answer probes ask for them outside the cache key, so replies cached before
        replay (with these columns missing); on the local panel they cost one more evaluation
        per reply token (llama.cpp re-scores the reply). Servers that send none leave them missing.
    grader : ``f(item, reply_text, probe) -> 1.0/0.0/NaN`` for answer probes
        (default :func:`default_grader`).
    router : a litellm Router ``model_list`` file (YAML), a dict with
        ``model_list`` (and optional ``fallbacks``, ``routing_strategy``), or a
        :class:`metacog.elicit.router.RouterSpec`: the model names it defines
        are asked through its deployments, within their rpm/tpm limits.
    transport : 'auto' (default) asks ``openai/<name>`` models with ``api_base``
        directly over HTTP (one shared session, far less CPU per call than
        litellm); 'litellm' sends every call through litellm.
    batch : send the uncached calls of ``openai/<name>`` models as provider batch jobs (OpenAI's
        or an OpenAI-compatible server's files and batches endpoints, at the batch price) and
        wait for them; replies a batch lacks are asked one by one
        (:mod:`metacog.elicit.provider_batch`). Needs the cache. A rerun collects the batches a
        killed run submitted, with or without ``batch``.
    batch_poll : seconds before the first look at a batch (then 1.5 times longer, at most 60).
    batch_wait : stop waiting for batches after this many seconds (their calls are then rows
        with parse_status 'missing'; the next run collects them); None waits until they end.

    Returns
    -------
    DataFrame conforming to :mod:`metacog.tidy.schema`, plus the columns 'attempts'
    and 'error'. One row per model x item x probe x sample that was asked.

    Examples
    --------
    Without a network: litellm's ``mock_response`` stands in for the model's reply.

    >>> import os; os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    >>> from metacog.benchmarks import load_items
    >>> items = load_items("audit", n_items=2, seed=0)
    >>> df = run(items, ["openai/gpt-4o-mini"], ["c0"], cache=False, progress=False,
    ...          mock_response="Final answer: Yes\\nConfidence: 0.9")
    >>> df[["item_id", "probe", "decision", "confidence", "parse_status"]]
             item_id probe decision  confidence parse_status
    0  audit-cul-036    c0      yes         0.9           ok
    1  audit-his-017    c0      yes         0.9           ok
    """
    if router is not None:
        from metacog.elicit.router import RouterSpec, load_router

        router = router if isinstance(router, RouterSpec) else load_router(router)
    items, models, probes = _check_inputs(items, models, probes, router)
    check_kwargs(litellm_kwargs)
    if samples < 1:
        raise ValueError(f"run: samples must be >= 1, got {samples}.")
    if concurrency < 1:
        raise ValueError(f"run: concurrency must be >= 1, got {concurrency}.")
    if timeout <= 0:
        raise ValueError(f"run: timeout must be positive, got {timeout}.")
    if not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"run: max_retries must be an integer >= 0, got {max_retries!r}.")
    _check_sandbox(items, probes, grader)
    api_base = from_env(api_base, "api_base (--api-base)")  # 'os.environ/NAME': the value is a secret
    register_url(api_base)
    if batch and cache is False:
        raise ValueError("run: batch=True needs the response cache (it records the batch ids); "
                         "drop cache=False.")
    if not (batch_poll > 0) or (batch_wait is not None and not batch_wait >= 0):
        raise ValueError(f"run: batch_poll must be > 0 and batch_wait >= 0 or None, got {batch_poll!r}, "
                         f"{batch_wait!r}.")
    if transport not in ("auto", "litellm"):
        raise ValueError(f"run: transport must be 'auto' or 'litellm', got {transport!r}.")
    s = Settings(api_base=api_base, concurrency=concurrency, timeout=timeout, max_retries=max_retries,
                 backoff=backoff, retry_failed=retry_failed, max_cost=max_cost,
                 temperature=temperature, max_tokens=max_tokens, seed=seed, logprobs=logprobs,
                 progress=progress, extra=dict(litellm_kwargs), router=router, transport=transport,
                 batch=batch, batch_poll=batch_poll, batch_wait=batch_wait)
    grader = grader or default_grader
    own_cache = False
    if cache is False:
        store = None
    elif isinstance(cache, Cache):
        store = cache
    else:
        store = Cache(cache)
        own_cache = True
    try:
        df = run_coro(_run_async(items, models, probes, store, s, samples, grader))
    finally:
        if own_cache:
            store.close()
    c = df.attrs.get("counts", {})
    if c.get("cache_error"):
        unasked = df.attrs.pop("unasked", set())
        partial = df[~df["cache_key"].isin(unasked)].reset_index(drop=True)
        partial.attrs = dict(df.attrs)
        exc = CacheError(f"{c['cache_error']} It failed during the run: {c['done']} call(s) were asked "
                         f"and {c['cached']} replayed, all in this error's .partial table "
                         f"({len(partial)} row(s)); {len(unasked)} call(s) were not asked.")
        exc.partial, exc.reason = partial, c["cache_error"]
        raise exc
    return df


async def _run_async(items: list[Item], models: list[str], probes: list[str], store: Cache | None,
                     s: Settings, samples: int, grader: Callable) -> pd.DataFrame:
    try:
        return await _phases(items, models, probes, store, s, samples, grader)
    finally:
        await http.close()  # on every way out, also when a phase raised or was cancelled


async def _phases(items: list[Item], models: list[str], probes: list[str], store: Cache | None,
                  s: Settings, samples: int, grader: Callable) -> pd.DataFrame:
    first = [p for p in probes if p != "counterfactual"]
    if "counterfactual" in probes and "answer" not in first:
        first.append("answer")
    order = {p: i for i, p in enumerate(prompts.PROBES)}
    first.sort(key=order.__getitem__)
    tasks: list[Task] = []
    n = 0
    # Model-major interleaving keeps every model's queue fed from the start.
    for it in items:
        for probe in first:
            for m in models:
                for k in range(samples):
                    tasks.append(make_task(m, it, probe, k, s, n))
                    n += 1
    counts = Counts()
    res = await run_tasks(tasks, store, s, counts, "elicit")
    rows = [_row(t, *res[t.key][:2], grader) for t in tasks]

    if "counterfactual" in probes:
        correct_answers = {}
        for t, r in zip(tasks, rows):
            if t.probe == "answer" and r.get("correct") == 1.0:
                correct_answers[(t.model, t.item.benchmark, t.item.item_id, t.sample)] = (t, r)
        cf = [make_task(t.model, t.item, "counterfactual", t.sample, s, n + i,
                        own_answer=r["decision"])
              for i, (t, r) in enumerate(correct_answers.values())]
        if cf:
            res2 = await run_tasks(cf, store, s, counts, "counterfactual")
            tasks += cf
            rows += [_row(t, *res2[t.key][:2], grader) for t in cf]

    df = pd.DataFrame(rows)
    if df.empty:
        out = schema.empty()
        out.attrs["counts"] = _counts(counts)
        return out
    # Judgments are scored against the same model's attempt without the context.
    nc = df[df["probe"] == "answer_no_context"].set_index(["model", "benchmark", "item_id", "sample"])
    if not nc.empty and "correct" in df:
        judg = df["probe"].isin(["prospective", "counterfactual"])
        idx = pd.MultiIndex.from_frame(df.loc[judg, ["model", "benchmark", "item_id", "sample"]])
        df.loc[judg, "correct"] = nc["correct"].reindex(idx).to_numpy()
    for col in ("correct", "confidence", "p_yes", "cost_usd", "latency_s"):
        if col not in df:
            df[col] = math.nan
        df[col] = pd.to_numeric(df[col], errors="coerce")
    df["attempts"] = pd.to_numeric(df["attempts"], errors="coerce").astype("Int64")
    df["error"] = df["error"].astype("string")
    df["_o"] = df["probe"].map(order)
    mi = {m: i for i, m in enumerate(models)}
    df["_m"] = df["model"].map(mi)
    pos = {(it.benchmark, it.item_id): i for i, it in enumerate(items)}
    df["_i"] = [pos[(b, i)] for b, i in zip(df["benchmark"], df["item_id"])]
    df = df.sort_values(["_m", "_o", "_i", "sample"], kind="stable").drop(columns=["_o", "_m", "_i"])
    df = df.reset_index(drop=True)
    out = schema.conform(df, source="metacog.elicit.run")
    out.attrs["counts"] = _counts(counts)
    if counts.unasked:
        out.attrs["unasked"] = set(counts.unasked)
    return out


def _counts(counts: Counts) -> dict[str, Any]:
    return {"done": counts.done, "cached": counts.cached, "failed": counts.failed,
            "cached_failed": counts.cached_failed, "skipped": counts.skipped, "waited": counts.waited,
            "spent_usd": counts.spent, "not_asked": len(counts.unasked), "cache_error": counts.cache_error,
            "batches": counts.batches, "batched": counts.batched, "pending_batch": counts.pending}
