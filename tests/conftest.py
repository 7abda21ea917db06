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
    skipped, unless METACOG_SWEEP=1: their own make targets set it (make scicode-check)."""
    if os.environ.get("METACOG_SWEEP", "").strip() not in ("", "0"):
        return
    keep = [it for it in items if it.get_closest_marker("sweep") is None]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[it for it in items if it.get_closest_marker("sweep")])
        items[:] = keep


# Under METACOG_REQUIRE_ALL=1 (CI) a skipped test fails: see strict_skips.py.
from strict_skips import pytest_runtest_makereport  # noqa: E402,F401
