"""One module per hypothesis chapter of the book.

Each module takes the judgment panels of :mod:`metacog.hypotheses.panels` (one items x models matrix per
source, benchmark and probe), computes the chapter's statistics with their intervals and n, and
decides the chapter's claims with :mod:`metacog.hypotheses.verdict`. The notebooks only call these functions
and show what they return.

- chapters: :mod:`~.rank_one`, :mod:`~.pairwise`, :mod:`~.shortcut` (+ ``shortcut_detect``,
  ``shortcut_display``), :mod:`~.reasoning_text` (+ ``reasoning_text_probe``),
  :mod:`~.miscalibration` (+ ``miscalibration_audit``, ``_population``, ``_hidden``,
  ``_dynamics``), :mod:`~.power` (+ ``power_design``, ``power_display``);
- shared: :mod:`~.panels` (sources -> judgment panels), :mod:`~.verdict` (supported / not
  supported / insufficient evidence), :mod:`~.adequacy` (is a model above chance at all?,
  with :mod:`~.answer_sets`: each item's answer set and so its chance level),
  :mod:`~.common` and :mod:`~.figures`.
"""
