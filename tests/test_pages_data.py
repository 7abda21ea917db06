"""metacog.pages.data, what the data chapter computes: each function on a small hand-made tidy
frame whose answer can be checked by hand, interval sanity (it holds the estimate, it narrows
with n), and the real Atlas log."""

import numpy as np
import pandas as pd
import pytest

from metacog.pages import data as dp
from metacog.stats.intervals import proportion_ci


def tidy(rows, probe="verbal_confidence"):
    """Tidy rows from (model, item_id, domain, correct, confidence) tuples."""
    df = pd.DataFrame(rows, columns=["model", "item_id", "domain", "correct", "confidence"])
    return df.assign(probe=probe, p_yes=np.nan)


def small_atlas(copies=1):
    """Two domains; in 'a' items a1 (both right), a2 (m1 right, m2 wrong); in 'b' item b1 (both
    wrong). Model m2 has no b1. ``copies`` repeats every item under new ids."""
    base = [("m1", "a1", "a", 1, 0.9), ("m2", "a1", "a", 1, 0.7),
            ("m1", "a2", "a", 1, 0.8), ("m2", "a2", "a", 0, 0.6),
            ("m1", "b1", "b", 0, 0.5)]
    rows = [(m, f"{i}_{c}", d, y, v) for c in range(copies) for m, i, d, y, v in base]
    return tidy(rows)


# ---------------------------------------------------------------------------
# counts

def test_panel_size_and_probe_counts():
    df = pd.concat([small_atlas(), small_atlas().assign(probe="other", confidence=np.nan)])
    size = dp.panel_size(small_atlas()).iloc[0]
    assert (size["models"], size["items"], size["rows"], size["domains"]) == (2, 3, 5, 2)
    counts = dp.probe_counts(df).set_index("probe")
    assert counts.loc["verbal_confidence", "usable"] == 5
    assert counts.loc["other", "usable"] == 0 and counts.loc["other", "rows"] == 5
    assert counts.loc["other", "models"] == 2 and counts.loc["other", "items"] == 3


def test_partial_models_names_the_model_missing_an_item():
    out = dp.partial_models(small_atlas())
    assert out.to_dict("records") == [{"model": "m2", "items": 2, "missing": 1}]
    complete = small_atlas()[small_atlas()["model"] == "m1"]
    assert dp.partial_models(complete).empty


# ---------------------------------------------------------------------------
# per-domain / per-track estimates with an item bootstrap

def test_overview_pools_rows_per_domain_and_over_all():
    out = dp.overview(small_atlas(), n_boot=200).set_index(["domain", "statistic"])
    assert out.loc[("a", "accuracy"), "estimate"] == pytest.approx(3 / 4)
    assert out.loc[("a", "mean_confidence"), "estimate"] == pytest.approx((0.9 + 0.7 + 0.8 + 0.6) / 4)
    assert out.loc[("b", "accuracy"), "estimate"] == 0
    assert out.loc[("all", "accuracy"), "estimate"] == pytest.approx(3 / 5)
    assert out.loc[("all", "accuracy"), "rows"] == 5 and out.loc[("all", "accuracy"), "items"] == 3
    assert out.loc[("b", "accuracy"), "models"] == 1
    assert np.isnan(out.loc[("b", "accuracy"), "ci_low"])  # one item: nothing to resample


def test_overview_interval_holds_the_estimate_and_narrows_with_items():
    few = dp.overview(small_atlas(copies=5), n_boot=500).set_index(["domain", "statistic"])
    many = dp.overview(small_atlas(copies=80), n_boot=500).set_index(["domain", "statistic"])
    for t in (few, many):
        r = t.loc[("all", "accuracy")]
        assert r["ci_low"] <= r["estimate"] <= r["ci_high"]
        assert r["ci_low"] < r["ci_high"]
    width = {k: t.loc[("all", "accuracy"), "ci_high"] - t.loc[("all", "accuracy"), "ci_low"]
             for k, t in (("few", few), ("many", many))}
    assert width["many"] < width["few"] / 2


def test_track_table_shares_per_track_and_probe():
    rows = [("m1", "x1", None, 1, 1.0), ("m2", "x1", None, 1, 0.0),
            ("m1", "x2", None, 0, 1.0), ("m2", "x2", None, 1, 1.0)]
    df = tidy(rows, probe="keep_withdraw").assign(track="t1")
    df = pd.concat([df, df.assign(probe="bet_nobet", confidence=0.0)])
    out = dp.track_table(df, n_boot=200).set_index(["track", "probe"])
    assert out.loc[("t1", "keep_withdraw"), "share_confident"] == pytest.approx(0.75)
    assert out.loc[("t1", "bet_nobet"), "share_confident"] == 0
    assert out.loc[("t1", "keep_withdraw"), "rows"] == 4 and out.loc[("t1", "keep_withdraw"), "items"] == 2
    r = out.loc[("t1", "keep_withdraw")]
    assert r["ci_low"] <= r["share_confident"] <= r["ci_high"]


# ---------------------------------------------------------------------------
# mean overconfidence over models

def test_mean_overconfidence_is_a_t_interval_over_models():
    table = pd.DataFrame({"overconfidence": [0.1, 0.2, 0.3]}, index=["a", "b", "c"])
    r = dp.mean_overconfidence(table).iloc[0]
    half = 4.302652729911275 * 0.1 / np.sqrt(3)  # t(0.975, 2) x sd / sqrt(n)
    assert r["estimate"] == pytest.approx(0.2)
    assert r["sd"] == pytest.approx(0.1)
    assert (r["ci_low"], r["ci_high"]) == (pytest.approx(0.2 - half), pytest.approx(0.2 + half))
    assert r["n"] == 3


def test_mean_overconfidence_narrows_with_models_and_handles_one():
    rng = np.random.default_rng(1)
    widths = []
    for n in (5, 50):
        r = dp.mean_overconfidence(pd.DataFrame({"overconfidence": rng.normal(0.05, 0.1, n)})).iloc[0]
        assert r["ci_low"] < r["estimate"] < r["ci_high"]
        widths.append(r["ci_high"] - r["ci_low"])
    assert widths[1] < widths[0] / 2
    one = dp.mean_overconfidence(pd.DataFrame({"overconfidence": [0.3]})).iloc[0]
    assert one["estimate"] == pytest.approx(0.3) and np.isnan(one["ci_low"]) and one["n"] == 1


# ---------------------------------------------------------------------------
# binarisation

def conf_matrix():
    return pd.DataFrame({"a": [0.2, 0.4, 0.6, 0.8], "b": [0.9, 0.9, 0.9, 0.3]},
                        index=pd.Index(["i1", "i2", "i3", "i4"], name="item_id"))


def test_binarised_rates_per_model_and_rule():
    out = dp.binarised_rates(conf_matrix(), cut=0.5).set_index(["rule", "model"])
    # a: median 0.5, two of four at or above; b: median 0.9, three of four at or above
    assert out.loc[("median", "a"), ["k", "n"]].tolist() == [2, 4]
    assert out.loc[("median", "b"), "estimate"] == pytest.approx(0.75)
    assert out.loc[("median", "b"), "threshold"] == pytest.approx(0.9)
    assert out.loc[("fixed", "a"), "estimate"] == pytest.approx(0.5)
    assert out.loc[("fixed", "b"), "k"] == 3
    lo, hi = proportion_ci(3, 4)
    assert (out.loc[("fixed", "b"), "ci_low"], out.loc[("fixed", "b"), "ci_high"]) == (
        pytest.approx(lo), pytest.approx(hi))
    at_07 = dp.binarised_rates(conf_matrix(), cut=0.7).set_index(["rule", "model"])
    assert at_07.loc[("fixed", "a"), "k"] == 1


def test_median_ci_from_order_statistics():
    assert dp.median_ci(np.arange(1, 11)) == (2.0, 9.0)  # P(Bin(10, 1/2) <= 1) = 11/1024
    assert dp.median_ci([1, 2, np.nan, 3, 4, 5, 6, 7, 8, 9, 10]) == (2.0, 9.0)
    assert all(np.isnan(dp.median_ci([1, 2, 3, 4, 5])))  # too few for 95%
    lo, hi = dp.median_ci(np.arange(1, 34))  # 33 values: x(11) to x(23)
    assert (lo, hi) == (11.0, 23.0)


def test_rate_spread_lowest_median_highest():
    rates = pd.DataFrame({"rule": "median", "model": list("abcdefg"), "threshold": 0.5,
                          "n": [10, 20, 30, 40, 50, 60, 70], "k": [1, 4, 9, 16, 25, 36, 49],
                          "estimate": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
                          "ci_low": 0.0, "ci_high": 1.0})
    out = dp.rate_spread(rates).set_index("statistic")
    assert list(out.index) == ["lowest", "median", "highest"]
    assert (out.loc["lowest", "model"], out.loc["lowest", "n"], out.loc["lowest", "unit"]) == ("a", 10, "items")
    assert (out.loc["highest", "model"], out.loc["highest", "estimate"]) == ("g", 0.7)
    assert out.loc["median", "estimate"] == pytest.approx(0.4)
    assert (out.loc["median", "n"], out.loc["median", "unit"]) == (7, "models")
    assert out.loc["median", "ci_low"] <= 0.4 <= out.loc["median", "ci_high"]


# ---------------------------------------------------------------------------
# unanimity

def unanimity_log(copies=1):
    """Per copy: item u1 both right, u2 both wrong, u3 split."""
    base = [("m1", "u1", 1), ("m2", "u1", 1), ("m1", "u2", 0), ("m2", "u2", 0),
            ("m1", "u3", 1), ("m2", "u3", 0)]
    return tidy([(m, f"{i}_{c}", "d", y, 0.5) for c in range(copies) for m, i, y in base])


def test_unanimity_shares_with_wilson_intervals():
    out = dp.unanimity_shares(unanimity_log()).set_index(["domain", "statistic"])
    assert out.loc[("all", "all_correct"), ["k", "n"]].tolist() == [1, 3]
    assert out.loc[("all", "all_wrong"), "estimate"] == pytest.approx(1 / 3)
    assert out.loc[("all", "unanimous"), "estimate"] == pytest.approx(2 / 3)
    lo, hi = proportion_ci(2, 3)
    assert out.loc[("all", "unanimous"), "ci_low"] == pytest.approx(lo)
    assert out.loc[("all", "unanimous"), "ci_high"] == pytest.approx(hi)
    exact = dp.unanimity_shares(unanimity_log(), method="exact").set_index(["domain", "statistic"])
    assert exact.loc[("all", "unanimous"), "ci_low"] == pytest.approx(proportion_ci(2, 3, method="exact")[0])


def test_unanimity_interval_narrows_with_items():
    widths = []
    for copies in (2, 50):
        r = dp.unanimity_shares(unanimity_log(copies)).set_index(["domain", "statistic"]).loc[("all", "unanimous")]
        assert r["estimate"] == pytest.approx(2 / 3) and r["n"] == 3 * copies
        assert r["ci_low"] < r["estimate"] < r["ci_high"]
        widths.append(r["ci_high"] - r["ci_low"])
    assert widths[1] < widths[0] / 3


# ---------------------------------------------------------------------------
# SPAR

def test_spar_coverage_counts_items_and_fills_zero():
    df = pd.concat([tidy([("a", "q1", "T", 1, 0.9), ("a", "q2", "T", 0, 0.4)], probe="answer"),
                    tidy([("b", "q1", "T", np.nan, 0.3)], probe="other_confidence")])
    out = dp.spar_coverage(df)
    assert list(out.columns) == list(dp.SPAR_PROBES.values())
    assert out.loc["a", dp.SPAR_PROBES["answer"]] == 2
    assert out.loc["a", dp.SPAR_PROBES["other_confidence"]] == 0
    assert out.loc["b", dp.SPAR_PROBES["other_confidence"]] == 1
    assert out.loc["b", dp.SPAR_PROBES["prospective"]] == 0


def spar_runs_table():
    return pd.DataFrame([
        ("m1", "prospective", "f1", True, "chosen"),
        ("m1", "prospective", "f2", False, "incomplete: 300 of 500 items with a valid judgment"),
        ("m2", "prospective", "f3", False, "incomplete: 420 of 500 items with a valid judgment"),
        ("m2", "prospective", "f4", False, "scored against another phase-1 run (3 answered items disagree with x)"),
        ("m2", "answer", "f5", True, "chosen"),
        ("m3", "answer", "f6", False, "older run of the same model"),
        ("m3", "answer", "f7", False, "older run of the same model"),
    ], columns=["model", "probe", "file", "chosen", "reason"])


def test_spar_left_out_groups_files_by_short_reason():
    out = dp.spar_left_out(spar_runs_table()).set_index("reason")
    assert out.loc["incomplete (fewer than 450 valid judgments)", "files"] == 2
    assert out.loc["incomplete (fewer than 450 valid judgments)", "models"] == "m1, m2"
    assert out.loc["scored against another phase-1 run", "files"] == 1
    assert out.loc["older run of the same model", "models"] == "m3"
    assert out["files"].sum() == 5 and "chosen" not in out.index


def test_spar_lost_games_are_models_with_no_chosen_game():
    assert dp.spar_lost_games(spar_runs_table()) == ["m2"]


def test_spar_p_yes_by_decision_pools_rows_and_resamples_models():
    rows = []
    for model, shift in (("a", 0.0), ("b", 0.1), ("c", -0.1)):
        rows += [(model, f"q{i}", "answer", 0.8 + shift) for i in range(4)]
        rows += [(model, f"p{i}", "pass", 0.2 + shift) for i in range(2)]
    df = pd.DataFrame(rows, columns=["model", "item_id", "decision", "p_yes"]).assign(probe="prospective")
    df.loc[0, "p_yes"] = np.nan  # a row without a token probability is left out
    df = pd.concat([df, df.assign(probe="answer")])  # other probes are ignored
    out = dp.spar_p_yes_by_decision(df, n_boot=500).set_index("decision")
    assert out.loc["answer", "n"] == 11 and out.loc["pass", "n"] == 6
    assert out.loc["answer", "estimate"] == pytest.approx((3 * 0.8 + 4 * 0.9 + 4 * 0.7) / 11)
    assert out.loc["pass", "estimate"] == pytest.approx(0.2)
    assert out.loc["pass", "models"] == 3
    for d in ("answer", "pass"):
        assert out.loc[d, "ci_low"] <= out.loc[d, "estimate"] <= out.loc[d, "ci_high"]
    assert out.loc["pass", "ci_high"] - out.loc["pass", "ci_low"] > 0.05  # models differ by 0.1
    assert dp.models_with_values(df, "prospective", "p_yes") == ["a", "b", "c"]


def test_spar_games_and_unnamed_variants():
    runs = pd.DataFrame({
        "model": ["a", "b", "c", "c", "d"], "probe": "prospective",
        "file": ["x/a_temp0.0_1_game_data.json", "x/b_temp1.0_2_game_data_g.json",
                 "x/c_temp1.0_3_game_data.json", "x/c_consider_temp1.0_4_game_data.json",
                 "x/d_temp1.0_5_game_data.json"],
        "temperature": [0.0, 1.0, 1.0, 1.0, 1.0], "variant": ["game", "game", "game", "consider", "consider"],
        "wording": ["w1", "w2", "w1", "w3", "w3"], "chosen": [True, True, True, False, False]})
    games = dp.spar_games(runs)
    assert games["model"].tolist() == ["a", "b", "c"]  # temperature 0 first
    assert games.set_index("model")["copy"].to_dict() == {"a": False, "b": True, "c": False}
    assert dp.spar_unnamed_variants(runs) == ["d"]  # c's consider run says so in its name


def temperature_check(rate1=0.9, auroc1=0.55, wordings=("w1", "w2")):
    rows = []
    for model in ("m1", "m2"):
        for t, wording, rate, auroc in ((0.0, wordings[0], 0.5, 0.54), (1.0, wordings[1], rate1, auroc1)):
            rows.append((model, "answer_rate", t, wording, 500, rate, rate - 0.04, rate + 0.04))
            rows.append((model, "auroc", t, wording, 500, auroc, auroc - 0.05, auroc + 0.05))
        rows.append((model, "agreement", np.nan, None, 500, 0.8 if model == "m1" else 0.7, 0.76, 0.84))
    cols = ["model", "statistic", "temperature", "wording", "n", "estimate", "ci_low", "ci_high"]
    return pd.DataFrame(rows, columns=cols).assign(file="f")


def test_spar_temperature_table_sets_the_two_games_side_by_side():
    out = dp.spar_temperature_table(temperature_check())
    m1 = out[out["model"] == "m1"].set_index("statistic")
    assert m1.loc["share answered", "temperature 0"] == "0.50 (95% CI 0.46 to 0.54)"
    assert m1.loc["share answered", "temperature 1"] == "0.90 (95% CI 0.86 to 0.94)"
    assert m1.loc["same decision at 0 and 1", "temperature 1"] == ""
    assert (out["same wording"] == "no").all()
    same = dp.spar_temperature_table(temperature_check(wordings=("w1", "w1")))
    assert (same["same wording"] == "yes").all()


def test_spar_temperature_sentence_follows_the_numbers():
    text = dp.spar_temperature_sentence(temperature_check())
    assert text.startswith("2 models (m1, m2) have a usable game at both temperatures")
    assert "mixes temperature with wording" in text
    assert "share answered changes by the same +0.40 in every model; the two intervals are disjoint for both models" in text
    assert "AUROC of the decision changes by the same +0.01 in every model; the two intervals are disjoint for neither" in text
    assert "same decision on 70% to 80%" in text and "changes how often a model answers" in text
    close = dp.spar_temperature_sentence(temperature_check(rate1=0.52, wordings=("w1", "w1")))
    assert "share one wording" in close and "resolve no change in either" in close
    apart = dp.spar_temperature_sentence(temperature_check(auroc1=0.75))
    assert "are not one measurement" in apart and "\u22120" not in apart
    lower = dp.spar_temperature_sentence(temperature_check(rate1=0.3))
    assert "changes by the same \u22120.20 in every model" in lower and "between" not in lower
    assert dp.spar_temperature_sentence(temperature_check().iloc[:0]).startswith("No model")


# ---------------------------------------------------------------------------
# imputed confidences

def imputed_atlas():
    """m1: four items, two imputed (answers kept: right, wrong); m2: one stated 0.5; m3 clean."""
    rows = [("m1", "1", 1.0, 0.9, "ok"), ("m1", "2", 0.0, 0.7, "ok"), ("m1", "3", 1.0, np.nan, "imputed"),
            ("m1", "4", 0.0, np.nan, "imputed"), ("m2", "1", 1.0, 0.5, "ok"), ("m2", "2", 1.0, 0.8, "ok"),
            ("m3", "1", 0.0, 0.6, "ok"), ("m3", "2", 1.0, np.nan, "imputed")]
    return pd.DataFrame(rows, columns=["model", "item_id", "correct", "confidence", "parse_status"]).assign(
        probe="verbal_confidence", domain="d")


def test_imputed_confidences_are_counted_per_model():
    out = dp.imputed_confidences(imputed_atlas())
    assert out["model"].tolist() == ["m1", "m3"]  # most imputed first; m2 has none
    m1 = out.iloc[0]
    assert (m1["rows"], m1["imputed"], m1["with_confidence"]) == (4, 2, 2) and m1["share"] == 0.5
    assert dp.stated_at(imputed_atlas(), 0.5).to_dict("records") == [{"model": "m2", "rows": 1}]
    assert len(dp.with_confidence(imputed_atlas())) == 5


def test_imputed_accuracy_compares_kept_and_lost_rows():
    out = dp.imputed_accuracy(imputed_atlas(), "m1").set_index("rows")
    assert (out.loc["with a confidence", "k"], out.loc["with a confidence", "n"]) == (1, 2)
    assert (out.loc["imputed", "k"], out.loc["imputed", "n"]) == (1, 2)
    lo, hi = proportion_ci(1, 2)
    assert (out.loc["imputed", "ci_low"], out.loc["imputed", "ci_high"]) == (pytest.approx(lo), pytest.approx(hi))


def test_overview_counts_the_rows_each_estimate_uses():
    out = dp.overview(imputed_atlas(), n_boot=100).set_index(["domain", "statistic"])
    assert out.loc[("all", "accuracy"), "rows"] == 8
    assert out.loc[("all", "mean_confidence"), "rows"] == 5
    assert out.loc[("all", "mean_confidence"), "estimate"] == pytest.approx((0.9 + 0.7 + 0.5 + 0.8 + 0.6) / 5)


# ---------------------------------------------------------------------------
# LLM Calibration Study

def small_cal():
    rows = []
    for model in ("m1", "m2"):
        for i, cat in enumerate(["law", "law", "law", "math"]):
            rows.append((model, str(i), cat, 1, 0.5 if i else np.nan, "verbal_confidence"))
            if model == "m1":
                rows.append((model, str(i), cat, 1, 0.6, "logit_confidence"))
    return pd.DataFrame(rows, columns=["model", "item_id", "domain", "correct", "confidence", "probe"])


def test_calibration_probes_counts_usable_missing_and_out_of_range():
    summary = pd.DataFrame({"model": ["m1", "m2", "dead"], "included": [True, True, False],
                            "verbal_confidence_out_of_range": [1, 0, 9],
                            "logit_confidence_out_of_range": [0, 0, 0],
                            "linguistic_confidence_out_of_range": [0, 0, 0]})
    out = dp.calibration_probes(small_cal(), summary).set_index("confidence")
    stated = out.loc["stated number"]
    assert (stated["models"], stated["items"], stated["usable values"]) == (2, 4, 6)
    assert stated["outside 0 to 1, set missing"] == 1  # the excluded model's 9 do not count
    assert stated["missing upstream"] == 2 - 1
    assert out.loc["from token probabilities", "models"] == 1
    assert out.loc["stated in words", "usable values"] == 0
    assert dp.calibration_dropped(summary) == ["dead"]
    assert dp.models_without(small_cal(), "logit_confidence") == ["m2"]


def test_key_differences_by_category_and_agreement():
    keys = pd.DataFrame({"item_id": ["0", "1"], "category": ["law", "law"]})
    out = dp.key_differences_by_category(keys, small_cal())
    assert out["category"].tolist() == ["law", "math"]  # most differences first
    law = out.set_index("category").loc["law"]
    assert (law["k"], law["n"]) == (2, 3) and law["estimate"] == pytest.approx(2 / 3)
    assert out.set_index("category").loc["math", "k"] == 0
    agree = dp.key_agreement(keys, small_cal()).iloc[0]
    assert (agree["k"], agree["n"]) == (2, 4) and agree["estimate"] == pytest.approx(0.5)
    lo, hi = proportion_ci(2, 4)
    assert (agree["ci_low"], agree["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))


# ---------------------------------------------------------------------------
# prose

def test_fmt_estimate_prints_estimate_interval_and_n():
    row = pd.Series({"estimate": 0.8428, "ci_low": 0.767, "ci_high": 0.8966, "n": 2282})
    assert dp.fmt_estimate(row, "judgment") == "0.84 (95% CI 0.77 to 0.90; 2,282 judgments)"
    assert dp.fmt_estimate(row, "judgment", estimate=False) == "95% CI 0.77 to 0.90; 2,282 judgments"
    assert dp.fmt_estimate(row, "item", digits=1, pct=True) == "84.3% (95% CI 76.7% to 89.7%; 2,282 items)"
    neg = pd.Series({"estimate": -0.035, "ci_low": -0.114, "ci_high": 0.045, "n": 1})
    assert dp.fmt_estimate(neg, "model", digits=3) == "\u22120.035 (95% CI \u22120.114 to 0.045; 1 model)"
    bare = pd.Series({"estimate": 0.5, "ci_low": np.nan, "ci_high": np.nan, "n": 1})
    assert dp.fmt_estimate(bare, "item") == "0.50 (no interval; 1 item)"


# ---------------------------------------------------------------------------
# the real Atlas log

def test_real_atlas_overview_has_six_domains_and_33_models(mirror):
    import metacog.data

    atlas = metacog.data.load("atlas")
    out = dp.overview(atlas, n_boot=200)
    domains = set(out["domain"]) - {"all"}
    assert len(domains) == 6
    assert (out["models"] == 33).all()
    everything = out[(out["domain"] == "all") & (out["statistic"] == "accuracy")].iloc[0]
    assert everything["rows"] == 47151 and everything["items"] == 1500
    assert everything["ci_low"] < everything["estimate"] < everything["ci_high"]
    assert len(dp.partial_models(atlas)) < 33


def test_real_atlas_imputed_counts(mirror):
    import metacog.data

    atlas = metacog.data.load("atlas")
    out = dp.imputed_confidences(atlas).set_index("model")
    assert int(out["imputed"].sum()) == 985 and len(out) == 5
    gpt = out.loc["openai/gpt-oss-120b"]
    assert (gpt["imputed"], gpt["rows"], gpt["with_confidence"]) == (980, 1500, 520)
    assert out.index[0] == "openai/gpt-oss-120b"
    assert int(dp.stated_at(atlas, 0.5)["rows"].sum()) == 10


def test_battery_model_note_counts_t1_t5_and_declined_t6_items():
    """Planted Battery rows, as the loader gives them: right on 3 of 4 T1-T5 items, KEEP on 1 of
    those 3; in T6 two of three items declined (scored wrong, KEEP recorded as the decision with
    no confidence). The sentence states each count, and r uses the judged items only."""
    def row(item, track, probe, conf, correct, decision):
        return {"model": "M", "item_id": f"{track}:{item}", "probe": probe, "track": track,
                "confidence": conf, "correct": correct, "decision": decision,
                "parse_status": "no_answer" if conf != conf else "ok"}
    nan = float("nan")
    rows = [row(i, "t1_overhypothesis", "keep_withdraw", c, ok, "")
            for i, (c, ok) in enumerate([(1.0, 1.0), (0.0, 1.0), (0.0, 1.0), (1.0, 0.0)])]
    rows += [row(0, "t6_prospective", "keep_withdraw", nan, 0.0, "KEEP"),
             row(1, "t6_prospective", "keep_withdraw", nan, 0.0, "KEEP"),
             row(2, "t6_prospective", "keep_withdraw", 0.0, 1.0, "WITHDRAW"),
             row(0, "t6_prospective", "path_choice", 0.0, 0.0, "DECLINE"),
             row(1, "t6_prospective", "path_choice", 0.0, 0.0, "DECLINE"),
             row(2, "t6_prospective", "path_choice", 1.0, 1.0, "ANSWER_DIRECTLY")]
    frame = pd.DataFrame(rows)
    s = dp.battery_model_note(frame, "M")
    assert "right on 3 of 4 items in tracks T1–T5 yet record KEEP on only 1 of those 3" in s
    assert "declines 2 of 3 items, which are scored wrong (0 right) while 2 of them still carry KEEP" in s
    conf = [1, 0, 0, 1, 0]
    ok = [1, 1, 1, 0, 1]
    r = np.corrcoef(conf, ok)[0, 1]
    assert f"r = {r:.2f}".replace("-", "−") in s and "over the 5 items it judged" in s
    d = dp.declined_judgments(frame)
    assert "2 such judgments by 1 model, all of them M's" in d and "(keep_withdraw)" in d
    assert dp.declined_judgments(frame[frame["parse_status"] == "ok"]).startswith("No judgment")


def test_real_battery_keeps_no_judgment_of_a_declined_item(mirror):
    """The loader: a KEEP/BET recorded for a T6 item the model declined has no confidence
    (parse_status 'no_answer'), every other judgment keeps its code; path_choice is untouched."""
    import metacog.data

    b = metacog.data.load("battery")
    key = ["model", "item_id"]
    choice = b[b["probe"] == "path_choice"].set_index(key)["decision"].astype(str)
    for probe in ("keep_withdraw", "bet_nobet"):
        j = b[b["probe"] == probe].set_index(key)
        declined = choice.reindex(j.index).eq("DECLINE").to_numpy()
        assert declined.sum() > 0
        assert j.loc[declined, "confidence"].isna().all()
        assert (j.loc[declined, "parse_status"].astype(str) == "no_answer").all()
        assert j.loc[declined, "decision"].astype(str).isin(["KEEP", "WITHDRAW", "BET", "NO_BET"]).all()
        assert j.loc[~declined, "confidence"].notna().all()
    assert b.loc[b["probe"] == "path_choice", "confidence"].notna().all()
