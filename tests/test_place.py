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
from metacog.pages.place.stats import metric_ranks, recalibrate


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
    assert "rank-one confidence axis" in place.axis_sentence(r)
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
    assert s.startswith("Of 11 replies, 5 finished and gave both")
    assert "1 finished without both" in s
    assert "5 were cut at the reply-length cap before finishing, of which 2 still gave both" in s
    assert "3 did not" in s
