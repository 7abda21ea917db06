"""Placement of one new model among the calibration study's panel (metacog place, pages.place).

The protocol's parsers and prompt; a model answering at random is called at chance; a planted
model whose confidence carries its own correctness beyond the population has internal >
population with an interval above 0; the rank and recalibration numbers are those of their
definitions.
"""

import numpy as np
import pandas as pd
import pytest

from metacog.elicit.protocols import calibration_study as cs
from metacog.pages import place
from metacog.pages.place.stats import holm, metric_ranks, minimum_detectable, panel_mean_diff, recalibrate


# ---- the protocol ------------------------------------------------------------------------------

def test_prompt_is_the_studys_sampling_template_with_lettered_options():
    msgs = cs.protocol().messages("Which is largest?", ["one", "N/A", "three", "two"])
    assert msgs[0] == {"role": "system", "content": "You are a helpful assistant."}
    user = msgs[1]["content"]
    assert user.startswith("Read the question, analyze step by step")
    assert "convey this uncertainty linguistically" in user  # the sampling prompt, not verbal_numerical
    assert "where the LETTER is one of A,B,C]" in user
    assert user.endswith("Which is largest?\nA) one\nB) three\nC) two\n")  # N/A dropped, as upstream
    assert "linguistically" not in cs.format_question("q", ["x", "y"], cs.VERBAL_NUMERICAL_TEMPLATE)


@pytest.mark.parametrize("reply, letter, conf", [
    ("Explanation: because.\n\nAnswer: C\n\nConfidence (0-100): 85%", "C", 0.85),
    ("Explanation: x\nAnswer: **H**\nConfidence (0-100): 40%", "H", 0.40),
    ("The answer is (G). Confidence: 70", "G", 0.70),
    ("Answer: B\n\nConfidence (80):", "B", 0.80),
    ("I cannot tell.", None, None),
    ("Answer: A\nConfidence: 683", "A", 683.0),  # out of range: returned raw, as upstream
    # upstream's quirk, kept: 683 is out of range, so its last pattern reads the "0" of "(0-100)"
    ("Answer: A\nConfidence (0-100): 683%", "A", 0.0),
])
def test_parsers(reply, letter, conf):
    assert cs.extract_answer(reply) == letter
    got = cs.extract_verbal_confidence(reply)
    assert (got is None and conf is None) or got == pytest.approx(conf)


@pytest.mark.parametrize("reply, reasoning", [
    ("Explanation: because of X.\n\nAnswer: C\n\nConfidence (0-100): 85%", "because of X."),
    ("Step one.\nStep two: answer is near 4.\n**Answer:** B\nconfidence: 40",
     "Step one.\nStep two: answer is near 4."),
    ("Explanation: cut before it answered", "cut before it answered"),
    ("Explanation: it is the cortex. Answer: E Confidence (0-100): 80%", "it is the cortex."),
    ("Explanation: the answer: maybe C.\nMore reasoning.\nAnswer: C\nConfidence: 70", "the answer: maybe C.\nMore reasoning."),
    ("", ""),
])
def test_the_reasoning_part_leaves_out_the_stated_answer_and_confidence(reply, reasoning):
    got = cs.reasoning_part(reply)
    assert got == reasoning
    assert cs.extract_verbal_confidence(got) is None  # a probe on it cannot read the stated number
    assert cs.reasoning_part(None) is None


def test_logit_confidence_is_the_mean_token_probability():
    assert cs.logit_confidence([np.log(0.5), np.log(1.0), None]) == pytest.approx(0.75)
    assert cs.logit_confidence([]) is None and cs.logit_confidence(None) is None


# ---- the statistics -------------------------------------------------------------------------------

def test_metric_ranks_match_definitions_and_rank_the_best_first():
    from metacog.stats.calibration import auroc, brier, ece, smooth_ece

    rng = np.random.default_rng(3)
    C = rng.random((150, 4))
    Y = (rng.random((150, 4)) < C).astype(float)
    C[:, 3] = 0.5 + 0.01 * rng.random(150)  # an uninformative model
    t = metric_ranks(pd.DataFrame(C), pd.DataFrame(Y), n_boot=50)
    got = t.set_index(["model", "metric"])["value"]
    for j in range(4):
        assert got[(j, "auroc")] == pytest.approx(auroc(Y[:, j], C[:, j]))
        assert got[(j, "ece")] == pytest.approx(ece(Y[:, j], C[:, j]).ece)
        assert got[(j, "brier")] == pytest.approx(brier(Y[:, j], C[:, j]).brier)
        assert got[(j, "smece")] == pytest.approx(smooth_ece(Y[:, j], C[:, j]), abs=1e-9)
    a = t[t["metric"] == "auroc"].set_index("model")
    assert a.loc[3, "rank"] == 4 and (a["rank_ci_low"] <= a["rank"]).all() and (a["rank"] <= a["rank_ci_high"]).all()


def test_recalibration_lowers_ece_of_an_overconfident_model():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.2, 0.8, 600)
    y = (rng.random(600) < p).astype(float)
    stated = np.clip(p + 0.2, 0, 1)  # says 20 points more than it gets right
    t = recalibrate(stated, y).set_index("method")
    assert t.loc["Platt", "ece"] < t.loc["as stated", "ece"] / 2
    assert t.loc["isotonic", "ece"] < t.loc["as stated", "ece"] / 2
    assert t.loc["as stated", "smece"] == pytest.approx(0.2, abs=0.03)  # off by 0.2 everywhere
    assert t.loc["Platt", "smece"] < t.loc["as stated", "smece"] / 2
    assert (t["n_items"] == 600).all()


def test_smooth_ece_ranks_lower_as_better_with_rank_intervals():
    rng = np.random.default_rng(8)
    p = rng.uniform(0.2, 0.8, (300, 1))
    Y = (rng.random((300, 3)) < p).astype(float)
    C = np.hstack([p, np.clip(p + 0.1, 0, 1), np.clip(p + 0.3, 0, 1)])  # calibrated, off by .1, by .3
    t = metric_ranks(pd.DataFrame(C, columns=list("abc")), pd.DataFrame(Y, columns=list("abc")), n_boot=100)
    s = t[t["metric"] == "smece"].set_index("model")
    assert list(s["rank"]) == [1.0, 2.0, 3.0]
    assert s.loc["c", "rank_ci_low"] == 3 and s.loc["a", "rank_ci_high"] <= 2
    assert s.loc["c", "value"] == pytest.approx(0.3, abs=0.05)


# ---- placement against the real panel -------------------------------------------------------------

def _items(n, seed=0):
    from metacog.elicit.protocols.ask import panel_items

    return panel_items(n, seed)


def _tidy(items, decision_correct, confidence, name="openai/planted"):
    rows = pd.DataFrame({"model": name, "item_id": items["item_id"], "category": items["category"],
                         "decision": "A", "key": items["key"], "correct": decision_correct,
                         "verbal_confidence": confidence, "logit_confidence": np.nan,
                         "parse_status": "ok"})
    return place.to_tidy(rows.assign(finish_reason="stop", completion_tokens=10, seconds=0.1))


@pytest.mark.slow
def test_a_model_answering_at_random_is_called_at_chance(mirror):
    items = _items(150, seed=1)
    rng = np.random.default_rng(1)
    k = items["item_id"].map(place.n_options())
    correct = (rng.random(len(items)) < 1 / k.to_numpy()).astype(float)
    r = place.place(_tidy(items, correct, rng.random(len(items))), n_boot=20)
    assert r.gate["status"] in ("at chance", "too few correct")
    assert r.verdict.status == "insufficient evidence"
    assert r.gate["status"] in place.headline_sentence(r)
    assert len(r.population) == 84 and r.population["new"].sum() == 1  # 83 panel models + the new one


def test_planted_individual_signal_shows_internal_above_population(mirror):
    items = _items(400, seed=2)
    conf, corr = place.panel_tables(items["item_id"], "verbal_confidence")
    population = conf.mean(axis=1).reindex(items["item_id"]).to_numpy()
    rng = np.random.default_rng(2)
    # correctness follows the population's view of the item, plus the model's own luck, which
    # only its own confidence knows about
    own = rng.normal(size=len(items))
    z = 3 * (np.nan_to_num(population, nan=0.7) - 0.7) + own
    correct = (z > np.quantile(z, 0.5)).astype(float)
    planted = 1 / (1 + np.exp(-(3 * (np.nan_to_num(population, nan=0.7) - 0.7) + 1.5 * own)))
    r = place.place(_tidy(items, correct, planted), n_boot=20)
    h = r.headline
    assert h["auroc_internal"] > h["auroc_population"] and h["ci_low"] > 0
    assert r.gate["status"] == "adequate" and r.verdict.status == "supported"
    ax = r.axis.set_index("model")
    assert ax["new"].sum() == 1 and len(ax) > 60  # the newcomer is placed on the panel's axis
    assert ax.loc[ax["new"], "loading"].iloc[0] > 0  # it follows the population's confidence
    assert "shared confidence axis (the first factor" in place.axis_sentence(r)
    # a model that reads off only the population's confidence does not beat it
    r0 = place.place(_tidy(items, correct, np.nan_to_num(population, nan=0.7)), n_boot=20)
    assert r0.headline["ci_low"] <= 0 and r0.verdict.status != "supported"


def test_reply_counts_partition_the_replies_when_a_cut_reply_still_answers():
    # 5 finished and parsed, 1 finished unparsed, 2 cut but parsed (answer and confidence came
    # before the cap), 3 cut and unparsed: 11 replies. The old sentence counted 'parsed' (7) and
    # 'cut' (5) separately, 12 > 11.
    status = ["ok"] * 5 + ["unparseable"] + ["ok"] * 2 + ["unparseable"] * 3
    finish = ["stop"] * 6 + ["length"] * 5
    conf = [0.8 if s == "ok" else np.nan for s in status]
    rows = []
    for probe in ("verbal_confidence", "logit_confidence"):
        rows += [{"model": "m", "item_id": str(i), "probe": probe, "parse_status": s,
                  "finish_reason": f, "confidence": c} for i, (s, f, c) in enumerate(zip(status, finish, conf))]
    c = place.reply_counts(pd.DataFrame(rows))
    assert c == {"n": 11, "finished_usable": 5, "finished_unusable": 1, "cut_usable": 2, "cut_unusable": 3}
    s = place.replies_sentence(pd.DataFrame(rows))
    assert s.startswith("The replies were asked with a cap of 1024 tokens (the study's own). Of 11 replies, "
                        "5 finished and gave both")
    assert "(the study asked with 1024)" in place.replies_sentence(pd.DataFrame(rows), 256)
    assert "missing, not wrong" in s
    assert "1 finished without both" in s
    assert "5 were cut at the reply-length cap before finishing, of which 2 still gave both" in s
    assert "3 did not" in s


# ---- truncation, multiplicity, power, recalibration's direction -----------------------------------

def _four_replies():
    """One reply of each kind, on both probes: finished and parsed (right), finished without an
    answer (wrong, as in the study), cut after answering (parsed, wrong), cut before answering."""
    kinds = [("stop", "ok", 1.0, 0.9, 0.8), ("stop", "unparseable", 0.0, 0.7, 0.6),
             ("length", "ok", 0.0, 0.6, 0.5), ("length", "unparseable", 0.0, None, 0.4)]
    rows = []
    for i, (finish, status, right, verbal, logit) in enumerate(kinds):
        for probe, conf in (("verbal_confidence", verbal), ("logit_confidence", logit)):
            rows.append({"model": "m", "item_id": str(i), "probe": probe, "finish_reason": finish,
                         "parse_status": status, "correct": right,
                         "confidence": np.nan if conf is None else conf})
    return pd.DataFrame(rows)


def test_a_reply_cut_before_answering_is_missing_in_the_headline_and_wrong_in_the_sensitivity_row():
    df = _four_replies()
    assert list(place.cut_unanswered(df)) == [False, False, False, False, False, False, True, True]
    miss = place.score_truncated(df, "missing").set_index(["item_id", "probe"])
    assert miss.loc[("3", "verbal_confidence"), ["correct", "confidence"]].isna().all()
    assert miss.loc[("3", "logit_confidence"), ["correct", "confidence"]].isna().all()
    # the others are scored as they stand: the finished reply without an answer stays wrong,
    # the reply cut after answering keeps its answer and its confidence
    assert miss.loc[("1", "verbal_confidence"), "correct"] == 0
    assert miss.loc[("2", "verbal_confidence"), "confidence"] == 0.6
    wrong = place.score_truncated(df, "wrong").set_index(["item_id", "probe"])
    assert wrong.loc[("3", "verbal_confidence"), "correct"] == 0
    assert wrong.loc[("3", "verbal_confidence"), "confidence"] == 0.0  # stated none: the lowest
    assert wrong.loc[("3", "logit_confidence"), "confidence"] == 0.4  # its own token probability
    assert df["correct"].sum() == 2 and df.loc[6, "correct"] == 0.0 and df["confidence"].isna().sum() == 1  # input unchanged
    with pytest.raises(ValueError, match="how='drop'"):
        place.score_truncated(df, "drop")


def test_holm_on_a_constructed_family():
    t = holm([0.001, 0.01, 0.02, 0.04, 0.5])
    # sorted p times (m, m-1, ...): 0.005, 0.04, 0.06, 0.08, 0.5 (monotone already)
    assert np.allclose(t["p_holm"], [0.005, 0.04, 0.06, 0.08, 0.5])
    assert list(t["reject"]) == [True, True, False, False, False]  # 4 of 5 are below 0.05 uncorrected
    # order of the input is kept, the adjustment made monotone, capped at 1; NaN is no member
    t = holm([0.04, np.nan, 0.03, 0.9, 0.6])
    assert np.allclose(t["p_holm"], [0.12, np.nan, 0.12, 1.0, 1.0], equal_nan=True)
    assert not t["reject"].any() and not t.loc[1, "reject"]
    t = holm([0.01, np.nan, 0.02])  # a family of 2: 0.02, 0.02
    assert np.allclose(t["p_holm"], [0.02, np.nan, 0.02], equal_nan=True) and t["reject"].sum() == 2
    from pingouin import multicomp

    p = np.random.default_rng(4).uniform(0, 0.2, 30)
    assert np.allclose(holm(p)["p_holm"], multicomp(p, method="holm")[1])


def test_minimum_detectable_difference_has_the_stated_power():
    from scipy import stats as sps

    se = 0.068
    d = minimum_detectable(se)
    # a true difference d puts the 95% interval above 0 with probability 0.8
    assert sps.norm.sf(sps.norm.ppf(0.975) - d / se) == pytest.approx(0.8)
    assert d == pytest.approx(2.8016 * se, rel=1e-4)
    assert minimum_detectable(se, power=0.9) > d and np.isnan(minimum_detectable(0.0))


def test_panel_mean_difference_is_the_mean_of_the_models_rows_with_a_bootstrap_interval():
    from metacog.stats.population import internal_population

    rng = np.random.default_rng(5)
    hard = rng.normal(size=(200, 1))
    Y = (rng.normal(size=(200, 12)) + 1.5 * hard > 0).astype(float)
    C = pd.DataFrame(1 / (1 + np.exp(-(1.5 * hard + rng.normal(size=(200, 12))))))
    C[0] = 1 / (1 + np.exp(-(2 * Y[:, 0] - 1 + rng.normal(size=200))))  # one model knows itself
    Y = pd.DataFrame(Y)
    rows = internal_population(C, Y).set_index("model")
    picked = list(range(12))
    m = panel_mean_diff(C, Y, picked, n_boot=200)
    assert m["mean"] == pytest.approx(rows.loc[picked, "diff"].mean())
    assert m["ci_low"] < m["mean"] < m["ci_high"] and m["n_models"] == 12
    # dropping the one self-knowing model moves the mean down
    m2 = panel_mean_diff(C, Y, picked[1:], n_boot=200)
    assert m2["mean"] < m["mean"]


def test_a_decreasing_platt_map_is_flagged_and_explained():
    from types import SimpleNamespace

    rng = np.random.default_rng(6)
    c = rng.uniform(0.1, 0.9, 400)
    y = (rng.random(400) < 1 - c).astype(float)  # surer means more often wrong
    t = recalibrate(c, y)
    tt = t.set_index("method")
    assert tt.loc["Platt", "decreasing"] == 2 and (tt.loc["Platt", ["slope_1", "slope_2"]] < 0).all()
    # the decreasing map reverses the order; the isotonic (increasing) map cannot
    assert tt.loc["as stated", "auroc"] < 0.4 and tt.loc["Platt", "auroc"] > 0.6
    assert tt.loc["isotonic", "auroc"] <= 0.5 + 1e-9
    s = place.recalibration_sentence(SimpleNamespace(recalibration=t))
    assert "negative on 2 of the 2 halves" in s and "reverses the order" in s
    rng = np.random.default_rng(7)
    y = (rng.random(400) < c).astype(float)
    s = place.recalibration_sentence(SimpleNamespace(recalibration=recalibrate(c, y)))
    assert "positive on both halves" in s and "negative" not in s


def test_cut_replies_are_missing_in_the_headline_and_the_panel_claim_is_holm_corrected(mirror):
    items = _items(300, seed=4)
    rng = np.random.default_rng(4)
    correct = (rng.random(len(items)) < 0.5).astype(float)
    conf = np.clip(0.3 + 0.4 * correct + rng.normal(0, 0.2, len(items)), 0.01, 0.99)
    tidy = _tidy(items, correct, conf)
    cut_items = set(items["item_id"].iloc[:60])  # 60 replies cut before answering
    cut = tidy["item_id"].isin(cut_items)
    tidy.loc[cut, "finish_reason"] = "length"
    tidy.loc[cut, "parse_status"] = "unparseable"
    tidy.loc[cut & (tidy["probe"] == "verbal_confidence"), "confidence"] = np.nan
    tidy.loc[cut, "correct"] = 0.0  # as the asker scores a reply without an answer
    r = place.place(tidy, n_boot=50)
    h = r.headline
    kept = ~items["item_id"].isin(cut_items)
    assert r.n_asked == 300 and r.n_cut == 60
    assert h["n_items"] == 240 and h["n_correct"] == int(correct[kept.to_numpy()].sum())
    t = r.truncation.set_index("cut replies")
    assert t.loc["missing", "n_items"] == 240 and t.loc["wrong", "n_items"] == 300
    assert t.loc["wrong", "n_correct"] == t.loc["missing", "n_correct"]
    assert t.loc["wrong", "accuracy"] == pytest.approx(h["n_correct"] / 300)
    # one denominator: the rank table's accuracy and the recalibration's are the headline's
    acc = r.ranks.set_index("metric").loc["accuracy"]
    assert acc["n_items"] == 240 and acc["value"] == pytest.approx(h["n_correct"] / 240)
    assert (r.recalibration["n_items"] == 240).all()
    # every panel model is on the headline's 240 items
    assert (r.population["n_items"] <= 240).all()
    sent = place.headline_sentence(r)
    assert "of 300 asked; 60 cut at the reply cap before answering are missing, not wrong" in sent
    assert f"accuracy {h['n_correct'] / 240:.3f}, out of these 240" in sent
    assert "Counting the 60 cut replies wrong" in place.truncation_sentence(r)
    # the panel's family: Holm over the gated panel models, the mean of their differences
    p = r.population
    fam = p[~p["new"] & p["sufficient"]]
    assert p.loc[p["new"], "p_holm"].isna().all() and p.loc[~p["sufficient"], "p_holm"].isna().all()
    assert list(fam["holm_reject"]) == list(holm(fam["p_value"])["reject"])
    assert r.panel_mean["n_models"] == len(fam)
    assert r.panel_mean["mean"] == pytest.approx(fam["diff"].mean())
    s = place.panel_sentence(r)
    k = int(fam["holm_reject"].sum())
    assert f"family of {len(fam)}; with Holm's correction" in s
    assert int((fam["holm_reject"] & (fam["diff"] > 0)).sum()) + int((fam["holm_reject"] & (fam["diff"] < 0)).sum()) == k
    assert "mean internal − population AUROC is" in s
    assert f"{h['mdd']:.3f}" in place.mdd_sentence(r) and h["mdd"] == pytest.approx(2.8016 * h["se"], rel=1e-4)
