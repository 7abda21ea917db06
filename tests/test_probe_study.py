"""The hidden-state study's summaries (metacog.probe.study.Study), on tables with known answers."""

import numpy as np
import pandas as pd
import pytest

from metacog.probe import study
def _study(ocw_shift=0.0, nonlinear=0.0, seed=0):
    rng = np.random.default_rng(seed)
    rows, sweep = [], []
    for k in range(12):
        group = "OCW" if k % 2 else "CC"
        base = rng.uniform(0.5, 1.5, size=6)  # per-layer displacement of this item, plain prompt
        for layer in range(6):
            d = base[layer] + (ocw_shift if group == "OCW" else 0.0)
            for cond, factor in (("plain", 1.0), ("self_critique", 0.8), ("length_control", 0.9)):
                rows.append({"condition": cond, "prompt_id": f"i{k}", "layer": layer, "group": group,
                             "displacement": d * factor})
            for sigma in study.SWEEP_SIGMAS:
                sweep.append({"sigma": sigma, "prompt_id": f"i{k}", "layer": layer,
                              "displacement": base[layer] * sigma * (1 + nonlinear * sigma)})
    groups = pd.DataFrame({"item_id": [f"i{k}" for k in range(12)],
                           "group": ["OCW" if k % 2 else "CC" for k in range(12)]})
    return study.Study(groups=groups, probe=pd.DataFrame(rows), sweep=pd.DataFrame(sweep))


def test_contrasts_recover_planted_relative_changes():
    c = _study().contrasts(n_boot=200)
    assert list(c.index) == [f"{a} - {b}" for a, b in study.CONTRASTS]
    assert c.loc["self_critique - plain", "rel_change"] == pytest.approx(-0.2)
    assert c.loc["length_control - plain", "rel_change"] == pytest.approx(-0.1)
    assert c.loc["self_critique - length_control", "rel_change"] == pytest.approx(0.8 / 0.9 - 1)
    # layer 0 is left out; every remaining layer is lower under both shorter-displacement prompts
    assert (c["layers"] == 5).all() and (c["layers_below"] == 5).all() and (c["items"] == 12).all()


def test_fragility_covers_zero_without_a_group_effect_and_not_with_one():
    same = _study(ocw_shift=0.0).fragility(n_boot=500)
    assert same["covers_zero"].mean() >= 0.8
    assert set(same["condition"]) == {"plain", "self_critique", "length_control"}
    shifted = _study(ocw_shift=3.0).fragility(n_boot=500)
    assert not shifted["covers_zero"].any()
    assert (shifted["delta"] > 2).all()


def test_sweep_spread_is_zero_for_a_linear_response_and_grows_otherwise():
    assert _study().sweep_spread() == pytest.approx(0.0, abs=1e-12)
    bent = _study(nonlinear=5.0).sweep_spread()
    lo, hi = min(study.SWEEP_SIGMAS), max(study.SWEEP_SIGMAS)
    assert bent == pytest.approx((1 + 5 * hi) / (1 + 5 * lo) - 1)


def test_sweep_linearity_carries_an_interval_over_prompts_and_its_n():
    flat = _study().sweep_linearity(n_boot=300).iloc[0]
    assert flat.prompts == 12 and flat.sigmas == len(study.SWEEP_SIGMAS)
    assert flat.estimate == pytest.approx(0.0, abs=1e-12) and flat.ci_high == pytest.approx(0.0, abs=1e-9)
    s = _study(nonlinear=5.0, seed=3)
    bent = s.sweep_linearity(n_boot=300).iloc[0]
    assert bent.estimate == pytest.approx(s.sweep_spread())  # same statistic as before
    assert bent.ci_low <= bent.estimate <= bent.ci_high
    one = study.Study(groups=s.groups, probe=s.probe, sweep=s.sweep[s.sweep["prompt_id"] == "i0"])
    r = one.sweep_linearity().iloc[0]
    assert r.prompts == 1 and np.isnan(r.ci_low) and not np.isnan(r.estimate)


def test_sweep_sentence_names_each_model_interval_and_count():
    from metacog.hypotheses import miscalibration as hm

    text = hm.sweep_sentence({"local/smollm2-135m": _study(nonlinear=5.0)}, n_boot=200)
    assert "95% CI" in text and "12 prompts" in text and "4 noise levels" in text
    assert hm.sweep_sentence({}) == "n/a (no model probed)"
