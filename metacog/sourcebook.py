"""The whole book on a researcher's own response files (``metacog book --source FILE --out DIR``).

:func:`build`

1. checks the files once (:func:`metacog.chapter.validate_sources`: a bad file stops
   everything before any chapter executes, :class:`~metacog.chapter.ChapterInputError`);
2. decides, page by page, whether the files can serve it: a hypothesis chapter when they hold
   what it needs by its own minimums (:func:`metacog.hypotheses.serving.shortfall`), the audit
   page when they hold answers under its policies, the findings page when any hypothesis chapter
   is served; every other page reads the book's own recorded runs or public logs and is listed
   as not served, with the reason;
3. executes the served pages with each chapter's default parameter set, ``sources`` replaced by
   the files (:func:`metacog.hypotheses.serving.reaim`), several at once
   (:func:`metacog.book.execute_chapter`), the findings page last; a page executed before on the
   same files, parameters and code is reused;
4. renders them as one Jupyter Book 1.x with an index page (served and not served pages,
   reasons), offline MathJax and warnings as errors (:func:`metacog.book.render`), and copies
   the HTML to ``DIR/html``.

Pages name the files by their file names only, never their folders.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from metacog import book
from metacog.book import BookError, Chapter, book_root, check_parameters, execute_chapter, load_manifest
from metacog.chapter import ChapterInputError, _one_page_config, source_arg, validate_sources
from metacog.default_prose import DEFAULT_PROSE, drop_default_prose  # noqa: F401 (the book's name for it)
from metacog.hypotheses import serving

#: Why a page that takes no response file is not served, by notebook stem.
NOT_READ = {
    "benchmark": "a benchmark page: it reads the book's own recorded runs of one benchmark",
    "benchmarks": "it compares the benchmark pages, which read the book's own recorded runs",
    "data": "it describes the public logs the book reads by default",
    "place": "it places one model among a public panel, from that panel's own data",
    "lab": "it asks (or replays) a local model live; it compares with response files but analyses none",
}
FINDINGS, AUDIT = "findings", "audit"


@dataclass
class SourceBook:
    """What :func:`build` made: ``executed`` ({page: executed notebook}), ``not_served``
    ({page: why}), ``titles`` ({page: title}), ``reused`` (pages taken from an earlier build)
    and ``index`` (the book's index.html in ``DIR/html``; None without HTML)."""

    sources: list[str]
    executed: dict[str, Path] = field(default_factory=dict)
    not_served: dict[str, str] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    reused: list[str] = field(default_factory=list)
    index: Path | None = None

    def summary(self) -> pd.DataFrame:
        """One row per page of the manifest: page, title, served (True/False), reused and reason."""
        rows = [{"page": p, "title": self.titles.get(p, p), "served": p in self.executed,
                 "reused": p in self.reused, "reason": self.not_served.get(p, "")}
                for p in self.titles]
        return pd.DataFrame(rows, columns=["page", "title", "served", "reused", "reason"])


def check_files(sources: list[str]) -> list[str]:
    """The given files as absolute paths, each loaded and checked once; raises
    :class:`ChapterInputError` (one line) for a missing, unreadable or ill-formed file."""
    if not sources:
        raise ChapterInputError("give at least one --source FILE (a CSV, Parquet or JSONL response file).")
    resolved = [source_arg(s) for s in sources]
    for given, path in zip(sources, resolved):
        if not os.path.isfile(path):
            raise ChapterInputError(
                f"--source {given}: no such file; metacog book --source takes your own response files "
                f"(CSV, Parquet or JSONL with model, item_id, probe, confidence, correct), e.g. one made "
                f"by 'metacog example-data --out my_panel.csv'.")
    validate_sources(resolved)
    return resolved


def plan(frames: dict, root: Path | None = None) -> tuple[list[Chapter], dict[str, str], dict[str, str]]:
    """(the served chapters re-aimed at ``frames``' sources, {page: why not served}, {page: title})
    for every page of the manifest, in its order, the findings page last."""
    from metacog.pages.audit import policies

    root = book_root(root)
    served, why, titles = [], {}, {}
    for ch in load_manifest(root):
        stem = ch.source.stem
        titles[ch.page] = ch.title or book.page_title(root / ch.source)
        params = None
        if stem in serving.CHAPTERS:
            why[ch.page] = serving.shortfall(stem, frames, ch.parameters)
            params = serving.reaim(stem, ch.parameters, frames)
        elif stem == AUDIT:
            why[ch.page] = "" if any(policies(df) for df in frames.values()) else (
                "needs answers under the audit policies c0, c1 or c2; the file has none")
            params = {**ch.parameters, "sources": list(frames), "cuts": {}}
        elif stem == FINDINGS:
            params = {**ch.parameters, "sources": list(frames)}
        else:
            why[ch.page] = NOT_READ.get(stem, "it takes no response file (its notebook has no sources parameter)")
        if params is not None and not why.get(ch.page):
            why.pop(ch.page, None)
            served.append(Chapter(ch.page, ch.source, ch.parameter_set,
                                  check_parameters(root / ch.source, params, set_name=ch.parameter_set), ch.title))
    gathered = [c for c in served if c.source.stem != FINDINGS]
    if not any(c.source.stem in serving.CHAPTERS for c in gathered):
        why.update({c.page: "it gathers the hypothesis chapters' verdicts, and the file serves none of them"
                    for c in served if c.source.stem == FINDINGS})
        served = gathered
    return gathered + [c for c in served if c.source.stem == FINDINGS], why, titles


def _files_digest(paths: list[str]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.encode())
        h.update(hashlib.sha256(Path(p).read_bytes()).digest())
    return h.hexdigest()


def _hide_folders(notebook: Path, paths: list[str]) -> None:
    """Name every file by its file name only in the executed notebook (parameters, outputs)."""
    text = notebook.read_text(encoding="utf-8")
    for p in sorted(paths, key=len, reverse=True):
        text = text.replace(p, Path(p).name)
    notebook.write_text(text, encoding="utf-8")


def build(sources: list, out, *, jobs: int | None = None, html: bool = True, log=None,
          root: Path | None = None) -> SourceBook:
    """Build the book on the response files ``sources`` into ``out`` (executed notebooks in
    ``out/src/notebooks``, the HTML in ``out/html``); return a :class:`SourceBook`.

    Raises :class:`ChapterInputError` for bad input (nothing executed) and
    :class:`metacog.book.BookError` naming every chapter that failed (the others are kept and
    reused by the next build).

    Examples
    --------
    A file that is not there stops the build before any chapter runs, with one line saying what
    to give instead:

    >>> try:
    ...     build(["no_such_answers.csv"], "book_out", html=False)
    ... except ChapterInputError as err:
    ...     print(err)
    --source no_such_answers.csv: no such file; metacog book --source takes your own response files ...
    """
    say = log or (lambda _msg: None)
    root, out = book_root(root).resolve(), Path(out).resolve()
    given = [str(s) for s in sources]
    resolved = check_files(given)
    jobs = book.default_jobs() if jobs is None else int(jobs)
    if jobs < 1:
        raise ChapterInputError(f"--jobs {jobs}: at least one chapter must run at a time.")
    frames = serving.load(resolved)
    chapters, why, titles = plan(frames, root)
    result = SourceBook([Path(p).name for p in resolved], not_served=why, titles=titles)
    for page, reason in why.items():
        say(f"{page}: not served ({reason})")
    with book._build_lock(out):
        _execute(chapters, out, root, resolved, jobs, result, say)
        if html:
            result.index = render(result, out, root)
    return result


def _execute(chapters: list[Chapter], out: Path, root: Path, files: list[str], jobs: int,
             result: SourceBook, say) -> None:
    """Execute ``chapters`` into ``out/src/notebooks`` (the findings page after the others),
    reusing a copy whose stamp matches; raise BookError naming every chapter that failed."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Lock

    target_dir = out / "src" / "notebooks"
    target_dir.mkdir(parents=True, exist_ok=True)
    stamps_file = out / "executed.json"
    stamps = json.loads(stamps_file.read_text()) if stamps_file.exists() else {}
    shared = book._shared_digest(root) + _files_digest(files).encode()
    lock, failures = Lock(), {}
    todo = []
    for ch in chapters:
        fp = book._fingerprint(ch, root, shared)
        target = target_dir / f"{ch.page}.ipynb"
        if stamps.get(ch.page) == fp and target.exists():
            say(f"{ch.page}: unchanged, reusing the executed copy")
            result.reused.append(ch.page)
            result.executed[ch.page] = target
        else:
            todo.append((ch, fp))
    threads = max(1, (os.cpu_count() or 1) // jobs) if jobs > 1 else None

    def save():  # under the lock: written as each chapter ends, so a crash keeps the others
        tmp = stamps_file.with_suffix(".json.part")
        tmp.write_text(json.dumps(stamps, indent=1))
        os.replace(tmp, stamps_file)

    def run(job):
        ch, fp = job
        t0 = time.time()
        with lock:
            stamps.pop(ch.page, None)
            save()
        try:
            executed = execute_chapter(ch, target_dir, root, threads=threads)
        except BookError as exc:
            with lock:
                failures[ch.page] = str(exc)
                (target_dir / f"{ch.page}.ipynb").unlink(missing_ok=True)  # no half-executed copy
            say(f"{ch.page}: FAILED after {time.time() - t0:.1f} s")
            return
        _hide_folders(executed, files)
        with lock:
            result.executed[ch.page] = executed
            stamps[ch.page] = fp
            save()
        say(f"{ch.page}: executed in {time.time() - t0:.1f} s")

    first = [j for j in todo if j[0].source.stem != FINDINGS]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(run, first))
    if not failures:
        for job in todo[len(first):]:
            run(job)
    if failures:
        raise BookError("the book was not built; failing chapter(s):\n" + "\n\n".join(failures.values()))


def _toc_order(root: Path) -> list[str]:
    """The book's reading order: the notebook pages of ``_toc.yml``, in order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text()) or {}
    found = []

    def walk(node):
        if isinstance(node, dict):
            if str(node.get("file", "")).startswith("notebooks/"):
                found.append(node["file"].split("/", 1)[1])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc)
    return found


_DOC = re.compile(r"\{doc\}`([^`<]*?)\s*(?:<([^`>]+)>)?`")
#: A glossary term: the book's glossary is a prose page about its default panels, not part of this book.
_TERM = re.compile(r"\{term\}`([^`<]*?)\s*(?:<[^`>]+>)?`")


def _stage_page(notebook: Path, pages: set[str], titles: dict[str, str], root: Path) -> None:
    """Leave out the cells about the chapter's default sources (tagged :data:`DEFAULT_PROSE`), and
    turn each ``{doc}`` link to a page this book lacks into plain text (its title) and each glossary
    ``{term}`` into its words, so the warnings-as-errors render has no dangling reference."""
    import nbformat

    def plain(m):
        text, target = (m.group(1), m.group(2)) if m.group(2) else ("", m.group(1))
        target = target.strip()
        if target in pages:
            return m.group(0)
        if text.strip():
            return text.strip()
        name = Path(target).name
        if name in titles:
            return f"*{titles[name]}*"
        md = (root / "notebooks" / target).with_suffix(".md")
        return f"*{book.page_title(md)}*" if md.is_file() else name.replace("_", " ")

    drop_default_prose(notebook)
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _TERM.sub(lambda m: m.group(1).strip(), _DOC.sub(plain, cell.source))
    nbformat.write(nb, notebook)


def _index_page(result: SourceBook, order: list[str]) -> str:
    """The index page: the files, the pages served (linked) and the pages not served, with why
    (the files' names and the reasons, which may name panels of the files, escaped)."""
    from metacog.tidy.report import escape_text

    files = ", ".join(escape_text(s) for s in result.sources)
    lines = [f"# The book on {files}", "",
             f"Every chapter of the book that the response file(s) {files} can serve was executed "
             f"on them, with its default parameters and its sources replaced by the file(s). "
             f"Pages the file(s) cannot serve are listed below with the reason.", "",
             "## Served", "", "| page | chapter |", "|---|---|"]
    for page in order:
        lines.append(f"| {{doc}}`{result.titles[page]} <notebooks/{page}>` | `{page}` |")
    lines += ["", "## Not served", "", "| page | why not |", "|---|---|"]
    for page, reason in result.not_served.items():
        lines.append(f"| {result.titles.get(page, page)} | {escape_text(reason)} |")
    return "\n".join(lines) + "\n"


def render(result: SourceBook, out: Path, root: Path | None = None) -> Path:
    """Render the executed pages of ``result`` as one Jupyter Book (index page first, then the
    pages in the book's reading order, then the references) into ``out/html``; return index.html."""
    root = book_root(root)
    src = out / "src"
    served = [p for p in _toc_order(root) if p in result.executed]
    served += [p for p in result.executed if p not in served]
    staged = src / "staged"
    if staged.exists():
        shutil.rmtree(staged)
    (staged / "notebooks").mkdir(parents=True)
    for page in served:
        shutil.copy2(result.executed[page], staged / "notebooks" / f"{page}.ipynb")
        _stage_page(staged / "notebooks" / f"{page}.ipynb", set(served), result.titles, root)
    (staged / "index.md").write_text(_index_page(result, served))
    (staged / "references.md").write_text("# References\n\n```{bibliography}\n```\n")
    shutil.copy2(root / "references.bib", staged / "references.bib")
    config = _one_page_config(root, f"metacog-book on {', '.join(result.sources)}")
    (staged / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    toc = {"format": "jb-book", "root": "index",
           "chapters": [{"file": f"notebooks/{p}"} for p in served] + [{"file": "references"}]}
    (staged / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    import contextlib
    import sys

    with contextlib.redirect_stdout(sys.stderr):  # the command's output is the index's path alone
        index = book.render(staged, out)
    html = out / "html"
    if html.exists():
        shutil.rmtree(html)
    shutil.copytree(index.parent, html)
    shutil.rmtree(out / "site", ignore_errors=True)
    return html / "index.html"
