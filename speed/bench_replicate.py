"""``metacog replicate`` at the plan's own size against the planted panel: prints times and verdicts.

For ``--models`` planted models the plan's item count (the power chapter's size for that many
models) is asked on one benchmark in both planted conditions: kappa 0 (shared difficulty only)
through the batch endpoints and kappa 1 over a plain server. Prints, per condition, the wall time
of the whole command (asking and the book), the calls, and the pairwise and power verdicts on the
prospective panel. At the plan's size a planted null should read "not supported" (the design
detects the 0.02 margin), not merely "insufficient evidence".

    python speed/bench_replicate.py [--models 10] [--benchmark mmlu_pro] [--n-items N]
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
sys.path.insert(0, str(ROOT / "tests"))

from openai_server import OpenAIServer  # noqa: E402
from planted import PlantedPanel, PlantedServer, status_of  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=10)
    ap.add_argument("--benchmark", default="mmlu_pro")
    ap.add_argument("--n-items", type=int, default=None, help="default: the plan's size")
    a = ap.parse_args()
    from metacog.pages import findings
    from metacog.replicate import plan

    names = [f"openai/planted-{i:02d}" for i in range(a.models)]
    p = plan(names, benchmarks=a.benchmark, n_items=a.n_items, audit=False, api_base="http://127.0.0.1:9/v1")
    print(f"plan: {p.n_items:,} items per benchmark for {a.models} models, {p.total_calls:,} calls at most")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    for kappa, batch in ((0.0, True), (1.0, False)):
        panel = PlantedPanel(n_models=a.models, kappa=kappa, seed=0, benchmarks=(a.benchmark,))
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"

            def answer(body):
                doc = panel.answer(body)
                return status_of(doc), doc

            server = OpenAIServer(answer=answer, batch=True, batch_seconds=0.5) if batch else PlantedServer(panel)
            with server as srv:
                t0 = time.perf_counter()
                res = subprocess.run([sys.executable, "-m", "metacog.cli", "replicate", "--models", ",".join(names),
                                      "--api-base", srv.base_url, "--benchmarks", a.benchmark, "--n-items",
                                      str(p.n_items), "--no-audit", "--concurrency", "32", "--out", str(out),
                                      "--cache", str(Path(tmp) / "cache"), "--no-progress"]
                                     + (["--batch"] if batch else []), cwd=ROOT, env=env, capture_output=True,
                                     text=True)
                wall = time.perf_counter() - t0
            if res.returncode:
                print(res.stderr[-2000:])
                return 1
            t = findings.findings_table(findings.collect(sources=[str(out / "responses.parquet")]))
            rows = t[(t["design"] == "prospective") & t["chapter"].isin(["pairwise", "power"])]
            print(f"kappa {kappa:g} ({'batch' if batch else 'plain'} server): {wall:.0f} s for the command "
                  f"(asking and the book), {panel.requests:,} requests answered")
            for r in rows.itertuples():
                print(f"  {r.chapter:9s} {r.claim_id:24s} {r.book_value:28s} {r.status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
