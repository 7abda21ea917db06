"""Make the hashed lock files from pyproject.toml: ``python requirements/lock.py``.

Writes ``requirements/book.txt`` (extras book, elicit) and ``requirements/test.txt``
(book, elicit, test) with ``uv pip compile --generate-hashes`` for CPython 3.11 on
x86-64 Linux, each headed by the digest of the dependency lists it was made from;
``tests/test_lock.py`` fails when pyproject.toml no longer matches. llama-cpp-python
(built from source) and the torch CPU build are installed by scripts/install_local.sh
and scripts/install_probe.sh, outside the lock. Needs ``uv`` (``pip install uv``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: Lock file -> the extras it installs (besides the core dependencies).
ENVIRONMENTS = {"book.txt": ("book", "elicit"), "test.txt": ("book", "elicit", "test")}
PLATFORM = ("--python-version", "3.11", "--python-platform", "x86_64-unknown-linux-gnu")


def spec(extras: tuple[str, ...], pyproject: Path = ROOT / "pyproject.toml") -> dict:
    """The dependency lists a lock is made from: core dependencies and each extra's."""
    doc = tomllib.loads(pyproject.read_text())["project"]
    return {"dependencies": doc["dependencies"],
            **{e: doc["optional-dependencies"][e] for e in extras}}


def digest(extras: tuple[str, ...], pyproject: Path = ROOT / "pyproject.toml") -> str:
    """sha256 of :func:`spec` in canonical JSON."""
    blob = json.dumps(spec(extras, pyproject), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def header_digest(lock: Path) -> str | None:
    """The digest written at the top of ``lock``."""
    for line in lock.read_text().splitlines()[:10]:
        if line.startswith("# pyproject-digest: "):
            return line.split(": ", 1)[1].strip()
    return None


def main() -> int:
    uv = shutil.which("uv")
    if not uv:
        sys.exit("requirements/lock.py needs uv: pip install uv")
    for name, extras in ENVIRONMENTS.items():
        out = HERE / name
        cmd = [uv, "pip", "compile", str(ROOT / "pyproject.toml"), *[a for e in extras for a in ("--extra", e)],
               "--generate-hashes", *PLATFORM, "--no-header", "--no-annotate", "-o", str(out)]
        subprocess.run(cmd, check=True)
        body = out.read_text()
        out.write_text(f"# Hashed lock for extras {', '.join(extras)}: made by `python requirements/lock.py`"
                       f" from pyproject.toml; install with pip install --require-hashes -r {out.name}\n"
                       f"# pyproject-digest: {digest(extras)}\n{body}")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
