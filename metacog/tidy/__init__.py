"""Tidy responses: the schema every source is loaded into, and the shapes built from it.

- :mod:`~metacog.tidy.schema`: one row per model x item x probe (x sample), checked on load;
- :mod:`~metacog.tidy.items`: the benchmark item (a question with a context the probes can hide);
- :mod:`~metacog.tidy.tables`: items x models matrices, binarisation, per-model summaries;
- :mod:`~metacog.tidy.report`: formatting of numbers, intervals and tables on the book's pages.

This layer imports only :mod:`metacog.stats`; everything above it reads and writes these shapes.
"""
