"""The teaching page (book/teaching.md) shows the output of every Python block it asks
students to run; each block is run here from the checkout, and what it prints must be the
"Expected output" shown under it."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "book" / "teaching.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```\n\nExpected output[^\n]*\n\n```text\n(.*?)```", PAGE, re.S)


def test_every_python_block_has_an_expected_output():
    assert len(BLOCKS) == PAGE.count("```python\n") >= 2


@pytest.mark.parametrize("code,expected", BLOCKS, ids=[f"block{i + 1}" for i in range(len(BLOCKS))])
def test_a_block_prints_its_expected_output(code, expected):
    env = {**os.environ, "METACOG_PROJECT_ROOT": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == expected.strip()


def test_sessions_are_numbered_with_time_exercises_and_rubric():
    sessions = re.split(r"\n## Session ", PAGE)[1:]
    assert [int(s.split(" ", 1)[0]) for s in sessions] == list(range(1, len(sessions) + 1))
    for i, s in enumerate(sessions, 1):
        assert "**Time.**" in s and "**Rubric.**" in s, f"session {i}"
        numbers = re.findall(rf"^{i}\.(\d+) ", s, re.M)
        assert numbers and [int(n) for n in numbers] == list(range(1, len(numbers) + 1)), f"session {i}"
    assert "notebooks/measures" in sessions[0].split("\n", 1)[0] + sessions[0]
