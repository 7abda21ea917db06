"""Page hygiene: find what a reader should never see in the rendered book.

:func:`scan_html` reads every page of a built book (skipping Sphinx's own ``_static``,
``_sources``, search and index pages) and reports, from the *visible text* (no scripts,
styles or head), one row per finding with the page, the problem and an excerpt:

- ``nan`` — "NaN", "nan" or "<NA>" shown as a value (prose, cell outputs and the code shown on
  a page, where ``np.nan`` reads as a name and is left alone);
- ``warning`` — "Warning:", RuntimeWarning, UserWarning, DeprecationWarning, FutureWarning;
- ``traceback`` — "Traceback (most recent call last)", or "...Error:" at the start of a line
  of a cell's output;
- ``machine path`` — /work/, /home/, /tmp/, /root/, site-packages, .venv (code cells too);
- ``raw header`` — a table header cell that is a bare snake_case name (``share_yes``);
- ``template glitch`` — "p = <", a range whose ends are equal ("0.44–0.44", "37%–37%",
  "0.44 to 0.44"), "Over 0 ", "by -0." (a negative excess).

With ``strict=True`` (:data:`STRICT_CHECKS`; the chapter-shape tests use it on chapters run on
generated files) it also reports:

- ``repr`` — a Python list, array, Series or object repr shown as text (``['a', 'b']``,
  ``dtype: int64``, ``Index([``, ``<... object at 0x...>``);
- ``float noise`` — a number with ten or more decimals (``-0.25000000000000017``);
- ``bare index`` — a table whose rows are headed 0, 1, 2, ... (a DataFrame's default index);
- ``empty table`` — a table with a header and no rows;
- ``empty figure`` — a figure image with no coloured mark at all (axes and text only), found by
  :func:`figure_is_empty` in :func:`scan_html`, which can open the images.

With ``sources`` (the run's sources), :func:`scan_page` also reports ``source not given``: a
sentence that names a public source (:data:`SOURCE_NAMES`: Atlas, Battery, spar, the MMLU-Pro
calibration study, SQuAD, LegalBench, ...) the run was not given, or a model count ("84-model")
no source of the run has. Sentences that describe a parameter's default ("by default ...") or
paper 1's own rows, and the page's references, are not checked.

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

import numpy as np
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
    ("nan", re.compile(r"(?<![\w.\-])(?:NaN|nan)(?![\w(])|<NA>"), ("prose", "output", "input")),
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

_QUOTED = r"'[^'\n]{0,80}'"  # Python's repr quotes strings with ' (JSON and YAML lists use ")
#: Checks for pages run on data the book was not written against (``strict=True``).
STRICT_CHECKS: list[tuple[str, re.Pattern, tuple[str, ...]]] = [
    ("repr", re.compile(rf"\[{_QUOTED}(?:,\s*{_QUOTED})*\]"), ("prose", "output")),
    ("repr", re.compile(r"\bdtype: \w+|\b(?:Index|array|MultiIndex)\(\[|<[\w.]+ object at 0x[0-9a-f]+>"),
     ("prose", "output")),
    ("float noise", re.compile(r"(?<![\w.])[\u2212\-]?\d+\.\d{10,}"), ("prose", "output")),
]

#: Public sources a sentence may name only when the run was given them: the name a page uses,
#: and the source strings (as passed to ``sources``, before any ':probe') that stand for it.
SOURCE_NAMES: dict[str, tuple[str, ...]] = {
    r"\bAtlas\b": ("atlas",),
    r"\bBattery\b": ("battery",),
    r"\bspar\b": ("spar",),
    r"\b(?:MMLU-Pro|LLM calibration|calibration) study\b": ("calibration_study",),
    r"\bSQuAD\b": ("squad",),
    r"\bLegalBench\b": ("legalbench",),
    r"\bOmni-MATH\b": ("omni",),
    r"\bSciCode\b": ("scicode",),
}
_COUNT_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
#: A sentence that says where its data come from when they are not the run's: a parameter's
#: default, or the book's own recorded data (the local panel).
_EXEMPT = re.compile(r"\bdefault|\bthe book's\b|\blocal panel\b", re.I)
_PAPER = re.compile(r"\bpaper [12]\b(?:[^.]|\.(?=\d)){0,110}$", re.I)  # "paper 1: SQuAD", paper 1's own benchmarks


def _quoted_code(text: str, at: int) -> bool:
    """Whether position ``at`` lies inside `inline code` quoted with backticks on its line (a
    prompt that shows code, such as a SciCode step, is quoting it, not printing a repr)."""
    line_start = text.rfind("\n", 0, at) + 1
    return text.count("`", line_start, at) % 2 == 1


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
        self.tables: list[dict] = []  # per table: body rows and the text of each row's leading <th>
        self._tables: list[dict] = []
        self.images: list[str] = []

    def _region(self) -> str:
        for _, r in reversed(self.stack):
            if r:
                return r
        return "prose"

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            src = dict(attrs).get("src") or ""
            if not self.skip and src:
                self.images.append(src)
        if tag in _VOID:
            return
        if tag == "table":
            self._tables.append({"rows": 0, "header_rows": 0, "row_heads": [], "in_body": False,
                                 "first": None})
        elif self._tables:
            t = self._tables[-1]
            if tag == "tbody":
                t["in_body"] = True
            elif tag == "thead":
                t["in_body"] = False
            elif tag == "tr":
                t["first"] = "pending"
                t["rows" if t["in_body"] else "header_rows"] += 1
            elif tag in ("td", "th") and t["first"] == "pending":
                t["first"] = tag
                if tag == "th" and t["in_body"]:
                    t["row_heads"].append(None)  # filled with its text at </th>
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
                text = " ".join("".join(self._th).split())
                self.headers.append(text)
                self._th = None
                if self._tables and self._tables[-1]["row_heads"] and self._tables[-1]["row_heads"][-1] is None:
                    self._tables[-1]["row_heads"][-1] = text
            if t == "table" and self._tables:
                self.tables.append(self._tables.pop())
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


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` around ``start:end`` (a line break inside a paragraph is not an end)."""
    a = max(text.rfind(". ", 0, start), text.rfind("# ", 0, start)) + 1
    stops = [i for i in (text.find(". ", end), text.find("# ", end)) if i >= 0]
    return text[a:min(stops) if stops else len(text)]


def without_sections(html: str, ids=("references",)) -> str:
    """``html`` with each ``<section id=...>`` of ``ids`` cut out, nested sections and all (the
    references name the datasets they cite; a chapter's exercises may be scanned apart)."""
    for sid in ids:
        m = re.search(rf'<section\b[^>]*\bid="{re.escape(sid)}"', html)
        if not m:
            continue
        depth, pos = 0, len(html)
        for t in re.finditer(r"<section\b|</section>", html[m.start():]):
            depth += 1 if t.group(0) != "</section>" else -1
            if depth == 0:
                pos = m.start() + t.end()
                break
        html = html[:m.start()] + html[pos:]
    return html


def source_findings(text: str, sources, model_counts=()) -> list[tuple[str, str]]:
    """(problem, excerpt) for every sentence of ``text`` that names a source of
    :data:`SOURCE_NAMES` not among ``sources``, counts the run's sources wrongly ("all three
    sources"), or gives a model count ("84-model") not in ``model_counts`` (when given)."""
    given = {str(x).split(":", 1)[0].strip().lower() for x in sources}
    out = []
    for pattern, names in SOURCE_NAMES.items():
        if given & set(names):
            continue
        for m in re.finditer(pattern, text):
            if not (_EXEMPT.search(_sentence(text, m.start(), m.end()))
                    or _PAPER.search(text[max(0, m.start() - 120):m.start()])):
                out.append(("source not given", _excerpt(text, m.start(), m.end())))
    for m in re.finditer(r"\ball (two|three|four|five|six|seven|eight|\d+) sources\b", text):
        word = m.group(1)
        n = int(word) if word.isdigit() else _COUNT_WORDS[word]
        if n != len(given) and not _EXEMPT.search(_sentence(text, m.start(), m.end())):
            out.append(("source not given", _excerpt(text, m.start(), m.end())))
    if model_counts:
        for m in re.finditer(r"\b(\d+)-model\b", text):
            if int(m.group(1)) not in set(model_counts) and not _EXEMPT.search(_sentence(text, m.start(), m.end())):
                out.append(("source not given", _excerpt(text, m.start(), m.end())))
    return out


def scan_page(html: str, page: str = "", *, strict: bool = False, sources=None,
              model_counts=(), skip_sections=()) -> pd.DataFrame:
    """The findings on one page's HTML: columns page, problem, excerpt. ``strict`` adds
    :data:`STRICT_CHECKS`, bare indexes and empty tables; ``sources`` (the run's sources) adds
    the ``source not given`` check (:func:`source_findings`), on the page without its
    references; ``skip_sections`` are section ids left out of every check."""
    html = without_sections(html, tuple(skip_sections) + (("references",) if sources is not None else ()))
    p = _Visible()
    p.feed(html)
    p.close()
    rows = []
    checks = CHECKS + (STRICT_CHECKS if strict else [])
    prose = []  # running prose with its inline code, so a sentence is read whole
    for region, text in p.blocks + [["end", ""]]:
        for problem, rx, where in checks:
            if region in where:
                rows += [(page, problem, _excerpt(text, m.start(), m.end())) for m in rx.finditer(text)
                         if not (problem == "repr" and _quoted_code(text, m.start()))]
        if sources is None:
            continue
        if region in ("prose", "example"):
            prose.append(text)
            continue
        if prose:
            rows += [(page, problem, ex) for problem, ex in source_findings("".join(prose), sources, model_counts)]
            prose = []
        if region == "output":
            rows += [(page, problem, ex) for problem, ex in source_findings(text, sources, model_counts)]
    rows += [(page, "raw header", h) for h in p.headers if SNAKE.match(h)]
    if strict:
        for t in p.tables:
            heads = t["row_heads"]
            if t["rows"] == 0 and t["header_rows"] > 0:
                rows.append((page, "empty table", "a table with a header and no rows"))
            elif len(heads) >= 2 and heads == [str(i) for i in range(len(heads))]:
                rows.append((page, "bare index", f"rows headed {', '.join(heads[:3])}, ..."))
    return pd.DataFrame(rows, columns=["page", "problem", "excerpt"])


def figure_is_empty(path) -> bool:
    """True when an image has no coloured mark: only white, greys and black (axes, ticks and
    text). Every figure of the book draws its data in colour (matplotlib's colour cycle, colour
    maps), so a figure without colour is one with no data drawn."""
    from PIL import Image

    with Image.open(path) as im:
        rgb = np.asarray(im.convert("RGB"), dtype=np.int16)
    spread = rgb.max(axis=2) - rgb.min(axis=2)
    return int((spread > 40).sum()) < 20


def page_images(html: str) -> list[str]:
    """The ``src`` of every visible image of a page."""
    p = _Visible()
    p.feed(html)
    p.close()
    return p.images


def pages(folder) -> list[Path]:
    """The book's own pages under ``folder`` (no _static, _sources, search or index pages)."""
    root = Path(folder)
    return sorted(f for f in root.rglob("*.html")
                  if not any(part.startswith("_") for part in f.relative_to(root).parts)
                  and f.name not in _SKIP_PAGES)


def _image_findings(html: str, page_file: Path, root: Path) -> list[tuple[str, str, str]]:
    out = []
    for src in page_images(html):
        if src.startswith(("data:", "http:", "https:")) or not src.lower().endswith(".png"):
            continue
        f = (page_file.parent / src).resolve()
        if f.is_file() and figure_is_empty(f):
            out.append((str(page_file.relative_to(root)), "empty figure", f"{src}: no data drawn"))
    return out


def scan_html(folder, *, strict: bool = False, sources=None, model_counts=(), skip_sections=()) -> pd.DataFrame:
    """Every finding in the built book under ``folder`` (the folder with index.html):
    one row per occurrence, columns page (path relative to the folder), problem, excerpt.
    ``strict``, ``sources``, ``model_counts`` and ``skip_sections`` as in :func:`scan_page`; ``strict`` also opens
    every PNG figure (:func:`figure_is_empty`)."""
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"scan_html: {root} is not a folder; pass the built book's html "
                                f"folder (the one holding index.html).")
    found = []
    for f in pages(root):
        html = f.read_text(errors="replace")
        found.append(scan_page(html, str(f.relative_to(root)), strict=strict, sources=sources,
                               model_counts=model_counts, skip_sections=skip_sections))
        if strict:
            found.append(pd.DataFrame(_image_findings(without_sections(html, tuple(skip_sections)), f, root),
                                      columns=["page", "problem", "excerpt"]))
    found = [f for f in found if not f.empty]
    if not found:
        return pd.DataFrame(columns=["page", "problem", "excerpt"])
    return pd.concat(found, ignore_index=True)


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m metacog.pages.hygiene")
    parser.add_argument("folder", help="the built html folder (the one holding index.html)")
    parser.add_argument("--strict", action="store_true",
                        help="also report reprs, float noise, bare indexes, empty tables and figures")
    parser.add_argument("--sources", help="the run's sources, comma-separated: report sentences "
                                          "naming any other public source")
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    sources = None if args.sources is None else [x for x in args.sources.split(",") if x.strip()]
    try:
        found = scan_html(args.folder, strict=args.strict, sources=sources)
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
