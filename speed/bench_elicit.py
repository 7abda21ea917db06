"""Speed figures for metacog.elicit. Prints numbers; asserts nothing.

1. Request rate against the loopback fake server (tests/fakeserver.py, run as
   a separate process) with 200 ms injected latency, counted AT THE SERVER
   (first arrival to last reply), through a fresh response cache: at 32 in
   flight (ideal 32 / 0.2 s = 160 req/s; goal >= 80%) and at 128, on the
   direct HTTP path, then at 32 through litellm for comparison; then 32 in
   flight through --router over two servers (how the calls split).
2. Replaying 10,000 cached responses (a fresh process; litellm must not even be
   imported): goal < 2 s.
3. The local panel: calls/s through litellm's 'local' provider vs calling
   llama.cpp directly on the same prompts; goal within 10%.

Usage: python speed/bench_elicit.py [--per-slot 30] [--replay 10000] [--local-items 6] [--skip-local]
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

from metacog.tidy.items import Item  # noqa: E402


def load() -> str:
    return "load average %.2f %.2f %.2f on %d cores" % (*os.getloadavg(), os.cpu_count())


def synthetic_items(n: int, benchmark: str = "bench") -> list[Item]:
    return [Item(item_id=f"b{i}", benchmark=benchmark, question=f"Is {i} a prime number? [[answer:{i}]]",
                 gold=False) for i in range(n)]


def _server(latency: float):
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fakeserver.py"), "--latency",
                             str(latency)], stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline().split()[1])
    return proc, f"http://127.0.0.1:{port}/v1"


def _stats(base: str, reset: bool = False) -> dict:
    import json
    import urllib.request

    if reset:
        req = urllib.request.Request(base + "/stats/reset", data=b"{}", method="POST")
        urllib.request.urlopen(req).read()
        return {}
    return json.loads(urllib.request.urlopen(base + "/stats").read())


def bench_throughput(per_slot: int, latency: float = 0.2) -> None:
    """Requests per second counted at the server (first arrival to last reply), through the cache."""
    from metacog.elicit import run
    from metacog.elicit.backend import get_litellm

    get_litellm()  # import once, outside the timings
    os.environ.setdefault("OPENAI_API_KEY", "loopback-key-for-the-fake-server")
    servers = [_server(latency)]
    base = servers[0][1]
    try:
        cases = [(32, "auto"), (128, "auto"), (32, "litellm")]
        for conc, transport in cases:
            calls = per_slot * conc if transport == "auto" else min(per_slot * conc, 640)
            with tempfile.TemporaryDirectory() as d:
                kw = dict(models=["openai/fake"], probes=["answer"], api_base=base, concurrency=conc,
                          progress=False, transport=transport)
                run(synthetic_items(conc, f"w{conc}{transport}"), cache=False, **kw)  # warm up
                _stats(base, reset=True)
                c0, t0 = time.process_time(), time.perf_counter()
                df = run(synthetic_items(calls, f"tp{conc}{transport}"), cache=d, **kw)
                cpu, wall = time.process_time() - c0, time.perf_counter() - t0
                st = _stats(base)
            rate = st["requests"] / st["seconds"]
            ideal = conc / latency
            ok = int((df["parse_status"] == "ok").sum())
            print(f"[throughput] {conc} in flight via {'direct HTTP' if transport == 'auto' else 'litellm'}: "
                  f"{st['requests']} requests ({ok} rows ok) at the server in {st['seconds']:.2f} s = "
                  f"{rate:.1f} req/s = {100 * rate / ideal:.0f}% of ideal {ideal:.0f} (goal >= 80% at 32); "
                  f"client {calls / wall:.1f} calls/s end to end, CPU {1000 * cpu / calls:.2f} ms/call; {load()}")
        bench_router(per_slot, latency, base)
    finally:
        for proc, _ in servers:
            proc.kill()
            proc.wait()


def bench_router(per_slot: int, latency: float, first: str, conc: int = 32) -> None:
    """The same load through --router over two deployments: how it splits and the rate."""
    from metacog.elicit import run
    from metacog.elicit.router import load_router

    proc, second = _server(latency)
    try:
        spec = load_router({"model_list": [
            {"model_name": "pool", "litellm_params": {"model": "openai/fake", "api_base": b}}
            for b in (first, second)]})
        for b in (first, second):
            _stats(b, reset=True)
        t0 = time.perf_counter()
        run(synthetic_items(per_slot * conc, "router"), models=["pool"], probes=["answer"], cache=False,
            router=spec, concurrency=conc, progress=False)
        wall = time.perf_counter() - t0
        got = [_stats(b)["requests"] for b in (first, second)]
        print(f"[router] {conc} in flight over 2 deployments: {got[0]} + {got[1]} requests, "
              f"{sum(got) / wall:.1f} req/s end to end ({100 * sum(got) / wall / (conc / latency):.0f}% of "
              f"ideal); {load()}")
    finally:
        proc.kill()
        proc.wait()


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
    from metacog.elicit import panel
    from metacog.elicit import local, prompts, run

    if not local.available() or not panel.is_cached(model):
        print(f"[local] skipped: llama_cpp importable={local.available()}, "
              f"{model} cached={panel.is_cached(model)} (scripts/install_local.sh)")
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
    ap.add_argument("--per-slot", type=int, default=30, help="calls per concurrency slot (default 30)")
    ap.add_argument("--replay", type=int, default=10_000)
    ap.add_argument("--local-items", type=int, default=6)
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--replay-child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.replay_child:
        _replay_child(a.replay_child[0], int(a.replay_child[1]))
        return 0
    bench_replay(a.replay)
    bench_throughput(a.per_slot)
    if not a.skip_local:
        bench_local(a.local_items)
    return 0


if __name__ == "__main__":
    sys.exit(main())
