"""A template executed as several pages gets page-specific exercise labels."""

import nbformat

from metacog import book
def _nb(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Template\n\ntext"),
                nbformat.v4.new_markdown_cell("```{exercise}\n:label: bm-ex-1\n\nDo it.\n```"),
                nbformat.v4.new_markdown_cell("````{solution-start} bm-ex-1\n:class: dropdown\n````"),
                nbformat.v4.new_code_cell("x = 'bm-ex-1'")]
    path = tmp_path / "page.ipynb"
    nbformat.write(nb, path)
    return path


def test_template_pages_get_their_own_exercise_labels(tmp_path):
    path = _nb(tmp_path)
    book._finish(path, "SQuAD without its passage", "bench_squad")
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].source.startswith("# SQuAD without its passage")
    assert ":label: bench-squad-ex-1" in nb.cells[1].source
    assert "{solution-start} bench-squad-ex-1" in nb.cells[2].source
    assert nb.cells[3].source == "x = 'bm-ex-1'"  # code is never rewritten


def test_single_pages_keep_their_labels(tmp_path):
    path = _nb(tmp_path)
    book._finish(path, "", "rank_one")
    assert ":label: bm-ex-1" in nbformat.read(path, as_version=4).cells[1].source
