"""The teaching page (book/teaching.md) shows the output of every code block it asks
students to run; each block is run here (a Python block from the checkout, a shell block in an
empty folder with its own cache), and what it prints must be the "Expected output" shown under
it: all of it for Python; for the shell, every shown line in order, where "…" stands for any
text (a folder, a count of rendering warnings) and a line of "…" alone for lines left out."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "book" / "teaching.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```\n\nExpected output[^\n]*\n\n```text\n(.*?)```", PAGE, re.S)
SHELL = re.findall(r"```bash\n(.*?)```\n\nExpected output[^\n]*(?:\n[^\n`]+)*\n\n```text\n(.*?)```", PAGE, re.S)


def test_every_python_block_has_an_expected_output():
    assert len(BLOCKS) == PAGE.count("```python\n") >= 2


@pytest.mark.parametrize("code,expected", BLOCKS, ids=[f"block{i + 1}" for i in range(len(BLOCKS))])
def test_a_block_prints_its_expected_output(code, expected):
    env = {**os.environ, "METACOG_PROJECT_ROOT": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == expected.strip()


def test_every_shell_block_has_an_expected_output():
    assert len(SHELL) == PAGE.count("```bash\n") >= 5


def _shown_lines_in_order(expected: str, output: str) -> list[str]:
    """The expected lines (bar the "…" lines) that are not found, in order, among the output's
    lines; whitespace runs count as one space and "…" inside a line matches any text."""
    lines = [" ".join(x.split()) for x in re.split(r"[\r\n]+", output)]
    at, missing = 0, []
    for want in (" ".join(x.split()) for x in expected.strip().splitlines()):
        if want == "…":
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in want.split("…")) + "$")
        hit = next((i for i in range(at, len(lines)) if pattern.match(lines[i])), None)
        if hit is None:
            missing.append(want)
        else:
            at = hit + 1
    return missing


def test_the_shell_matcher_needs_every_shown_line_in_order():
    out = "[chapter] source a: 3 rows\n/tmp/x/html/p.html\rbar 50%\rbar 100%\nlast line"
    assert _shown_lines_in_order("[chapter] source a: 3 rows\n…\n…/html/p.html\nlast line", out) == []
    assert _shown_lines_in_order("last line\n[chapter] source a: 3 rows", out) == ["[chapter] source a: 3 rows"]
    assert _shown_lines_in_order("[chapter] source a: 4 rows", out) == ["[chapter] source a: 4 rows"]


@pytest.mark.slow
@pytest.mark.parametrize("code,expected", SHELL, ids=[f"shell{i + 1}" for i in range(len(SHELL))])
def test_a_shell_block_prints_its_expected_output(code, expected, tmp_path):
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "METACOG_PROJECT_ROOT": str(ROOT), "METACOG_CACHE_DIR": str(tmp_path / "cache"),
           "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    # one stream, as a terminal shows it
    out = subprocess.run(["bash", "-e", "-c", code], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=1200)
    assert out.returncode == 0, out.stdout[-3000:]
    missing = _shown_lines_in_order(expected, out.stdout)
    assert not missing, f"not printed (in order): {missing}\n--- output:\n{out.stdout[-3000:]}"


def test_sessions_are_numbered_with_time_exercises_and_rubric():
    sessions = re.split(r"\n## Session ", PAGE)[1:]
    assert [int(s.split(" ", 1)[0]) for s in sessions] == list(range(1, len(sessions) + 1))
    for i, s in enumerate(sessions, 1):
        assert "**Time.**" in s and "**Rubric.**" in s, f"session {i}"
        numbers = re.findall(rf"^{i}\.(\d+) ", s, re.M)
        assert numbers and [int(n) for n in numbers] == list(range(1, len(numbers) + 1)), f"session {i}"
    assert "notebooks/measures" in sessions[0].split("\n", 1)[0] + sessions[0]


def test_the_class_file_too_small_to_compare_stops_with_the_line_the_page_quotes(tmp_path):
    """Session 5 says a class file with 10 items per subject stops the pairwise chapter before
    anything runs, saying at most 10 items are shared and that it needs at least 20."""
    env = {**os.environ, "METACOG_PROJECT_ROOT": str(ROOT), "METACOG_CACHE_DIR": str(tmp_path / "cache")}
    run = [sys.executable, "-m", "metacog.cli"]
    made = subprocess.run([*run, "example-data", "--models", "12", "--items", "10", "--out", "class.csv"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    out = subprocess.run([*run, "chapter", "pairwise", "--source", "class.csv", "--out", "pairwise_class"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "at most 10 items are answered by two or more models" in out.stderr and "at least 20" in out.stderr
    assert "at most 10 items are answered by two or more models (here, students)" in " ".join(PAGE.split())
    assert not (tmp_path / "pairwise_class" / "html").exists()
