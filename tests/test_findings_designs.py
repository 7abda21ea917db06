"""Designs as data, verdicts grouped by design, one interval per statistic, the findings page."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from metacog.data import designs
from metacog.data.designs import design
from metacog.hypotheses import pairwise as hp
from metacog.hypotheses import rank_one as hr
from metacog.hypotheses.panels import panels
from metacog.hypotheses.verdict import decide

ROOT = Path(__file__).resolve().parents[1]

#: The documented facts (SOURCES.md, each panel's own code in the mirror, the recorded runs'
#: templates): (source, probe) -> (timing, words its elicitation must name).
FACTS = {
    ("atlas", "verbal_confidence"): ("after answering", "0-100"),
    ("battery", "keep_withdraw"): ("after answering", "KEEP / WITHDRAW"),
    ("battery", "bet_nobet"): ("after answering", "BET / NO-BET"),
    ("battery", "path_choice"): ("prospective", "before answering"),
    ("spar", "prospective"): ("prospective", "answer-or-pass"),
    ("spar", "verbal_confidence"): ("prospective", "without answering"),
    ("spar", "other_confidence"): ("prospective, about other people", "college-educated people"),
    ("calibration_study", "verbal_confidence"): ("after answering", "0-100"),
    ("calibration_study", "logit_confidence"): ("after answering", "token logit"),
    ("squad", "prospective"): ("prospective", "could you answer without it"),
    ("squad", "counterfactual"): ("counterfactual", "after a correct answer"),
    ("legalbench", "prospective"): ("prospective", "yes/no"),
    ("audit_policies", "c0"): ("after answering", "forced Yes/No"),
    ("audit_policies", "c1"): ("after answering", "may abstain"),
    ("audit_policies", "c2"): ("after answering", "self-critique"),
}


@pytest.mark.parametrize("key", list(FACTS))
def test_design_of_each_registered_source(key):
    d = design(*key)
    timing, words = FACTS[key]
    assert d.timing == timing
    assert words in d.elicitation
    assert d.basis


def test_recorded_runs_take_their_temperature_from_runs_yml():
    assert design("legalbench_sampled", "prospective").temperature == "0.8"
    assert design("squad", "prospective").temperature == "0"
    assert design("squad", "prospective").prompt == "prospective@1"


def test_designs_table_lists_paper_1_designs_first():
    t = designs.designs_table()
    ranks = [designs.timing_rank(x) for x in t["timing"]]
    assert ranks == sorted(ranks)
    assert t.iloc[0]["timing"] == "prospective"
    assert {"spar", "battery", "atlas", "calibration_study"} <= set(t["source"])


def _file(tmp_path, name, *, n_models=7, n_items=80, seed=0, design_value=None, probe=None):
    from metacog.power.examples import example_responses, write_responses

    df = example_responses(n_models=n_models, benchmarks=(name,), n_items=n_items, kappa=0.5, seed=seed)
    if probe is not None:
        df["probe"] = probe
    if design_value is not None:
        df["design"] = design_value
    return str(write_responses(df, tmp_path / f"{name}.csv"))


def test_a_users_file_is_unknown_unless_it_says(tmp_path):
    said = _file(tmp_path, "said", design_value="prospective")
    silent = _file(tmp_path, "silent", seed=1)
    odd = _file(tmp_path, "odd", seed=2, design_value="whenever")
    ps = panels([said, silent, odd])
    by = {p.label: p.design for p in ps}
    assert by["said"].timing == "prospective"
    assert by["silent"].timing == "unknown" and "unknown" in by["silent"].elicitation
    assert by["odd"].timing == "unknown" and "whenever" in by["odd"].elicitation
    s = ps.summary().set_index("source")  # a user's file is named by its file name, not its path
    assert s.loc[Path(said).name, "design"] == "prospective" and s.loc[Path(silent).name, "design"] == "unknown"


def test_a_probe_named_prospective_does_not_make_a_users_file_prospective(tmp_path):
    """The timing in every result table (panel_columns) and the sentences built from it follow the
    panel's design: a user's file whose probe is called 'prospective' but carries no design column
    is "unknown" there too, as in the panels table, not "before answering"."""
    from metacog.hypotheses.common import panel_columns

    said = _file(tmp_path, "said", design_value="prospective", probe="prospective")
    silent = _file(tmp_path, "silent", seed=1, probe="prospective")
    by = {p.label: p for p in panels([said, silent])}
    assert by["silent"].probe == by["said"].probe == "prospective"
    assert panel_columns(by["silent"])["timing"] == "unknown"
    assert panel_columns(by["said"])["timing"] == "before answering"


def _planted():
    """Two prospective panels (one dominated, one not) and three after-answering panels."""
    rows = []
    for name, d, (est, lo, hi) in [("P1", "prospective", (6.0, 5.0, 7.0)),
                                   ("A1", "after answering", (1.5, 1.1, 1.9)),
                                   ("P2", "prospective", (1.2, 1.0, 1.4)),
                                   ("A2", "after answering", (1.5, 1.1, 1.9)),
                                   ("A3", "after answering", (1.6, 1.2, 2.0))]:
        rows.append({"panel": name, "design": d, "matrix": "confidence", "subset": "all items",
                     "models": 10, "items": 200, "eig_ratio": est, "eig_ratio_ci_low": lo,
                     "eig_ratio_ci_high": hi})
    return pd.DataFrame(rows)


def test_rank_one_verdicts_never_count_across_designs():
    t = _planted()
    vs = [v for v in hr.verdicts(t) if v.statistic == "eig1/eig2"]  # the planted rows carry no share
    groups = hr.by_design(vs, t)
    assert list(groups) == ["prospective", "after answering"]
    assert [v.claim.split(":")[0] for v in groups["prospective"]] == ["P1", "P2"]
    text = hr.verdict_paragraph(vs, t)
    assert text.index("Prospective") < text.index("after answering")
    assert "1 of its 2 prospective panels (P1)" in text and "1 of its 2 prospective panels (P2)" in text
    assert "all 3 of its after-answering panels (A1, A2 and A3)" in text
    assert "of the 5" not in text and " 5 " not in text and "4 of" not in text
    frame = hr.verdict_frame(vs, t)
    assert list(frame["design"]) == ["prospective"] * 2 + ["after answering"] * 3


def test_rank_one_tables_carry_each_panels_design(tmp_path, monkeypatch):
    monkeypatch.setenv("METACOG_NO_MEMO", "1")
    ps = panels([_file(tmp_path, "before", design_value="prospective"),
                 _file(tmp_path, "after", seed=3, design_value="after answering")])
    t = hr.table(ps, n_iter=2, n_boot=5)
    assert set(t.groupby("panel")["design"].first()) == {"prospective", "after answering"}
    vs = hr.verdicts(t)
    assert hr.design_of(vs, t)[0] == "prospective"


def test_one_interval_per_statistic_on_both_pages(tmp_path, monkeypatch):
    monkeypatch.setenv("METACOG_NO_MEMO", "1")
    ps = panels([_file(tmp_path, "same", n_models=6, n_items=120)])
    ours = hr.mean_tau_table(ps, n_boot=40, seed=3)
    theirs = hp.table(ps, n_boot=40, seed=3, n_perm=99)  # the pairwise page, with its control
    cols = ["mean_tau", "mean_tau_ci_low", "mean_tau_ci_high"]
    pd.testing.assert_frame_equal(ours[cols], theirs[cols])
    # both nulls too: rank_one's copy of paper 1's table showed "–" for the difficulty null
    nulls = ["null_base_rate", "null_difficulty"]
    assert ours[nulls].notna().all().all()
    pd.testing.assert_frame_equal(ours[nulls], theirs[nulls])
    # a different number of resamples would give another interval: the equality is not automatic
    other = hr.mean_tau_table(ps, n_boot=41, seed=3)
    assert not np.allclose(other[cols].to_numpy(), ours[cols].to_numpy())


def test_the_book_shows_these_intervals_with_the_same_settings():
    sets = yaml.safe_load((ROOT / "notebooks" / "manifest.yml").read_text())["parameter_sets"]
    ro, pw = sets["rank-one-default"], sets["pairwise-default"]
    assert ro["n_boot"] == pw["n_boot"] >= 1000 and ro["seed"] == pw["seed"]
    assert ro["unanimous_rule"] == pw["unanimous_rule"]
    # the power page's T interval comes from the same bootstrap_taus: same resamples and seed
    po = sets["power-default"]
    assert po["n_boot"] == pw["n_boot"] and po["seed"] == pw["seed"]
    # the pairwise page calls hr.table with its defaults: they must be the rank-one chapter's
    import inspect

    defaults = {k: v.default for k, v in inspect.signature(hr.table).parameters.items()
                if v.default is not inspect.Parameter.empty}
    assert defaults["n_boot"] == ro["n_boot"] and defaults["n_iter"] == ro["pa_iterations"]
    assert defaults["reference"] == ro["pa_reference"] and defaults["unanimous_rule"] == ro["unanimous_rule"]


def test_findings_table_fills_every_column(tmp_path, monkeypatch):
    from metacog.pages import findings

    monkeypatch.setenv("METACOG_NO_MEMO", "1")
    big = _file(tmp_path, "big", design_value="prospective")
    tiny = _file(tmp_path, "tiny", n_models=3, seed=4, design_value="after answering")
    sets = {"ro": {"sources": [big, tiny], "cuts": {}, "pa_iterations": 2, "pa_reference": "resampled",
                   "n_boot": 5, "unanimous_rule": "either", "seed": 0},
            "pw": {"sources": [big, tiny], "cuts": {}, "alpha": 0.05, "unanimous_rule": "either",
                   "n_permutations": 19, "n_boot": 5, "seed": 0}}
    found = findings.collect({"rank_one": "ro", "pairwise": "pw"}, parameter_sets=sets)
    t = findings.findings_table(found)
    assert len(t) >= 6 and set(t["chapter"]) == {"rank_one", "pairwise"}
    assert {"prospective", "after answering"} <= set(t["design"])
    assert (t["status"] == "insufficient evidence").any()  # the 3-model panel
    words = t.drop(columns=["estimate", "ci_low", "ci_high"])
    assert words.notna().all().all() and (words.astype(str).apply(lambda c: c.str.strip() != "")).all().all()
    shown = findings.display(t)
    assert (shown.astype(str).apply(lambda c: c.str.strip() != "")).all().all()
    # paper 1 denies the self-over-other claim: "not supported" there agrees with it
    pw = t[(t["chapter"] == "pairwise") & (t["design"] == "prospective") & (t["claim_id"] != "p1-pairwise")]
    assert set(pw["agreement"][pw["status"] == "not supported"]) <= {"agrees with the paper"}
    assert set(pw["agreement"][pw["status"] == "supported"]) <= {"disagrees with the paper"}
    # paper 1 asserts that pairwise calibration lies (barely) above its null: "supported" agrees
    excess = t[(t["claim_id"] == "p1-pairwise") & (t["design"] == "prospective")]
    assert len(excess) == 1 and excess["statistic"].iloc[0].startswith("mean pairwise τ-b − base-rate")
    assert set(excess["agreement"][excess["status"] == "supported"]) <= {"agrees with the paper"}
    after = t[(t["design"] == "after answering") & (t["paper"] != "beyond both papers")]
    assert len(after) and set(after["agreement"]) == {"different design: not comparable"}
    # the eigenvalue ratio is the book's own row: paper 1 reports no ratio
    own = t[t["statistic"] == "eig1/eig2"]
    assert len(own) and set(own["paper"]) == {"beyond both papers"}
    counts = findings.agreement_counts(t)
    assert set(counts["design"]) == set(t["design"])
    n_cells = counts.drop(columns=["paper", "claim", "design"]).to_numpy().sum()
    assert n_cells == len(t)


def test_findings_page_follows_the_introduction():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    assert toc["root"] == "book/intro"
    assert toc["parts"][0]["chapters"][0]["file"] == "notebooks/findings"
    spec = yaml.safe_load((ROOT / "notebooks" / "manifest.yml").read_text())
    entry = next(c for c in spec["chapters"] if c["page"] == "findings")
    assert entry["source"] == "notebooks/findings.md"
    from metacog.pages import findings

    chapters = spec["parameter_sets"][entry["parameters"]]["chapters"]
    assert set(chapters) == set(findings.CHAPTERS)
    assert all(s in spec["parameter_sets"] for s in chapters.values())


def test_untestable_claims_say_why():
    from metacog.pages import findings
    from metacog.data.designs import Design

    v = decide("X: a model's confidence tracks its own correctness better than other models'",
               "self minus other τ-b", np.nan, np.nan, np.nan)
    t = findings.findings_table([findings.Found("pairwise", v, "X", Design("prospective", "yes/no"))])
    u = findings.untestable(t)
    row = u[u["claim"].str.startswith("A model's confidence")].iloc[0]
    assert row["panels tried"] == 1 and "missing" in row["why"]
    # a claim no chapter decided is listed too
    assert (u["panels tried"] == 0).any()


def test_claims_of_chapters_not_gathered_are_not_called_untestable():
    from metacog.pages import findings

    empty = findings.findings_table([])
    assert set(findings.untestable(empty)["panels tried"]) == {0}
    assert findings.untestable(empty, chapters=["rank_one"])["claim"].str.contains("rank one").any()
    assert len(findings.untestable(empty, chapters=["rank_one"])) == 2
    assert findings.untestable(empty, chapters=[]).empty
