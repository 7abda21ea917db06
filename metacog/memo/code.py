"""What a stored result depends on in the package's own code: the source files a module reaches
through its imports (:func:`code_version`, for the book's chapter fingerprints) and the functions,
classes and constants a function reaches (:func:`code_digest`, for :func:`metacog.memo.memo`'s keys).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path

#: The ``metacog`` package folder (the package's own sources, never the checkout around it).
PACKAGE = Path(importlib.util.find_spec("metacog").origin).resolve().parent


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
    """The ``metacog`` modules a source file imports (absolute and relative imports;
    :func:`_from_import` says which a ``from ... import`` reads)."""
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
            out.update(_from_import(base, [a.name for a in node.names]))
    return {m for m in out if _module_file(m) is not None}


def _from_import(base: str, names: list[str]) -> set[str]:
    """The ``metacog`` modules ``from base import names`` reads: each name that is a module of
    its own, and ``base`` itself only when some name is defined there (or ``*``). Python also
    runs the package's ``__init__`` to import a submodule, but the submodule's code does not
    read it, so ``from metacog.hypotheses.shortcut import detect`` does not tie a page to the
    shortcut chapter's own module."""
    subs = {f"{base}.{n}" for n in names if n != "*" and _module_file(f"{base}.{n}") is not None}
    return subs | ({base} if len(subs) < len(names) else set())


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


def _is_ours(obj) -> bool:
    mod = getattr(obj, "__module__", None) or ""
    return mod == "metacog" or mod.startswith("metacog.")


def _unwrap(obj):
    """The plain function behind decorators (``functools.wraps``), caches and partials."""
    for _ in range(10):
        inner = getattr(obj, "__wrapped__", None) or getattr(obj, "func", None)
        if inner is None or inner is obj or not callable(inner):
            return obj
        obj = inner
    return obj


def _code_names(code) -> set[str]:
    """Every global or attribute name a code object and its nested code (lambdas,
    comprehensions, inner functions) refers to, including the modules of function-level imports."""
    import types

    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _imported_modules(code, module: str) -> set[str]:
    """The ``metacog`` modules that imports inside ``code`` (and its nested code) name, relative
    ones resolved against ``module``'s package, whether or not they have been imported yet: a
    function that imports what it needs when it runs reaches the same code in every process."""
    import dis
    import types

    f = _module_file(module)
    package = module if f is not None and f.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    ins = list(dis.get_instructions(code))
    for i, op in enumerate(ins):
        if op.opname != "IMPORT_NAME":
            continue
        level = ins[i - 2].argval if i >= 2 and ins[i - 2].opname == "LOAD_CONST" else 0
        names = ins[i - 1].argval if i >= 1 and ins[i - 1].opname == "LOAD_CONST" else None
        try:
            full = importlib.util.resolve_name("." * level + op.argval, package) if level else op.argval
        except (ImportError, ValueError):
            continue
        # `import x` reads x; `from x import a, b` reads what _from_import says (x itself only for
        # names defined there), as the chapters' fingerprints count it
        out.update(_from_import(full, [n for n in names if isinstance(n, str)]) if names else {full})
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _imported_modules(const, module)
    return {m for m in out if _module_file(m) is not None}


def _import(name: str):
    """The module ``name``, imported if need be; None when it cannot be (e.g. an optional extra)."""
    import importlib

    try:
        return importlib.import_module(name)
    except Exception:  # an optional dependency missing: the key then leaves that module out
        return None


def _held_callables(value, depth: int = 3) -> list:
    """The callables a module-level container holds (a registry of functions: a dict of
    name -> function, a list of (name, function) pairs), looked for ``depth`` levels down."""
    if depth == 0 or not isinstance(value, (dict, list, tuple, set, frozenset)) or len(value) >= 1000:
        return []
    items = list(value.keys()) + list(value.values()) if isinstance(value, dict) else list(value)
    found = [v for v in items if callable(v)]
    for v in items:
        if not callable(v):
            found += _held_callables(v, depth - 1)
    return found


def _constant_digest(value) -> str | None:
    """A stable text for a plain module-level constant, or None for anything else."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if isinstance(value, (tuple, list, frozenset, set)) and len(value) < 1000:
        parts = [_constant_digest(v) for v in (sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value)]
        return None if None in parts else f"{type(value).__name__}({','.join(parts)})"
    if isinstance(value, dict) and len(value) < 1000:
        parts = [(_constant_digest(k), _constant_digest(v)) for k, v in sorted(value.items(), key=repr)]
        return None if any(None in kv for kv in parts) else repr(parts)
    return None


@functools.cache
def code_digest(func) -> str:
    """sha256 of the source of ``func`` and of every ``metacog`` function, class and plain
    module-level constant it reaches, following names in its code (and in the code of what it
    reaches) through module globals and ``metacog`` module attributes.

    This is what a memoized result is keyed on: an edit to a function the analysis never calls,
    such as a sentence helper in the same module, leaves the key, and the stored result, alone.
    """
    import inspect
    import sys
    import types

    h = hashlib.sha256()
    seen: set[int] = set()
    todo = [_unwrap(func)]
    while todo:
        obj = _unwrap(todo.pop())
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, type):
            members = [m for m in vars(obj).values() if isinstance(m, (types.FunctionType, classmethod,
                                                                        staticmethod, property))]
            codes = []
            for m in members:
                f = m.fget if isinstance(m, property) else getattr(m, "__func__", m)
                if isinstance(f, types.FunctionType):
                    codes.append(f)
            try:
                src = inspect.getsource(obj)
            except (OSError, TypeError):
                src = obj.__qualname__
            h.update(f"class {obj.__module__}.{obj.__qualname__}\n{src}".encode())
            todo.extend(codes)
            glob = vars(sys.modules.get(obj.__module__, types.ModuleType("x")))
            names = set().union(*(_code_names(f.__code__) for f in codes)) if codes else set()
            lazy = []  # the methods' own imports are followed when each method is visited
        elif isinstance(obj, types.FunctionType):
            try:
                src = inspect.getsource(obj)
            except (OSError, TypeError):
                src = obj.__code__.co_code.hex()
            h.update(f"def {obj.__module__}.{obj.__qualname__}\n{src}".encode())
            for cell in obj.__closure__ or ():
                try:
                    v = cell.cell_contents
                except ValueError:
                    continue
                if callable(v) and _is_ours(_unwrap(v)):
                    todo.append(v)
            glob = obj.__globals__
            names = _code_names(obj.__code__)
            lazy = [_import(m) for m in sorted(_imported_modules(obj.__code__, obj.__module__))]
        else:
            continue
        modules = [glob[n] for n in names if isinstance(glob.get(n), types.ModuleType)]
        modules += [m for m in lazy if m is not None]
        modules = [m for m in modules if m.__name__ == "metacog" or m.__name__.startswith("metacog.")]
        for n in sorted(names):
            candidates = [glob[n]] if n in glob else []
            candidates += [getattr(m, n) for m in modules if hasattr(m, n)]
            for v in candidates:
                if isinstance(v, types.ModuleType):
                    continue
                if callable(v) and _is_ours(_unwrap(v)):
                    todo.append(v)
                elif not callable(v):
                    todo.extend(f for f in _held_callables(v) if _is_ours(_unwrap(f)))
                    text = _constant_digest(v)
                    if text is not None:
                        h.update(f"const {n}={text}\n".encode())
    return h.hexdigest()
