"""Policy-aware metrics for paper 2 (forced answer C0, cautious abstention C1, self-critique C2).

Input: a tidy table, one row per (model, item, policy), with columns

- ``item_id``; ``domain``; ``probe`` in {"c0", "c1", "c2"} (the policy; C0 is the baseline);
- ``decision`` in {"yes", "no", "abstain"};
- ``confidence``: the verbal P(correct) in [0, 1] (ignored, may be missing, on abstentions);
- ``gold`` ("yes"/"no") or ``correct`` (1/0 for answered rows). With only ``correct``, the
  gold label is derived from answered rows (gold = decision if correct else the other
  answer) and must agree across the item's rows;
- ``model`` (optional; one model assumed if absent).

This is the :mod:`metacog.tidy.schema` layout (``probe``, ``decision``, ``confidence``,
``correct``, ``domain``) plus an optional ``gold`` column.

Definitions (Okutomi 2026):
- ``p``: reported P(correct), 0.5 on abstention (the per-policy value whose spread H_proxy uses);
- ``p_tilde``: probability given to the label "yes": p if the answer is yes, 1 - p if no, 0.5 on
  abstention; policy-aware squared loss ``se = (p_tilde - y)^2`` with y = 1 for gold "yes"
  (an abstention always costs 0.25);
- CC / OCW: answered, confidence >= threshold (default 0.8), and correct / wrong;
- ``h_proxy`` per domain: mean over items of [std over policies of p + lam * OCW under C0].
"""

from __future__ import annotations

import numpy as np
import pandas as pd

POLICIES = ("c0", "c1", "c2")
DECISIONS = ("yes", "no", "abstain")


def policy_table(df: pd.DataFrame, threshold: float = 0.8) -> pd.DataFrame:
    """Validate the input table and add y, answered, correct, p, p_tilde, se, cc, ocw.

    >>> import pandas as pd
    >>> rows = pd.DataFrame({
    ...     "item_id": ["a", "a", "b", "b"], "domain": "geo", "probe": ["c0", "c1", "c0", "c1"],
    ...     "gold": ["yes", "yes", "no", "no"], "decision": ["yes", "yes", "yes", "abstain"],
    ...     "confidence": [0.9, 0.8, 0.95, None]})
    >>> policy_table(rows)[["item_id", "probe", "p_tilde", "se", "ocw"]]
      item_id probe  p_tilde      se    ocw
    0       a    c0     0.90  0.0100  False
    1       a    c1     0.80  0.0400  False
    2       b    c0     0.95  0.9025   True
    3       b    c1     0.50  0.2500  False

    ``p_tilde`` is the probability given to the gold label being yes (0.5 for an abstention), ``se``
    its squared error: the policy-aware Brier score of each row.
    """
    need = ["item_id", "domain", "probe", "decision", "confidence"]
    miss = [c for c in need if c not in df.columns]
    if miss:
        raise ValueError(f"policy_table: missing column(s) {miss}; need {need} plus 'gold' or 'correct'.")
    if "gold" not in df.columns and "correct" not in df.columns:
        raise ValueError("policy_table: need a 'gold' (yes/no) or a 'correct' (1/0) column.")
    out = df.copy()
    if "model" not in out.columns:
        out["model"] = "model"
    out["probe"] = out["probe"].astype(str).str.lower()
    out["decision"] = out["decision"].astype(str).str.lower()
    bad = ~out.probe.isin(POLICIES)
    if bad.any():
        raise ValueError(f"policy_table: probe must be one of {POLICIES}; row {out.index[bad][0]!r} has "
                         f"{out.probe[bad].iloc[0]!r}.")
    bad = ~out.decision.isin(DECISIONS)
    if bad.any():
        raise ValueError(f"policy_table: decision must be one of {DECISIONS}; row {out.index[bad][0]!r} has "
                         f"{out.decision[bad].iloc[0]!r}.")
    dup = out.duplicated(["model", "item_id", "probe"])
    if dup.any():
        r = out[dup].iloc[0]
        raise ValueError(f"policy_table: duplicate rows for model {r.model!r}, item {r.item_id!r}, probe {r.probe!r}.")
    answered = out.decision != "abstain"
    conf = pd.to_numeric(out.confidence, errors="coerce").astype(float)
    badc = answered & (conf.isna() | (conf < 0) | (conf > 1))
    if badc.any():
        raise ValueError(f"policy_table: answered rows need confidence in [0, 1]; row {out.index[badc][0]!r} has "
                         f"{out.confidence[badc].iloc[0]!r}.")
    if "gold" in out.columns:
        g = out["gold"].astype(str).str.lower()
        if not g.isin(("yes", "no")).all():
            raise ValueError(f"policy_table: gold must be 'yes' or 'no'; found {g[~g.isin(('yes', 'no'))].iloc[0]!r}.")
        y = (g == "yes").astype(float)
    else:
        c = pd.to_numeric(out["correct"], errors="coerce")
        if (answered & ~c.isin((0, 1))).any():
            raise ValueError("policy_table: answered rows need correct = 0 or 1 to derive the gold label.")
        yrow = np.where(answered, np.where(c == 1, out.decision == "yes", out.decision == "no"), np.nan).astype(float)
        tmp = pd.DataFrame({"model": out.model, "item_id": out.item_id, "y": yrow})
        agg = tmp.groupby(["model", "item_id"]).y.agg(["min", "max"])
        incons = agg["min"] != agg["max"]
        if incons.any():
            raise ValueError(f"policy_table: gold label derived from 'correct' disagrees across policies for "
                             f"item {incons[incons].index[0]!r}; pass a 'gold' column.")
        ymap = agg["min"]
        y = pd.Series(ymap.reindex(pd.MultiIndex.from_frame(out[["model", "item_id"]])).to_numpy(), index=out.index)
        if y.isna().any():
            raise ValueError(f"policy_table: item {out.item_id[y.isna()].iloc[0]!r} is never answered, so its gold "
                             f"label is unknown; pass a 'gold' column.")
    out["y"] = y.to_numpy()
    out["answered"] = answered
    is_yes = out.decision == "yes"
    out["correct"] = np.where(answered, (is_yes.astype(float) == out.y).astype(float), np.nan)
    out["p"] = np.where(answered, conf, 0.5)
    out["p_tilde"] = np.where(is_yes, conf, np.where(answered, 1.0 - conf, 0.5))
    out["se"] = (out.p_tilde - out.y) ** 2
    high = answered & (conf >= threshold)
    out["cc"] = high & (out.correct == 1)
    out["ocw"] = high & (out.correct == 0)
    return out


def policy_gains(df: pd.DataFrame, baseline: str = "c0") -> pd.DataFrame:
    """Per (model, domain, policy): mean policy-aware loss and the paired gain over the baseline.

    gain = mean over items present under both policies of (se_baseline - se_policy); positive
    means the policy lowers the loss. Also abstention rate and accuracy on answered items.

    >>> import pandas as pd
    >>> rows = pd.DataFrame({
    ...     "item_id": ["a", "a", "b", "b"], "domain": "geo", "probe": ["c0", "c1", "c0", "c1"],
    ...     "gold": ["yes", "yes", "no", "no"], "decision": ["yes", "yes", "yes", "abstain"],
    ...     "confidence": [0.9, 0.8, 0.95, None]})
    >>> policy_gains(rows)[["policy", "loss", "gain", "abstain_rate"]].round(3)
      policy   loss   gain  abstain_rate
    0     c0  0.456  0.000           0.0
    1     c1  0.145  0.311           0.5
    """
    t = df if "se" in df.columns else policy_table(df)
    wide = t.pivot_table(index=["model", "domain", "item_id"], columns="probe", values="se")
    if baseline not in wide.columns:
        raise ValueError(f"policy_gains: no rows for baseline policy {baseline!r}.")
    rows = []
    for (model, domain), g in wide.groupby(level=["model", "domain"]):
        for pol in [c for c in POLICIES if c in wide.columns]:
            pair = g[[baseline, pol]].dropna() if pol != baseline else g[[baseline]].dropna().assign(_b=g[baseline])
            pair.columns = [baseline, "_policy"] if pol != baseline else [baseline, "_policy"]
            sub = t[(t.model == model) & (t.domain == domain) & (t.probe == pol)]
            rows.append({"model": model, "domain": domain, "policy": pol, "n_items": len(pair),
                         "loss": g[pol].mean(), "gain": (pair[baseline] - pair["_policy"]).mean(),
                         "abstain_rate": 1.0 - sub.answered.mean(),
                         "accuracy_answered": sub.correct.mean()})
    return pd.DataFrame(rows)


def flag_counts(df: pd.DataFrame, threshold: float = 0.8) -> pd.DataFrame:
    """Counts of confident-correct (CC) and overconfident-wrong (OCW) rows per model, domain, policy."""
    t = policy_table(df, threshold) if "ocw" not in df.columns else df
    return (t.groupby(["model", "domain", "probe"])[["cc", "ocw", "answered"]].sum().astype(int)
            .rename(columns={"answered": "n_answered"}).reset_index())


def h_proxy(df: pd.DataFrame, lam: float = 1.0, threshold: float = 0.8, ddof: int = 0) -> pd.DataFrame:
    """H_proxy(d) = mean over items of [std_c(p_{i,c}) + lam * OCW_C0(i)], per model and domain.

    std is over the policies present for the item (population std, ``ddof=0``, by default);
    OCW_C0 = the C0 answer is wrong with confidence >= threshold.
    Returns model, domain, h_proxy, mean_std, ocw_rate, n_items.

    >>> import pandas as pd
    >>> rows = pd.DataFrame({
    ...     "item_id": ["a", "a", "b", "b"], "domain": "geo", "probe": ["c0", "c1", "c0", "c1"],
    ...     "gold": ["yes", "yes", "no", "no"], "decision": ["yes", "yes", "yes", "abstain"],
    ...     "confidence": [0.9, 0.8, 0.95, None]})
    >>> h_proxy(rows)[["domain", "h_proxy", "mean_std", "ocw_rate", "n_items"]].round(4)
      domain  h_proxy  mean_std  ocw_rate  n_items
    0    geo   0.6375    0.1375       0.5        2

    Item a: the spread of 0.9 and 0.8 is 0.05, no OCW; item b: the spread of 0.95 and 0.5
    (the abstention) is 0.225, plus 1 for its confident wrong C0 answer; the mean is 0.6375.
    """
    t = policy_table(df, threshold)
    p = t.pivot_table(index=["model", "domain", "item_id"], columns="probe", values="p")
    sd = p.std(axis=1, ddof=ddof)
    if "c0" not in p.columns:
        raise ValueError("h_proxy: no C0 rows; OCW is defined on the forced-answer baseline.")
    ocw = (t[t.probe == "c0"].set_index(["model", "domain", "item_id"]).ocw.astype(float)
           .reindex(p.index).fillna(0.0))
    item = pd.DataFrame({"std": sd, "ocw": ocw})
    item["h"] = item["std"] + lam * item["ocw"]
    g = item.groupby(level=["model", "domain"])
    return pd.DataFrame({"h_proxy": g.h.mean(), "mean_std": g["std"].mean(), "ocw_rate": g.ocw.mean(),
                         "n_items": g.size()}).reset_index()
