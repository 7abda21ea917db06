"""The probe's experiment design: confident-correct (CC) and overconfident-wrong (OCW)
items from a reference log, prompt conditions, and sigma sweeps, each run through the cache.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from metacog.probe.cache import probe_cached
from metacog.probe.noise import N_TRIALS, SIGMA, SIGMAS
from metacog.probe.prompts import PLAIN, SELF_CRITIQUE, build_prompts, length_control

#: Confidence at or above which an answer counts as confident (the paper's 0.8).
HIGH_CONFIDENCE = 0.8


def confidence_groups(responses: pd.DataFrame, *, threshold: float = HIGH_CONFIDENCE,
                      probe: str | None = "c0") -> pd.DataFrame:
    """Confident-correct (CC) and overconfident-wrong (OCW) items from a responses table.

    As in the paper the groups come from one reference log (the C0 forced-answer policy):
    CC = answered, correct, confidence >= ``threshold``; OCW = answered, wrong, confidence
    >= ``threshold``. Abstentions and lower confidence fall in neither. Returns
    ``item_id, group, confidence, correct``; one row per item (filter to one model first).
    """
    need = {"item_id", "decision", "confidence", "correct"}
    missing = need - set(responses.columns)
    if missing:
        raise ValueError(f"responses table is missing column(s) {sorted(missing)} "
                         "(see metacog.tidy.schema.COLUMNS).")
    df = responses
    if probe is not None and "probe" in df.columns:
        df = df[df["probe"] == probe]
        if df.empty:
            raise ValueError(f"responses: no rows with probe == {probe!r}; pass probe=None to use all rows.")
    if df["item_id"].duplicated().any():
        dup = list(df.loc[df["item_id"].duplicated(), "item_id"][:3])
        raise ValueError(f"responses: item(s) {dup} appear more than once; keep one model and "
                         "one sample per item before building CC/OCW groups.")
    dec = df["decision"].astype("string").str.strip().str.lower()
    answered = dec.notna() & (dec != "abstain") & (dec != "")
    high = df["confidence"].astype(float) >= threshold
    correct = df["correct"].astype(float)
    group = pd.Series(pd.NA, index=df.index, dtype="string")
    group[answered & high & (correct == 1)] = "CC"
    group[answered & high & (correct == 0)] = "OCW"
    out = pd.DataFrame({"item_id": df["item_id"].astype(str), "group": group,
                        "confidence": df["confidence"].astype(float), "correct": correct})
    return out[out["group"].notna()].reset_index(drop=True)


def probe_conditions(model, conditions: Mapping[str, Any], *, sigma: float = SIGMA,
                     n_trials: int = N_TRIALS, seed: int = 0, **kw) -> pd.DataFrame:
    """Run :func:`probe_cached` for each named prompt set; stacked with a ``condition`` column."""
    if not conditions:
        raise ValueError("conditions: give at least one name -> prompts.")
    parts = []
    for name, prompts in conditions.items():
        t = probe_cached(model, prompts, sigma, n_trials, seed, **kw)
        parts.append(t.assign(condition=name))
    return pd.concat(parts, ignore_index=True)


def compare_prompts(model, items, *, plain: Any = PLAIN, critique: Any = SELF_CRITIQUE,
                    control: bool = False, sigma: float = SIGMA, n_trials: int = N_TRIALS,
                    seed: int = 0, **kw) -> pd.DataFrame:
    """The same items under the plain and the self-critique prompt (conditions 'plain',
    'self_critique'); ``control=True`` adds the length-matched :func:`length_control`
    ('length_control'). Templates as in :func:`build_prompts`.
    """
    conditions = {"plain": build_prompts(items, plain), "self_critique": build_prompts(items, critique)}
    if control:
        conditions["length_control"] = length_control(items, plain, critique)
    return probe_conditions(model, conditions, sigma=sigma, n_trials=n_trials, seed=seed, **kw)


def compare_groups(model, responses: pd.DataFrame, items, *,
                   templates: Mapping[str, Any] | None = None,
                   threshold: float = HIGH_CONFIDENCE, probe: str | None = "c0",
                   sigma: float = SIGMA, n_trials: int = N_TRIALS, seed: int = 0,
                   **kw) -> pd.DataFrame:
    """CC vs OCW items (from ``responses``) probed under each template; adds ``group``.

    ``templates`` defaults to ``{'plain': 'c0', 'self_critique': 'c2'}``, giving the paper's
    2 x 2 design (group x prompt).
    """
    groups = confidence_groups(responses, threshold=threshold, probe=probe)
    if groups.empty:
        raise ValueError(f"responses: no confident (>= {threshold}) answered items, so no CC/OCW groups.")
    templates = templates or {"plain": PLAIN, "self_critique": SELF_CRITIQUE}
    conditions = {}
    for name, tpl in templates.items():
        p = build_prompts(items, tpl)
        absent = sorted(set(groups["item_id"]) - set(p.index))
        if absent:
            raise ValueError(f"items: no question for item(s) {absent[:3]} of the responses table.")
        conditions[name] = p.loc[groups["item_id"]]
    t = probe_conditions(model, conditions, sigma=sigma, n_trials=n_trials, seed=seed, **kw)
    return t.merge(groups[["item_id", "group"]], left_on="prompt_id", right_on="item_id",
                   how="left").drop(columns="item_id")


def sigma_sweep(model, prompts, sigmas: Sequence[float] = SIGMAS, *, n_trials: int = N_TRIALS,
                seed: int = 0, **kw) -> pd.DataFrame:
    """:func:`probe_cached` at each sigma, stacked (the ``sigma`` column tells them apart)."""
    if len(sigmas) == 0:
        raise ValueError("sigmas: give at least one noise level.")
    return pd.concat([probe_cached(model, prompts, s, n_trials, seed, **kw) for s in sigmas],
                     ignore_index=True)
