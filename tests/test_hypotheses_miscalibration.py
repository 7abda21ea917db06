"""The miscalibration chapter's package functions, on planted data whose answers are known."""

import numpy as np
import pandas as pd
import pytest

from metacog.hypotheses.miscalibration import audit as mc
from metacog.probe import study
from metacog.hypotheses import miscalibration as hm
from metacog.hypotheses.miscalibration import population as hpop
from metacog.hypotheses.verdict import INSUFFICIENT, NEGLIGIBLE, NOT_SUPPORTED, SUPPORTED


def policy_rows(model, n_items=120, accuracy=0.9, always_yes=False, seed=0, n_domains=6):
    """C0/C1/C2 rows for one model. A knower is right with ``accuracy`` at confidence 0.9; under
    C2 it abstains on the items it gets wrong. A guesser (``always_yes``) says Yes to everything."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_items):
        gold = "yes" if i % 2 else "no"
        if always_yes:
            c0 = "yes"
        else:
            c0 = gold if rng.random() < accuracy else ("no" if gold == "yes" else "yes")
        right = c0 == gold
        for probe, dec in (("c0", c0), ("c1", c0), ("c2", c0 if right or always_yes else "abstain")):
            rows.append({"model": model, "item_id": f"q{i:03d}", "probe": probe, "domain": f"d{i % n_domains}",
                         "benchmark": "toy", "decision": dec, "confidence": 0.9,
                         "correct": np.nan if dec == "abstain" else float(dec == gold)})
    return pd.DataFrame(rows)


def test_gate_keeps_a_yes_sayer_out_and_a_knower_in():
    df = pd.concat([policy_rows("knower"), policy_rows("yes-sayer", always_yes=True)])
    g = hm.gate(df).set_index("model")
    assert g.loc["knower", "carries_signal"] and not g.loc["knower", "at_chance"]
    assert g.loc["yes-sayer", "at_chance"] and g.loc["yes-sayer", "said_yes"] == 120
    assert g.loc["yes-sayer", "baseline_what"] == "always answering Yes"


def test_self_critique_verdict_flips_with_the_gate():
    knower = policy_rows("knower", seed=1)
    g = hm.gate(knower)
    gains = hm.loss_gains(knower, 0.8, g)
    pooled = gains[(gains["model"] == "models above chance") & (gains["policy"] == "c2")].iloc[0]
    # abstaining on a wrong answer at 0.9 lowers its loss from 0.81 to 0.25
    wrong = (knower[(knower.probe == "c0")]["correct"] == 0).sum()
    assert pooled["gain"] == pytest.approx(wrong * 0.56 / 120)
    ranks = hm.domain_ranking(knower, 0.8, 1.0, g).ranks
    v = hm.policy_verdicts(gains, ranks, g, "toy")
    assert v[0].status == SUPPORTED

    guess = policy_rows("yes-sayer", always_yes=True)
    g2 = hm.gate(guess)
    v2 = hm.policy_verdicts(hm.loss_gains(guess, 0.8, g2), hm.domain_ranking(guess, 0.8, 1.0, g2).ranks, g2, "toy")
    assert [x.status for x in v2] == [INSUFFICIENT, INSUFFICIENT]
    assert "none of the 1 models answers above both chance and always answering Yes" in v2[0].reason


def test_summary_and_sentence_report_abstentions_and_the_abstain_line():
    knower = policy_rows("knower", seed=2)
    s = hm.policy_summary(knower, 0.8, hm.gate(knower)).set_index("policy")
    wrong = int((knower[knower.probe == "c0"]["correct"] == 0).sum())
    assert s.loc["c2", "abstained"] == wrong and s.loc["c0", "abstained"] == 0
    assert s.loc["c0", "ocw_rate"] == pytest.approx(wrong / 120)
    text = hm.audit_sentence(s.reset_index(), "toy")
    assert "abstain on only" in text and "model-policy pairs" in text
    assert hm.threshold_for("toy", {"toy": "median"}, 0.8) == "median"
    assert hm.threshold_for("other", {"toy": 0.9}, 0.8) == 0.8
    with pytest.raises(ValueError, match="must lie in"):
        hm.threshold_for("toy", {"toy": 3}, 0.8)


def test_a_source_without_policies_gets_a_sentence(tmp_path):
    from metacog.power.examples import example_responses, write_responses

    path = write_responses(example_responses(n_models=3, n_items=5), tmp_path / "plain.csv")
    found = hm.policy_frames([str(path)])
    assert found.frames == {} and len(found.lacking) == 1 and "policy audit does not apply" in found.lacking[0]
    assert found.summary().empty


def test_policy_frames_and_domain_ranking_are_results_with_summaries(tmp_path):
    path = tmp_path / "policies.csv"
    pd.concat([policy_rows("knower", seed=1), policy_rows("yes-sayer", always_yes=True)]).to_csv(path, index=False)
    found = hm.policy_frames([str(path)])
    assert list(found.frames) == [str(path)] and found.lacking == []
    row = found.summary().iloc[0]
    assert (row["rows"], row["models"], row["items"], row["domains"]) == (720, 2, 120, 6)
    df = found.frames[str(path)]
    ranked = hm.domain_ranking(df, 0.8, 1.0, hm.gate(df))
    assert set(ranked.domains["domain"]) == {f"d{i}" for i in range(6)}
    s = ranked.summary()
    assert s.equals(ranked.ranks) and s is not ranked.ranks
    assert {"model", "predictor", "spearman", "ci_low", "ci_high", "at_chance"} <= set(s.columns)
    assert s.set_index("model").loc["yes-sayer", "at_chance"].all()


@pytest.mark.parametrize("ci, status", [((-0.05, 0.05), SUPPORTED), ((0.2, 0.4), NOT_SUPPORTED),
                                        ((-0.05, 0.3), INSUFFICIENT)])
def test_equivalence(ci, status):
    v = hm.equivalent("x", "d", sum(ci) / 2, *ci, margin=0.1, n={"items": 20}, min_counts={"items": 5})
    assert v.status == status


def _study(ocw_shift=0.0, seed=0, n_items=24):
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(n_items):
        group = "OCW" if k % 2 else "CC"
        base = rng.uniform(0.9, 1.1, size=6)
        for layer in range(6):
            d = base[layer] * (1 + (ocw_shift if group == "OCW" else 0.0))
            for cond, f in (("plain", 1.0), ("self_critique", 0.8), ("length_control", 0.9)):
                rows.append({"condition": cond, "prompt_id": f"i{k}", "layer": layer, "group": group,
                             "displacement": d * f})
    groups = pd.DataFrame({"item_id": [f"i{k}" for k in range(n_items)]})
    return study.Study(groups=groups, probe=pd.DataFrame(rows), sweep=pd.DataFrame())


def _gate(at_chance):
    return pd.DataFrame({"model": ["local/m"], "accuracy": [0.5 if at_chance else 0.9], "ci_low": [0.4],
                         "ci_high": [0.6], "at_chance": [at_chance], "carries_signal": [not at_chance]})


def test_hidden_verdicts_respect_the_gate_and_the_planted_effects():
    table = hm.hidden_table({"m": _study()}, n_boot=300)
    sc = table.set_index("contrast").loc["self_critique - length_control"]
    assert sc["estimate"] == pytest.approx(0.8 / 0.9 - 1) and sc["ci_high"] < 0 and sc["items"] == 24
    assert hm.damping(table, "m") == "self-critique damps the perturbation by more than its length alone"
    stable, damps = hm.hidden_verdicts(table, _gate(False))
    assert stable.status == SUPPORTED and damps.status == SUPPORTED
    assert stable.n == {"CC items": 12, "OCW items": 12}
    at_chance = hm.hidden_verdicts(table, _gate(True))[0]
    assert at_chance.status == INSUFFICIENT and "null by construction" not in at_chance.reason
    assert "the CC / OCW items are the audit log's" in at_chance.reason
    fragile = hm.hidden_verdicts(hm.hidden_table({"m": _study(ocw_shift=0.5)}, n_boot=300), _gate(False))[0]
    assert fragile.status == NOT_SUPPORTED


def test_equivalence_on_fewer_items_than_paper_2s_cannot_tell_whatever_the_interval():
    # 5 + 5 items with no group effect: the interval lies well inside the margin, yet with fewer
    # items per group than paper 2's 12 + 12 the verdict is that the data cannot tell
    small = hm.hidden_table({"m": _study(n_items=10)}, n_boot=300)
    g = small.set_index("contrast").loc["OCW - CC (plain)"]
    assert (g["n_cc"], g["n_ocw"]) == (5, 5)
    assert -hm.EQUIVALENCE_MARGIN < g["ci_low"] and g["ci_high"] < hm.EQUIVALENCE_MARGIN
    stable = hm.hidden_verdicts(small, _gate(False))[0]
    assert stable.status == INSUFFICIENT
    assert "only 5 CC items; at least 12 are needed" in stable.reason
    assert "paper 2's 12 + 12" in stable.reason and stable.reason.endswith("so the data cannot tell")
    # eleven a group is still short; twelve (paper 2's count) is judged on its interval
    eleven = hm.hidden_verdicts(hm.hidden_table({"m": _study(n_items=22)}, n_boot=300), _gate(False))[0]
    assert eleven.status == INSUFFICIENT
    assert hm.hidden_verdicts(hm.hidden_table({"m": _study(n_items=24)}, n_boot=300), _gate(False))[0].status == SUPPORTED


def population(n_items=400, n_models=20, item_specific=False, seed=0):
    """Items x models confidence and correctness. Errors follow item difficulty; confidence on an
    error is random, or (``item_specific``) high on a fixed half of the items for every model."""
    rng = np.random.default_rng(seed)
    difficulty = rng.uniform(0.1, 0.7, n_items)
    wrong = rng.random((n_items, n_models)) < difficulty[:, None]
    lure = rng.random(n_items) < 0.5
    p_conf = np.where(lure[:, None], 0.9, 0.2) if item_specific else np.full((n_items, 1), 0.55)
    conf = np.where(rng.random((n_items, n_models)) < p_conf, 0.95, 0.5)
    idx = [f"i{i}" for i in range(n_items)]
    cols = [f"m{j}" for j in range(n_models)]
    return (pd.DataFrame(conf, idx, cols), pd.DataFrame((~wrong).astype(float), idx, cols),
            pd.Series(np.where(np.arange(n_items) % 2, "a", "b"), index=idx))


def test_expected_pairs_matches_the_permutation_mean():
    conf, correct, _ = population(seed=3)
    _, w, o = mc.ocw_flags(conf, correct, 0.8)
    exp = mc.expected_pairs(w, o).sum()
    perm = mc.permuted_pairs(w, o, n_perm=300, seed=1)
    assert perm.mean() == pytest.approx(exp, rel=0.01)
    k = mc.share_two_way(o, w, n_boot=200)
    assert k[0] == pytest.approx(o.sum() / w.sum()) and k[1] < k[0] < k[2]


def test_shared_item_confidence_is_not_called_clustering():
    # lure items draw confidence from every model, right or wrong: a shared item axis, which the
    # population null keeps, so confident errors do not cluster beyond it
    conf, correct, dom = population(item_specific=True, seed=4)
    res = hpop.analyse(conf, correct, dom, threshold=0.8, n_boot=300, n_perm=49).assign(panel="toy")
    (v,) = hpop.verdicts(res)
    overall = res[res["domain"] == hpop.ALL].iloc[0]
    assert overall["ratio_ci_high"] < 1 + hpop.RATIO_SESOI
    assert v.status == NEGLIGIBLE  # inside the smallest excess of interest: within the line


def test_population_table_is_a_result_whose_summary_is_the_all_items_row(tmp_path, monkeypatch):
    from metacog.hypotheses.panels import panels

    monkeypatch.setenv("METACOG_CACHE_DIR", str(tmp_path / "cache"))
    conf, correct, dom = population(seed=6)
    rows = [{"model": m, "item_id": i, "benchmark": "toy", "domain": dom[i], "probe": "verbal_confidence",
             "confidence": conf.at[i, m], "correct": correct.at[i, m]} for m in conf.columns for i in conf.index]
    path = tmp_path / "pop.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    out = hpop.table(panels([str(path)], min_models=2), n_boot=50, n_perm=9)
    assert list(out.notes["analysed"]) == [True] and set(out.results["domain"]) == {"a", "b", hpop.ALL}
    s = out.summary()
    every = out.results[out.results["domain"] == hpop.ALL].iloc[0]
    assert len(s) == 1 and s.at[0, "ratio"] == every["ratio"] and s.at[0, "models"] == conf.shape[1]
    assert s.at[0, "ocw_share_ci_low"] <= s.at[0, "ocw_share"] <= s.at[0, "ocw_share_ci_high"]


def test_too_few_models_is_insufficient():
    conf, correct, dom = population(n_models=5, item_specific=True, seed=5)
    res = hpop.analyse(conf, correct, dom, n_boot=100, n_perm=9).assign(panel="toy")
    (v,) = hpop.verdicts(res)
    assert v.status == INSUFFICIENT and "at least 10" in v.reason


def test_verdict_paragraph_names_each_claim_once():
    v = hm.hidden_verdicts(hm.hidden_table({"m": _study()}, n_boot=100), _gate(True))
    text = hm.verdict_paragraph(v)
    assert text.count("“Confident errors are as stable as confident hits”") == 1
    assert "insufficient evidence for m" in text and "null by construction" not in text
    assert "says nothing about paper 2's claim" in text


def test_chapter_runs_on_a_small_synthetic_source(tmp_path):
    from metacog import chapter
    from metacog.power.examples import example_responses, write_responses

    pol = pd.concat([policy_rows("knower", n_items=60), policy_rows("yes-sayer", n_items=60, always_yes=True)])
    pol_path = tmp_path / "policies.csv"
    pol.to_csv(pol_path, index=False)
    pop_path = write_responses(example_responses(n_models=12, benchmarks=("algebra", "law"), n_items=40, seed=2),
                               tmp_path / "population.csv")
    nb = chapter.run("miscalibration", [str(pol_path), str(pop_path)], tmp_path / "out", html=False,
                     parameters={"probe_models": [], "n_boot": 50, "n_perm": 9}).notebook
    text = nb.read_text()
    assert "policy audit does not apply" in text  # the population file has no C0/C1/C2
    import nbformat

    outputs = "\n".join(str(v) for c in nbformat.read(nb, as_version=4).cells if c.cell_type == "code"
                        for o in c.get("outputs", []) for v in [o.get("text", ""), *o.get("data", {}).values()])
    assert "no: at chance" in outputs  # the yes-sayer is marked in the gate table the cells print
    assert "Traceback" not in text


def _contrasts(sc, lc, beyond):
    """A hidden table for one model from (estimate, ci_low, ci_high) of the three prompt contrasts."""
    rows = [("self_critique - plain", sc), ("length_control - plain", lc), ("self_critique - length_control", beyond)]
    return pd.DataFrame([{"model": "m", "contrast": c, "estimate": e, "ci_low": lo, "ci_high": hi}
                         for c, (e, lo, hi) in rows])


def test_damping_by_length_states_both_sizes_instead_of_as_much():
    # the plain prompt of matched length damps twice as much as self-critique: never "as much"
    text = hm.damping(_contrasts((-0.10, -0.15, -0.05), (-0.20, -0.25, -0.15), (0.12, 0.05, 0.2)), "m")
    assert "as much" not in text
    assert "reduces the perturbation by 20%, self-critique by 10%" in text
    assert text.endswith("self-critique damps it less than the length-matched prompt")
    alike = hm.damping(_contrasts((-0.12, -0.2, -0.04), (-0.11, -0.2, -0.02), (-0.01, -0.05, 0.03)), "m")
    assert alike.endswith("by 11%, self-critique by 12%, and the data cannot tell the two apart")


def test_damping_says_a_rise_and_names_no_model():
    # an interval wholly above zero is a rise, not "does not damp"; the caller names the model
    up = hm.damping(_contrasts((0.074, 0.03, 0.12), (0.01, -0.02, 0.04), (0.06, 0.02, 0.1)), "m")
    assert up == "self-critique raises the perturbation, by 7%"
    flat = hm.damping(_contrasts((0.02, -0.03, 0.07), (0.01, -0.02, 0.04), (0.01, -0.02, 0.05)), "m")
    assert flat == "self-critique does not damp the perturbation"


def test_probe_chance_sentence_agrees_with_one_model():
    gate = pd.DataFrame({"model": ["local/a", "local/b"], "at_chance": [True, False],
                         "accuracy": [0.52, 0.81]})
    one = hm.probe_chance_sentence(gate, ["local/a"])
    assert one.startswith("The one probed model answers the audit at chance by the adequacy gate (")
    assert "81" not in one and "for it the OCW-against-CC contrast, whatever its size, says nothing" in one
    assert "null by construction" not in one and "they are the audit log's" in one
    two = hm.probe_chance_sentence(gate, ["local/a", "local/b"])
    assert two.startswith("1 of the 2 probed models (local/a) answers the audit at chance")
    assert hm.probe_chance_sentence(gate, ["local/b"]) == "Every probed model answers the audit above chance."


def _two_gate(chance_a, chance_b):
    return pd.DataFrame({"model": ["org/SmolLM2-135M", "org/qwen2.5-coder-0.5b"], "accuracy": [0.52, 0.48],
                         "ci_low": [0.43, 0.39], "ci_high": [0.61, 0.57], "at_chance": [chance_a, chance_b],
                         "carries_signal": [not chance_a, not chance_b]})


def test_damping_verdict_is_gated_and_quotes_the_plain_contrast():
    studies = {"org/SmolLM2-135M": _study(), "org/qwen2.5-coder-0.5b": _study(seed=1)}
    table = hm.hidden_table(studies, n_boot=200)
    # a mix: the first model passes the gate, the second answers at chance
    v = hm.hidden_verdicts(table, _two_gate(False, True))
    damp_pass, damp_chance = v[1], v[3]
    assert damp_pass.status == SUPPORTED and "against the plain prompt (paper 2's contrast) the change is" in damp_pass.reason
    assert damp_chance.status == INSUFFICIENT
    assert "answers at chance (C0 accuracy 0.48, exact 95% CI 0.39–0.57)" in damp_chance.reason
    assert "0.5B model, where paper 2 probed 7–8B models" in damp_chance.reason
    assert "against the plain prompt (paper 2's contrast) the change is −20.0%" in damp_chance.reason
    # both at chance: the paragraph quotes each model's own accuracy and never says "all of" two
    text = hm.verdict_paragraph(hm.hidden_verdicts(table, _two_gate(True, True)))
    assert "all of" not in text
    assert "C0 accuracy 0.52" in text and "C0 accuracy 0.48" in text
    assert "Self-critique damps the perturbation beyond its length”: insufficient evidence for" in text


def test_model_size_reads_the_name():
    from metacog.hypotheses.miscalibration.hidden import model_size
    assert [model_size(m) for m in ("SmolLM2-135M-Instruct", "Qwen2.5-Coder-1.5B", "gpt-4o")] == ["135M", "1.5B", ""]


def test_abstention_sentence_bound_is_the_tables_largest_rate():
    summaries = {"a": pd.DataFrame({"policy": ["c0", "c1", "c2"], "abstain_rate": [0.0, 0.0, 0.023]})}
    text = hm.abstention_sentence(summaries)
    assert "no model abstains on more than 2.3% of items" in text


def test_population_sentence_keeps_interval_ends_apart():
    r = pd.DataFrame([{"panel": "p", "domain": hpop.ALL, "models": 81, "items": 12032, "ocw_share": 0.357,
                       "ocw_share_ci_low": 0.319, "ocw_share_ci_high": 0.394, "ocw_of_errors": 0.84,
                       "ratio": 1.0085, "ratio_ci_low": 1.0071, "ratio_ci_high": 1.0102, "p_perm": 0.005,
                       "dispersion": 1.101, "dispersion_ci_low": 1.062, "dispersion_ci_high": 1.138}])
    text = hpop.overall_sentence(r)
    assert "1.10 (95% CI 1.06 to 1.14) times as dispersed" in text
    assert "at both ends" not in text and "(81 models above chance, 12,032 items)" in text


def test_policy_frames_keep_complete_items_and_add_p_yes_answerers_only_when_asked(tmp_path):
    rng = np.random.default_rng(4)
    df = policy_rows("yes-sayer", always_yes=True)
    gold_yes = (df["item_id"].str[1:].astype(int) % 2 == 1).to_numpy()
    df["p_yes"] = 1 / (1 + np.exp(-(3 + 2 * (2 * gold_yes - 1) + rng.normal(0, 1, len(df)))))
    df = df[~((df["probe"] == "c2") & (df["item_id"] >= "q100"))]  # 20 items lack C2
    path = tmp_path / "yes.csv"
    df.to_csv(path, index=False)
    plain = hm.policy_frames([str(path)])
    frame = plain.frames[str(path)]
    assert frame["item_id"].nunique() == 100 and set(frame["model"]) == {"yes-sayer"}
    assert plain.p_yes.empty and any("100 items of the 120 carry" in s for s in plain.lacking)
    read = hm.policy_frames([str(path)], read_p_yes=True)
    g = hm.gate(read.frames[str(path)]).set_index("model")
    assert g.loc["yes-sayer", "at_chance"] and not g.loc["yes-sayer · P(Yes)", "at_chance"]
    assert set(read.p_yes["probe"]) == {"c0", "c1", "c2"}


def test_a_panel_of_one_domain_shows_no_all_items_row_that_repeats_it():
    conf, correct, dom = population(seed=5)
    one = dom.map(lambda d: "history")  # every item in one domain
    res = hpop.analyse(conf, correct, one, threshold=0.8, n_boot=50, n_perm=9).assign(panel="one")
    assert list(res["domain"]) == ["history", hpop.ALL]  # the verdicts still read the all-items row
    for shown in (hpop.display_cooccurrence(res), hpop.display_shares(res)):
        assert list(shown["domain"]) == ["history"]
    several = hpop.analyse(conf, correct, dom, threshold=0.8, n_boot=50, n_perm=9).assign(panel="many")
    both = pd.concat([res, several], ignore_index=True)
    shown = hpop.display_cooccurrence(both)
    assert hpop.ALL not in set(shown.loc[shown["panel"] == "one", "domain"])
    assert hpop.ALL in set(shown.loc[shown["panel"] == "many", "domain"])


def test_complete_items_note_says_for_at_least_one_model_only_with_several_models():
    from metacog.hypotheses.miscalibration.answerers import complete_items

    one = policy_rows("m")
    one = one[~((one["probe"] == "c2") & (one["item_id"] >= "q100"))]
    _, notes = complete_items({"run": one})
    assert notes == ["run: 100 items of the 120 carry an answer under all three policies; the policy audit uses those."]
    other = policy_rows("k")
    other = other[~((other["probe"] == "c2") & (other["item_id"] >= "q110"))]
    _, notes = complete_items({"run": pd.concat([one, other])})
    assert "under all three policies for at least one model;" in notes[0]
