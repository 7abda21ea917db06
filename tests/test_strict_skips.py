"""Strict mode fails a run that skips a test; without it a skip stays a skip."""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

SUITE = """
import pytest

def test_needs_a_browser():
    pytest.skip("Debian chromium is not installed")

@pytest.mark.xfail(reason="known", strict=True)
def test_known_failure():
    assert False

def test_plain():
    assert True
"""


def _run(tmp_path, strict: bool):
    (tmp_path / "test_suite.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if k != "METACOG_REQUIRE_ALL"}
    if strict:
        env["METACOG_REQUIRE_ALL"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                           "strict_skips", "test_suite.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)


def test_a_skip_fails_the_run_under_metacog_require_all(tmp_path):
    proc = _run(tmp_path, strict=True)
    assert proc.returncode == 1, proc.stdout
    assert "1 failed, 1 passed, 1 xfailed" in proc.stdout
    assert "forbids skips: Debian chromium is not installed" in proc.stdout


def test_without_it_a_skip_is_a_skip(tmp_path):
    proc = _run(tmp_path, strict=False)
    assert proc.returncode == 0, proc.stdout
    assert "1 passed, 1 skipped, 1 xfailed" in proc.stdout

