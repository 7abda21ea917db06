"""The benchmarks comparison page (notebooks/benchmarks.md): its numbers are the benchmark pages'
own, and its verdicts follow the gate and the format rule as theirs do."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metacog.data import recorded
from metacog.elicit import record
from metacog.hypotheses.verdict import INSUFFICIENT, SUPPORTED
from metacog.pages import benchmark as bp
from metacog.pages.benchmark import compare
from metacog.tidy import tables

MIN_CONFORMANCE, SEED = 0.8, 0


def template(run: str) -> dict:
    """The calls of notebooks/benchmark.md with its default parameters, typed out as the page has
    them (models = [], n_items = 0, probes = [])."""
    models, n_items, probes, seed, min_conformance = [], 0, [], SEED, MIN_CONFORMANCE
    spec = recorded.runs()[run]
    responses = record.gather(run, models=models, n_items=n_items, probes=probes, seed=seed)
    asked_probes = list(probes or spec.probes)
    asked = set(responses["item_id"])
    items = [it for it in record.items_for(spec, n_items or None, seed) if it.item_id in asked]
    kept = tables.conforming_models(responses, min_rate=min_conformance)
    data = responses
    gate = bp.model_gate(data, items=items)
    gain = bp.context_gain(data)
    gain_v = bp.withhold_unformatted(bp.gain_verdicts(gain), responses, kept, min_conformance)
    scores = bp.judgment_scores(data, "prospective", gate)
    has_cf = "counterfactual" in asked_probes and (data["probe"] == "counterfactual").any()
    cf_scores = bp.judgment_scores(data, "counterfactual", gate) if has_cf else scores.iloc[0:0]
    pro_v = bp.withhold_unformatted(bp.judgment_verdicts(scores, "prospective"), responses, kept, min_conformance)
    cf_v = (bp.withhold_unformatted(bp.judgment_verdicts(cf_scores, "counterfactual"), responses, kept,
                                    min_conformance) if has_cf else [])
    return {"gate": gate, "gain": gain, "gain_v": gain_v, "scores": scores, "cf_scores": cf_scores,
            "has_cf": has_cf, "pro_v": pro_v, "cf_v": cf_v}


RUNS = {"SQuAD": "squad", "MMLU-Pro": "mmlu_pro", "LegalBench": "legalbench"}


@pytest.fixture(scope="module")
def table():
    return compare.comparison_table(RUNS, min_conformance=MIN_CONFORMANCE, seed=SEED)


@pytest.mark.parametrize("label", list(RUNS))
def test_every_number_is_the_one_on_the_benchmark_page(table, label):
    page = template(RUNS[label])
    mine = table[table["benchmark"] == label].set_index("model")
    gain = page["gain"].assign(model=page["gain"]["model"].map(bp.short_model)).set_index("model")
    gate = page["gate"].assign(model=page["gate"]["model"].map(bp.short_model)).set_index("model")
    assert sorted(mine.index) == sorted(gate.index) and len(mine) >= 2
    for col in ["items", "with_context", "with_context_ci_low", "with_context_ci_high", "without_context",
                "without_context_ci_low", "without_context_ci_high", "gain", "gain_ci_low", "gain_ci_high"]:
        np.testing.assert_allclose(mine.loc[gain.index, col].astype(float), gain[col].astype(float), err_msg=col)
    assert (mine["gate_passes"] == gate.loc[mine.index, "carries_signal"]).all()
    assert ((mine["gate_rule"] == "") == mine["gate_passes"]).all()
    # the accuracy cells read as on the page's context table
    shown, page_shown = compare.display_comparison(mine.reset_index()), bp.display_context(page["gain"])
    by_model = dict(zip(page_shown.iloc[:, 0], page_shown.iloc[:, 2]))
    assert list(shown.iloc[:, 3]) == [by_model[m] for m in mine.index]
    # every verdict and its reason, claim by claim
    for probe, verdicts in (("gain", page["gain_v"]), ("prospective", page["pro_v"]),
                            ("counterfactual", page["cf_v"])):
        got = {m: (s, w) for m, s, w in zip(mine.index, mine[f"{probe}_verdict"], mine[f"{probe}_why"])
               if isinstance(s, str)}
        assert got == {v.claim.split(":")[0]: (v.status, v.reason) for v in verdicts}, probe
    # the AUROC a verdict rests on (P(Yes) where the run records it), with its interval and counts
    for probe, scores in (("prospective", page["scores"]), ("counterfactual", page["cf_scores"])):
        if not len(scores):
            assert mine[f"{probe}_verdict"].isna().all() and not page["has_cf"]
            continue
        p_yes = scores[scores["score"] == "p_yes"].assign(model=lambda d: d["model"].map(bp.short_model))
        p_yes = p_yes.set_index("model")
        assert (mine.loc[p_yes.index, f"{probe}_score"] == "p_yes").all()
        for col in ("auroc", "ci_low", "ci_high", "n_pos", "n_neg"):
            np.testing.assert_allclose(mine.loc[p_yes.index, f"{probe}_{col}"].astype(float),
                                       p_yes[col].astype(float), err_msg=f"{probe} {col}")


def test_a_judgment_a_model_was_asked_has_a_verdict_and_one_it_was_not_reads_not_asked(table):
    """Per recorded model: a counterfactual verdict exactly where the run holds its counterfactual
    judgments, and 'not asked' in both of its cells where it holds none."""
    shown = compare.display_comparison(table)
    seen = set()
    for run in RUNS.values():
        rec = recorded.load(run)
        asked = {bp.short_model(m) for m in rec.loc[rec["probe"] == "counterfactual", "model"]}
        for i in table.index[table["run"] == run]:
            was = table.at[i, "model"] in asked
            seen.add(was)
            assert isinstance(table.at[i, "counterfactual_verdict"], str) == was, (run, table.at[i, "model"])
            if not was:
                assert list(shown.iloc[i, -2:]) == ["not asked", "not asked"]
    assert True in seen
    # a run that asks no counterfactual judgment at all: every cell says so
    rows = compare.model_rows(compare.page_results(simulated(), probes=["answer", "answer_no_context", "prospective"]),
                              "Simulated", "sim")
    assert rows["counterfactual_verdict"].isna().all()
    assert (compare.display_comparison(rows).iloc[:, -2:] == "not asked").all().all()


def simulated(n: int = 60, seed: int = 0) -> pd.DataFrame:
    """Two models on ``n`` four-option items: 'sim/good' is right without the context on half of
    them and its P(Yes) tracks that; 'sim/poor' is right on 3, below the gate's 10 correct."""
    rng = np.random.default_rng(seed)
    rows = []
    for model, k in (("sim/good", n // 2), ("sim/poor", 3)):
        without = np.zeros(n)
        without[rng.choice(n, k, replace=False)] = 1
        with_ctx = np.maximum(without, rng.random(n) < 0.8)
        p_yes = np.clip(0.25 + 0.5 * without + rng.normal(0, 0.1, n), 0.01, 0.99)
        for i in range(n):
            base = {"model": model, "item_id": f"q{i:03d}", "benchmark": "sim", "n_options": 4,
                    "parse_status": "ok", "sample": 0}
            rows += [{**base, "probe": "answer", "correct": float(with_ctx[i])},
                     {**base, "probe": "answer_no_context", "correct": float(without[i])},
                     {**base, "probe": "prospective", "correct": float(without[i]),
                      "confidence": float(p_yes[i] > 0.5), "p_yes": float(p_yes[i])}]
    return pd.DataFrame(rows)


def test_a_model_that_passes_the_gate_gets_a_verdict_and_one_that_fails_is_told_which_rule():
    res = compare.page_results(simulated(), probes=["answer", "answer_no_context", "prospective"])
    rows = compare.model_rows(res, "Simulated", "sim").set_index("model")
    good, poor = rows.loc["good"], rows.loc["poor"]
    assert good["gate_passes"] and good["gate_rule"] == ""
    assert good["prospective_verdict"] == SUPPORTED and good["prospective_auroc"] > 0.9
    assert good["gain_verdict"] == SUPPORTED  # hiding the context costs it about 0.4
    assert not poor["gate_passes"] and poor["gate_rule"].startswith("3 correct (10 needed)")
    assert poor["prospective_verdict"] == INSUFFICIENT
    assert poor["prospective_why"].startswith(bp.GATE_FAILED) and "3 correct of 60" in poor["prospective_why"]
    assert rows["counterfactual_verdict"].isna().all()  # the run asks no counterfactual judgment
    shown = compare.display_comparison(rows.reset_index()).set_index(rows.index)
    assert shown.loc["poor"].iloc[5] == "no: " + poor["gate_rule"]
    assert shown.loc["poor"].iloc[8] == f"{INSUFFICIENT} (answers fail the gate)"
    assert shown.loc["good"].iloc[8] == SUPPORTED
    table = rows.reset_index()
    assert compare.gate_summary(table, {"sim": "bench_sim"}).startswith(
        "The one benchmark has at least one model whose answers without the context pass the adequacy gate: "
        "{doc}`Simulated <bench_sim>` (good).")
    said = compare.verdict_summary(table, {"sim": "bench_sim"}).splitlines()
    assert said[0].startswith("| claim | decided |") and len(said) == 2 + 3  # header, rule, one row per claim
    prospective = next(line for line in said if line.startswith("| **Prospective judgment**"))
    assert "| supported on {doc}`Simulated <bench_sim>` (good) |" in prospective
    assert prospective.endswith("| 1 of 2: answers fail the gate (1) |")  # poor
    assert "| asked on no benchmark of this table | none |" in said[-1]  # no counterfactual judgment asked


def test_the_format_rule_withholds_the_verdict_of_a_model_whose_replies_do_not_parse():
    df = simulated()
    bad = (df["model"] == "sim/good") & (df.index % 3 == 0)
    df.loc[bad, "parse_status"] = "unparsed"  # a third of its replies: 67% parse, below 80%
    rows = compare.model_rows(compare.page_results(df, probes=["prospective"]), "Simulated").set_index("model")
    assert rows.loc["good", "prospective_verdict"] == INSUFFICIENT
    assert rows.loc["good", "prospective_short_why"] == "format: 67% of replies parse"
    relaxed = compare.model_rows(compare.page_results(df, probes=["prospective"], min_conformance=0.5),
                                 "Simulated").set_index("model")
    assert relaxed.loc["good", "prospective_verdict"] == SUPPORTED


def test_an_unknown_run_is_one_clear_error():
    with pytest.raises(ValueError, match="unknown run 'nope'.*squad"):
        compare.comparison_table({"Nope": "nope"})
    with pytest.raises(ValueError, match="at least one run"):
        compare.comparison_table({})


def test_the_verdict_sentence_gives_each_undecided_model_its_short_reason_once():
    """The closing sentence groups the models a verdict is withheld from by why, in a few words
    (the verdict table beside it has the reason in full)."""
    df = simulated()
    twin = df[df["model"] == "sim/poor"].assign(model="sim/weak")
    res = compare.page_results(pd.concat([df, twin], ignore_index=True), probes=["prospective"])
    said = bp.verdict_paragraph(res.pro_v)
    assert "the evidence is insufficient for poor and weak (answers fail the gate)" in said
    good = [v for v in res.pro_v if v.claim.startswith("good")]
    assert bp.verdict_paragraph(good + [v for v in res.pro_v if not v.claim.startswith("good")]).count("fail the gate") == 1
    assert "3 correct of 60" not in said  # the full reason stays in the table
