"""Notebooks tell, the package computes (issue #15): no notebook defines a function, a class
or a lambda, and none decides a verdict itself. Read from the jupytext sources with ast."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.md"))
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.M | re.S)
VERDICT_WORDS = {"supported", "not supported", "insufficient evidence"}
VERDICT_CALLS = {"decide", "Verdict"}


def code_cells(text: str) -> list[str]:
    """The Python source of each code cell (cell options such as ``:tags:`` dropped)."""
    cells = []
    for body in CELL.findall(text):
        lines = body.splitlines()
        if lines and lines[0].strip() == "---":  # a YAML block of cell options
            end = lines.index("---", 1) if "---" in lines[1:] else 0
            lines = lines[end + 1:]
        while lines and (lines[0].startswith(":") or not lines[0].strip()):
            lines.pop(0)
        cells.append("\n".join(lines))
    return cells


def problems(source: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            out.append(f"line {node.lineno}: defines a {type(node).__name__}")
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in VERDICT_CALLS:
                out.append(f"line {node.lineno}: calls {name}() (a verdict belongs in the package)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.strip().lower() in VERDICT_WORDS:
            out.append(f"line {node.lineno}: writes the verdict {node.value!r} itself")
    return out


def test_the_checker_sees_what_it_must_refuse():
    assert problems("f = lambda m: m") and problems("def short(m):\n    return m")
    assert problems("v = decide(claim, est, lo, hi)") and problems("s = 'insufficient evidence'")
    assert problems("x = hv.verdicts(res)") == []
    text = "```{code-cell} ipython3\n:tags: [remove-cell]\n\nx = 1\n```\n"
    assert code_cells(text) == ["x = 1"]
    yaml_opts = "```{code-cell} ipython3\n---\nmystnb:\n  image:\n    alt: \"a\n      b\"\n---\nx = 2\n```\n"
    assert code_cells(yaml_opts) == ["x = 2"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_defines_nothing_and_decides_nothing(path):
    cells = code_cells(path.read_text())
    assert cells, f"{path.name}: no code cells found"
    found = [f"{path.name} cell {i}: {p}" for i, src in enumerate(cells, 1) for p in problems(src)]
    assert found == []
