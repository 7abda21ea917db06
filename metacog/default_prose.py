"""The cells of a chapter about its default sources: tagged :data:`DEFAULT_PROSE` in the notebook
source, and left out of a page run on other sources (``metacog chapter``, and the book on files)."""

from __future__ import annotations

from pathlib import Path

#: The cell tag of a chapter's prose (or code) about its default sources.
DEFAULT_PROSE = "default-sources"


def drop_default_prose(notebook: Path) -> None:
    """Leave out of ``notebook`` the cells tagged :data:`DEFAULT_PROSE`: they describe the book's
    own sources, not the ones the page was run on."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    kept = [c for c in nb.cells if DEFAULT_PROSE not in c.metadata.get("tags", [])]
    if len(kept) != len(nb.cells):
        nb.cells = kept
        nbformat.write(nb, notebook)
