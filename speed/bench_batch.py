"""Speed figures for provider batch mode (metacog.elicit.provider_batch). Prints numbers; asserts nothing.

A server of tests/openai_server.py in its own process (batches end ``--batch-seconds``
after their creation); :func:`metacog.elicit.run` with ``batch=True`` asks ``--calls``
synthetic answer calls through a fresh cache, in this process. Printed: the wall time, the
part of it the batch itself took on the server, the client's CPU time per call (building
the JSON lines, uploading, downloading, extracting and storing the replies; litellm's
import excluded), then the wall time of the same run replayed from the cache.

Usage: python speed/bench_batch.py [--calls 10000] [--batch-seconds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--batch-seconds", type=float, default=1.0)
    a = ap.parse_args(argv)
    from metacog.elicit import run
    from metacog.elicit.backend import get_litellm
    from metacog.tidy.items import Item

    get_litellm()  # its import (seconds) is not the batch path's cost
    items = [Item(item_id=f"b{i}", benchmark="bench", question=f"What is {i} plus 0? [[answer:{i}]]",
                  gold=str(i)) for i in range(a.calls)]
    srv = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py"), "--port", "0",
                            "--batch-seconds", str(a.batch_seconds)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(srv.stdout.readline().split()[1])
        base = f"http://127.0.0.1:{port}/v1"
        with tempfile.TemporaryDirectory() as tmp:
            kw = dict(models=["openai/fake"], probes=["answer"], cache=Path(tmp) / "c", api_base=base,
                      progress=False, batch=True, batch_poll=0.2)
            w0, c0 = time.perf_counter(), time.process_time()
            df = run(items, **kw)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            with urllib.request.urlopen(f"{base}/_stats") as r:
                st = json.loads(r.read())
            w1 = time.perf_counter()
            again = run(items, **kw)
            replay = time.perf_counter() - w1
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        print(f"{a.calls} calls in provider batches: {st['batches_created']} batch(es), "
              f"{st['chat_calls']} chat call(s), {int((df.parse_status == 'ok').sum())} ok rows")
        print(f"wall {wall:.2f} s (the batch itself {a.batch_seconds:.1f} s on the server, polled every "
              f"0.2 s growing x1.5); client CPU {cpu:.2f} s = {1000 * cpu / a.calls:.3f} ms per call")
        print(f"replay from the cache: {replay:.2f} s, {again.attrs['counts']['cached']} cached")
    finally:
        srv.kill()
        srv.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
