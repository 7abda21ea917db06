"""The reasoning-text verdict is no stronger than its weakest caveat: the probe must beat chance."""

import numpy as np
import pandas as pd

from metacog.hypotheses import reasoning_text as hrt
from metacog.hypotheses.verdict import INSUFFICIENT, NOT_SUPPORTED, SUPPORTED

SURE = "I recall this clearly, it is a well-known fact and I am confident."
UNSURE = "I am not sure, this seems obscure and I might not know it; perhaps, maybe."


def _rows(n, p_text, p_judge_flipped, seed):
    """``p_text``: how often the text matches correctness; the own Yes/No is the opposite of
    correctness with probability ``p_judge_flipped`` (a judgment below chance)."""
    rng = np.random.default_rng(seed)
    correct = (rng.random(n) < 0.5).astype(float)
    texts = [(SURE if (c == 1) == (rng.random() < p_text) else UNSURE) + f" Item {i}."
             for i, c in enumerate(correct)]
    judge = np.where(rng.random(n) < p_judge_flipped, 1 - correct, correct)
    return pd.DataFrame({"model": "m/a", "item_id": [f"x{i}" for i in range(n)], "probe": "prospective",
                         "reasoning_text": texts, "correct": correct, "confidence": judge})


def _decide(rows):
    t, _ = hrt.compare(rows, n_boot=300)
    t = t.assign(source="planted", models="a")
    return hrt.verdicts(t)[0], t


def test_a_lead_by_a_probe_at_chance_is_insufficient_evidence():
    v, t = _decide(_rows(60, 0.62, 0.8, seed=1))
    probe, own = t.set_index("score").loc["text_probe"], t.set_index("score").loc["confidence"]
    assert probe["ci_low"] <= 0.5 < probe["ci_high"]  # the probe's interval includes chance
    assert own["diff_ci_low"] > 0  # yet it leads the (below-chance) own judgment
    assert v.status == INSUFFICIENT
    assert "not shown to beat chance" in v.reason
    assert "difference does not count on planted" in hrt.verdict_paragraph([v], t)


def test_supported_only_when_the_probe_beats_chance_and_leads():
    v, t = _decide(_rows(200, 0.95, 0.8, seed=2))
    probe = t.set_index("score").loc["text_probe"]
    assert probe["ci_low"] > 0.5
    assert v.status == SUPPORTED


def test_a_worse_probe_stays_not_supported_whatever_its_own_auroc():
    rows = _rows(200, 0.5, 0.05, seed=3)  # a good own judgment, a text that says nothing
    v, _ = _decide(rows)
    assert v.status == NOT_SUPPORTED


def test_the_sampling_sentence_quotes_the_greedy_probe_only_on_the_same_pairs():
    rows = _rows(80, 0.9, 0.5, seed=4)
    sampled = pd.concat([rows.assign(sample=s, confidence=rows["correct"]) for s in range(3)])
    outcomes = rows.assign(probe="answer_no_context")
    keys = list(zip(rows["model"], rows["item_id"]))
    greedy = {"auroc": 0.7, "ci_low": 0.6, "ci_high": 0.8, "n_pos": 40, "n_neg": 40, "texts": 80, "keys": keys}
    base = hrt.sampling_baseline(sampled, outcomes, ["m/a"], greedy=greedy, cv=3)
    assert base.row["pairs"] == 80 and "0.70 (95% CI 0.60 to 0.80)" in base.sentence and "two statistics" in base.sentence
    other = hrt.sampling_baseline(sampled, outcomes, ["m/a"], greedy={**greedy, "keys": keys[:10]}, cv=3)
    assert "two statistics" not in other.sentence


def test_the_sampling_baseline_summary_says_how_many_samples_match_the_probe():
    rows = _rows(120, 0.95, 0.5, seed=5)  # the text tracks correctness; one sampled yes/no is a coin
    rng = np.random.default_rng(0)
    sampled = pd.concat([rows.assign(sample=s, confidence=np.where(rng.random(len(rows)) < 0.6, rows["correct"],
                                                                   1 - rows["correct"])) for s in range(5)])
    base = hrt.sampling_baseline(sampled, rows.assign(probe="answer_no_context"), ["m/a"], cv=3)
    s = base.summary()
    assert len(s) == 1 and s.at[0, "auroc"] == base.row["auroc"] and s.at[0, "pairs"] == 120
    reached = base.curve[base.curve["auroc"] >= base.row["auroc"]]
    assert (np.isnan(s.at[0, "k_to_match"]) if reached.empty else s.at[0, "k_to_match"] == reached["k"].iloc[0])
    assert s.at[0, "ci_low"] > 0.5 and list(base.curve["k"])[0] == 1


def test_the_comparison_of_sources_is_a_result_with_the_skipped_ones_in_its_summary(tmp_path):
    path = tmp_path / "texts.csv"
    rows = _rows(200, 0.95, 0.2, seed=6).assign(benchmark="toy")
    rows.to_csv(path, index=False)
    rows.drop(columns="reasoning_text").to_csv(tmp_path / "mute.csv", index=False)
    res = hrt.analyse([str(path), str(tmp_path / "mute.csv")], cv=3, n_boot=100, gate=False)
    assert isinstance(res, hrt.TextProbeComparison)
    assert list(res.rows) == ["texts.csv"] and set(res.skipped) == {"mute.csv"}
    s = res.summary()
    probe = s[(s["source"] == "texts.csv") & (s["score"] == "text_probe")].iloc[0]
    assert probe["ci_low"] > 0.5 and probe["auroc"] == res.table.set_index("score").at["text_probe", "auroc"]
    assert s.loc[s["source"] == "mute.csv", "note"].iloc[0] == res.skipped["mute.csv"] != ""
