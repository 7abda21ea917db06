"""Is a model surely absent from litellm's bundled price map? Answered without importing litellm.

Importing litellm takes 5-7 s of CPU. A run that asks only ``openai/<name>``
models on your own server (the direct HTTP path, :mod:`metacog.elicit.http`)
needs litellm for one thing: the price of ``<name>``, which is almost always
unknown (vLLM's ``Qwen/...``, llama.cpp's ``my-model``). This module reads the
JSON price map litellm ships (``model_prices_and_context_window_backup.json``,
the one litellm itself loads with ``LITELLM_LOCAL_MODEL_COST_MAP=True``) and
says when litellm cannot price a model; whenever it cannot be sure, it says so,
and the caller asks litellm as before.

The test is deliberately coarse, so that it errs only towards asking litellm:
a model is *surely unpriced* when no key of the map (lower-cased) is a prefix of
the model id, or starts with it, at any ``/`` or ``:`` boundary of the id
(litellm also strips provider prefixes, date and version suffixes and
fine-tune tags), and no fallback rule of the map (a regular expression litellm
matches against unknown names) matches any of those parts. When litellm is
already imported (its map may hold prices registered at run time), when the
map is not the bundled one, or when the file cannot be read, nothing is sure.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import sys
from pathlib import Path

MAP_FILE = "model_prices_and_context_window_backup.json"


@functools.lru_cache(maxsize=1)
def _bundled() -> tuple[tuple[str, ...], tuple[re.Pattern, ...]] | None:
    """(lower-cased keys, every fallback rule's pattern) of litellm's bundled map, or None."""
    if os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP", "").lower() != "true":
        return None  # litellm would fetch another map
    try:
        spec = importlib.util.find_spec("litellm")  # finds the folder, runs nothing
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / MAP_FILE
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    rules = doc.get("fallback_generalizations")
    if isinstance(rules, dict):
        rules = rules.get("rules")
    patterns = []
    for r in rules if isinstance(rules, list) else []:
        pattern = r.get("pattern") if isinstance(r, dict) else None
        if not isinstance(pattern, str):
            continue
        try:
            patterns.append(re.compile(pattern, re.IGNORECASE))
        except re.error:
            return None  # a rule this module cannot read: nothing is sure
    return tuple(sorted({k.lower() for k in doc})), tuple(patterns)


def _parts(model: str) -> set[str]:
    """The id and every tail of it after a ``/`` or ``:``, lower-cased."""
    m = model.lower()
    return {p for p in [m, *(m[i + 1:] for i, ch in enumerate(m) if ch in "/:")] if p}


@functools.lru_cache(maxsize=256)
def _absent(model: str) -> bool:
    got = _bundled()
    if got is None:
        return False
    keys, patterns = got
    parts = _parts(model)
    for p in parts:
        if any(rx.search(p) for rx in patterns):
            return False
    for k in keys:
        for p in parts:
            if p.startswith(k) or k.startswith(p):
                return False
    return True


def surely_unpriced(model: str) -> bool:
    """True only when litellm, with its bundled price map, surely has no price for ``model``
    (so that litellm need not be imported to learn it); False when unsure."""
    if "litellm" in sys.modules:
        return False  # asking the imported litellm is cheap, and it may know prices added at run time
    return _absent(model)
