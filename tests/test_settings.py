"""metacog.settings: the checkout and the data folder are found from the environment and the
current directory, never from where the package is installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from metacog import settings

from metacog import book
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def clean_env(monkeypatch):
    for var in (settings.ROOT_ENV, settings.DATA_ENV, "METACOG_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def _checkout(folder: Path) -> Path:
    (folder / "notebooks").mkdir(parents=True)
    (folder / "notebooks" / "manifest.yml").write_text("chapters: []\n")
    return folder


def test_from_the_repository_root_everything_is_the_checkout(clean_env):
    clean_env.chdir(REPO)
    assert settings.project_root() == REPO
    assert settings.data_dir() == REPO / "data"
    assert book.book_root() == REPO


def test_nearest_ancestor_holding_the_manifest_wins(tmp_path, clean_env):
    outer = _checkout(tmp_path / "outer")
    inner = _checkout(outer / "work" / "inner")
    clean_env.chdir(inner / "notebooks")
    assert settings.project_root() == inner.resolve()
    clean_env.chdir(outer / "work")
    assert settings.project_root() == outer.resolve()
    assert settings.data_dir() == outer.resolve() / "data"


def test_outside_a_checkout_data_goes_to_the_user_cache(tmp_path, clean_env):
    clean_env.chdir(tmp_path)
    clean_env.setenv("METACOG_CACHE_DIR", str(tmp_path / "cache"))
    assert settings.project_root() is None
    assert settings.data_dir() == tmp_path / "cache" / "data"
    with pytest.raises(settings.ProjectRootError, match=settings.ROOT_ENV):
        settings.require_project_root("the book")
    with pytest.raises(book.BookError, match="METACOG_PROJECT_ROOT"):
        book.load_manifest()


def test_environment_variables_override(tmp_path, clean_env):
    clean_env.chdir(tmp_path)
    other = _checkout(tmp_path / "other")
    clean_env.setenv(settings.ROOT_ENV, str(other))
    assert settings.project_root() == other.resolve()
    assert settings.data_dir() == other.resolve() / "data"
    clean_env.setenv(settings.DATA_ENV, str(tmp_path / "d"))
    assert settings.data_dir() == tmp_path / "d"
    clean_env.setenv(settings.ROOT_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(settings.ProjectRootError, match=r"METACOG_PROJECT_ROOT=.*nowhere.*notebooks/manifest.yml"):
        settings.project_root()


def test_cli_outside_a_checkout_names_the_variable_without_a_traceback(tmp_path, clean_env):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "metacog.cli", "check"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert out.returncode != 0
    assert "METACOG_PROJECT_ROOT" in out.stderr and "Traceback" not in out.stderr


def test_the_package_finds_no_folder_through_its_own_location():
    offenders = []
    for f in (REPO / "metacog").rglob("*.py"):
        for i, line in enumerate(f.read_text().splitlines(), 1):
            if "__file__" in line and "parents[" in line:
                offenders.append(f"{f.relative_to(REPO)}:{i}")
    assert offenders == []
