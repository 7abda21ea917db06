"""The counterfactual design's known bias, on a planted panel (tests/planted.py) with no individual
metacognition (kappa = 0): a counterfactual judgment exists only after a correct answer with the
context, and that selection alone lifts the self-minus-other τ-b above 0. The pairwise chapter's
verdict must not read that as a self-advantage; the same planted panel asked prospectively must
not be called above the line either."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from planted import PlantedPanel  # noqa: E402

from metacog.benchmarks import load_items  # noqa: E402
from metacog.hypotheses import pairwise as hp  # noqa: E402
from metacog.hypotheses.common import TIMING  # noqa: E402
from metacog.hypotheses.verdict import INSUFFICIENT, NEGLIGIBLE, SUPPORTED  # noqa: E402

pytestmark = pytest.mark.skipif(not load_items("mmlu_pro"), reason="no MMLU-Pro items")

N_ITEMS = 2000


@pytest.fixture(scope="module")
def planted_null():
    panel = PlantedPanel(8, 0.0, 0, ["mmlu_pro"])
    ids = list(panel.items["mmlu_pro"])[:N_ITEMS]
    out = {}
    for probe in ("counterfactual", "prospective"):
        truth = panel.truth("mmlu_pro", ids, probes=[probe], check=False)
        C = truth.pivot(index="item_id", columns="model", values="confidence")
        Y = truth.pivot(index="item_id", columns="model", values="correct")
        r = hp.analyse(C, Y, n_perm=49, n_boot=200, control=False, n_null=20, seed=0)
        out[probe] = r.assign(panel=f"planted {probe}", timing=TIMING[probe])
        fixed = hp.bootstrap_taus(C.to_numpy(float), Y.to_numpy(float), n_boot=200, seed=0, models=False)
        out[probe + " fixed panel"] = fixed.set_index("statistic").loc["self minus other"]
    return out


def test_the_counterfactual_selection_biases_self_minus_other_upwards_at_a_planted_null(planted_null):
    row = planted_null["counterfactual"].set_index("subset").loc["all items"]
    # no model knows anything about itself, yet self minus other is above 0, and for these 8
    # models (items resampled, the panel held fixed) its interval lies wholly above 0
    assert row["self_minus_other"] > 0, row
    fixed = planted_null["counterfactual fixed panel"]
    assert fixed["estimate"] == pytest.approx(row["self_minus_other"]) and fixed["ci_low"] > 0, fixed
    # the chapter's interval also resamples the models, so it is at least as wide
    assert row["self_minus_other_ci_high"] - row["self_minus_other_ci_low"] > fixed["ci_high"] - fixed["ci_low"]
    pro = planted_null["prospective"].set_index("subset").loc["all items"]
    assert pro["self_minus_other_ci_low"] < 0 < pro["self_minus_other_ci_high"], pro


def test_the_chapter_does_not_call_the_planted_null_above_the_line(planted_null):
    cf = hp.verdicts(planted_null["counterfactual"])
    assert cf and all(v.status == INSUFFICIENT and v.basis == "caveat" and "selection" in v.reason for v in cf)
    pro = hp.verdicts(planted_null["prospective"])
    assert pro and all(v.status in (NEGLIGIBLE, INSUFFICIENT) for v in pro)
    assert not any(v.status == SUPPORTED for v in cf + pro)
