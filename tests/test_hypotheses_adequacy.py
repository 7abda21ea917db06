"""The adequacy gate on planted yes/no, multiple-choice and judgment tables."""

import numpy as np
import pandas as pd
import pytest

from metacog.hypotheses.adequacy import adequacy, judgment_gate, signal_models
from metacog.stats.intervals import proportion_ci


def yes_no(model, truth_yes, correct, probe="answer", sample=0):
    """Rows of one model on yes/no items: the decision follows from truth and correctness."""
    truth_yes = np.asarray(truth_yes, bool)
    correct = np.asarray(correct, bool)
    said_yes = np.where(correct, truth_yes, ~truth_yes)
    return pd.DataFrame({"model": model, "item_id": [f"i{i}" for i in range(truth_yes.size)],
                         "probe": probe, "sample": sample,
                         "decision": np.where(said_yes, "yes", "no"),
                         "confidence": 1.0, "correct": correct.astype(float)})


def test_planted_knower_passes_and_guesser_fails():
    rng = np.random.default_rng(0)
    truth = rng.random(200) < 0.5
    df = pd.concat([yes_no("knower", truth, rng.random(200) < 0.8),
                    yes_no("guesser", truth, rng.random(200) < 0.5)])
    a = adequacy(df).set_index("model")
    assert a.loc["knower", "carries_signal"] and not a.loc["guesser", "carries_signal"]
    assert a.loc["knower", "chance"] == 0.5 and a.loc["knower", "chance_basis"] == "yes/no items"
    assert a.loc["knower", "p_value"] < 1e-10 and a.loc["guesser", "p_value"] > 0.05
    assert a.loc["guesser", "reason"].startswith("accuracy 0.")
    assert "is not above" in a.loc["guesser", "reason"] and "always answering" in a.loc["guesser", "reason"]
    assert signal_models(df) == ["knower"]


def test_majority_baseline_beats_chance_for_always_yes():
    truth = np.r_[np.ones(80, bool), np.zeros(20, bool)]
    always_yes = truth.copy()  # correct exactly where the truth is yes
    a = adequacy(yes_no("yes-sayer", truth, always_yes)).iloc[0]
    assert a["accuracy"] == 0.8 and a["baseline"] == pytest.approx(0.8)
    assert a["baseline_what"] == "always answering Yes"
    assert not a["carries_signal"]
    assert "the 0.80 you get by always answering Yes" in a["reason"]
    from scipy.stats import binom

    assert a["p_value"] == pytest.approx(binom.sf(79, 100, 0.8))


def test_exact_interval_and_counts():
    truth = np.r_[np.ones(10, bool), np.zeros(10, bool)]
    correct = np.r_[np.ones(7, bool), np.zeros(13, bool)]
    a = adequacy(yes_no("m", truth, correct)).iloc[0]
    assert (a["items"], a["n_correct"]) == (20, 7)
    assert (a["ci_low"], a["ci_high"]) == pytest.approx(proportion_ci(7, 20, method="exact"))
    assert (a["ci_low"], a["ci_high"]) == pytest.approx((0.15391, 0.59219), abs=1e-4)


def test_too_few_items_fail_with_the_threshold():
    df = yes_no("m", np.arange(10) % 2 == 0, np.ones(10, bool))  # 10 of 10 right, balanced labels
    a = adequacy(df).iloc[0]
    assert not a["carries_signal"]
    assert a["reason"] == "only 10 items with a known outcome; at least 20 are needed"
    assert adequacy(df, min_items=5).iloc[0]["carries_signal"]


def test_chance_from_an_option_count_column_and_given():
    rng = np.random.default_rng(1)
    n = 300
    rows = []
    for model, p in (("guess", 0.25), ("good", 0.45)):
        rows.append(pd.DataFrame({"model": model, "item_id": np.arange(n).astype(str), "probe": "answer",
                                  "decision": "A", "correct": (rng.random(n) < p).astype(float),
                                  "n_options": 4}))
    df = pd.concat(rows)
    a = adequacy(df).set_index("model")
    assert a.loc["guess", "chance"] == 0.25 and a.loc["guess", "chance_basis"] == "1 in 4 options"
    assert not a.loc["guess", "carries_signal"] and a.loc["good", "carries_signal"]
    assert np.isnan(a.loc["good", "baseline"])  # letters: the true labels are unknown
    b = adequacy(df.drop(columns="n_options"), chance={"guess": 0.1, "good": 0.5}).set_index("model")
    assert b.loc["guess", "carries_signal"] and not b.loc["good", "carries_signal"]
    with pytest.raises(ValueError, match="no entry for model 'good'"):
        adequacy(df, chance={"guess": 0.1})
    bad = df.assign(n_options=0)
    with pytest.raises(ValueError, match="'n_options'.*number of options"):
        adequacy(bad)


def test_free_answers_are_ungated_against_chance_and_say_so():
    df = pd.DataFrame({"model": "m", "item_id": [str(i) for i in range(30)], "probe": "answer",
                       "decision": "Paris", "correct": [1.0] * 12 + [0.0] * 18})
    a = adequacy(df).iloc[0]
    assert np.isnan(a["chance"]) and not a["chance_known"] and np.isnan(a["p_value"])
    assert a["chance_basis"] == "free answers: no chance level known"
    assert a["carries_signal"] and a["failed"] == ""  # passes on the count rules only ...
    assert a["reason"].startswith("ungated against chance")  # ... and says so
    assert "only the count rules apply" in a["reason"]


def test_judgment_probe_is_gated_on_the_attempt_that_produced_correct():
    rng = np.random.default_rng(2)
    truth = rng.random(100) < 0.5
    correct = rng.random(100) < 0.5  # a guesser on yes/no items
    nc = yes_no("m", truth, correct, probe="answer_no_context")
    judg = nc.assign(probe="prospective", decision="yes")  # correct copied from the attempt
    df = pd.concat([nc, judg])
    a = adequacy(df, probe="prospective").iloc[0]
    assert a["probe"] == "prospective" and a["scored_from"] == "answer_no_context"
    assert a["chance_basis"] == "yes/no items" and not a["carries_signal"]
    assert adequacy(df).iloc[0]["scored_from"] == "answer_no_context"  # the default pick
    # without the attempt rows the judgment's own Yes is never read as an answer
    alone = adequacy(judg).iloc[0]
    assert alone["scored_from"] == "prospective" and not alone["chance_known"]
    assert np.isnan(alone["parse_rate"])  # the judgment's parse says nothing of the attempt


def test_only_the_first_sample_counts():
    truth = np.ones(40, bool)
    df = pd.concat([yes_no("m", truth, np.ones(40, bool), sample=0),
                    yes_no("m", truth, np.zeros(40, bool), sample=1)])
    a = adequacy(df).iloc[0]
    assert a["items"] == 40 and a["accuracy"] == 1.0


def test_unclear_probe_and_missing_columns_are_clear_errors():
    df = pd.concat([yes_no("m", np.ones(30, bool), np.ones(30, bool), probe="c0"),
                    yes_no("m", np.ones(30, bool), np.ones(30, bool), probe="c1")])
    with pytest.raises(ValueError, match=r"several probes \['c0', 'c1'\].*pass probe="):
        adequacy(df)
    assert adequacy(df, probe="c1").iloc[0]["probe"] == "c1"
    with pytest.raises(ValueError, match="probe 'answer' is not in the table"):
        adequacy(df, probe="answer")
    with pytest.raises(ValueError, match=r"no column\(s\) \['correct'\]"):
        adequacy(df.drop(columns="correct"))


def test_judgment_gate_flags_constant_and_nearly_constant_judgments():
    n = 40
    rows = pd.concat([
        pd.DataFrame({"model": "always", "item_id": range(n), "probe": "prospective", "decision": "yes"}),
        pd.DataFrame({"model": "nearly", "item_id": range(n), "probe": "prospective",
                      "decision": ["no"] * 3 + ["yes"] * (n - 3)}),
        pd.DataFrame({"model": "mixed", "item_id": range(n), "probe": "prospective",
                      "decision": ["no"] * 15 + ["yes"] * (n - 15)}),
        pd.DataFrame({"model": "by_conf", "item_id": range(n), "probe": "prospective",
                      "decision": None, "confidence": [0.0] * 20 + [1.0] * 20}),
    ], ignore_index=True)
    g = judgment_gate(rows).set_index("model")
    assert g.loc["always", "constant"] and not g.loc["always", "usable"]
    assert g.loc["always", "reason"].startswith("always Yes (40 of 40)")
    assert g.loc["nearly", "nearly_constant"] and not g.loc["nearly", "constant"]
    assert "fewer than 5 No" in g.loc["nearly", "reason"]
    assert g.loc["mixed", "usable"] and g.loc["mixed", "share_yes"] == pytest.approx(25 / 40)
    assert (g.loc["by_conf", "n_yes"], g.loc["by_conf", "n_no"]) == (20, 20)
    assert judgment_gate(rows, min_each=2).set_index("model").loc["nearly", "usable"]
    with pytest.raises(ValueError, match="probe 'counterfactual' is not in the table"):
        judgment_gate(rows, probe="counterfactual")
