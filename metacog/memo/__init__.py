"""Remember the results of slow analyses on disk, keyed by their inputs and the package's code.

``memo(func, *args, **kwargs)`` returns ``func(*args, **kwargs)``, computing it only when no
result is stored for the same function, the same arguments and the same source code of the
functions, classes and constants it reaches in ``metacog`` (:func:`code_digest`). Results live in ``<cache>/results/`` where ``<cache>`` is
``$METACOG_CACHE_DIR`` (else ``$XDG_CACHE_HOME/metacog``, else ``~/.cache/metacog``); set
``METACOG_NO_MEMO=1`` to always recompute. Writes are atomic, so a killed process leaves no
half-written result, and an unreadable stored result is recomputed rather than trusted.
With ``METACOG_MEMO_TRACE=<file>`` every lookup appends one line to that file: the function,
whether it was computed, waited for (another process held its key) or read, and the seconds
it took (``speed/bench_book.py`` prints the sums).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from metacog.memo.code import PACKAGE, _from_import, _imports, _module_file, code_digest, code_version  # noqa: F401


def _feed(h, value) -> None:
    """Add a stable digest of ``value`` to the hash ``h``."""
    if isinstance(value, pd.DataFrame):
        h.update(b"df")
        h.update(repr(list(value.columns)).encode())
        h.update(repr(list(value.dtypes.astype(str))).encode())
        h.update(pd.util.hash_pandas_object(value, index=True).to_numpy().tobytes())
    elif isinstance(value, pd.Series):
        h.update(b"s")
        h.update(pd.util.hash_pandas_object(value, index=True).to_numpy().tobytes())
    elif isinstance(value, np.ndarray):
        h.update(b"a" + str(value.dtype).encode() + repr(value.shape).encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, dict):
        h.update(b"{")
        for k in sorted(value, key=repr):
            _feed(h, k)
            _feed(h, value[k])
        h.update(b"}")
    elif isinstance(value, (list, tuple)):
        h.update(b"[")
        for v in value:
            _feed(h, v)
        h.update(b"]")
    elif value is None or isinstance(value, (str, int, float, bool)):
        h.update(repr(value).encode())
    else:
        raise TypeError(f"memo: cannot key an argument of type {type(value).__name__}; pass "
                        f"DataFrames, arrays, numbers, strings, lists or dicts.")


def key(func, args, kwargs) -> str:
    """The content address of one call."""
    h = hashlib.sha256()
    h.update(f"{func.__module__}.{func.__qualname__}".encode())
    h.update(code_digest(func).encode())
    _feed(h, list(args))
    _feed(h, dict(kwargs))
    return h.hexdigest()


def folder() -> Path:
    from metacog.settings import user_cache_dir

    return user_cache_dir() / "results"


def memo(func, *args, **kwargs):
    """``func(*args, **kwargs)``, stored on disk and reused while inputs and code are unchanged.

    >>> import os, tempfile
    >>> os.environ["METACOG_CACHE_DIR"] = tempfile.mkdtemp()
    >>> calls = []
    >>> def slow_square(x):
    ...     calls.append(x)
    ...     return x * x
    >>> memo(slow_square, 12), memo(slow_square, 12), len(calls)
    (144, 144, 1)
    >>> del os.environ["METACOG_CACHE_DIR"]
    """
    return _memo(func, args, kwargs, block=True)[1]


def memo_if_free(func, *args, **kwargs):
    """``(True, memo(func, *args, **kwargs))``, or ``(False, None)`` at once when another process
    is computing that very result: the caller can do other work first and ask again (with
    :func:`memo`, which then waits for it). Chapters built at once share their slow tables this
    way (:func:`metacog.hypotheses.common.per_panel`): a chapter that reaches a panel another
    chapter is computing computes the next panel instead of waiting."""
    return _memo(func, args, kwargs, block=False)


def _memo(func, args, kwargs, *, block: bool):
    if os.environ.get("METACOG_NO_MEMO"):
        return True, func(*args, **kwargs)
    t0 = time.perf_counter()
    k = key(func, args, kwargs)
    path = folder() / f"{k}.pkl"
    found, result = _load(path, k)
    if found:
        _trace(func, "read", t0)
        return True, result
    # Chapters built at once ask for the same results (rank_one and pairwise share the structure
    # tables): the first process to ask computes, the others wait for its file instead of
    # computing it again (or, not blocking, hear that it is busy).
    with key_lock(path, block=block) as held:
        if not held:
            return False, None
        found, result = _load(path, k)
        if found:
            _trace(func, "waited", t0)
            return True, result
        result = func(*args, **kwargs)
        _store(path, k, result)
    _trace(func, "computed", t0)
    return True, result


def _trace(func, how: str, t0: float) -> None:
    """One line in the ``METACOG_MEMO_TRACE`` file: pid, function, how its result came, seconds."""
    target = os.environ.get("METACOG_MEMO_TRACE")
    if not target:
        return
    name = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"
    try:
        with open(target, "a") as fh:
            fh.write(f"{os.getpid()}\t{name}\t{how}\t{time.perf_counter() - t0:.2f}\n")
    except OSError:
        pass


def trace_rows(lines) -> list[tuple[str, str, float]]:
    """(function, how, seconds) for each line :func:`_trace` wrote; other lines are skipped."""
    rows = []
    for line in lines:
        parts = line.split("\t")
        if len(parts) == 4:
            try:
                rows.append((parts[1], parts[2], float(parts[3])))
            except ValueError:
                continue
    return rows


def _load(path: Path, k: str):
    """(True, result) when ``path`` holds the result stored under key ``k``; else (False, None)."""
    if not path.exists():
        return False, None
    try:
        with path.open("rb") as fh:
            stored = pickle.load(fh)
    except Exception:  # unpickling a damaged file can raise almost anything: recompute it
        stored = None
    # Each result is stored with its own key: a foreign or truncated file at this path, or a
    # result stored under another key, is recomputed and replaced, never returned.
    if isinstance(stored, dict) and stored.get("memo_key") == k and "result" in stored:
        return True, stored["result"]
    path.unlink(missing_ok=True)
    return False, None


@contextlib.contextmanager
def key_lock(path: Path, *, block: bool = True):
    """An exclusive lock on the file ``path`` is written to (a ``.lock`` file beside it), held
    while it is computed, so processes that want the same file at once compute it once: the
    others wait, then read it. Yields True when held; with ``block=False`` it yields False at once
    when another process holds it. (fcntl; where that or the lock file is unavailable, no lock:
    two processes may then compute the same result and both store the same file.)"""
    try:
        import fcntl

        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path.with_suffix(".lock"), "a")
    except (ImportError, OSError):
        yield True
        return
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _store(path: Path, k: str, result) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".part") as tmp:
            pickle.dump({"memo_key": k, "result": result}, tmp, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp.name, path)  # atomic: processes sharing the cache never see half a file
    except OSError:  # a read-only cache must not stop an analysis
        pass
