"""The child process that executes one chapter (``python -m metacog.execute``), and how the
parent reads its failure. :func:`metacog.book.execute_chapter` starts it.

A kernel can die before it answers its first message when another process took one of the
ports it was given: jupyter_client picks five free ports, frees them, and hands them to the
kernel, so two kernels started at the same moment by two processes can be handed the same
port; the later one stops with ``Address already in use``. No cell has run by then, so the
start is tried again on new ports (:data:`START_ATTEMPTS` in all); a failure after a cell
has run is never repeated.
"""

from __future__ import annotations

import ast
import json
import random
import re
import sys
import time
from pathlib import Path

#: The line a child execution prints before its failure's description.
FAILURE_MARK = "metacog-book-chapter-failure:"

#: How many times a kernel is started before its failure to start is reported.
START_ATTEMPTS = 4

#: Messages of a kernel that never became ready (jupyter_client's ``wait_for_ready``): nothing
#: of the notebook ran, so starting again repeats no work.
_NOT_STARTED = ("Kernel died before replying to kernel_info", "Kernel didn't respond to heartbeats")


def first_lines(text: str, n: int = 25) -> str:
    """The last ``n`` lines of ``text`` (where a traceback says what went wrong)."""
    lines = text.strip().splitlines()
    return "\n".join(lines[-n:])


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def never_started(exc: BaseException) -> bool:
    """Whether ``exc`` says the kernel died or stayed silent before running anything."""
    return isinstance(exc, RuntimeError) and str(exc).startswith(_NOT_STARTED)


def run_starting_again(run, attempts: int = START_ATTEMPTS, pause: float = 0.5):
    """``run()``, called again (after a short random pause) while it fails because the kernel
    never started, at most ``attempts`` times in all; any other failure is raised at once."""
    for attempt in range(1, attempts + 1):
        try:
            return run()
        except Exception as exc:
            if not never_started(exc) or attempt == attempts:
                if never_started(exc):
                    raise RuntimeError(f"{exc} (the kernel was started {attempts} times; each died before "
                                       "running a cell: is ipykernel installed in this environment?)") from exc
                raise
            print(f"[execute] kernel start {attempt} of {attempts} failed ({exc}); starting it again",
                  file=sys.stderr, flush=True)
            time.sleep(pause * (1 + random.random()))


def child_failure(proc) -> str:
    """What went wrong in a child execution, from the line it printed (or its stderr)."""
    out = proc.stdout or ""
    if FAILURE_MARK in out:
        return json.loads(out.rsplit(FAILURE_MARK, 1)[1].strip().splitlines()[0])
    return f"the executing process (exit {proc.returncode}): {first_lines(proc.stderr or out, 12)}"


def main(staged: str, target: str, params: str, root: str) -> int:
    """Run papermill on ``staged`` into ``target`` with the kernel in ``root``. On failure print
    one marked JSON line describing it and return 1."""
    import papermill

    parameters = ast.literal_eval(Path(params).read_text())
    try:
        run_starting_again(lambda: papermill.execute_notebook(
            staged, target, parameters=parameters, cwd=root,
            kernel_name="python3", progress_bar=False, log_output=False))
    except Exception as exc:  # papermill raises many types; describe it for the parent
        if hasattr(exc, "ename"):  # papermill's PapermillExecutionError
            frames = strip_ansi("\n".join(getattr(exc, "traceback", []) or []))
            detail = (f"code cell {exc.exec_count}: {exc.ename}: {exc.evalue}\n"
                      f"{first_lines(frames, 12)}")
        else:
            detail = f"{type(exc).__name__}: {first_lines(str(exc))}"
        print(FAILURE_MARK, json.dumps(detail), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
