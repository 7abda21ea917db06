"""Speed figures for metacog.elicit. Prints numbers; asserts nothing.

1. The command against a plain client (issue #25 item 6): a fake
   OpenAI-compatible server (aiohttp, 200 ms reply, in its own process) counts
   the requests it answers; the same calls (the audit items under the probes
   asked, 32 in flight) are sent by (a) a plain aiohttp client with 32 workers,
   (b) ``metacog elicit --concurrency 32`` as a subprocess, with the progress bar
   and a fresh cache, and (c) :func:`metacog.elicit.run` in a subprocess, each
   in its own process. For each: the rate at the server from first arrival to
   last reply, the steady rate (replies between the 10th and 90th percentile of
   reply times), and the wall time of the process including start-up. Medians
   of ``--reps`` runs, then the ratios to the plain client (goal >= 0.90).
2. Request rate on the package path with synthetic items, counted at the
   server, through a fresh response cache: at 32 in flight (ideal 32 / 0.2 s =
   160 req/s) and at 128, on the direct HTTP path, then at 32 through litellm
   for comparison; then 32 in flight through --router over two servers.
3. Replaying 10,000 cached responses (a fresh process; litellm must not even be
   imported): goal < 2 s.
4. The local panel: calls/s through litellm's 'local' provider vs calling
   llama.cpp directly on the same prompts; goal within 10%.

Usage: python speed/bench_elicit.py [--reps 3] [--probes answer,prospective,c0,c1,c2] [--samples 1]
    [--only cli,throughput,replay,local] [--per-slot 30] [--replay 10000] [--local-items 6] [--skip-local]
The machine's load average is printed with each figure: the numbers are only
comparable on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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


def serve(latency: float) -> None:
    """The fake server of these figures (``--serve``): aiohttp, each reply after ``latency`` s, with
    the reply logic of tests/fakeserver.py; prints ``PORT <n>``, then serves until killed.

    ``GET /v1/stats``: requests answered, most in flight, seconds from first arrival to last
    reply, and the steady rate (replies between the 10th and 90th percentile reply time).
    """
    import asyncio

    from aiohttp import web
    from fakeserver import FakeServer

    fake = FakeServer(latency=latency)  # only its replies: aiohttp does the HTTP
    st = {"first": None, "in_flight": 0, "max_in_flight": 0, "done": []}

    async def chat(request):
        raw = await request.read()
        try:
            req = json.loads(raw)
        except ValueError:
            return web.json_response({"error": {"message": "bad json"}}, status=400)
        if st["first"] is None:
            st["first"] = time.monotonic()
        st["in_flight"] += 1
        st["max_in_flight"] = max(st["max_in_flight"], st["in_flight"])
        try:
            status, payload = await fake._complete(req, request.headers.get("Authorization", ""))
        finally:
            st["in_flight"] -= 1
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        st["done"].append(time.monotonic())
        return web.Response(body=body, status=status, content_type="application/json")

    async def stats(request):
        done, n = st["done"], len(st["done"])
        out = {"requests": n, "max_in_flight": st["max_in_flight"],
               "seconds": done[-1] - st["first"] if n else None, "steady": None,
               "first": st["first"], "last": done[-1] if n else None}  # time.monotonic(), system-wide
        lo, hi = n // 10, (9 * n) // 10
        if n >= 20 and done[hi] > done[lo]:
            out["steady"] = (hi - lo) / (done[hi] - done[lo])
        return web.json_response(out)

    async def reset(request):
        st.update(first=None, in_flight=0, max_in_flight=0, done=[])
        return web.json_response({"reset": True})

    async def main():
        app = web.Application(client_max_size=2**24)
        app.add_routes([web.post("/v1/chat/completions", chat), web.get("/v1/stats", stats),
                        web.post("/v1/stats/reset", reset)])
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        print(f"PORT {site._server.sockets[0].getsockname()[1]}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def _server(latency: float):
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(latency)], stdout=subprocess.PIPE,
                            text=True)
    port = int(proc.stdout.readline().split()[1])
    return proc, f"http://127.0.0.1:{port}/v1"


def _stats(base: str, reset: bool = False) -> dict:
    import urllib.request

    if reset:
        req = urllib.request.Request(base + "/stats/reset", data=b"{}", method="POST")
        urllib.request.urlopen(req).read()
        return {}
    return json.loads(urllib.request.urlopen(base + "/stats").read())


def plain_client(base: str, bodies: str, workers: int, limit: int | None = None) -> None:
    """(a) ``--plain-client``: POST each request body of the file (one JSON per line; the first
    ``limit``) with ``workers`` coroutines over one aiohttp session; read each reply's text."""
    import asyncio

    import aiohttp

    with open(bodies, "rb") as f:
        todo = iter(f.read().splitlines()[:limit])

    async def main():
        async with aiohttp.ClientSession() as sess:
            async def worker():
                for body in todo:
                    async with sess.post(base + "/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"}) as r:
                        doc = json.loads(await r.read())
                        doc["choices"][0]["message"]["content"]

            await asyncio.gather(*(worker() for _ in range(workers)))

    asyncio.run(main())


def package_client(base: str, probes: str, samples: int, conc: int, cache: str) -> None:
    """(c) ``--package-client``: :func:`metacog.elicit.run` on the audit items, no progress bar."""
    from metacog.benchmarks import load_items
    from metacog.elicit import run

    df = run(list(load_items("audit")), models=["openai/fake"], probes=probes, api_base=base,
             samples=samples, concurrency=conc, cache=cache, progress=False)
    assert (df["parse_status"] != "error").all(), df["error"].dropna().head()


def _bodies(path: Path, probes: str, samples: int) -> int:
    """Write the request bodies the command sends for the audit items (one JSON a line)."""
    from metacog.benchmarks import load_items
    from metacog.elicit.engine import Settings, make_task

    s = Settings()
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for it in load_items("audit"):
            for probe in probes.split(","):
                for k in range(samples):
                    t = make_task("openai/fake", it, probe, k, s)
                    f.write(json.dumps({"model": "fake", "messages": t.messages, **t.params}) + "\n")
                    n += 1
    return n


def _timed(cmd: list[str], base: str, log: Path) -> dict:
    """Run ``cmd`` (its output to ``log``); the server's counts plus the wall time of the process."""
    _stats(base, reset=True)
    t0 = time.monotonic()
    with open(log, "w") as out:
        rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode
    t1 = time.monotonic()
    wall = t1 - t0
    if rc != 0:
        raise SystemExit(f"{cmd[:4]} failed ({rc}):\n{log.read_text()[-2000:]}")
    st = _stats(base)
    st["wall"] = wall
    st["startup"], st["after"] = st["first"] - t0, t1 - st["last"]  # to the first request; after the last reply
    st["rate"] = st["requests"] / st["seconds"]
    st["log_bytes"] = log.stat().st_size
    return st


def bench_cli(reps: int, probes: str, samples: int, conc: int = 32, latency: float = 0.2) -> dict:
    """(a) plain client, (b) the command, (c) the package path: rates at the server, medians."""
    metacog = Path(sys.executable).with_name("metacog")
    entry = [str(metacog)] if metacog.exists() else [sys.executable, "-c",
                                                     "import sys, metacog.cli; sys.exit(metacog.cli.run())"]
    proc, base = _server(latency)
    got: dict[str, list[dict]] = {"plain": [], "cli": [], "package": []}
    try:
        with tempfile.TemporaryDirectory() as d:
            bodies = Path(d) / "bodies.jsonl"
            n = _bodies(bodies, probes, samples)
            subprocess.run([sys.executable, __file__, "--plain-client", base, str(bodies), "8", "64"],
                           check=True)  # warm the server up
            print(f"[cli] {n} calls (audit items x {probes} x {samples} sample(s)), {conc} in flight, "
                  f"{1000 * latency:.0f} ms replies; ideal {conc / latency:.0f} req/s; {load()}")
            for rep in range(reps):
                cmds = {
                    "plain": [sys.executable, __file__, "--plain-client", base, str(bodies), str(conc)],
                    "cli": [*entry, "elicit", "--benchmark", "audit", "--models", "openai/fake",
                            "--api-base", base, "--probes", probes, "--samples", str(samples),
                            "--concurrency", str(conc), "--cache", f"{d}/cli{rep}",
                            "--out", f"{d}/cli{rep}.parquet"],
                    "package": [sys.executable, __file__, "--package-client", base, probes, str(samples),
                                str(conc), f"{d}/pkg{rep}"],
                }
                for name, cmd in cmds.items():
                    st = _timed(cmd, base, Path(d) / f"{name}{rep}.log")
                    got[name].append(st)
                    print(f"[cli] rep {rep + 1} {name:8s}: {st['requests']} requests, at most "
                          f"{st['max_in_flight']} in flight, {st['rate']:.1f} req/s at the server "
                          f"(steady {st['steady']:.1f}), wall {st['wall']:.2f} s = {st['startup']:.2f} s to the first "
                          f"request + {st['seconds']:.2f} s + {st['after']:.2f} s after the last reply, "
                          f"{st['log_bytes']} bytes of output; {load()}")
    finally:
        proc.kill()
        proc.wait()
    med = {k: {f: statistics.median(r[f] for r in v) for f in ("rate", "steady", "wall", "startup", "after")}
           for k, v in got.items()}
    ideal = conc / latency
    for k, label in (("plain", "(a) plain aiohttp client"), ("cli", "(b) metacog elicit (CLI)"),
                     ("package", "(c) metacog.elicit.run")):
        m = med[k]
        print(f"[cli] median of {reps}: {label:26s} {m['rate']:6.1f} req/s at the server "
              f"({100 * m['rate'] / ideal:.0f}% of ideal), steady {m['steady']:6.1f}, wall {m['wall']:.2f} s "
              f"({m['startup']:.2f} s to the first request, {m['after']:.2f} s after the last reply)")
    for k in ("cli", "package"):
        print(f"[cli] {k} / plain: rate {med[k]['rate'] / med['plain']['rate']:.3f}, steady "
              f"{med[k]['steady'] / med['plain']['steady']:.3f}, wall {med['plain']['wall'] / med[k]['wall']:.3f} "
              f"(goal >= 0.90 for the CLI's rate)")
    return med


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
    ap.add_argument("--reps", type=int, default=3, help="runs of each client in the CLI comparison (default 3)")
    ap.add_argument("--probes", default="answer,prospective,c0,c1,c2",
                    help="probes of the CLI comparison (default answer,prospective,c0,c1,c2)")
    ap.add_argument("--samples", type=int, default=1, help="samples per call in the CLI comparison")
    ap.add_argument("--only", default="cli,replay,throughput,local",
                    help="comma-separated sections: cli, replay, throughput, local (default all)")
    ap.add_argument("--per-slot", type=int, default=30, help="calls per concurrency slot (default 30)")
    ap.add_argument("--replay", type=int, default=10_000)
    ap.add_argument("--local-items", type=int, default=6)
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--replay-child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--plain-client", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--package-client", nargs=5, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.replay_child:
        _replay_child(a.replay_child[0], int(a.replay_child[1]))
        return 0
    if a.serve is not None:
        serve(a.serve)
        return 0
    if a.plain_client:
        plain_client(a.plain_client[0], a.plain_client[1], int(a.plain_client[2]),
                     int(a.plain_client[3]) if len(a.plain_client) > 3 else None)
        return 0
    if a.package_client:
        base, probes, samples, conc, cache = a.package_client
        package_client(base, probes, int(samples), int(conc), cache)
        return 0
    only = set(a.only.split(","))
    if "cli" in only:
        bench_cli(a.reps, a.probes, a.samples)
    if "replay" in only:
        bench_replay(a.replay)
    if "throughput" in only:
        bench_throughput(a.per_slot)
    if "local" in only and not a.skip_local:
        bench_local(a.local_items)
    return 0


if __name__ == "__main__":
    sys.exit(main())
