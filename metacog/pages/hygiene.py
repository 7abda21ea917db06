"""Page hygiene: find what a reader should never see in the rendered book.

:func:`scan_html` reads every page of a built book (skipping Sphinx's own ``_static``,
``_sources``, search and index pages) and reports, from the *visible text* (no scripts,
styles or head), one row per finding with the page, the problem and an excerpt:

- ``nan`` — "NaN", "nan" or "<NA>" shown as a value (prose and cell outputs);
- ``warning`` — "Warning:", RuntimeWarning, UserWarning, DeprecationWarning, FutureWarning;
- ``traceback`` — "Traceback (most recent call last)", or "...Error:" at the start of a line
  of a cell's output;
- ``machine path`` — /work/, /home/, /tmp/, /root/, site-packages, .venv (code cells too);
- ``raw header`` — a table header cell that is a bare snake_case name (``share_yes``);
- ``template glitch`` — "p = <", a range whose ends are equal ("0.44–0.44", "37%–37%",
  "0.44 to 0.44"), "Over 0 ", "by -0." (a negative excess).

Code cells' *source* is only checked for machine paths: a cell that says
``warnings.filterwarnings(...)`` or ``np.nan`` is not a problem on the page. Code written into
the prose (``<pre>``/``<code>`` outside cells: commands such as ``.venv/bin/metacog ...``) is an
example, not a computed value, and is not checked.
Run ``python -m metacog.pages.hygiene FOLDER`` to print the findings (exit status 1 if any).
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd

_SKIP = {"script", "style", "head", "noscript", "template", "svg"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}
# api.html is docstrings rendered by autodoc (reference text that names NaN as a return value), not
# computed output.
_SKIP_PAGES = {"genindex.html", "search.html", "py-modindex.html", "api.html"}

_NUM = r"[\u2212\-]?\d+(?:[.,]\d+)*%?"
_DEC = r"[\u2212\-]?\d+(?:\.\d+%?|%)"  # a decimal or a percentage
CHECKS: list[tuple[str, re.Pattern, tuple[str, ...]]] = [
    ("nan", re.compile(r"(?<![\w.\-])(?:NaN|nan)(?![\w(])|<NA>"), ("prose", "output")),
    ("warning", re.compile(r"\bWarning:|\b(?:Runtime|User|Deprecation|Future)Warning\b"), ("prose", "output")),
    ("traceback", re.compile(r"Traceback \(most recent call last\)"), ("prose", "output")),
    ("traceback", re.compile(r"(?m)^[ \t]*[A-Za-z]*Error:"), ("output",)),
    ("machine path", re.compile(r"/(?:work|home|tmp|root)/|site-packages|(?<![\w])\.venv\b"),
     ("prose", "output", "input")),
    ("template glitch", re.compile(r"\bp\s*=\s*<"), ("prose", "output")),
    ("template glitch", re.compile(rf"(?<![\w.,\u2212\-])({_NUM})\s*[\u2013\u2014]\s*\1(?![\w.%])"),
     ("prose", "output")),
    ("template glitch", re.compile(rf"(?<![\w.,\u2212\-])({_DEC}) to \1(?![\w.%])"), ("prose", "output")),
    ("template glitch", re.compile(r"(?<![\w.,\u2212\-])(\d+\.\d+%?)-\1(?![\w.%])"), ("prose", "output")),
    ("template glitch", re.compile(r"\b[Oo]ver 0 "), ("prose", "output")),
    ("template glitch", re.compile(r"\bby\s*[\u2212\-]\s*0\.\d"), ("prose", "output")),
]
SNAKE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)+$")


class _Visible(HTMLParser):
    """Collects visible text as blocks tagged 'prose', 'input' (code cell source) or
    'output' (cell outputs), and the text of every <th>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, str | None]] = []  # (tag, region it opened or None)
        self.skip = 0
        self.blocks: list[list] = []  # [region, text]
        self.headers: list[str] = []
        self._th: list[str] | None = None

    def _region(self) -> str:
        for _, r in reversed(self.stack):
            if r:
                return r
        return "prose"

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            return
        cls = " ".join(v or "" for k, v in attrs if k == "class").split()
        region = None
        if "cell_input" in cls:
            region = "input"
        elif "cell_output" in cls or "output" in cls:
            region = "output"
        elif tag in ("pre", "code") and self._region() == "prose":
            region = "example"  # a command or snippet written into the prose, not a computed value
        self.stack.append((tag, region))
        if tag in _SKIP:
            self.skip += 1
        if tag == "th":
            self._th = []
        if tag in ("p", "div", "li", "tr", "td", "th", "pre", "h1", "h2", "h3", "h4", "table", "br"):
            self._add(" ")

    def handle_endtag(self, tag):
        if tag in _VOID or not any(t == tag for t, _ in self.stack):
            return
        while self.stack:
            t, _ = self.stack.pop()
            if t in _SKIP:
                self.skip -= 1
            if t == "th" and self._th is not None:
                self.headers.append(" ".join("".join(self._th).split()))
                self._th = None
            if t == tag:
                break
        self._add(" ")

    def _add(self, text: str):
        if self.skip:
            return
        region = self._region()
        if self.blocks and self.blocks[-1][0] == region:
            self.blocks[-1][1] += text
        else:
            self.blocks.append([region, text])

    def handle_data(self, data):
        if self.skip:
            return
        if self._th is not None:
            self._th.append(data)
        self._add(data)


def _excerpt(text: str, start: int, end: int, width: int = 40) -> str:
    return " ".join(text[max(0, start - width):end + width].split())


def scan_page(html: str, page: str = "") -> pd.DataFrame:
    """The findings on one page's HTML: columns page, problem, excerpt."""
    p = _Visible()
    p.feed(html)
    p.close()
    rows = []
    for region, text in p.blocks:
        for problem, rx, where in CHECKS:
            if region in where:
                rows += [(page, problem, _excerpt(text, m.start(), m.end())) for m in rx.finditer(text)]
    rows += [(page, "raw header", h) for h in p.headers if SNAKE.match(h)]
    return pd.DataFrame(rows, columns=["page", "problem", "excerpt"])


def pages(folder) -> list[Path]:
    """The book's own pages under ``folder`` (no _static, _sources, search or index pages)."""
    root = Path(folder)
    return sorted(f for f in root.rglob("*.html")
                  if not any(part.startswith("_") for part in f.relative_to(root).parts)
                  and f.name not in _SKIP_PAGES)


def scan_html(folder) -> pd.DataFrame:
    """Every finding in the built book under ``folder`` (the folder with index.html):
    one row per occurrence, columns page (path relative to the folder), problem, excerpt."""
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"scan_html: {root} is not a folder; pass the built book's html "
                                f"folder (the one holding index.html).")
    found = [scan_page(f.read_text(errors="replace"), str(f.relative_to(root))) for f in pages(root)]
    found = [f for f in found if not f.empty]
    if not found:
        return pd.DataFrame(columns=["page", "problem", "excerpt"])
    return pd.concat(found, ignore_index=True)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m metacog.pages.hygiene BUILT_HTML_FOLDER", file=sys.stderr)
        return 2
    try:
        found = scan_html(args[0])
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    if found.empty:
        print("no problems found")
        return 0
    print(found.groupby(["page", "problem"]).size().rename("count").reset_index().to_string(index=False))
    print()
    print(found.to_string(index=False, max_colwidth=100))
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
