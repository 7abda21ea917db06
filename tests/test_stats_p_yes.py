"""P(Yes) read as answer and confidence: one cross-fitted shift of the log-odds, nothing else."""

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from metacog.stats.calibration import auroc
from metacog.stats.p_yes import LABEL, answers_from_p_yes


def planted(n=400, knows=2.0, bias=3.0, seed=0, probes=("c0", "c1")):
    """A model that says "yes" to everything, but puts more P(Yes) on the true items."""
    rng = np.random.default_rng(seed)
    gold = rng.random(n) < 0.5
    rows = []
    for probe in probes:
        z = bias + knows * (2 * gold - 1) + rng.normal(0, 1, n)
        rows.append(pd.DataFrame({"model": "m", "item_id": [f"i{k}" for k in range(n)], "probe": probe,
                                  "decision": "yes", "confidence": 0.9, "p_yes": expit(z),
                                  "correct": gold.astype(float)}))
    return pd.concat(rows, ignore_index=True), gold


def test_a_yes_sayer_with_knowledge_answers_above_chance_and_its_confidence_ranks():
    df, gold = planted()
    assert df["correct"].mean() == pytest.approx(gold.mean())  # the verbal answer is the base rate
    r = answers_from_p_yes(df)
    out = r.responses
    assert set(out["model"]) == {"m" + LABEL} and len(out) == len(df) and r.dropped == 0
    assert out["correct"].mean() > 0.8
    assert auroc(out["correct"], out["confidence"]) > 0.6
    assert (out["confidence"] >= 0.5).all() and set(out["decision"]) == {"yes", "no"}
    assert r.shifts["shift"].between(2.0, 4.0).all()  # it finds the planted bias of 3


def test_only_the_shift_is_fitted_the_slope_is_the_models_own():
    df, _ = planted(n=200)
    out = answers_from_p_yes(df).responses.merge(df[["item_id", "probe", "p_yes"]], on=["item_id", "probe"],
                                                 suffixes=("", "_model"))
    diff = np.round(logit(out["p_yes_model"]) - logit(out["p_yes"]), 9)
    # per probe, every item's log-odds moved by one of the two folds' shifts, and nothing else
    assert diff.groupby(out["probe"]).nunique().tolist() == [2, 2]


def test_the_shift_of_a_fold_never_sees_that_folds_labels():
    df, _ = planted(n=300, seed=1)
    first = answers_from_p_yes(df, seed=5)
    fold0 = first.shifts.query("probe == 'c0' and fold == 0")["shift"].item()
    # flip the labels of the items scored with fold 0's shift: the shift those items get stays
    scored = first.responses.query("probe == 'c0'")
    q = scored.merge(df.query("probe == 'c0'")[["item_id", "p_yes"]], on="item_id", suffixes=("", "_m"))
    in_fold0 = q.loc[np.isclose(logit(q["p_yes_m"].clip(1e-6, 1 - 1e-6)) - logit(q["p_yes"]), fold0), "item_id"]
    assert 100 < len(in_fold0) < 200
    flipped = df.copy()
    hit = flipped["item_id"].isin(in_fold0)
    flipped.loc[hit, "correct"] = 1 - flipped.loc[hit, "correct"]
    again = answers_from_p_yes(flipped, seed=5)
    assert again.shifts.query("probe == 'c0' and fold == 0")["shift"].item() == pytest.approx(fold0)
    assert again.shifts.query("probe == 'c0' and fold == 1")["shift"].item() != pytest.approx(
        first.shifts.query("probe == 'c0' and fold == 1")["shift"].item())


def test_random_p_yes_stays_at_chance_and_abstentions_stay():
    rng = np.random.default_rng(3)
    df, gold = planted(n=600, knows=0.0, seed=3)
    df.loc[:9, "decision"] = "abstain"
    df.loc[:9, "p_yes"] = np.nan
    r = answers_from_p_yes(df)
    out = r.responses
    assert (out.loc[out["item_id"].isin([f"i{k}" for k in range(10)]) & (out["probe"] == "c0"),
                    "decision"] == "abstain").all()
    answered = out[out["decision"] != "abstain"]
    assert abs(answered["correct"].mean() - 0.5) < 0.07
    s = r.summary().set_index("probe")
    assert s.loc["c0", "abstained"] == 10 and s.loc["c1", "abstained"] == 0


def test_missing_columns_are_named():
    df, _ = planted(n=20)
    with pytest.raises(ValueError, match="no p_yes column"):
        answers_from_p_yes(df.drop(columns="p_yes"))
    with pytest.raises(ValueError, match="folds must be at least 2"):
        answers_from_p_yes(df, folds=1)
