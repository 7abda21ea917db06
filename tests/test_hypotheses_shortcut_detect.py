import pandas as pd
import pytest

import numpy as np

from metacog.hypotheses.shortcut import detect
from metacog.hypotheses.shortcut.detect import CUES, cue_table, detect_inline_solving

POSITIVE = [
    "Let me compute: 17 * 23 = 391, so yes, I can answer this.",
    "We need x such that 2x + 3 = 11. Subtracting 3 gives 2x = 8, so x = 4. I am confident.",
    "Step 1: find the derivative. Step 2: set it to zero. f'(x) = 2x - 4 = 0 so x = 2.",
    "The sum is $\\frac{n(n+1)}{2}$ and for n = 10 that is 55. Yes.",
    "Let's solve it. The area is \\pi r^2 with r = 3, giving 9\\pi. I can do this.",
    "First, convert 5 km to meters, then divide by 20 s: 5000 / 20 = 250 m/s.",
    "Plugging in a = 2 and b = 5: a^2 + b^2 = 4 + 25 = 29. So I could answer.",
    "1. Count the ways to choose 2 of 5: 10.\n2. Multiply by 3 for the colours: 30.\nAnswer is 30.",
    "Let me check: 144 = 12^2, and 12 + 13 = 25. The answer is 25, so yes.",
    "By the quadratic formula, x = \\( \\frac{-b \\pm \\sqrt{b^2 - 4ac}}{2a} \\). Here that gives x = 3.",
    "Substituting y = 2x into x + y = 9 yields 3x = 9, so x = 3 and y = 6.",
    "I'll just work it out: 3^4 = 81, 81 mod 7 = 4. So the remainder is 4 and I can answer.",
    "Let me calculate the probability: P = 3/8 * 2/7 = 6/56 = 3/28.",
    "```python\ndef f(n):\n    return sum(range(n))\n```\nThat gives 45 for n = 10.",
    "Simplifying the expression (x^2 - 1)/(x - 1) = x + 1, at x = 4 we get 5. Confident yes.",
    "The integral \\int_0^1 x^2 dx = 1/3. Therefore yes, I can answer without the hints.",
    "Let's think step by step. 60 * 24 = 1440 minutes in a day, so 1440 * 7 = 10080 in a week.",
    "Rearranging F = ma gives a = F/m = 10/2 = 5 m/s^2.",
]

NEGATIVE = [
    "I think I know this; it's a well-known fact about the French Revolution.",
    "I'm not sure. This is a niche legal question and I don't recall the specific case.",
    "Yes, I remember reading about this in 1969 coverage of the moon landing.",
    "The question asks about a specific paragraph of a contract, which I cannot see.",
    "Probably not. The passage likely contains details I would not know.",
    "I am confident: this is basic biology that most textbooks cover.",
    "This requires knowledge of the 2019 season statistics, which I might not have.",
    "I could probably answer this, since questions about Shakespeare's plays are common.",
    "No. Without the definition of the legal term I would be guessing.",
    "This is a hard olympiad problem, and I doubt I could solve it reliably.",
    "I recall that the capital of Australia is a commonly confused fact, but I know it.",
    "As I know, the author wrote several novels in the 1800s; I believe I can answer.",
    "The problem looks like a standard combinatorics question; I have seen many like it.",
    "I'm uncertain because the question depends on context that was removed.",
    "Definitely yes. This is a famous theorem in number theory.",
    "It mentions three people and two cities, but I don't know who they are.",
    "",
    "My knowledge of tax law up to 2023 should cover this rule, so yes.",
    # harder negatives: one weak math-looking cue, but no working
    "It is roughly a 50/50 call whether I know this.",
    "I know Einstein's E = mc^2 well, so yes.",
    "The question asks to solve for x; I could likely do that, but I will not attempt it here.",
]


def test_at_least_15_examples_each():
    assert len(POSITIVE) >= 15 and len(NEGATIVE) >= 15


@pytest.mark.parametrize("text", POSITIVE)
def test_positive_examples_flagged(text):
    row = detect_inline_solving([text]).iloc[0]
    assert row["inline_solving"], (text, row["cues"], row["score"])


@pytest.mark.parametrize("text", NEGATIVE)
def test_negative_examples_not_flagged(text):
    row = detect_inline_solving([text]).iloc[0]
    assert not row["inline_solving"], (text, row["cues"], row["score"])


def test_output_columns_index_and_cues():
    s = pd.Series(["Let me compute 2 + 2 = 4.", "I know this.", None], index=["a", "b", "c"])
    df = detect_inline_solving(s, detail=True)
    assert list(df.index) == ["a", "b", "c"]
    assert df["inline_solving"].dtype == bool
    assert df.loc["a", "score"] >= 2 and "compute_phrase" in df.loc["a", "cues"]
    assert "equation" in df.loc["a", "cues"].split(",")
    assert df.loc["b", "score"] == 0 and df.loc["b", "cues"] == ""
    assert df.loc["c", "score"] == 0  # missing text counts as empty
    assert {f"cue_{n}" for n in CUES} <= set(df.columns)
    assert df.loc["a", "n_cues"] == len(df.loc["a", "cues"].split(","))


def test_threshold_controls_flag():
    text = ["we get the result"]  # one weak cue (weight 1)
    assert not detect_inline_solving(text)["inline_solving"].iloc[0]
    assert detect_inline_solving(text, threshold=1.0)["inline_solving"].iloc[0]


def test_bad_input():
    with pytest.raises(ValueError, match="not one string"):
        detect_inline_solving("Let me compute 1 + 1 = 2")
    with pytest.raises(ValueError, match="string or missing"):
        detect_inline_solving(["ok", 3])


def test_cue_table_lists_every_cue():
    t = cue_table()
    assert t["cue"].tolist() == list(CUES) and (t["weight"] > 0).all()


# --- pairwise calibration by pair type -------------------------------------------------------

def _population_with_reasoning_signal():
    """Two groups of items; reasoning models (the first three) know themselves only in group 'formal'."""
    from metacog.power import simulate
    rng = np.random.default_rng(0)
    n, m = 600, 6
    pop = simulate.population(m, n, kappa=0.0, seed=1, keep_latent=True)
    conf = pop.confidence.astype(float).copy()
    corr = pop.correct.astype(float)
    formal = np.arange(n) < n // 2
    # in the formal half, reasoning models' confidence simply equals their own correctness 80% of the time
    for j in range(3):
        col = conf.columns[j]
        copy = formal & (rng.random(n) < 0.8)
        conf.loc[conf.index[copy], col] = corr.loc[corr.index[copy], col]
    groups = pd.Series(np.where(formal, "formal", "other"), index=conf.index)
    reasoning = {c: j < 3 for j, c in enumerate(conf.columns)}
    return conf, corr, groups, reasoning


def test_pair_types_are_labelled_judge_first():
    assert detect.pair_type(True, False) == "R-N"
    assert detect.pair_type(False, True) == "N-R"
    pairs = pd.DataFrame({"judge": ["a", "a", "b"], "target": ["a", "b", "a"]})
    out = detect.label_pairs(pairs, {"a": True, "b": False})
    assert list(out["pair_type"]) == ["R-R", "R-N", "N-R"]
    with pytest.raises(ValueError, match=r"\['c'\]"):
        detect.label_pairs(pd.DataFrame({"judge": ["c"], "target": ["a"]}), {"a": True})


def test_planted_reasoning_self_signal_shows_only_in_its_group():
    conf, corr, groups, reasoning = _population_with_reasoning_signal()
    pairs = detect.calibration_by_group(conf, corr, groups, reasoning, control=False)
    s = detect.summarise_pair_types(pairs)
    self_rr = s[(s.pair_type == "R-R") & (s.kind == "self")].set_index("group")["mean_tau"]
    self_nn = s[(s.pair_type == "N-N") & (s.kind == "self")].set_index("group")["mean_tau"]
    assert self_rr["formal"] > self_rr["other"] + 0.3
    assert abs(self_nn["formal"] - self_nn["other"]) < 0.15
    assert set(pairs["group"]) == {"formal", "other"}
    assert (pairs.groupby("group")["n_group_items"].first() == 300).all()


def test_groups_must_cover_every_item():
    conf, corr, groups, reasoning = _population_with_reasoning_signal()
    with pytest.raises(ValueError, match="has no group"):
        detect.calibration_by_group(conf, corr, groups.iloc[:-1], reasoning)


def test_self_advantage_is_self_minus_mean_other_per_judge():
    pairs = pd.DataFrame({
        "group": ["g"] * 4, "judge": ["a", "a", "b", "b"], "target": ["a", "b", "a", "b"],
        "self": [True, False, False, True], "tau": [0.5, 0.1, 0.2, 0.3],
        "judge_reasoning": [True, True, False, False]})
    adv = detect.self_advantage(pairs).set_index("judge")
    assert adv.loc["a", "advantage"] == pytest.approx(0.4)
    assert adv.loc["b", "advantage"] == pytest.approx(0.1)
    assert bool(adv.loc["a", "judge_reasoning"]) and not bool(adv.loc["b", "judge_reasoning"])


def test_added_flags_sentence_counts_the_added_texts_by_label():
    # Exercise 33 said the numbered-step cue fires on "several" legal analyses labelled yes; the
    # sentence is now counted from the hand labels
    from metacog.hypotheses.shortcut import detect

    texts = pd.Series(["1. a\n2. b\n", "x = 3", "1. c\n2. d\n", "3 * 4 = 12"])
    truth = [1, 0, 0, 1]
    low = detect.detect_inline_solving(texts, threshold=1.0)
    high = detect.detect_inline_solving(texts)
    s = detect.added_flags_sentence(truth, low, high, 1.0)
    assert s == ('Threshold 1 adds 3 flagged texts: 1 we labelled "yes" (cues: numbered_steps on 1) and '
                 '2 we labelled "no" (cues: assignment on 1, numbered_steps on 1).')
    assert detect.added_flags_sentence(truth, high, high, 2.0).endswith("flags no text that the default threshold does not.")
