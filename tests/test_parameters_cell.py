"""The parameters a page ran with are shown as written: papermill injects them with
``unicode_escape`` ('qwen2.5-coder-1.5b \\xb7 P(Yes)'), and the book puts printable characters
back without changing what the cell means (issue #38); control and right-to-left characters
from a user's file stay escaped."""

import nbformat
from papermill.translators import PythonTranslator

from metacog import book

PARAMS = {"probe_models": ["smollm2-135m", "qwen2.5-coder-1.5b · P(Yes)"],
          "name": "café\u202eevil", "path": "C:\\xb7\\new", "note": "two\nlines"}


def test_the_shown_parameters_cell_reads_as_typed_and_means_the_same(tmp_path):
    injected = PythonTranslator.codify(PARAMS)
    assert "\\xb7" in injected  # what papermill writes
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("probe_models = []", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(injected, metadata={"tags": ["injected-parameters"]}),
        nbformat.v4.new_markdown_cell("# Page")])
    path = tmp_path / "page.ipynb"
    nbformat.write(nb, path)
    book._finish(path, "")
    shown = nbformat.read(path, as_version=4).cells[1].source
    assert "qwen2.5-coder-1.5b · P(Yes)" in shown and "café" in shown and "\\xb7 P(Yes)" not in shown
    assert "\\u202e" in shown and "\\n" in shown  # invisible and control characters stay escaped
    before, after = {}, {}
    exec(injected, before)
    exec(shown, after)
    assert {k: after[k] for k in PARAMS} == {k: before[k] for k in PARAMS} == PARAMS
