"""The rank-one and pairwise chapters' package layer on planted populations."""

import numpy as np
import pandas as pd
import pytest

from metacog import stats

from metacog.power import simulate
from metacog.hypotheses import pairwise as hp
from metacog.hypotheses.pairwise import third_person as tp
from metacog.hypotheses import rank_one as hr
from metacog.hypotheses.verdict import INSUFFICIENT, NOT_SUPPORTED, SUPPORTED


def _pop(kappa, seed=0, n_models=12, n_items=400, **kw):
    p = simulate.population(n_models, n_items, kappa=kappa, seed=seed, **kw)
    return p.confidence, p.correct


def test_tau_matrix_matches_pairwise_calibration_with_missing_values():
    C, Y = _pop(0.5, n_models=6, n_items=120)
    rng = np.random.default_rng(1)
    C = C.mask(rng.random(C.shape) < 0.1)
    Y = Y.mask(rng.random(Y.shape) < 0.1)
    K = hp.tau_matrix(C.to_numpy(), Y.to_numpy())
    ref = stats.pairwise_calibration(C, Y, control=False).matrix("tau").loc[C.columns, C.columns]
    np.testing.assert_allclose(K, ref.to_numpy(), atol=1e-12)


def test_tau_matrix_weights_equal_repeated_rows():
    C, Y = _pop(0.5, n_models=4, n_items=50)
    w = np.random.default_rng(2).integers(0, 3, len(C)).astype(float)
    rep = np.repeat(np.arange(len(C)), w.astype(int))
    K_w = hp.tau_matrix(C.to_numpy(), Y.to_numpy(), w)
    K_r = hp.tau_matrix(C.to_numpy()[rep], Y.to_numpy()[rep])
    np.testing.assert_allclose(K_w, K_r, atol=1e-12)


def test_constant_column_gives_undefined_pairs_counted():
    C, Y = _pop(0.5, n_models=6, n_items=100)
    C.iloc[:, 0] = 1.0
    t = hp.analyse(C, Y, n_perm=99, n_boot=20)
    row = t.set_index("subset").loc["all items"]
    assert row["pairs_undefined"] == 5  # the constant judge against every other target
    assert row["pairs"] == 25  # 6 x 5 pairs of different models (self-pairs are not paper 1's pairs)


def test_self_minus_other_interval_finds_planted_signal_and_not_without():
    with_signal = hp.analyse(*_pop(1.5, seed=3), n_perm=199, n_boot=100, control=False)
    without = hp.analyse(*_pop(0.0, seed=3), n_perm=199, n_boot=100, control=False)
    ws = with_signal.set_index("subset").loc["all items"]
    wo = without.set_index("subset").loc["all items"]
    assert ws["self_minus_other_ci_low"] > 0
    assert wo["self_minus_other_ci_low"] < 0 < wo["self_minus_other_ci_high"]
    assert ws["mean_tau_ci_low"] <= ws["mean_tau"] <= ws["mean_tau_ci_high"]


def _table(frame, name):
    return frame.assign(panel=name, source="sim", benchmark="sim", probe="verbal_confidence",
                        timing="after answering")


def test_pairwise_verdicts_flip_with_the_planted_signal():
    sig = _table(hp.analyse(*_pop(1.5, seed=4), n_perm=99, n_boot=100, control=False), "planted")
    null = _table(hp.analyse(*_pop(0.0, seed=4), n_perm=99, n_boot=100, control=False), "null")
    v_sig = {v.claim.split(",")[1].split(":")[0].strip(): v for v in hp.verdicts(sig)}
    v_null = hp.verdicts(null)
    assert v_sig["all items"].status == SUPPORTED
    assert v_null[0].status == INSUFFICIENT and "straddles" in v_null[0].reason


def test_pairwise_verdict_insufficient_with_three_models():
    small = _table(hp.analyse(*_pop(1.5, n_models=3, n_items=200), n_perm=99, n_boot=50,
                              control=False), "three")
    v = hp.verdicts(small)[0]
    assert v.status == INSUFFICIENT
    assert "5" in v.reason  # the threshold is stated


def test_paper1_comparison_has_paper_rows_and_ours():
    t = _table(hp.analyse(*_pop(0.5), n_perm=99, n_boot=30, n_null=50), "ours")
    c = hp.paper1_comparison(t)
    assert list(c["data"][:4]) == [f"paper 1: {b}" for b in hp.PAPER1]
    assert c["data"].iloc[-1] == "ours"
    assert c["mean_tau_ci_low"].iloc[:4].isna().all()  # the paper gives no intervals
    assert np.isfinite(c["mean_tau_ci_low"].iloc[-1])
    shown = hp.display_comparison(c)
    assert "95% CI" in shown["mean τ-b (95% CI)"].iloc[-1]
    # one unit per column: paper 1's share is over unordered pairs, ours over ordered ones
    theirs, ours = (c for c in shown.columns if c.startswith("% of pairs significant"))
    assert "paper 1, over its unordered" in theirs and "ours, over ordered pairs" in ours
    assert shown[theirs].iloc[:4].tolist() == [v[2] for v in hp.PAPER1.values()] and np.isnan(shown[theirs].iloc[-1])
    assert shown[ours].iloc[:4].isna().all() and np.isfinite(shown[ours].iloc[-1])
    # like with like: paper 1's null sits in the base-rate-matched column, beside ours
    paper = c.set_index("data")
    assert paper.loc["paper 1: SQuAD", "null_base_rate"] == hp.PAPER1["SQuAD"][1]
    assert np.isnan(paper.loc["paper 1: SQuAD", "null_difficulty"])
    assert abs(paper.loc["ours", "null_base_rate"]) < 0.02 and np.isfinite(paper.loc["ours", "null_difficulty"])
    # pair counts: paper 1's 171 SQuAD pairs are C(19, 2); ours counted the same way
    assert paper.loc["paper 1: SQuAD", "models"] == 19 and paper.loc["paper 1: SQuAD", "pairs_unordered"] == 171
    assert paper.loc["ours", "pairs_unordered"] == 12 * 11 // 2
    assert paper.loc["ours", "pairs_ordered"] == 12 * 11  # each model pair both ways, no self-pairs


def test_rank_one_structure_on_a_one_factor_population():
    C, Y = _pop(0.0, n_models=10, n_items=400, sigma_e=0.4)
    row = hr.structure(C, n_iter=5, n_boot=20)
    assert row["eig_share_ci_low"] <= row["eig_share"] <= row["eig_share_ci_high"]
    assert row["eig_ratio"] > hr.DOMINANCE_RATIO
    share, ratio = hr.verdicts(pd.DataFrame([{**row, "matrix": "confidence", "subset": "all items",
                                               "panel": "one factor"}]))
    assert share.statistic == "first-factor share" and share.line == hr.SHARE_LINE
    assert share.status == SUPPORTED and ratio.status == SUPPORTED
    assert share.claim.endswith(hr.DOMINANCE_CLAIM) and ratio.statistic == "eig1/eig2"
    assert share.line_why == hr.SHARE_LINE_WHY and "25.3%" in share.line_why


def test_rank_one_verdict_not_supported_for_independent_models():
    rng = np.random.default_rng(5)
    X = pd.DataFrame((rng.random((400, 10)) < 0.5).astype(float))
    row = hr.structure(X, n_iter=5, n_boot=20)
    share, ratio = hr.verdicts(pd.DataFrame([{**row, "matrix": "confidence", "subset": "all items",
                                               "panel": "noise"}]))
    assert share.status == NOT_SUPPORTED and ratio.status == NOT_SUPPORTED


def test_rank_one_refuses_too_few_models_with_a_reason():
    C, _ = _pop(0.0, n_models=3)
    row = hr.structure(C)
    assert "at least 5" in row["note"]
    v = hr.verdicts(pd.DataFrame([{**row, "matrix": "confidence", "subset": "all items",
                                   "panel": "tiny"}]))[0]
    assert v.status == INSUFFICIENT


def test_fisher_interval():
    from metacog.stats import correlation_ci

    lo, hi = correlation_ci(0.5, 103)
    assert lo == pytest.approx(np.tanh(np.arctanh(0.5) - 1.959964 / 10), abs=1e-6)
    assert hi == pytest.approx(np.tanh(np.arctanh(0.5) + 1.959964 / 10), abs=1e-6)
    lo_s, hi_s = correlation_ci(0.5, 103, method="spearman")  # wider: variance 1.06 / (n - 3)
    assert hi_s - lo_s > hi - lo
    assert np.tanh(np.arctanh(0.5) + 1.959964 * np.sqrt(1.06) / 10) == pytest.approx(hi_s, abs=1e-6)
    assert np.isnan(correlation_ci(0.5, 3)[0])
    with pytest.raises(ValueError, match="method must be 'pearson' or 'spearman'"):
        correlation_ci(0.5, 10, method="kendall")


@pytest.mark.parametrize("r,n,level", [(0.5, 103, 0.95), (-0.31, 12, 0.95), (0.05, 2000, 0.9), (0.93, 40, 0.99)])
def test_fisher_interval_matches_pingouin(r, n, level):
    """The book's one Fisher-z interval against pingouin's ``compute_esci`` (the design card's
    reference library), to 1e-9: pingouin rounds its output, so it is asked for 12 decimals."""
    pingouin = pytest.importorskip("pingouin")
    from metacog.stats import correlation_ci

    ref = pingouin.compute_esci(stat=r, nx=n, ny=n, eftype="r", confidence=level, decimals=12)
    assert correlation_ci(r, n, ci=level) == pytest.approx(tuple(ref), abs=1e-9)


def _third_person_table():
    """Six models with private self-knowledge; their third-person judgments carry the
    difficulty signal only (every model's majority view, 5% flipped)."""
    C, Y = _pop(2.0, seed=6, n_models=6, n_items=300)
    rng = np.random.default_rng(0)
    other = C.copy()
    other[:] = np.repeat((C.mean(axis=1) > 0.5).to_numpy()[:, None], C.shape[1], axis=1).astype(float)
    other = other.where(rng.random(other.shape) > 0.05, 1 - other)
    return C, tp.third_person_baseline(C, Y, other, n_boot=50)


def test_third_person_baseline_rewards_private_knowledge():
    _, t = _third_person_table()
    mean = t.set_index("model").loc["mean over models"]
    assert mean["difference"] > 0 and mean["ci_low"] > 0


def test_third_person_verdict_and_page_table():
    C, t = _third_person_table()
    t = t.assign(panel="sim")
    (v,) = tp.third_person_verdicts(t)
    assert v.status == SUPPORTED and v.n == {"models": 6, "items": 300}
    # too few models for a claim: the same numbers read "insufficient evidence"
    few = t[t["model"].isin(list(C.columns[:3]) + ["mean over models"])]
    assert tp.third_person_verdicts(few)[0].status == INSUFFICIENT
    page = tp.display_third_person(t)
    col = "difference, itself − other people (95% CI for the mean over models only)"
    assert len(page) == 7 and "(95% CI" in page[col].iloc[-1]
    assert "(" not in page[col].iloc[0] and "difference (95% CI)" not in page.columns
    assert tp.display_third_person(t.iloc[:0])["result"].iloc[0].startswith("No source")


def _example_file(tmp_path, kappa, n_models=11):
    from metacog.power.examples import example_responses, write_responses

    df = example_responses(n_models=n_models, benchmarks=("algebra", "law"), n_items=150,
                           kappa=kappa, seed=1)
    return str(write_responses(df, tmp_path / "panel.csv"))


def _chapter_text(tmp_path, monkeypatch, name, kappa, parameters):
    """Execute chapter ``name`` on a simulated file (private analysis cache) and return its text."""
    from metacog import chapter
    monkeypatch.setenv("METACOG_CACHE_DIR", str(tmp_path / "cache"))
    nb = chapter.run(name, [_example_file(tmp_path, kappa=kappa)], tmp_path / "out", html=False,
                     parameters=parameters).notebook
    text = nb.read_text()
    assert "Traceback" not in text and "Warning" not in text
    return text


def test_rank_one_chapter_runs_on_a_file_it_has_never_seen(tmp_path, monkeypatch):
    text = _chapter_text(tmp_path, monkeypatch, "rank_one", 0.0, {"pa_iterations": 3, "n_boot": 10})
    assert "panel · algebra" in text and "panel · law" in text  # each benchmark side by side
    assert "11 models" in text or "| 11 |" in text or ">11<" in text


def test_pairwise_chapter_finds_a_planted_self_signal(tmp_path, monkeypatch):
    _chapter_text(tmp_path, monkeypatch, "pairwise", 1.5, {"n_permutations": 99, "n_boot": 50})
    import nbformat

    nb = nbformat.read(tmp_path / "out" / "pairwise.ipynb", as_version=4)
    decided = "\n".join(str(o.get("data", {}).get("text/plain", "")) for c in nb.cells
                         if c.cell_type == "code" and "hp.verdicts(results)" in c.source
                         for o in c.get("outputs", []))
    # the self-versus-other claim is supported on every planted benchmark, and nothing weaker
    rows = [line for line in decided.splitlines() if "tracks its own correctness" in line and "panel · " in line]
    assert len(rows) == 4, decided  # two benchmarks, all items and contested items
    assert all("lies wholly above 0" in r and "not supported" not in r and "insufficient" not in r for r in rows)


def test_figures_say_so_when_no_panel_is_large_enough():
    from types import SimpleNamespace

    from metacog.hypotheses import figures

    C, Y = _pop(0.5, n_models=3, n_items=50)
    ps = [SimpleNamespace(confidence=C, correct=Y, name="tiny", models=list(C.columns))]
    fig, name = figures.correlation_heatmap(ps, 5)
    assert name == "none" and "No panel" in fig.axes[0].texts[0].get_text()
    assert list(hr.second_factor([])["result"])[0].startswith("No panel")
    assert list(hp.vendor_blocks([])["result"])[0].startswith("No panel")


def test_status_sentence_names_only_groups_with_members():
    from metacog.hypotheses.common import status_sentence
    from metacog.hypotheses.verdict import decide

    vs = [decide("A: x", "s", 1.0, 0.5, 1.5, line=0), decide("B: x", "s", 1.0, 0.5, 1.5, line=0),
          decide("C: x", "s", 0.1, -0.5, 0.5, line=0)]
    text = status_sentence(vs, "holds in", "fails in", "cannot tell in")
    assert text.startswith("Holds in 2 of the 3 panels (A and B)")
    assert "cannot tell in 1 of the 3 panels (C)" in text
    assert "fails" not in text and "none" not in text


def test_structure_interval_is_centred_on_the_estimate():
    C, _ = _pop(0.0, n_models=11, n_items=200, seed=8)
    b = hr.bootstrap_structure(C, n_boot=30).set_index("statistic")
    for name in ("eig1/eig2", "first eigenvalue share"):
        assert b.at[name, "ci_low"] < b.at[name, "estimate"] < b.at[name, "ci_high"]


@pytest.mark.parametrize("gaps", ["none", "confidence"])
def test_tau_matrix_shortcuts_agree_with_the_general_counts(gaps):
    C, Y = _pop(0.5, n_models=5, n_items=80, seed=9)
    if gaps == "confidence":
        C = C.mask(np.random.default_rng(3).random(C.shape) < 0.1)
    w = np.random.default_rng(4).integers(0, 3, len(C)).astype(float)
    fast = hp.tau_matrix(C.to_numpy(), Y.to_numpy(), w)
    rep = np.repeat(np.arange(len(C)), w.astype(int))
    ref = stats.pairwise_calibration(C.iloc[rep].reset_index(drop=True), Y.iloc[rep].reset_index(drop=True),
                                     control=False).matrix("tau").loc[C.columns, C.columns]
    np.testing.assert_allclose(fast, ref.to_numpy(), atol=1e-12)


def test_what_if_cut_refits_at_the_fixed_cut_and_counts_the_models_it_makes_constant(tmp_path):
    from metacog.hypotheses.panels import panels
    from metacog.power.examples import example_responses, write_responses

    df = example_responses(n_models=6, n_items=80, seed=2)
    top = df["model"].isin(sorted(df["model"].unique())[:2])
    df.loc[top, "confidence"] = df.loc[top, "confidence"].clip(upper=0.9)  # two models never reach 0.95
    ps = panels([str(write_responses(df, tmp_path / "mine.csv"))])
    recut = hr.what_if_cut(ps, 0.95, n_boot=20)
    raw = next(p for p in ps if p.cut != "binary").confidence_raw
    constant = int(((raw >= 0.95).nunique() <= 1).sum())
    assert isinstance(recut, hr.Recut) and recut.cut == 0.95 and constant >= 2
    assert recut.sentence.startswith(f"At a fixed cut of 0.95, {constant} of the 6 models")
    s = recut.summary()
    assert len(s) == 1 and s.at[0, "cut"] == 0.95 and s.at[0, "sentence"] == recut.sentence
    assert s.drop(columns=["cut", "sentence"]).equals(recut.table) and recut.table.at[0, "matrix"] == "confidence"

    yes_no = df.assign(confidence=(df["confidence"] >= 0.5).astype(float))
    none = hr.what_if_cut(panels([str(write_responses(yes_no, tmp_path / "yn.csv"))]), 0.95)
    assert none.sentence == "No panel has continuous confidence." and list(none.table.columns) == ["result"]


def test_eig_ratio_interval_never_reaches_below_one():
    """#12: re-centring the draws shifted eig1/eig2's percentile below 1 (Exercise 28 showed
    0.98); the interval is clipped to the statistic's range and says so."""
    t = pd.DataFrame({"statistic": ["first eigenvalue share", "eig1/eig2", "one-factor share"],
                      "estimate": [0.5, 1.71, 0.9], "ci_low": [0.4, 0.98, 0.8],
                      "ci_high": [0.6, 3.10, 1.02], "n_boot": [10, 10, 10]})
    out = stats.resample.clip_to_range(t, hr.STRUCTURE_BOUNDS).set_index("statistic")
    assert out.at["eig1/eig2", "ci_low"] == 1.0 and out.at["eig1/eig2", "ci_high"] == 3.10
    assert out.at["one-factor share", "ci_high"] == 1.0
    assert out.at["first eigenvalue share", "ci_low"] == 0.4
    assert list(out["clipped"]) == [False, True, True]
    # on raters without any shared axis, where the ratio sits near 1
    X = hr.random_raters(200, 8, seed=2)
    b = hr.bootstrap_structure(X, n_boot=30).set_index("statistic")
    assert b.at["eig1/eig2", "ci_low"] >= 1.0


def test_verdict_table_shows_two_decimals_in_every_row():
    """#9: a column mixing eig1/eig2 above 10 with a correlation of 0.2 printed '0.2 | 0.1 | 0.3'
    beside a line of 0.10; each row now has two decimals, as the reason does."""
    from metacog.hypotheses.verdict import decide
    vs = [decide("A: claim", "eig1/eig2", 12.345, 10.2, 14.9, line=5.0, digits=2),
          decide("A: link", "r", 0.2, 0.11, 0.29, line=0.1, direction="less", digits=2)]
    t = hr.display_verdicts(vs, pd.DataFrame({"panel": ["A"], "design": ["prospective"]}))
    assert list(t["estimate (95% CI)"]) == ["12.35 (95% CI 10.20 to 14.90)", "0.20 (95% CI 0.11 to 0.29)"]
    assert list(t["judged against"]) == ["5", "0.1"]
    assert "line" not in t and "direction" not in t


def test_one_varying_model_is_counted_in_the_singular_and_on_judged_items():
    """#12: '1 models with varying judgments' / '1 models vary'; and the alignment row counted
    every row of the panel (28) where the structure row counted judged items (13)."""
    C = pd.DataFrame({f"m{j}": [1.0, 1.0, 1.0, 1.0] + [np.nan] * 4 for j in range(4)})
    C["m0"] = [1.0, 0.0, 1.0, 0.0] + [np.nan] * 4
    Y = pd.DataFrame({c: [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0] for c in C.columns})
    row = hr.structure(C, parallel=False)
    assert row["note"].startswith("1 model with varying judgments;") and row["items"] == 4
    a = hr.alignment(C, Y)
    assert a["note"].iloc[0].startswith("1 model varies in both confidence and correctness")
    assert list(a["items"]) == [4, 4]


def test_a_planted_vendor_family_signal_is_found_with_a_model_resampled_interval():
    """Three vendors of three models: each vendor's models share a latent item ease, so a model's
    confidence tracks its own vendor's correctness and not the others'. Same minus different
    vendor τ-b must come out above 0 with its interval; with no family signal it straddles 0."""
    from types import SimpleNamespace

    rng = np.random.default_rng(4)
    n = 400

    def panel(family: bool):
        shared = rng.normal(size=n)
        C, Y = {}, {}
        for v in ("va", "vb", "vc"):
            ease = rng.normal(size=n) if family else shared
            for i in range(3):
                name = f"{v}/m{i}"
                C[name] = ease + rng.normal(scale=1.0, size=n)
                Y[name] = (ease + rng.normal(scale=1.0, size=n) > 0).astype(float)
        C, Y = pd.DataFrame(C), pd.DataFrame(Y)
        return [SimpleNamespace(confidence=C, correct=Y, name="p", models=list(C.columns))]

    d = hp.vendor_difference(panel(True), n_boot=300, seed=0)
    assert d["models"] == 9 and d["ci_low"] > 0 and d["ci_low"] <= d["estimate"] <= d["ci_high"]
    blocks = hp.vendor_blocks(panel(True)).set_index("same vendor")
    assert blocks.loc[True, "mean τ-b"] > blocks.loc[False, "mean τ-b"]
    flat = hp.vendor_difference(panel(False), n_boot=300, seed=0)
    assert flat["ci_low"] < 0 < flat["ci_high"]
    assert hp.vendor_difference([]) is None
