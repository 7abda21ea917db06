"""metacog: the logic behind metacog-book; the notebooks in ``notebooks/`` only call it.

Where things are:

- data: :mod:`metacog.data` (public logs, each loaded as a tidy table), :mod:`metacog.settings`
  (where the checkout and the project's data folder are), :mod:`metacog.collect` (recorded runs);
- tidy tables: :mod:`metacog.schema` (one row per model x item x probe), :mod:`metacog.tables`
  (items x models matrices, binarisation), :mod:`metacog.panels` (judgment panels per source);
- elicit: :mod:`metacog.elicit` (ask models through a resumable cache), :mod:`metacog.models`
  (the offline GGUF panel);
- benchmarks: :mod:`metacog.benchmarks` (items and graders), :mod:`metacog.items`;
- stats: :mod:`metacog.stats` (one AUROC, intervals as ``ci_low``/``ci_high``, bootstraps),
  :mod:`metacog.verdict` (claims decided on intervals), :mod:`metacog.report` (page formatting);
- hypotheses: :mod:`metacog.hypotheses`, one module per chapter;
- probe: :mod:`metacog.probe` (hidden-state noise probe; :mod:`metacog.stability` its study);
- power: :mod:`metacog.power` with :mod:`metacog.simulate` and :mod:`metacog.calibrate`;
- book: :mod:`metacog.book` (execute and render), :mod:`metacog.chapter` (one chapter on your
  own data), :mod:`metacog.cli` (the ``metacog`` command).
"""

__version__ = "0.1.0"
