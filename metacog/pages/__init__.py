"""What the book's non-hypothesis pages compute, each module named after its notebook.

- :mod:`~metacog.pages.data` (``notebooks/data.md``): the data chapter's counts and estimates,
  each with its interval and n;
- :mod:`~metacog.pages.audit` (``notebooks/audit.md``): answers under the policies C0/C1/C2;
- :mod:`~metacog.pages.benchmark` (``notebooks/benchmark.md``, one page per recorded run), its
  adequacy gate in :mod:`~metacog.pages.benchmark.gate`;
- :mod:`~metacog.pages.lab` (``notebooks/lab.md``): the fifteen-minute lab;
- :mod:`~metacog.pages.hygiene`: the scan of every built page for what a reader should never see.
"""
