"""The whole book on ONE response file whose every name is hostile (issue #39).

Models, benchmarks, domains, item ids and reasoning texts carry markup, quotes, format characters,
path pieces, newlines, right-to-left marks, 1,000 characters, TeX between dollars, and names that
differ only in case or in Unicode normalisation. ``metacog book --source FILE --out OUT`` is run
once (module fixture), beside ``metacog chapter lab --source FILE`` (the one chapter that takes a
source but is not part of a book on files). Every built HTML page is then read with an HTML parser:
no element or attribute came from the data, each name is shown as written, and nothing was written
outside the two output folders.

The loader keeps names exactly as written: 'Model-A' and 'model-a', or 'café' composed and
decomposed, are different models of the file, and the book shows each as its own row.
"""

import os
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog.power.examples import example_responses
from test_hostile_inputs import HOSTILE
from test_sourcebook import policy_responses

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CASE = ["Model-A", "model-a"]  # the same name but for case
NFC, NFD = "caf\u00e9", "cafe\u0301"  # the same name, composed and decomposed
MATH = ["$\\left($", "cost $5 or $x^2$"]  # TeX between dollars: math in Markdown and in matplotlib
NAMES = HOSTILE + CASE + [NFC, NFD] + MATH
#: Five thinking runs beside their twins, so the shortcut chapter is served too.
THINK = [HOSTILE[0], HOSTILE[1], HOSTILE[7], CASE[0], MATH[0]]
PANEL_MODELS = NAMES + [n + "-think" for n in THINK]
POLICY_MODELS = [HOSTILE[0], HOSTILE[1], CASE[1], NFD, MATH[1]]
BENCHMARKS = ["../../escape/../etc/passwd", "<b>bench</b>"]
DOMAINS = ["maths", "<i>dom</i>", HOSTILE[7]]
SERVED = ["audit", "findings", "miscalibration", "pairwise", "power", "rank_one", "reasoning_text", "shortcut"]
#: Pieces of the names that would show as an element of their own if a name became markup.
PIECES = {"em": {"bold", "under"}, "strong": {"bold", "under"}, "code": {"tick", "x"},
          "a": {"link"}, "b": {"bench"}, "i": {"dom"}}


def hostile_file() -> pd.DataFrame:
    """A panel of every name answering 120 items of one benchmark (model, item id, domain all
    hostile), and five of the names answering 120 yes/no items under C0, C1 and C2 with
    reasoning texts, under a second hostile benchmark."""
    d = example_responses(n_models=len(PANEL_MODELS), benchmarks=("algebra",), n_items=120, seed=3)
    d["model"] = d["model"].map(dict(zip(sorted(d["model"].unique()), PANEL_MODELS)))
    number = d["item_id"].str.rsplit("-", n=1).str[-1].astype(int)
    d["item_id"] = [f"{NAMES[i % len(NAMES)][:40]}#{i}" for i in number]
    d["benchmark"], d["domain"] = BENCHMARKS[0], [DOMAINS[i % 3] for i in number]
    d["subject"] = d["domain"]
    p = policy_responses(n_models=len(POLICY_MODELS), n_items=120, texts=True)
    p["model"] = p["model"].map({f"lab-model-{i}": n for i, n in enumerate(POLICY_MODELS)})
    p["item_id"] = [f"{NAMES[int(i.split('-')[1]) % len(NAMES)][:40]}~{i}" for i in p["item_id"]]
    p["benchmark"] = BENCHMARKS[1]
    p["domain"] = np.where(p["domain"] == "geography", DOMAINS[1], DOMAINS[2])
    p["reasoning_text"] = [f"{t} {NAMES[k % len(NAMES)]}" for k, t in enumerate(p["reasoning_text"])]
    return pd.concat([d, p], ignore_index=True)


def tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def metacog(cwd: Path, *args):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "METACOG_PROJECT_ROOT": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "metacog.cli", *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=cwd)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The file, the book on it and the lab chapter on it, run from three folders deep (so a
    name's '../..' would land inside the temporary folder), with its tree before and after."""
    top = tmp_path_factory.mktemp("hostile")
    src = top / "in" / "hostile.csv"
    src.parent.mkdir()
    hostile_file().to_csv(src, index=False)
    cwd = top / "a" / "b" / "c"
    cwd.mkdir(parents=True)
    before, outside = tree(top), {p: os.path.exists(p) for p in ("/tmp/absolute", "/etc/passwd")}
    t0 = time.time()
    book = metacog(cwd, "book", "--source", src, "--out", top / "out", "--jobs", "2")
    lab = metacog(cwd, "chapter", "lab", "--source", src, "--out", top / "lab")
    print(f"book and lab chapter on the hostile file: {time.time() - t0:.0f} s")
    return top, before, tree(top), outside, book, lab


def pages(top: Path) -> list[Path]:
    found = [*(top / "out" / "html").glob("*.html"), *(top / "out" / "html" / "notebooks").glob("*.html"),
             *(top / "lab" / "html").glob("*.html")]
    return sorted(p for p in found if p.name not in ("genindex.html", "search.html"))


class Page(HTMLParser):
    """Start tags with their attributes, the text outside scripts and styles, the text inside
    scripts, and the text of every inline element (em, strong, code, a, b, i, math)."""

    INLINE = {"em", "strong", "code", "a", "b", "i", "span"}

    def __init__(self, html: str):
        super().__init__()
        self.starts, self.text, self.script, self.inline, self.open = [], [], [], [], []
        self.raw = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.starts.append((tag, dict(attrs)))
        self.raw = tag if tag in ("script", "style") else None
        if tag in self.INLINE:
            self.open.append([tag, dict(attrs), []])

    def handle_endtag(self, tag):
        self.raw = None
        for k in range(len(self.open) - 1, -1, -1):
            if self.open[k][0] == tag:
                name, attrs, parts = self.open.pop(k)
                self.inline.append((name, attrs, "".join(parts)))
                break

    def handle_data(self, data):
        if self.raw == "script":
            self.script.append(data)
        elif self.raw is None:
            self.text.append(data)
            for frame in self.open:
                frame[2].append(data)


def test_the_book_serves_every_chapter_the_file_allows_and_exits_0(built):
    top, _, _, _, book, lab = built
    assert book.returncode == 0, book.stderr[-3000:]
    assert lab.returncode == 0, lab.stderr[-3000:]
    executed = sorted(p.stem for p in (top / "out" / "src" / "notebooks").glob("*.ipynb"))
    assert executed == SERVED  # all eight pages that take a response file
    assert Path(book.stdout.strip()) == top / "out" / "html" / "index.html"
    assert (top / "lab" / "html" / "lab.html").exists()


def test_no_page_has_an_element_or_attribute_from_the_data(built):
    top = built[0]
    checked = pages(top)
    assert len(checked) == 1 + len(SERVED) + 1 + 2  # index, chapters, references; the lab page and its index
    bad = {}
    for path in checked:
        page = Page(path.read_text(encoding="utf-8"))
        where = str(path.relative_to(top))
        found = [t for t, _ in page.starts if t == "b"]  # the theme writes none: every one is data
        found += [f"<i> without a class: {a}" for t, a in page.starts if t == "i" and not a.get("class")]
        found += [f"<img src={a.get('src')!r}>" for t, a in page.starts
                  if t == "img" and not str(a.get("src", "")).endswith(".png")]
        found += [f"attribute {v[:80]!r}" for _, a in page.starts for v in a.values()
                  if v and any(w in v.lower() for w in ("alert", "onerror", "javascript:"))]
        found += [f"script {s[:80]!r}" for s in page.script if "alert" in s]
        found += [f"<{t}>{text}</{t}>" for t, _, text in page.inline if text.strip() in PIECES.get(t, ())]
        found += [f"math {text[:60]!r}" for t, a, text in page.inline
                  if t == "span" and "math" in a.get("class", "") and any(m in text for m in ("x^2", "left(", "5 or"))]
        if found:
            bad[where] = found
    assert bad == {}


def test_every_name_is_shown_as_written_where_models_are_listed(built):
    """Each name of the panel on the pairwise page (its per-model table lists every model), each
    name of the policy answers on the miscalibration page (which names a model by its last
    '/'-part, as an axis does: :func:`short_model`); the benchmarks and domains somewhere.
    'Model-A' and 'model-a', composed and decomposed 'café', are each their own row."""
    from metacog.hypotheses.common import short_model

    top = built[0]
    text = {p.name: "".join(Page(p.read_text(encoding="utf-8")).text) for p in pages(top)}
    missing = {"pairwise": [n for n in PANEL_MODELS if n not in text["pairwise.html"]],
               "miscalibration": [n for n in POLICY_MODELS if short_model(n) not in text["miscalibration.html"]],
               "anywhere": [n for n in BENCHMARKS + DOMAINS if not any(n in t for t in text.values())]}
    assert missing == {"pairwise": [], "miscalibration": [], "anywhere": []}
    assert "hostile.csv" in text["index.html"] and "hostile.csv" in text["lab.html"]


def test_nothing_is_written_outside_the_output_folders(built):
    top, before, after, outside, *_ = built
    new = sorted(p for p in after - before if not p.startswith(("out", "lab")))
    assert new == []
    assert sorted(before - after) == []  # the file and the folders are left as they were
    assert {p: os.path.exists(p) for p in outside} == outside
    assert not list(ROOT.glob("**/escape")) and not (ROOT / "etc").exists()
    for folder in ("out", "lab"):  # inside: no folder named after a piece of a name
        assert not [p for p in (top / folder).rglob("*") if p.name in ("escape", "etc", "passwd", "absolute")]


def test_every_figure_has_alt_text_in_words(built):
    """A reader on a screen reader hears what each figure shows, not a file name: every image of
    the built chapters has alt text of several words, none of them ending in an image suffix."""
    top = built[0]
    images = []
    for path in pages(top):
        page = Page(path.read_text(encoding="utf-8"))
        images += [(path.name, a.get("alt", "")) for t, a in page.starts
                   if t == "img" and str(a.get("src", "")).endswith(".png")]
    assert images, "the built chapters draw figures"
    bad = [(p, alt) for p, alt in images
           if len(alt.split()) < 6 or alt.strip().lower().endswith((".png", ".svg", ".jpg"))]
    assert bad == []
