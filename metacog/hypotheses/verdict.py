"""Verdicts that say what the evidence supports, and when it is not enough to say anything.

:func:`decide` turns an estimate and its confidence interval into a :class:`Verdict` with one
of three statuses:

- ``"supported"`` — the whole interval lies on the claimed side of the decision ``line``;
- ``"not supported"`` — the whole interval lies on the other side, or (with ``margin``, the
  smallest effect worth having) the interval rules out every effect of at least ``margin``;
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

from metacog.tidy.report import PrettyTable, fmt_ci, fmt_count, fmt_num, fmt_range, pretty

#: The smallest self-minus-other excess of interest, in τ-b units: the margin the power chapter's
#: verdicts and the pairwise chapter's self-against-other verdict are both judged against.
SELF_OTHER_MARGIN = 0.02

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
    basis: str = field(default="", repr=False)  # 'above', 'below', 'margin', 'straddle', 'counts', 'missing', 'power', 'caveat', 'beyond', 'sesoi'

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
            "beyond": f"lies beyond {_g(self.line + (self.margin or 0) * (1 if self.direction != 'less' else -1))}, "
                      f"the smallest effect of interest",
        }.get(self.basis)
        return f"{head} {where}." if where else f"{head}: {self.reason}."

    def summary(self) -> PrettyTable:
        """One row with readable headers: claim, statistic, estimate, 95% CI, n, verdict, reason."""
        lvl = f"{self.level * 100:g}% CI"
        names = {**_TABLE_NAMES, "ci_low": f"{lvl} low", "ci_high": f"{lvl} high"}
        return pretty(verdict_table([self]).drop(columns="direction"), digits=self.digits, names=names)

    def _repr_markdown_(self) -> str:
        return (f"**{self.status[0].upper()}{self.status[1:]}** — {self.claim}\n\n"
                f"{self.statistic}: {self.interval()}"
                + (f"; {fmt_n(self.n)}" if self.n else "") + f"\n\n*Why:* {self.reason}.")


_TABLE_NAMES = {"line": "decision line", "status": "verdict", "reason": "why"}


def verdict_table(verdicts) -> pd.DataFrame:
    """Several verdicts as a tidy table, one row each: claim, statistic, estimate, ci_low,
    ci_high, line, direction, n (as words), status, reason. ``pretty()`` it for a page."""
    rows = [{"claim": v.claim, "statistic": v.statistic, "estimate": v.estimate,
             "ci_low": v.ci_low, "ci_high": v.ci_high, "line": v.line, "direction": v.direction,
             "n": fmt_n(v.n), "status": v.status, "reason": v.reason} for v in verdicts]
    return pd.DataFrame(rows, columns=["claim", "statistic", "estimate", "ci_low", "ci_high", "line",
                                       "direction", "n", "status", "reason"])


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
           detectable_from: str = "power analysis") -> Verdict:
    """Decide a claim from an estimate and its ``level`` confidence interval.

    See the module docstring for the rules. ``detectable_from`` says, in the reason, where
    ``detectable`` comes from. ``n`` holds the counts behind the estimate
    (e.g. {"items": 500, "models": 18}); ``min_counts`` the least each may be
    (e.g. {"positives": 10, "negatives": 10}). Returns a :class:`Verdict` whose ``reason``
    says in plain words why it has its status.
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
                       float(line), direction, level, margin, detectable, digits, basis)

    short = _check_counts(n, min_counts or {})
    if short:
        return make(INSUFFICIENT, "; ".join(short), "counts")
    missing = [w for w, v in (("the estimate", estimate), ("the interval's lower end", ci_low),
                              ("the interval's upper end", ci_high)) if _nan(v)]
    if missing:
        what = (" and ".join(missing[:-1]) + " and " + missing[-1]) if len(missing) > 1 else missing[0]
        return make(INSUFFICIENT, f"{what} {'are' if len(missing) > 1 else 'is'} missing, "
                                  f"so nothing can be concluded", "missing")

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
            return make(NOT_SUPPORTED, f"{iv} rules out effects of {_g(margin)} or more from {ln}, "
                                       f"the smallest effect of interest", "margin")
    reason = f"{iv} straddles {ln}, so the data cannot tell"
    if power:
        reason += f"; {power}"
    return make(INSUFFICIENT, reason, "straddle")


def from_auroc(claim: str, result, *, line: float = 0.5, direction: str = "greater",
               min_class: int | None = None, statistic: str = "AUROC", **kw) -> Verdict:
    """A verdict from a :class:`metacog.stats.intervals.AurocResult`: its positives and
    negatives go into ``n`` and must each reach ``min_class`` (default: the result's own)."""
    need = result.min_class if min_class is None else min_class
    return decide(claim, statistic, result.estimate, result.ci_low, result.ci_high, line=line,
                  direction=direction, n={"positives": result.n_pos, "negatives": result.n_neg},
                  min_counts={"positives": need, "negatives": need}, level=result.ci, **kw)


def cap(v: Verdict, caveats, *, statuses=(SUPPORTED, NOT_SUPPORTED)) -> Verdict:
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

    ``margin`` is the smallest effect of interest (a distance from ``line``). "Supported" needs
    the whole interval beyond ``line`` ± ``margin`` on the claimed side; an interval on the
    claimed side of ``line`` but wholly within the margin is "not supported" (a real effect,
    smaller than any that matters: significant only because the sample is large); one that
    reaches past the margin without clearing it is "insufficient evidence".
    """
    from dataclasses import replace

    if direction == "differs":
        raise ValueError("decide_meaningful: give direction 'greater' or 'less'.")
    v = decide(claim, statistic, estimate, ci_low, ci_high, line=line, direction=direction, margin=margin, **kw)
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
        return replace(v, status=NOT_SUPPORTED, basis="margin",
                       reason=f"{iv} lies {'above' if sign > 0 else 'below'} {_g(line)} but wholly within "
                              f"{_g(margin)} of it, the smallest effect of interest: a real effect too "
                              f"small to matter")
    return replace(v, status=INSUFFICIENT, basis="sesoi",
                   reason=f"{iv} lies {'above' if sign > 0 else 'below'} {_g(line)} but reaches across "
                          f"{_g(edge)}, so whether the effect reaches the smallest effect of interest "
                          f"({_g(margin)}) cannot be told")
