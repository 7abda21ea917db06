"""Speed figures for metacog.elicit. Prints numbers; asserts nothing.

1. Throughput through litellm against the loopback fake server (tests/fakeserver.py,
   run as a separate process) with 200 ms injected latency and 32 requests in
   flight: the ideal is 32 / 0.2 s = 160 requests/s; the goal is >= 80% of it.
   Then the same load with litellm stubbed out, to separate the engine's own
   cost from litellm's per-call CPU.
2. Replaying 10,000 cached responses (a fresh process; litellm must not even be
   imported): goal < 2 s.
3. The local panel: calls/s through litellm's 'local' provider vs calling
   llama.cpp directly on the same prompts; goal within 10%.

Usage: python benchmarks/bench_elicit.py [--calls 960] [--replay 10000] [--local-items 6] [--skip-local]
The machine's load average is printed with each figure: the numbers are only
comparable on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from metacog.items import Item  # noqa: E402


def load() -> str:
    return "load average %.2f %.2f %.2f on %d cores" % (*os.getloadavg(), os.cpu_count())


def synthetic_items(n: int, benchmark: str = "bench") -> list[Item]:
    return [Item(item_id=f"b{i}", benchmark=benchmark, question=f"Is {i} a prime number? [[answer:{i}]]",
                 gold=False) for i in range(n)]


def bench_throughput(calls: int, latency: float = 0.2, concurrency: int = 32) -> None:
    from metacog.elicit import run
    from metacog.elicit.engine import get_litellm

    get_litellm()
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fakeserver.py"), "--latency",
                             str(latency)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline().split()[1])
        base = f"http://127.0.0.1:{port}/v1"
        os.environ.setdefault("OPENAI_API_KEY", "sk-fake-for-the-loopback-server")
        kw = dict(models=["openai/fake"], probes=["answer"], cache=False, api_base=base,
                  concurrency=concurrency, progress=False)
        run(synthetic_items(64, "warmup"), **kw)  # connection pool, lazy imports
        best = 0.0
        for rep in range(2):
            items = synthetic_items(calls, f"tp{rep}")
            t0 = time.perf_counter()
            c0 = time.process_time()
            df = run(items, **kw)
            dt = time.perf_counter() - t0
            cpu = time.process_time() - c0
            ok = int((df["parse_status"] == "ok").sum())
            rate = calls / dt
            best = max(best, rate)
            ideal = concurrency / latency
            print(f"[throughput] run {rep + 1}: {calls} calls ({ok} ok) in {dt:.2f} s = {rate:.1f} req/s "
                  f"= {100 * rate / ideal:.0f}% of ideal {ideal:.0f} req/s; client CPU "
                  f"{1000 * cpu / calls:.2f} ms/call; {load()}")
        print(f"[throughput] best: {best:.1f} req/s = {100 * best / (concurrency / latency):.0f}% of ideal "
              f"(goal >= 80%)")
    finally:
        proc.kill()
        proc.wait()


def bench_engine_only(calls: int, latency: float = 0.2, concurrency: int = 32) -> None:
    """The same load with litellm replaced by a stub that sleeps ``latency``: the engine's own cost."""
    import asyncio

    from metacog.elicit import engine, run

    real = engine.get_litellm()
    reply = real.completion(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "x"}],
                            mock_response="Final answer: 1")

    class Stub:
        def __getattr__(self, name):
            return getattr(real, name)

        async def acompletion(self, **kw):
            await asyncio.sleep(latency)
            return reply

    engine._litellm = Stub()
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        run(synthetic_items(calls, "stub"), models=["openai/fake"], probes=["answer"], cache=False,
            concurrency=concurrency, progress=False)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        engine._litellm = real
    print(f"[engine only] litellm stubbed out: {calls / dt:.1f} req/s = "
          f"{100 * calls / dt / (concurrency / latency):.0f}% of ideal; engine CPU "
          f"{1000 * cpu / calls:.2f} ms/call; {load()}")


def _replay_child(cache_dir: str, n_items: int) -> None:
    t0 = time.perf_counter()
    from metacog.elicit import run

    items = synthetic_items(n_items)
    t1 = time.perf_counter()
    df = run(items, models=["openai/fake"], probes=["prospective", "c0"], cache=cache_dir,
             progress=False)
    dt = time.perf_counter() - t1
    print(f"[replay] {len(df)} cached rows replayed in {dt:.2f} s (goal < 2 s); "
          f"+{t1 - t0:.2f} s to import metacog.elicit; litellm imported: {'litellm' in sys.modules}; "
          f"rows ok: {int((df['parse_status'] == 'ok').sum())}; asked: {df.attrs['counts']['done']}; {load()}")


def bench_replay(n: int) -> None:
    from metacog.elicit import Cache
    from metacog.elicit.engine import Settings, make_task

    n_items = n // 2
    items = synthetic_items(n_items)
    s = Settings()
    with tempfile.TemporaryDirectory() as d:
        rows = []
        for it in items:
            for probe, text in (("prospective", "I know primes.\nFinal answer: No"),
                                ("c0", "Final answer: No\nConfidence: 0.9")):
                t = make_task("openai/fake", it, probe, 0, s)
                rows.append((t.key, t.model, "ok",
                             {"model": t.model, "messages": t.messages, "params": t.params,
                              "template": t.template.tag},
                             {"text": text, "p_yes": 0.2, "prompt_tokens": 90, "completion_tokens": 12,
                              "cost_usd": None, "latency_s": 0.2, "attempts": 1,
                              "backend": "litellm", "backend_version": "litellm bench"}))
        with Cache(d) as c:
            c.put_many(rows)
        subprocess.run([sys.executable, __file__, "--replay-child", d, str(n_items)], check=True)


def bench_local(n_items: int, model: str = "smollm2-135m", max_tokens: int = 32) -> None:
    from metacog import models
    from metacog.elicit import local, prompts, run

    if not local.available() or not models.is_cached(model):
        print(f"[local] skipped: llama_cpp importable={local.available()}, "
              f"{model} cached={models.is_cached(model)} (scripts/install_local.sh)")
        return
    qs = ["Is the Pacific the largest ocean?", "Do spiders have six legs?",
          "Is Canberra the capital of Australia?", "Is water made of hydrogen and oxygen?",
          "Was the Eiffel Tower built in 1999?", "Is gold a metal?", "Do penguins fly?",
          "Is the Moon larger than the Earth?"]
    items = [Item(item_id=f"l{i}", benchmark="audit", question=qs[i % len(qs)] + f" (#{i})", gold=False)
             for i in range(n_items)]
    t = prompts.get("prospective")
    proto = {"kind": t.kind, "final_prefix": t.final_prefix, "choices": list(t.choices),
             "confidence_prefix": None}
    print(f"[local] llama.cpp threads: {local.n_threads()}")
    local.complete(model, t.render(items[0]), max_tokens=2, protocol=proto)  # load the model
    run(items[:1], models=[f"local/{model}"], probes=["prospective"], cache=False, max_tokens=2,
        progress=False)  # import litellm
    direct, via = [], []
    for rep in range(2):
        t0 = time.perf_counter()
        for it in items:
            local.complete(model, t.render(it), max_tokens=max_tokens, seed=0, protocol=proto)
        direct.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        df = run(items, models=[f"local/{model}"], probes=["prospective"], cache=False,
                 max_tokens=max_tokens, progress=False)
        via.append(time.perf_counter() - t0)
        assert (df["parse_status"] == "ok").all()
        print(f"[local] rep {rep + 1}: direct {n_items / direct[-1]:.2f} calls/s, via litellm "
              f"{n_items / via[-1]:.2f} calls/s; {load()}")
    d, v = min(direct), min(via)
    print(f"[local] best: direct {n_items / d:.2f} calls/s, via litellm {n_items / v:.2f} calls/s: "
          f"litellm path at {100 * d / v:.1f}% of direct throughput (goal >= 90%)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=960)
    ap.add_argument("--replay", type=int, default=10_000)
    ap.add_argument("--local-items", type=int, default=6)
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--replay-child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.replay_child:
        _replay_child(a.replay_child[0], int(a.replay_child[1]))
        return 0
    bench_replay(a.replay)
    bench_throughput(a.calls)
    bench_engine_only(a.calls)
    if not a.skip_local:
        bench_local(a.local_items)
    return 0


if __name__ == "__main__":
    sys.exit(main())
