"""`metacog book --source FILE --out DIR`: the whole book on a researcher's own response file
(metacog.sourcebook). One example-data book is built once (module fixture) and checked many ways;
a small file with the C0/C1/C2 policies, a bad file and a failing chapter are built beside it."""

import html as htmllib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog import sourcebook
from metacog.power.examples import example_responses, write_responses

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
#: What the default book reads: no trace of it may appear in a book built on a file.
DEFAULT_SOURCES = [r"\batlas\b", r"\bbattery\b", r"\bspar\b", r"calibration.study", r"audit_policies",
                   r"audit_full", r"smollm", r"qwen", r"legalbench_sampled", r"local panel"]


def metacog(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "METACOG_PROJECT_ROOT": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "metacog.cli", *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=cwd)


def text_of(page: Path) -> str:
    """The visible text of an HTML page."""
    t = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page.read_text(), flags=re.S)
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", t)).split())


def default_names_in(text: str) -> list[str]:
    return [p for p in DEFAULT_SOURCES if re.search(p, text, flags=re.I)]


def outputs_text(notebook: Path) -> str:
    """Every output of an executed notebook (tables, glued sentences, printed text), not its prose."""
    parts = []
    for cell in json.loads(notebook.read_text())["cells"]:
        for o in cell.get("outputs", []):
            for v in (o.get("data") or {}).values():
                parts.append("".join(v) if isinstance(v, list) else str(v))
            parts.append("".join(o.get("text", "")))
    return "\n".join(parts)


def policy_responses(n_models=2, n_items=120, seed=0, texts=False) -> pd.DataFrame:
    """A small simulated panel answering yes/no items under C0, C1 (abstaining when unsure) and C2;
    with ``texts``, a reasoning text per answer whose words lean on its correctness."""
    rng = np.random.default_rng(seed)
    ease = rng.normal(0.8, 1.0, n_items)
    rows = []
    for m in range(n_models):
        skill = rng.normal(0, 0.3)
        for probe in ("c0", "c1", "c2"):
            p = 1 / (1 + np.exp(-(ease + skill)))
            right = rng.random(n_items) < p
            conf = np.clip(p + rng.normal(0, 0.1, n_items), 0.05, 0.99).round(2)
            for i in range(n_items):
                truth = "yes" if i % 2 else "no"
                dec = truth if right[i] else ("no" if truth == "yes" else "yes")
                abstain = probe == "c1" and conf[i] < 0.4
                rows.append(dict(model=f"lab-model-{m}", item_id=f"fact-{i:03d}", benchmark="facts",
                                 domain="geography" if i % 3 else "chemistry", probe=probe,
                                 decision="abstain" if abstain else dec, confidence=conf[i],
                                 correct=np.nan if abstain else float(right[i])))
    df = pd.DataFrame(rows)
    if texts:
        sure, unsure = ["sure", "clearly", "recall"], ["maybe", "perhaps", "guess", "unsure"]
        df["reasoning_text"] = [f"I {' '.join(rng.choice(sure if c == 1 else unsure, 3))}, so {d}"
                                for c, d in zip(df["correct"], df["decision"])]
    return df


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """The example-data book (8 models x 3 benchmarks x 150 items), built once by the command."""
    folder = tmp_path_factory.mktemp("panel")
    path = folder / "my_panel.csv"
    write_responses(example_responses(n_models=8, n_items=150, seed=0), path)
    out = folder / "book"
    proc = metacog("book", "--source", path.name, "--out", out, "--jobs", "2", cwd=folder)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return path, out, proc


def test_the_command_prints_the_index_and_serves_what_the_file_allows(book):
    path, out, proc = book
    assert Path(proc.stdout.strip()) == out / "html" / "index.html"
    executed = sorted(p.stem for p in (out / "src" / "notebooks").glob("*.ipynb"))
    # 8 models on shared items: the panel chapters; no policies, texts or reasoning flags
    assert executed == ["findings", "pairwise", "power", "rank_one"]


def test_index_lists_served_pages_and_the_others_with_reasons(book):
    _, out, _ = book
    index = text_of(out / "html" / "index.html")
    served, not_served = index.split("Not served", 1)[0], index.split("Not served", 1)[1]
    assert "Is confidence rank one?" in served and "What the book finds" in served
    assert "C0, C1 and C2" in not_served  # miscalibration: the file has no policies
    assert "reasoning_text column" in not_served
    assert "8 of each" in not_served  # shortcut: reasoning judges, the chapter's MIN_JUDGES
    assert "SQuAD without its passage" in not_served and "recorded runs" in not_served
    # the default-sources paragraphs are in the executed chapter, and only the book leaves them out
    assert "Atlas" in (out / "src" / "notebooks" / "rank_one.ipynb").read_text()
    for page in ("rank_one", "pairwise", "power", "findings"):
        assert (out / "html" / "notebooks" / f"{page}.html").exists()


def test_findings_decides_on_the_files_panels_only(book):
    _, out, _ = book
    findings = text_of(out / "html" / "notebooks" / "findings.html")
    for bench in ("algebra", "history", "law"):
        assert f"my_panel · {bench}" in findings  # verdict rows name the file's panels
    assert "Left out, because the file cannot serve them: shortcut" in findings
    assert default_names_in(findings) == []


def test_no_page_names_a_default_source(book):
    """Not in the outputs, nor in the prose: the chapters' paragraphs about their default sources
    (cells tagged 'default-sources') are left out of a book on files."""
    _, out, _ = book
    pages = [out / "html" / "index.html", *(out / "html" / "notebooks").glob("*.html")]
    assert len(pages) == 5
    assert {p.name: default_names_in(text_of(p)) for p in pages} == {p.name: [] for p in pages}


def test_no_default_source_in_any_output_and_no_folder_of_the_machine(book):
    path, out, _ = book
    for nb in (out / "src" / "notebooks").glob("*.ipynb"):
        assert default_names_in(outputs_text(nb)) == [], nb.name
    for page in (out / "html").rglob("*.html"):
        assert str(path.parent) not in page.read_text(), page


def test_the_html_is_self_contained(book, tmp_path):
    _, out, _ = book
    copy = tmp_path / "elsewhere"
    shutil.copytree(out / "html", copy)
    local = []
    for page in [copy / "index.html", *(copy / "notebooks").glob("*.html")]:
        text = page.read_text()
        assert not re.search(r"<script[^>]*src=\"https?://", text), page  # MathJax offline
        local += [(page, r) for r in re.findall(r"(?:src|href)=\"([^\"#?]+)", text) if not re.match(r"[a-z]+:", r)]
    assert [f"{p.name} -> {r}" for p, r in local if not (p.parent / r).exists()] == []
    assert any("mathjax" in r.lower() for _, r in local)  # the offline copy is linked, and there
    assert any(r.endswith(".png") for _, r in local)  # the chapters' figures


def test_a_rerun_reuses_every_executed_page(book):
    path, out, _ = book
    before = {p.name: p.stat().st_mtime_ns for p in (out / "src" / "notebooks").glob("*.ipynb")}
    made = sourcebook.build([path], out, jobs=1, html=False)
    assert sorted(made.reused) == sorted(made.executed) == ["findings", "pairwise", "power", "rank_one"]
    assert {p.name: p.stat().st_mtime_ns for p in (out / "src" / "notebooks").glob("*.ipynb")} == before
    summary = made.summary().set_index("page")
    assert not summary.loc["miscalibration", "served"] and "C0, C1 and C2" in summary.loc["miscalibration", "reason"]
    assert summary.loc["rank_one", "served"] and summary.loc["rank_one", "reason"] == ""


def test_a_file_with_policies_and_texts_adds_miscalibration_audit_and_reasoning_text(tmp_path):
    path = tmp_path / "policies.csv"
    policy_responses(texts=True).to_csv(path, index=False)
    proc = metacog("book", "--source", path, "--out", tmp_path / "book")
    assert proc.returncode == 0, proc.stderr[-3000:]
    executed = sorted(p.stem for p in (tmp_path / "book" / "src" / "notebooks").glob("*.ipynb"))
    assert executed == ["audit", "findings", "miscalibration", "reasoning_text"]
    index = text_of(tmp_path / "book" / "html" / "index.html")
    assert "needs 5 models" in index.split("Not served", 1)[1]  # rank_one's MIN_MODELS; the file has 2
    assert "lab-model-0" in text_of(tmp_path / "book" / "html" / "notebooks" / "miscalibration.html")
    assert "policies.csv:c2" in text_of(tmp_path / "book" / "html" / "notebooks" / "reasoning_text.html")
    pages = [tmp_path / "book" / "html" / "index.html", *(tmp_path / "book" / "html" / "notebooks").glob("*.html")]
    assert {p.name: default_names_in(text_of(p)) for p in pages} == {p.name: [] for p in pages}


@pytest.mark.parametrize("content, words", [
    ("model,item_id,probe,confidence\nm1,i1,p,0.5\n", "correct"),
    (None, "no such file"),
])
def test_a_bad_file_exits_2_with_one_line_and_executes_nothing(tmp_path, content, words):
    path = tmp_path / "bad.csv"
    if content is not None:
        path.write_text(content)
    proc = metacog("book", "--source", path, "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and words in proc.stderr, proc.stderr
    assert not (tmp_path / "out" / "src").exists()


def test_source_needs_out_and_out_needs_source(tmp_path):
    for args in (["--source", "x.csv"], ["--out", str(tmp_path)]):
        proc = metacog("book", *args)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_failing_chapter_exits_1_naming_it_and_keeps_the_others(tmp_path):
    """A copy of the repository whose audit page raises: the build fails naming audit, the
    miscalibration page executed beside it is kept, and a rerun reuses it."""
    root = tmp_path / "repo"
    for name in ("notebooks", "book"):
        shutil.copytree(ROOT / name, root / name)
    for name in ("_config.yml", "_toc.yml", "references.bib"):
        shutil.copy2(ROOT / name, root / name)
    audit = root / "notebooks" / "audit.md"
    audit.write_text(audit.read_text() + "\n```{code-cell} ipython3\nraise RuntimeError('planted failure')\n```\n")
    path = tmp_path / "policies.csv"
    policy_responses().to_csv(path, index=False)
    out = tmp_path / "book"
    with pytest.raises(sourcebook.BookError, match=r"(?s)'audit'.*planted failure"):
        sourcebook.build([path], out, jobs=2, root=root)
    assert (out / "src" / "notebooks" / "miscalibration.ipynb").exists()
    assert not (out / "src" / "notebooks" / "audit.ipynb").exists()  # no half-executed copy is kept
    assert not (out / "src" / "notebooks" / "findings.ipynb").exists()  # gathers the others: not run
    said = []
    with pytest.raises(sourcebook.BookError, match="'audit'"):
        sourcebook.build([path], out, jobs=1, root=root, log=said.append)
    assert "miscalibration: unchanged, reusing the executed copy" in said
    assert not (out / "html").exists()
