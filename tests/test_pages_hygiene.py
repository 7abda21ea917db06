"""scan_html finds each problem in small synthetic book pages, and passes a clean one."""

import pytest

from metacog.pages.hygiene import main, scan_html, scan_page

PAGE = """<!DOCTYPE html><html><head><title>nan page /work/x</title>
<script>var x = NaN; console.log("Warning: /tmp/");</script><style>.nan{{}}</style></head>
<body><div class="bd-article"><h1>Chapter</h1>
{body}
</div></body></html>"""


def cell(source: str, output: str = "") -> str:
    out = (f'<div class="cell_output docutils container"><div class="output stream highlight-myst-ansi">'
           f'<div class="highlight"><pre><span></span>{output}</pre></div></div></div>') if output else ""
    return (f'<div class="cell docutils container"><div class="cell_input docutils container">'
            f'<div class="highlight-ipython3"><div class="highlight"><pre>{source}</pre></div></div></div>'
            f'{out}</div>')


CLEAN = PAGE.format(body=(
    "<p>Accuracy was 0.44 (95% CI 0.40 to 0.48), p = 0.042, and p &lt; 0.001 for the rest. "
    "Scores ran 0.40–0.48; 2 of the 3 models (A and B) passed; the gap is 0.035 below zero; "
    "a 1 to 1 mapping; the financial year 2023–2024. Nancy and nano are words.</p>"
    + cell("import warnings\nwarnings.filterwarnings('ignore', category=UserWarning)\nx = np.nan",
           "mean 0.512")
    + "<table><thead><tr><th>share Yes</th><th>AUROC of P(Yes)</th><th>model</th></tr></thead>"
      "<tbody><tr><td>0.512</td><td>0.61</td><td>qwen</td></tr></tbody></table>"))


def write(tmp_path, name, body):
    f = tmp_path / name
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(PAGE.format(body=body) if not body.startswith("<!DOCTYPE") else body)
    return f


def test_a_clean_page_passes(tmp_path):
    found = scan_page(CLEAN, "clean.html")
    assert found.empty, found.to_string()
    write(tmp_path, "clean.html", CLEAN)
    assert scan_html(tmp_path).empty


@pytest.mark.parametrize("body, problem, excerpt", [
    ("<p>The AUROC was nan for SmolLM2.</p>", "nan", "AUROC was nan"),
    ("<table><tr><td>NaN</td></tr></table>", "nan", "NaN"),
    (cell("df", "model  auroc\nsmol   &lt;NA&gt;"), "nan", "<NA>"),
    (cell("f()", "/x.py:3: RuntimeWarning: invalid value"), "warning", "RuntimeWarning"),
    ("<p>Warning: only two positives.</p>", "warning", "Warning:"),
    (cell("f()", "DeprecationWarning: use g"), "warning", "DeprecationWarning"),
    (cell("f()", "Traceback (most recent call last):\n  File x"), "traceback", "Traceback"),
    (cell("f()", "something\nValueError: bad input"), "traceback", "ValueError: bad input"),
    (cell("pd.read_parquet('/work/main/data/x.parquet')"), "machine path", "/work/main"),
    ("<p>loaded from /home/ann/data</p>", "machine path", "/home/ann"),
    (cell("f()", "/usr/lib/python3/site-packages/pandas/core.py"), "machine path", "site-packages"),
    (cell("f()", "see .venv/bin/python"), "machine path", ".venv"),
    ("<table><thead><tr><th>share_yes</th><th>model</th></tr></thead></table>", "raw header", "share_yes"),
    ("<table><tr><th> auroc_p_yes </th></tr></table>", "raw header", "auroc_p_yes"),
    ("<p>The test gave p = &lt; 0.001 overall.</p>", "template glitch", "p = < 0.001"),
    ("<p>Accuracy ranged 0.44–0.44 across models.</p>", "template glitch", "0.44–0.44"),
    ("<p>Between 37%–37% of judgments.</p>", "template glitch", "37%–37%"),
    ("<p>from 0.44 to 0.44 overall</p>", "template glitch", "0.44 to 0.44"),
    ("<p>Over 0 such judgments were made.</p>", "template glitch", "Over 0 such"),
    ("<p>confidence exceeds accuracy by -0.035 on average</p>", "template glitch", "by -0.035"),
    ("<p>confidence exceeds accuracy by \u22120.035 on average</p>", "template glitch", "by \u22120.035"),
])
def test_each_problem_is_found_with_an_excerpt(tmp_path, body, problem, excerpt):
    write(tmp_path, "notebooks/ch.html", body)
    found = scan_html(tmp_path)
    assert len(found) == 1, found.to_string()
    row = found.iloc[0]
    assert row["page"] == "notebooks/ch.html" and row["problem"] == problem
    assert excerpt in row["excerpt"]


def test_scripts_styles_head_and_sphinx_pages_are_not_scanned(tmp_path):
    write(tmp_path, "index.html", CLEAN)  # its head and script hold nan, /work/ and Warning:
    write(tmp_path, "_static/x.html", "<p>nan</p>")
    write(tmp_path, "_sources/x.html", "<p>nan</p>")
    write(tmp_path, "search.html", "<p>nan</p>")
    write(tmp_path, "genindex.html", "<p>nan</p>")
    assert scan_html(tmp_path).empty


def test_every_occurrence_on_every_page_is_listed(tmp_path):
    write(tmp_path, "a.html", "<p>nan and NaN</p>")
    write(tmp_path, "b.html", "<p>Over 0 items</p><table><tr><th>mean_tau</th></tr></table>")
    found = scan_html(tmp_path)
    assert sorted(map(tuple, found[["page", "problem"]].to_numpy())) == [
        ("a.html", "nan"), ("a.html", "nan"), ("b.html", "raw header"), ("b.html", "template glitch")]


def test_main_prints_findings_and_fails(tmp_path, capsys):
    write(tmp_path, "a.html", "<p>nan</p>")
    assert main([str(tmp_path)]) == 1
    assert "a.html" in capsys.readouterr().out
    write(tmp_path, "a.html", CLEAN)
    assert main([str(tmp_path)]) == 0
    assert main([str(tmp_path / "missing")]) == 2


def test_pretty_tables_pass_where_raw_dataframes_fail():
    import numpy as np
    import pandas as pd

    from metacog.tidy.report import pretty

    df = pd.DataFrame({"share_yes": [0.5, np.nan], "n_items": [1000.0, 132.0]})
    raw = scan_page(PAGE.format(body=df.to_html()))
    assert set(raw["problem"]) == {"raw header", "nan"}
    assert scan_page(PAGE.format(body=pretty(df)._repr_html_())).empty


def test_commands_written_into_prose_are_examples_not_findings():
    from metacog.pages.hygiene import scan_page

    page = ('<div class="highlight-bash"><pre>.venv/bin/metacog chapter x --out /tmp/out</pre></div>'
            '<p>Run <code>.venv/bin/metacog book</code>.</p>'
            '<div class="cell_output"><pre>/work/main/data</pre></div>')
    found = scan_page(page, "p")
    assert list(found["problem"]) == ["machine path"]  # only the computed output
    assert "/work/main" in found["excerpt"].iloc[0]


@pytest.mark.parametrize("body, problem, excerpt", [
    ("<p>Probe(s) ['stated_certainty'] are kept as given.</p>", "repr", "['stated_certainty']"),
    (cell("f()", "0    a\nName: model, dtype: object"), "repr", "dtype: object"),
    (cell("f()", "&lt;metacog.Panel object at 0x7f3a2c&gt;"), "repr", "object at 0x7f3a2c"),
    (cell("f()", "`quoted` then a printed array([0.5, 0.25])"), "repr", "array(["),
    ("<p>the margin is -0.25000000000000017 at the fixed point</p>", "float noise", "-0.25000000000000017"),
    ("<table><thead><tr><th>claim</th><th>status</th></tr></thead><tbody></tbody></table>",
     "empty table", "no rows"),
    ("<table><thead><tr><th></th><th>model</th></tr></thead><tbody><tr><th>0</th><td>a</td></tr>"
     "<tr><th>1</th><td>b</td></tr></tbody></table>", "bare index", "rows headed 0, 1"),
])
def test_strict_checks_find_what_a_new_file_shows(tmp_path, body, problem, excerpt):
    write(tmp_path, "ch.html", body)
    assert scan_html(tmp_path).empty  # not part of the default scan of the book
    found = scan_html(tmp_path, strict=True)
    assert list(found["problem"]) == [problem], found.to_string()
    assert excerpt in found["excerpt"].iloc[0]


def test_strict_checks_pass_what_the_book_legitimately_shows(tmp_path):
    write(tmp_path, "ch.html", CLEAN + PAGE.format(body=(
        '<p>choices: ["Yes", "No"] in the policy file; confidence in [0, 1]; p = 0.0417.</p>'
        + cell("f()", "statistic 0.1234567")
        + cell("f()", "the step says: lattice vectors `recvec = np.array([[1, 0, 0], [0, 1, 0]])` here")
        + "<table><thead><tr><th>model</th></tr></thead><tbody><tr><td>a</td></tr></tbody></table>")))
    assert scan_html(tmp_path, strict=True).empty


def test_an_image_without_coloured_marks_is_an_empty_figure(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    images = tmp_path / "_images"
    images.mkdir()
    fig, ax = plt.subplots()
    ax.axvline(0, color="grey")
    ax.set(title="nothing drawn", xlabel="x")
    fig.savefig(images / "empty.png")
    fig, ax = plt.subplots()
    ax.scatter([1, 2, 3], [2, 1, 3])
    fig.savefig(images / "full.png")
    plt.close("all")
    write(tmp_path, "ch.html", '<img src="_images/empty.png"/><img src="_images/full.png"/>')
    found = scan_html(tmp_path, strict=True)
    assert list(found["problem"]) == ["empty figure"] and "empty.png" in found["excerpt"].iloc[0]


@pytest.mark.parametrize("text, flagged", [
    ("Atlas, Battery and the MMLU-Pro study judge an answer already given.", True),
    ("It is true in all three sources.", True),
    ("the 84-model panel stays fast", True),
    ("By default Atlas and Battery are read.", False),  # a parameter's default says so
    ("Paper 1 reports 0.731 on SQuAD.", False),  # paper 1's own benchmark
    ("We labelled 40 texts of the local panel (MATH, SciCode).", False),  # the book's own data
    ("On my_panel.csv the 14-model panel is rank one.", False),  # the run's own count
])
def test_sentences_naming_sources_the_run_was_not_given(text, flagged):
    found = scan_page(PAGE.format(body=f"<p>{text}</p>"), "p", sources=["my_panel.csv"], model_counts=[14])
    assert (not found.empty) == flagged, found.to_string()
    assert set(found["problem"]) <= {"source not given"}
    if flagged:  # the same sentence is fine when the run has those sources
        given = ["atlas", "battery:keep_withdraw", "calibration_study:verbal_confidence"]
        assert scan_page(PAGE.format(body=f"<p>{text}</p>"), "p", sources=given,
                         model_counts=[84]).empty or "three" in text


def test_sections_can_be_left_out_and_references_never_name_a_missing_source():
    html = PAGE.format(body=(
        '<section id="main"><p>fine</p><section id="exercises"><p>In spar, how many</p>'
        '<section id="ex-1"><p>nan</p></section></section>'
        '<section id="references"><p>Atlas: a dataset.</p></section></section>'))
    assert set(scan_page(html, sources=["mine.csv"])["problem"]) == {"source not given", "nan"}
    assert scan_page(html, sources=["mine.csv"], skip_sections=["exercises"]).empty


def test_nan_spelled_in_shown_code_is_found_but_np_nan_is_not():
    shown = scan_page(PAGE.format(body=cell('held = reach.get(m) if ok else float("nan")')), "p")
    assert list(shown["problem"]) == ["nan"] and '"nan"' in shown["excerpt"].iloc[0]
    named = scan_page(PAGE.format(body=cell("x = np.nan if df.dropna().empty else np.nanmean(v)")), "p")
    assert named.empty, named.to_string()
