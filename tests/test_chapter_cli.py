"""`metacog chapter` (one chapter on your own responses) and `metacog example-data`."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from metacog import chapter

from metacog.tidy import tables
from metacog.cli import main
from metacog.stats import self_other_test
from metacog.power.examples import example_responses, write_responses

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "chapters" / "manifest.yml"


@pytest.fixture(scope="module")
def panel(tmp_path_factory):
    """A small simulated panel written as CSV: 7 models x 3 benchmarks x 15 items."""
    path = tmp_path_factory.mktemp("panel") / "my_panel.csv"
    write_responses(example_responses(n_models=7, n_items=15, seed=3), path)
    return path


@pytest.fixture(scope="module")
def rendered(panel, tmp_path_factory):
    """The fixture chapter run once on the panel, rendered to HTML (the file's one build)."""
    out = tmp_path_factory.mktemp("out")
    result = chapter.run("count_models", [str(panel)], out, cuts={str(panel): 0.7},
                         parameters={"label": "panel"}, manifest=FIXTURE)
    return result.page, out, result


def test_a_run_returns_its_glued_results(rendered):
    page, out, result = rendered
    assert result.notebook == out / "count_models.ipynb" and os.fspath(result) == str(page)
    summary = result.summary().set_index("name")
    assert summary.loc["n_models_text", "kind"] == "text"
    assert summary.loc["n_models_text", "value"] == "panel of 7 models"  # computed from the file
    assert summary.loc["cuts_text", "value"] == "cut 0.7"


def test_chapter_runs_on_a_file_and_renders_one_page(rendered):
    page, out, _ = rendered
    assert page == out / "html" / "count_models.html" and page.exists()
    html = page.read_text()
    assert "panel of 7 models" in html  # glued by the executed notebook from the file
    assert "cut 0.7" in html  # --cut reached the notebook's cuts parameter
    assert "Moran and Whiting" in html  # the citation resolved against references.bib
    assert "{glue:text}" not in html and "{cite:p}" not in html
    assert "The default sources are" not in html  # the cell about the book's own sources is left out
    assert "_static/mathjax" in html or "mathjax/tex-chtml.js" in html  # offline MathJax
    assert (out / "count_models.ipynb").exists()
    # the link to a chapter this one-page build lacks is a warning, not a failure
    assert chapter.warning_count(out / "jupyter-book.log") >= 1


def _cli(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "metacog.cli", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT)


def test_bad_source_exits_2_naming_the_column_without_traceback(panel, tmp_path):
    bad = tmp_path / "no_correct.csv"
    pd.read_csv(panel).drop(columns="correct").to_csv(bad, index=False)
    proc = _cli("chapter", "count_models", "--manifest", str(FIXTURE), "--source", str(bad),
                "--out", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stderr
    assert "correct" in proc.stderr and "no_correct.csv" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not (tmp_path / "out" / "count_models.ipynb").exists()  # stopped before executing


def test_unknown_parameter_exits_2_naming_it(panel, tmp_path, capsys):
    rc = main(["chapter", "count_models", "--manifest", str(FIXTURE), "--source", str(panel),
               "-p", "n_modles", "3", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "unknown parameter 'n_modles'" in err and "count_models.md" in err


def test_ill_typed_parameter_and_bad_cut_exit_2(panel, tmp_path, capsys):
    assert main(["chapter", "count_models", "--manifest", str(FIXTURE), "--source", str(panel),
                 "-p", "label", "[1, 2]", "--out", str(tmp_path)]) == 2
    assert "parameter 'label' should be like 'panel'" in capsys.readouterr().err
    assert main(["chapter", "count_models", "--manifest", str(FIXTURE), "--source", str(panel),
                 "--cut", f"{panel}=1.5", "--out", str(tmp_path)]) == 2
    assert "between 0 and 1" in capsys.readouterr().err


def test_chapter_without_sources_parameter_is_refused(panel, tmp_path, capsys):
    rc = main(["chapter", "plain", "--manifest", str(FIXTURE), "--source", str(panel), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "has no 'sources' parameter" in err and "count_models" in err


def test_unknown_chapter_exits_2_listing_the_pages(tmp_path, capsys):
    rc = main(["chapter", "rank_onee", "--source", "atlas", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "unknown chapter 'rank_onee'" in err
    assert "rank_one" in err.split("rank_onee", 1)[1] and "pairwise" in err and "power" in err


def test_failing_chapter_exits_1_with_the_cell_error(panel, tmp_path, capsys):
    nb = tmp_path / "fail.md"
    nb.write_text((FIXTURE.parent / "count_models.md").read_text().replace(
        "frames = {", "raise RuntimeError('deliberate failure in the chapter')\nframes = {"))
    bad = tmp_path / "manifest.yml"
    bad.write_text(FIXTURE.read_text().replace("tests/fixtures/chapters/count_models.md", str(nb)))
    rc = main(["chapter", "count_models", "--manifest", str(bad), "--source", str(panel),
               "--out", str(tmp_path / "out"), "--no-html"])
    err = capsys.readouterr().err
    assert rc == 1 and "deliberate failure in the chapter" in err and "RuntimeError" in err
    # the failing cell's frames in a few lines, none of our own (no cli.py / chapter.py frames)
    assert "cli.py" not in err and "chapter.py" not in err and len(err.splitlines()) < 40


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_example_data_writes_each_format(tmp_path, capsys, suffix):
    out = tmp_path / f"panel{suffix}"
    assert main(["example-data", "--out", str(out), "--models", "5", "--items", "12", "--seed", "1"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    read = {".csv": pd.read_csv, ".parquet": pd.read_parquet,
            ".jsonl": lambda p: pd.read_json(p, lines=True)}[suffix]
    df = read(out)
    expected = example_responses(n_models=5, n_items=12, seed=1)
    assert len(df) == 5 * 3 * 12 and df["model"].nunique() == 5
    assert set(df["benchmark"]) == {"algebra", "history", "law"}
    assert (df["probe"] == "verbal_confidence").all()
    pd.testing.assert_series_equal(df["confidence"], expected["confidence"], check_dtype=False)
    from metacog.data.responses import load_responses

    loaded = load_responses(str(out))
    assert len(loaded) == len(df) and loaded["model"].nunique() == 5
    assert sorted(loaded["correct"].dropna().unique()) == [0.0, 1.0]


def test_example_data_refuses_an_unknown_extension(tmp_path, capsys):
    assert main(["example-data", "--out", str(tmp_path / "panel.xlsx")]) == 2
    assert ".xlsx" in capsys.readouterr().err


def test_example_confidence_is_continuous_and_tracks_the_simulator():
    df = example_responses(n_models=5, n_items=50, seed=2)
    assert df["confidence"].between(0, 1).all() and df["confidence"].nunique() > 10
    steps = (df["confidence"] / 0.05).round(6)
    assert (steps == steps.round()).all()  # steps of 0.05
    # the same models answer every benchmark, each item once per model
    assert not df.duplicated(["model", "item_id"]).any()
    assert df.groupby("benchmark")["model"].nunique().eq(5).all()
    assert example_responses(n_models=5, n_items=50, seed=2).equals(df)


def _self_other_p(kappa, seed):
    df = example_responses(kappa=kappa, seed=seed)
    conf = tables.binarize(tables.wide(df, "confidence"), "median")
    correct = tables.wide(df, "correct")[conf.columns]
    return self_other_test(conf, correct, method="ttest").p_value


@pytest.mark.parametrize("seed", [0, 1])
def test_planted_self_signal_is_recoverable(seed):
    assert _self_other_p(1.0, seed) < 1e-4  # observed ~1e-8 .. 1e-10 at these seeds
    assert _self_other_p(0.0, seed) > 0.05  # no planted signal: nothing to find


def test_validate_sources_summarises_each_source_with_its_notes(panel, tmp_path):
    flat = tmp_path / "flat.csv"
    df = pd.read_csv(panel)
    df.loc[df["model"] == "model-02", "confidence"] = 0.5
    df.to_csv(flat, index=False)
    summary = chapter.validate_sources([str(panel), str(flat)])
    assert summary["models"].tolist() == [7, 7] and summary["items"].tolist() == [45, 45]
    assert not summary["notes"][0]
    assert any("model-02" in note for note in summary["notes"][1])


def test_the_command_prints_what_it_wrote(panel, tmp_path):
    proc = _cli("chapter", "count_models", "--source", str(panel), "--out", str(tmp_path / "o"),
                "--manifest", str(FIXTURE), "-p", "label", "panel", "--no-html")
    assert proc.returncode == 0, proc.stderr
    written = Path(proc.stdout.strip().splitlines()[-1])
    assert written == tmp_path / "o" / "count_models.ipynb" and written.exists()
