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
