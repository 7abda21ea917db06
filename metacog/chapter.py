"""Run one chapter of the book on a researcher's own responses (``metacog chapter``).

A hypothesis chapter takes a ``sources`` parameter: a list of strings, each a registered public
log (``atlas``, ...), a recorded run (``squad:prospective``) or a tidy CSV / Parquet / JSONL file.
:func:`run`

1. takes the chapter's parameter set from ``notebooks/manifest.yml``, replaces
   ``sources``, turns off the sections that read the book's own runs (``serving.DETACHED``
   of :mod:`metacog.hypotheses.serving`; ``-p`` turns one back on), applies overrides and cuts,
   and checks the result as ``metacog book`` does (:func:`metacog.book.check_parameters`);
2. loads every source with :func:`metacog.data.load_responses`, so a bad file stops before
   anything runs, and takes what the files hold in place of the book's runs (reasoning_text:
   :func:`metacog.hypotheses.serving.found_in_files`);
3. executes the chapter with papermill (:func:`metacog.book.execute_chapter`);
4. renders that one executed notebook as a one-page Jupyter Book 1.x (glue roles, figures,
   citations and offline MathJax work as in the book) and copies the HTML into ``<out>/html``.

Bad input raises :class:`ChapterInputError` (the CLI exits 2); a chapter that
fails while executing or rendering raises :class:`metacog.book.BookError` (exit 1).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

from metacog.default_prose import drop_default_prose
from metacog.hypotheses.serving import DETACHED, found_in_files, judged_rows
from metacog.result import ChapterRun  # noqa: F401 (what run returns)
from metacog.book import (MANIFEST, BookError, Chapter, ParameterError, book_root, check_parameters,
                          execute_chapter, notebook_parameters, page_title)

#: File suffixes a source string is read as a path for (anything with a '/' is a path too).
FILE_SUFFIXES = (".csv", ".parquet", ".pq", ".jsonl", ".ndjson", ".json", ".gz")


class ChapterInputError(ValueError):
    """Bad input to :func:`run`: unknown chapter, bad parameter, bad source or cut."""


def _manifest_path(root: Path, manifest: str | Path) -> Path:
    path = Path(manifest)
    return path if path.is_absolute() else root / path


def _show_sources_as_given(executed: Path, given: dict[str, str]) -> None:
    """Show file sources in the page's parameters cell by their file names.

    The notebook ran with absolute paths (it executes in the repository); the page shows
    each file by its name only (:func:`metacog.data.responses.source_name`), so it carries
    no folder of the user's machine, whether the path was typed relative or absolute.
    """
    from metacog.data.responses import source_name

    given = {a: source_name(g) for a, g in given.items()}
    import nbformat

    changed = {a: g for a, g in given.items() if a != g}
    if not changed:
        return
    nb = nbformat.read(executed, as_version=4)
    for cell in nb.cells:
        if "injected-parameters" in cell.metadata.get("tags", []):
            for absolute, typed in changed.items():  # also as 'path:probe' (length_sources, answer_sources)
                cell.source = re.sub(rf"""(["']){re.escape(absolute)}(?=["':])""", lambda m: m[1] + typed, cell.source)
    nbformat.write(nb, executed)


def _read_manifest(root: Path, manifest: str | Path) -> tuple[Path, dict]:
    path = _manifest_path(root, manifest)
    try:
        spec = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise ChapterInputError(f"{path}: no such manifest.") from None
    except yaml.YAMLError as exc:
        raise ChapterInputError(f"{path}: not valid YAML ({exc}).") from None
    return path, spec


def _pages(spec: dict) -> list[str]:
    return [str(e.get("page")) for e in spec.get("chapters", []) or []]


def reaimable_pages(root: Path | None = None, manifest: str | Path = MANIFEST) -> list[str]:
    """The manifest's pages whose notebook has a ``sources`` parameter (``root``: see
    :func:`metacog.book.book_root`)."""
    _, spec = _read_manifest(root := book_root(root), manifest)
    out = []
    for entry in spec.get("chapters", []) or []:
        try:
            if "sources" in notebook_parameters(root / entry["source"]):
                out.append(entry["page"])
        except (BookError, KeyError, OSError):
            continue
    return out


def source_arg(source: str, cwd: Path | None = None) -> str:
    """The source string the notebook receives: file paths made absolute (the chapter executes in
    the repository), a ':probe' after a file kept ('odd.csv:prospective'), names unchanged."""
    s = str(source).strip()
    base, sep, probe = s.rpartition(":")
    if sep and base.lower().endswith(FILE_SUFFIXES) and not {"/", "\\"} & set(probe):
        return source_arg(base, cwd) + sep + probe
    looks_like_file = ("/" in s or "\\" in s or s.lower().endswith(FILE_SUFFIXES)
                       or ((cwd or Path.cwd()) / s).is_file())
    if not looks_like_file:
        return s
    p = Path(s).expanduser()
    return str(p if p.is_absolute() else ((cwd or Path.cwd()) / p).resolve())


def _label_key(source: str) -> str:
    """What a cut may name a source by: a file's stem, a log or run name without ':probe'."""
    s = str(source)
    if "/" in s or "\\" in s or s.lower().endswith(FILE_SUFFIXES):
        return Path(s).stem.lower()
    return s.split(":", 1)[0].lower()


def parse_value(text: str):
    """A ``-p KEY VALUE`` value as a YAML scalar or list: '20' -> 20, '[0, 0.2]' -> [0, 0.2]."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ChapterInputError(f"cannot read the value {text!r} as YAML ({exc}); quote lists, "
                                f"e.g. -p kappas \"[0, 0.2]\".") from None


def parse_cut(text: str) -> tuple[str, str | float]:
    """``SRC=CUT`` -> (SRC, CUT) where CUT is 'median' or a number on the 0-1 scale."""
    src, sep, cut = str(text).rpartition("=")
    if not sep or not src.strip() or not cut.strip():
        raise ChapterInputError(f"--cut {text!r}: write SOURCE=CUT, e.g. --cut my_panel.csv=median "
                                f"or --cut atlas=0.7.")
    if (cut := cut.strip()) == "median":
        return src.strip(), cut
    try:
        value = float(cut)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:
        raise ChapterInputError(f"--cut {text!r}: the cut must be 'median' or a number between 0 "
                                f"and 1 (confidence is on the 0-1 scale), got {cut!r}.")
    return src.strip(), value


def chapter_spec(name: str, sources: list[str], *, parameters: dict | None = None,
                 cuts: dict | None = None, root: Path | None = None,
                 manifest: str | Path = MANIFEST) -> Chapter:
    """The chapter ``name`` with its manifest parameters re-aimed at ``sources``.

    ``parameters`` override single parameters; ``cuts`` maps a source to 'median'
    or a number and goes into the notebook's ``cuts`` parameter. Checks the result
    against the notebook's parameters cell; raises :class:`ChapterInputError`.
    """
    root = book_root(root)
    path, spec = _read_manifest(root, manifest)
    entries = {str(e.get("page")): e for e in spec.get("chapters", []) or []}
    if name not in entries:
        raise ChapterInputError(f"unknown chapter {name!r}; the pages of {path} are {', '.join(_pages(spec))} "
                                f"(these take --source: {', '.join(reaimable_pages(root, manifest)) or 'none'}).")
    entry = entries[name]
    source = root / entry.get("source", "")
    if not source.is_file():
        raise ChapterInputError(f"{path}: chapter {name!r}: source {entry.get('source')} does not exist.")
    sets = spec.get("parameter_sets", {}) or {}
    set_name = entry.get("parameters")
    if set_name not in sets:
        raise ChapterInputError(f"{path}: chapter {name!r}: parameter set {set_name!r} is not defined.")
    if not sources:
        raise ChapterInputError(f"chapter {name!r}: give at least one --source.")
    parameters = dict(parameters or {})
    for reserved, flag in (("sources", "--source"), ("cuts", "--cut")):
        if reserved in parameters:
            raise ChapterInputError(f"set {reserved!r} with {flag}, not with -p.")
    try:
        defaults = notebook_parameters(source)
    except BookError as exc:
        raise ChapterInputError(str(exc)) from None
    if "sources" not in defaults:
        raise ChapterInputError(
            f"chapter {name!r} ({entry['source']}) has no 'sources' parameter, so it cannot be run on "
            f"other responses; its parameters are {sorted(defaults)}. Chapters that take --source: "
            f"{', '.join(reaimable_pages(root, manifest)) or 'none yet'}.")
    detached = {k: v for k, v in DETACHED.get(name, {}).items() if k in defaults}  # not the book's runs
    merged = {**(sets[set_name] or {}), **detached, **parameters, "sources": list(sources)}
    if cuts:
        if "cuts" not in defaults:
            raise ChapterInputError(f"chapter {name!r} ({entry['source']}) has no 'cuts' parameter; "
                                    f"drop --cut (its parameters are {sorted(defaults)}).")
        unknown = sorted(k for k in cuts if _label_key(k) not in {_label_key(s) for s in sources}
                         and k not in sources)
        if unknown:
            raise ChapterInputError(f"--cut names {unknown}, which is not among the sources "
                                    f"{list(sources)}; write --cut SOURCE=CUT with SOURCE as given "
                                    f"to --source (or its label: the file name without suffix).")
        merged["cuts"] = dict(cuts)
    try:
        merged = check_parameters(source, merged, set_name=set_name)
    except ParameterError as exc:
        raise ChapterInputError(str(exc)) from None
    return Chapter(name, Path(entry["source"]), set_name, merged, str(entry.get("title", "")))


#: What each chapter needs of a source to say anything: at least ``models`` models with
#: confidence and correctness values, sharing at least ``shared_items`` items (an item is shared
#: when two or more of those models have both values on it), within one benchmark and probe.
#: Chapters not listed work on one model. Keys are the notebook's file stem.
NEEDS = {
    "rank_one": {"models": 3, "shared_items": 20},
    "pairwise": {"models": 3, "shared_items": 20},
    "shortcut": {"models": 2, "shared_items": 20},
    "power": {"models": 3, "shared_items": 20},
}
_DEFAULT_NEEDS = {"models": 1, "shared_items": 0}


def source_shortfalls(df: pd.DataFrame, source: str, chapter: str, needs: dict | None = None) -> list[str]:
    """One sentence per way ``df`` (a loaded source) falls short of what ``chapter`` needs
    (:data:`NEEDS`); empty when some benchmark and probe of it has enough models and shared items."""
    needs = {**_DEFAULT_NEEDS, **(needs or NEEDS.get(chapter, {}))}
    name = Path(source).name if ("/" in source or "\\" in source) else source
    problems = []
    for col in ("confidence", "correct"):
        if pd.to_numeric(df[col], errors="coerce").notna().sum() == 0:
            problems.append(f"source {name}: the {col} column is empty on every row; the {chapter} "
                            f"chapter needs {col} values.")
    if problems:
        return problems
    rows = judged_rows(df)
    keys = ["benchmark", "probe"] if "benchmark" in rows.columns else ["probe"]
    best_models, best_shared = 0, 0
    for _, g in rows.groupby(keys, observed=True, dropna=False):
        per_item = g.groupby("item_id", observed=True)["model"].nunique()
        best_models = max(best_models, int(g["model"].nunique()))
        best_shared = max(best_shared, int((per_item >= 2).sum()))
        if g["model"].nunique() >= needs["models"] and (per_item >= 2).sum() >= needs["shared_items"]:
            return []
    if best_models < needs["models"]:
        have = f"{best_models} model" + ("" if best_models == 1 else "s")
        problems.append(f"source {name}: at most {have} with confidence and correctness values in one "
                        f"benchmark and probe; the {chapter} chapter compares models and needs at least "
                        f"{needs['models']}.")
    if best_shared < needs["shared_items"]:
        problems.append(f"source {name}: at most {best_shared} items are answered by two or more models "
                        f"in one benchmark and probe; the {chapter} chapter compares models on shared "
                        f"items and needs at least {needs['shared_items']}.")
    return problems


def validate_sources(sources: list[str], chapter: str | None = None) -> pd.DataFrame:
    """Load every source with :func:`metacog.data.load_responses`; one row per source.

    Returns columns source, rows, models, items, probes and notes (the loader's
    warnings, a list of sentences). A source that cannot be
    loaded raises :class:`ChapterInputError` with the loader's message; with ``chapter``
    (a notebook's file stem), so does a source that falls short of what that chapter needs
    (:func:`source_shortfalls`, one sentence per problem).
    """
    from metacog.data.responses import load_responses

    rows, problems = [], []
    for src in sources:
        try:
            df = load_responses(src)
        except (ValueError, OSError) as exc:  # ResponseError is a ValueError; a missing file an OSError
            msg = str(exc)
            raise ChapterInputError(msg if src in msg else f"source {src!r}: {msg}") from None
        if chapter is not None:
            problems += source_shortfalls(df, src, chapter)
        rows.append({"source": src, "rows": len(df), "models": df["model"].nunique(),
                     "items": df["item_id"].nunique(),
                     "probes": ", ".join(sorted(map(str, df["probe"].dropna().unique()))),
                     "notes": list(df.attrs.get("notes", []))})
    if problems:
        raise ChapterInputError(" ".join(problems))
    return pd.DataFrame(rows, columns=["source", "rows", "models", "items", "probes", "notes"])


def _one_page_config(root: Path, title: str) -> dict:
    """The repository's ``_config.yml`` for a one-page book: same MathJax, bibliography, no execution."""
    config_file = root / "_config.yml"
    if not config_file.exists():
        config_file = book_root() / "_config.yml"
    config = yaml.safe_load(config_file.read_text()) or {}
    config["title"] = title
    config["only_build_toc_files"] = True
    config.setdefault("execute", {})["execute_notebooks"] = "off"
    sphinx = config.setdefault("sphinx", {})
    extensions = sphinx.setdefault("extra_extensions", []) or []
    if "sphinx-mathjax-offline" not in extensions:
        extensions.append("sphinx-mathjax-offline")
    sphinx["extra_extensions"] = extensions
    config["bibtex_bibfiles"] = ["references.bib"]
    return config


def _add_bibliography(notebook: Path) -> None:
    """Append the references this page cites, so its {cite:p} roles resolve on one page."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    if not re.search(r"\{cite(:[a-z]+)?\}", text):
        return
    nb.cells.append(nbformat.v4.new_markdown_cell(
        "## References\n\n```{bibliography}\n:filter: docname in docnames\n```"))
    nbformat.write(nb, notebook)


def render_page(executed: Path, out: Path, root: Path | None = None) -> Path:
    """Render one executed notebook as a one-page Jupyter Book into ``out/html``.

    Returns the path of the page's HTML file. Warnings do not fail this build
    (``-W`` is off): a reference to another chapter has no target on one page and
    is shown as plain text. The build log goes to ``out/jupyter-book.log``.
    """
    root = book_root(root)
    page = executed.stem
    html_dir = out / "html"
    log = out / "jupyter-book.log"
    with tempfile.TemporaryDirectory(prefix=f"metacog-{page}-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        shutil.copy2(executed, src / executed.name)
        _add_bibliography(src / executed.name)
        bib = root / "references.bib"
        if not bib.exists():
            bib = book_root() / "references.bib"
        shutil.copy2(bib, src / "references.bib")
        import nbformat

        first = next((c.source for c in nbformat.read(executed, as_version=4).cells
                      if c.cell_type == "markdown"), "")
        title = next((l[2:].strip() for l in first.splitlines() if l.startswith("# ")), page)
        (src / "_config.yml").write_text(yaml.safe_dump(_one_page_config(root, title), sort_keys=False))
        (src / "_toc.yml").write_text(yaml.safe_dump({"format": "jb-book", "root": page}))
        jb = Path(sys.executable).with_name("jupyter-book")
        cmd = [str(jb) if jb.exists() else "jupyter-book", "build", str(src),
               "--path-output", str(Path(tmp) / "site")]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        out.mkdir(parents=True, exist_ok=True)
        log.write_text(proc.stdout + proc.stderr)
        built = Path(tmp) / "site" / "_build" / "html"
        if proc.returncode != 0 or not (built / f"{page}.html").exists():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
            raise BookError(f"rendering {executed} failed (exit {proc.returncode}); full log in "
                            f"{log}:\n{tail}")
        if html_dir.exists():
            shutil.rmtree(html_dir)
        shutil.copytree(built, html_dir)
    return html_dir / f"{page}.html"


def warning_count(log: Path) -> int:
    """How many Sphinx warnings a render log holds."""
    return sum("WARNING" in line for line in log.read_text().splitlines()) if log.exists() else 0


def run(name: str, sources: list[str], out: str | Path, *, parameters: dict | None = None,
        cuts: dict | None = None, root: str | Path | None = None, manifest: str | Path = MANIFEST,
        html: bool = True, log=None) -> ChapterRun:
    """Run chapter ``name`` on ``sources`` into ``out``; return a :class:`ChapterRun` (the
    executed notebook, the HTML page unless ``html=False``, and ``.summary()`` of the chapter's
    glued results). ``root`` is the repository (notebook sources and ``references.bib`` are
    found there; chapters execute with it as working directory), ``manifest`` the manifest file,
    relative to ``root`` or absolute. Source files may be given relative to the current
    directory; ``cuts`` keys are the sources as given. ``log`` takes progress lines.

    >>> from metacog.power.examples import example_responses, write_responses
    >>> _ = write_responses(example_responses(n_models=6, n_items=200, seed=0), "panel.csv")
    >>> r = run("rank_one", ["panel.csv"], "out", html=False)  # in the checkout: about a minute
    >>> r.notebook.name, "ro_designs" in set(r.summary()["name"])
    ('rank_one.ipynb', True)
    """
    root, out = book_root(root).resolve(), Path(out).resolve()
    say = log or (lambda _msg: None)
    resolved = [source_arg(s) for s in sources]
    cuts = {source_arg(k): v for k, v in (cuts or {}).items()}
    chapter = chapter_spec(name, resolved, parameters=parameters, cuts=cuts, root=root, manifest=manifest)
    for row in validate_sources(resolved, chapter.source.stem).itertuples(index=False):
        say(f"source {row.source}: {row.rows} rows, {row.models} models, {row.items} items (probes: {row.probes})")
        for note in row.notes:
            say(f"note on {row.source}: {note}")
    if found := found_in_files(chapter.source.stem, resolved, parameters or {}):  # the files' own, as -p would
        chapter = chapter_spec(name, resolved, parameters={**found, **(parameters or {})}, cuts=cuts, root=root,
                               manifest=manifest)
    say(f"executing {chapter.source} as {name!r} into {out}")
    executed = execute_chapter(chapter, out, root)
    _show_sources_as_given(executed, dict(zip(resolved, (str(x) for x in sources))))
    drop_default_prose(executed)  # cells about the book's own sources, not these
    if not html:
        return ChapterRun(name, executed)
    say(f"rendering {executed.name}")
    page = render_page(executed, out, root)
    n = warning_count(out / "jupyter-book.log")
    if n:
        say(f"{n} rendering warning(s) (e.g. links to other chapters), see {out / 'jupyter-book.log'}")
    return ChapterRun(name, executed, page)
