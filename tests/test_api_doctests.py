"""The examples in the docstrings the API page (book/api.md) documents run, and print what they
show: every function the page lists is found, and the page shows at least a handful of
examples."""

import doctest
import importlib
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "book" / "api.md"
TARGETS = re.findall(r"\.\. auto(?:function|class):: (metacog[\w.]+)", PAGE.read_text())


def _object(dotted: str):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_the_page_lists_functions_that_exist():
    assert len(TARGETS) >= 10
    for dotted in TARGETS:
        assert callable(_object(dotted)), dotted


@pytest.mark.parametrize("dotted", TARGETS)
def test_docstring_examples_run(dotted, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # files an example writes land here; the checkout is found from the env
    monkeypatch.setenv("METACOG_PROJECT_ROOT", str(PAGE.parents[1]))
    obj = _object(dotted)
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    module = importlib.import_module(obj.__module__)
    for test in finder.find(obj, dotted, module=module, globs=dict(vars(module))):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{dotted}: {result.failed} of {result.attempted} examples failed"


def test_the_page_shows_examples():
    finder = doctest.DocTestFinder(recurse=False)
    examples = sum(len(t.examples) for d in TARGETS for t in finder.find(_object(d), d))
    assert examples >= 15


#: The functions issue 38 names as what a researcher calls; each is on the page with an example.
CALLED = ["metad_trials", "ece", "smooth_ece", "tetrachoric", "pairwise_calibration", "self_other_test",
          "h_proxy", "load_responses", "metacog.elicit.engine.run", "metacog.pages.place.run.check",
          "metacog.chapter.run", "metacog.replicate.planning.plan", "type2_auroc", "answers_from_p_yes",
          "metacog.hypotheses.verdict.decide"]


@pytest.mark.parametrize("name", CALLED)
def test_the_functions_a_researcher_calls_are_on_the_page_with_an_example(name):
    hits = [d for d in TARGETS if d == name or d.endswith("." + name)]
    assert hits, f"{name} is not on book/api.md"
    finder = doctest.DocTestFinder(recurse=False)
    assert sum(len(t.examples) for t in finder.find(_object(hits[0]), hits[0])) >= 1, f"{hits[0]} has no example"


@pytest.mark.parametrize("dotted", TARGETS)
def test_napoleon_reads_no_sentence_as_a_parameter(dotted):
    """Prose left after a numpy-style Parameters section is read by napoleon as more parameters
    (the page showed "Constant columns are dropped ..." as a parameter and examples as bullets):
    every parameter napoleon finds is a name, and every example sits in an Examples section."""
    import inspect

    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import NumpyDocstring

    doc = inspect.cleandoc(_object(dotted).__doc__ or "")
    rendered = str(NumpyDocstring(doc, Config(napoleon_use_param=True)))
    params = re.findall(r"^:param ([^:]*):", rendered, flags=re.M)
    assert all(re.fullmatch(r"[\w*]+", p.strip()) for p in params), (dotted, params)
    if ">>>" in doc and re.search(r"^(Parameters|Returns)$", doc, flags=re.M):
        assert re.search(r"^Examples\n-+$", doc, flags=re.M), f"{dotted}: examples outside an Examples section"
