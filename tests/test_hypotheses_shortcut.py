"""The shortcut chapter's package layer on planted populations, the detector's hand-label check,
and the chapter itself on a small synthetic source."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog.hypotheses.shortcut import detect
from metacog.hypotheses import shortcut as hs
from metacog.hypotheses.shortcut import display as sd
from metacog.hypotheses.pairwise import tau_matrix
from metacog.stats.tables import cross_counts
from metacog.hypotheses.verdict import INSUFFICIENT, NOT_SUPPORTED, SUPPORTED

ROOT = Path(__file__).resolve().parents[1]


def planted(n_pairs=8, n_plain=6, n_items=600, kappa_formal=0.0, kappa_other=0.0, seed=0):
    """Twin pairs ('m<k>-think' / 'm<k>') plus plain non-reasoning models on items half 'math',
    half 'law'. A thinking model's confidence carries its own item effect with strength
    ``kappa_formal`` on math items and ``kappa_other`` on law items; every other model's
    confidence follows shared difficulty only. Returns (confidence, correct, domains, flags)."""
    rng = np.random.default_rng(seed)
    names, flags = [], []
    for k in range(n_pairs):
        names += [f"m{k}-think", f"m{k}"]
        flags += [dict(model=f"m{k}-think", reasoning=True, twin=f"m{k}", twin_exact=True),
                  dict(model=f"m{k}", reasoning=False, twin=f"m{k}-think", twin_exact=True)]
    for k in range(n_plain):
        names.append(f"plain{k}")
        flags.append(dict(model=f"plain{k}", reasoning=False, twin="", twin_exact=False))
    m = len(names)
    d = rng.normal(0, 1, n_items)
    u = rng.normal(0, 1, (n_items, m))
    domain = np.where(np.arange(n_items) < n_items // 2, "math", "law")
    kappa = np.zeros((n_items, m))
    think = np.array([n.endswith("-think") for n in names])
    kappa[:, think] = np.where(domain == "math", kappa_formal, kappa_other)[:, None]
    correct = (0.3 - d[:, None] + u > 0).astype(float)
    c_star = -d[:, None] + kappa * u + rng.normal(0, 0.7, (n_items, m))
    conf = (c_star > np.median(c_star, axis=0)).astype(float)
    idx = pd.Index([f"i{i}" for i in range(n_items)])
    flags = pd.DataFrame(flags).assign(verified=True, flag_from="test")
    return (pd.DataFrame(conf, idx, names), pd.DataFrame(correct, idx, names),
            pd.Series(domain, idx), flags)


def _run(**kw):
    C, Y, dom, flags = planted(**kw)
    one = hs.analyse(C, Y, dom, flags, n_boot=100, seed=0)
    res = hs.ShortcutTables(*(t.assign(panel="synthetic") for t in (flags, one.judges, one.groups, one.twins)),
                            notes=pd.DataFrame())
    return res, hs.verdicts(res)


def _status(verdicts, fragment):
    hits = [v for v in verdicts if v.claim.split(": ", 1)[1].startswith(fragment)]
    assert len(hits) == 1, [v.claim for v in verdicts]
    return hits[0].status


def test_weighted_advantage_matches_tau_matrix():
    C, Y, dom, _ = planted(n_pairs=3, n_plain=2, n_items=200, kappa_formal=0.8)
    C = C.mask(np.random.default_rng(1).random(C.shape) < 0.1)
    w = np.random.default_rng(2).integers(0, 3, len(C)).astype(float)
    K = tau_matrix(C.to_numpy(), Y.to_numpy(), w)
    own = np.diag(K) - np.array([np.nanmean(np.delete(K[j], j)) for j in range(K.shape[0])])
    got = hs._tau_advantage(*cross_counts(C.to_numpy(), Y.to_numpy(), w))
    np.testing.assert_allclose(got, own, atol=1e-12)


def test_formal_concentration_planted_is_supported():
    res, v = _run(kappa_formal=1.2, kappa_other=0.0)
    assert _status(v, "the thinking twin's extra self-calibration is larger on formal") == SUPPORTED
    assert _status(v, "on formal items, a model with thinking") == SUPPORTED
    account = hs.account_verdicts(v)
    assert len(account) == 1 and account[0].status == SUPPORTED and "twin pairs" in account[0].claim
    mean = res.twins.query("pair == @hs.SAME and subset == 'formal minus other'").iloc[0]
    assert mean["pairs"] == 8 and mean["difference_ci_low"] > 0 and not mean["loo_flips"]
    assert mean["pair_min"] <= mean["difference"] <= mean["pair_max"]
    assert mean["loo_min"] <= mean["difference"] <= mean["loo_max"]


def test_analysis_is_a_result_with_named_tables_and_a_summary_of_both_designs(tmp_path, monkeypatch):
    import pickle

    from metacog.memo import memo

    C, Y, dom, flags = planted(kappa_formal=1.2, kappa_other=0.0)
    res = hs.analyse(C, Y, dom, flags, n_boot=100, seed=0)
    assert isinstance(res, hs.ShortcutAnalysis) and res.items == {
        "all items": 600, "formal items": 300, "other items": 300, "domain: law": 300, "domain: math": 300}
    s = res.summary().set_index(["design", "subset"])
    assert list(s.columns) == ["difference", "ci_low", "ci_high", "n"]
    twin = s.loc[("same-weight twins", "formal minus other")]
    mean = res.twins.query("pair == @hs.SAME and subset == 'formal minus other'").iloc[0]
    assert twin["n"] == 8 and twin["ci_low"] == mean["difference_ci_low"] > 0
    judges = s.loc[("judges by flag", "all items")]
    assert judges["n"] == 8 + 14 and judges["difference"] == res.groups.set_index("subset").at["all items", "difference"]
    assert res["groups"] is res.groups and "ShortcutAnalysis(judges=<table" in repr(res)
    with pytest.raises(KeyError, match="no field 'tables'"):
        res["tables"]
    assert pickle.loads(pickle.dumps(res)).summary().equals(res.summary())
    monkeypatch.setenv("METACOG_CACHE_DIR", str(tmp_path))  # the chapter remembers it on disk
    first, again = (memo(hs.analyse, C, Y, dom, flags, n_boot=20, seed=0) for _ in range(2))
    assert isinstance(again, hs.ShortcutAnalysis) and again.summary().equals(first.summary())
    assert len(list(tmp_path.rglob("*.pkl"))) == 1


def test_advantage_everywhere_but_not_concentrated_is_never_partly_supported():
    res, v = _run(kappa_formal=1.0, kappa_other=1.0)
    assert _status(v, "a model with thinking is better calibrated to itself than its twin without") == SUPPORTED
    conc = [x for x in v if "thinking twin's extra self-calibration" in x.claim][0]
    assert conc.status != SUPPORTED
    account = hs.account_verdicts(v)[0]
    assert account.status != SUPPORTED
    text = sd.verdict_paragraph([account], v)
    assert "partly" not in text.lower() and "formal items above all" in text


def test_concentration_on_the_wrong_side_is_not_supported():
    res, v = _run(kappa_formal=0.0, kappa_other=1.5)
    account = hs.account_verdicts(v)[0]
    assert account.status == NOT_SUPPORTED and "defining prediction fails" in account.reason


def test_no_planted_signal_is_not_supported_or_insufficient():
    _, v = _run(kappa_formal=0.0, kappa_other=0.0)
    assert _status(v, "the thinking twin's extra self-calibration is larger on formal") in (INSUFFICIENT, NOT_SUPPORTED)


def test_too_few_reasoning_judges_is_insufficient_and_states_threshold():
    # 3 twin pairs: 3 reasoning judges (< MIN_JUDGES) and 3 pairs (< MIN_PAIRS), strong planted effect
    res, v = _run(n_pairs=3, n_plain=8, kappa_formal=1.5)
    g = res.groups.set_index("subset")
    assert g.at["all items", "reasoning_judges"] == 3
    judge = [x for x in v if x.claim.split(": ", 1)[1].startswith("reasoning judges are better")][0]
    assert judge.status == INSUFFICIENT and f"at least {hs.MIN_JUDGES}" in judge.reason
    assert hs.account_verdicts(v)[0].status == INSUFFICIENT
    assert str(hs.MIN_JUDGES) in sd.thresholds_sentence()


def test_group_difference_and_mann_whitney_follow_the_planted_effect():
    res, _ = _run(n_pairs=10, n_plain=4, kappa_formal=1.0, kappa_other=1.0)
    g = res.groups.set_index("subset")
    assert g.at["all items", "difference"] > 0.05 and g.at["all items", "difference_ci_low"] > 0
    assert g.at["all items", "p_mann_whitney"] < 0.01
    assert g.at["all items", "reasoning_judges"] == 10 and g.at["all items", "other_judges"] == 14


def test_reasoning_flags_table_then_parameter_then_na():
    f = hs.reasoning_flags(["Qwen3-8B-think", "Qwen3-8B", "o3-mini-2025-01-31"], "calibration_study:verbal_confidence")
    assert f["reasoning"].tolist() == [True, False, True]
    assert f.loc[0, "twin"] == "Qwen3-8B" and "unverified" in f.loc[0, "flag_from"]
    g = hs.reasoning_flags(["mine-a", "mine-b"], "my.csv", reasoning_models=["mine-a"])
    assert g["reasoning"].tolist() == [True, False]
    h = hs.reasoning_flags(["mine-a", "mine-b"], "my.csv")
    assert h["reasoning"].isna().all()


def test_calibration_study_metadata_has_its_twins():
    from metacog.data.model_metadata import model_metadata

    meta = model_metadata("calibration_study").set_index("model")
    assert len(meta) == 83
    exact = meta[meta["twin_exact"] & meta["reasoning"]]
    assert len(exact) == 8 and all(m.endswith("-think") for m in exact.index)
    assert not meta.loc[exact.index, "verified"].any()  # inferred from the name
    assert meta.loc["deepseek-reasoner", "twin"] == "deepseek-chat"
    assert meta.loc[["o1-mini-2024-09-12", "o3-mini-2025-01-31", "o4-mini-2025-04-16", "Phi-4-reasoning"],
                    "reasoning"].all()


def test_item_subsets_leave_unlabelled_items_out_of_formal_and_other():
    dom = pd.Series(["math"] * 30 + ["law"] * 30 + [pd.NA] * 10)
    m = hs.item_subsets(dom, ["math"])
    assert m["all items"].sum() == 70 and m["formal items"].sum() == 30 and m["other items"].sum() == 30
    assert "formal items" not in hs.item_subsets(dom, ["physics"])


def test_cohen_kappa_and_agreement():
    t = np.array([1, 1, 0, 0, 1, 0, 0, 0] * 5)
    assert detect.cohen_kappa(t, t) == pytest.approx(1.0)
    p = t.copy()
    p[:4] = 1 - p[:4]
    a = detect.agreement(t, p, n_boot=500).set_index("statistic")
    assert a.at["accuracy", "estimate"] == pytest.approx(36 / 40)
    assert a.at["accuracy", "ci_low"] < 0.9 < a.at["accuracy", "ci_high"]
    # kappa by hand: po = 0.9, pe = pt*pp + (1-pt)(1-pp)
    pt, pp = t.mean(), p.mean()
    pe = pt * pp + (1 - pt) * (1 - pp)
    assert a.at["Cohen's kappa", "estimate"] == pytest.approx((0.9 - pe) / (1 - pe))
    with pytest.raises(ValueError, match="only 0 and 1"):
        detect.agreement([0, 2], [0, 1])


def test_detector_against_the_hand_labels():
    labels = detect.hand_labels()
    assert len(labels) == 40 and labels["solves_inline"].sum() >= 5
    flagged = detect.detect_inline_solving(labels["text"])["inline_solving"].astype(int)
    a = detect.agreement(labels["solves_inline"], flagged).set_index("statistic")
    # recorded finding: symbolic working is caught, step-by-step prose (legal clauses) is missed
    assert a.at["specificity", "estimate"] == 1.0
    assert 0.4 <= a.at["sensitivity", "estimate"] < 1.0
    assert a.at["Cohen's kappa", "ci_low"] < a.at["Cohen's kappa", "estimate"] < a.at["Cohen's kappa", "ci_high"]
    missed = labels[(labels["solves_inline"] == 1) & (flagged == 0)]
    assert set(missed["run"]) == {"legalbench_sampled"}


def test_hand_labels_name_the_row_when_a_text_changed(tmp_path):
    text = (ROOT / "metacog" / "data_files" / "shortcut_inline_labels.csv").read_text()
    lines = text.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln and not ln.startswith("#") and not ln.startswith("run,"))
    lines[first] = lines[first].rsplit(",", 1)[0] + ",000000000000"
    bad = tmp_path / "labels.csv"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="data row 1 of labels.csv changed"):
        detect.hand_labels(bad)


def test_chapter_runs_on_a_small_synthetic_source(tmp_path):
    from metacog import chapter
    C, Y, dom, flags = planted(n_pairs=5, n_plain=3, n_items=120, kappa_formal=1.0)
    rows = []
    for m in C.columns:
        rows.append(pd.DataFrame({"model": m, "item_id": C.index, "benchmark": "synthetic",
                                  "domain": dom.to_numpy(), "probe": "verbal_confidence",
                                  "confidence": C[m].to_numpy(), "correct": Y[m].to_numpy()}))
    src = tmp_path / "synthetic.csv"
    pd.concat(rows, ignore_index=True).to_csv(src, index=False)
    nb = chapter.run("shortcut", [str(src)], tmp_path / "out", html=False,
                     parameters={"n_boot": 20, "formal_domains": ["math"],
                                 "reasoning_models": [m for m in C.columns if m.endswith("-think")]}).notebook
    text = Path(nb).read_text()
    assert "Traceback" not in text and "symbolic-shortcut account" in text
    assert "has no recorded reasoning text" in text  # the detector says why it cannot run


def test_source_without_flags_gets_one_sentence_and_no_verdict(tmp_path):
    from metacog.hypotheses.panels import panels
    from metacog.power.examples import example_responses, write_responses

    src = write_responses(example_responses(n_models=5, n_items=40, seed=1), tmp_path / "mine.csv")
    res = hs.tables(panels([str(src)]), n_boot=10)
    assert len(res.notes) == 3 and res.notes["note"].str.contains("cannot run").all()
    assert "reasoning_models parameter names none" in res.notes["note"].iloc[0]
    assert res.summary().empty and list(res.summary().columns) == ["panel", "design", "subset", "difference",
                                                                   "ci_low", "ci_high", "n"]
    assert hs.verdicts(res) == [] and hs.account_verdicts([]) == []
    assert "could not be tested" in sd.verdict_paragraph([], [])


def test_domain_plot_table_drops_panels_with_too_few_twin_pairs():
    from metacog.hypotheses.shortcut import display as sd

    rows = []
    for panel, pairs in (("big", 6), ("small", 2)):
        for subset in ("domain: math", "domain: law", "formal minus other"):
            rows.append({"panel": panel, "pair": hs.SAME, "subset": subset, "pairs": pairs,
                         "difference": 0.1, "difference_ci_low": 0.0, "difference_ci_high": 0.2})
    twins = pd.DataFrame(rows)
    t = sd.domain_plot_table(twins, min_pairs=5)
    assert set(t["panel"]) == {"big"} and sorted(t["domain"]) == ["law", "math"]
    assert list(t.columns) == ["panel", "domain", "difference", "ci_low", "ci_high"]
    assert len(sd.domain_plot_table(twins, min_pairs=2)) == 4


def test_overall_sentence_names_its_panel_and_the_contrast_is_a_difference_in_differences():
    """#8: the overall-advantage sentence named no panel; the formal-minus-other statistic was
    labelled like the plain group difference."""
    res, v = _run(kappa_formal=1.0, kappa_other=1.0)
    text = sd.verdict_paragraph(hs.account_verdicts(v), v)
    panel = v[0].claim.split(": ", 1)[0]
    assert f"On {panel}, reasoning judges are better calibrated to themselves over all its items, by " in text
    conc = [x for x in v if x.claim.endswith("larger on formal items than on others")]
    assert conc and all(x.statistic.startswith("difference-in-differences: (formal − other items) ")
                        for x in conc)
    plain = [x for x in v if x.claim.endswith("better calibrated to themselves than non-reasoning judges")
             and "formal" not in x.claim]
    assert [x.statistic for x in plain] == ["reasoning minus non-reasoning self-advantage (τ-b)"]
