"""Modules stay small enough to read in one sitting (#15 asks for about 400 lines): a module
that grows past the limit below should be split by job, as ``stats.stratified`` was split off
``stats.pairwise``."""

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "metacog"
MAX_LINES = 410


def test_no_module_is_longer_than_the_limit():
    sizes = {p.relative_to(PACKAGE.parent).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
             for p in PACKAGE.rglob("*.py")}
    assert len(sizes) > 50  # the walk found the package
    too_long = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not too_long, f"modules over {MAX_LINES} lines (split them by job): {too_long}"
