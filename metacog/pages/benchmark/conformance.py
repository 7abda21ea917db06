"""The benchmark pages' format rule: the share of each model's replies that parse, and which
models' verdicts it withholds. The rule is monotone in its rate: a higher rate never gives a
verdict to a model that a lower one withheld (the rows stay in the tables, marked)."""

from __future__ import annotations

import dataclasses

import pandas as pd

from metacog.hypotheses.common import short_model
from metacog.hypotheses.verdict import INSUFFICIENT, Verdict
from metacog.tidy.report import fmt_list, pretty


def display_conformance(responses: pd.DataFrame, min_rate: float = 0.8):
    """Share of replies parsed per model and probe, the overall rate and whether it conforms."""
    from metacog.tidy import tables
    t = tables.conformance(responses, min_rate=min_rate)
    t.index = t.index.map(short_model)
    t.index.name = "model"
    shown = pretty(t, digits=2)
    probes = [c for c in t.columns if c not in ("overall", "conforms")]
    for j, probe in enumerate(probes):  # a probe the run never asked this model: say so, not '–'
        col = shown.columns[len(shown.columns) - len(t.columns) + j]
        shown.loc[t[probe].isna().to_numpy(), col] = "not asked"
    return shown



def format_scope_sentence(models, kept, rate: float | None = None) -> str:
    """Which models the format rule keeps out of the verdicts: those whose replies parse less
    often than the threshold. The rule is monotone: a higher threshold never keeps a model
    that a lower one withheld. Their rows stay in the tables, marked by the 'conforms' column."""
    models, kept = sorted(set(models)), set(kept)
    dropped = [short_model(m) for m in models if m not in kept]
    at = f" at {rate:g}" if rate is not None else ""
    if not dropped:
        return f"Every model follows the format{at}, so no verdict is withheld for it."
    if not kept:
        return (f"No model follows the format{at}: the tables below describe every model's replies, "
                "marked in the 'conforms' column, and every verdict reads insufficient evidence.")
    return (f"Not following the format{at}: {fmt_list(dropped)}. Their rows stay in the tables, marked, "
            "and their verdicts read insufficient evidence.")


def stricter_format_sentence(models, kept, strict, rate: float, strict_rate: float) -> str:
    """Which models each conformance threshold leaves with a verdict (the rule of
    :func:`format_scope_sentence`)."""
    from metacog.tidy import phrasing

    def scope(chosen, r):
        if not chosen:
            return f"at {r:g} no model follows the format, so every verdict is withheld"
        names = phrasing.join([short_model(m) for m in chosen])
        return (f"at {r:g} {names} {phrasing.verb(len(chosen), 'follows', 'follow')} the format, so "
                f"{phrasing.verb(len(chosen), 'its', 'their')} verdicts are not withheld for it")

    s = scope(kept, rate) + "; " + scope(strict, strict_rate)
    return s[0].upper() + s[1:] + "."


def withhold_unformatted(verdicts: list[Verdict], responses: pd.DataFrame, kept, min_rate: float) -> list[Verdict]:
    """The verdicts of models that do not follow the format (not in ``kept``) turned into
    "insufficient evidence", the reason giving the share of their replies that parse."""
    from metacog.tidy import tables

    rates = tables.conformance(responses, min_rate=min_rate)
    rate = {short_model(m): r for m, r in rates["overall"].items()} if "overall" in rates else {}
    kept = {short_model(m) for m in kept}
    out = []
    for v in verdicts:
        name = v.claim.split(":")[0]
        if name in kept or name not in rate:
            out.append(v)
            continue
        out.append(dataclasses.replace(
            v, status=INSUFFICIENT, basis="counts",
            reason=f"it does not follow the format: {rate[name]:.0%} of its replies parse, below the page's "
                   f"{min_rate:.0%}"))
    return out
