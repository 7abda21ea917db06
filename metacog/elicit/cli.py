"""``metacog elicit``: ask models the probes on benchmark items, through the response cache.

Examples::

    metacog elicit --benchmark squad --models local/smollm2-135m --probes prospective,answer \\
        --n-items 50 --seed 0 --out data/elicit/squad_smollm2.parquet
    metacog elicit --items my_items.jsonl --models openai/my-model --api-base http://127.0.0.1:8000/v1

Also runnable as ``python -m metacog.elicit.cli``. Exit status: 0 when the run
finished (failed calls are rows with parse_status 'error'; calls that failed
for a transient reason, such as a server not yet running, a timeout, a 429, a
reply cut off mid-body or one without choices, are asked again by the next run;
other failures stay cached until --retry-failed); 1 when some calls failed in a
way re-asking cannot fix (unknown model, refused key, bad request); 2 when every
call failed (one line: what failed, e.g. 'connection refused at URL' or '3 of 3
replies had no choices', that nothing was lost, and how to rerun; --out is not
written), for bad arguments, an unusable cache (when it fails mid-run, the rows
fetched so far are written to --out, or next to the cache, first), or a cost
estimate above --max-cost.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

from metacog.paths import writable_folder

from metacog.tidy.items import CONTEXT_KINDS, Item

_ITEM_FIELDS = ("item_id", "benchmark", "question", "gold", "context", "context_kind", "domain",
                "subject", "meta")


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the elicit options to ``p`` (the lead wires this into ``metacog elicit``)."""
    src = p.add_argument_group("items")
    src.add_argument("--benchmark", help="benchmark name for metacog.benchmarks.load_items "
                     "(also the benchmark label of --items rows that have none)")
    src.add_argument("--items", type=Path, metavar="FILE.jsonl",
                     help="items as JSON lines with metacog.tidy.items.Item fields "
                     "(item_id, question, gold, optional benchmark, context, context_kind, ...)")
    src.add_argument("--n-items", type=int, default=None, metavar="N",
                     help="a seeded random subset of N items (default: all)")
    src.add_argument("--seed", type=int, default=0, help="seed of the subset and of the calls (default 0)")
    ask = p.add_argument_group("asking")
    ask.add_argument("--models", default="local/smollm2-135m",
                     help="comma-separated litellm model ids: local/<name> (offline panel), "
                     "openai/<name> with --api-base, or hosted ids (default local/smollm2-135m)")
    ask.add_argument("--probes", default="prospective,answer",
                     help="comma-separated: answer, answer_no_context, prospective, counterfactual, "
                     "c0, c1, c2 (default prospective,answer)")
    ask.add_argument("--api-base", default=None, metavar="URL",
                     help="OpenAI-compatible server for openai/<name> models, or os.environ/NAME to "
                     "read it from the environment (then a secret); keys come from the environment "
                     "(OPENAI_API_KEY ...); a password in the URL is sent as Basic auth, never stored")
    ask.add_argument("--router", type=Path, default=None, metavar="FILE.yaml",
                     help="litellm Router model_list file: model names served by several deployments "
                     "(each with optional rpm/tpm limits) plus fallbacks; --models may use its names")
    ask.add_argument("--samples", type=int, default=1, help="repeats per call (default 1)")
    ask.add_argument("--max-tokens", type=int, default=None, help="override the templates' max_tokens")
    ask.add_argument("--concurrency", type=int, default=8, metavar="K",
                     help="requests in flight per model (default 8)")
    ask.add_argument("--timeout", type=float, default=60.0, metavar="T",
                     help="seconds per call before it is retried (default 60)")
    ask.add_argument("--max-retries", type=int, default=4,
                     help="retries on 429/5xx/timeouts/broken replies (default 4)")
    ask.add_argument("--max-cost", type=float, default=None, metavar="X",
                     help="refuse to start when the estimated USD cost of uncached paid calls exceeds X")
    ask.add_argument("--batch", action="store_true",
                     help="send the uncached calls of openai/<name> models as provider batch jobs "
                     "(files + batches endpoints, at the batch price, typically half) and wait for them; "
                     "a server without those endpoints is asked one by one (one printed line)")
    ask.add_argument("--batch-poll", type=float, default=5.0, metavar="S",
                     help="seconds before the first look at a batch, then 1.5x longer each time, "
                     "at most 60 (default 5)")
    ask.add_argument("--batch-wait", type=float, default=None, metavar="S",
                     help="stop waiting for batches after S seconds; their calls stay recorded and the "
                     "next run collects them (default: wait until they end)")
    out = p.add_argument_group("cache and output")
    out.add_argument("--cache", default=None, metavar="DIR",
                     help="response cache folder (default $METACOG_ELICIT_CACHE or ~/.cache/metacog/elicit)")
    out.add_argument("--retry-failed", action="store_true",
                     help="re-ask calls cached as final failures (transient ones, such as a server not "
                     "yet running, a timeout or a 429, are asked again anyway)")
    out.add_argument("--out", type=Path, default=None, metavar="FILE",
                     help="write the response table to FILE.parquet or FILE.csv")
    out.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def read_items_jsonl(path: Path, benchmark: str | None = None) -> list[Item]:
    """Items from a JSON-lines file: one object per line with Item fields."""
    if not path.is_file():
        raise ValueError(f"--items {path}: no such file.")
    items = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"--items {path}, line {n}: not valid JSON ({exc.msg}).") from None
            if not isinstance(d, dict):
                raise ValueError(f"--items {path}, line {n}: expected a JSON object.")
            extra = sorted(set(d) - set(_ITEM_FIELDS))
            if extra:
                raise ValueError(f"--items {path}, line {n}: unknown field(s) {extra}; Item fields "
                                 f"are {list(_ITEM_FIELDS)} (put extras under 'meta').")
            miss = [k for k in ("item_id", "question", "gold") if k not in d]
            if miss:
                raise ValueError(f"--items {path}, line {n}: missing field(s) {miss}.")
            d.setdefault("benchmark", benchmark or "custom")
            d["item_id"] = str(d["item_id"])
            if d.get("context") and d.get("context_kind", "none") == "none":
                d["context_kind"] = "background"
            if d.get("context_kind", "none") not in CONTEXT_KINDS:
                raise ValueError(f"--items {path}, line {n}: context_kind {d['context_kind']!r} is "
                                 f"not one of {CONTEXT_KINDS}.")
            try:
                items.append(Item(**d))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"--items {path}, line {n}: {exc}") from None
    if not items:
        raise ValueError(f"--items {path}: the file has no items.")
    return items


def subset(items: list[Item], n: int | None, seed: int) -> list[Item]:
    """A seeded random subset of ``n`` items, in their original order."""
    if n is None or n >= len(items):
        return list(items)
    if n < 1:
        raise ValueError(f"--n-items must be >= 1, got {n}.")
    keep = sorted(random.Random(seed).sample(range(len(items)), n))
    return [items[i] for i in keep]


def load_items(args) -> list[Item]:
    if args.items is not None:
        return subset(read_items_jsonl(args.items, args.benchmark), args.n_items, args.seed)
    if not args.benchmark:
        raise ValueError("give --benchmark NAME or --items FILE.jsonl.")
    try:
        from metacog.benchmarks import load_items as bench_load
    except ImportError:
        raise ValueError(
            f"--benchmark {args.benchmark}: metacog.benchmarks.load_items is not available in this "
            "checkout; pass the items with --items FILE.jsonl instead."
        ) from None
    return list(bench_load(args.benchmark, n_items=args.n_items, seed=args.seed))


def check_out(out: Path | None) -> None:
    """Refuse an --out that cannot be written, before anything is asked."""
    if out is None:
        return
    if out.suffix not in (".parquet", ".csv"):
        raise ValueError(f"--out {out}: use a .parquet or .csv file name.")
    if out.is_dir():
        raise ValueError(f"--out {out}: is a folder; give a file name ending in .parquet or .csv.")
    for parent in [out.parent, *out.parent.parents]:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"--out {out}: {parent} is a file, not a folder; choose another path.")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ValueError(f"--out {out}: cannot write in {parent}; choose another path.")
            break


def check_settings(args) -> None:
    """Refuse impossible numbers and unwritable paths before any model is called."""
    import math

    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise ValueError(f"--timeout {args.timeout}: give a finite number of seconds above 0, "
                         f"e.g. --timeout 60.")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise ValueError(f"--max-tokens {args.max_tokens}: give a whole number of tokens, 1 or more.")
    if args.concurrency < 1:
        raise ValueError(f"--concurrency {args.concurrency}: at least one call must be in flight.")
    if args.max_retries < 0:
        raise ValueError(f"--max-retries must be >= 0, got {args.max_retries}.")
    poll, wait = getattr(args, "batch_poll", 5.0), getattr(args, "batch_wait", None)
    if not (math.isfinite(poll) and poll > 0):
        raise ValueError(f"--batch-poll {poll}: give a number of seconds above 0, e.g. 5.")
    if wait is not None and not (wait >= 0):
        raise ValueError(f"--batch-wait {wait}: give a number of seconds, 0 or more.")
    if args.cache is not None:
        cache = Path(args.cache)
        if cache.exists() and not cache.is_dir():
            raise ValueError(f"--cache {cache}: is a file; give a folder for the response cache.")
        writable_folder(cache, f"--cache {cache}")
    if args.out is not None:
        writable_folder(Path(args.out).parent, f"--out {args.out}")


def failure_report(df, api_base: str | None, counts: dict | None = None,
                   router: str | os.PathLike | None = None, timeout: float | None = None) -> tuple[int, str]:
    """(exit status, message) for the failed rows of a finished run.

    2 when every call failed (nothing usable came back: the command prints this one line and
    writes no --out), 1 when some failed in a way asking again cannot fix (bad request, refused
    key), else 0 (transient failures are asked again by the next run; other ones with
    --retry-failed). ``counts`` (the run's ``attrs['counts']``) tells failures replayed from
    the cache, which only --retry-failed re-asks."""
    from metacog.elicit.failures import describe
    from metacog.elicit.redaction import redact_url

    err = df.loc[df["parse_status"] == "error", "error"].astype(str)
    if err.empty:
        return 0, ""
    where = None if router else (redact_url(api_base) if api_base else "the provider's default URL")
    what = describe(err, len(df), api_base=where, timeout=timeout)
    final = err.str.contains("not retryable", regex=False)
    transient = err.str.contains("[transient", regex=False)
    low = " ".join(err[final] if final.any() else err).lower()
    hint = ""
    if "authentication" in low or "api key" in low:
        hint = " (check the API key in the environment, e.g. OPENAI_API_KEY)"
    elif "provider" in low or "notfound" in low or "not found" in low:
        hint = (" (check the model id: litellm ids look like 'openai/<name>' with --api-base, "
                "'local/<name>', or a hosted model litellm knows)")
    elif router and not final.any():
        hint = f" (are the servers of {router} running and reachable?)"
    from_cache = int((counts or {}).get("cached_failed") or 0)
    if len(err) == len(df):
        if from_cache == len(err) and not (counts or {}).get("done"):
            return 2, (f"nothing was asked: all {len(df)} call(s) failed in an earlier run and were replayed "
                       f"from the cache ({what}); nothing was lost, --out was not written; re-ask them "
                       f"with --retry-failed.")
        if transient.all():
            return 2, (f"every call failed: {what}{hint}; nothing was lost (no failure is kept as an "
                       f"answer, --out was not written): rerun the same command once the server answers "
                       f"and it asks these calls again.")
        cannot = "; asking again cannot fix it" if final.any() else ""
        return 2, (f"every call failed: {what}{cannot}{hint}; nothing was lost (--out was not written): "
                   f"once it is fixed, rerun the same command with --retry-failed.")
    cached = (f" {from_cache} of these failures were replayed from the cache; re-ask them with "
              f"--retry-failed." if from_cache else "")
    if final.any():
        return 1, f"{what}; asking again cannot fix it{hint}.{cached}"
    if transient.all():
        return 0, (f"{what}: a transient failure, the next run asks these {len(err)} call(s) "
                   f"again{hint}.")
    return 0, f"{what}; re-ask them with --retry-failed{hint}."


def write_table(df, out: Path) -> None:
    """Write ``df`` to ``out`` (.parquet, else .csv) atomically."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    if out.suffix == ".parquet":
        df.to_parquet(tmp, index=False)
    else:
        df.to_csv(tmp, index=False)
    tmp.replace(out)


def _save_partial(partial, args) -> str:
    """Write the rows a run fetched before its cache failed (to --out, else next to the cache);
    returns the sentence saying where, or why not."""
    if partial is None or len(partial) == 0:
        return ""
    if args.out is not None:
        dest = Path(args.out)
    else:
        import time

        from metacog.elicit.cache import default_dir

        folder = Path(args.cache).expanduser() if args.cache is not None else default_dir()
        if folder.suffix in (".sqlite", ".db", ".sqlite3"):
            folder = folder.parent
        dest = folder / f"rescued-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.parquet"
    n_not = int(partial.attrs.get("counts", {}).get("not_asked", 0))
    try:
        write_table(partial, dest)
    except OSError as exc:
        return f"could not write the {len(partial)} row(s) this run fetched or replayed to {dest} ({exc})."
    return (f"wrote the {len(partial)} row(s) this run fetched or replayed to {dest} "
            f"(a partial table: {n_not} call(s) were not asked).")


def main(args: argparse.Namespace) -> int:
    """Run ``metacog elicit`` with parsed ``args``; returns the exit status."""
    from metacog.benchmarks.sandbox import SandboxUnavailable
    from metacog.elicit.cache import CacheError
    from metacog.elicit.engine import BudgetError, run
    from metacog.elicit.redaction import redact

    try:
        check_out(args.out)
        check_settings(args)
        items = load_items(args)
        df = run(items, models=args.models, probes=args.probes, cache=args.cache,
                 api_base=args.api_base, samples=args.samples, concurrency=args.concurrency,
                 timeout=args.timeout, max_retries=args.max_retries,
                 retry_failed=args.retry_failed, max_cost=args.max_cost,
                 max_tokens=args.max_tokens, seed=args.seed, progress=not args.no_progress,
                 batch=getattr(args, "batch", False), batch_poll=getattr(args, "batch_poll", 5.0),
                 batch_wait=getattr(args, "batch_wait", None),
                 **({"router": args.router} if getattr(args, "router", None) else {}))
    except CacheError as exc:
        saved = _save_partial(exc.partial, args)  # what was fetched is written before the error
        print(f"metacog elicit: {redact(getattr(exc, 'reason', None) or exc)}", file=sys.stderr)
        if saved:
            print(f"metacog elicit: {redact(saved)}", file=sys.stderr)
        return 2
    except (ValueError, BudgetError, SandboxUnavailable) as exc:
        print(f"metacog elicit: {redact(exc)}", file=sys.stderr)
        return 2
    c = df.attrs.get("counts", {})
    code, why = failure_report(df, args.api_base, c, getattr(args, "router", None), args.timeout)
    if code == 2:  # nothing usable came back: one line, and an earlier --out is left as it was
        print(f"metacog elicit: {redact(why)}", file=sys.stderr)
        return 2
    if args.out is not None:
        write_table(df, args.out)
    status = df.groupby(["model", "probe", "parse_status"], observed=True).size()
    print(status.rename("rows").reset_index().to_string(index=False), file=sys.stderr)
    n_err = int((df["parse_status"] == "error").sum())
    print(f"metacog elicit: {len(df)} rows; asked {c.get('done', 0)}, cached {c.get('cached', 0)}, "
          f"failed {n_err}" + (f"; {c['batched']} from {c['batches']} provider batch(es)" if c.get("batches")
                               or c.get("batched") else "")
          + (f"; wrote {args.out}" if args.out is not None else ""), file=sys.stderr)
    if c.get("pending_batch"):
        print(f"metacog elicit: {c['pending_batch']} call(s) still wait in provider batches (rows with "
              "parse_status 'missing'); run the same command again to collect them.", file=sys.stderr)
    if why:
        print(f"metacog elicit: {redact(why)}", file=sys.stderr)
    return code


def _standalone(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m metacog.elicit.cli", description=__doc__.split("\n")[0])
    add_arguments(p)
    return main(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(_standalone())
