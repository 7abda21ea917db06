"""The hashed lock files still match pyproject.toml (offline: no resolver, no network).

Fails when a dependency list in pyproject.toml changed since the lock was made
(regenerate with ``python requirements/lock.py``), when a pin no longer
satisfies its requirement, when a pin has no hash, or when a compromised
litellm release (1.82.7, 1.82.8) could be installed.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec_ = importlib.util.spec_from_file_location("metacog_lock", ROOT / "requirements" / "lock.py")
lock = importlib.util.module_from_spec(spec_)
spec_.loader.exec_module(lock)

packaging = pytest.importorskip("packaging.requirements")
from packaging.requirements import Requirement  # noqa: E402
from packaging.utils import canonicalize_name  # noqa: E402

COMPROMISED = {"litellm": ("1.82.7", "1.82.8")}
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._\-]*)==(\S+)")
ENV = {"python_version": "3.11", "python_full_version": "3.11.7", "sys_platform": "linux",
       "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
       "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}


def pins(path: Path) -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of a pip-compile style lock file."""
    out: dict[str, tuple[str, int]] = {}
    current = None
    for line in path.read_text().splitlines():
        m = _PIN.match(line)
        if m:
            current = canonicalize_name(m.group(1))
            out[current] = (m.group(2), 0)
        elif current and "--hash=sha256:" in line:
            v, n = out[current]
            out[current] = (v, n + 1)
    return out


@pytest.mark.parametrize("name, extras", sorted(lock.ENVIRONMENTS.items()))
def test_lock_was_made_from_the_current_pyproject(name, extras):
    path = ROOT / "requirements" / name
    assert path.is_file(), f"{path} is missing: run python requirements/lock.py"
    assert lock.header_digest(path) == lock.digest(extras), (
        f"{path.name} was made from other dependency lists than pyproject.toml has now; "
        "regenerate it with `python requirements/lock.py` and commit it.")


@pytest.mark.parametrize("name, extras", sorted(lock.ENVIRONMENTS.items()))
def test_every_requirement_is_pinned_with_hashes_and_satisfied(name, extras):
    locked = pins(ROOT / "requirements" / name)
    assert locked and all(n >= 1 for _, n in locked.values()), "every pin needs --hash lines"
    lists = lock.spec(extras)
    for group, reqs in lists.items():
        for text in reqs:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate(ENV):
                continue
            key = canonicalize_name(req.name)
            assert key in locked, f"{name}: {text} (pyproject [{group}]) is not in the lock"
            assert req.specifier.contains(locked[key][0], prereleases=True), (
                f"{name}: pinned {key}=={locked[key][0]} does not satisfy {text!r}")


def test_compromised_litellm_releases_are_excluded_everywhere():
    for name in lock.ENVIRONMENTS:
        locked = pins(ROOT / "requirements" / name)
        for pkg, bad in COMPROMISED.items():
            assert locked.get(pkg, ("", 0))[0] not in bad, f"{name} pins a compromised {pkg}"
    elicit = [Requirement(r) for r in lock.spec(("elicit",))["elicit"]]
    litellm = next(r for r in elicit if r.name == "litellm")
    for bad in COMPROMISED["litellm"]:
        assert not litellm.specifier.contains(bad), f"pyproject.toml admits litellm {bad}"
    assert litellm.specifier.contains("1.82.9") and litellm.specifier.contains("1.110.2")


def test_the_check_notices_a_changed_pyproject(tmp_path):
    text = (ROOT / "pyproject.toml").read_text()
    changed = tmp_path / "pyproject.toml"
    changed.write_text(text.replace('"numpy>=1.26"', '"numpy>=1.27"'))
    assert text != changed.read_text()
    assert lock.digest(("book",), changed) != lock.digest(("book",), ROOT / "pyproject.toml")


def test_makefile_installs_from_the_lock_with_hash_checking():
    make = (ROOT / "Makefile").read_text()
    for name in lock.ENVIRONMENTS:
        assert f"--require-hashes -r requirements/{name}" in make
