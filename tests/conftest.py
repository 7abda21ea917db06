import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"

# Tests read the public data from the mirror; the Makefile sets it, and so do we when
# pytest is run by hand next to ../shared/data.
if not os.environ.get("METACOG_DATA_MIRROR") and (SHARED / "SOURCES.md").exists():
    os.environ["METACOG_DATA_MIRROR"] = str(SHARED)


@pytest.fixture(scope="session")
def mirror() -> Path:
    m = os.environ.get("METACOG_DATA_MIRROR")
    if not m:
        pytest.skip("no data mirror: set METACOG_DATA_MIRROR to a folder laid out like ../shared/data")
    return Path(m)


@pytest.fixture(scope="session")
def site(mirror) -> Path:
    """The whole book, built once for the session (chapters unchanged since the last build are
    reused); the folder holding index.html."""
    from metacog import book

    return book.build(ROOT).parent


def pytest_collection_modifyitems(config, items):
    """Tests marked ``sweep`` (a full sweep that the default run samples) are deselected, not
    skipped, unless METACOG_SWEEP=1 (their make target sets it: make scicode-check) or the test is
    named on the command line (path::name)."""
    if os.environ.get("METACOG_SWEEP", "").strip() not in ("", "0"):
        return
    named = {(Path(a.split("::")[0]).name, a.split("::")[1]) for a in config.args if "::" in a}

    def left_out(it) -> bool:
        return it.get_closest_marker("sweep") is not None and (it.path.name, it.name) not in named

    dropped = [it for it in items if left_out(it)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [it for it in items if not left_out(it)]


# Under METACOG_REQUIRE_ALL=1 (CI) a skipped test fails: see strict_skips.py.
from strict_skips import pytest_runtest_makereport  # noqa: E402,F401
