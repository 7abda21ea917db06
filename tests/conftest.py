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
