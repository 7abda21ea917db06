"""One module or subpackage per hypothesis chapter of the book.

Each chapter takes the judgment panels of :mod:`metacog.hypotheses.panels` (one items x models matrix per
source, benchmark and probe), computes the chapter's statistics with their intervals and n, and
decides the chapter's claims with :mod:`metacog.hypotheses.verdict`. The notebooks only call these functions
and show what they return.

- chapters, one subpackage each (the package is the chapter's API, its modules the helpers):
  :mod:`~.rank_one`, :mod:`~.pairwise` (``population``, ``third_person``), :mod:`~.shortcut`
  (``detect``, ``display``, ``twins``), :mod:`~.reasoning_text` (``probe``),
  :mod:`~.miscalibration` (``sources``, ``audit``, ``population``, ``hidden``, ``null``,
  ``dynamics``), :mod:`~.power` (``design``, ``display``);
- shared: :mod:`~.panels` (sources -> judgment panels), :mod:`~.verdict` (supported / not
  supported / insufficient evidence), :mod:`~.adequacy` (is a model above chance at all?,
  with :mod:`~.answer_sets`: each item's answer set and so its chance level),
  :mod:`~.serving` (which chapters a response file can serve, their parameters re-aimed at it),
  :mod:`~.common` and :mod:`~.figures`.

An entry point that makes several tables returns a result object (a
:class:`~.common.ChapterResult`: named fields, and ``summary()``, its headline as a tidy
DataFrame), e.g. :func:`~.shortcut.tables` a :class:`~.shortcut.ShortcutTables`.
"""
