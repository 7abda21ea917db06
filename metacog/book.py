"""Build the book: execute every chapter with papermill, then render with Jupyter Book 1.x.

The chapters and their parameter sets are declared in ``notebooks/manifest.yml``.
Every chapter source is a jupytext text notebook with exactly one cell tagged
``parameters`` that holds plain literal assignments. Before anything runs, each
parameter set is checked against that cell: an unknown name or a value of the
wrong type stops the build, naming the notebook and the parameter.

Executed copies go to ``_build/src`` next to the prose pages; ``jupyter-book
build`` (with ``execute_notebooks: off``) turns that tree into HTML. One
failing chapter fails the whole build.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
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
        raise BookError(str(exc)) from None


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


def execute_chapter(chapter: Chapter, out_dir: Path, root: Path | None = None) -> Path:
    """Execute one chapter with papermill into ``out_dir/<page>.ipynb`` (working directory:
    ``root``, default :func:`book_root`); returns that path.

    papermill runs in a child process of its own. In-process it changes the process's
    working directory around every read and write of a notebook and keeps the folder it
    last saw in a module-wide handler, so chapters executed at once in threads could leave
    the caller, or a later build, in another chapter's folder. A child process shares
    none of that with the caller or with the other chapters."""
    import jupytext

    root = book_root(root).resolve()
    nb = _read_notebook(root / chapter.source)
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    staged = out_dir / f".{chapter.page}.source.ipynb"
    params = out_dir / f".{chapter.page}.parameters.txt"
    jupytext.write(nb, staged, fmt="ipynb")
    params.write_text(repr(chapter.parameters))
    target = out_dir / f"{chapter.page}.ipynb"
    cmd = [sys.executable, "-m", "metacog.book", str(staged), str(target), str(params), str(root)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    finally:
        staged.unlink(missing_ok=True)
        params.unlink(missing_ok=True)
    if proc.returncode != 0:
        detail = _child_failure(proc)
        raise BookError(f"chapter {chapter.page!r} ({chapter.source}) failed in {detail}")
    _finish(target, chapter.title, chapter.page)
    return target


#: The line a child execution prints before its failure's description.
_FAILURE_MARK = "metacog-book-chapter-failure:"


def _child_failure(proc: subprocess.CompletedProcess) -> str:
    """What went wrong in a child execution, from the line it printed (or its stderr)."""
    out = proc.stdout or ""
    if _FAILURE_MARK in out:
        return json.loads(out.rsplit(_FAILURE_MARK, 1)[1].strip().splitlines()[0])
    return f"the executing process (exit {proc.returncode}): {_first_lines(proc.stderr or out, 12)}"


def _execute_here(staged: str, target: str, params: str, root: str) -> int:
    """The child process of :func:`execute_chapter`: run papermill with the kernel in ``root``.
    On failure print one marked JSON line describing it and return 1."""
    import papermill

    try:
        papermill.execute_notebook(
            staged, target, parameters=ast.literal_eval(Path(params).read_text()), cwd=root,
            kernel_name="python3", progress_bar=False, log_output=False)
    except Exception as exc:  # papermill raises many types; describe it for the parent
        if hasattr(exc, "ename"):  # papermill's PapermillExecutionError
            frames = _strip_ansi("\n".join(getattr(exc, "traceback", []) or []))
            detail = (f"code cell {exc.exec_count}: {exc.ename}: {exc.evalue}\n"
                      f"{_first_lines(frames, 12)}")
        else:
            detail = f"{type(exc).__name__}: {_first_lines(str(exc))}"
        print(_FAILURE_MARK, json.dumps(detail), flush=True)
        return 1
    return 0


#: An exercise label in a chapter source: '<prefix>-ex-<n>'.
EXERCISE_LABEL = r"\b[a-z][a-z0-9]*-ex-(\d+)\b"


def _finish(path: Path, title: str, page: str = "") -> None:
    """Show the parameters once (the values papermill injected) and set the page title.

    A template executed as several pages (a ``title`` is given) would repeat its exercise
    labels on every page; there they become ``<page>-ex-<n>`` (e.g. ``bench-squad-ex-1``).
    """
    import re

    import nbformat

    nb = nbformat.read(path, as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    if any("injected-parameters" in t for t in tags):
        for cell, t in zip(nb.cells, tags):
            if "parameters" in t and "remove-cell" not in t:
                cell.metadata["tags"] = t + ["remove-cell"]
    if title:
        for cell in nb.cells:
            if cell.cell_type == "markdown" and any(l.startswith("# ") for l in cell.source.splitlines()):
                lines = cell.source.splitlines()
                i = next(i for i, l in enumerate(lines) if l.startswith("# "))
                lines[i] = f"# {title}"
                cell.source = "\n".join(lines)
                break
        if page:
            slug = page.replace("_", "-")
            for cell in nb.cells:
                if cell.cell_type == "markdown":
                    cell.source = re.sub(EXERCISE_LABEL, lambda m: f"{slug}-ex-{m.group(1)}", cell.source)
    nbformat.write(nb, path)


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _first_lines(text: str, n: int = 25) -> str:
    lines = text.strip().splitlines()
    return "\n".join(lines[-n:])


def _shared_digest(root: Path) -> bytes:
    """Digest of what every chapter depends on: the package, the data caches and the mirror setting."""
    h = hashlib.sha256()
    for folder in ("metacog", "data"):
        for p in sorted((root / folder).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                h.update(str(p.relative_to(root)).encode())
                h.update(str(p.stat().st_size).encode())
                h.update(hashlib.sha256(p.read_bytes()).digest() if p.stat().st_size < 50_000_000 else b"")
    h.update(os.environ.get("METACOG_DATA_MIRROR", "").encode())
    return h.digest()


def _fingerprint(chapter: Chapter, root: Path, shared: bytes) -> str:
    """What an executed chapter depends on: its source, its parameters and the shared digest."""
    h = hashlib.sha256()
    h.update((root / chapter.source).read_bytes())
    h.update(json.dumps(chapter.parameters, sort_keys=True).encode())
    h.update(shared)
    return h.hexdigest()


def default_jobs() -> int:
    """Chapters executed at once: ``$METACOG_BOOK_JOBS``, else the number of CPUs (at most 4)."""
    env = os.environ.get("METACOG_BOOK_JOBS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise BookError(f"METACOG_BOOK_JOBS={env!r}: give a whole number of chapters, 1 or more.")
        return int(env)
    return max(1, min(4, os.cpu_count() or 1))


def build(root: Path | None = None, *, only: list[str] | None = None, html: bool = True,
          reuse: bool = True, out: Path | None = None, jobs: int | None = None) -> Path:
    """Execute the chapters and render the book; return the path of index.html.

    ``root`` defaults to :func:`book_root`; ``out`` to ``<root>/_build``. ``jobs`` chapters
    run at once, each in its own kernel (default :func:`default_jobs`); a chapter that
    fails does not stop the others, and the build then fails naming every failed chapter.
    """
    from concurrent.futures import ThreadPoolExecutor
    from threading import Lock

    root = book_root(root)
    out = out or root / "_build"
    src = out / "src"
    jobs = default_jobs() if jobs is None else int(jobs)
    if jobs < 1:
        raise BookError(f"jobs={jobs}: at least one chapter must run at a time.")
    chapters = load_manifest(root)
    unknown = sorted(set(only or ()) - {ch.page for ch in chapters})
    if unknown:
        raise ManifestError(f"--only {' '.join(unknown)}: no such page in {MANIFEST}; the pages are "
                            f"{', '.join(ch.page for ch in chapters)}.")
    titles: dict[str, str] = {}
    for ch in chapters:
        title = ch.title or page_title(root / ch.source)
        if title in titles:
            raise BookError(f"pages {titles[title]!r} and {ch.page!r} share the title {title!r}; "
                            f"every page needs a distinct title.")
        titles[title] = ch.page
    _stage_static(root, src)
    stamps_file = out / "executed.json"
    stamps = json.loads(stamps_file.read_text()) if stamps_file.exists() and reuse else {}
    failures: dict[str, str] = {}
    shared = _shared_digest(root)
    lock = Lock()
    todo = []
    for ch in chapters:
        if only and ch.page not in only:
            continue
        target = src / "notebooks" / f"{ch.page}.ipynb"
        fp = _fingerprint(ch, root, shared)
        if reuse and stamps.get(ch.page) == fp and target.exists():
            print(f"[book] {ch.page}: unchanged, reusing the executed copy", flush=True)
            continue
        todo.append((ch, target, fp))

    def run(job):
        ch, target, fp = job
        t0 = time.time()
        print(f"[book] {ch.page}: executing {ch.source} with parameter set {ch.parameter_set!r}", flush=True)
        try:
            execute_chapter(ch, src / "notebooks", root)
        except BookError as exc:
            with lock:
                failures[ch.page] = str(exc)
                stamps.pop(ch.page, None)
                target.unlink(missing_ok=True)
            print(f"[book] {ch.page}: FAILED", flush=True)
            return
        with lock:  # the stamp is written as soon as a chapter is done: a crash keeps the others
            stamps[ch.page] = fp
            stamps_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = stamps_file.with_suffix(".json.part")
            tmp.write_text(json.dumps(stamps, indent=1))
            os.replace(tmp, stamps_file)
        print(f"[book] {ch.page}: done in {time.time() - t0:.1f}s", flush=True)

    if jobs == 1 or len(todo) <= 1:
        for job in todo:
            run(job)
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(run, todo))
    if failures:
        order = [ch.page for ch in chapters if ch.page in failures]
        raise BookError("the book was not built; failing chapter(s):\n"
                        + "\n\n".join(failures[p] for p in order))
    missing = [ch.page for ch in chapters if not (src / "notebooks" / f"{ch.page}.ipynb").exists()]
    if missing:
        raise BookError(f"chapters {missing} have no executed copy; run without --only first.")
    if not html:
        return src
    return render(src, out)


def _stage_static(root: Path, src: Path) -> None:
    src.mkdir(parents=True, exist_ok=True)
    for name in ("_config.yml", "_toc.yml", "references.bib"):
        if (root / name).exists():
            shutil.copy2(root / name, src / name)
    if (src / "book").exists():
        shutil.rmtree(src / "book")
    shutil.copytree(root / "book", src / "book")


def render(src: Path, out: Path) -> Path:
    """Run ``jupyter-book build`` (warnings are errors) on the staged tree."""
    site = out / "site"
    if site.exists():
        shutil.rmtree(site)
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb), "build", str(src), "--path-output", str(site), "-W", "-n", "--keep-going"]
    print("[book] " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log = out / "jupyter-book.log"
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise BookError(f"jupyter-book build failed (exit {proc.returncode}); full log in {log}:\n"
                        + _first_lines(proc.stdout + proc.stderr, 40))
    index = site / "_build" / "html" / "index.html"
    if not index.exists():
        raise BookError(f"jupyter-book reported success but {index} is missing; see {log}.")
    return index


if __name__ == "__main__":  # the child process of execute_chapter
    sys.exit(_execute_here(*sys.argv[1:5]))
