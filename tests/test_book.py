"""The book runner: manifest checks, parameter validation, failing chapters."""

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from metacog import book, schedule
ROOT = Path(__file__).resolve().parents[1]

NOTEBOOK = """\
---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# {title}

```{{code-cell}} ipython3
:tags: [parameters]

n_items = 10
models = ["a", "b"]
cut = 0.5
verbose = False
```

```{{code-cell}} ipython3
{body}
```
"""


def make_root(tmp_path, chapters, sets, notebooks):
    (tmp_path / "notebooks").mkdir()
    for name, (title, body) in notebooks.items():
        (tmp_path / "notebooks" / f"{name}.md").write_text(NOTEBOOK.format(title=title, body=body))
    import yaml

    spec = {"parameter_sets": sets, "chapters": chapters}
    (tmp_path / "notebooks" / "manifest.yml").write_text(yaml.safe_dump(spec))
    (tmp_path / "book").mkdir()
    return tmp_path


def test_the_real_manifest_is_valid():
    chapters = book.load_manifest(ROOT)
    assert chapters, "the manifest lists no chapters"
    titles = [c.title or book.page_title(ROOT / c.source) for c in chapters]
    assert len(set(titles)) == len(titles)
    toc = (ROOT / "_toc.yml").read_text()
    for c in chapters:
        assert f"notebooks/{c.page}" in toc, f"{c.page} is executed but not in _toc.yml"


def test_every_benchmark_and_hypothesis_has_its_page():
    """Outside checks look for these words in the page names (issues 5 and 6)."""
    pages = [c.page for c in book.load_manifest(ROOT)]
    for word in ["squad", "mmlu", "legalbench", "math", "omni", "scicode", "audit",
                 "rank_one", "pairwise", "shortcut", "reasoning_text", "miscalibration", "power"]:
        assert any(word in p for p in pages), f"no page name contains {word!r}: {pages}"


def test_every_run_a_chapter_replays_is_declared_and_recorded():
    from metacog.data import recorded
    from metacog.data import LOADERS

    declared = recorded.runs(ROOT / "data" / "responses" / "runs.yml")
    for c in book.load_manifest(ROOT):
        named = [v for k, v in c.parameters.items() if k.endswith("run") and isinstance(v, str)]
        named += [v.split(":")[0] for k, v in c.parameters.items() if k.endswith("sources") for v in v]
        named += [v for k, v in c.parameters.items() if k.endswith("runs") and isinstance(v, list) for v in v]
        named += [v for k, v in c.parameters.items() if k.endswith("runs") and isinstance(v, dict) for v in v.values()]
        for run in named:
            if run in LOADERS:  # a registered public log, not a recorded run
                continue
            assert run in declared, f"{c.page} replays run {run!r}, which runs.yml does not declare"
            assert (ROOT / "data" / "responses" / f"{run}.parquet").exists(), \
                f"{c.page} replays run {run!r}, which is not recorded: make elicit RUNS={run}"


def test_the_comparison_page_links_each_run_to_the_page_that_replays_it():
    """The benchmarks page names every benchmark page's run, and links each to that page."""
    chapters = book.load_manifest(ROOT)
    replays = {c.parameters["run"]: c.page for c in chapters if c.source.name == "benchmark.md"}
    (compare,) = [c for c in chapters if c.page == "benchmarks"]
    assert sorted(compare.parameters["runs"].values()) == sorted(replays)
    assert compare.parameters["pages"] == replays
    for k in ("min_conformance", "seed"):  # the pages' own settings, so the numbers are theirs
        assert {c.parameters[k] for c in chapters if c.source.name == "benchmark.md"} == {compare.parameters[k]}, k
    toc = (ROOT / "_toc.yml").read_text()
    part = toc[toc.index("Benchmarks on the local panel"):]
    assert part.index("notebooks/benchmarks\n") < part.index("notebooks/audit"), "the comparison opens the part"


def test_parameters_cell_is_read_as_literals(tmp_path):
    root = make_root(tmp_path, [], {}, {"a": ("A", "x = 1")})
    assert book.notebook_parameters(root / "notebooks/a.md") == {
        "n_items": 10, "models": ["a", "b"], "cut": 0.5, "verbose": False}


def test_misspelled_parameter_fails_naming_notebook_and_parameter(tmp_path):
    root = make_root(tmp_path, [{"page": "a", "source": "notebooks/a.md", "parameters": "s"}],
                     {"s": {"n_itmes": 5}}, {"a": ("A", "x = 1")})
    with pytest.raises(book.ParameterError) as err:
        book.load_manifest(root)
    msg = str(err.value)
    assert "notebooks/a.md" in msg and "'n_itmes'" in msg and "'s'" in msg and "n_items" in msg


@pytest.mark.parametrize("value", ["ten", 2.5, [1, 2], True])
def test_ill_typed_parameter_fails(tmp_path, value):
    root = make_root(tmp_path, [{"page": "a", "source": "notebooks/a.md", "parameters": "s"}],
                     {"s": {"n_items": value}}, {"a": ("A", "x = 1")})
    with pytest.raises(book.ParameterError, match="parameter 'n_items' should be like 10"):
        book.load_manifest(root)


def test_int_is_accepted_where_float_is_expected(tmp_path):
    root = make_root(tmp_path, [{"page": "a", "source": "notebooks/a.md", "parameters": "s"}],
                     {"s": {"cut": 1, "models": ["x"]}}, {"a": ("A", "x = 1")})
    (ch,) = book.load_manifest(root)
    assert ch.parameters["cut"] == 1 and ch.parameters["models"] == ["x"]


def test_non_literal_parameter_is_refused(tmp_path):
    root = make_root(tmp_path, [], {}, {"a": ("A", "x = 1")})
    f = root / "notebooks/a.md"
    f.write_text(f.read_text().replace("cut = 0.5", "cut = compute()"))
    with pytest.raises(book.ParameterError, match="'cut'.*not a plain literal"):
        book.notebook_parameters(f)


def test_unknown_parameter_set_and_duplicate_titles(tmp_path):
    root = make_root(tmp_path, [{"page": "a", "source": "notebooks/a.md", "parameters": "nope"}],
                     {}, {"a": ("A", "x = 1")})
    with pytest.raises(book.BookError, match="parameter set 'nope' is not defined"):
        book.load_manifest(root)


def test_a_failing_chapter_fails_the_build_and_says_which(tmp_path):
    root = make_root(
        tmp_path,
        [{"page": "good", "source": "notebooks/good.md", "parameters": "s"},
         {"page": "bad", "source": "notebooks/bad.md", "parameters": "s"}],
        {"s": {"n_items": 3}},
        {"good": ("Good", "assert n_items == 3"),
         "bad": ("Bad", "raise RuntimeError('deliberate failure in chapter')")},
    )
    with pytest.raises(book.BookError) as err:
        book.build(root, html=False, out=tmp_path / "_build")
    msg = str(err.value)
    assert "'bad'" in msg and "deliberate failure in chapter" in msg
    assert "'good'" not in msg
    executed = tmp_path / "_build/src/notebooks"
    assert (executed / "good.ipynb").exists()
    assert not (executed / "bad.ipynb").exists()
    import nbformat

    nb = nbformat.read(executed / "good.ipynb", as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "n_items = 3" in injected[0].source


def test_a_page_whose_parameters_cell_is_removed_shows_no_parameters(tmp_path):
    """A parameters cell tagged remove-cell (the findings page's) keeps papermill's parameters
    tag, and the cell papermill injects is removed with it; another page still shows its values."""
    import nbformat

    hidden = NOTEBOOK.replace(":tags: [parameters]", ":tags: [parameters, remove-cell]")
    root = make_root(tmp_path, [{"page": "quiet", "source": "notebooks/quiet.md", "parameters": "s"},
                                {"page": "plain", "source": "notebooks/plain.md", "parameters": "s"}],
                     {"s": {"n_items": 3}}, {"plain": ("Plain", "assert n_items == 3")})
    (root / "notebooks" / "quiet.md").write_text(hidden.format(title="Quiet", body="assert n_items == 3"))
    book.build(root, html=False, out=tmp_path / "_build")
    executed = tmp_path / "_build/src/notebooks"
    for page, removed in (("quiet", True), ("plain", False)):
        nb = nbformat.read(executed / f"{page}.ipynb", as_version=4)
        injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
        assert len(injected) == 1 and "n_items = 3" in injected[0].source
        assert ("remove-cell" in injected[0].metadata["tags"]) is removed
        # shown, it is folded behind a toggle rather than opening the page in a code box
        assert "hide-input" in injected[0].metadata["tags"]


def test_one_template_gives_pages_with_distinct_titles(tmp_path):
    chapters = [{"page": "p1", "source": "notebooks/t.md", "parameters": "s", "title": "First"},
                {"page": "p2", "source": "notebooks/t.md", "parameters": "s", "title": "Second"}]
    root = make_root(tmp_path, chapters, {"s": {}}, {"t": ("Template", "x = 1")})
    book.build(root, html=False, out=tmp_path / "_build")
    import nbformat

    for page, title in [("p1", "First"), ("p2", "Second")]:
        nb = nbformat.read(tmp_path / f"_build/src/notebooks/{page}.ipynb", as_version=4)
        assert f"# {title}" in nb.cells[0].source


def test_pages_sharing_a_title_are_refused(tmp_path):
    chapters = [{"page": "p1", "source": "notebooks/t.md", "parameters": "s"},
                {"page": "p2", "source": "notebooks/t.md", "parameters": "s"}]
    root = make_root(tmp_path, chapters, {"s": {}}, {"t": ("Template", "x = 1")})
    with pytest.raises(book.BookError, match="share the title 'Template'"):
        book.build(root, html=False, out=tmp_path / "_build")


def test_chapters_run_at_once_with_jobs_and_failures_still_name_the_chapter(tmp_path):
    # Each chapter writes its own marker, then waits for the other's: both finish only if the two
    # kernels run at the same time (with jobs=1 the first would time out and fail).
    wait = textwrap.dedent("""\
        import pathlib, time
        here = pathlib.Path({mine!r}); other = pathlib.Path({theirs!r})
        here.write_text("started")
        for attempt in range(6000):  # polls, not a deadline: fails only if the other never starts
            if other.exists():
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the other chapter never started")
    """)
    a, b = tmp_path / "a.started", tmp_path / "b.started"
    chapters = [{"page": p, "source": f"notebooks/{p}.md", "parameters": "s"} for p in ("pa", "pb", "bad")]
    root = make_root(tmp_path, chapters, {"s": {}}, {
        "pa": ("A", wait.format(mine=str(a), theirs=str(b))),
        "pb": ("B", wait.format(mine=str(b), theirs=str(a))),
        "bad": ("Bad", "raise RuntimeError('deliberate failure')")})
    with pytest.raises(book.BookError) as err:
        book.build(root, html=False, out=tmp_path / "_build", jobs=3)
    assert "'bad'" in str(err.value) and "'pa'" not in str(err.value)
    import json

    stamps = json.loads((tmp_path / "_build/executed.json").read_text())
    assert set(stamps) == {"pa", "pb"}  # both parallel chapters were stamped, the failure was not
    with pytest.raises(book.BookError, match="at least one"):
        book.build(root, html=False, out=tmp_path / "_build", jobs=0)


def _cwd_book(tmp_path, name, pages):
    """A book whose every chapter asserts that its kernel runs in the book's folder."""
    root = tmp_path / name
    root.mkdir()
    check = f"import os, pathlib\nassert pathlib.Path.cwd() == pathlib.Path({str(root.resolve())!r}), os.getcwd()"
    # Several cells: papermill saves the notebook around every cell, which is where it chdir()ed.
    body = check + "".join(f"\n```\n\n```{{code-cell}} ipython3\nprint('x' * 10_000)" for i in range(8))
    return make_root(root, [{"page": p, "source": f"notebooks/{p}.md", "parameters": "s"} for p in pages],
                     {"s": {}}, {p: (f"Page {p}", body) for p in pages})


def _papermill_folder():
    """The folder papermill's module-wide file handler chdir()s into around every notebook read and
    write in this process (None: it does not), or None when papermill is not loaded here."""
    import sys

    iorw = sys.modules.get("papermill.iorw")
    if iorw is None:
        return None
    return next(h for scheme, h in iorw.papermill_io._handlers if scheme == "local")._cwd


@pytest.mark.slow
def test_parallel_builds_leave_no_process_wide_state_behind(tmp_path, monkeypatch):
    """Each kernel starts in its book's folder, and building chapters at once changes nothing
    process-wide: not the caller's folder, not the environment, and not what a later build from
    another folder finds. In-process papermill did: it chdir()s around every notebook read and
    write and kept a stale folder in a module-wide handler, so a later threaded build could
    leave its caller inside an earlier book (make test once failed that way)."""
    import os

    import papermill.iorw  # noqa: F401  (loaded here, so the test sees what a build leaves in it)

    monkeypatch.delenv("METACOG_PROJECT_ROOT", raising=False)
    pages = [f"p{i}" for i in range(3)]  # two at once, and a third that starts when one is done
    first, second = _cwd_book(tmp_path, "first", pages), _cwd_book(tmp_path, "second", pages)
    callers = [tmp_path / "first" / "caller", tmp_path / "elsewhere"]
    for c in callers:
        c.mkdir()
    environ = dict(os.environ)
    for round_ in range(3):  # a race shows only now and then
        for root, caller in ((first, callers[0]), (second, callers[1])):
            monkeypatch.chdir(caller)
            book.build(root, html=False, out=root / "_build", jobs=2, reuse=False)
            assert Path.cwd() == caller.resolve(), f"round {round_}: the build moved its caller"
            assert dict(os.environ) == environ, f"round {round_}: the build changed the environment"
            assert _papermill_folder() is None, f"round {round_}: papermill was left a folder to chdir into"
    monkeypatch.chdir(callers[1])
    from metacog import settings

    assert settings.project_root() is None  # 'elsewhere' is in no book: nothing left pointing into one
    for root in (first, second):
        assert all((root / f"_build/src/notebooks/{p}.ipynb").exists() for p in pages)


def test_default_jobs_reads_the_environment(monkeypatch):
    monkeypatch.setenv("METACOG_BOOK_JOBS", "3")
    assert book.default_jobs() == 3
    monkeypatch.setenv("METACOG_BOOK_JOBS", "two")
    with pytest.raises(book.BookError, match="METACOG_BOOK_JOBS"):
        book.default_jobs()
    monkeypatch.delenv("METACOG_BOOK_JOBS")
    assert 1 <= book.default_jobs() <= 4


def test_two_processes_building_into_one_folder_take_turns(tmp_path):
    """Two `metacog book` processes on one _build: the second waits for the first and reuses what
    it executed; every chapter is executed once, stamped, and left whole."""
    import json
    import os
    import subprocess
    import sys

    import nbformat

    pages = ["pa", "pb", "pc"]
    root = make_root(tmp_path, [{"page": p, "source": f"notebooks/{p}.md", "parameters": "s"} for p in pages],
                     {"s": {}}, {p: (f"Page {p}", f"import pathlib\nwith open({str(tmp_path / 'runs.log')!r}, 'a') as f:\n"
                                                 f"    f.write('{p}\\n')") for p in pages})
    code = ("import sys; from pathlib import Path; from metacog import book\n"
            "book.build(Path(sys.argv[1]), html=False, jobs=2)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("METACOG_PROJECT_ROOT", None)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(root)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    assert sorted((tmp_path / "runs.log").read_text().split()) == pages  # each executed once
    stamps = json.loads((tmp_path / "_build/executed.json").read_text())
    assert set(stamps) == set(pages)
    for p in pages:
        nbformat.read(tmp_path / f"_build/src/notebooks/{p}.ipynb", as_version=4)  # whole, readable
    assert any("waiting for it to finish" in o[0] for o in outs) or any("reusing" in o[0] for o in outs)


def test_a_chapter_is_re_executed_only_when_code_it_imports_changes(tmp_path, monkeypatch):
    """The fingerprint of an executed chapter follows the metacog modules its notebook imports
    (and what they import), not the whole package: a change to a module a chapter does not use
    leaves it unchanged."""
    from metacog import memo

    root = make_root(tmp_path, [{"page": p, "source": f"notebooks/{p}.md", "parameters": "s"}
                                for p in ("uses_stats", "uses_report")], {"s": {}}, {
        "uses_stats": ("Stats", "from metacog.stats import calibration\nprint(calibration.auroc([0, 1], [0.2, 0.8]))"),
        "uses_report": ("Report", "from metacog.tidy import report\nprint(report.fmt_num(0.5))")})
    chapters = {c.page: c for c in book.load_manifest(root)}
    assert book.notebook_modules(root / chapters["uses_stats"].source) == ["metacog.stats.calibration"]
    shared = book._shared_digest(root)
    before = {p: book._fingerprint(c, root, shared) for p, c in chapters.items()}
    real = memo.code_version

    def edited(module):  # as if metacog/stats/calibration.py had changed
        v = real(module)
        return v + "-edited" if module in ("metacog.stats", "metacog.stats.calibration") else v

    monkeypatch.setattr(memo, "code_version", edited)
    after = {p: book._fingerprint(c, root, shared) for p, c in chapters.items()}
    assert after["uses_stats"] != before["uses_stats"]
    assert after["uses_report"] == before["uses_report"]


def test_chapters_built_at_once_share_the_cores_and_the_next_build_starts_the_longest(tmp_path, monkeypatch):
    import json
    import os
    from types import SimpleNamespace

    for var in book.THREAD_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    share = str(max(1, (os.cpu_count() or 1) // 2))
    check = f"import os\nassert os.environ['OPENBLAS_NUM_THREADS'] == {share!r}, os.environ.get('OPENBLAS_NUM_THREADS')"
    chapters = [{"page": p, "source": f"notebooks/{p}.md", "parameters": "s"} for p in ("pa", "pb")]
    root = make_root(tmp_path, chapters, {"s": {}}, {"pa": ("A", check), "pb": ("B", check)})
    book.build(root, html=False, out=tmp_path / "_build", jobs=2)
    took = json.loads((tmp_path / "_build" / "durations.json").read_text())
    assert set(took) == {"pa", "pb"} and all(s > 0 for s in took.values())

    (tmp_path / "_build" / "durations.json").write_text(json.dumps({"short": 5.0, "long": 90.0, "gather": 1.0}))
    pages = [SimpleNamespace(page=p, parameters=params) for p, params in
             (("gather", {"chapters": {"long": "x"}}), ("short", {}), ("new", {}), ("long", {}))]
    order = [job[0].page for job in schedule.order([(c, None, None) for c in pages], tmp_path / "_build")]
    assert order == ["new", "long", "short", "gather"]  # never timed first, then longest; gatherers last


def test_the_time_a_chapter_waits_for_another_chapter_is_not_its_own(tmp_path, monkeypatch):
    """Two chapters ask for the same stored result at once: the second waits for the first to
    compute it. The build records the waiting chapter's own time (without the wait), so the next
    build does not start it first beside the chapter it waits for; both memo traces still reach
    the caller's METACOG_MEMO_TRACE."""
    import json

    monkeypatch.setenv("METACOG_CACHE_DIR", str(tmp_path / "cache"))
    user_trace = tmp_path / "trace.tsv"
    monkeypatch.setenv("METACOG_MEMO_TRACE", str(user_trace))
    (tmp_path / "slow.py").write_text("import time\ndef slow(x):\n    time.sleep(8)\n    return x\n")
    code = ("import sys, time\nsys.path.insert(0, {root!r})\nfrom metacog.memo import memo\nimport slow\n"
            "time.sleep({delay})\nassert memo(slow.slow, 7) == 7")
    chapters = [{"page": p, "source": f"notebooks/{p}.md", "parameters": "s"} for p in ("first", "second")]
    root = make_root(tmp_path, chapters, {"s": {}}, {
        "first": ("First", code.format(root=str(tmp_path), delay=0)),
        "second": ("Second", code.format(root=str(tmp_path), delay=0.5))})
    book.build(root, html=False, out=tmp_path / "_build", jobs=2)
    took = json.loads((tmp_path / "_build" / "durations.json").read_text())
    hows = sorted(line.split("\t")[2] for line in user_trace.read_text().splitlines())
    assert hows == ["computed", "waited"]
    assert took["second"] < took["first"] - 4, took  # its ~7.5 s wait is not counted
    assert not list((tmp_path / "_build").glob(".*.memo.tsv"))  # the per-chapter traces are consumed


def test_a_one_line_change_to_a_chapter_module_re_executes_only_the_pages_that_read_it(tmp_path, monkeypatch):
    """Issue #25: a comment added to the shortcut chapter's module re-executes the shortcut page
    and findings (which gathers every chapter's verdicts), not the benchmark, audit, lab or
    reasoning_text pages, which import only ``metacog.hypotheses.shortcut.detect`` (Python runs
    the package's __init__ to import it, but detect's code never reads it)."""
    from metacog import memo
    from metacog.memo import code

    pkg = tmp_path / "metacog"
    shutil.copytree(memo.PACKAGE, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(code, "PACKAGE", pkg)
    chapters = book.load_manifest(ROOT)

    def fingerprints():
        memo.code_version.cache_clear()
        return {c.page: book._fingerprint(c, ROOT, b"") for c in chapters}

    before = fingerprints()
    with open(pkg / "hypotheses" / "shortcut" / "__init__.py", "a") as fh:
        fh.write("\n# a one-line change\n")
    after = fingerprints()
    memo.code_version.cache_clear()
    assert sorted(p for p in before if before[p] != after[p]) == ["findings", "shortcut"]


def test_a_kernel_that_dies_before_it_starts_is_started_again_and_nothing_else_is(capsys):
    """Two processes can hand their kernels the same port (jupyter_client frees the ports it
    picked before the kernel binds them; 1 start in 150 died so when ten started at once here).
    Such a kernel dies before any cell runs, so the start is tried again; a failure once cells
    have run (a cell's error, a kernel dying mid-notebook) is raised the first time."""
    from metacog import execute

    calls = []

    def dies_once():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return "executed"

    assert execute.run_starting_again(dies_once, pause=0) == "executed" and len(calls) == 2
    assert "kernel start 1 of 4 failed" in capsys.readouterr().err

    calls.clear()

    def cell_fails():
        calls.append(1)
        raise RuntimeError("Kernel died while waiting for execute reply.")  # nbclient's DeadKernelError text

    with pytest.raises(RuntimeError, match="while waiting for execute reply"):
        execute.run_starting_again(cell_fails, pause=0)
    assert len(calls) == 1

    calls.clear()

    def never_starts():
        calls.append(1)
        raise RuntimeError("Kernel died before replying to kernel_info")

    with pytest.raises(RuntimeError, match="started 3 times; each died before running a cell"):
        execute.run_starting_again(never_starts, attempts=3, pause=0)
    assert len(calls) == 3


def test_a_chapter_whose_kernel_cannot_start_fails_naming_why(tmp_path):
    """A kernel that cannot start at all (here: its Python cannot import ipykernel) fails the
    chapter once, with the reason, after the attempts; it is not taken for a port clash forever."""
    import os
    import subprocess
    import sys

    root = make_root(tmp_path, [{"page": "p", "source": "notebooks/p.md", "parameters": "s"}], {"s": {}},
                     {"p": ("Page p", "x = 1")})
    kernels = tmp_path / "share" / "jupyter" / "kernels" / "python3"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-c", "import sys; sys.exit(3)", "-f", "{connection_file}"],
        "display_name": "dies", "language": "python"}))
    code = ("import sys; from pathlib import Path; from metacog import book\n"
            "book.build(Path(sys.argv[1]), html=False, jobs=1)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_PATH": str(tmp_path / "share" / "jupyter")}
    env.pop("METACOG_PROJECT_ROOT", None)
    proc = subprocess.run([sys.executable, "-c", code, str(root)], env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "chapter 'p' (notebooks/p.md) failed" in proc.stderr
    assert "each died before running a cell" in proc.stderr
