"""Strict mode: under METACOG_REQUIRE_ALL=1 (CI sets it in .ci/run) a skipped test fails.

A missing mirror, chromium, R, sandbox, local model or torch must not let a run pass with
tests quietly left out. conftest.py imports the hook; tests/test_strict_skips.py loads this
module as a plugin (-p strict_skips) into a pytest run of its own.
"""

import os

import pytest


def require_all() -> bool:
    return os.environ.get("METACOG_REQUIRE_ALL", "").strip() not in ("", "0")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if require_all() and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = (f"skipped, and METACOG_REQUIRE_ALL=1 forbids skips: {reason}\n"
                           "Install what it names (make test does, as root) or run without "
                           "METACOG_REQUIRE_ALL.")
