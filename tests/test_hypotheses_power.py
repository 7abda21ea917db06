"""The power chapter's package layer on planted populations, and the chapter run end to end."""

import numpy as np
import pandas as pd
import pytest

from metacog.hypotheses import power as hw
from metacog.hypotheses.power import design as hd
from metacog.hypotheses.power import display as hv
from metacog.tidy.report import pretty
from metacog.power.simulate import population
from metacog.hypotheses.verdict import INSUFFICIENT, NEGLIGIBLE, SELF_OTHER_MARGIN_WHY, SUPPORTED, verdict_table

#: Small simulation settings: enough to separate a planted signal from none, fast.
FAST = dict(n_sims=20, n_sims_factor=8, n_perm=99, n_null=40, kappa_max=2.0, kappa_tol=0.1, n_boot=60)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("METACOG_CACHE_DIR", str(tmp_path / "cache"))


def _panel_row(pop, **kw):
    return hw.analyse(pop.confidence, pop.correct, **{**FAST, **kw}).assign(panel="planted")


def test_permutation_floor_and_the_test_it_chooses():
    assert hw.permutation_floor(3) == pytest.approx(1 / 6)
    assert hw.permutation_floor(4) == pytest.approx(1 / 24)
    assert hw.pairwise_method(3, 0.05) == "ttest"
    assert hw.pairwise_method(4, 0.05) == "permutation"


def test_analysis_block_subsamples_large_blocks_and_says_so():
    pop = population(5, 300, kappa=0.0, seed=1)
    C, Y, info = hw.analysis_block(pop.confidence, pop.correct, max_items=120, seed=0)
    assert C.shape == (120, 5) and info["subsampled"] and info["items_block"] == 300
    C2, _, info2 = hw.analysis_block(pop.confidence, pop.correct, max_items=120, seed=0)
    assert C.index.equals(C2.index)  # deterministic given the seed
    _, _, whole = hw.analysis_block(pop.confidence, pop.correct, max_items=1000)
    assert not whole["subsampled"] and whole["items"] == 300


def test_a_planted_signal_is_supported_and_its_absence_is_negligible_in_a_big_design():
    strong = _panel_row(population(10, 600, kappa=1.0, seed=2))
    v = hw.verdicts(strong, margin=0.05)[0]
    assert v.status == SUPPORTED, v.reason
    assert strong.at[0, "excess_ci_low"] > 0 and strong.at[0, "equiv_kappa"] > 0.3

    none = _panel_row(population(20, 1500, kappa=0.0, seed=3))
    assert none.at[0, "detectable_excess"] < 0.05  # a big design detects small excesses
    v0 = hw.verdicts(none, margin=0.05)[0]
    assert v0.status == NEGLIGIBLE and v0.basis == "within", v0.reason
    assert "inside (−0.05, 0.05)" in v0.reason and v0.line_why == "0.05 τ-b, the margin given here"
    # the same null with a margin below what the design can detect is not evidence of absence
    tight = hw.verdicts(none, margin=none.at[0, "detectable_excess"] / 4)[0]
    assert tight.status == INSUFFICIENT and "design can detect only" in tight.reason


def test_a_three_model_null_is_insufficient_evidence_for_lack_of_power():
    small = _panel_row(population(3, 60, kappa=0.0, seed=4))
    assert small.at[0, "method"] == "ttest"  # the permutation test cannot reach 0.05 with 3 models
    assert small.at[0, "detectable_excess"] > 0.05
    v = hw.verdicts(small, margin=0.05)[0]
    assert v.status == INSUFFICIENT


def test_detectable_kappa_shrinks_with_more_items():
    few = _panel_row(population(8, 150, kappa=0.0, seed=5))
    many = _panel_row(population(8, 1200, kappa=0.0, seed=5))
    assert many.at[0, "mdk_pairwise_link"] < few.at[0, "mdk_pairwise_link"]


def test_a_panel_without_a_complete_block_gets_a_note_not_a_crash():
    pop = population(3, 40, kappa=0.0, seed=6)
    C = pop.confidence.copy()
    C.iloc[:, 0] = 1  # a model that never varies leaves two models: no block of three
    row = hw.analyse(C, pop.correct, **FAST).assign(panel="broken")
    assert "no complete block" in row.at[0, "note"]
    assert hw.verdicts(row)[0].status == INSUFFICIENT
    assert "not analysed" in hv.block_notes(row)
    assert hv.display_observed(row).empty


def test_local_design_shows_the_permutation_floor():
    loc = hd.local_design(n_models=3, n_items=[40], kappas=[0.0, 1.0], n_sims=20, kappa_tol=0.2)
    perm = loc[loc["test"] == "permutation"]
    assert (perm["power at kappa 1"] == 0).all() and perm["mdk"].isna().all()
    t = loc[loc["test"] == "ttest"]
    assert (t["power at kappa 1"] > t["power at kappa 0"]).all()
    shown = pretty(hv.display_local(loc))
    assert "more than 3" in set(shown["detectable κ (80% power)"])


def test_page_tables_and_prose_have_no_missing_values():
    rows = pd.concat([_panel_row(population(6, 300, kappa=k, seed=7)).assign(panel=f"p{k}")
                      for k in (0.0, 0.8)], ignore_index=True)
    for table in (hv.display_fits(rows), hv.display_detectable(rows), hv.display_observed(rows)):
        text = pretty(table).to_string()
        assert "nan" not in text.lower() and len(table) == 2
    assert "κ at the interval's upper end (a bound)" in hv.display_observed(rows).columns
    para = hv.verdict_paragraph(hw.verdicts(rows), rows)
    assert "p0.8" in para and "nan" not in para.lower()
    q = hv.quantity_table(population(4, 50, seed=0).summary())
    assert q.loc[q["quantity"] == "n items", "value"].item() == "50"


def test_grid_headlines_read_the_grid():
    grid = hd.default_grid([4], [60], [0.0, 1.0], n_sims=10, n_perm=49)
    h = hd.grid_headlines(grid)
    assert set(grid["test"]) == {"pairwise", "factor"}
    assert h["m_big"] == "4" and h["k_small"] == "1"
    assert float(h["pair_big_small"]) >= float(h["pair_size"])


def test_power_chapter_runs_on_a_synthetic_source(tmp_path):
    from metacog import chapter
    from metacog.power.examples import example_responses, write_responses

    src = write_responses(example_responses(n_models=5, benchmarks=("algebra",), n_items=60, kappa=0.8,
                                            seed=1), tmp_path / "planted.csv")
    fast = {"n_sims": 8, "n_sims_factor": 4, "kappas": [0.0, 0.8], "n_models_grid": [4],
            "n_items_grid": [60], "n_recovery_seeds": 1, "n_perm": 49, "kappa_tol": 0.2, "n_null": 20,
            "n_boot": 30, "local_items": [40], "local_kappas": [0.0, 0.8]}
    nb = chapter.run("power", [str(src)], tmp_path / "out", parameters=fast, html=False).notebook
    import nbformat

    cells = nbformat.read(nb, as_version=4).cells
    outputs = "\n".join(str(o.get("data", {}).get(kind, o.get("text", ""))) for c in cells
                         if c.cell_type == "code" for o in c.get("outputs", [])
                         for kind in ("text/plain", "text/html", "text/markdown"))
    assert "planted · algebra" in outputs  # the panel reached the page's tables
    # kappa = 0.8 is planted: the page's verdict on it is "supported", and nothing weaker
    decided = "\n".join(str(o.get("data", {}).get("text/plain", "")) for c in cells
                         if c.cell_type == "code" and "hw.verdicts(results, margin=margin)" in c.source
                         for o in c.get("outputs", []))
    assert "planted · algebra" in decided and "supported" in decided
    assert "not supported" not in decided and "insufficient evidence" not in decided
    assert "Traceback" not in outputs and "NaN" not in outputs


def test_verdict_paragraph_reads_right_for_a_single_panel():
    from metacog.hypotheses.verdict import decide

    one = decide("spar: claim", "excess", 0.01, -0.02, 0.04, line=0.0, direction="greater",
                 n={"models": 5}, min_counts={"models": 3}, detectable=0.05, margin=0.02)
    para = hv.verdict_paragraph([one], pd.DataFrame({"panel": ["spar"], "ruled_out_kappa": [np.nan]}))
    assert "all 1 " not in para and "none of the 1 " not in para
    assert para.startswith(("Judgments of unknown design (the data do not say when they were made): a "
                            "self-signal beyond base rates larger than the smallest excess of interest "
                            "(0.02 τ-b) shows in no panel; the excess is negligible (its interval lies "
                            "inside ±0.02 τ-b, within the line) in no panel."))
    assert "The evidence is insufficient in the one panel of this design because it could not detect" in para


def _excess_row(panel, est, lo, hi, design, det=0.01):
    return {"panel": panel, "design": design, "models": 20, "items": 500, "excess": est,
            "excess_ci_low": lo, "excess_ci_high": hi, "detectable_excess": det, "ruled_out_kappa": np.nan}


def test_an_excess_above_zero_but_inside_the_margin_is_negligible_never_not_supported():
    """#6: Atlas's excess 0.023 (0.015 to 0.030) with margin 0.02 is above 0 but not shown to exceed
    the margin: insufficient evidence; wholly beyond the margin is supported; wholly inside the
    margin (above 0 or not) is negligible, never "not supported"."""
    t = pd.DataFrame([_excess_row("Atlas", 0.023, 0.015, 0.030, "after answering"),
                      _excess_row("Big", 0.05, 0.03, 0.07, "after answering"),
                      _excess_row("Tiny", 0.01, 0.005, 0.015, "after answering")])
    atlas, big, tiny = hw.verdicts(t, margin=0.02)
    assert atlas.status == INSUFFICIENT and atlas.basis == "sesoi", atlas.reason
    assert "reaches across 0.02" in atlas.reason
    assert big.status == SUPPORTED and "beyond 0.02" in big.reason
    assert tiny.status == NEGLIGIBLE and tiny.basis == "within"
    assert all(v.line_why == SELF_OTHER_MARGIN_WHY for v in (atlas, big, tiny))
    shown = verdict_table([atlas, big, tiny])
    assert set(shown["threshold"]) == {"±0.02 around 0"}
    assert list(shown["outcome"]) == ["cannot tell", "above the line", "within the line (negligible)"]


def test_verdict_paragraph_counts_within_each_design():
    """#6: no count across designs; the prospective design comes first and is counted alone."""
    t = pd.DataFrame([_excess_row("Atlas", 0.023, 0.015, 0.030, "after answering"),
                      _excess_row("Battery", 0.05, 0.03, 0.07, "after answering"),
                      _excess_row("Cal", 0.04, 0.025, 0.06, "after answering"),
                      _excess_row("spar", 0.0, -0.01, 0.01, "prospective")])
    para = hv.verdict_paragraph(hw.verdicts(t, margin=0.02), t, margin=0.02)
    assert "of the 4" not in para and "4 panels" not in para
    pro = para.index("Prospective judgments")
    after = para.index("Judgments made after answering")
    assert pro < after
    assert "larger than the smallest excess of interest (0.02 τ-b) shows in no panel; the excess is " \
           "negligible (its interval lies inside ±0.02 τ-b, within the line) in the one panel." in para[pro:after]
    assert ("shows in 2 of the 3 panels (Battery and Cal); an excess above 0 but not shown to exceed 0.02 "
            "in 1 of the 3 panels (Atlas), which is therefore not called supported") in para[after:]


def test_verdict_paragraph_says_rules_out_only_where_the_verdict_is_not_supported():
    """A8: the κ at the upper end of T's interval is a powered exclusion only where the verdict is
    "not supported"; elsewhere (insufficient evidence) it is worded as a bound."""
    t = pd.DataFrame([{**_excess_row("Tiny", 0.0, -0.005, 0.01, "prospective", det=0.01),
                       "ruled_out_kappa": 0.05, "ruled_out_gap": 0.04},
                      {**_excess_row("Weak", 0.01, -0.01, 0.03, "prospective", det=0.05),
                       "ruled_out_kappa": 0.18, "ruled_out_gap": 0.10}])
    tiny, weak = hw.verdicts(t, margin=0.02)
    assert tiny.status == NEGLIGIBLE and weak.status == INSUFFICIENT
    para = hv.verdict_paragraph([tiny, weak], t, margin=0.02)
    assert "Tiny rules out κ above 0.05 (a latent self-minus-other gap of 0.04)" in para
    assert "Weak rules out" not in para
    assert ("the upper end of T's interval is a bound, not an exclusion the design was powered for; in the "
            "simulator's units it corresponds to κ = 0.18 (a latent self-minus-other gap of 0.10) in Weak") in para
    alone = hv.verdict_paragraph([weak], t.iloc[[1]], margin=0.02)
    assert "rules out κ" not in alone
    assert ('No verdict here is "negligible" or "not supported", so in each panel the upper end of T\'s '
            'interval is a bound') in alone


def test_the_detectable_effect_is_never_finer_than_the_interval_the_verdict_reads():
    """"detect only effects of 0.023 or more (power analysis)" stood beside an interval of −0.024
    to 0.039, which detects about 0.045 at 80% power: the verdict now names the larger."""
    row = pd.DataFrame([{"panel": "P", "models": 10, "items": 500, "excess": 0.0075, "excess_ci_low": -0.024,
                         "excess_ci_high": 0.039, "detectable_excess": 0.023}])
    (v,) = hw.verdicts(row, margin=0.02)
    assert v.status == INSUFFICIENT and v.detectable == pytest.approx(0.045, abs=0.001)
    assert "0.023" in v.reason and "interval's own width" in v.reason
    sharp = row.assign(excess_ci_low=-0.004, excess_ci_high=0.005, detectable_excess=0.015)
    (w,) = hw.verdicts(sharp, margin=0.02)
    assert w.status == NEGLIGIBLE and w.detectable == pytest.approx(0.015)  # the power analysis is the larger
