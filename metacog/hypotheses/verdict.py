"""Verdicts that say what the evidence supports, and when it is not enough to say anything.

:func:`decide` turns an estimate and its confidence interval into a :class:`Verdict` with one
of three statuses:

- ``"supported"`` — the whole interval lies on the claimed side of the decision ``line``;
- ``"not supported"`` — the whole interval lies on the other side, or (with ``margin``, the
  smallest effect worth having) the interval rules out every effect of at least ``margin``;
- ``"negligible"`` — (:func:`decide_meaningful`, and :func:`decide` with ``equivalence=True``) the
  whole interval lies inside (line − margin, line + margin): equivalent to the line by a
  two-one-sided-tests reading of the interval (read off the 95% interval, stricter than the 90%
  interval of a TOST at 5%), an effect too small to matter. An interval inside the margin is
  never called "not supported";
- ``"insufficient evidence"`` — the interval straddles the line; or a count in ``n`` is
  below its threshold in ``min_counts``; or the estimate or an end of the interval is NaN;
  or a "not supported" verdict would rest on ruling out effects (``margin``) smaller than
  ``detectable``, the smallest effect the design could detect (from the power analysis) —
  a null from an underpowered design is not evidence of absence.

``direction`` is "greater" (the claim is that the quantity exceeds ``line``), "less", or
"differs" (two-sided; "not supported" then needs a ``margin``). ``margin`` and
``detectable`` are distances from the line, in the statistic's units.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from metacog.tidy.report import PrettyTable, escape_text, fmt_ci, fmt_count, fmt_num, fmt_range, pretty

#: The smallest self-minus-other excess of interest, in τ-b units: the margin the power chapter's
#: verdicts and the pairwise chapter's self-against-other verdict are both judged against.
SELF_OTHER_MARGIN = 0.02

#: Why :data:`SELF_OTHER_MARGIN` is where it is, printed beside every verdict that uses it.
SMALLEST_REPORTED_WHY = ("0.02 τ-b: just below the smallest mean pairwise τ-b paper 1 reports (0.024, "
                         "LegalBench, its results table), a signal paper 1 itself calls small and gone once "
                         "base rates are controlled")
SELF_OTHER_MARGIN_WHY = (SMALLEST_REPORTED_WHY + "; an individual self-advantage smaller than that is smaller "
                         "than anything paper 1 treats as a signal")

#: The power a design must have to detect the margin before a null reads "not supported" (the
#: power chapter's target, ``power_target`` in its manifest).
TARGET_POWER = 0.8


def interval_detectable(ci_low: float, ci_high: float, *, level: float = 0.95,
                        power: float = TARGET_POWER) -> float:
    """The effect a two-sided ``level`` test detects with ``power``, read off the width of a
    ``level`` interval: the standard error is the half-width over z, and the detectable effect is
    (z + z_power) standard errors (normal approximation). At 95% and 80% power that is about 1.43
    half-widths. NaN when an end is missing.

    >>> round(interval_detectable(-0.01, 0.01), 4)
    0.0143
    """
    from scipy.stats import norm

    if _nan(ci_low) or _nan(ci_high):
        return float("nan")
    z = float(norm.ppf(0.5 + level / 2))
    return float((ci_high - ci_low) / 2 / z * (z + norm.ppf(power)))

SUPPORTED, NOT_SUPPORTED, INSUFFICIENT = "supported", "not supported", "insufficient evidence"
#: The third outcome of a verdict judged against a smallest effect of interest: the interval lies
#: inside the line on both sides (equivalence by two one-sided tests), never "not supported".
NEGLIGIBLE = "negligible"

#: The three outcomes in words a reader can check against the interval and the line.
OUTCOME_WORDS = {SUPPORTED: "above the line", NEGLIGIBLE: "within the line (negligible)",
                 INSUFFICIENT: "cannot tell", NOT_SUPPORTED: "on the other side of the line"}
DIRECTIONS = ("greater", "less", "differs")


def _nan(x) -> bool:
    return x is None or bool(np.isnan(float(x)))


def _g(x: float) -> str:
    """A decision line for prose: '0', '0.5', '−0.1'."""
    return f"{float(x):g}".replace("-", "\u2212")


def _singular(key: str) -> str:
    """The key of a count for a count of one: its first plural word made singular
    ('models above chance' -> 'model above chance', 'CC items' -> 'CC item')."""
    words = key.split(" ")
    for i, w in enumerate(words):
        if len(w) > 1 and w.endswith("s") and not w.endswith("ss"):
            return " ".join(words[:i] + [w[:-1]] + words[i + 1:])
    return key


def fmt_n(n: dict | None) -> str:
    """'18 models, 500 items' from {"models": 18, "items": 500}; '' when empty.

    >>> fmt_n({"models above chance": 1, "items": 132})
    '1 model above chance, 132 items'
    """
    if not n:
        return ""
    return ", ".join(fmt_count(v, _singular(k), k) for k, v in n.items())


@dataclass
class Verdict:
    """The verdict on one claim (see the module docstring for the rules)."""

    claim: str
    statistic: str
    estimate: float
    ci_low: float
    ci_high: float
    n: dict
    status: str
    reason: str
    line: float
    direction: str = "greater"
    level: float = 0.95
    margin: float | None = None
    detectable: float | None = None
    digits: int = 3
    basis: str = field(default="", repr=False)  # 'above', 'below', 'margin', 'within', 'straddle', 'counts', 'missing', 'power', 'caveat', 'beyond', 'sesoi'
    #: where the decision line (or the smallest effect of interest) comes from, printed beside it
    line_why: str = ""

    def interval(self) -> str:
        """'0.021 (95% CI 0.008 to 0.034)'."""
        return fmt_ci(self.estimate, self.ci_low, self.ci_high, digits=self.digits, level=self.level)

    def sentence(self) -> str:
        """One plain sentence, e.g. 'Supported: mean τ-b 0.021 (95% CI 0.008 to 0.034;
        18 models, 500 items) lies above 0.'"""
        est = fmt_num(self.estimate, self.digits)
        lvl = f"{self.level * 100:g}% CI"
        inner = [f"{lvl} {fmt_range(self.ci_low, self.ci_high, digits=self.digits, sep=' to ')}"]
        if _nan(self.ci_low) or _nan(self.ci_high):
            inner = ["no interval"]
        if self.n:
            inner.append(fmt_n(self.n))
        head = f"{self.status[0].upper()}{self.status[1:]}: {self.statistic} {est} ({'; '.join(inner)})"
        line = _g(self.line)
        where = {
            "above": f"lies above {line}",
            "below": f"lies below {line}",
            "outside": f"lies on one side of {line}",
            "margin": f"rules out effects of {_g(self.margin or 0)} or more from {line}, "
                      f"the smallest effect of interest",
            "straddle": f"straddles {line}",
            "within": f"lies inside ({_g(self.line - (self.margin or 0))}, {_g(self.line + (self.margin or 0))}), "
                      f"the smallest effect of interest either side of {line}: negligible",
            "beyond": f"lies beyond {_g(self.line + (self.margin or 0) * (1 if self.direction != 'less' else -1))}, "
                      f"the smallest effect of interest",
        }.get(self.basis)
        why = f" (line: {self.line_why})" if self.line_why else ""
        return f"{head} {where}{why}." if where else f"{head}: {self.reason}{why}."

    def threshold(self) -> str:
        """The line the verdict is judged against, in words: '0' for a plain line, '±0.02 around 0'
        with a smallest effect of interest (the interval must clear +0.02 to be above it and lie
        inside (−0.02, 0.02) to be negligible)."""
        if self.margin:
            return f"±{_g(self.margin)} around {_g(self.line)}"
        return _g(self.line)

    def summary(self) -> PrettyTable:
        """One row with readable headers: claim, statistic, estimate, 95% CI, n, verdict, reason."""
        lvl = f"{self.level * 100:g}% CI"
        names = {**_TABLE_NAMES, "ci_low": f"{lvl} low", "ci_high": f"{lvl} high"}
        return pretty(verdict_table([self]).drop(columns="direction"), digits=self.digits, names=names)

    def _repr_markdown_(self) -> str:
        return (f"**{self.status[0].upper()}{self.status[1:]}** — {escape_text(self.claim)}\n\n"
                f"{escape_text(self.statistic)}: {self.interval()}"
                + (f"; {escape_text(fmt_n(self.n))}" if self.n else "") + f"\n\n*Why:* {escape_text(self.reason)}.")


_TABLE_NAMES = {"line": "decision line", "status": "verdict", "reason": "why", "outcome": "in words",
                "threshold": "judged against", "line_why": "why this line"}


def verdict_table(verdicts) -> pd.DataFrame:
    """Several verdicts as a tidy table, one row each: claim, statistic, estimate, ci_low,
    ci_high, line, direction, n (as words), status, reason, and (added) ``threshold`` (the line
    in words with its smallest effect of interest, e.g. '±0.02 around 0': never the bare 0 a
    margin is measured from), ``outcome`` (the status in words: above the line, within the line,
    cannot tell) and ``line_why`` (where the line comes from). ``pretty()`` it for a page."""
    rows = [{"claim": v.claim, "statistic": v.statistic, "estimate": v.estimate,
             "ci_low": v.ci_low, "ci_high": v.ci_high, "line": v.line, "direction": v.direction,
             "n": fmt_n(v.n), "status": v.status, "reason": v.reason, "threshold": v.threshold(),
             "outcome": OUTCOME_WORDS.get(v.status, v.status), "line_why": v.line_why} for v in verdicts]
    return pd.DataFrame(rows, columns=["claim", "statistic", "estimate", "ci_low", "ci_high", "line",
                                       "direction", "n", "status", "reason", "threshold", "outcome",
                                       "line_why"])


def lean_table(verdicts, intervals=None) -> pd.DataFrame:
    """The columns of :func:`verdict_table` a page shows: claim, statistic, the estimate with its
    interval in one cell (``intervals``, else each :meth:`Verdict.interval`), n, the line in words
    ('±0.02 around 0', never the bare 0 of a margin), verdict, outcome in words, why, and
    ``line_why`` when any verdict has one. The raw line, direction and interval ends stay there."""
    verdicts = list(verdicts)
    t = verdict_table(verdicts)
    shown = t[["claim", "statistic", "n", "threshold", "status", "outcome", "reason"]].copy()
    shown.insert(2, "estimate (95% CI)", list(intervals) if intervals is not None else
                 [v.interval() if not _nan(v.estimate) else "—" for v in verdicts])
    if t["line_why"].astype(bool).any():
        shown["line_why"] = t["line_why"]
    return shown


def verdict_display(verdicts, *, leading: dict | None = None) -> PrettyTable:
    """:func:`lean_table` for a page, with readable headers. ``leading`` adds columns in front
    (name -> values, one per verdict), e.g. when each was judged."""
    shown = lean_table(verdicts)
    for i, (name, values) in enumerate((leading or {}).items()):
        shown.insert(i, name, list(values))
    return pretty(shown, names=_TABLE_NAMES)


def _check_counts(n: dict, min_counts: dict) -> list[str]:
    short = []
    for key, need in min_counts.items():
        if key not in n:
            raise ValueError(f"decide: min_counts names {key!r} but n has no such count "
                             f"(n has {sorted(n)}); pass n={{{key!r}: ...}}.")
        have = n[key]
        if _nan(have) or have < need:
            shown = "no count" if _nan(have) else f"only {fmt_count(have, key[:-1] if key.endswith('s') else key, key)}"
            short.append(f"{shown}; at least {need} are needed")
    return short


def decide(claim: str, statistic: str, estimate: float, ci_low: float, ci_high: float, *,
           line: float = 0.0, direction: str = "greater", n: dict | None = None,
           min_counts: dict | None = None, detectable: float | None = None,
           margin: float | None = None, level: float = 0.95, digits: int = 3,
           detectable_from: str = "power analysis", equivalence: bool = False,
           line_why: str = "") -> Verdict:
    """Decide a claim from an estimate and its ``level`` confidence interval.

    See the module docstring for the rules. ``detectable_from`` says, in the reason, where
    ``detectable`` comes from. ``n`` holds the counts behind the estimate
    (e.g. {"items": 500, "models": 18}); ``min_counts`` the least each may be
    (e.g. {"positives": 10, "negatives": 10}). Returns a :class:`Verdict` whose ``reason``
    says in plain words why it has its status. ``equivalence=True`` (with ``margin``) gives an
    interval inside (line − margin, line + margin) the status "negligible" rather than "not
    supported" (an equivalence by two one-sided tests). ``line_why`` says where the line comes
    from; it is printed with the verdict.

    Examples
    --------
    >>> v = decide("m: its confidence tracks its correctness", "AUROC", 0.62, 0.55, 0.69, line=0.5)
    >>> v.status, v.reason
    ('supported', 'the 95% interval (0.550 to 0.690) lies wholly above 0.5')
    >>> decide("m: the context helps", "gain", 0.01, -0.02, 0.04, margin=0.05, equivalence=True).status
    'negligible'
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"decide: direction must be one of {DIRECTIONS}, got {direction!r}.")
    for name, v in (("margin", margin), ("detectable", detectable)):
        if v is not None and not v > 0:
            raise ValueError(f"decide: {name} is a distance from the line and must be > 0, got {v!r}.")
    if not _nan(ci_low) and not _nan(ci_high) and ci_low > ci_high:
        raise ValueError(f"decide: ci_low {ci_low} is above ci_high {ci_high} for {claim!r}; "
                         f"pass the interval's lower end first.")
    n = dict(n or {})
    lvl = f"{level * 100:g}%"
    ln = _g(line)

    def make(status: str, reason: str, basis: str) -> Verdict:
        return Verdict(claim, statistic, float("nan") if estimate is None else float(estimate),
                       float("nan") if ci_low is None else float(ci_low),
                       float("nan") if ci_high is None else float(ci_high), n, status, reason,
                       float(line), direction, level, margin, detectable, digits, basis, line_why)

    short = _check_counts(n, min_counts or {})
    if short:
        return make(INSUFFICIENT, "; ".join(short), "counts")
    missing = [w for w, v in (("the estimate", estimate), ("the interval's lower end", ci_low),
                              ("the interval's upper end", ci_high)) if _nan(v)]
    if missing:
        what = (" and ".join(missing[:-1]) + " and " + missing[-1]) if len(missing) > 1 else missing[0]
        return make(INSUFFICIENT, f"{what} {'are' if len(missing) > 1 else 'is'} missing, "
                                  f"so nothing can be concluded", "missing")

    digits = separating_digits(ci_low, ci_high, [line] + ([] if margin is None else [line - margin, line + margin]),
                               digits)
    iv = f"the {lvl} interval ({fmt_range(ci_low, ci_high, digits=digits, sep=' to ')})"
    above, below = ci_low > line, ci_high < line
    if (direction == "greater" and above) or (direction == "less" and below):
        return make(SUPPORTED, f"{iv} lies wholly {'above' if above else 'below'} {ln}",
                    "above" if above else "below")
    if direction == "differs" and (above or below):
        return make(SUPPORTED, f"{iv} lies wholly {'above' if above else 'below'} {ln}", "outside")
    if (direction == "greater" and below) or (direction == "less" and above):
        side = "below" if below else "above"
        return make(NOT_SUPPORTED, f"{iv} lies wholly {side} {ln}, the opposite of the claim",
                    "below" if below else "above")
    power = (f"the design can detect only effects of {_g(detectable)} or more ({detectable_from})"
             if detectable is not None else "")
    if margin is not None:
        lo_ok = direction == "greater" or ci_low > line - margin
        hi_ok = direction == "less" or ci_high < line + margin
        if lo_ok and hi_ok:
            if detectable is not None and detectable > margin:
                return make(INSUFFICIENT, f"{iv} rules out effects of {_g(margin)} or more, but {power}, "
                                          f"so a null here is not evidence of absence", "power")
            if equivalence and ci_low > line - margin and ci_high < line + margin:
                return make(NEGLIGIBLE, _within_reason(iv, line, margin), "within")
            return make(NOT_SUPPORTED, f"{iv} rules out effects of {_g(margin)} or more from {ln}, "
                                       f"the smallest effect of interest", "margin")
    reason = f"{iv} straddles {ln}, so the data cannot tell"
    if power:
        reason += f"; {power}"
    return make(INSUFFICIENT, reason, "straddle")


def separating_digits(ci_low: float, ci_high: float, lines, digits: int, *, most: int = 6) -> int:
    """The fewest digits, from ``digits`` up to ``most``, at which neither end of the interval is
    printed as a line it does not equal: so that "(0.30 to 0.36) straddles 0.3" prints as
    "(0.298 to 0.36...)" and "wholly below 0" never shows an upper end of "0.000".

    >>> separating_digits(0.298, 0.36, [0.3], 2), separating_digits(-0.035, -0.0004, [0.0], 3)
    (3, 4)
    """
    ends = [float(v) for v in (ci_low, ci_high) if not _nan(v)]
    for d in range(digits, most + 1):
        if all(v == x or round(v, d) != round(x, d) for v in ends for x in lines):
            return d
    return most


def _within_reason(iv: str, line: float, margin: float) -> str:
    return (f"{iv} lies inside ({_g(line - margin)}, {_g(line + margin)}), within {_g(margin)} of {_g(line)} "
            f"on both sides (two one-sided tests): negligible, an effect too small to matter")


def from_auroc(claim: str, result, *, line: float = 0.5, direction: str = "greater",
               min_class: int | None = None, statistic: str = "AUROC", **kw) -> Verdict:
    """A verdict from a :class:`metacog.stats.intervals.AurocResult`: its positives and
    negatives go into ``n`` and must each reach ``min_class`` (default: the result's own)."""
    need = result.min_class if min_class is None else min_class
    return decide(claim, statistic, result.estimate, result.ci_low, result.ci_high, line=line,
                  direction=direction, n={"positives": result.n_pos, "negatives": result.n_neg},
                  min_counts={"positives": need, "negatives": need}, level=result.ci, **kw)


def cap(v: Verdict, caveats, *, statuses=(SUPPORTED, NOT_SUPPORTED, NEGLIGIBLE)) -> Verdict:
    """``v``, no stronger than its weakest caveat.

    ``caveats`` are sentences, each naming a precondition of the claim that failed (e.g. "the
    probe itself is not shown to beat chance"); empty ones are ignored. When any is left and
    ``v``'s status is in ``statuses``, the verdict becomes "insufficient evidence" and its
    reason says what the interval showed and which caveats stop it; otherwise ``v`` comes back
    unchanged.
    """
    from dataclasses import replace

    caveats = [str(c) for c in (caveats or []) if c]
    if not caveats or v.status not in statuses:
        return v
    return replace(v, status=INSUFFICIENT, basis="caveat",
                   reason=f"{v.reason}, but {'; and '.join(caveats)}, so the claim cannot be decided")


def decide_meaningful(claim: str, statistic: str, estimate: float, ci_low: float, ci_high: float, *,
                      margin: float, line: float = 0.0, direction: str = "greater", **kw) -> Verdict:
    """:func:`decide` where an effect must also be large enough to matter.

    ``margin`` is the smallest effect of interest (a distance from ``line``). Three outcomes a
    reader can check against the interval: "supported" (above the line) needs the whole interval
    beyond ``line`` ± ``margin`` on the claimed side; "negligible" (within the line) needs the
    whole interval inside (line − margin, line + margin) — an equivalence by two one-sided tests,
    whether or not it also excludes ``line`` (a real effect too small to matter is negligible,
    never "not supported"); anything else is "insufficient evidence" (cannot tell), except an
    interval wholly on the other side of ``line`` − ``margin``, which is "not supported". A
    design that cannot detect ``margin`` (``detectable`` > ``margin``) reads "insufficient
    evidence" rather than "negligible".
    """
    from dataclasses import replace

    if direction == "differs":
        raise ValueError("decide_meaningful: give direction 'greater' or 'less'.")
    v = decide(claim, statistic, estimate, ci_low, ci_high, line=line, direction=direction, margin=margin,
               equivalence=True, **kw)
    if v.status != SUPPORTED:
        return v
    sign = 1.0 if direction == "greater" else -1.0
    edge = line + sign * margin
    near, far = (ci_low, ci_high) if direction == "greater" else (ci_high, ci_low)
    if sign * (near - edge) > 0:
        return replace(v, basis="beyond",
                       reason=f"{v.reason} and beyond {_g(edge)}, the smallest effect of interest")
    iv = (f"the {v.level * 100:g}% interval "
          f"({fmt_range(ci_low, ci_high, digits=v.digits, sep=' to ')})")
    if sign * (far - edge) < 0:
        det = kw.get("detectable")
        if det is not None and det > margin:
            return replace(v, status=INSUFFICIENT, basis="power",
                           reason=f"{iv} lies within {_g(margin)} of {_g(line)}, but the design can detect only "
                                  f"effects of {_g(det)} or more, so it cannot tell")
        return replace(v, status=NEGLIGIBLE, basis="within", reason=_within_reason(iv, line, margin))
    return replace(v, status=INSUFFICIENT, basis="sesoi",
                   reason=f"{iv} lies {'above' if sign > 0 else 'below'} {_g(line)} but reaches across "
                          f"{_g(edge)}, so whether the effect reaches the smallest effect of interest "
                          f"({_g(margin)}) cannot be told")
