"""The order in which ``metacog book`` starts its chapters, and what it remembers to choose it.

A build runs several chapters at once. The one that takes longest should start first, so
that the short ones fill the other cores around it rather than leaving it alone at the
end. Each build therefore records every chapter's time in ``_build/durations.json`` and the
next build starts the longest first.

The time recorded is the chapter's *own* time: the seconds it spent waiting for a stored
result that another chapter was computing at the same moment (:func:`metacog.memo.memo`
waits rather than computing it twice) are taken off. A chapter that mostly waits would
otherwise look long, start first next time beside the chapter it waits for, and leave a
core idle while it waits again. The waits are read from the memo trace of the chapter's
kernel (``METACOG_MEMO_TRACE``, one file per chapter, see :func:`take_trace`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from metacog.memo import trace_rows

DURATIONS = "durations.json"


def order(todo: list, out: Path) -> list:
    """The chapters in the order they start (``todo`` holds tuples whose first item is a
    :class:`metacog.manifest.Chapter`): the longest first by their last recorded own time (a
    chapter never timed counts as long and keeps its manifest place), and a page that gathers
    other chapters' results (a ``chapters`` mapping among its parameters, as findings has) after
    them, so it reads their stored results instead of waiting for them."""
    try:
        last = json.loads((out / DURATIONS).read_text())
    except (OSError, ValueError):
        last = {}

    def gathers(ch) -> bool:
        return isinstance(ch.parameters.get("chapters"), dict)

    return sorted(todo, key=lambda job: (gathers(job[0]), -float(last.get(job[0].page, float("inf")))))


def record(out: Path, page: str, seconds: float) -> None:
    """Remember that ``page`` took ``seconds`` of its own (atomically; callers hold the build lock)."""
    path = out / DURATIONS
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    known[page] = round(max(seconds, 0.0), 1)
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(known, indent=1, sort_keys=True))
    os.replace(tmp, path)


def take_trace(trace: Path, forward_to: str | None = None) -> float:
    """The seconds a chapter's kernel waited for results other chapters were computing, from its
    memo trace ``trace`` (lines ``pid, function, how, seconds``); the lines are appended to
    ``forward_to`` (the caller's own ``METACOG_MEMO_TRACE``, when it set one) and ``trace`` is
    removed. A missing or unreadable trace counts as no wait."""
    try:
        lines = trace.read_text().splitlines()
    except OSError:
        return 0.0
    trace.unlink(missing_ok=True)
    if forward_to and lines:
        try:
            with open(forward_to, "a") as fh:
                fh.write("\n".join(lines) + "\n")
        except OSError:
            pass
    return sum(seconds for _, how, seconds in trace_rows(lines) if how == "waited")
