"""Paper 1's own quantities: internal against population AUROC (DeLong paired), the
base-rate-matched null of the mean pairwise tau, and pair counting."""

import numpy as np
import pandas as pd
import pytest

from metacog import stats
from metacog.hypotheses import pairwise as hp
from metacog.hypotheses.pairwise import population as pp
from metacog.power import simulate


def _frames(C, Y):
    cols = [f"m{j}" for j in range(C.shape[1])]
    return pd.DataFrame(C, columns=cols), pd.DataFrame(Y.astype(float), columns=cols)


def _shared_axis_panel(n_items=1500, n_models=10, seed=0, planted=None, own=1.0):
    """Correctness from a shared difficulty plus each model's own item effect; every model's
    confidence reads the shared difficulty (plus judgment noise), and the ``planted`` model's
    also reads its own item effect."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n_items, 1))
    u = rng.normal(size=(n_items, n_models))
    Y = (d + own * u + 0.3 * rng.normal(size=(n_items, n_models)) > 0).astype(float)
    C = d + 0.3 * rng.normal(size=(n_items, n_models))
    if planted is not None:
        C[:, planted] = d[:, 0] + own * u[:, planted]
    return _frames(C, Y)


def test_planted_individual_information_puts_internal_above_population():
    C, Y = _shared_axis_panel(planted=0)
    t = stats.internal_population(C, Y).set_index("model")
    assert t.loc["m0", "auroc_internal"] > t.loc["m0", "auroc_population"]
    assert t.loc["m0", "ci_low"] > 0
    # the models without the planted signal do not beat the population
    assert (t.drop(index="m0")["ci_low"] <= 0).all()
    assert (t["n_items"] == len(C)).all() and (t["n_correct"] == Y.sum().astype(int).to_numpy()).all()


def test_rank_one_panel_interval_covers_zero():
    # every model's confidence is its own monotone function of one shared axis: the same item
    # order for all, so its own confidence and the others' mean rank items alike
    rng = np.random.default_rng(2)
    d = rng.normal(size=(800, 1))
    C = np.hstack([a * d + b for a, b in zip(rng.uniform(0.5, 2, 8), rng.normal(size=8))])
    Y = (d + rng.normal(size=(800, 8)) > 0).astype(float)
    t = stats.internal_population(*_frames(C, Y))
    assert ((t["ci_low"] <= 0) & (t["ci_high"] >= 0)).all()
    np.testing.assert_allclose(t["auroc_internal"], t["auroc_population"])


def test_internal_and_population_are_the_defined_aurocs():
    C, Y = _shared_axis_panel(n_items=300, n_models=5, seed=1, planted=2)
    C.iloc[:7, 1] = np.nan  # missing judgments: that model's items, and the others' means, skip them
    t = stats.internal_population(C, Y).set_index("model")
    for m in C.columns:
        others = C.drop(columns=m).mean(axis=1)
        keep = C[m].notna()
        assert t.loc[m, "auroc_internal"] == pytest.approx(stats.auroc(Y[m][keep], C[m][keep]))
        assert t.loc[m, "auroc_population"] == pytest.approx(stats.auroc(Y[m][keep], others[keep]))
    assert t.loc["m1", "n_items"] == 293


def test_delong_paired_interval_agrees_with_a_paired_bootstrap():
    C, Y = _shared_axis_panel(n_items=600, n_models=6, seed=3, planted=0)
    y, a = Y["m0"].to_numpy(), C["m0"].to_numpy()
    b = C.drop(columns="m0").mean(axis=1).to_numpy()
    r = stats.delong_paired(y, a, b)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(y), (1000, len(y)))
    diffs = [stats.auroc(y[i], a[i]) - stats.auroc(y[i], b[i]) for i in idx]
    assert r["se"] == pytest.approx(np.std(diffs), rel=0.15)
    assert r["ci_low"] < r["diff"] < r["ci_high"]


def test_base_rate_null_keeps_base_rates_and_has_mean_zero_without_alignment():
    rng = np.random.default_rng(4)
    X = (rng.random((200, 6)) < rng.uniform(0.2, 0.8, 6)).astype(float)
    X[rng.random(X.shape) < 0.05] = np.nan
    S = stats.pairwise.shuffle_columns(X, rng)
    np.testing.assert_array_equal(np.nansum(S, axis=0), np.nansum(X, axis=0))  # base rates kept exactly
    np.testing.assert_array_equal(np.isnan(S).sum(axis=0), np.isnan(X).sum(axis=0))
    assert not np.array_equal(np.nan_to_num(S, nan=-1), np.nan_to_num(X, nan=-1))  # alignment broken
    # no alignment at all: the observed mean tau sits inside the null, whose mean is ~0
    Cn = pd.DataFrame((rng.random((400, 8)) < 0.6).astype(float))
    Yn = pd.DataFrame((rng.random((400, 8)) < 0.4).astype(float))
    r = stats.base_rate_null(Cn, Yn, n_null=300, seed=1).iloc[0]
    assert abs(r["null_mean"]) < 0.003 and r["null_low"] < 0 < r["null_high"]
    assert r["null_low"] <= r["mean_tau"] <= r["null_high"]
    # a shared difficulty axis: tau far above this null (which is why the book adds a stricter one)
    pop = simulate.population(8, 400, seed=0)
    s = stats.base_rate_null(pop.confidence, pop.correct, n_null=100).iloc[0]
    assert abs(s["null_mean"]) < 0.005 and s["mean_tau"] > s["null_high"] and s["p_value"] < 0.02


def test_pairwise_table_names_both_nulls():
    pop = simulate.population(6, 300, seed=1)
    t = hp.analyse(pop.confidence, pop.correct, n_perm=49, n_boot=20, n_null=50)
    row = t.set_index("subset").loc["all items"]
    assert abs(row["null_base_rate"]) < 0.01 < row["null_difficulty"]
    assert row["pairs_unordered"] == 15
    shown = hp.display_table(t.assign(panel="sim"))
    assert {"base-rate-matched null mean (paper 1's)", "difficulty-stratified null mean (stricter)"} <= set(shown)


@pytest.mark.parametrize("n", [2, 5, 19, 20])
def test_unordered_pairs_is_n_choose_2(n):
    from math import comb

    assert stats.unordered_pairs(n) == comb(n, 2)
    assert hp.models_from_pairs(comb(n, 2)) == n
    with pytest.raises(ValueError):
        hp.models_from_pairs(comb(n, 2) + 1)


def test_counts_and_sentence_and_reference_rows():
    C, Y = _shared_axis_panel(planted=0)
    C = C.rename(columns={"m0": "openai/gpt-4o"})
    Y = Y.rename(columns={"m0": "openai/gpt-4o"})
    t = stats.internal_population(C, Y).assign(panel="planted", source="sim", benchmark="sim",
                                              probe="prospective", timing="before answering")
    k = pp.counts(t).iloc[0]
    assert k["internal_above"] == 1 and k["sufficient"] == 10
    assert k["internal_above"] + k["internal_below"] + k["covers_zero"] == k["sufficient"]
    said = pp.count_sentence(t)
    assert "after Holm's correction over its 10 models" in said and "clearly above the population's for 1" in said
    ref = pp.reference_rows(t)
    assert list(ref["data"]) == ["paper 1: SQuAD", "paper 1: MMLU-Pro", "planted"]
    assert ref["auroc_internal"].iloc[0] == 0.731 and ref["ci_low"].iloc[-1] > 0
    assert ref["judgment made"].iloc[-1] == "before answering"


def test_same_model_allows_a_prefix_and_a_release_date_only():
    assert pp.same_model("openai/gpt-4o", "gpt-4o") and pp.same_model("gpt-4o-2024-08-06", "gpt-4o")
    assert not pp.same_model("gpt-4o-mini", "gpt-4o") and not pp.same_model("gpt-4o-mini-2024-07-18", "gpt-4o")
