"""A model's first-token P(Yes) read as its answer and its confidence, for yes/no items.

A small model's verbal answer can sit at chance while the probability it puts on "Yes" at the
answer position still tells true items from false ones: it says "Yes" to almost everything, but
says it more firmly to the true ones. Its P(Yes) is then mostly a bias (a shift of the log-odds)
on top of some knowledge. :func:`answers_from_p_yes` removes that one shift and nothing else:

- the log-odds ``z = logit(P(Yes))`` are shifted by one number ``b`` per model and policy,
  fitted (by log-loss) on the *other* items only: items are split at random into ``folds``
  groups, and the shift applied to a group is fitted on the rest (cross-fitting), so no answer is
  scored with a threshold its own label helped to choose;
- the answer is "yes" where ``sigmoid(z - b) >= 0.5``, and the confidence in it is
  ``max(q, 1 - q)`` with ``q = sigmoid(z - b)``.

The slope of the log-odds is left as the model gave it, so over- or under-confidence (log-odds
too spread or too flat) survives the shift: what the miscalibration chapter measures is still the
model's own. A verbal abstention stays an abstention (its reply has no answer token).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar
from scipy.special import expit, logit

#: Added to a model's name for its P(Yes) answers (they are a model of their own in every table).
LABEL = " · P(Yes)"
#: Fewer labelled answers than this on the other folds: no shift is fitted, the rows are left out.
MIN_FIT = 10


@dataclass(frozen=True)
class PYesAnswers:
    """Result of :func:`answers_from_p_yes`.

    ``responses``: the tidy rows of the P(Yes) answerers (one per model x item x probe, the
    model named ``model + LABEL``); ``shifts``: one row per model, probe and fold with the
    fitted ``shift`` and ``n_fit`` (labelled answers it was fitted on); ``dropped``: rows left
    out (no P(Yes), no known label, or too few labels to fit a shift).
    """

    responses: pd.DataFrame
    shifts: pd.DataFrame
    dropped: int

    def summary(self) -> pd.DataFrame:
        """Per model and probe: items answered, abstentions, accuracy, mean confidence and the
        mean fitted shift of the log-odds."""
        r = self.responses
        answered = r[r["decision"] != "abstain"]
        g = answered.groupby(["model", "probe"])
        out = pd.DataFrame({"answered": g.size(), "accuracy": g["correct"].mean(),
                            "mean_confidence": g["confidence"].mean()})
        out["abstained"] = r[r["decision"] == "abstain"].groupby(["model", "probe"]).size()
        out["abstained"] = out["abstained"].fillna(0).astype(int)
        out["mean_shift"] = self.shifts.groupby(["model", "probe"])["shift"].mean()
        out = out.reset_index()
        out.attrs["note"] = ("P(Yes) read as answer and confidence: the log-odds shifted by one "
                             "number per model and policy, fitted on the other items")
        return out


def _gold(df: pd.DataFrame) -> pd.Series:
    """1.0 where an item's right answer is "yes", 0.0 for "no", NaN where unknown: from a
    ``gold`` column, else from the rows that answered (the answer if correct, else the other)."""
    if "gold" in df.columns:
        g = df["gold"].astype(str).str.lower()
        return pd.Series(np.where(g == "yes", 1.0, np.where(g == "no", 0.0, np.nan)), index=df.index)
    d = df["decision"].astype(str).str.lower()
    c = pd.to_numeric(df["correct"], errors="coerce")
    row = np.where(d.isin(["yes", "no"]) & c.isin([0, 1]), ((d == "yes") == (c == 1)).astype(float), np.nan)
    per_item = pd.Series(row, index=df.index).groupby([df["model"], df["item_id"]]).transform("mean")
    return per_item.where(per_item.isin([0.0, 1.0]))  # an item whose rows disagree stays unknown


def _shift(z: np.ndarray, y: np.ndarray) -> float:
    """The b minimising the log-loss of sigmoid(z - b) against y."""
    def loss(b):
        q = np.clip(expit(z - b), 1e-12, 1 - 1e-12)
        return -np.mean(y * np.log(q) + (1 - y) * np.log(1 - q))
    return float(minimize_scalar(loss, bounds=(-30.0, 30.0), method="bounded",
                                 options={"xatol": 1e-8}).x)


def answers_from_p_yes(df: pd.DataFrame, *, folds: int = 2, seed: int = 0, label: str = LABEL) -> PYesAnswers:
    """Each model's P(Yes) as its answer and confidence, with one cross-fitted shift of the
    log-odds per model and probe (see the module text).

    ``df`` is a tidy response table with ``model``, ``item_id``, ``probe``, ``decision``,
    ``p_yes`` and ``correct`` (or ``gold``). Items are assigned to folds once per model (the same
    item is in the same fold under every probe), from ``seed``.

    Examples
    --------
    A model that leans to "Yes" (log-odds shifted by +1) but puts more on it for true items:

    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> true = rng.random(60) < 0.5
    >>> p_yes = 1 / (1 + np.exp(-(1.5 * np.where(true, 1, -1) + 1.0 + rng.normal(0, 1, 60))))
    >>> df = pd.DataFrame({"model": "m", "item_id": [f"i{i}" for i in range(60)], "probe": "c0",
    ...                    "decision": "yes", "p_yes": p_yes, "gold": np.where(true, "yes", "no")})
    >>> r = answers_from_p_yes(df)
    >>> r.summary()[["model", "answered", "accuracy", "mean_shift"]].round(2)
            model  answered  accuracy  mean_shift
    0  m · P(Yes)        60      0.92        1.17
    """
    need = {"model", "item_id", "probe", "decision", "p_yes"}
    missing = sorted(need - set(df.columns)) + ([] if {"correct", "gold"} & set(df.columns) else ["correct"])
    if missing:
        raise ValueError(f"answers_from_p_yes: the responses have no {', '.join(missing)} column; "
                         f"P(Yes) answers need {sorted(need)} and 'correct' or 'gold'.")
    if folds < 2:
        raise ValueError(f"answers_from_p_yes: folds must be at least 2 (a shift is fitted on the other "
                         f"folds), got {folds}.")
    df = df.reset_index(drop=True)
    t = df.assign(_y=_gold(df), _p=pd.to_numeric(df["p_yes"], errors="coerce").astype(float))
    verbal_abstain = t["decision"].astype(str).str.lower() == "abstain"
    rng = np.random.default_rng(seed)
    frames, shifts, dropped = [], [], 0
    for model, m in t.groupby("model", sort=True):
        ids = np.array(sorted(m["item_id"].astype(str).unique()))
        fold_of = dict(zip(ids, rng.permutation(len(ids)) % folds))
        fold = m["item_id"].astype(str).map(fold_of).to_numpy()
        for probe, rows in m.groupby("probe", sort=True):
            f = fold[m.index.get_indexer(rows.index)]
            usable = (rows["_p"].between(0, 1) & rows["_y"].notna() & ~verbal_abstain[rows.index]).to_numpy()
            z = logit(np.clip(rows["_p"].to_numpy(), 1e-6, 1 - 1e-6))
            y = rows["_y"].to_numpy()
            q = np.full(len(rows), np.nan)
            for k in range(folds):
                fit = usable & (f != k)
                if fit.sum() < MIN_FIT or len(np.unique(y[fit])) < 2:
                    continue
                b = _shift(z[fit], y[fit])
                shifts.append({"model": model + label, "probe": probe, "fold": k, "shift": b,
                               "n_fit": int(fit.sum())})
                q[usable & (f == k)] = expit(z[usable & (f == k)] - b)
            answer = np.isfinite(q)
            keep = answer | verbal_abstain[rows.index].to_numpy()
            dropped += int((~keep).sum())
            out = rows[keep].copy()
            qa, ya = q[keep], y[keep]
            yes = qa >= 0.5
            ans = np.isfinite(qa)
            out["decision"] = np.where(ans, np.where(yes, "yes", "no"), "abstain")
            out["confidence"] = np.where(ans, np.maximum(qa, 1 - qa), np.nan)
            out["p_yes"] = qa
            out["correct"] = np.where(ans, (yes == (ya == 1)).astype(float), np.nan)
            out["parse_status"] = np.where(ans, "ok", out["parse_status"] if "parse_status" in out else "ok")
            out["model"] = model + label
            frames.append(out)
    cols = [c for c in df.columns if c in ("raw_text", "reasoning_text")]
    responses = (pd.concat(frames, ignore_index=True) if frames else df.iloc[:0].copy())
    responses = responses.drop(columns=["_y", "_p"], errors="ignore").assign(**{c: None for c in cols})
    return PYesAnswers(responses, pd.DataFrame(shifts, columns=["model", "probe", "fold", "shift", "n_fit"]),
                       dropped)
