"""Versioned prompt templates, shipped as YAML in ``metacog/elicit/templates/``.

A template turns an :class:`~metacog.tidy.items.Item` into chat messages. Its
``id@version`` goes into every response row and into the cache key, so editing
a template means bumping its version (the old replies stay valid under the old
key). :func:`show` prints a template verbatim for the book.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from metacog.tidy.items import Item

TEMPLATE_DIR = Path(__file__).parent / "templates"

#: Every probe this module can ask, in a sensible asking order.
PROBES = ("answer", "answer_no_context", "prospective", "counterfactual", "c0", "c1", "c2")

#: How each context kind is announced (prospective) and referred to.
CONTEXT_PHRASES: dict[str, tuple[str, str]] = {
    "passage": ("a passage of text that may contain the answer", "the passage"),
    "options": ("a list of answer options", "the options"),
    "definition": ("a definition of the legal rule it is about", "the definition"),
    "hints": ("some hints", "the hints"),
    "solution": ("a worked solution", "the solution"),
    "background": ("some background information", "the background information"),
    "none": ("some additional context", "the context"),
}

_CONTEXT_HEADINGS = {
    "passage": "Passage", "options": "Options", "definition": "Definition", "hints": "Hints",
    "solution": "Solution", "background": "Background", "none": "Context",
}

_KINDS = ("answer", "judgment", "confidence")


@dataclass(frozen=True)
class Template:
    """One prompt template (see the YAML files for the fields)."""

    id: str
    version: int
    kind: str  # 'answer' (free text), 'judgment' (reasoning then Yes/No), 'confidence' (+ P(correct))
    system: str
    user: str
    final_prefix: str = "Final answer:"
    choices: tuple[str, ...] = ()
    confidence_prefix: str | None = None
    max_tokens: int = 128
    source: str = field(default="", compare=False)  # the YAML text, verbatim

    @property
    def tag(self) -> str:
        """'id@version', e.g. 'prospective@1'."""
        return f"{self.id}@{self.version}"

    def fields(self) -> set[str]:
        return {f for _, f, _, _ in string.Formatter().parse(self.user) if f}

    def render(self, item: Item, **extra: Any) -> list[dict[str, str]]:
        """Chat messages for ``item``; ``extra`` fills template-specific fields (own_answer)."""
        kind = item.context_kind if item.context_kind in CONTEXT_PHRASES else "none"
        phrase, ref = CONTEXT_PHRASES[kind]
        ctx = (item.context or "").strip()
        values = {
            "question": str(item.question).strip(),
            "context": ctx,
            "context_block": f"{_CONTEXT_HEADINGS[kind]}:\n{ctx}\n\n" if ctx else "",
            "context_phrase": phrase,
            "context_ref": ref,
            **{k: str(v) for k, v in extra.items()},
        }
        missing = self.fields() - set(values)
        if missing:
            raise ValueError(
                f"template {self.tag}: no value for field(s) {sorted(missing)} when rendering "
                f"item {item.benchmark}:{item.item_id}; pass them as keyword arguments."
            )
        user = self.user.format_map(values).strip()
        msgs = [{"role": "system", "content": self.system.strip()}] if self.system else []
        return msgs + [{"role": "user", "content": user}]


def _from_yaml(path: Path) -> Template:
    text = path.read_text(encoding="utf-8")
    try:
        d = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"template file {path}: invalid YAML ({exc}).") from None
    need = ("id", "version", "kind", "user")
    miss = [k for k in need if k not in d]
    if miss:
        raise ValueError(f"template file {path}: missing key(s) {miss}.")
    if any(not isinstance(c, str) for c in d.get("choices", ())):
        raise ValueError(f"template file {path}: quote the choices (YAML reads Yes/No as booleans).")
    if d["kind"] not in _KINDS:
        raise ValueError(f"template file {path}: kind {d['kind']!r} is not one of {_KINDS}.")
    return Template(
        id=d["id"], version=int(d["version"]), kind=d["kind"], system=d.get("system", ""),
        user=d["user"], final_prefix=d.get("final_prefix", "Final answer:"),
        choices=tuple(d.get("choices", ())), confidence_prefix=d.get("confidence_prefix"),
        max_tokens=int(d.get("max_tokens", 128)), source=text,
    )


@lru_cache(maxsize=None)
def _all() -> dict[str, Template]:
    out = {}
    for path in sorted(TEMPLATE_DIR.glob("*.yaml")):
        t = _from_yaml(path)
        out[t.tag] = t
    return out


def versions(probe: str) -> list[int]:
    return sorted(t.version for t in _all().values() if t.id == probe)


def get(probe: str, version: int | None = None) -> Template:
    """The template for ``probe`` ('prospective' or 'prospective@1'); latest version by default."""
    if "@" in probe:
        probe, v = probe.split("@", 1)
        version = int(v)
    vs = versions(probe)
    if not vs:
        raise ValueError(f"unknown probe {probe!r}; known probes are {list(PROBES)}.")
    version = vs[-1] if version is None else version
    if version not in vs:
        raise ValueError(f"probe {probe!r} has no template version {version}; versions: {vs}.")
    return _all()[f"{probe}@{version}"]


def show(probe: str, version: int | None = None) -> str:
    """The template file verbatim (for the book)."""
    return get(probe, version).source


def table() -> "Any":
    """Every shipped template as a table: tag, kind, choices, max_tokens."""
    import pandas as pd

    return pd.DataFrame([
        {"template": t.tag, "probe": t.id, "kind": t.kind, "choices": "/".join(t.choices),
         "confidence": bool(t.confidence_prefix), "max_tokens": t.max_tokens}
        for t in _all().values()
    ])
