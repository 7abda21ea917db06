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

With ``--edit MODULE`` it then appends a comment line to ``metacog/<MODULE>`` (e.g.
``hypotheses/shortcut/__init__.py``), runs ``metacog book`` (not forced) and prints which
chapters were executed again and how long that took, then restores the file: the "warm rebuild
after a one-line change to one chapter's module" of issue #25 (goal: that chapter only).

With ``--files 20x1000 14x7000`` it writes ``metacog example-data`` files of those shapes
(models x items per benchmark, three benchmarks: 14x7000 is 14 models x 21,000 items) and times
``metacog chapter NAME --source FILE`` for every hypothesis chapter, each from an empty cache,
render included (goals: 60 s for 20 x 1,000 items, 3 minutes for 14 x 21,000).

Usage: python speed/bench_book.py [--runs 2] [--no-html] [--cold] [--edit MODULE] [--files SHAPE ...]
``--runs 0`` skips the whole-book runs; ``--goals`` measures every goal of issue #25 (about 20
minutes on 2 cores) and ends with a summary, goal by goal. Temporary caches and files are removed
at the end. The numbers are only comparable on an otherwise idle
machine; the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DONE = re.compile(r"\[book\] (\S+): executed in ([0-9.]+) s")

#: The chapters a researcher runs on a response file of their own.
HYPOTHESES = ("rank_one", "pairwise", "shortcut", "power", "miscalibration", "reasoning_text")

#: Seconds each hypothesis chapter may take on an example file of this shape (issue #25): 20 models
#: x 1,000 items per benchmark (``metacog example-data --items 1000``), 14 models x 21,000 items.
FILE_GOALS = {"20x1000": 60, "14x7000": 180}

#: Seconds for a cold first build (render included) and for each later ``--force`` run.
COLD_GOAL, WARM_GOAL = 300, 120

#: The module ``--goals`` edits by one line (a hypothesis chapter's own module).
GOAL_EDIT = "hypotheses/shortcut/__init__.py"


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
    from metacog.memo import trace_rows

    totals: dict[tuple[str, str], list[float]] = {}
    for name, how, seconds in trace_rows(lines):
        totals.setdefault((name, how), []).append(seconds)
    if not totals:
        return
    print("    stored analyses (metacog.memo), slowest first:")
    for (name, how), secs in sorted(totals.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f"      {sum(secs):7.1f} s  {how:<8} {len(secs):3d}x  {name}")


def edited_rebuild(module: str, env: dict | None) -> tuple[float, list[str]]:
    """Append a comment line to ``metacog/<module>``, run ``metacog book`` and print which chapters
    ran again; the file is restored whatever happens. Returns the wall time and those chapters."""
    path = ROOT / "metacog" / module
    before = path.read_bytes()
    try:
        path.write_bytes(before + b"\n# bench_book: a one-line change\n")
        wall, chapters, rc, _ = run_once([], env)
    finally:
        path.write_bytes(before)
    ran = ", ".join(f"{p} {s:.1f} s" for p, s in sorted(chapters.items(), key=lambda kv: -kv[1])) or "none"
    print(f"one-line change to metacog/{module}: {wall:.1f} s, exit {rc}; chapters executed again: {ran}"
          f"  [goal: only the chapters that import it]")
    return wall, sorted(chapters)


def file_chapters(shapes: list[str], scratch: Path) -> dict[str, dict[str, float]]:
    """Time every hypothesis chapter on ``metacog example-data`` files of these shapes, each from an
    empty cache (the local model weights are shared, as a researcher's machine keeps them).
    Returns the seconds per shape and chapter (infinite for a chapter that failed)."""
    metacog = str(Path(sys.executable).with_name("metacog"))
    times: dict[str, dict[str, float]] = {}
    for shape in shapes:
        models, items = (int(x) for x in shape.lower().split("x"))
        work = Path(tempfile.mkdtemp(prefix=f"file-{shape}-", dir=scratch))
        data = work / "responses.parquet"
        subprocess.run([metacog, "example-data", "--out", str(data), "--models", str(models),
                        "--items", str(items)], check=True, capture_output=True)
        goal = FILE_GOALS.get(f"{models}x{items}")
        print(f"{models} models x {3 * items:,} items ({data}):" + (f"  [goal: each <= {goal} s]" if goal else ""))
        for name in HYPOTHESES:
            cache = work / f"cache-{name}"
            cache.mkdir()
            models_dir = Path(os.environ.get("METACOG_CACHE_DIR", Path.home() / ".cache" / "metacog")) / "models"
            if models_dir.is_dir():
                (cache / "models").symlink_to(models_dir)
            t0 = time.perf_counter()
            proc = subprocess.run([metacog, "chapter", name, "--source", str(data), "--out", str(work / name)],
                                  capture_output=True, text=True, env={**os.environ, "METACOG_CACHE_DIR": str(cache)})
            took = time.perf_counter() - t0
            flag = "  > goal" if goal and took > goal else ""
            print(f"    {name:<16} {took:6.1f} s, exit {proc.returncode}{flag}")
            times.setdefault(shape, {})[name] = took if proc.returncode == 0 else float("inf")
            if proc.returncode:
                print((proc.stdout + proc.stderr)[-2000:])
    return times


def main() -> int:
    mirror = ROOT.parent / "shared" / "data"
    if not os.environ.get("METACOG_DATA_MIRROR") and (mirror / "SOURCES.md").exists():
        os.environ["METACOG_DATA_MIRROR"] = str(mirror)  # as the Makefile does
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--no-html", action="store_true", help="time execution only (no rendering)")
    ap.add_argument("--cold", action="store_true",
                    help="start from an empty user cache (a temporary METACOG_CACHE_DIR)")
    ap.add_argument("--edit", metavar="MODULE", help="then time a rebuild after a one-line change to metacog/MODULE")
    ap.add_argument("--files", nargs="*", default=[], metavar="MxN",
                    help="time each hypothesis chapter on example files of M models x N items per benchmark")
    ap.add_argument("--goals", action="store_true",
                    help=f"every goal of issue #25: --cold --runs 2 --edit {GOAL_EDIT} --files {' '.join(FILE_GOALS)}")
    a = ap.parse_args()
    if a.goals:
        a.cold, a.runs, a.no_html = True, max(a.runs, 1), False
        a.edit, a.files = a.edit or GOAL_EDIT, a.files or list(FILE_GOALS)
    scratch = Path(tempfile.mkdtemp(prefix="metacog-bench-"))
    try:
        return measure(a, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure(a, scratch: Path) -> int:
    env = None
    if a.cold:
        cache = scratch / "cache"
        cache.mkdir()
        env = {**os.environ, "METACOG_CACHE_DIR": str(cache)}
    summary = []
    print(f"load average before: {os.getloadavg()}")
    for r in range(1, a.runs + 1):
        wall, chapters, rc, trace = run_once(["--force"] + (["--no-html"] if a.no_html else []), env)
        label = ("cold: empty cache" if a.cold else "cache filled") if r == 1 else "cached analyses"
        limit = COLD_GOAL if r == 1 and a.cold else WARM_GOAL
        print(f"run {r} ({label}): {wall:.1f} s for {len(chapters)} chapters, exit {rc}"
              f"  [goal: {'cold build' if limit == COLD_GOAL else 'runs after the first'} <= {limit} s]")
        for page, s in sorted(chapters.items(), key=lambda kv: -kv[1]):
            flag = "  > 30 s" if r > 1 and s > 30 else ""
            print(f"    {page:<16} {s:6.1f} s{flag}")
        print_trace(trace)
        if not a.no_html and (r > 1 or a.cold):
            what = "cold first build, render included" if r == 1 else f"run {r}: --force with the stored analyses"
            summary.append((what, f"<= {limit} s", f"{wall:.0f} s", rc == 0 and wall <= limit))
    if a.edit:
        wall, ran = edited_rebuild(a.edit, env)
        summary.append((f"one-line change to metacog/{a.edit}", "that chapter (and the page gathering it)",
                        f"{', '.join(ran) or 'none'} in {wall:.0f} s", None))
    for shape, times in file_chapters(a.files, scratch).items():
        goal = FILE_GOALS.get(shape)
        if goal:
            slowest = max(times, key=times.get)
            summary.append((f"each hypothesis chapter on example-data {shape}", f"<= {goal} s",
                            f"slowest {slowest} {times[slowest]:.0f} s", times[slowest] <= goal))
    print(f"load average after: {os.getloadavg()}")
    if summary:
        print("issue #25 goals measured in this run:")
        for what, goal, got, met in summary:
            verdict = "" if met is None else ("  met" if met else "  NOT met")
            print(f"    {what}: {got} (goal {goal}){verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
