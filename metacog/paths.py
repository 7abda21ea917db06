"""Checks on paths a command will write to, made before anything slow runs."""

from __future__ import annotations

import os
from pathlib import Path


def writable_folder(folder: str | os.PathLike, what: str) -> Path:
    """Create ``folder`` (and its parents) and write a probe file in it; return it as a Path.

    A folder under a file, or one that cannot be written, raises ValueError naming ``what``
    (the flag or argument it came from), so a command fails before it asks or computes anything.
    """
    path = Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".metacog-write-check-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"{what}: cannot write in {path} ({exc.strerror or exc}); choose another "
                         f"path.") from None
    return path
