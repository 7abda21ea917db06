"""Build the book: execute every chapter with papermill, then render with Jupyter Book 1.x.

The chapters and their parameter sets are declared in ``notebooks/manifest.yml``
(read and checked by :mod:`metacog.manifest`: an unknown name or a value of the wrong
type stops the build before anything runs, naming the notebook and the parameter).

Executed copies go to ``_build/src`` next to the prose pages; ``jupyter-book
build`` (with ``execute_notebooks: off``) turns that tree into HTML. One
failing chapter fails the whole build.
"""

from __future__ import annotations

import ast
import re
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from metacog import schedule
from metacog.execute import child_failure, first_lines
from metacog.manifest import (MANIFEST, BookError, Chapter, ManifestError, ParameterError,  # noqa: F401
                              _read_notebook, book_root, check_parameters, load_manifest,
                              notebook_parameters, page_title)


#: Thread counts set for a chapter's kernel when chapters run at once, each its share of the cores
#: (kernels with a BLAS thread per core each oversubscribe the machine); set values are kept.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def execute_chapter(chapter: Chapter, out_dir: Path, root: Path | None = None, *,
                    threads: int | None = None, memo_trace: Path | None = None) -> Path:
    """Execute one chapter with papermill into ``out_dir/<page>.ipynb`` (working directory:
    ``root``, default :func:`book_root`); returns that path. ``threads`` caps the kernel's BLAS
    and OpenMP threads (:data:`THREAD_VARIABLES`); ``memo_trace`` is the kernel's
    ``METACOG_MEMO_TRACE`` file (:func:`metacog.schedule.take_trace` reads it).

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
    cmd = [sys.executable, "-m", "metacog.execute", str(staged), str(target), str(params), str(root)]
    try:
        env = {**({v: str(threads) for v in THREAD_VARIABLES} if threads else {}), **os.environ,
               **({"METACOG_MEMO_TRACE": str(memo_trace)} if memo_trace else {})}
        proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env)
    finally:
        staged.unlink(missing_ok=True)
        params.unlink(missing_ok=True)
    if proc.returncode != 0:
        detail = child_failure(proc)
        raise BookError(f"chapter {chapter.page!r} ({chapter.source}) failed in {detail}")
    _finish(target, chapter.title, chapter.page)
    return target


#: An exercise label in a chapter source: '<prefix>-ex-<n>'.
EXERCISE_LABEL = r"\b[a-z][a-z0-9]*-ex-(\d+)\b"


_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})")


def readable_literals(source: str) -> str:
    """Papermill's parameter strings with each printable character put back ('\\xb7' -> '·'; the
    code means the same); control and format characters (newlines, bidi marks) stay escaped.

    >>> readable_literals('m = "qwen \\\\xb7 P(Yes)"; rtl = "\\\\u202e"; path = "C:\\\\\\\\xb7"')
    'm = "qwen · P(Yes)"; rtl = "\\\\u202e"; path = "C:\\\\\\\\xb7"'
    """
    import unicodedata
    def put_back(m):
        ch = chr(int(m.group(2)[1:], 16))
        if not ch.isprintable() or unicodedata.category(ch) in ("Cf", "Zl", "Zp") or ch in "\\\"'":
            return m.group(0)
        return m.group(1) + ch
    return _ESCAPE.sub(put_back, source)


def _finish(path: Path, title: str, page: str = "") -> None:
    """Show the parameters once (the values papermill injected, folded) and set the page title.

    A template executed as several pages (a ``title`` is given) would repeat its exercise
    labels on every page; there they become ``<page>-ex-<n>`` (e.g. ``bench-squad-ex-1``)."""
    import re

    import nbformat

    nb = nbformat.read(path, as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    if any("injected-parameters" in t for t in tags):
        # a page whose own parameters cell is tagged remove-cell shows no parameters at all
        hidden = any("parameters" in t and "remove-cell" in t for t in tags)
        for cell, t in zip(nb.cells, tags):
            if "injected-parameters" in t:  # folded: a reader sees a "show" toggle, not a code box
                t = cell.metadata["tags"] = t + ["hide-input"]
                cell.source = readable_literals(cell.source)
            if ("parameters" in t or (hidden and "injected-parameters" in t)) and "remove-cell" not in t:
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


def _shared_digest(root: Path) -> bytes:
    """Digest of what every chapter may read: the project's data folder, the package's data
    files (everything in it but Python sources, e.g. sha256 manifests) and the mirror setting.
    The Python code a chapter runs is in its own fingerprint (:func:`_code_digest`)."""
    from metacog import memo

    h = hashlib.sha256()
    files = [(root, p) for p in sorted((root / "data").rglob("*"))]
    files += [(memo.PACKAGE.parent, p) for p in sorted(memo.PACKAGE.rglob("*")) if p.suffix != ".py"]
    for base, p in files:
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(base)).encode())
            h.update(str(p.stat().st_size).encode())
            h.update(hashlib.sha256(p.read_bytes()).digest() if p.stat().st_size < 50_000_000 else b"")
    h.update(os.environ.get("METACOG_DATA_MIRROR", "").encode())
    return h.digest()


def notebook_modules(source: Path) -> list[str]:
    """The ``metacog`` modules a chapter's code cells import (``from metacog.x import y`` counts
    ``metacog.x.y`` when it is a module, else ``metacog.x``: :func:`metacog.memo._from_import`)."""
    import ast

    from metacog import memo

    names = set()
    for cell in _read_notebook(source).cells:
        if cell.cell_type != "code":
            continue
        code = "\n".join(l for l in cell.source.splitlines() if not l.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.update(memo._from_import(node.module, [a.name for a in node.names]))
    # 'metacog' itself is only the package docstring; its code_version would be the whole package
    return sorted(n for n in names if n != "metacog" and memo._module_file(n) is not None)


def _code_digest(source: Path) -> str:
    """The code a chapter runs: each ``metacog`` module its notebook imports, with everything
    those import (:func:`metacog.memo.code_version`). A change elsewhere in the package does
    not re-execute the chapter."""
    from metacog import memo

    h = hashlib.sha256()
    for module in notebook_modules(source):
        h.update(module.encode())
        h.update(memo.code_version(module).encode())
    return h.hexdigest()


def _fingerprint(chapter: Chapter, root: Path, shared: bytes) -> str:
    """What an executed chapter depends on: its source, its parameters, the code it imports
    and the shared digest."""
    h = hashlib.sha256()
    h.update((root / chapter.source).read_bytes())
    h.update(json.dumps(chapter.parameters, sort_keys=True).encode())
    h.update(_code_digest(root / chapter.source).encode())
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
    Another process building into the same ``out`` is waited for (:func:`_build_lock`).
    """
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
    with _build_lock(out):
        return _build_locked(root, out, src, chapters, only=only, html=html, reuse=reuse, jobs=jobs)


def _build_lock(out: Path):
    """An exclusive lock on the build folder ``out``, held for the whole build: a second
    ``metacog book`` on the same folder (another process) waits for the first, then reuses
    what it executed, instead of both writing the same notebooks and stamps."""
    import contextlib
    import fcntl

    @contextlib.contextmanager
    def held():
        out.mkdir(parents=True, exist_ok=True)
        with open(out / ".build.lock", "w") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print(f"[book] another build is using {out}; waiting for it to finish", flush=True)
                fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    return held()


def _build_locked(root: Path, out: Path, src: Path, chapters: list[Chapter], *, only, html: bool,
                  reuse: bool, jobs: int) -> Path:
    from concurrent.futures import ThreadPoolExecutor
    from threading import Lock

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
    todo = schedule.order(todo, out)
    threads = max(1, (os.cpu_count() or 1) // jobs) if jobs > 1 and len(todo) > 1 else None

    def run(job):
        ch, target, fp = job
        t0 = time.time()
        trace = out / f".{ch.page}.memo.tsv"
        try:
            execute_chapter(ch, src / "notebooks", root, threads=threads, memo_trace=trace)
        except BookError as exc:
            with lock:
                failures[ch.page] = str(exc)
                stamps.pop(ch.page, None)
                target.unlink(missing_ok=True)
            print(f"[book] {ch.page}: FAILED after {time.time() - t0:.1f} s ({ch.source}, parameter set "
                  f"{ch.parameter_set!r})", flush=True)
            return
        finally:
            waited = schedule.take_trace(trace, os.environ.get("METACOG_MEMO_TRACE"))
        took = time.time() - t0
        with lock:  # the stamp is written as soon as a chapter is done: a crash keeps the others
            stamps[ch.page] = fp
            stamps_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = stamps_file.with_suffix(".json.part")
            tmp.write_text(json.dumps(stamps, indent=1))
            os.replace(tmp, stamps_file)
            schedule.record(out, ch.page, took - waited)
        wait = f", {waited:.0f} s of it waiting for results another chapter was computing" if waited >= 1 else ""
        print(f"[book] {ch.page}: executed in {took:.1f} s ({ch.source}, parameter set "
              f"{ch.parameter_set!r}{wait})", flush=True)

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
                        + first_lines(proc.stdout + proc.stderr, 40))
    index = site / "_build" / "html" / "index.html"
    if not index.exists():
        raise BookError(f"jupyter-book reported success but {index} is missing; see {log}.")
    return index
