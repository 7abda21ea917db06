"""The audit and lab chapters name a user's file by its file name only (issue #23).

Each chapter is rendered with ``metacog chapter`` on two files in a folder with a distinctive
name: one answered under the audit policies c0/c1/c2 (a slice of the recorded run
``audit_policies``), one without them (left out, and named as such). The rendered page must
name both files, never their folder, and pass the strict hygiene scan.
"""

from pathlib import Path

import pandas as pd
import pytest

from metacog import chapter
from metacog.pages.hygiene import scan_html

FOLDER = "my folder QZX"
COLUMNS = ["model", "item_id", "benchmark", "probe", "domain", "decision", "confidence", "p_yes", "correct"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from metacog.data import load_responses

    folder = tmp_path_factory.mktemp("paths") / FOLDER
    folder.mkdir()
    rec = load_responses("audit_policies")
    rec = rec[rec["model"] != "local/qwen2.5-coder-0.5b"]  # two models keep the pages short
    answers = folder / "answers x.csv"
    rec[COLUMNS].to_csv(answers, index=False)
    other = folder / "other y.csv"
    rec[rec["probe"] == "c0"][COLUMNS].assign(probe="verbal_confidence").to_csv(other, index=False)
    return answers, other


@pytest.mark.slow
@pytest.mark.parametrize("name, parameters", [
    ("audit", {"n_examples": 2}),
    ("lab", {"n_items": 30, "live": False}),
])
def test_a_user_file_is_named_by_its_file_name_only(name, parameters, files, tmp_path):
    answers, other = files
    page = chapter.run(name, [str(answers), str(other)], tmp_path / "out", parameters=parameters).page
    html = page.read_text()
    assert FOLDER not in html and str(answers.parent) not in html, "a folder of the user's machine is on the page"
    assert answers.name in html and other.name in html
    assert f"The source {other.name} is left out" in html
    found = scan_html(page.parent, strict=True, sources=[answers.name, other.name], model_counts=[2])
    assert found.empty, "\n" + found.to_string(index=False, max_colwidth=110)


@pytest.mark.slow
def test_the_miscalibration_chapter_names_a_policy_file_by_its_name_in_every_sentence_and_verdict(files, tmp_path):
    """Its policy audit, P(Yes) answerers and verdicts on a user's file of policy answers: the
    sources, the notes and every verdict claim name the file, never its folder (they printed the
    full path), and no empty table is published for a file without a multi-model panel."""
    answers, other = files
    page = chapter.run("miscalibration", [str(answers), str(other)], tmp_path / "out",
                       parameters={"probe_models": [], "n_boot": 100, "n_perm": 19}).page
    html = page.read_text()
    assert FOLDER not in html and str(answers.parent) not in html, "a folder of the user's machine is on the page"
    assert f"{answers.name} · qwen2.5-coder-1.5b · P(Yes)" in html  # the verdict names file and answerer
    found = scan_html(page.parent, strict=True, sources=[answers.name, other.name], model_counts=[2, 4])
    assert found.empty, "\n" + found.to_string(index=False, max_colwidth=110)


def test_a_relative_file_with_a_probe_after_it_is_made_absolute_and_keeps_its_probe(tmp_path):
    """The reasoning-text page tells a user to name a probe after a file ('odd.csv:prospective');
    typed relative to where the command runs, it must reach the notebook as an absolute path."""
    from metacog.chapter import source_arg

    (tmp_path / "odd.csv").write_text("model,item_id\n")
    assert source_arg("odd.csv:prospective", tmp_path) == f"{tmp_path / 'odd.csv'}:prospective"
    assert source_arg("odd.csv", tmp_path) == str(tmp_path / "odd.csv")
    assert source_arg("squad:prospective", tmp_path) == "squad:prospective"  # a run name stays a name


@pytest.mark.slow
def test_a_file_found_for_the_reply_length_section_is_named_by_its_file_name_only(tmp_path):
    """metacog chapter reasoning_text finds the file's reply lengths itself ('path:probe' in
    length_sources); the parameters cell shows that entry by the file's name, as it does sources."""
    from metacog.power.examples import example_responses

    folder = tmp_path / FOLDER
    folder.mkdir()
    rows = example_responses(n_models=6, n_items=100, seed=2)
    rows["completion_tokens"] = (80 - 30 * rows["correct"].astype(float)).astype(int)
    path = folder / "lengths z.csv"
    rows.to_csv(path, index=False)
    page = chapter.run("reasoning_text", [str(path)], tmp_path / "out", parameters={"n_boot": 200}).page
    html = page.read_text()
    assert FOLDER not in html and str(folder) not in html, "a folder of the user's machine is on the page"
    assert "lengths z.csv:verbal_confidence" in html
