"""Small formatting helpers for numbers glued into the book's prose."""

from __future__ import annotations

import math


def fmt_p(p: float, digits: int = 3) -> str:
    """A p-value for prose: '0.042', '< 0.001', or 'n/a' when it is missing."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "n/a"
    floor = 10 ** -digits
    return f"< {floor:.{digits}f}" if p < floor else f"{p:.{digits}f}"
