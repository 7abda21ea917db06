"""Names from a response file never become markup on a page (issue #39): the report layer's one
escape (:func:`metacog.tidy.report.escape_text`, and the styled tables' HTML) checked with an HTML
parser, and the exit code of a command run outside the checkout."""

import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from metacog.tidy.report import escape_text, pretty

ROOT = Path(__file__).resolve().parents[1]

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(2)">',
    "\"quoted\" 'single' `tick` {glue:text}`x` {} %s %(x)d",
    "../../escape/../etc/passwd",
    "/tmp/absolute/path",
    "line one\nline two",
    "\u202eevil\u200fname",
    "*bold* _under_ [link](javascript:alert(3)) | pipe & amp",
    "L" * 1000,
]


class _Tags(HTMLParser):
    """Every start tag and attribute value of a page."""

    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(v or "" for _, v in attrs)

    def handle_data(self, data):
        self.text.append(data)


def _parse(html):
    p = _Tags()
    p.feed(html)
    return p


def test_a_styled_table_of_hostile_names_has_no_element_from_the_data():
    table = pretty(pd.DataFrame({"model": HOSTILE, "<b>head</b>": range(len(HOSTILE))}))
    page = _parse(table._repr_html_())
    assert set(page.tags) <= {"style", "table", "thead", "tbody", "tr", "th", "td"}
    assert not any("alert" in a or "javascript" in a for a in page.attrs)
    text = "".join(page.text)
    for name in HOSTILE:  # each name comes back as text, whole (newlines included)
        assert name in text
    assert "<b>head</b>" in text


def test_escape_text_leaves_plain_names_and_defuses_markup():
    for plain in ("gpt-4o-mini", "Llama 3.1 70B", "claude-3.5-sonnet (2024-10-22)", "qwen2.5:7b"):
        assert escape_text(plain) == plain
    for name in HOSTILE:
        out = escape_text(name)
        assert "<" not in out and ">" not in out and "\n" not in out
        page = _parse(f"<p>{out}</p>")
        assert page.tags == ["p"]
    assert escape_text("a_b") == r"a\_b"  # Markdown renders it as a_b, never as emphasis
    assert escape_text("{glue:text}`x`") == r"\{glue:text\}\`x\`"  # no MyST role


def _cli(cwd, *args):
    env = {k: v for k, v in os.environ.items() if k != "METACOG_PROJECT_ROOT"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "metacog.cli", *args], capture_output=True,
                          text=True, env=env, cwd=cwd)


def test_chapter_and_book_outside_the_checkout_exit_2_with_one_line(tmp_path):
    src = tmp_path / "r.csv"
    src.write_text("model,item_id,probe,confidence,correct\nm,q,p,0.5,1\n")
    for args in (["chapter", "rank_one", "--source", str(src), "--out", str(tmp_path / "o")],
                 ["book", "--no-html"]):
        proc = _cli(tmp_path, *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "checkout" in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_place_page_of_a_hostile_model_name_has_no_element_from_it(mirror, tmp_path):
    """`metacog place --responses` on answers whose model is named with markup: the page's HTML
    parses with the name as text only (no tag, no attribute, no code span from it)."""
    from test_cli_errors import cli
    from test_place_cli import RandomMCQServer

    env = {"METACOG_DATA_MIRROR": str(mirror)}
    with RandomMCQServer() as srv:
        got = cli("place", "--model", "openai/fake", "--api-base", srv.base_url, "--n-items", "30",
                  "--seed", "3", "--out", str(tmp_path / "asked"), "--cache", str(tmp_path / "cache"),
                  "--no-html", "--no-progress", env=env)
    assert got.returncode == 0, got.stderr[-2000:]
    name = "<script>alert(1)</script>`x`{y} *b* <img src=x onerror=alert(2)>"
    answers = pd.read_parquet(tmp_path / "asked" / "responses.parquet").assign(model=name)
    answers.to_parquet(tmp_path / "hostile.parquet")
    out = tmp_path / "out"
    proc = cli("place", "--responses", str(tmp_path / "hostile.parquet"), "--n-items", "30", "--seed", "3",
               "--out", str(out), "--no-progress", env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    html = (out / "place.html").read_text()
    page = _parse(html)
    assert "script" not in page.tags and page.tags.count("img") == html.count("data:image/png")
    assert not any("alert" in a for a in page.attrs)
    text = "".join(page.text)
    assert "<script>alert(1)</script>`x`{y}" in text  # the name, shown as written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["asked", "cache", "hostile.parquet", "out"]


class _Scripts(_Tags):
    """Also the text inside script elements (the book's own scripts hold no data)."""

    def __init__(self):
        super().__init__()
        self.in_script, self.script_text = False, []

    def handle_starttag(self, tag, attrs):
        super().handle_starttag(tag, attrs)
        self.in_script = tag == "script"

    def handle_data(self, data):
        (self.script_text if self.in_script else self.text).append(data)

    def handle_endtag(self, tag):
        self.in_script = False


def test_rank_one_on_a_file_of_hostile_names_parses_with_every_name_as_text(tmp_path):
    """`metacog chapter rank_one --source FILE` where models, benchmarks and domains are named with
    markup, quotes, format characters, path pieces, newlines, right-to-left marks and 1,000
    characters: the page's HTML has no element or attribute from them, and nothing is written
    outside --out."""
    from metacog.power.examples import example_responses

    d = example_responses(n_models=len(HOSTILE), n_items=200, seed=3)
    d["model"] = d["model"].map(dict(zip(sorted(d["model"].unique()), HOSTILE)))
    d["benchmark"] = d["benchmark"].map({"algebra": "<b>bench</b>", "history": "his{}tory", "law": "law`x`"})
    d["domain"] = "<i>" + d["domain"] + "</i>"
    src = tmp_path / "in" / "hostile.csv"
    src.parent.mkdir()
    d.to_csv(src, index=False)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "metacog.cli", "chapter", "rank_one", "--source", str(src),
                           "--out", str(out)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "METACOG_PROJECT_ROOT": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = _Scripts()
    page.feed((out / "html" / "rank_one.html").read_text())
    assert "b" not in page.tags  # <b>bench</b> and <i>...</i> stay text
    assert not any("alert" in a or "onerror" in a for a in page.attrs)
    assert not any("alert" in s for s in page.script_text)
    text = "".join(page.text)
    assert "<script>alert(1)</script>" in text and "<b>bench</b>" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]  # no path piece wrote elsewhere
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == ["hostile.csv"]


def test_place_against_a_server_answering_200_with_no_choices_exits_2_in_one_line(mirror, tmp_path):
    """A server that answers every call with HTTP 200 and an empty ``choices`` list: no page on
    nothing, one line naming what failed, exit 2."""
    from fakeserver import FakeServer
    from test_cli_errors import cli, one_line_exit_2

    class NoChoices(FakeServer):
        async def _complete(self, req, auth=""):
            return 200, {"id": "x", "object": "chat.completion", "choices": [], "usage": {}}

    with NoChoices() as srv:
        proc = cli("place", "--model", "openai/fake", "--api-base", srv.base_url, "--n-items", "4",
                   "--seed", "3", "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"),
                   "--no-html", "--no-progress", env={"METACOG_DATA_MIRROR": str(mirror)})
    one_line_exit_2(proc, "4", "nothing was lost", "rerun")
    assert not (tmp_path / "out" / "place.ipynb").exists()


@pytest.mark.parametrize("args", [
    ["book", "--only", "no_such_page"],
    ["check", "--manifest-typo"],
    ["data", "--verify", "no_such_data"],
    ["chapter", "no_such_chapter", "--source", "x.csv", "--out", "OUT"],
    ["example-data", "--out", "OUT/x.unknown"],
    ["place", "--model", "gpt-4o", "--api-base", "http://127.0.0.1:9/v1"],
    ["elicit", "--no-such-flag"],
    ["replicate", "--models", "openai/one", "--api-base", "http://127.0.0.1:9/v1", "--plan"],
    ["collect", "no_such_run"],
    ["probe"],
])
def test_every_subcommand_exits_2_on_a_usage_error_without_a_traceback(tmp_path, args):
    from test_cli_errors import cli

    proc = cli(*[a.replace("OUT", str(tmp_path / "out")) for a in args])
    assert proc.returncode == 2, (args, proc.returncode, proc.stderr[-1500:])
    assert "Traceback" not in proc.stderr and proc.stderr.strip()
    assert proc.stderr.strip().splitlines()[-1].startswith("metacog")  # the one line naming the command


# The Markdown a page helper builds from names (issue #39): rendered as MyST renders it (raw HTML
# on, math between dollars), no element or attribute comes from a name.
MATH_NAMES = ["$\\left($", "cost $5 or $x^2$"]


def _render(markdown: str):
    """``markdown`` rendered to HTML as CommonMark with raw HTML allowed and dollar math (what
    MyST does with a Markdown output), a notice's ```{warning} fence taken off (MyST reads a
    directive's body as Markdown), and parsed."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    lines = markdown.strip().splitlines()
    if lines and lines[0].startswith("```{"):
        lines = lines[1:-1]
    page = _parse(MarkdownIt("commonmark").enable("table").use(dollarmath_plugin).render("\n".join(lines)))
    page.text = "".join(page.text)
    return page


def _no_element_from(page):
    assert set(page.tags) <= {"p", "strong", "em", "ul", "li"}, page.tags
    assert "eq" not in "".join(page.attrs) and "math" not in "".join(page.attrs)  # no $...$ read as math
    assert not any("alert" in a or "javascript" in a for a in page.attrs)


def test_report_markdown_keeps_the_template_markup_and_shows_each_name_as_written():
    from metacog.tidy.report import markdown

    for name in HOSTILE + MATH_NAMES:
        page = _render(markdown("**{}** (judged {}; {})", name, "before answering", name).data)
        _no_element_from(page)
        assert page.tags.count("strong") == 1  # the template's own bold stays
        shown = " ".join(name.splitlines())
        assert page.text.count(shown) == 2, (name, page.text)
        plain = _render(markdown(f"No answers from {name} under C0.").data)
        _no_element_from(plain)
        assert plain.tags == ["p"] and f"No answers from {shown} under C0." in plain.text


def test_power_block_notes_escape_the_panels_names():
    from metacog.hypotheses.power import display as hv

    rows = pd.DataFrame({"panel": HOSTILE + MATH_NAMES, "note": "", "models": 5, "items": 90,
                         "models_total": 5, "items_total": 120, "models_dropped": 0})
    rows.loc[0, "note"] = "no complete block <b>of</b> three"
    page = _render(hv.block_notes(rows))
    _no_element_from(page)
    for name in HOSTILE[1:] + MATH_NAMES:
        assert " ".join(name.splitlines()) in page.text
    assert "no complete block <b>of</b> three" in page.text


def test_shortcut_bullets_escape_every_sentence():
    from metacog.hypotheses.shortcut import display as sd

    page = _render(sd.bullets([f"{n}: no reasoning judge" for n in HOSTILE + MATH_NAMES]).data)
    _no_element_from(page)
    assert page.tags.count("li") == len(HOSTILE + MATH_NAMES)
    assert "<script>alert(1)</script>: no reasoning judge" in page.text


def test_the_notices_listing_models_escape_their_names():
    """The audit page's, the benchmark pages' and the reasoning-text page's notice when no model
    passes the gate list each model (by its last '/'-part) and why: as text."""
    from metacog.hypotheses import reasoning_text as hrt
    from metacog.hypotheses.common import short_model
    from metacog.pages import audit as ap
    from metacog.pages import benchmark as bp

    names = [n for n in HOSTILE + MATH_NAMES if "/" not in n]
    gate = pd.DataFrame({"model": names, "carries_signal": False, "policy": "C0",
                         "failures": "3 correct of 40, below the minimum of 10"})
    res = hrt.TextProbeComparison(table=pd.DataFrame(), models={"f.csv:<b>c2</b>": ([], names)},
                                  skipped={"f.csv:[x](javascript:alert(3))": "no `texts` *here*"}, coef={},
                                  rows={}, ungated={}, gates={"f.csv:<b>c2</b>": gate})
    for notice in (ap.no_signal_notice(gate), bp.no_signal_notice(gate), hrt.no_model_notice(res)):
        page = _render(notice)
        _no_element_from(page)
        for name in names:
            assert short_model(name).replace("\n", " ") in page.text
    assert "f.csv:<b>c2</b>: " in page.text and "no `texts` *here*" in page.text


def test_figure_style_draws_a_name_with_dollars_as_written(tmp_path):
    """A model named with TeX between dollars, on an axis or in a title, is drawn as written
    (without :func:`figure_style` an unbalanced '$\\left($' stops the figure being drawn)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from metacog.tidy.report import figure_style

    figure_style()
    fig, ax = plt.subplots()
    ax.set_xticks([0, 1], MATH_NAMES)
    ax.set_title(f"{MATH_NAMES[0]}: tetrachoric correlations")
    fig.savefig(tmp_path / "f.png")
    assert [t.get_text() for t in ax.get_xticklabels()] == MATH_NAMES
    assert not any(t._preprocess_math(t.get_text())[1] for t in [ax.title, *ax.get_xticklabels()])
    plt.close(fig)


def test_the_source_books_index_escapes_file_names_and_reasons():
    """The index of ``metacog book --source``: a file named with markup, and a reason naming a
    panel of the file (a benchmark named with markup and a pipe), stay text in one table cell."""
    from metacog.sourcebook import SourceBook, _index_page

    made = SourceBook(["<b>f</b>.csv"], not_served={"power": "cannot be matched to f · <b>bench</b> | x · c0"},
                      titles={"power": "What a null result can rule out"})
    page = _render(_index_page(made, []))
    assert "b" not in page.tags and page.tags.count("td") == 2  # one row of two cells
    assert "The book on <b>f</b>.csv" in page.text and "f · <b>bench</b> | x · c0" in page.text


def test_a_verdict_shown_as_markdown_keeps_a_hostile_model_name_as_text():
    from markdown_it import MarkdownIt

    from metacog.hypotheses.verdict import decide

    name = "<img src=x onerror=alert(1)> *m* $x$"
    v = decide(f"{name}: the judgment ranks its own success above chance", f"AUROC of {name}",
               0.6, 0.55, 0.65, line=0.5, direction="greater", n={"items": 40})
    page = _parse(MarkdownIt("commonmark", {"html": True}).render(v._repr_markdown_()))
    assert "img" not in page.tags and not any("alert" in a for a in page.attrs)
    assert name in "".join(page.text)  # shown as written
