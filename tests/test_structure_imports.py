"""The package's import graph, read from the source (ast, nothing is imported): no import
loops between modules, and the low layers never import the high ones.

A module "imports" another when it names it in ``import`` / ``from ... import`` (a name
taken from a package that is a submodule counts as that submodule; importing
``a.b.c`` also runs the packages ``a.b`` and ``a``, except those the importer lives in).
Loops and the layering are checked on every import, lazy ones (inside functions) included;
the loop test on the module-level imports alone is kept too, because it names the loop that
would break ``import`` itself.

The layers, lowest first (README "Layout"): a module may import its own package and the
packages of lower layers, never a higher layer nor another package of its own layer. A chapter's
subpackage (``metacog.hypotheses.shortcut``: the chapter's API in ``__init__``, its helpers
``detect``, ``display``, ``twins``) is part of its layer's package, so its modules import each
other and their package freely; anything they import from outside obeys the same rules as any
other module of the layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "metacog"

LAYERS = (
    ("metacog.settings", "metacog.paths", "metacog.default_prose"),  # the checkout, data and caches; output checks; prose about default sources
    ("metacog.memo",),  # the results cache
    ("metacog.stats",),
    ("metacog.tidy",),  # schema, items, tables, report
    ("metacog.data",),  # public logs, recorded runs, user files
    ("metacog.benchmarks",),
    ("metacog.elicit",),  # asking models, the local panel, recording runs
    ("metacog.probe", "metacog.power"),
    ("metacog.hypotheses",),  # one module or subpackage per hypothesis chapter, verdicts
    ("metacog.pages",),  # the other pages: data, audit, benchmark, lab; hygiene
    ("metacog.result", "metacog.manifest", "metacog.schedule", "metacog.execute", "metacog.book", "metacog.chapter", "metacog.replicate", "metacog.sourcebook", "metacog.cli"),  # entry points
)


def module_names() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = list(f.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


MODULES = module_names()


def _is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _resolve(importer: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not _is_package(importer):
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(importer: str, node) -> list[str]:
    names = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        mod = _resolve(importer, node)
        for a in node.names:
            sub = f"{mod}.{a.name}"
            names.append(sub if sub in MODULES else mod)
    out = []
    own = set(_ancestors(importer))
    for n in names:
        while n and n not in MODULES:  # 'metacog.x.attr' -> 'metacog.x'
            n = n.rpartition(".")[0]
        if not n.startswith("metacog"):
            continue
        out += [p for p in _ancestors(n) if p != "metacog" and p not in own] + [n]
    return [t for t in out if t != importer]


def _type_checking(node) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _walk_eager(body):
    """Import statements run at import time (not inside functions, classes' methods or TYPE_CHECKING)."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not _type_checking(node):
                yield from _walk_eager(node.body)
            yield from _walk_eager(node.orelse)
        elif isinstance(node, (ast.Try, ast.With)):
            for part in (node.body, *(h.body for h in getattr(node, "handlers", [])),
                         getattr(node, "orelse", []), getattr(node, "finalbody", [])):
                yield from _walk_eager(part)
        elif isinstance(node, ast.ClassDef):
            yield from _walk_eager(node.body)


def import_graph(eager_only: bool) -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        nodes = (_walk_eager(tree.body) if eager_only else
                 (n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))))
        graph[name] = {t for n in nodes for t in _targets(name, n)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def _under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_graph_reader_sees_known_edges():
    g = import_graph(eager_only=True)
    assert "metacog.probe.cache" in g["metacog.probe.design"]
    assert "metacog.stats.intervals" in g["metacog.stats"]  # a package's own submodules
    assert "metacog.stats" not in g["metacog.stats.axis"]  # but not its parent, from inside
    lazy = import_graph(eager_only=False)
    assert "metacog.elicit.panel" in lazy["metacog.probe.loading"]  # imported inside a function
    assert "metacog.elicit.panel" not in g["metacog.probe.loading"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_graph_reader_sees_chapter_subpackages():
    g = import_graph(eager_only=True)
    pop = g["metacog.hypotheses.miscalibration.population"]
    assert {"metacog.hypotheses.miscalibration.audit", "metacog.hypotheses.miscalibration.null"} <= pop
    assert "metacog.hypotheses.miscalibration" not in pop  # its own package runs before it, not from it
    assert "metacog.hypotheses.miscalibration.audit" in g["metacog.hypotheses.miscalibration"]
    lazy = import_graph(eager_only=False)
    # from outside, importing a chapter's helper also runs the chapter's package
    assert {"metacog.hypotheses.shortcut", "metacog.hypotheses.shortcut.detect"} <= lazy["metacog.pages.benchmark"]


def test_settings_is_the_bottom_layer():
    assert import_graph(eager_only=False)["metacog.settings"] == set()


def test_no_import_loops():
    found = cycles(import_graph(eager_only=True))
    assert found == [], "import loops (module-level imports): " + "; ".join(" <-> ".join(c) for c in found)


def layer(name: str) -> int | None:
    for i, members in enumerate(LAYERS):
        if _under(name, members):
            return i
    return None


def _unit(name: str) -> str:
    """The layer member a module belongs to ('metacog.stats.axis' -> 'metacog.stats')."""
    return next(m for members in LAYERS for m in members if _under(name, [m]))


def test_every_module_has_a_layer():
    assert sorted(m for m in MODULES if m != "metacog" and layer(m) is None) == []


def test_no_import_loops_even_through_lazy_imports():
    found = cycles(import_graph(eager_only=False))
    assert found == [], "import loops (any import): " + "; ".join(" <-> ".join(c) for c in found)


def test_imports_run_downward_only():
    g = import_graph(eager_only=False)
    up = sorted(f"{m} -> {t}" for m, ts in g.items() if m != "metacog" for t in ts
                if layer(t) > layer(m))
    assert up == [], "imports of a higher layer: " + "; ".join(up)
    side = sorted(f"{m} -> {t}" for m, ts in g.items() if m != "metacog" for t in ts
                  if layer(t) == layer(m) and _unit(t) != _unit(m) and layer(m) < len(LAYERS) - 1)
    assert side == [], "imports across packages of one layer: " + "; ".join(side)


def test_layer_checks_would_catch_a_bad_edge():
    assert layer("metacog.data.responses") > layer("metacog.tidy.schema")
    assert layer("metacog.elicit.record") > layer("metacog.data.recorded")
    assert _unit("metacog.probe.study") != _unit("metacog.power.curves")
    assert layer("metacog.pages.lab") > layer("metacog.hypotheses.verdict")
    assert layer("metacog.pages.place.run") > layer("metacog.hypotheses.shortcut.detect")
    assert _unit("metacog.hypotheses.shortcut.detect") == _unit("metacog.hypotheses.shortcut") == "metacog.hypotheses"
    assert _unit("metacog.pages.benchmark.gate") != _unit("metacog.hypotheses.shortcut.twins")


def test_chapter_helpers_live_in_their_chapters_package():
    """A chapter's helpers are modules of its subpackage (``shortcut/detect.py``), never
    siblings named after it (``<chapter>_<helper>.py``)."""
    prefixed = []
    for pkg in ("hypotheses", "pages"):
        here = PACKAGE / pkg
        names = {p.stem for p in here.glob("*.py")} | {p.name for p in here.iterdir() if (p / "__init__.py").is_file()}
        prefixed += sorted(f"{pkg}/{m}" for m in names for n in names if m.startswith(n + "_"))
    assert prefixed == [], f"helpers named after a chapter instead of inside its package: {prefixed}"


def test_no_package_module_reaches_into_notebooks():
    for m, path in MODULES.items():
        if layer(m) is not None and layer("metacog.stats") <= layer(m) < layer("metacog.hypotheses"):
            assert "notebooks/" not in path.read_text(), f"{m} reaches into notebooks/"
