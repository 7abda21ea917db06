"""The population null keeps the shared item axis, and the ratio is judged against its smallest
effect of interest."""

import numpy as np
import pandas as pd
import pytest

from metacog.hypotheses.miscalibration import audit as mc
from metacog.hypotheses.miscalibration import null as mn
from metacog.hypotheses.miscalibration import population as hpop
from metacog.hypotheses.verdict import INSUFFICIENT, NEGLIGIBLE, SUPPORTED, decide_meaningful


def _main_effects(n=1000, m=60, extra=0.0, seed=0):
    """Errors from item difficulty; confidence from a shared item axis, a model level and a drop
    when wrong; ``extra`` adds a pull towards confidence that acts on errors only, item by item."""
    rng = np.random.default_rng(seed)
    d = rng.normal(0, 1, n)
    W = rng.random((n, m)) < 1 / (1 + np.exp(-(d[:, None] - 0.5)))
    eta = rng.normal(0, 1.5, n)[:, None] + rng.normal(0, 0.5, m)[None, :] - W + extra * rng.normal(0, 1, n)[:, None] * W
    C = rng.random((n, m)) < 1 / (1 + np.exp(-eta))
    return np.ones((n, m), bool), C, W


def test_the_item_axis_null_is_calibrated_where_the_independence_null_is_not():
    R, C, W = _main_effects(seed=1)
    co = mn.cooccurrence_item_axis(R, C, W, n_boot=100, n_perm=50, n_refit=5)
    assert co["observed"] / co["expected"] == pytest.approx(1.0, abs=0.03)
    assert co["null_mean"] == pytest.approx(co["expected"], rel=0.02)
    assert co["dispersion"] / co["dispersion_expected"] == pytest.approx(1.0, abs=0.15)
    old = mc.cooccurrence(W, C & W, n_boot=20, n_perm=5)
    assert old["observed"] / old["expected"] > 1.2  # the shared axis read as clustering


def test_errors_pulled_together_beyond_the_item_axis_are_found():
    R, C, W = _main_effects(extra=1.5, seed=2)
    co = mn.cooccurrence_item_axis(R, C, W, n_boot=200, n_perm=50, n_refit=5)
    lo, _ = mc.ratio_interval(co["obs_boot"], co["exp_boot"])
    assert lo > 1.05 and co["dispersion"] / co["dispersion_expected"] > 1.5


def test_a_ratio_within_the_smallest_effect_of_interest_is_negligible():
    row = {"panel": "big", "domain": hpop.ALL, "ratio": 1.023, "ratio_ci_low": 1.021, "ratio_ci_high": 1.025,
           "models": 80, "items": 12000, "ocw": 50000}
    (v,) = hpop.verdicts(pd.DataFrame([row]))
    assert v.status == NEGLIGIBLE and "smallest effect of interest" in v.sentence()
    (v,) = hpop.verdicts(pd.DataFrame([{**row, "ratio": 1.3, "ratio_ci_low": 1.2, "ratio_ci_high": 1.4}]))
    assert v.status == SUPPORTED
    (v,) = hpop.verdicts(pd.DataFrame([{**row, "ratio": 1.1, "ratio_ci_low": 1.05, "ratio_ci_high": 1.15}]))
    assert v.status == INSUFFICIENT
    text = hpop.reading(pd.DataFrame([{**row, "dispersion_ci_low": 0.9}]))
    assert "No panel" in text and "partly a property of the item" not in text


def test_decide_meaningful_both_directions():
    assert decide_meaningful("c", "s", 0.8, 0.7, 0.85, line=1, margin=0.1, direction="less").status == SUPPORTED
    assert decide_meaningful("c", "s", 0.95, 0.93, 0.97, line=1, margin=0.1, direction="less").status == NEGLIGIBLE
    assert decide_meaningful("c", "s", 0.0, -0.1, 0.1, line=0, margin=0.05).status == INSUFFICIENT
    with pytest.raises(ValueError):
        decide_meaningful("c", "s", 0, -1, 1, margin=0.1, direction="differs")


def test_abstention_sentence_follows_the_rates():
    from metacog.hypotheses import miscalibration as hm

    t = pd.DataFrame({"policy": ["c0", "c1", "c2"], "abstain_rate": [0.0, 0.02, 0.01]})
    assert "barely use their way out" in hm.abstention_sentence({"s": t})
    assert "do use their way out" in hm.abstention_sentence({"s": t.assign(abstain_rate=[0, 0.3, 0.1])})
    assert hm.abstention_sentence({}) == ""
