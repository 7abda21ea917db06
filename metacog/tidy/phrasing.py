"""Words around numbers: the small, tested pieces every data-dependent sentence is built from.

A sentence whose wording depends on the data (how many panels, which models, how far a value
moved) is assembled from a result's fields with these flat functions, so that it reads right
for one item or many, for none, for a range whose ends round alike and for a change of either
sign:

- counts and nouns: :func:`plural` ('1 panel', '2 panels', '1,500 items'), :func:`noun`,
  :func:`verb` ('is' / 'are');
- groups: :func:`join` ('a, b and c', 'none'), :func:`which` ('all 3 models', 'both models',
  'the one model', '2 of the 3 models (A and B)'), :func:`capital` to start a sentence with one;
- numbers: :func:`number` (fixed decimals, thousands separators), :func:`sig` (significant
  digits), :func:`signed` ('+0.21', '−0.10'), :func:`span` ('0.3', never '0.3 to 0.3'),
  :func:`percent`, :func:`pvalue` ('p = 0.042', 'p < 0.001').

Negative numbers use the typographic minus sign (U+2212), as everywhere in the book; a
number that rounds to zero never prints as '−0.00'; a missing value reads 'n/a'. The module
depends on nothing but the standard library.
"""

from __future__ import annotations

import math
import numbers
from decimal import ROUND_HALF_UP, Context, Decimal, localcontext
from collections.abc import Iterable

MINUS = "\u2212"
MISSING = "n/a"


def _missing(x) -> bool:
    if x is None:
        return True
    try:
        return math.isnan(float(x))
    except (TypeError, ValueError):
        return str(x) in ("<NA>", "NaT")


def _clean(s: str) -> str:
    """Typographic minus; '-0.00' (a negative that rounds to zero) loses its sign."""
    if s.startswith("-") and not any(c in "123456789" for c in s):
        s = s[1:]
    return s.replace("-", MINUS)


def number(x, digits: int = 2) -> str:
    """``x`` with ``digits`` decimals and thousands separators; integers (Python or numpy) stay
    whole.

    >>> number(0.25000000000000017)
    '0.25'
    >>> number(5633), number(1500.5, 1), number(-0.004)
    ('5,633', '1,500.5', '0.00')
    >>> number(-0.1, 1), number(float("nan"))
    ('−0.1', 'n/a')
    """
    if _missing(x):
        return MISSING
    if isinstance(x, numbers.Integral):
        return _clean(f"{int(x):,d}")
    return _clean(fixed(x, digits, comma=True))


def count(n) -> str:
    """A whole number with thousands separators: '1,500', '47,151'.

    >>> count(1500), count(47151.0), count(7)
    ('1,500', '47,151', '7')
    """
    return MISSING if _missing(n) else _clean(f"{int(round(float(n))):,d}")


def sig(x, digits: int = 2) -> str:
    """``x`` to ``digits`` significant digits, with thousands separators and no float noise.

    >>> sig(0.034), sig(0.02512), sig(0.25000000000000017)
    ('0.034', '0.025', '0.25')
    >>> sig(12345.6, 3), sig(-0.000123), sig(0)
    ('12,300', '−0.00012', '0')
    """
    if _missing(x):
        return MISSING
    x = float(x)
    if x == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(x)))
    rounded = round(x, digits - 1 - magnitude)
    decimals = max(0, digits - 1 - magnitude)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) > magnitude:
        decimals = max(0, decimals - 1)  # 0.0999 -> 0.10, not 0.100
    return _clean(f"{rounded:,.{decimals}f}")


def signed(x, digits: int = 2) -> str:
    """A change with its sign always shown: '+0.21', '−0.10'; '0.00' when it rounds to zero.

    >>> signed(0.21), signed(-0.1), signed(-0.25000000000000017)
    ('+0.21', '−0.10', '−0.25')
    >>> signed(0.001), signed(-0.001), signed(1500)
    ('0.00', '0.00', '+1,500')
    """
    if _missing(x):
        return MISSING
    s = number(x, digits)
    if not any(c in "123456789" for c in s):
        return s
    return s if s.startswith(MINUS) else "+" + s


def fixed(x, digits: int = 2, *, comma: bool = False) -> str:
    """``x`` with ``digits`` decimals, halves rounded up (away from zero) on the number as it
    reads (its shortest decimal form), not on its binary value: 7/40 = 0.175 gives '0.18' and
    21/40 = 0.525 '0.53' (f-strings give '0.17' and '0.53'). Every number, percentage and table
    cell of the book rounds through here, so one share never prints two ways. ``comma`` adds
    thousands separators.

    >>> fixed(7 / 40), fixed(0.525), fixed(0.125), fixed(-0.125), fixed(1234.5, 0, comma=True)
    ('0.18', '0.53', '0.13', '-0.13', '1,235')
    """
    with localcontext(Context(prec=100)):
        q = Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"{q:{',' if comma else ''}.{digits}f}"


def percent_digits(x, digits: int = 0) -> str:
    """The proportion ``x`` as a percentage number with ``digits`` decimals, rounded exactly as
    ``x`` prints with ``digits + 2`` decimals (:func:`fixed`), so one share never reads 52% in
    prose and 0.53 in a table.

    >>> percent_digits(21 / 40), percent_digits(37 / 40), percent_digits(7 / 40), percent_digits(-0.004, 1)
    ('53', '93', '18', '-0.4')
    """
    with localcontext(Context(prec=100)):
        q = Decimal(repr(float(x))).scaleb(2).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"{q:,.{digits}f}"


def percent(x, digits: int = 0) -> str:
    """A proportion as a percentage: '42%', '7.5%', rounded as the same proportion prints as a
    decimal (:func:`percent_digits`).

    >>> percent(0.4236), percent(0.075, 1), percent(1), percent(21 / 40)
    ('42%', '7.5%', '100%', '53%')
    """
    return MISSING if _missing(x) else _clean(percent_digits(x, digits)) + "%"


def span(lo, hi, digits: int = 2, *, sep: str = " to ", fmt=None) -> str:
    """'0.40 to 0.48', or a single value when both ends print the same (never '0.3 to 0.3').
    ``fmt`` formats each end (default :func:`number` with ``digits``).

    >>> span(0.301, 0.299, 1), span(0.4, 0.48), span(0.034, 0.025, fmt=sig)
    ('0.3', '0.40 to 0.48', '0.034 to 0.025')
    >>> span(0.2, 0.75, sep="–", fmt=percent), span(None, 1)
    ('20%–75%', 'n/a')
    """
    if _missing(lo) or _missing(hi):
        return MISSING
    f = fmt or (lambda v: number(v, digits))
    a, b = f(lo), f(hi)
    return a if a == b else f"{a}{sep}{b}"


def pvalue(p, digits: int = 3) -> str:
    """A p-value with its relation, for prose: 'p = 0.042', 'p < 0.001', 'p = n/a'.

    >>> pvalue(0.04213), pvalue(0.00002), pvalue(1.0)
    ('p = 0.042', 'p < 0.001', 'p = 1.000')
    """
    if _missing(p):
        return f"p = {MISSING}"
    floor = 10 ** -digits
    return f"p < {floor:.{digits}f}" if float(p) < floor else f"p = {float(p):.{digits}f}"


def noun(n, word: str, plural: str | None = None) -> str:
    """``word`` for one, its plural (``word + 's'`` unless given) otherwise.

    >>> noun(1, "panel"), noun(2, "panel"), noun(0, "judgment"), noun(3, "family", "families")
    ('panel', 'panels', 'judgments', 'families')
    """
    return word if n == 1 else (plural or word + "s")


def verb(n, singular: str = "is", plural: str = "are") -> str:
    """The verb agreeing with a count: 'is' for one, 'are' otherwise (or the forms given).

    >>> verb(1), verb(3), verb(1, "does", "do")
    ('is', 'are', 'does')
    """
    return singular if n == 1 else plural


def plural(n, word: str, plural: str | None = None, *, zero: str | None = None) -> str:
    """A count and its noun: '1 panel', '2 panels', '1,500 items'; with ``zero`` (e.g. 'no'),
    a count of 0 reads 'no panels'.

    >>> plural(1, "panel"), plural(2, "panel"), plural(1500, "item")
    ('1 panel', '2 panels', '1,500 items')
    >>> plural(0, "panel"), plural(0, "panel", zero="no"), plural(2, "family", "families")
    ('0 panels', 'no panels', '2 families')
    """
    if _missing(n):
        return f"an unknown number of {plural or word + 's'}"
    head = zero if (n == 0 and zero) else count(n)
    return f"{head} {noun(n, word, plural)}"


def join(items: Iterable, *, conj: str = "and", empty: str = "none", limit: int | None = None) -> str:
    """Names as a list in prose: 'a', 'a and b', 'a, b and c'; ``empty`` for no names. All names
    are shown unless ``limit`` is given, which keeps the first ``limit - 1`` and says how many
    more there are.

    >>> join(["a", "b", "c"]), join(["a"]), join([]), join(["x", "y"], conj="or")
    ('a, b and c', 'a', 'none', 'x or y')
    >>> join("abcdefgh"), join("abcdefgh", limit=3)
    ('a, b, c, d, e, f, g and h', 'a, b and 6 more')
    """
    names = [str(x) for x in items]
    if limit is not None and len(names) > limit:
        names = names[: max(limit - 1, 0)] + [f"{len(names) - max(limit - 1, 0)} more"]
    if not names:
        return empty
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" {conj} " + names[-1]


def capital(text: str) -> str:
    """``text`` with its first letter in capitals and the rest untouched (unlike
    ``str.capitalize``, which lowercases model names).

    >>> capital("both models"), capital("gpt-4o and Qwen3"), capital("")
    ('Both models', 'Gpt-4o and Qwen3', '')
    """
    return text[:1].upper() + text[1:]


def which(names: Iterable, of: int, word: str, plural: str | None = None) -> str:
    """Say which members ``names`` of a group of ``of`` things are meant, reading right at
    every size: 'all 3 models', 'both models', 'the one model', 'none of the 3 models',
    'neither model', 'no model' (of one), 'no models' (of none), '2 of the 3 models (a and b)'.

    >>> which(["p"], 1, "panel"), which([], 1, "panel")
    ('the one panel', 'no panel')
    >>> which(["a", "b"], 2, "model"), which([], 2, "model"), which(["a"], 2, "model")
    ('both models', 'neither model', '1 of the 2 models (a)')
    >>> which("abc", 3, "source"), which([], 3, "source"), which("ab", 3, "source")
    ('all 3 sources', 'none of the 3 sources', '2 of the 3 sources (a and b)')
    >>> which([], 0, "model")
    'no models'
    """
    names = [str(x) for x in names]
    if len(names) > of:
        raise ValueError(f"which: {len(names)} names but of={of}; 'of' is the size of the whole group.")
    many = plural or word + "s"
    if of == 0:
        return f"no {many}"
    if of == 1:
        return f"the one {word}" if names else f"no {word}"
    if of == 2 and len(names) in (0, 2):
        return f"both {many}" if names else f"neither {word}"
    if len(names) == of:
        return f"all {count(of)} {many}"
    if not names:
        return f"none of the {count(of)} {many}"
    return f"{len(names)} of the {count(of)} {many} ({join(names)})"
