"""Where the project's files are, found without relying on where the package is installed.

The package never locates the repository from its own source path and never writes into
its own source tree. Two places matter:

* :func:`project_root` — the book's checkout (it holds ``notebooks/manifest.yml``):
  ``$METACOG_PROJECT_ROOT`` if set, else the nearest ancestor of the current directory
  (the directory itself included) holding ``notebooks/manifest.yml``, else None.
  Building the book or running a chapter needs it (:func:`require_project_root`).
* :func:`data_dir` — the data this project writes and replays (recorded responses in
  ``responses/``, the hidden-state study in ``probe/``): ``$METACOG_DATA_DIR`` if set, else
  ``<project root>/data`` when there is a project root, else ``<user cache>/data``.
* :func:`user_cache_dir` — the user cache (downloaded datasets, response and result
  caches): ``$METACOG_CACHE_DIR``, else ``$XDG_CACHE_HOME/metacog``, else
  ``~/.cache/metacog`` (what :func:`metacog.data.fetch.cache_dir` returns).

Run from the repository root (tests, ``make book``, papermill with cwd = repo root) both
resolve to the checkout, exactly as before. Everything is read at call time, so setting
an environment variable takes effect without re-importing anything. This module imports
nothing from the package (it is the bottom layer).
"""

from __future__ import annotations

import os
from pathlib import Path

#: The file that marks the book's checkout.
MARKER = Path("notebooks") / "manifest.yml"
ROOT_ENV = "METACOG_PROJECT_ROOT"
DATA_ENV = "METACOG_DATA_DIR"


class ProjectRootError(RuntimeError):
    """No book checkout could be found where one is needed."""


def project_root(start: str | os.PathLike | None = None) -> Path | None:
    """The book's checkout: ``$METACOG_PROJECT_ROOT``, else the nearest ancestor of ``start``
    (default: the current directory) holding ``notebooks/manifest.yml``, else None.

    A ``$METACOG_PROJECT_ROOT`` that does not hold the manifest raises
    :class:`ProjectRootError` naming the variable (a misspelt path should not silently
    fall back to somewhere else)."""
    env = os.environ.get(ROOT_ENV)
    if env:
        root = Path(env).expanduser().resolve()
        if not (root / MARKER).is_file():
            raise ProjectRootError(
                f"${ROOT_ENV}={env!r} does not hold {MARKER.as_posix()}; set {ROOT_ENV} to the "
                "folder of the metacog-book checkout, or unset it.")
        return root
    here = Path(start if start is not None else Path.cwd()).expanduser().resolve()
    for folder in (here, *here.parents):
        if (folder / MARKER).is_file():
            return folder
    return None


def require_project_root(what: str = "this") -> Path:
    """:func:`project_root`, or a :class:`ProjectRootError` that says how to point at one."""
    root = project_root()
    if root is None:
        raise ProjectRootError(
            f"{what} needs the metacog-book checkout (the folder holding {MARKER.as_posix()}), "
            f"and none was found above {Path.cwd()}; run from inside the checkout or set "
            f"{ROOT_ENV} to its folder.")
    return root


def data_dir() -> Path:
    """The project's data folder: ``$METACOG_DATA_DIR``, else ``<project root>/data``,
    else ``<user cache>/data`` (see the module docstring). Not created here."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser()
    root = project_root()
    if root is not None:
        return root / "data"
    return user_cache_dir() / "data"


def user_cache_dir() -> Path:
    """The user cache root: ``$METACOG_CACHE_DIR``, else ``$XDG_CACHE_HOME/metacog``, else
    ``~/.cache/metacog``. Not created here."""
    if os.environ.get("METACOG_CACHE_DIR"):
        return Path(os.environ["METACOG_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "metacog"
