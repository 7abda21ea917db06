import numpy as np
import pandas as pd
import pytest

from metacog import stats

from metacog.power import simulate
from metacog.stats.structure import rank_one, rank_one_table, scree


def test_one_factor_population_is_summarised_as_rank_one():
    pop = simulate.population(12, 800, kappa=0.0, seed=3)
    r = rank_one(pop.confidence.astype(float), n_iter=10, seed=0)
    assert r["n_models"] == 12 and r["n_items"] == 800
    assert r["pa_factors"] == 1
    assert abs(r["eig_share"] - pop.first_factor_share) < 0.05
    assert r["eig2"] < 1.0
    # the share is the one-factor solution's, recomputable from the package in one call
    fa = stats.factor_analysis(stats.tetrachoric(pop.confidence.astype(float)).rho, 1)
    assert r["share"] == pytest.approx(float(fa.share.iloc[0]))


def test_two_independent_blocks_are_not_rank_one():
    a = simulate.population(6, 800, seed=1).confidence.astype(float)
    b = simulate.population(6, 800, seed=2).confidence.astype(float)
    b.columns = [f"other{c}" for c in b.columns]
    X = pd.concat([a.reset_index(drop=True), b.reset_index(drop=True)], axis=1)
    r = rank_one(X, n_iter=10, seed=0)
    assert r["pa_factors"] >= 2
    assert r["eig2"] > 2.0


def test_table_and_scree_have_one_entry_per_matrix_and_factor():
    pop = simulate.population(5, 300, seed=0)
    mats = {"a": pop.confidence.astype(float), "b": pop.correct.astype(float)}
    t = rank_one_table(mats, n_iter=5)
    assert list(t.index) == ["a", "b"]
    s = scree(mats)
    assert len(s) == 10 and s.groupby("matrix")["eigenvalue"].sum().round(6).eq(5).all()


def test_classify_uses_parallel_analysis_then_the_eigenvalue_ratio():
    from metacog.stats.structure import classify

    assert classify({"pa_factors": 1, "eig1": 3.0, "eig2": 2.0}) == "rank one"
    assert classify({"pa_factors": 3, "eig1": 20.0, "eig2": 2.0}) == "one dominant factor"
    assert classify({"pa_factors": 3, "eig1": 7.0, "eig2": 2.9}) == "several factors"
