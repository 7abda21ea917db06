"""A public panel's own protocol, asked of each new model and placed among the panel's models.

``metacog replicate --panel calibration_study`` asks every model the LLM Calibration Study's
MMLU-Pro items with the study's prompt, parsers and answer key
(:mod:`metacog.elicit.protocols`), then executes the place page for each model
(:mod:`metacog.pages.place`): the new model's internal AUROC beside the panel's models, its
rank, and its own-versus-population comparison. ``metacog place`` makes the same page for one
model; both go through :func:`place_page`.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pandas as pd


def place_page(model: str, responses: str | Path, out: str | Path, *, panel: str = "calibration_study",
               n_items: int = 200, seed: int = 0, probe: str = "verbal_confidence", max_tokens: int | None = None,
               html: bool = True) -> Path:
    """Execute the place page for ``model`` on its tidy ``responses`` into ``out``; the HTML page's
    path (the executed notebook's with ``html=False``)."""
    from metacog.book import execute_chapter, load_manifest
    from metacog.pages.place import run as placing

    chapter = {c.page: c for c in load_manifest()}["place"]
    chapter = dataclasses.replace(chapter, parameters={
        **chapter.parameters, "panel": panel, "model": model, "n_items": int(n_items), "seed": int(seed),
        "probe": probe, "responses": str(Path(responses).resolve()), "max_tokens": int(max_tokens or 0)})
    executed = execute_chapter(chapter, Path(out).resolve())
    return placing.render_html(executed) if html else executed


def folder_name(model: str) -> str:
    """A file-system-safe folder name for ``model`` ('openai/gpt-4o' -> 'openai_gpt-4o')."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("._") or "model"


def place_models(models, out: str | Path, *, panel: str = "calibration_study", api_base: str | None = None,
                 n_items: int = 200, seed: int = 0, cache=None, concurrency: int = 4, timeout: float = 600.0,
                 retries: int = 2, html: bool = True, log=None) -> pd.DataFrame:
    """Ask each model the panel's protocol and place it: one row per model with its responses file
    and page (``<out>/<model>/``). Answers go through the response cache, so a rerun asks nothing twice.
    Raises ValueError (one line) when no reply of a model is usable, before its page."""
    from metacog.pages.place import run as placing

    say = log or (lambda msg: None)
    placing.check(panel, models[0], api_base, n_items, concurrency=concurrency)
    rows = []
    for m in models:
        folder = Path(out) / folder_name(m)
        say(f"{panel} protocol: {m}, {n_items} items")
        responses = placing.collect(m, folder, api_base=api_base, n_items=n_items, seed=seed, cache=cache,
                                    concurrency=concurrency, timeout=timeout, retries=retries)
        placing.refuse_unusable(responses, m, api_base, timeout=timeout)
        page = place_page(m, responses, folder, panel=panel, n_items=n_items, seed=seed, html=html)
        rows.append({"model": m, "responses": responses, "page": page})
    return pd.DataFrame(rows)
