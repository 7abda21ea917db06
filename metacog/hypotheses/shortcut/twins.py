"""Twin pairs for the shortcut chapter: the same model with and without thinking.

A twin design is only as good as its pairs. The rules here:

- only **same-weight** twins (one checkpoint run with thinking off and on; ``twin_exact``)
  count for the verdict; "related" pairs (models that share a base) are shown apart;
- a pair where either model's judgment is **near-constant** (one value on more than
  :data:`NEAR_CONSTANT` of its items) is excluded, with the reason: a self-advantage read off
  a judgment that barely varies measures where the few other answers fell, not what the
  model knows;
- a mean over pairs needs at least :data:`MIN_PAIRS` pairs: with fewer there is no interval
  (a bootstrap over two pairs says nothing about how far the mean could move);
- every mean shows the spread of its per-pair values and the **leave-one-pair-out** range;
  a verdict that flips when one pair is left out is at most "insufficient evidence".

Twins come from the metadata table, or, for a model it lacks, from the name: a model named
``X-think`` (or ``X-thinking``) beside ``X`` or ``X-nothink`` in the same panel is a run of
the same weights with thinking on (spar names its runs this way; :func:`name_twins`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.hypotheses.verdict import SELF_OTHER_MARGIN_WHY
from metacog.stats import resample

#: Why the chapter's τ-b differences are read against ±0.02: the book's one τ-b line.
MARGIN_WHY = f"the line of every self-advantage in the book (pairwise and power chapters), {SELF_OTHER_MARGIN_WHY}"
#: Fewer same-weight twin pairs than this: no mean over pairs is interpreted, and none gets an interval.
MIN_PAIRS = 5
#: A judgment with one value on more than this share of its items is near-constant; its pair is excluded.
NEAR_CONSTANT = 0.95
#: Fewer finite bootstrap draws than this give no 95% percentile interval.
MIN_DRAWS = 10
#: The summary rows of the twin table.
SAME, ALL_PAIRS = "mean over same-weight twins", "mean over all pairs (incl. related)"
_THINK = ("-thinking", "-think")
_NOTHINK = ("-nothink", "-no-think", "-nothinking")


def design(timing: str) -> str:
    """The design a panel's judgments come from, for labels beside its numbers."""
    return "prospective" if str(timing).startswith("before answering") else str(timing)


def label(row) -> str:
    """'Panel (design)': how a verdict names its panel."""
    return f"{row['panel']} ({design(row['timing'])})" if "timing" in row else str(row["panel"])


def _is(flag, value: bool) -> bool:
    return bool(pd.notna(flag)) and bool(flag) == value


def name_twins(models) -> dict:
    """{model: (reasoning, twin)} for models whose names mark a thinking mode and whose
    counterpart is in ``models``: 'X-think' is reasoning with twin 'X-nothink' or 'X';
    the counterpart is non-reasoning."""
    present = {str(m) for m in models}
    out = {}
    for m in present:
        base = next((m[: -len(s)] for s in _THINK if m.endswith(s)), None)
        if base is None:
            continue
        other = next((base + s for s in _NOTHINK if base + s in present), base if base in present else None)
        if other is not None:
            out[m], out[other] = (True, other), (False, m)
    return out


def twin_pairs(flags: pd.DataFrame, models) -> list[tuple[str, str, bool]]:
    """(reasoning model, its non-reasoning twin, exact) for every twin pair with both in ``models``."""
    present = set(models)
    f = flags.set_index("model")
    out = []
    for m, r in f.iterrows():
        if _is(r["reasoning"], True) and r["twin"] in present and _is(f.loc[r["twin"], "reasoning"], False):
            out.append((m, r["twin"], bool(r["twin_exact"])))
    return out


def modal_share(confidence: pd.DataFrame) -> pd.Series:
    """Per model, the share of its judged items that carry its most common value."""
    return confidence.apply(lambda s: s.value_counts(normalize=True).max() if s.notna().any() else np.nan)


def _side(lo: float, hi: float) -> str:
    return "above" if lo > 0 else ("below" if hi < 0 else "straddles")


def _summary(label: str, d: np.ndarray, idx: np.ndarray, rng, min_pairs: int) -> dict:
    """A mean-over-pairs row: estimate, spread of the per-pair values, and (with enough pairs)
    the interval and the leave-one-pair-out range and sides."""
    vals = d[0, idx]
    row = {"pair": label, "exact": pd.NA, "pairs": len(idx), "difference": float(np.mean(vals)) if len(idx) else np.nan,
           "difference_ci_low": np.nan, "difference_ci_high": np.nan,
           "pair_min": float(np.min(vals)) if len(idx) else np.nan,
           "pair_max": float(np.max(vals)) if len(idx) else np.nan,
           "loo_min": np.nan, "loo_max": np.nan, "loo_flips": False, "excluded": ""}
    if len(idx) < min_pairs:
        return row
    m = resample.mean_over_resampled_units(d, idx, rng)
    lo, hi = resample.percentile_interval(m[1:], min_draws=MIN_DRAWS)
    loo, sides = [], set()
    for k in range(len(idx)):
        mk = resample.mean_over_resampled_units(d, np.delete(idx, k), rng)
        loo.append(mk[0])
        sides.add(_side(*resample.percentile_interval(mk[1:], min_draws=MIN_DRAWS)))
    row.update(difference=m[0], difference_ci_low=lo, difference_ci_high=hi, loo_min=float(min(loo)),
               loo_max=float(max(loo)), loo_flips=bool(sides != {_side(lo, hi)}))
    return row


def twins(draws: np.ndarray, names: list, models: list, flags: pd.DataFrame, confidence: pd.DataFrame,
          rng, *, contrast: str, min_pairs: int = MIN_PAIRS, near_constant: float = NEAR_CONSTANT) -> pd.DataFrame:
    """The twin table: per pair and subset, the thinking twin's self-advantage minus its
    twin's (item-bootstrap interval), ``exact`` and ``excluded`` (why it is left out, '' when
    kept); then :data:`SAME` (the verdict's row) and :data:`ALL_PAIRS` per subset, each with
    the pairs averaged, the per-pair spread (pair_min, pair_max), and — with at least
    ``min_pairs`` pairs — the interval (items and pairs resampled) and the leave-one-pair-out
    range (loo_min, loo_max) and whether the interval's side flips (loo_flips)."""
    cols = ["pair", "exact", "subset", "pairs", "difference", "difference_ci_low", "difference_ci_high",
            "pair_min", "pair_max", "loo_min", "loo_max", "loo_flips", "excluded"]
    pairs = twin_pairs(flags, models)
    if not pairs:
        return pd.DataFrame(columns=cols)
    share = modal_share(confidence)
    excluded = []
    for a, b, _ in pairs:
        flat = [f"{m} gives one value on {share[m]:.0%} of items" for m in (a, b) if share[m] > near_constant]
        excluded.append("; ".join(flat) + (f" (near-constant: above {near_constant:.0%})" if flat else ""))
    ri = np.array([models.index(a) for a, _, _ in pairs])
    ni = np.array([models.index(b) for _, b, _ in pairs])
    per = {sub: draws[:, names.index(sub), ri] - draws[:, names.index(sub), ni] for sub in names}
    if "formal items" in per and "other items" in per:
        per[contrast] = per["formal items"] - per["other items"]
    exact = np.array([p[2] for p in pairs])
    kept = np.array([not e for e in excluded])
    rows = []
    for sub, d in per.items():
        for k, (a, b, ex) in enumerate(pairs):
            lo, hi = resample.percentile_interval(d[1:, k], min_draws=MIN_DRAWS)
            rows.append({"pair": f"{a} vs {b}", "exact": ex, "subset": sub, "pairs": 1, "difference": d[0, k],
                         "difference_ci_low": lo, "difference_ci_high": hi, "excluded": excluded[k]})
        ok = kept & np.isfinite(d[0])
        for label, keep in ((SAME, ok & exact), (ALL_PAIRS, ok)):
            rows.append({**_summary(label, d, np.flatnonzero(keep), rng, min_pairs), "subset": sub})
    return pd.DataFrame(rows, columns=cols)


_STATISTICS = {"judges": "reasoning minus non-reasoning self-advantage (τ-b)",
               "twins": "thinking minus non-thinking twin self-advantage (τ-b)"}


def statistic(kind: str, subset: str) -> str:
    """The name of a verdict's statistic: the group difference, or for the formal-minus-other
    contrast the difference-in-differences, labelled as such."""
    base = _STATISTICS[kind]
    if subset == "formal minus other":
        return f"difference-in-differences: (formal − other items) {base}"
    return base if subset == "all items" else f"{base}, {subset}"


def twin_verdicts(t: pd.DataFrame, claims: dict, min_pairs: int = MIN_PAIRS, margin: float | None = None) -> list:
    """Each twin claim (``claims``: subset -> claim) decided per panel on :data:`SAME`: at least
    ``min_pairs`` same-weight pairs, read against ±``margin`` τ-b (default the book's
    :data:`metacog.hypotheses.verdict.SELF_OTHER_MARGIN`); capped at "insufficient evidence" when
    leaving one pair out moves the interval to another side of 0."""
    from metacog.hypotheses.verdict import SELF_OTHER_MARGIN, cap, decide_meaningful
    from metacog.tidy.report import fmt_range

    out = []
    for r in t[t["pair"] == SAME].to_dict("records"):
        if r["subset"] not in claims:
            continue
        v = decide_meaningful(f"{label(r)}: {claims[r['subset']]}", statistic("twins", r["subset"]),
                              r["difference"], r["difference_ci_low"], r["difference_ci_high"], line=0.0,
                              margin=SELF_OTHER_MARGIN if margin is None else margin,
                              line_why=MARGIN_WHY if margin is None else "the margin given here",
                              direction="greater", n={"same-weight twin pairs": int(r["pairs"])},
                              min_counts={"same-weight twin pairs": min_pairs})
        flip = (f"leaving one pair out moves its interval to another side of 0 (leave-one-pair-out "
                f"estimates {fmt_range(r['loo_min'], r['loo_max'], digits=3, sep=' to ')})"
                if pd.notna(r["loo_flips"]) and bool(r["loo_flips"]) else "")
        if int(r["pairs"]) == 0:
            from dataclasses import replace

            v = replace(v, reason=f"no same-weight twin pair is left; at least {min_pairs} are needed")
        out.append(cap(v, [flip]))
    return out
