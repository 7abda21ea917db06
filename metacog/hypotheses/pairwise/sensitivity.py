"""The pairwise chapter's sensitivity check: every verdict of a panel re-decided without one model.

The data page notes a model whose recorded judgments run against its own correctness
(:data:`metacog.pages.data.BATTERY_ODD_MODEL`); a verdict it drives describes that record.
:func:`without_model` re-runs the self-against-other interval (the chapter's own
:func:`metacog.hypotheses.pairwise.bootstrap_taus`, same resamples and seed) and the internal
against population test on every panel that holds the model, with the model left out, and sets
each verdict beside the page's.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from metacog import stats

COLUMNS = ["panel", "test", "estimate_all", "verdict_all", "estimate_without", "verdict_without", "changes"]


def _self_other_rows(panel, *, unanimous_rule: str, n_boot: int, seed: int) -> pd.DataFrame:
    from metacog.hypotheses.common import panel_columns
    from metacog.hypotheses.pairwise import SUBSETS, bootstrap_taus
    from metacog.memo import memo

    C, Y = panel.confidence, panel.correct
    rows = []
    for subset in SUBSETS:
        if subset == "all items":
            Cs, Ys = C, Y
        else:
            un = stats.unanimous_items(C, Y, how=unanimous_rule).to_numpy()
            Cs, Ys = C[~un], Y[~un]
        row = {"subset": subset, "models": Cs.shape[1], "items": len(Cs)}
        if len(Cs) >= 10:
            b = memo(bootstrap_taus, Cs.to_numpy(), Ys.to_numpy(), n_boot=n_boot, seed=seed).set_index("statistic")
            row.update(self_minus_other=b.at["self minus other", "estimate"],
                       self_minus_other_ci_low=b.at["self minus other", "ci_low"],
                       self_minus_other_ci_high=b.at["self minus other", "ci_high"])
        rows.append({**row, **panel_columns(panel)})
    return pd.DataFrame(rows)


def _test(rest: str) -> str:
    """The test a verdict decides, from what its claim's head says after the panel's name."""
    subset = rest.lstrip(", ")
    return f"self minus other τ-b, {subset}" if subset else "internal against population AUROC"


def drop_model(panel, model: str):
    """``panel`` with ``model``'s column removed from its confidence and correctness tables."""
    keep = [m for m in panel.confidence.columns if m != model]
    out = copy.copy(panel)
    out.confidence, out.correct = panel.confidence[keep], panel.correct[keep]
    out.confidence_raw = panel.confidence_raw[keep]
    return out


def without_model(panelset, model: str, results: pd.DataFrame, internal: pd.DataFrame, *,
                  unanimous_rule: str = "either", n_boot: int = 200, seed: int = 0) -> pd.DataFrame:
    """For every panel of ``panelset`` that holds ``model`` (judgments about other people
    excepted), each of its verdicts on the page (``results`` from :func:`metacog.hypotheses.pairwise.table`,
    ``internal`` from :func:`metacog.hypotheses.pairwise.population.internal_population_table`)
    beside the same verdict with ``model`` left out: one row per (panel, test) with the columns of
    :data:`COLUMNS` (estimates as "estimate (95% CI ...)" text; ``changes`` True when the status
    differs). ``n_boot``, ``seed`` and ``unanimous_rule`` must be the page's, so the two intervals
    differ only by the model."""
    from metacog.hypotheses import pairwise as hp
    from metacog.hypotheses.pairwise import population as pp

    rows = []
    for p in panelset:
        if model not in p.models or pp.is_third_person(p):
            continue
        q = drop_model(p, model)
        before = hp.verdicts(results[results["panel"] == p.name])
        after = hp.verdicts(_self_other_rows(q, unanimous_rule=unanimous_rule, n_boot=n_boot, seed=seed))
        before += pp.verdicts(internal[internal["panel"] == p.name])
        after += pp.verdicts(pp.internal_population_table([q]))
        def key(v):
            return _test(v.claim.split(": ", 1)[0][len(p.name):])

        later = {key(v): v for v in after}
        for a in before:
            b = later.get(key(a))
            if b is None:
                continue
            rows.append({"panel": p.name, "test": key(a), "estimate_all": a.interval(), "verdict_all": a.status,
                         "estimate_without": b.interval(), "verdict_without": b.status,
                         "changes": a.status != b.status})
    return pd.DataFrame(rows, columns=COLUMNS)


def display(table: pd.DataFrame, model: str) -> pd.DataFrame:
    """:func:`without_model` for a page, headers naming the model left out."""
    return table.rename(columns={"estimate_all": "estimate, all models", "verdict_all": "verdict, all models",
                                 "estimate_without": f"estimate without {model}",
                                 "verdict_without": f"verdict without {model}",
                                 "changes": "verdict changes"}).assign(
        **{"verdict changes": np.where(table["changes"].astype(bool), "yes", "no")})


def sentence(table: pd.DataFrame, model: str) -> str:
    """Per panel, whether each verdict changes without ``model``, every test named."""
    from metacog.tidy.phrasing import join

    if table is None or not len(table):
        return f"No panel of this run holds {model}, so there is nothing to leave out."
    out = [f"The table re-decides every verdict of each panel that holds {model} "
           f"({join(list(dict.fromkeys(table['panel'])))}) with it left out, on the page's resamples and seed; "
           f"the verdict table above says in each such row whether its verdict changes."]
    for panel, g in table.groupby("panel", sort=False):
        same = g[~g["changes"].astype(bool)]
        moved = g[g["changes"].astype(bool)]
        parts = []
        if len(same):
            parts.append(("every verdict is unchanged" if not len(moved) else
                          f"the verdict is unchanged for {join(list(same['test']))}"))
        for r in moved.to_dict("records"):
            parts.append(f"{r['test']} changes from {r['verdict_all']} to {r['verdict_without']}")
        out.append(f"In {panel} without {model}, " + "; ".join(parts) + ".")
    return " ".join(out)


def annotate(verdicts: list, table: pd.DataFrame, model: str) -> list:
    """``verdicts`` with the sensitivity check in the reason of every verdict it re-decided:
    "without <model> it reads <status>" where the status changes, "unchanged without <model>"
    where it does not. Verdicts the check did not cover come back as they are."""
    from dataclasses import replace

    if table is None or not len(table):
        return list(verdicts)
    rows = table.to_dict("records")
    out = []
    for v in verdicts:
        head = v.claim.split(": ", 1)[0]
        r = next((r for r in rows if head.startswith(r["panel"]) and _test(head[len(r["panel"]):]) == r["test"]
                  and r["verdict_all"] == v.status), None)
        if r is None:
            out.append(v)
            continue
        note = (f"without {model} it reads {r['verdict_without']} ({r['estimate_without']}; see 'Without one model')"
                if r["changes"] else f"unchanged without {model}")
        out.append(replace(v, reason=f"{v.reason}; {note}"))
    return out
