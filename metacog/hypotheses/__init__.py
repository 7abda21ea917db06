"""One module per hypothesis chapter of the book.

Each module takes the judgment panels of :mod:`metacog.panels` (one items x models matrix per
source, benchmark and probe), computes the chapter's statistics with their intervals and n, and
decides the chapter's claims with :mod:`metacog.verdict`. The notebooks only call these functions
and show what they return.
"""
