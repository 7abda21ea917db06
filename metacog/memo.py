"""Remember the results of slow analyses on disk, keyed by their inputs and the package's code.

``memo(func, *args, **kwargs)`` returns ``func(*args, **kwargs)``, computing it only when no
result is stored for the same function, the same arguments and the same source code of the
function's module and every ``metacog`` module it imports, directly or not. Results live in ``<cache>/results/`` where ``<cache>`` is
``$METACOG_CACHE_DIR`` (else ``$XDG_CACHE_HOME/metacog``, else ``~/.cache/metacog``); set
``METACOG_NO_MEMO=1`` to always recompute. Writes are atomic, so a killed process leaves no
half-written result, and an unreadable stored result is recomputed rather than trusted.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

PACKAGE = Path(__file__).resolve().parent


def _module_file(name: str) -> Path | None:
    """The source file of a ``metacog`` module name, or None when it is not part of the package."""
    if name != "metacog" and not name.startswith("metacog."):
        return None
    parts = name.split(".")[1:]
    if not parts:
        return PACKAGE / "__init__.py"
    rel = Path(*parts)
    for cand in (PACKAGE / rel.with_suffix(".py"), PACKAGE / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports(path: Path, name: str) -> set[str]:
    """The ``metacog`` modules a source file imports (absolute and relative imports)."""
    import ast

    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in out if _module_file(m) is not None}


@functools.cache
def code_version(module: str = "metacog") -> str:
    """sha256 of the source of ``module`` and of every ``metacog`` module it imports, directly
    or not: a change to any of them gives new keys, a change elsewhere in the package does not.
    ``code_version()`` (the whole package) hashes every .py file."""
    if module == "metacog":
        files = sorted(PACKAGE.rglob("*.py"))
    else:
        seen, todo = set(), [module]
        while todo:
            m = todo.pop()
            if m in seen:
                continue
            seen.add(m)
            f = _module_file(m)
            if f is not None:
                todo.extend(_imports(f, m) - seen)
        files = sorted({_module_file(m) for m in seen} - {None})
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(PACKAGE)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


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
    h.update(code_version(func.__module__).encode())
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
    if os.environ.get("METACOG_NO_MEMO"):
        return func(*args, **kwargs)
    k = key(func, args, kwargs)
    path = folder() / f"{k}.pkl"
    if path.exists():
        try:
            with path.open("rb") as fh:
                stored = pickle.load(fh)
        except Exception:  # unpickling a damaged file can raise almost anything: recompute it
            stored = None
        # Each result is stored with its own key: a foreign or truncated file at this path, or a
        # result stored under another key, is recomputed and replaced, never returned.
        if isinstance(stored, dict) and stored.get("memo_key") == k and "result" in stored:
            return stored["result"]
        path.unlink(missing_ok=True)
    result = func(*args, **kwargs)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".part") as tmp:
            pickle.dump({"memo_key": k, "result": result}, tmp, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp.name, path)  # atomic: processes sharing the cache never see half a file
    except OSError:  # a read-only cache must not stop an analysis
        pass
    return result
