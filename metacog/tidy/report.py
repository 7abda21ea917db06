"""Formatting helpers for numbers glued into the book's prose and tables shown on its pages.

Prose: :func:`fmt_p` (bare p-value), :func:`fmt_p_eq` ("p = 0.042" / "p < 0.001"),
:func:`fmt_num`, :func:`fmt_ci`, :func:`fmt_range`, :func:`fmt_signed`, :func:`fmt_list`,
:func:`fmt_count`. Tables: :func:`pretty` (readable headers, sensible rounding, no bare
0..n-1 index), :func:`pretty_or` (a sentence instead of an empty table). Negative numbers use the typographic minus sign (U+2212); missing values
read "n/a" in prose and "–" in tables.
"""

from __future__ import annotations

import html
import math
import re

import numpy as np
import pandas as pd

MINUS = "\u2212"
DASH = "\u2013"


def _missing(x) -> bool:
    if x is None or x is pd.NA:
        return True
    try:
        return bool(np.isnan(float(x)))
    except (TypeError, ValueError):
        return False


def fmt_p(p: float, digits: int = 3) -> str:
    """The bare p-value, without "p =": '0.042', '< 0.001', or 'n/a' when it is missing.

    Write "p {fmt_p(p)}" only with care — "p = < 0.001" is wrong; use :func:`fmt_p_eq`.
    """
    if _missing(p):
        return "n/a"
    floor = 10 ** -digits
    return f"< {floor:.{digits}f}" if p < floor else f"{p:.{digits}f}"


def fmt_p_eq(p: float, digits: int = 3) -> str:
    """A p-value with its relation, for prose: 'p = 0.042', 'p < 0.001', 'p = n/a'."""
    s = fmt_p(p, digits)
    return f"p {s}" if s.startswith("<") else f"p = {s}"


def fmt_num(x, digits: int | None = None, *, pct: bool = False) -> str:
    """A number for prose: ``digits`` decimals (default 2; 0 for percentages), a typographic
    minus, '%' appended when ``pct`` (x is a proportion, shown as a percentage); 'n/a' if missing."""
    if _missing(x):
        return "n/a"
    d = (0 if pct else 2) if digits is None else digits
    if pct:  # rounded as the proportion prints as a decimal: 21/40 is 53% and 0.53, never 52%
        from metacog.tidy.phrasing import percent_digits
        s = percent_digits(x, d)
    else:
        from metacog.tidy.phrasing import fixed
        s = fixed(x, d, comma=True)
    if float(s.replace(",", "")) == 0:
        s = s.lstrip("-")  # no "-0.00"
    return s.replace("-", MINUS) + ("%" if pct else "")


def fmt_range(lo, hi, *, digits: int | None = None, pct: bool = False, sep: str = DASH) -> str:
    """'0.40–0.48'; a single value when both ends print the same ('0.44', never '0.44–0.44');
    'n/a' when either end is missing."""
    if _missing(lo) or _missing(hi):
        return "n/a"
    a, b = fmt_num(lo, digits, pct=pct), fmt_num(hi, digits, pct=pct)
    return a if a == b else f"{a}{sep}{b}"


def fmt_ci(est, lo, hi, *, digits: int | None = None, pct: bool = False, level: float = 0.95) -> str:
    """'0.44 (95% CI 0.40 to 0.48)'; 'n/a' when the estimate is missing, '0.44 (no interval)'
    when an end is, and '0.44 (95% CI 0.44 at both ends)' when the ends print the same."""
    if _missing(est):
        return "n/a"
    e = fmt_num(est, digits, pct=pct)
    if _missing(lo) or _missing(hi):
        return f"{e} (no interval)"
    a, b = fmt_num(lo, digits, pct=pct), fmt_num(hi, digits, pct=pct)
    lvl = f"{level * 100:g}% CI"
    return f"{e} ({lvl} {a} at both ends)" if a == b else f"{e} ({lvl} {a} to {b})"


def fmt_signed(x, words: tuple[str, str] = ("above", "below"), *, digits: int = 3,
               zero: str = "no different") -> str:
    """A difference as a size and a direction word: '0.035 above', '0.035 below', or ``zero``
    when it rounds to 0 — so prose never reads 'exceeds by −0.035'. 'n/a' if missing."""
    if _missing(x):
        return "n/a"
    size = fmt_num(abs(float(x)), digits)
    if float(size.replace(",", "")) == 0:
        return zero
    return f"{size} {words[0] if x > 0 else words[1]}"


def _join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def fmt_count(n, noun: str, plural: str | None = None, *, zero: str = "no") -> str:
    """'1 judgment', '3 judgments', '1,200 items'; ``zero`` + plural for 0 ('no judgments')."""
    if _missing(n):
        return f"an unknown number of {plural or noun + 's'}"
    n = int(n)
    word = noun if n == 1 else (plural or noun + "s")
    return f"{zero} {word}" if n == 0 and zero else f"{n:,} {word}"


def fmt_list(names, of: int | None = None, *, noun: str = "", max_names: int = 6) -> str:
    """Which of a group: 'all 3 models', 'none of the 3 models', '2 of the 3 models (A and B)'.

    Without ``of``, just the names joined ('A, B and C'). More than ``max_names`` names are
    cut to the first ones and 'and k more'.
    """
    names = [str(x) for x in names]
    shown = names if len(names) <= max_names else names[:max_names - 1] + [f"{len(names) - max_names + 1} more"]
    if of is None:
        return _join(shown) if names else "none"
    if len(names) > of:
        raise ValueError(f"fmt_list: {len(names)} names but of={of}; 'of' is the size of the whole group.")
    group = f"{of} {noun}".strip()
    if of == 1:  # never "all 1 panels" or "none of the 1 sources"
        one = noun[:-1] if noun.endswith("s") else noun
        if not one:
            return names[0] if names else "none"
        return f"the one {one} ({names[0]})" if names else f"no {one}"
    if of and len(names) == of:
        return f"both {noun}".strip() if of == 2 else f"all {group}"
    if not names:
        return f"neither of the 2 {noun}".strip() if of == 2 else f"none of the {group}"
    return f"{len(names)} of the {group} ({_join(shown)})"


# ---------------------------------------------------------------------------
# tables

#: Readable headers for the column names the package produces.
NAMES = {
    "share_yes": "share Yes", "p_yes": "P(Yes)", "auroc_p_yes": "AUROC of P(Yes)",
    "mean_tau": "mean τ-b", "tau": "τ-b", "tau_b": "τ-b", "pct_significant": "% of pairs significant",
    "ci_low": "95% CI low", "ci_high": "95% CI high", "n_items": "items", "n_models": "models",
    "n_pos": "positives", "n_neg": "negatives", "n": "n", "p": "p", "p_value": "p", "se": "SE",
    "auroc": "AUROC", "auc": "AUROC", "ece": "ECE", "smece": "smooth ECE", "aurc": "AURC", "brier": "Brier score",
    "accuracy": "accuracy", "acc_ci_low": "accuracy 95% CI low", "acc_ci_high": "accuracy 95% CI high",
    "carries_signal": "carries signal", "mean_confidence": "mean confidence",
}
_UPPER = {"auroc", "auc", "ece", "aurc", "ci", "se", "mmlu", "id", "llm", "fdr", "bh"}
_SNAKE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)+$")


def readable(name) -> str:
    """A column name as words: the :data:`NAMES` entry, else 'pct_x' -> '% x', 'n_x' -> 'x',
    underscores to spaces with known acronyms in capitals."""
    s = str(name)
    if s in NAMES:
        return NAMES[s]
    words = s.split("_")
    if words[0] == "pct" and len(words) > 1:
        words = ["%"] + words[1:]
    elif words[0] == "n" and len(words) > 1:
        words = words[1:]
    return " ".join(w.upper() if w in _UPPER else w for w in words)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}|#!~$])")


def escape_text(value) -> str:
    """``value`` (a name or text from data: a model, item, benchmark, reply) made safe for a
    page: HTML-significant characters as entities (``<``, ``>``, ``&``, quotes) and
    Markdown/MyST-significant ones (backticks, ``*``, ``_``, brackets, ``{}``, ``|``, ``$``)
    behind a backslash, newlines as spaces; a plain name prints unchanged. The one escape every
    page helper uses for data strings put into Markdown (:func:`markdown`); tables
    escape their cells themselves (:class:`PrettyTable`) and figures draw text as written
    (:func:`figure_style`).

    >>> escape_text("<script>alert(1)</script>")
    '&lt;script&gt;alert(1)&lt;/script&gt;'
    >>> escape_text("gpt-4o mini")
    'gpt-4o mini'
    """
    s = " ".join(str(value).splitlines())
    # Markdown's escapes first: escaping after html.escape would break its entities ('&\#x27;')
    return html.escape(_MD_SPECIAL.sub(r"\\\1", s), quote=True)


def markdown(text: str, *names):
    """A Markdown output for a page. With ``names``, ``text`` is a template whose ``{}`` slots
    take them escaped (:func:`escape_text`): the template's own markup stays, the names' does
    not. Without, ``text`` is a plain sentence that may hold names from data, escaped whole.

    >>> markdown("**{}** (judged before answering)", "<b>x</b>").data
    '**&lt;b&gt;x&lt;/b&gt;** (judged before answering)'
    >>> print(markdown("model_a: no answers").data)
    model\\_a: no answers
    """
    from IPython.display import Markdown

    return Markdown(text.format(*map(escape_text, names)) if names else escape_text(text))


def figure_style() -> None:
    """The book's figure style: seaborn's white-grid theme, and every text drawn as written
    (matplotlib's mathtext off), so a name from data holding dollar signs is never read as TeX
    (an unbalanced one such as ``$\\left($`` would stop the figure from being drawn)."""
    import matplotlib
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook")
    matplotlib.rcParams["text.parse_math"] = False


class PrettyTable(pd.DataFrame):
    """A DataFrame of display strings whose HTML has no index column (for notebook pages)."""

    @property
    def _constructor(self):
        return PrettyTable

    def _repr_html_(self) -> str:
        # Styler does not escape cells or headers by default: names from data would be markup
        return (self.style.format(escape="html").format_index(escape="html", axis=1)
                .hide(axis="index").set_table_attributes('class="dataframe"').to_html())

    def __repr__(self) -> str:
        return self.to_string(index=False)


def _fmt_float_col(col: pd.Series, digits: int, name: str) -> pd.Series:
    from metacog.tidy.phrasing import fixed

    vals = col.to_numpy(dtype=float)
    fin = vals[np.isfinite(vals)]
    if str(name).startswith("pct") or str(name).endswith("pct"):
        d = 1
    elif fin.size and np.all(fin == np.round(fin)):
        d = 0
    else:
        big = np.abs(fin).max() if fin.size else 0.0
        d = digits if big < 1 else max(0, digits - int(math.floor(math.log10(big))))
    sep = "," if fin.size and np.abs(fin).max() >= 1_000 else ""
    out = []
    for v in vals:
        if not np.isfinite(v):
            out.append("–" if np.isnan(v) else ("∞" if v > 0 else MINUS + "∞"))
            continue
        s = fixed(v, d, comma=bool(sep))
        if float(s.replace(",", "")) == 0:
            s = s.lstrip("-")
        out.append(s.replace("-", MINUS))
    return pd.Series(out, index=col.index)


def _is_p_col(name) -> bool:
    s = str(name)
    return s in ("p", "p_value", "pvalue") or s.startswith("p_value") or s.endswith("_p") or s.startswith("p_perm")


def quantities(summary: pd.DataFrame, digits: int = 3) -> PrettyTable:
    """A two-column (quantity, value) summary for a page with each value formatted on its own:
    whole numbers as integers with thousands separators, other numbers with ``digits`` decimals
    (a shared column format would round 0.626 and 1,000 alike), booleans as yes/no, a vector as
    '(−0.25, 0.90)', missing as '–' — never a float's or a list's repr."""
    def one(v):
        if isinstance(v, str):
            return v
        if isinstance(v, (bool, np.bool_)):
            return "yes" if v else "no"
        if isinstance(v, (list, tuple, np.ndarray)):
            return "(" + ", ".join(one(x) for x in v) + ")"
        if _missing(v):
            return "–"
        try:
            x = float(v)
        except (TypeError, ValueError):
            return str(v)
        return f"{int(x):,}".replace("-", MINUS) if x == int(x) else fmt_num(x, digits)

    return PrettyTable({"quantity": summary["quantity"].astype(str).str.replace("_", " "),
                        "value": [one(v) for v in summary["value"]]})


def warning(text: str) -> str:
    """``text`` as a MyST warning admonition (for the notice at the top of a page).

    >>> warning("No model passes.")
    '```{warning}\\nNo model passes.\\n```'
    """
    return "```{warning}\n" + text + "\n```"


def pretty_or(df: pd.DataFrame, why: str, *, digits: int = 3, names: dict | None = None):
    """:func:`pretty` of ``df`` when it has rows; otherwise ``why`` (one sentence saying why there
    is nothing to show) as Markdown, so a page never publishes an empty table."""
    if df is not None and len(df):
        return pretty(df, digits=digits, names=names)
    from IPython.display import Markdown

    return Markdown(why)


def pretty(df: pd.DataFrame, *, digits: int = 3, names: dict | None = None) -> PrettyTable:
    """A display copy of ``df``: readable headers (``names`` overrides :data:`NAMES`), floats
    rounded (whole-valued columns as integers, ``digits`` decimals below 1 and fewer for large
    values, p-value columns via :func:`fmt_p`), booleans as yes/no, missing values as '–'.

    A named index, or one that is not just 0..n-1, becomes leading column(s); a bare
    0..n-1 index is dropped. Returns a :class:`PrettyTable` (strings; for display only).
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"pretty: expected a DataFrame, got {type(df).__name__}.")
    t = df.copy()
    idx = t.index
    bare = (all(n is None for n in idx.names) and idx.nlevels == 1
            and (isinstance(idx, pd.RangeIndex) or list(idx) == list(range(len(idx)))))
    if not bare:
        t = t.reset_index(names=[n if n is not None else "" for n in idx.names])
    t = t.reset_index(drop=True)
    out = {}
    for c in t.columns:
        col = t[c]
        if pd.api.types.is_bool_dtype(col):
            out[c] = col.map({True: "yes", False: "no"}).fillna("–").astype(str)
        elif _is_p_col(c) and pd.api.types.is_numeric_dtype(col):
            out[c] = col.map(lambda v: "–" if _missing(v) else fmt_p(v))
        elif pd.api.types.is_integer_dtype(col):
            sep = "," if col.notna().any() and col.abs().max() >= 1_000 else ""
            out[c] = col.map(lambda v: "–" if _missing(v) else f"{int(v):{sep}d}".replace("-", MINUS))
        elif pd.api.types.is_float_dtype(col):
            out[c] = _fmt_float_col(col, digits, c)
        else:
            out[c] = col.map(lambda v: "–" if _missing(v) else str(v))
    mapping = {**NAMES, **(names or {})}
    headers = [mapping.get(str(c), readable(c)) for c in t.columns]
    res = PrettyTable({i: out[c] for i, c in enumerate(t.columns)})
    res.columns = headers
    return res
