"""The reply's length against the stated confidence (metacog.hypotheses.reasoning_text.length), on
panels with a planted truth: which of the two carries the knowledge is known, and the verdict on
the panel mean must find it."""

import numpy as np
import pandas as pd
import pytest

from metacog.hypotheses.reasoning_text import length as hlen
from metacog.hypotheses.verdict import INSUFFICIENT, NEGLIGIBLE, NOT_SUPPORTED, SUPPORTED


def _model(name, n, *, conf_signal, length_signal, seed, longer_right=False):
    """One model's answers: a latent ease decides correctness; the stated confidence and the
    reply's length each read it with the given strength (0: pure noise)."""
    rng = np.random.default_rng(seed)
    ease = rng.normal(size=n)
    correct = (ease + rng.normal(size=n) > 0).astype(float)
    conf = 1 / (1 + np.exp(-(conf_signal * ease + rng.normal(size=n))))
    sign = 1 if longer_right else -1
    length = np.round(np.exp(5 + 0.3 * (sign * length_signal * ease + rng.normal(size=n))))
    return pd.DataFrame({"model": name, "item_id": [f"i{i}" for i in range(n)], "correct": correct,
                         "confidence": conf, "token_length": length})


def _panel(k, n=3000, **kw):
    return pd.concat([_model(f"m{j}", n, seed=j, **kw) for j in range(k)], ignore_index=True)


def test_the_direction_is_learned_on_the_other_folds():
    rows = _model("m", 2000, conf_signal=1, length_signal=2, seed=1, longer_right=True)
    score = hlen.length_score(rows["token_length"], rows["correct"], seed=0)
    assert np.array_equal(score, rows["token_length"].to_numpy(float))  # longer right: +length everywhere
    rows = _model("m", 2000, conf_signal=1, length_signal=2, seed=1)
    assert np.array_equal(hlen.length_score(rows["token_length"], rows["correct"]), -rows["token_length"].to_numpy(float))


def test_a_panel_whose_confidence_knows_and_whose_length_does_not_is_not_supported():
    t = hlen.compare_lengths(_panel(6, conf_signal=2, length_signal=0))
    assert len(t) == 6 and (t["sim_high"] < 0).all()
    assert ((t["sim_low"] <= t["ci_low"]) & (t["sim_high"] >= t["ci_high"])).all()  # simultaneous is wider
    r = hlen.LengthComparison(t.assign(source="planted"), {"planted": hlen.panel_mean(t)}, {}, {})
    v = hlen.verdicts(r)[0]
    assert v.status == NOT_SUPPORTED and v.ci_high < 0
    assert r.summary().loc[0, "confidence_better"] == 6


def test_a_panel_whose_length_knows_better_is_supported_and_the_sentence_says_where():
    t = hlen.compare_lengths(_panel(6, conf_signal=0.3, length_signal=3))
    p = hlen.panel_mean(t, seed=1)
    assert p["ci_low"] > hlen.MARGIN
    r = hlen.LengthComparison(t.assign(source="planted"), {"planted": p}, {}, {})
    assert hlen.verdicts(r)[0].status == SUPPORTED
    said = hlen.sentence(r)
    assert "length for 6" in said and "all 6 of its models are compared" in said


def test_equal_readings_are_negligible_not_unsupported():
    """Confidence and length reading the same ease equally: the mean difference sits near 0 with
    an interval inside the margin, which is a negligible effect, never a 'not supported' one."""
    t = hlen.compare_lengths(_panel(8, n=6000, conf_signal=1.5, length_signal=1.5))
    r = hlen.LengthComparison(t.assign(source="planted"), {"planted": hlen.panel_mean(t)}, {}, {})
    v = hlen.verdicts(r)[0]
    assert -hlen.MARGIN < v.ci_low and v.ci_high < hlen.MARGIN
    assert v.status == NEGLIGIBLE


def test_too_few_models_or_answers_are_said_not_averaged():
    t = hlen.compare_lengths(pd.concat([_model("a", 400, conf_signal=2, length_signal=0, seed=3),
                                        _model("few", 400, conf_signal=2, length_signal=0, seed=4)
                                        .assign(correct=lambda d: (np.arange(len(d)) >= 5).astype(float))]))
    assert list(t["model"]) == ["a"]  # 'few' has 5 wrong answers, under MIN_CLASS
    p = hlen.panel_mean(t)
    assert p["models"] == 1 and np.isnan(p["ci_low"])
    r = hlen.LengthComparison(t.assign(source="small"), {"small": p}, {}, {})
    assert hlen.verdicts(r)[0].status == INSUFFICIENT
    assert "each is read alone: for a," in hlen.sentence(r)


def test_rows_without_a_length_are_refused_naming_the_column():
    with pytest.raises(ValueError, match="token_length"):
        hlen.compare_lengths(_model("m", 50, conf_signal=1, length_signal=1, seed=0).drop(columns="token_length"))


def test_the_public_panel_decides_on_the_default_book():
    """The default source of the chapter: the LLM Calibration Study's stated confidences and reply
    lengths (mirror). Its verdict must be decided, and every count in it must add up."""
    r = hlen.analyse(["calibration_study:verbal_confidence"], n_boot=300)
    s = r.summary().iloc[0]
    assert s["models"] >= 50
    v = hlen.verdicts(r)[0]
    assert v.status in (SUPPORTED, NOT_SUPPORTED, NEGLIGIBLE), v.reason
    said = hlen.sentence(r)
    t = r.table
    assert f"stated confidence is ahead for {int(s['confidence_better'])} models" in said
    assert s["length_better"] + s["confidence_better"] <= s["models"] == len(t)


def test_the_lead_correlates_with_the_confidence_by_construction_and_the_fair_test_says_so():
    """Confidence readings of every strength, length reading the same ease equally in every model:
    the lead (length minus confidence) falls as the confidence's AUROC rises although length knows
    no more where the confidence is weak; the fair test (length's own AUROC) must not find it."""
    rows = pd.concat([_model(f"m{j}", 3000, conf_signal=s, length_signal=1.0, seed=j)
                      for j, s in enumerate(np.linspace(0.2, 3.0, 10))], ignore_index=True)
    t = hlen.compare_lengths(rows).assign(source="planted")
    w = hlen.weakness(t, n_boot=500)
    assert w.loc["lead", "ci_high"] < 0  # the mechanical correlation
    assert w.loc["length", "ci_low"] < 0 < w.loc["length", "ci_high"]  # length's own AUROC does not follow
    said = hlen.weakness_sentence(t, n_boot=500)
    assert "cannot be told" in said and "subtracting the same AUROC" in said


def test_replies_of_one_length_have_no_direction_and_the_sentence_says_neither():
    rows = _panel(6, conf_signal=1, length_signal=0).assign(token_length=50.0)
    assert not hlen.length_score(rows["token_length"], rows["correct"]).any()  # every score 0: no direction
    t = hlen.compare_lengths(rows)
    assert (t["longer_right"] == 0).all() and (t["shorter_right"] == 0).all() and np.allclose(t["auroc_length"], 0.5)
    r = hlen.LengthComparison(t.assign(source="flat"), {"flat": hlen.panel_mean(t)}, {}, {})
    assert "shorter replies were right more often for no models, longer ones for none, neither for 6" in hlen.sentence(r)


def test_a_file_with_negative_lengths_is_left_out_naming_the_column_and_the_fix(tmp_path):
    rows = _panel(6, n=200, conf_signal=1, length_signal=1).rename(columns={"token_length": "completion_tokens"})
    rows["probe"], rows["benchmark"] = "verbal", "planted"
    rows.loc[::50, "completion_tokens"] = -3
    path = tmp_path / "lengths.csv"
    rows.to_csv(path, index=False)
    r = hlen.analyse([f"{path}:verbal"], n_boot=200)
    assert r.table.empty
    (why,) = r.skipped.values()
    assert "24 replies of negative length" in why and "completion_tokens" in why and "fix those rows" in why
    assert hlen.verdicts(r)[0].status == INSUFFICIENT


def test_the_weakness_test_says_so_when_every_model_reads_the_same():
    t = hlen.compare_lengths(_panel(6, conf_signal=1, length_signal=0).assign(token_length=50.0))
    assert t["auroc_length"].nunique() == 1  # every length AUROC is 0.5: nothing to rank
    said = hlen.weakness_sentence(t.assign(source="flat"), n_boot=200)
    assert said == "On flat the models' AUROCs do not vary, so there is no ranking to correlate."
