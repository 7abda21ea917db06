"""What a chapter run made: :class:`ChapterRun`, returned by :func:`metacog.chapter.run`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


class ChapterRun:
    """What :func:`run` made: the executed ``notebook``, the rendered ``page`` (None without
    HTML) and, through :meth:`glued` and :meth:`summary`, every result the chapter glued into
    its prose. ``os.fspath(result)`` is the page, or the notebook when there is no page."""

    def __init__(self, name: str, notebook: Path, page: Path | None = None):
        self.name, self.notebook, self.page = name, Path(notebook), (Path(page) if page else None)

    def __fspath__(self) -> str:
        return str(self.page or self.notebook)

    def __repr__(self) -> str:
        return f"ChapterRun({self.name!r}, notebook={str(self.notebook)!r}, page={str(self.page) if self.page else None!r})"

    def glued(self) -> dict[str, dict]:
        """Every glued output of the executed notebook by name: its MIME bundle (``text/plain``
        for numbers and sentences, ``image/png`` for figures, ``text/html`` for tables)."""
        import json

        prefix = "application/papermill.record/"
        out = {}
        for cell in json.loads(self.notebook.read_text(encoding="utf-8")).get("cells", []):
            for o in cell.get("outputs", []):
                name = (o.get("metadata") or {}).get("scrapbook", {}).get("name")
                if name:
                    out[name] = {k[len(prefix):]: v for k, v in (o.get("data") or {}).items()
                                 if k.startswith(prefix)}
        return out

    def summary(self) -> pd.DataFrame:
        """One row per glued result: name, kind (text, figure or table) and, for text, its value
        as the page prints it."""
        rows = []
        for name, bundle in self.glued().items():
            kind = "figure" if "image/png" in bundle else "table" if "text/html" in bundle else "text"
            text = bundle.get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else str(text)
            rows.append({"name": name, "kind": kind,
                         "value": text.strip().strip("'\"") if kind == "text" else ""})
        return pd.DataFrame(rows, columns=["name", "kind", "value"])
