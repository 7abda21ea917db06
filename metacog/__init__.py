"""metacog: the logic behind metacog-book; the notebooks in ``notebooks/`` only call it.

Where things are (packages from the lowest layer up; each imports only lower ones):

- :mod:`metacog.settings` (where the checkout, data and caches are), :mod:`metacog.memo`
  (slow results cached by arguments and code);
- :mod:`metacog.stats`: statistics (one ``auroc``, intervals as ``ci_low``/``ci_high``);
- :mod:`metacog.tidy`: the response schema, items, items x models tables, page formatting;
- :mod:`metacog.data`: public logs, recorded runs and a user's own files as tidy tables
  (:func:`metacog.data.load_responses`);
- :mod:`metacog.benchmarks`: benchmark items and graders;
- :mod:`metacog.elicit`: ask any model through a resumable cache; the offline GGUF panel;
  recording declared runs;
- :mod:`metacog.probe` (the hidden-state noise probe and its study), :mod:`metacog.power`
  (simulated populations, power curves, the simulator matched to a dataset);
- :mod:`metacog.hypotheses`: one module or subpackage per hypothesis chapter, plus panels and verdicts;
- :mod:`metacog.pages`: the data, audit, benchmark and lab pages, and the built book's hygiene scan;
- :mod:`metacog.manifest` (the manifest and parameters cells), :mod:`metacog.book` (execute
  and render), :mod:`metacog.chapter` (one chapter on your own
  data), :mod:`metacog.sourcebook` (the whole book on your own data), :mod:`metacog.cli` (the
  ``metacog`` command).

A number on a page comes from the module named after the page's notebook:
``notebooks/pairwise.md`` -> :mod:`metacog.hypotheses.pairwise`, ``notebooks/audit.md`` ->
:mod:`metacog.pages.audit`.
"""

__version__ = "0.1.0"
