"""Who answers in the policy audit: the items every policy was asked, and P(Yes) answerers.

- :func:`complete_items` keeps, per model, the items it answered under all three policies, so
  that every comparison between policies (paired gains, H_proxy's spread over policies) is made
  on the same items.
- :func:`add_p_yes` adds, beside each model that recorded a first-token P(Yes), that P(Yes) read
  as an answer and a confidence (:func:`metacog.stats.p_yes.answers_from_p_yes`): a model of its
  own in every table, named ``model · P(Yes)``, behind the same adequacy gate.
"""

from __future__ import annotations

import pandas as pd

from metacog.stats.p_yes import LABEL, answers_from_p_yes
from metacog.stats.policy import POLICIES
from metacog.tidy import phrasing


#: The columns of :func:`add_p_yes`'s fits, one row per source, answerer and policy.
FIT_COLUMNS = ["source", "model", "probe", "answered", "accuracy", "mean_confidence", "abstained", "mean_shift"]


def complete_items(frames: dict) -> tuple[dict, list[str]]:
    """Each source's rows restricted to the (model, item) pairs present under every policy, and
    one sentence per source that lost items to it."""
    out, notes = {}, []
    for source, df in frames.items():
        n_pol = df.groupby(["model", "item_id"])["probe"].transform("nunique")
        kept = df[n_pol == len(POLICIES)].reset_index(drop=True)
        before, after = df["item_id"].nunique(), kept["item_id"].nunique()
        if after < before:
            several = df["model"].nunique() > 1
            notes.append(f"{_name(source)}: {phrasing.plural(after, 'item')} of the "
                         f"{phrasing.count(before)} {phrasing.verb(after, 'carries', 'carry')} an answer under all "
                         f"three policies{' for at least one model' if several else ''}; the policy audit "
                         f"uses those.")
        if len(kept):
            out[source] = kept
        else:
            notes.append(f"{_name(source)}: no item carries an answer under all three policies, so the "
                         f"policy audit does not apply to it.")
    return out, notes


def add_p_yes(frames: dict, *, seed: int = 0) -> tuple[dict, pd.DataFrame]:
    """``frames`` with each source's P(Yes) answerers added (models with a recorded P(Yes) only),
    and the fits: one row per source, answerer and policy (answered, accuracy, mean confidence,
    abstained, mean shift of the log-odds)."""
    out, fits = {}, []
    for source, df in frames.items():
        has = df[pd.to_numeric(df["p_yes"], errors="coerce").notna()]["model"].unique() \
            if "p_yes" in df.columns else []
        if len(has) == 0:
            out[source] = df
            continue
        fitted = answers_from_p_yes(df[df["model"].isin(has)], seed=seed)
        out[source] = pd.concat([df, fitted.responses], ignore_index=True)
        fits.append(fitted.summary().assign(source=source))
    return out, (pd.concat(fits, ignore_index=True)[FIT_COLUMNS] if fits else pd.DataFrame(columns=FIT_COLUMNS))


def is_p_yes(model: str) -> bool:
    """Whether ``model`` names a P(Yes) answerer made by :func:`add_p_yes`."""
    return str(model).endswith(LABEL)


def _name(source: str) -> str:
    from metacog.data.responses import source_name

    return source_name(source)


def display_fits(fits: pd.DataFrame) -> pd.DataFrame:
    """The P(Yes) fits for a page: source, answerer, policy, items answered, accuracy, mean
    confidence, abstentions and the mean shift of the log-odds."""
    from metacog.data.responses import source_name
    from metacog.hypotheses.common import short_model

    return pd.DataFrame({"source": fits["source"].map(source_name), "answerer": fits["model"].map(short_model),
                         "policy": fits["probe"].str.upper(), "answered": fits["answered"],
                         "accuracy": fits["accuracy"], "mean confidence": fits["mean_confidence"],
                         "abstained": fits["abstained"], "shift of the log-odds": fits["mean_shift"]})


def p_yes_sentence(gates: dict) -> str:
    """What the gate makes of each P(Yes) answerer next to the same model's words, per source."""
    from metacog.data.responses import source_name
    from metacog.hypotheses.common import short_model

    parts = []
    for source, g in gates.items():
        by_model = g.set_index("model")
        for model in [m for m in g["model"] if is_p_yes(m)]:
            words = model[: -len(LABEL)]
            r = by_model.loc[model]
            text = (f"On {source_name(source)}, {short_model(model)} answers {phrasing.number(r.accuracy)} "
                    f"({phrasing.span(r.ci_low, r.ci_high)}) of the C0 items right")
            if words in by_model.index:
                w = by_model.loc[words]
                text += f", its words {phrasing.number(w.accuracy)} ({phrasing.span(w.ci_low, w.ci_high)})"
                both = (not r.at_chance, not w.at_chance)
                text += {(True, False): ": the gate passes its P(Yes) and not its words",
                         (False, True): ": the gate passes its words and not its P(Yes)",
                         (True, True): ": the gate passes both",
                         (False, False): ": the gate passes neither"}[both]
            else:
                text += ": the gate " + ("passes it" if not r.at_chance else "finds it at chance")
            parts.append(text + ".")
    return " ".join(parts)
