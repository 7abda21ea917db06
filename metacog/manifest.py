"""The book's manifest (``notebooks/manifest.yml``) and the chapters' ``parameters`` cells.

:func:`load_manifest` reads the manifest and checks every parameter set against its
notebook's single ``parameters`` cell (:func:`check_parameters`): an unknown name or a value
of the wrong type stops everything before anything runs, naming the notebook and the
parameter. A manifest that cannot be read raises :class:`ManifestError` (bad input; the
command line exits 2). :mod:`metacog.book` builds from what this returns.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from metacog import settings

MANIFEST = "notebooks/manifest.yml"


class BookError(RuntimeError):
    """The book could not be built; the message says which chapter and why."""


class ParameterError(BookError, ValueError):
    """A parameter set does not fit a notebook's parameters cell."""


class ManifestError(BookError, ValueError):
    """The manifest cannot be read, or asks for something it does not define (bad input:
    the command line exits 2)."""


def book_root(root: str | Path | None = None) -> Path:
    """``root`` as a path, else the checkout :func:`metacog.settings.project_root` finds
    (``$METACOG_PROJECT_ROOT`` or the nearest folder above the current one holding
    ``notebooks/manifest.yml``). Raises :class:`BookError` naming the variable when there
    is none."""
    if root is not None:
        return Path(root)
    try:
        return settings.require_project_root("the book")
    except settings.ProjectRootError as exc:
        raise ManifestError(str(exc)) from None  # an environment error: exit 2


@dataclass
class Chapter:
    page: str  # page name in the book and file stem of the executed notebook
    source: Path  # jupytext source, relative to the repo root
    parameter_set: str
    parameters: dict = field(default_factory=dict)
    title: str = ""  # overrides the source's '# Title' (one template, several pages)


def _read_notebook(path: Path):
    import jupytext

    fmt = {".md": "md:myst", ".py": "py:percent"}.get(path.suffix)
    if fmt is None:
        raise BookError(f"{path}: chapter sources are MyST markdown (.md) or percent scripts (.py).")
    try:
        return jupytext.read(path, fmt=fmt)
    except Exception as exc:  # jupytext raises many types; name the file
        raise BookError(f"{path}: cannot be read as a jupytext notebook ({exc}).") from None


def notebook_parameters(path: Path) -> dict:
    """The defaults in the notebook's single ``parameters`` cell, as Python values."""
    nb = _read_notebook(path)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ParameterError(f"{path}: needs exactly one cell tagged 'parameters', found {len(cells)}.")
    try:
        tree = ast.parse(cells[0].source)
    except SyntaxError as exc:
        raise ParameterError(f"{path}: the parameters cell is not valid Python ({exc.msg}, "
                             f"line {exc.lineno}).") from None
    params = {}
    for node in tree.body:
        if not (isinstance(node, (ast.Assign, ast.AnnAssign))):
            raise ParameterError(f"{path}: parameters cell line {node.lineno}: only plain "
                                 f"assignments of literals are allowed.")
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            raise ParameterError(f"{path}: parameters cell line {node.lineno}: assign one name at a time.")
        try:
            value = ast.literal_eval(node.value)
        except ValueError:
            raise ParameterError(f"{path}: parameter {targets[0].id!r} (line {node.lineno}) is not "
                                 f"a plain literal; parameters hold literals only.") from None
        params[targets[0].id] = value
    return params


def _type_ok(default, value) -> bool:
    if default is None or value is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, (list, tuple)):
        if not isinstance(value, (list, tuple)):
            return False
        kinds = {type(x) for x in default}
        return not kinds or all(type(x) in kinds or (float in kinds and isinstance(x, int)) for x in value)
    return isinstance(value, type(default))


def check_parameters(source: Path, parameters: dict, *, set_name: str = "") -> dict:
    """Merge ``parameters`` over the notebook defaults, refusing unknown names and wrong types."""
    defaults = notebook_parameters(source)
    where = f"{source}" + (f" (parameter set {set_name!r})" if set_name else "")
    for name, value in parameters.items():
        if name not in defaults:
            raise ParameterError(f"{where}: unknown parameter {name!r}; the notebook's parameters "
                                 f"are {sorted(defaults)}.")
        if not _type_ok(defaults[name], value):
            raise ParameterError(f"{where}: parameter {name!r} should be like {defaults[name]!r} "
                                 f"({type(defaults[name]).__name__}), got {value!r} "
                                 f"({type(value).__name__}).")
    return {**defaults, **parameters}


def load_manifest(root: Path | None = None, manifest: str = MANIFEST) -> list[Chapter]:
    """Read and check the manifest: every chapter, its source and its merged parameters.
    ``root`` defaults to :func:`book_root`."""
    root = book_root(root)
    path = root / manifest
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{path}: no such manifest.") from None
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8.") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ManifestError(f"{path}: not valid YAML{where} ({getattr(exc, 'problem', None) or exc}).") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("chapters"), list) or not spec["chapters"]:
        raise ManifestError(f"{path}: needs a mapping with a non-empty list 'chapters' (each with page, "
                            f"source and parameters) and a mapping 'parameter_sets'.")
    sets = spec.get("parameter_sets", {}) or {}
    if not isinstance(sets, dict) or not all(isinstance(v, dict) or v is None for v in sets.values()):
        raise ManifestError(f"{path}: 'parameter_sets' must map each set's name to its parameters.")
    chapters, pages = [], set()
    for n, entry in enumerate(spec["chapters"], 1):
        if not isinstance(entry, dict):
            raise ManifestError(f"{path}: chapter {n} is {entry!r}; each chapter is a mapping with "
                                f"page, source and parameters.")
        missing = {"page", "source", "parameters"} - set(entry)
        if missing:
            raise ManifestError(f"{path}: chapter {n} lacks {sorted(missing)}.")
        if entry["page"] in pages:
            raise ManifestError(f"{path}: page {entry['page']!r} is listed twice.")
        pages.add(entry["page"])
        source = root / str(entry["source"])
        if not source.is_file():
            raise ManifestError(f"{path}: chapter {entry['page']!r}: source {entry['source']} does not exist.")
        set_name = entry["parameters"]
        if not isinstance(set_name, str) or set_name not in sets:
            raise ManifestError(f"{path}: chapter {entry['page']!r}: parameter set {set_name!r} is not "
                                f"defined under parameter_sets (defined: {sorted(sets)}).")
        params = check_parameters(source, sets[set_name] or {}, set_name=set_name)
        chapters.append(Chapter(entry["page"], Path(entry["source"]), set_name, params,
                                str(entry.get("title", ""))))
    return chapters


def page_title(source: Path) -> str:
    """The first level-1 heading of a notebook source."""
    nb = _read_notebook(source)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    raise BookError(f"{source}: has no '# Title' heading; every page needs a distinct title.")
