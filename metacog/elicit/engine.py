"""The elicitation engine: items x models x probes -> tidy response rows.

Calls go through litellm (``litellm.acompletion``) with a bounded number in
flight per model, a per-call timeout, and retries with exponential backoff and
jitter on 429, 5xx, timeouts and broken replies. Every finished call is
appended to the :class:`~metacog.elicit.cache.Cache`; replies already there are
replayed without importing litellm. One failing call never stops a run: it
becomes a row with ``parse_status='error'`` and the error text.

Counterfactual probes need the model's own correct answer with the context, so
a run asks in two phases: everything else first, then ``counterfactual`` for
the (model, item, sample) whose ``answer`` was graded correct.
"""

from __future__ import annotations

import asyncio
import functools
import math
import os
import random
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from metacog import schema
from metacog.elicit import parse, prompts
from metacog.elicit.cache import Cache, cache_key
from metacog.items import Item

# litellm fetches its price map from GitHub at import unless told not to; set this as
# early as possible, in case anything else in the process imports litellm first.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

DEFAULT_MODELS = ("local/smollm2-135m",)
LOCAL_PREFIX = "local/"

# Key-like strings never leave this module in error messages.
_SECRET = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|AKIA[0-9A-Z]{12,}|AIza[0-9A-Za-z_\-]{20,}|(?i:bearer)\s+[A-Za-z0-9._\-]{8,}"
    r"|xox[abp]-[A-Za-z0-9\-]{8,}|gh[pousr]_[A-Za-z0-9]{20,})"
)


def redact(text: str) -> str:
    """Replace key-like substrings (sk-..., AKIA..., Bearer ...) with '[redacted]'."""
    return _SECRET.sub("[redacted]", str(text))


#: Keyword-argument name parts that suggest a credential; run() refuses them.
_SECRET_ARGS = {"key", "token", "secret", "password", "credential", "credentials",
                "authorization", "headers"}


class BudgetError(RuntimeError):
    """The estimated cost of the calls still to make exceeds ``max_cost``."""


# ---------------------------------------------------------------------------
# litellm, imported lazily (the import takes seconds and must stay offline)
# ---------------------------------------------------------------------------

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
            from metacog.elicit.local import register

            register(litellm)
            _litellm = litellm
    return _litellm


# ---------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------


@dataclass
class Task:
    """One call to make (or replay): model x item x probe x sample."""

    model: str
    item: Item
    probe: str
    sample: int
    template: prompts.Template
    messages: list[dict[str, str]]
    params: dict[str, Any]
    key: str
    order: int = 0


@dataclass
class Settings:
    api_base: str | None = None
    concurrency: int = 8
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 1.0  # first retry waits about this many seconds (x0.5..1.5 jitter), doubling
    max_backoff: float = 30.0
    retry_failed: bool = False
    max_cost: float | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int = 0
    logprobs: bool = True
    progress: bool = True
    extra: dict[str, Any] = field(default_factory=dict)  # further litellm kwargs (never keys)


def is_local(model: str) -> bool:
    return model.startswith(LOCAL_PREFIX)


def _params(template: prompts.Template, model: str, sample: int, s: Settings) -> dict[str, Any]:
    p: dict[str, Any] = {
        "temperature": s.temperature,
        "max_tokens": int(s.max_tokens or template.max_tokens),
        "seed": int(s.seed) + int(sample),
    }
    if template.kind in ("judgment", "confidence") and s.logprobs and not is_local(model):
        p["logprobs"] = True
        p["top_logprobs"] = 5
    p.update(s.extra)
    return p


def make_task(model: str, item: Item, probe: str, sample: int, s: Settings, order: int = 0,
              **fill: Any) -> Task:
    t = prompts.get(probe)
    if item.benchmark in CODE_BENCHMARKS and t.id in ("answer", "answer_no_context"):
        t = prompts.get(f"{t.id}_code")  # ask for a code block; the probe keeps its name
    messages = t.render(item, **fill)
    params = _params(t, model, sample, s)
    return Task(model, item, t.id.removesuffix("_code"), sample, t, messages, params,
                cache_key(model, messages, params, t.tag), order)


# ---------------------------------------------------------------------------
# One call with retries
# ---------------------------------------------------------------------------

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


@functools.lru_cache(maxsize=None)
def priced(model: str) -> bool:
    """True when litellm's offline cost map has a per-token price for ``model``."""
    if is_local(model):
        return True
    try:
        info = get_litellm().get_model_info(model)
    except Exception:  # noqa: BLE001
        return False
    return info.get("input_cost_per_token") is not None


class EmptyReply(RuntimeError):
    """The provider answered 200 but with no choices."""


def _backend_version(litellm=None) -> str:
    return f"litellm {_litellm_version()}"


@functools.lru_cache(maxsize=None)
def _litellm_version() -> str:
    try:
        from importlib.metadata import version

        return version("litellm")
    except Exception:  # noqa: BLE001
        return "unknown"


def _extract(resp: Any, task: Task, latency: float, attempts: int, litellm) -> dict[str, Any]:
    choices = getattr(resp, "choices", None) or []
    if not choices:
        raise EmptyReply("the reply has no choices")
    ch = choices[0]
    msg = getattr(ch, "message", None)
    text = getattr(msg, "content", None) if msg is not None else None
    reasoning = getattr(msg, "reasoning_content", None) if msg is not None else None
    p_yes = None
    top = None
    lp = getattr(ch, "logprobs", None)
    if lp is not None:
        content = lp.get("content") if isinstance(lp, dict) else getattr(lp, "content", None)
        if content:
            content = [c if isinstance(c, dict) else c.model_dump() for c in content]
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
        "prompt_tokens": getattr(usage, "prompt_tokens", None),
        "completion_tokens": getattr(usage, "completion_tokens", None),
        "cost_usd": cost,
        "latency_s": latency,
        "attempts": attempts,
        "response_model": getattr(resp, "model", None),
        "backend": "llama_cpp" if local else "litellm",
        "backend_version": hidden.get("backend_version") or _backend_version(litellm),
    }


async def call_one(task: Task, s: Settings, litellm=None, sleep=asyncio.sleep) -> tuple[str, dict[str, Any]]:
    """Ask one task with retries; returns ('ok'|'error', payload). Never raises for a failed call."""
    litellm = litellm or get_litellm()
    kwargs = dict(task.params)
    if s.api_base and not is_local(task.model):
        kwargs["api_base"] = s.api_base
    if is_local(task.model):
        t = task.template
        kwargs["metacog_protocol"] = {
            "kind": t.kind, "final_prefix": t.final_prefix, "choices": list(t.choices),
            "confidence_prefix": t.confidence_prefix, "template": t.tag,
        }
        timeout = None  # CPU generation cannot hang on a network; a timed-out thread would keep running
    else:
        kwargs["drop_params"] = True
        timeout = s.timeout
    rng = random.Random(f"{task.key}")
    t_first = time.perf_counter()
    last: BaseException | None = None
    for attempt in range(1, s.max_retries + 2):
        t0 = time.perf_counter()
        try:
            coro = litellm.acompletion(model=task.model, messages=task.messages, timeout=timeout,
                                       max_retries=0, num_retries=0, **kwargs)
            resp = await (coro if timeout is None else asyncio.wait_for(coro, timeout + 1.0))
            return "ok", _extract(resp, task, time.perf_counter() - t0, attempt, litellm)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure becomes a row
            last = exc
            if not is_retryable(exc) or attempt > s.max_retries:
                break
            delay = min(s.max_backoff, s.backoff * 2 ** (attempt - 1)) * rng.uniform(0.5, 1.5)
            await sleep(delay)
    exc = last
    retryable = is_retryable(exc)
    reason = "retries exhausted" if retryable else "not retryable"
    return "error", {
        "error": redact(f"{type(exc).__name__}: {exc}")[:2000],
        "error_type": type(exc).__name__,
        "status_code": _status_code(exc),
        "final_status": f"failed after {attempt} attempt(s): {reason}",
        "attempts": attempt,
        "latency_s": time.perf_counter() - t_first,
        "backend": "llama_cpp" if is_local(task.model) else "litellm",
        "backend_version": _backend_version(litellm),
    }


# ---------------------------------------------------------------------------
# Cost
# ---------------------------------------------------------------------------


def estimate_cost(tasks: Sequence[Task], api_base: str | None = None) -> pd.DataFrame:
    """Upper-bound cost of ``tasks`` per model from litellm's offline price map.

    Prompt tokens are estimated as characters / 4; completion tokens as
    ``max_tokens``. Local models cost 0; models the map does not know cost NaN
    (0 when ``api_base`` points at your own server).
    """
    by: dict[str, list[int]] = {}
    for t in tasks:
        chars = sum(len(m["content"]) for m in t.messages)
        acc = by.setdefault(t.model, [0, 0, 0])
        acc[0] += 1
        acc[1] += chars // 4 + 4 * len(t.messages)
        acc[2] += int(t.params.get("max_tokens", 128))
    rows = []
    litellm = None
    for model, (n, pt, ct) in by.items():
        if is_local(model):
            cost = 0.0
        else:
            litellm = litellm or get_litellm()
            try:
                pc, cc = litellm.cost_per_token(model=model, prompt_tokens=pt, completion_tokens=ct)
                cost = float(pc + cc)
            except Exception:  # noqa: BLE001 - not in the price map
                cost = 0.0 if api_base else math.nan
        rows.append({"model": model, "calls": n, "prompt_tokens": pt, "completion_tokens": ct,
                     "cost_usd": cost})
    return pd.DataFrame(rows, columns=["model", "calls", "prompt_tokens", "completion_tokens", "cost_usd"])


def check_budget(est: pd.DataFrame, max_cost: float | None) -> None:
    if max_cost is None or est.empty:
        return
    unknown = est.loc[est["cost_usd"].isna(), "model"].tolist()
    if unknown:
        raise BudgetError(
            f"--max-cost {max_cost}: no price for model(s) {unknown} in litellm's offline cost map; "
            "pass --api-base for your own server, or drop --max-cost to run without a cap."
        )
    total = float(est["cost_usd"].sum())
    if total > max_cost:
        raise BudgetError(
            f"estimated cost ${total:.4f} of {int(est['calls'].sum())} uncached call(s) exceeds "
            f"max_cost ${max_cost:.4f}:\n{est.to_string(index=False)}\n"
            "Raise --max-cost, lower --n-items, or use cheaper models."
        )


# ---------------------------------------------------------------------------
# Running a batch of tasks
# ---------------------------------------------------------------------------


@dataclass
class Counts:
    done: int = 0
    cached: int = 0
    failed: int = 0
    skipped: int = 0
    spent: float = 0.0


def _progress(total: int, desc: str, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="call", dynamic_ncols=True, leave=True)


async def _run_tasks(tasks: list[Task], cache: Cache | None, s: Settings, counts: Counts,
                     desc: str) -> dict[str, tuple[str, dict[str, Any], bool]]:
    """key -> (status, payload, from_cache). Identical keys are asked once."""
    unique: dict[str, Task] = {}
    for t in tasks:
        unique.setdefault(t.key, t)
    known = cache.get_many(unique) if cache is not None else {}
    results: dict[str, tuple[str, dict[str, Any], bool]] = {}
    todo: list[Task] = []
    for k, t in unique.items():
        e = known.get(k)
        if e is not None and (e.status == "ok" or not s.retry_failed):
            results[k] = (e.status, e.payload, True)
        else:
            todo.append(t)
    n_cached = len(results)
    counts.cached += n_cached
    counts.failed += sum(1 for st, _, _ in results.values() if st == "error")
    bar = _progress(len(unique), desc, s.progress)
    if bar is not None:
        bar.update(n_cached)
        bar.set_postfix(done=counts.done, cached=counts.cached, failed=counts.failed, refresh=False)
    if todo:
        paid = [t for t in todo if not is_local(t.model)]
        if paid and (s.max_cost is not None or s.progress):
            est = estimate_cost(paid, s.api_base)
            if s.progress:
                total = est["cost_usd"].sum(min_count=1)
                print(f"metacog.elicit: {len(paid)} uncached remote call(s), estimated cost at most "
                      f"${total:.4f}" + (" (some models have no price)" if est["cost_usd"].isna().any()
                                         else ""), file=sys.stderr)
            if s.max_cost is not None:
                check_budget(est, s.max_cost - counts.spent)
        litellm = get_litellm()
        sems: dict[str, asyncio.Semaphore] = {}

        async def worker(t: Task) -> None:
            # Local models run one call at a time (one process-wide llama.cpp lock anyway).
            width = 1 if is_local(t.model) else max(1, s.concurrency)
            sem = sems.setdefault(t.model, asyncio.Semaphore(width))
            async with sem:
                if s.max_cost is not None and counts.spent >= s.max_cost and not is_local(t.model):
                    counts.skipped += 1
                    results[t.key] = ("missing", {"error": "skipped: max_cost reached"}, False)
                else:
                    status, payload = await call_one(t, s, litellm)
                    request = {"model": t.model, "messages": t.messages, "params": t.params,
                               "template": t.template.tag}
                    if cache is not None:
                        cache.put(t.key, t.model, status, request, payload)
                    results[t.key] = (status, payload, False)
                    counts.done += 1
                    if status == "error":
                        counts.failed += 1
                    c = payload.get("cost_usd")
                    if c is not None and not (isinstance(c, float) and math.isnan(c)):
                        counts.spent += float(c)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(done=counts.done, cached=counts.cached, failed=counts.failed,
                                refresh=False)

        # Interleave models so each model's semaphore stays busy.
        await asyncio.gather(*(worker(t) for t in todo))
    if bar is not None:
        bar.close()
    return results


def _run_coro(coro):
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


# ---------------------------------------------------------------------------
# Grading and rows
# ---------------------------------------------------------------------------


def default_grader(item: Item, reply: str | None, probe: str) -> float:
    """1.0/0.0 when the reply answers ``item`` correctly, NaN when it cannot be graded.

    Uses :func:`metacog.benchmarks.grading.grade` when available (options hidden
    for 'answer_no_context'; SQuAD counts F1 >= 0.5 as correct, and so do the
    partial-credit LegalBench tasks, whose grader returns an F1), else a
    normalised exact/contained match against the gold answer(s). The result is
    always binary: the judgments are scored against it.
    """
    if reply is None:
        return math.nan
    try:
        from metacog.benchmarks.grading import grade
    except ImportError:
        grade = None
    if grade is not None:
        kw: dict[str, Any] = {}
        if item.benchmark == "mmlu_pro":
            kw["options_shown"] = probe != "answer_no_context"
        if item.benchmark == "squad":
            kw["threshold"] = 0.5
        try:
            score = float(grade(item.benchmark, reply, item, **kw))
            return score if score in (0.0, 1.0) or math.isnan(score) else float(score >= 0.5)
        except ValueError:
            pass  # unknown benchmark: fall through
        except Exception:  # noqa: BLE001 - a grader crash must not lose the row
            return math.nan
    return _simple_grade(item.gold, parse.parse_answer(reply).decision)


def _norm(x: Any) -> str:
    s = re.sub(r"[^\w\s]", " ", str(x).lower())
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def _simple_grade(gold: Any, answer: str | None) -> float:
    if answer is None or gold is None:
        return math.nan
    if isinstance(gold, bool):
        d = parse._choice_of(answer, ("Yes", "No"))
        return math.nan if d is None else float((d == "yes") == gold)
    golds = gold if isinstance(gold, (list, tuple)) else [gold]
    a = _norm(answer)
    return float(any(_norm(g) and (_norm(g) == a or f" {_norm(g)} " in f" {a} ") for g in golds))


def _gold_yes(gold: Any) -> bool | None:
    if isinstance(gold, bool):
        return gold
    if isinstance(gold, (int, np.integer)) and gold in (0, 1):
        return bool(gold)
    if isinstance(gold, str) and gold.strip().lower() in ("yes", "no", "true", "false"):
        return gold.strip().lower() in ("yes", "true")
    return None


#: Benchmarks whose attempts are code: they are asked with the '*_code' answer templates, and
#: conformance means "wrote code", not "wrote 'Final answer:'".
CODE_BENCHMARKS = frozenset({"scicode"})


def _row(t: Task, status: str, payload: dict[str, Any], grader: Callable) -> dict[str, Any]:
    tpl = t.template
    row: dict[str, Any] = {
        "model": t.model, "item_id": t.item.item_id, "benchmark": t.item.benchmark,
        "probe": t.probe, "sample": t.sample, "domain": t.item.domain, "subject": t.item.subject,
        "template_version": tpl.tag, "cache_key": t.key,
        "backend": payload.get("backend"), "backend_version": payload.get("backend_version"),
        "latency_s": payload.get("latency_s"), "attempts": payload.get("attempts"),
        "error": payload.get("error"),
    }
    if status != "ok":
        row["parse_status"] = "error" if status == "error" else "missing"
        return row
    text = payload.get("text")
    if tpl.kind == "answer" and t.item.benchmark in CODE_BENCHMARKS:
        p = parse.parse_code(text)
    elif tpl.kind == "answer":
        p = parse.parse_answer(text, tpl.final_prefix)
    else:
        p = parse.parse_judgment(text, tpl.choices, tpl.final_prefix, tpl.confidence_prefix)
    reasoning = p.reasoning
    rc = payload.get("reasoning_content")
    if rc:
        reasoning = f"{rc.strip()}\n\n{reasoning}".strip()
    p_yes = payload.get("p_yes")
    row.update({
        "decision": p.decision, "parse_status": p.status, "raw_text": text,
        "reasoning_text": reasoning, "p_yes": p_yes,
        "prompt_tokens": payload.get("prompt_tokens"),
        "completion_tokens": payload.get("completion_tokens"),
        "cost_usd": payload.get("cost_usd"),
    })
    if tpl.kind == "judgment":
        row["confidence"] = {"yes": 1.0, "no": 0.0}.get(p.decision, math.nan)
    elif tpl.kind == "confidence":
        row["confidence"] = p.confidence if p.confidence is not None else math.nan
        gy = _gold_yes(t.item.gold)
        if gy is not None and p.decision in ("yes", "no"):
            row["correct"] = float((p.decision == "yes") == gy)
    else:
        row["correct"] = grader(t.item, text, t.probe)
    return row


# ---------------------------------------------------------------------------
# The public entry point
# ---------------------------------------------------------------------------


def _check_inputs(items, models, probes) -> tuple[list[Item], list[str], list[str]]:
    items = list(items)
    bad = [i for i, it in enumerate(items) if not isinstance(it, Item)]
    if bad:
        raise ValueError(f"run: items[{bad[0]}] is a {type(items[bad[0]]).__name__}, not a "
                         "metacog.items.Item; build items with metacog.items.Item(...) or a loader.")
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
        if "/" not in m:
            raise ValueError(f"run: model id {m!r} has no provider prefix; use litellm ids such as "
                             "'openai/gpt-4o-mini', 'openai/<name>' with api_base, or 'local/<name>'.")
        if is_local(m):
            from metacog.models import get as get_model

            get_model(m)
    unknown = [p for p in probes if p not in prompts.PROBES]
    if unknown:
        raise ValueError(f"run: unknown probe(s) {unknown}; choose from {list(prompts.PROBES)}.")
    if not probes:
        raise ValueError(f"run: no probes given; choose from {list(prompts.PROBES)}.")
    return items, models, probes


def run(items: Iterable[Item], models: Sequence[str] | str = DEFAULT_MODELS,
        probes: Sequence[str] | str = ("prospective", "answer"), *,
        cache: Cache | str | os.PathLike | None | bool = None, api_base: str | None = None,
        samples: int = 1, concurrency: int = 8, timeout: float = 60.0, max_retries: int = 4,
        backoff: float = 1.0, retry_failed: bool = False, max_cost: float | None = None,
        temperature: float = 0.0, max_tokens: int | None = None, seed: int = 0,
        logprobs: bool = True, grader: Callable[[Item, str | None, str], float] | None = None,
        progress: bool = True, **litellm_kwargs: Any) -> pd.DataFrame:
    """Ask every model every probe on every item; return the tidy response table.

    Parameters
    ----------
    items : the benchmark items (:class:`metacog.items.Item`).
    models : litellm model ids: 'local/<name>' for the offline panel
        (:mod:`metacog.models`), 'openai/<name>' with ``api_base`` for any
        OpenAI-compatible server, or any hosted model litellm knows (keys come
        from the environment only).
    probes : any of 'answer', 'answer_no_context', 'prospective',
        'counterfactual', 'c0', 'c1', 'c2'. 'counterfactual' also asks 'answer'
        and is asked only where that answer was correct.
    cache : a :class:`Cache`, a folder / .sqlite path, None for the default
        folder (``$METACOG_ELICIT_CACHE`` or ~/.cache/metacog/elicit), or False
        for no cache.
    samples : repeats per call (sample s uses seed ``seed + s``).
    concurrency : requests in flight per model. timeout : seconds per call.
    max_retries, backoff : retries on 429/5xx/timeouts, first wait ~``backoff`` s, doubling, jittered.
    retry_failed : re-ask calls whose cached result is a failure.
    max_cost : refuse to start (BudgetError) when the estimated cost of
        uncached paid calls exceeds it; stop asking once spent.
    grader : ``f(item, reply_text, probe) -> 1.0/0.0/NaN`` for answer probes
        (default :func:`default_grader`).

    Returns
    -------
    DataFrame conforming to :mod:`metacog.schema`, plus the columns 'attempts'
    and 'error'. One row per model x item x probe x sample that was asked.
    """
    items, models, probes = _check_inputs(items, models, probes)
    if any(set(k.lower().split("_")) & _SECRET_ARGS for k in litellm_kwargs):
        raise ValueError("run: pass API keys through environment variables (e.g. OPENAI_API_KEY), "
                         "never as arguments; they would end up in the cache key.")
    if samples < 1:
        raise ValueError(f"run: samples must be >= 1, got {samples}.")
    if concurrency < 1:
        raise ValueError(f"run: concurrency must be >= 1, got {concurrency}.")
    if timeout <= 0:
        raise ValueError(f"run: timeout must be positive, got {timeout}.")
    s = Settings(api_base=api_base, concurrency=concurrency, timeout=timeout, max_retries=max_retries,
                 backoff=backoff, retry_failed=retry_failed, max_cost=max_cost,
                 temperature=temperature, max_tokens=max_tokens, seed=seed, logprobs=logprobs,
                 progress=progress, extra=dict(litellm_kwargs))
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
        return _run_coro(_run_async(items, models, probes, store, s, samples, grader))
    finally:
        if own_cache:
            store.close()


async def _run_async(items: list[Item], models: list[str], probes: list[str], store: Cache | None,
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
    res = await _run_tasks(tasks, store, s, counts, "elicit")
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
            res2 = await _run_tasks(cf, store, s, counts, "counterfactual")
            tasks += cf
            rows += [_row(t, *res2[t.key][:2], grader) for t in cf]

    df = pd.DataFrame(rows)
    if df.empty:
        return schema.empty()
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
    out.attrs["counts"] = {"done": counts.done, "cached": counts.cached, "failed": counts.failed,
                           "skipped": counts.skipped, "spent_usd": counts.spent}
    return out
