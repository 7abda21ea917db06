import numpy as np
import pandas as pd
import pytest

from metacog.stats import auroc
from metacog.hypotheses.reasoning_text.probe import FEATURES, ReasoningTextProbe, compare_auroc, features, sample_mean_auroc

SURE = ["I definitely know this; it is a well-known fact.", "I recall this clearly from my training.",
        "This is basic and straightforward, certainly yes.", "I remember the answer, of course."]
UNSURE = ["I'm not sure, this might be too obscure.", "Probably not; I don't recall the specific details.",
          "This seems tricky and I doubt I know it.", "Maybe, but I am not familiar with this niche topic."]


def _synthetic(n=300, seed=0, signal=0.8):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    texts = []
    for yi in y:
        sure = rng.random() < (signal if yi else 1 - signal)
        base = SURE if sure else UNSURE
        texts.append(base[rng.integers(len(base))] + " " * int(rng.integers(0, 3)))
    return texts, y


def test_feature_counts_on_hand_examples():
    df = features(["I think it might be 42, but I'm not sure.",
                   "Definitely, I recall this: 3 + 4 = 7. The question asks for the sum.",
                   None])
    assert list(df.columns) == FEATURES
    a, b, c = df.iloc[0], df.iloc[1], df.iloc[2]
    assert a["hedges"] == 3  # I think, might, not sure
    assert a["numbers"] == 1 and a["certainty"] == 0
    assert b["certainty"] == 1 and b["recall"] == 1 and b["restatement"] == 1
    assert b["numbers"] == 3 and b["equals"] == 1 and b["operators"] >= 2
    assert b["inline_score"] >= 2
    assert c["n_chars"] == 0 and c["n_words"] == 0 and (c.drop("mean_word_len") == 0).all()
    assert a["n_words"] == 10 and a["n_sentences"] == 1


def test_question_overlap():
    df = features(["Paris is the capital of France.", "No idea."],
                  questions=["What is the capital of France?", "What is the capital of France?"])
    assert df["question_overlap"].iloc[0] == pytest.approx(1.0)
    assert df["question_overlap"].iloc[1] == 0.0
    with pytest.raises(ValueError, match="one question per text"):
        features(["a", "b"], questions=["q"])


def test_probe_finds_planted_signal_out_of_fold():
    texts, y = _synthetic()
    probe = ReasoningTextProbe(C=1.0, cv=5, seed=0).fit(texts, y)
    assert probe.oof_proba_.shape == (300,)
    oracle = auroc(y, np.array([t.strip() in SURE for t in texts]))  # the planted signal itself
    assert 0.7 < oracle < 0.9
    assert oracle - 0.06 < probe.auroc_ <= oracle + 0.02
    assert probe.coef_["certainty"] > 0 and probe.coef_["hedges"] < 0
    p = probe.predict_proba([SURE[0], UNSURE[0]])
    assert p[0] > p[1]


def test_probe_no_signal_no_leak():
    texts, _ = _synthetic(seed=1)
    y = np.random.default_rng(9).integers(0, 2, len(texts))  # labels unrelated to the text
    probe = ReasoningTextProbe(cv=5, seed=0).fit(texts, y)
    assert 0.38 < probe.auroc_ < 0.62


def test_probe_deterministic_given_seed():
    texts, y = _synthetic(seed=2)
    a = ReasoningTextProbe(seed=3).fit(texts, y).oof_proba_
    b = ReasoningTextProbe(seed=3).fit(texts, y).oof_proba_
    np.testing.assert_array_equal(a, b)


def test_probe_compare_with_noisy_judgment():
    texts, y = _synthetic(n=400, seed=4, signal=0.85)
    rng = np.random.default_rng(5)
    judgment = np.where(rng.random(len(y)) < 0.6, y, 1 - y)  # 60% agreement: weak judgment
    probe = ReasoningTextProbe(seed=0).fit(texts, y)
    table = probe.compare(judgment, n_boot=300)
    assert table["score"].tolist() == ["text_probe", "judgment"]
    row = table.set_index("score").loc["text_probe"]
    assert row["diff_vs_ref"] > 0.1 and row["diff_ci_low"] > 0 and row["p_not_better"] < 0.05
    assert table.set_index("score").loc["judgment", "auroc"] == pytest.approx(auroc(y, judgment))


def test_auroc_and_compare_basics():
    y = np.array([0, 0, 1, 1])
    # one AUROC for the whole package: metacog.stats.auroc(labels, score)
    assert auroc(y, [0.1, 0.2, 0.8, 0.9]) == 1.0
    assert auroc(y, [0.9, 0.8, 0.2, 0.1]) == 0.0
    assert auroc(y, [1, 1, 1, 1]) == 0.5
    assert np.isnan(auroc([1, 1], [0.1, 0.2]))  # one class: undefined, NaN
    with pytest.raises(ValueError, match="0 or 1"):
        auroc([1, 2], [0.1, 0.2])
    one = compare_auroc([1, 1, 1], {"a": [0.1, 0.2, 0.3]}, n_boot=20)
    assert one["auroc"].isna().all() and one["ci_low"].isna().all()
    t = compare_auroc(y, {"a": [0.1, 0.2, 0.8, 0.9], "b": [0.1, 0.2, 0.8, 0.9]}, n_boot=50)
    assert (t["diff_vs_ref"] == 0).all()


def test_sample_mean_auroc_grows_with_k():
    rng = np.random.default_rng(0)
    n, S = 2000, 8
    y = rng.integers(0, 2, n)
    J = np.where(rng.random((n, S)) < 0.65, y[:, None], 1 - y[:, None])  # independent samples
    t = sample_mean_auroc(y, J, n_draws=50, seed=1)
    assert t["k"].tolist() == list(range(1, 9))
    assert t["auroc"].iloc[0] == pytest.approx(0.65, abs=0.03)
    assert t["auroc"].is_monotonic_increasing
    assert t["auroc"].iloc[-1] > 0.75
    # k=1 enumerates all single columns: equals the mean per-column AUROC
    assert t["n_subsets"].iloc[0] == S
    assert t["auroc"].iloc[0] == pytest.approx(np.mean([auroc(y, J[:, j]) for j in range(S)]))
    assert t["n_subsets"].iloc[-1] == 1


def test_sample_mean_auroc_bad_input():
    with pytest.raises(ValueError, match="outside"):
        sample_mean_auroc([0, 1, 0, 1], np.zeros((4, 2)), ks=[3])
    with pytest.raises(ValueError, match="0/1"):
        sample_mean_auroc([0, 1, 0, 1], np.full((4, 2), 0.5))


def test_probe_bad_input():
    with pytest.raises(ValueError, match="rarer class"):
        ReasoningTextProbe(cv=5).fit(["a"] * 6, [1, 1, 1, 1, 0, 0])
    with pytest.raises(ValueError, match="not one string"):
        features("just one text")
    with pytest.raises(ValueError, match="before predict_proba"):
        ReasoningTextProbe().predict_proba(["x"])
    with pytest.raises(ValueError, match="labels"):
        ReasoningTextProbe(cv=2).fit(pd.Series(["a", "b", "c"]), [0, 1, 0, 1])


def test_text_vs_judgment_beats_an_uninformative_judgment_when_the_text_carries_the_signal():
    from metacog.hypotheses.reasoning_text.probe import text_vs_judgment

    rng = np.random.default_rng(0)
    n = 200
    correct = rng.random(n) < 0.5
    texts = [("I recall this clearly, it is well known." if c else "I am not sure, maybe, I think it might be")
             if rng.random() < 0.85 else "No idea what to say here." for c in correct]
    df = pd.DataFrame({"probe": "prospective", "reasoning_text": texts, "correct": correct.astype(float),
                       "confidence": rng.integers(0, 2, n).astype(float), "p_yes": rng.random(n)})
    out = text_vs_judgment(df, "prospective", n_boot=200).set_index("score")
    assert out.loc["text_probe", "auroc"] > 0.8
    assert abs(out.loc["confidence", "auroc"] - 0.5) < 0.12
    assert out.loc["text_probe", "p_not_better"] < 0.05
    assert out.attrs["n_items"] == n
    with pytest.raises(ValueError, match="no 'c2' rows"):
        text_vs_judgment(df, "c2")


def test_sample_matrix_aligns_samples_with_the_outcome():
    from metacog.hypotheses.reasoning_text.probe import sample_matrix

    rows = []
    for model in ("m1", "m2"):
        for i in range(4):
            for s in range(3):
                conf = np.nan if (model, i, s) == ("m2", 1, 2) else float((i + s) % 2)
                rows.append({"model": model, "item_id": f"q{i}", "probe": "prospective", "sample": s,
                             "confidence": conf})
    sampled = pd.DataFrame(rows)
    outcomes = pd.DataFrame([{"model": m, "item_id": f"q{i}", "probe": "answer_no_context",
                              "correct": float(i < 2) if i != 3 else np.nan}
                             for m in ("m1", "m2", "m3") for i in range(4)])
    J, y = sample_matrix(sampled, outcomes)
    assert list(J.columns) == [0, 1, 2]
    assert len(J) == 6  # item q3 has no graded outcome; m3 has no samples
    assert list(J.index) == list(y.index)
    assert J.loc[("m1", "q1")].tolist() == [1.0, 0.0, 1.0]
    assert np.isnan(J.loc[("m2", "q1"), 2])
    assert y.loc[("m1", "q0")] == 1.0 and y.loc[("m2", "q2")] == 0.0
    with pytest.raises(ValueError, match="no 'counterfactual' rows"):
        sample_matrix(sampled, outcomes, "counterfactual")
    with pytest.raises(ValueError, match="record the outcome run"):
        sample_matrix(sampled, outcomes.assign(model="other"))
