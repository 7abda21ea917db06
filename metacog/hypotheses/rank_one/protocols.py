"""Panels whose models were asked under more than one protocol, and the rank-one verdicts on the
models of one temperature only.

A panel's tidy rows may record, per model, the sampling ``temperature`` and the ``wording`` of
the instructions (the spar loader does: :mod:`metacog.data.spar`, one run per model, chosen at
temperature 0 where the model has one). Decisions sampled at temperature 1 carry sampling noise
that decisions at temperature 0 do not, which can move both the eigenvalue structure and the
alignment of the two axes. :func:`mixed_protocols` says which panels mix; :func:`temperature_sensitivity`
decides the chapter's claims again on one temperature's models, with the chapter's own
functions (:func:`metacog.hypotheses.rank_one.table`, :func:`~metacog.hypotheses.rank_one.alignment_table`,
:func:`~metacog.hypotheses.rank_one.verdicts`), and says whether each verdict changes.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from metacog.tidy.phrasing import join, plural

#: The temperature the sensitivity rows keep: the spar loader's preferred one
#: (:data:`metacog.data.spar_runs.PREFERRED_TEMPERATURE`).
SENSITIVITY_TEMPERATURE = 0.0


def _per_model(panel, column: str) -> pd.Series:
    """Each of the panel's models' single value of ``column`` in its tidy rows (NaN when the rows do
    not record it or a model has more than one)."""
    t = panel.table
    if column not in t:
        return pd.Series(np.nan, index=panel.models, dtype=object)
    one = t.groupby("model")[column].agg(lambda s: s.dropna().iloc[0] if s.dropna().nunique() == 1 else np.nan)
    return one.reindex(panel.models)


def mixed_protocols(panelset) -> pd.DataFrame:
    """One row per panel whose models were sampled at more than one temperature or asked in more
    than one wording: panel, models, ``by_temperature`` ({temperature: models}), ``unknown_temperature``
    (models whose rows do not record one), ``wordings`` (distinct instruction wordings) and a
    ``sentence`` for the page. Empty (with those columns) when no panel mixes."""
    rows = []
    for p in panelset:
        temp = _per_model(p, "temperature")
        wording = _per_model(p, "wording")
        known = pd.to_numeric(temp, errors="coerce").dropna()
        counts = known.value_counts().sort_index()
        n_word = int(wording.dropna().nunique())
        if len(counts) < 2 and n_word < 2:
            continue
        at = [f"{plural(int(n), 'model')} at temperature {t:g}" for t, n in counts.items()]
        unknown = len(p.models) - len(known)
        if unknown:
            at.append(f"{plural(unknown, 'model')} whose temperature is not recorded")
        sentence = (f"{p.name} mixes protocols: of its {len(p.models)} models, {join(at)}")
        sentence += (f", asked in {n_word} wordings of the instructions (one per model; see the data page)."
                     if n_word > 1 else ".")
        rows.append({"panel": p.name, "models": len(p.models), "by_temperature": counts.to_dict(),
                     "unknown_temperature": unknown, "wordings": n_word, "sentence": sentence})
    return pd.DataFrame(rows, columns=["panel", "models", "by_temperature", "unknown_temperature", "wordings",
                                       "sentence"])


def at_temperature(panel, temperature: float = SENSITIVITY_TEMPERATURE):
    """``panel`` cut down to the models whose rows were all sampled at ``temperature``, named
    "<panel>, temperature <t> only"; None when no model was."""
    temp = pd.to_numeric(_per_model(panel, "temperature"), errors="coerce")
    keep = [m for m in panel.models if temp.get(m) == temperature]
    if not keep:
        return None
    cut_report = panel.cut_report
    if "model" in cut_report:
        cut_report = cut_report[cut_report["model"].isin(keep)]
    return replace(panel, probe=f"{panel.probe}, temperature {temperature:g} only",
                   table=panel.table[panel.table["model"].isin(keep)],
                   confidence_raw=panel.confidence_raw[keep], confidence=panel.confidence[keep],
                   correct=panel.correct[keep], cut_report=cut_report, notes=[])


def temperature_sensitivity(panelset, decided: list, decide, *,
                            temperature: float = SENSITIVITY_TEMPERATURE) -> pd.DataFrame:
    """The chapter's verdicts again on the models of every mixed panel (:func:`mixed_protocols`)
    sampled at ``temperature``, beside the panel's verdicts in ``decided``
    (:func:`metacog.hypotheses.rank_one.verdicts` of the whole panel). ``decide`` maps a panel set
    to its verdicts with the chapter's own functions and settings
    (:func:`metacog.hypotheses.rank_one.temperature_sensitivity` passes them).

    One row per (panel, claim): panel, models (whole panel), kept (models at ``temperature``),
    wordings_kept, claim, statistic, value on the whole panel and on the kept models (estimate with
    its 95% interval), the two statuses and ``changes`` (yes/no). A kept set of fewer than
    :data:`~metacog.hypotheses.rank_one.MIN_MODELS` models reads "insufficient evidence" as any
    small panel does."""
    from metacog.hypotheses.panels import PanelSet
    from metacog.tidy.report import fmt_ci

    mixed = mixed_protocols(panelset)
    subs = {}
    for p in panelset:
        if p.name in set(mixed["panel"]):
            sub = at_temperature(p, temperature)
            if sub is not None:
                subs[p.name] = sub
    cols = ["panel", "models", "kept", "wordings_kept", "claim", "statistic", "whole panel",
            f"temperature {temperature:g} only", "status (whole panel)",
            f"status (temperature {temperature:g} only)", "changes"]
    if not subs:
        return pd.DataFrame(columns=cols)
    ps = PanelSet(list(subs.values()), pd.DataFrame(columns=["source", "benchmark", "probe", "note"]))
    again = decide(ps)
    whole = {v.claim: v for v in decided}
    rows = []
    for name, sub in subs.items():
        for v in again:
            if not v.claim.startswith(sub.name + ":"):
                continue
            claim = v.claim.split(": ", 1)[1]
            w = whole.get(f"{name}: {claim}")
            rows.append({
                "panel": name, "models": len(next(p for p in panelset if p.name == name).models),
                "kept": len(sub.models), "wordings_kept": int(_per_model(sub, "wording").dropna().nunique()),
                "claim": claim, "statistic": v.statistic,
                "whole panel": (fmt_ci(w.estimate, w.ci_low, w.ci_high, digits=2) if w is not None else "–"),
                f"temperature {temperature:g} only": fmt_ci(v.estimate, v.ci_low, v.ci_high, digits=2),
                "status (whole panel)": w.status if w is not None else "–",
                f"status (temperature {temperature:g} only)": v.status,
                "changes": "–" if w is None else ("yes" if w.status != v.status else "no")})
    return pd.DataFrame(rows, columns=cols)


def sensitivity_sentence(mixed: pd.DataFrame, sensitivity: pd.DataFrame,
                         temperature: float = SENSITIVITY_TEMPERATURE) -> str:
    """What the page says under the verdicts: which panels mix protocols and whether their verdicts
    change on one temperature's models."""
    if not len(mixed):
        return "No panel's records mix sampling temperatures or instruction wordings."
    parts = []
    for r in mixed.to_dict("records"):
        s = r["sentence"]
        rows = sensitivity[sensitivity["panel"] == r["panel"]]
        if not len(rows):
            parts.append(s + f" None of its models was sampled at temperature {temperature:g}, so its verdicts "
                             f"cannot be checked on one temperature.")
            continue
        kept, words = int(rows["kept"].iloc[0]), int(rows["wordings_kept"].iloc[0])
        changed = rows[rows["changes"] == "yes"]
        others = [f"{t:g}" for t in r["by_temperature"] if t != temperature]
        noise = (f"Decisions sampled at temperature {join(others, conj='or')} carry sampling noise, which can "
                 f"move both the eigenvalue structure and the alignment of the axes, so its"
                 if others else "Its")
        s += (f" {noise} verdicts are decided again on the "
              f"{plural(kept, 'model')} at temperature {temperature:g} alone"
              + (f" (still {words} wordings)" if words > 1 else "") + ": ")
        if len(changed):
            moves = [f"“{c['claim']}” goes from {c['status (whole panel)']} to "
                     f"{c[f'status (temperature {temperature:g} only)']}" for c in changed.to_dict("records")]
            n_c, n_r = len(changed), len(rows)
            head = ("the verdict changes" if n_r == 1 else "both verdicts change" if n_c == n_r == 2
                    else f"all {n_r} verdicts change" if n_c == n_r else f"{n_c} of the {n_r} verdicts change")
            s += (f"{head} "
                  f"({'; '.join(moves)}). The kept models are fewer, so a change can come from the smaller "
                  f"panel as much as from the temperature; either way the whole panel's "
                  + (f"verdict there rests on mixing temperatures, so the verdict table reads it as "
                     f"insufficient evidence."
                     if len(changed) == 1 else
                     f"verdicts there rest on mixing temperatures, so the verdict table reads them as "
                     f"insufficient evidence."))
        else:
            s += ("no verdict changes (each reads as on the whole panel)"
                  + ("; the wordings still differ between models, and this panel cannot separate their effect."
                     if words > 1 else "."))
        parts.append(s)
    return " ".join(parts)


def temper(decided: list, sensitivity: pd.DataFrame, temperature: float = SENSITIVITY_TEMPERATURE) -> list:
    """``decided`` with every verdict that :func:`temperature_sensitivity` overturns lowered to
    insufficient evidence: a verdict that holds on a panel mixing temperatures but not on its
    models of one temperature rests on the mix, so it is no stronger than that check. The reason
    gives both readings; verdicts the check leaves as they were, or already insufficient, are
    kept unchanged."""
    from metacog.hypotheses.verdict import INSUFFICIENT

    if not len(sensitivity):
        return list(decided)
    only = f"temperature {temperature:g} only"
    changed = {f"{r['panel']}: {r['claim']}": r for r in sensitivity.to_dict("records")
               if r["changes"] == "yes"}
    out = []
    for v in decided:
        r = changed.get(v.claim)
        if r is None or v.status == INSUFFICIENT:
            out.append(v)
            continue
        out.append(replace(v, status=INSUFFICIENT, basis="caveat", reason=(
            f"{v.status} on the whole panel ({v.reason}), but {r[f'status ({only})']} on its "
            f"{plural(int(r['kept']), 'model')} at temperature {temperature:g} alone "
            f"({r[only]}): the verdict rests on mixing sampling temperatures")))
    return out
