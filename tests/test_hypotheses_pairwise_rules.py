"""The pairwise chapter's decision rules on planted data: the equivalence reading of "not
supported" with its power condition, the fair internal-against-population test for yes/no judges,
third-person panels kept out of the self claims, the sensitivity check without one model, and the
closing prose's grammar."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from metacog.hypotheses import pairwise as hp
from metacog.hypotheses.pairwise import population as pp
from metacog.hypotheses.pairwise import prose
from metacog.hypotheses.pairwise import sensitivity as sv
from metacog.hypotheses.verdict import (INSUFFICIENT, NEGLIGIBLE, NOT_SUPPORTED, SELF_OTHER_MARGIN,
                                        SELF_OTHER_MARGIN_WHY, SUPPORTED, interval_detectable)


def _row(lo, hi, est=None, timing="before answering", panel="P"):
    return {"panel": panel, "subset": "all items", "timing": timing, "models": 10, "items": 500,
            "self_minus_other": (lo + hi) / 2 if est is None else est,
            "self_minus_other_ci_low": lo, "self_minus_other_ci_high": hi}


def test_interval_detectable_is_the_80_percent_power_effect_of_the_interval():
    # se = half-width / 1.96; detectable = (1.96 + 0.8416) se
    assert interval_detectable(-0.01, 0.01) == pytest.approx(0.01 / 1.959964 * (1.959964 + 0.841621), rel=1e-5)
    assert np.isnan(interval_detectable(np.nan, 0.01))


@pytest.mark.parametrize("lo, hi, status, basis", [
    (-0.032, 0.004, INSUFFICIENT, "power"),      # rules out 0.02, but too wide to have 80% power at 0.02
    (-0.010, 0.010, NEGLIGIBLE, "within"),       # inside ±0.02 with a narrow interval: equivalence
    (-0.012, 0.025, INSUFFICIENT, "straddle"),   # reaches across the margin
    (-0.200, -0.010, NOT_SUPPORTED, "below"),    # wholly below zero: the opposite of the claim
    (0.004, 0.012, NEGLIGIBLE, "within"),        # real but wholly inside the margin: negligible
    (-0.022, 0.002, NOT_SUPPORTED, "margin"),    # rules out +0.02 but reaches below −0.02: not inside the line
    (0.030, 0.050, SUPPORTED, "beyond"),
])
def test_self_other_rule_is_the_stated_equivalence_rule_with_its_power_condition(lo, hi, status, basis):
    (v,) = hp.verdicts(pd.DataFrame([_row(lo, hi)]))
    assert (v.status, v.basis) == (status, basis), v.reason
    if basis == "power":
        assert "80% power" in v.reason and "not evidence of absence" in v.reason


def test_self_other_rows_print_the_margin_as_their_line():
    vs = hp.verdicts(pd.DataFrame([_row(0.03, 0.05), _row(-0.01, 0.01)]))
    shown = hp.verdict_display(vs, pd.DataFrame([_row(0, 0)]))
    assert list(shown["line"]) == [SELF_OTHER_MARGIN, SELF_OTHER_MARGIN]
    assert list(shown["judged"]) == ["before answering"] * 2
    assert list(shown["threshold"]) == [f"±{SELF_OTHER_MARGIN:g} around 0"] * 2
    assert list(shown["line_why"]) == [SELF_OTHER_MARGIN_WHY] * 2
    assert list(shown["status"]) == [SUPPORTED, NEGLIGIBLE]


def test_a_counterfactual_panel_cannot_decide_self_against_other():
    cf = "after a correct answer with the context"
    vs = hp.verdicts(pd.DataFrame([_row(0.03, 0.05, timing=cf), _row(-0.01, 0.01, timing=cf)]))
    assert [v.status for v in vs] == [INSUFFICIENT, INSUFFICIENT]
    assert all("selection" in v.reason and v.basis == "caveat" for v in vs)


def test_third_person_panels_decide_no_self_claim():
    t = pd.DataFrame([_row(-0.01, 0.01, timing="before answering, about other people"), _row(0.03, 0.05)])
    vs = hp.verdicts(t)
    assert len(vs) == 1 and vs[0].status == SUPPORTED
    assert list(hp.self_rows(t)["timing"]) == ["before answering"]
    assert pp.is_third_person("before answering, about other people") and not pp.is_third_person("after answering")


def _binary_panel(n_items=2000, n_models=8, seed=0, planted=None, probe="prospective", name="sim", noise=0.5):
    """Yes/no judges that read only the shared difficulty of an item (each at its own yes-rate,
    with judgment ``noise``); the ``planted`` model's judgment also reads its own item effect."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n_items, 1))
    u = rng.normal(size=(n_items, n_models))
    Y = (d + u > 0).astype(float)
    score = d + noise * rng.normal(size=(n_items, n_models))
    if planted is not None:
        score[:, planted] = d[:, 0] + u[:, planted]
    cuts = np.linspace(-0.6, 0.6, n_models)
    C = (score > cuts).astype(float)
    cols = [f"m{j}" for j in range(n_models)]
    C, Y = pd.DataFrame(C, columns=cols), pd.DataFrame(Y, columns=cols)
    return SimpleNamespace(name=name, label=name, source="sim", benchmark="sim", probe=probe, design=None,
                           cut="binary", confidence=C, confidence_raw=C, correct=Y, models=cols)


def test_binary_judges_are_decided_on_the_population_binarised_at_their_own_yes_rate():
    # every judge ranks items exactly as the shared difficulty does, each at its own cut: no
    # model knows more or less than the population, only the number of levels differs
    p = _binary_panel(noise=0.0)
    t = pp.internal_population_table([p])
    assert t["judge_binary"].all()
    # the many-level population mean beats the two-level judges on levels alone...
    assert (t["ci_high"] < 0).sum() >= 6
    (v_mean,) = pp.verdicts(t.drop(columns=["judge_binary"]))
    assert v_mean.status == NOT_SUPPORTED
    # ...binarised at each judge's own yes-rate it says yes on the same items up to the random
    # tie-break at the cut (the leave-one-out mean is level across the judge's own band)
    # (at the two extreme cuts the band is the whole bottom or top level, so the tie-break can
    # only hurt the population there)
    assert (t["diff_matched"].abs() < 0.03).all()
    assert ((t["ci_low_matched"] <= 0) & (t["ci_high_matched"] >= 0)).sum() >= 6
    (v,) = pp.verdicts(t)
    assert v.status == INSUFFICIENT and "binarised at the model's own yes-rate" in v.reason
    k = pp.counts(t).iloc[0]
    assert k["internal_below"] == 0 and k["compared_with"] == pp.POPULATION_MATCHED


def test_binarised_population_says_yes_as_often_as_the_judge():
    p = _binary_panel(n_items=300)
    own, y = p.confidence["m3"], p.correct["m3"]
    m = pp.matched_population(p.confidence, p.correct).set_index("model")
    pop = p.confidence.drop(columns="m3").mean(axis=1)
    k = int(own.sum())

    def auroc_of_top_k(tie_key):  # a binary predictor's AUROC is (TPR + TNR) / 2
        order = np.lexsort((tie_key, -pop.to_numpy()))
        top = np.zeros(len(pop), bool)
        top[order[:k]] = True
        return (top[y == 1].mean() + (~top)[y == 0].mean()) / 2

    # ties at the cut are broken at random: the AUROC lies between the two extreme tie-breaks
    worst, best = auroc_of_top_k(y.to_numpy()), auroc_of_top_k(-y.to_numpy())
    assert worst < best
    assert worst - 1e-12 <= m.loc["m3", "auroc_population_matched"] <= best + 1e-12


def test_a_binary_judge_with_private_knowledge_beats_the_binarised_population():
    t = pp.internal_population_table([_binary_panel(planted=0)]).set_index("model")
    assert t.loc["m0", "ci_low_matched"] > 0


def test_third_person_panel_is_left_out_of_internal_against_population():
    t = pp.internal_population_table([_binary_panel(), _binary_panel(probe="other_confidence", name="others")])
    assert set(t["panel"]) == {"sim"}


def test_internal_against_population_is_decided_on_the_panel_mean_not_a_vote_count():
    p = _binary_panel(n_items=300)
    t = pp.internal_population_table([p])
    t[["ci_low_matched", "ci_high_matched"]] = [-1.0, 1.0]  # every interval covers zero
    (v,) = pp.verdicts(t)
    k = pp.counts(t).iloc[0]
    assert k["internal_above"] == k["internal_below"] == 0 and "Holm" in v.reason
    assert v.statistic == pp.STATISTIC and np.isclose(v.estimate, t["diff_matched"].mean())
    assert "missing" not in v.reason


def test_holm_counts_fewer_than_uncorrected_intervals_at_the_margin():
    # ten models each barely clear an uncorrected 95% interval: Holm over ten keeps none
    t = pd.DataFrame({"panel": "P", "model": [f"m{j}" for j in range(10)], "sufficient": True,
                      "diff": 0.02, "ci_low": 0.001, "ci_high": 0.039, "timing": "before answering",
                      "judge_binary": False})
    k = pp.counts(t).iloc[0]
    assert k["internal_above_uncorrected"] == 10 and k["internal_above"] == 0 and k["covers_zero"] == 10
    assert k["mean_diff_ci_low"] == pytest.approx(0.02) and k["mean_diff"] == pytest.approx(0.02)
    (v,) = pp.verdicts(t)
    assert v.status == SUPPORTED  # the panel-level estimate decides: every model's difference is 0.02


def test_sensitivity_without_a_reversed_model_recomputes_every_verdict():
    p = _binary_panel(n_items=600, n_models=8)
    p.confidence = p.confidence_raw = p.confidence.assign(m7=1 - p.correct["m7"])  # a reversed record
    results = hp.analyse(p.confidence, p.correct, n_perm=99, n_boot=50, n_null=20, control=False).assign(
        panel=p.name, timing="after answering")
    internal = pp.internal_population_table([p])
    s = sv.without_model([p], "m7", results, internal, n_boot=50, seed=0)
    assert list(s["test"]) == ["self minus other τ-b, all items", "self minus other τ-b, contested items",
                               "internal against population AUROC"]
    page = {v.claim.split(":")[0]: v for v in hp.verdicts(results)}
    assert s["estimate_all"].iloc[0] == page["sim, all items"].interval()
    assert (s["changes"] == (s["verdict_all"] != s["verdict_without"])).all()
    # the reversed self-pair pulls self minus other down; without it the estimate rises
    est = lambda txt: float(txt.split(" ")[0].replace("\u2212", "-"))
    assert est(s["estimate_without"].iloc[0]) > est(s["estimate_all"].iloc[0])
    assert "without m7" in sv.sentence(s, "m7")
    assert sv.sentence(s.iloc[:0], "m7").startswith("No panel")
    assert sv.without_model([p], "absent", results, internal).empty


def test_closing_prose_says_either_for_a_denial_over_two_subsets():
    from metacog.hypotheses.verdict import decide

    two = [decide(f"P, {s}: c", "x", 0.0, -0.1, 0.1) for s in ("all items", "contested items")]
    text = prose.verdict_paragraph(two, None, pd.DataFrame({"panel": ["P"], "timing": ["before answering"]}))
    assert "cannot be told in either of its two panel-subsets" in text and "in both" not in text
    ok = [decide(f"P, {s}: c", "x", 0.05, 0.03, 0.07) for s in ("all items", "contested items")]
    text = prose.verdict_paragraph(ok, None, pd.DataFrame({"panel": ["P"], "timing": ["before answering"]}))
    assert "in both its panel-subsets" in text


def test_annotate_puts_the_sensitivity_in_the_reason_of_each_verdict_it_covers():
    from metacog.hypotheses.verdict import decide

    v = decide("P, all items: c", "self minus other τ-b", 0.01, -0.01, 0.03)
    other = decide("Q, all items: c", "self minus other τ-b", 0.01, -0.01, 0.03)
    t = pd.DataFrame([{"panel": "P", "test": "self minus other τ-b, all items", "estimate_all": v.interval(),
                       "verdict_all": v.status, "estimate_without": "0.050 (95% CI 0.030 to 0.070)",
                       "verdict_without": SUPPORTED, "changes": True}])
    a, b = sv.annotate([v, other], t, "m7")
    assert a.reason.endswith("without m7 it reads supported (0.050 (95% CI 0.030 to 0.070); see 'Without one model')")
    assert b.reason == other.reason


def test_mean_pairwise_tau_is_over_pairs_of_different_models():
    """Paper 1's pairs (hp.PAPER1_PAIRS_READING): self-pairs are left out of the mean, its null and
    its FDR share; with a planted self-signal the mean with self-pairs would be higher."""
    from metacog.power.simulate import population

    pop = population(6, 400, kappa=1.0, seed=1)
    row = hp.analyse(pop.confidence, pop.correct, n_perm=19, n_boot=20, control=False, n_null=10) \
        .set_index("subset").loc["all items"]
    K = hp.tau_frame(pop.confidence, pop.correct).to_numpy()
    off = K[~np.eye(6, dtype=bool)]
    assert row["mean_tau"] == pytest.approx(np.nanmean(off))
    assert np.nanmean(K) > row["mean_tau"] + 0.01  # the planted diagonal is not in paper 1's mean
    assert row["pairs"] + row["pairs_undefined"] == 30 and row["pairs_unordered"] == 15
    assert "171" in hp.PAPER1_PAIRS_READING and "self-pairs" in hp.PAPER1_PAIRS_READING


def _mean_row(tau, lo, hi, null, subset="all items", timing="before answering"):
    return {"panel": "P", "subset": subset, "timing": timing, "models": 10, "items": 500,
            "mean_tau": tau, "mean_tau_ci_low": lo, "mean_tau_ci_high": hi, "null_base_rate": null}


def test_paper_1s_own_statistic_is_the_mean_tau_less_its_null_read_against_the_line():
    """The findings row beside paper 1's "mean τ-b 0.037, null 0.000" is the same statistic:
    the mean pairwise τ-b over different models less the base-rate-matched null's mean."""
    rows = pd.DataFrame([_mean_row(0.051, 0.031, 0.071, 0.001), _mean_row(0.012, 0.004, 0.019, 0.002),
                         _mean_row(0.02, -0.01, 0.05, 0.0), _mean_row(0.05, 0.03, 0.07, 0.0, subset="contested items"),
                         _mean_row(0.05, 0.03, 0.07, 0.0, timing=prose.AFTER)])
    vs = hp.excess_verdicts(rows)
    assert len(vs) == 4  # all items only
    above, within, unsure, after = vs
    assert above.status == SUPPORTED and above.estimate == pytest.approx(0.05)
    assert (above.ci_low, above.ci_high) == (pytest.approx(0.03), pytest.approx(0.07))
    assert above.statistic == hp.EXCESS_STATISTIC and above.threshold() == f"±{SELF_OTHER_MARGIN:g} around 0"
    assert within.status == NEGLIGIBLE and "too small to matter" in within.reason  # real, inside the line
    assert unsure.status == INSUFFICIENT
    assert after.claim.startswith("P, all items: after answering") and "not paper 1's measurement" in after.claim
    # the line's reason speaks of this statistic, not of an individual self-advantage
    assert "base-rate-matched null" in above.line_why and "self-advantage" not in above.line_why
