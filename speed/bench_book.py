"""How long the book takes to rebuild. Prints figures; asserts nothing.

What it measures: ``metacog book --force`` — every chapter executed again with papermill
(several at once, ``--jobs`` defaulting to the CPU count) and the whole book rendered with
``jupyter-book build`` — twice in a row in the repository, each run timed from start to
finish, with the seconds each chapter took (parsed from the runner's "[book] <page>: done
in Ns" lines). The first run fills the disk cache of slow analyses (``metacog.memo``) where
it is empty or the code changed; the second run is the "2-minute book" of issue #15: every
chapter re-executes and the book renders again, but results whose inputs and code are
unchanged come from the cache. Goals: the second run within 120 s on 2 cores, and no single
chapter above 30 s in it.

With ``--cold`` the first run starts from an empty user cache (a temporary
``METACOG_CACHE_DIR``: no stored results, no parsed logs), which is the "cold first build"
of issue #25 (goal: 5 minutes or less on 2 cores, with 1,000 resamples for every interval).

After each run it prints where the stored analyses' time went (``METACOG_MEMO_TRACE``): seconds
per function, by how each result came — computed, waited for (another chapter was computing the
same result) or read from the cache.

Usage: python speed/bench_book.py [--runs 2] [--no-html] [--cold]
The numbers are only comparable on an otherwise idle machine; the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DONE = re.compile(r"\[book\] (\S+): executed in ([0-9.]+) s")


def run_once(args: list[str], env: dict | None = None) -> tuple[float, dict[str, float], int, list[str]]:
    metacog = Path(sys.executable).with_name("metacog")
    with tempfile.NamedTemporaryFile(suffix=".tsv", delete=False) as fh:
        trace = Path(fh.name)
    t0 = time.perf_counter()
    proc = subprocess.run([str(metacog), "book", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**(env or os.environ), "METACOG_MEMO_TRACE": str(trace)})
    wall = time.perf_counter() - t0
    chapters = {m.group(1): float(m.group(2)) for m in DONE.finditer(proc.stdout + proc.stderr)}
    if proc.returncode != 0:
        print((proc.stdout + proc.stderr)[-3000:])
    lines = trace.read_text().splitlines()
    trace.unlink(missing_ok=True)
    return wall, chapters, proc.returncode, lines


def print_trace(lines: list[str], top: int = 12) -> None:
    """Where the stored analyses' time went (metacog.memo's trace): seconds per function and how
    its results came (computed, waited for another chapter computing it, read), slowest first."""
    totals: dict[tuple[str, str], list[float]] = {}
    for line in lines:
        _pid, name, how, seconds = line.split("\t")
        totals.setdefault((name, how), []).append(float(seconds))
    if not totals:
        return
    print("    stored analyses (metacog.memo), slowest first:")
    for (name, how), secs in sorted(totals.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f"      {sum(secs):7.1f} s  {how:<8} {len(secs):3d}x  {name}")


def main() -> int:
    mirror = ROOT.parent / "shared" / "data"
    if not os.environ.get("METACOG_DATA_MIRROR") and (mirror / "SOURCES.md").exists():
        os.environ["METACOG_DATA_MIRROR"] = str(mirror)  # as the Makefile does
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--no-html", action="store_true", help="time execution only (no rendering)")
    ap.add_argument("--cold", action="store_true",
                    help="start from an empty user cache (a temporary METACOG_CACHE_DIR)")
    a = ap.parse_args()
    env = None
    if a.cold:
        env = {**os.environ, "METACOG_CACHE_DIR": tempfile.mkdtemp(prefix="metacog-cold-")}
    print(f"load average before: {os.getloadavg()}")
    for r in range(1, a.runs + 1):
        wall, chapters, rc, trace = run_once(["--force"] + (["--no-html"] if a.no_html else []), env)
        label = ("cold: empty cache" if a.cold else "cache filled") if r == 1 else "cached analyses"
        goal = "cold build <= 300 s" if r == 1 and a.cold else "runs after the first <= 120 s"
        print(f"run {r} ({label}): {wall:.1f} s for {len(chapters)} chapters, exit {rc}"
              f"  [goal: {goal}]")
        for page, s in sorted(chapters.items(), key=lambda kv: -kv[1]):
            flag = "  > 30 s" if r > 1 and s > 30 else ""
            print(f"    {page:<16} {s:6.1f} s{flag}")
        print_trace(trace)
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
