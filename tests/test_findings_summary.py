"""The findings page at a glance: one summary row per claim and one column per design, each cell
'verdict (value, 95% CI)'; detailed rows name their claim by id instead of repeating it; the
sentence counting the claims decided in their own design; the prospective same-weight twin of
the shortcut chapter and the models the reasoning-text chapter tried reach the page."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from metacog.data.designs import Design
from metacog.hypotheses.verdict import INSUFFICIENT, SUPPORTED, Verdict, decide
from metacog.pages import findings

SELF = "a model's confidence tracks its own correctness better than other models'"
PRO, AFTER = Design("prospective", "yes/no"), Design("after answering", "0-100")


def _found(chapter, claim, design, ci, statistic="x", **kw):
    v = decide(claim, statistic, float(np.mean(ci)), *ci, line=0.0, direction="greater", **kw)
    return findings.Found(chapter, v, claim.split(": ", 1)[0], design)


def _rows():
    return [
        _found("pairwise", f"P1: {SELF}", PRO, (-0.01, 0.01), margin=0.02),           # not supported
        _found("pairwise", f"P2: {SELF}", PRO, (0.03, 0.05)),                          # supported
        _found("pairwise", f"A1: {SELF}", AFTER, (0.03, 0.05)),                        # other design
        _found("rank_one", "P1: confidence is dominated by one factor", PRO, (2.0, 3.0)),
        _found("shortcut", "P1 · m-think vs m (prospective): a model with thinking is better calibrated "
                           "to itself than its twin without", PRO, (0.009, 0.186)),
        _found("miscalibration", "audit: self-critique with abstention lowers the policy-aware loss", AFTER,
               (0.05, 0.15)),
    ]


def test_one_summary_row_per_claim_and_one_column_per_design():
    t = findings.findings_table(_rows())
    gathered = ["pairwise", "rank_one", "shortcut", "miscalibration"]
    s = findings.summary_table(t, chapters=gathered)
    ids = [c["id"] for c in findings.PAPER_CLAIMS if c["chapter"] in gathered] + ["book-shortcut"]
    assert list(s["claim"]) == ids  # every claim once, the papers' first, even those no row decides
    designs = [c for c in s.columns if c not in ("claim", "what is claimed", "against the paper")]
    assert designs == ["prospective", "after answering"]  # paper 1's design first
    row = s.set_index("claim").loc["p1-individual"]
    assert row["prospective"].splitlines() == [
        "not supported on 1, supported on 1 of 2 panels:",
        "P1: not supported (0.000, 95% CI −0.010 to 0.010)",
        "P2: supported (0.040, 95% CI 0.030 to 0.050)"]
    assert row["after answering"] == "supported (0.040, 95% CI 0.030 to 0.050)"
    assert row["against the paper"] == "the panels that decide it differ"
    by = s.set_index("claim")
    assert by.loc["p1-rank-one", "prospective"] == "supported (2.500, 95% CI 2.000 to 3.000)"
    assert by.loc["p1-rank-one", "after answering"] == "—"
    assert by.loc["p1-rank-one", "against the paper"] == "agrees with the paper on every panel of its design that decides it"
    assert by.loc["p2-gain", "against the paper"] == "agrees with the paper on every panel of its design that decides it"
    assert by.loc["p1-link", "against the paper"] == "not decided in the paper's design"
    assert by.loc["book-shortcut", "against the paper"] == findings.OWN
    # no claim of a chapter that was not gathered
    assert not s["claim"].isin([c["id"] for c in findings.PAPER_CLAIMS if c["chapter"] == "power"]).any()


def test_a_new_verdict_word_shows_as_it_is():
    """The summary renders whatever verdict words the rows carry."""
    from dataclasses import replace

    f = _rows()[1]
    odd = findings.Found(f.chapter, replace(f.verdict, status="within the line (negligible)"), f.panel, f.design)
    s = findings.summary_table(findings.findings_table([odd]), chapters=["pairwise"]).set_index("claim")
    assert s.loc["p1-individual", "prospective"].startswith("within the line (negligible) (0.040, 95% CI")


def test_detailed_rows_name_the_claim_by_id_without_its_text():
    t = findings.findings_table(_rows())
    shown = findings.display(t)
    assert list(shown["claim"]) == list(t["claim_id"])
    # every detailed row prints the line its verdict was judged against
    assert set(shown["judged against"]) == {"±0.02 around 0", "0"}
    assert not shown.isin(list(t["claim"])).any().any()  # the claim's words are in the claims table only
    assert "how confidence was asked" not in shown and "how confidence was asked" in findings.display(
        t, elicitation=True)
    counts = findings.agreement_counts(t)
    assert set(counts["claim"]) == set(t["claim_id"][t["paper"] != "beyond both papers"]) | {"book-shortcut"}
    claims = findings.claims_table(t, chapters=["pairwise"]).set_index("claim")
    assert claims.loc["p1-individual", "as the chapter tests it"] == SELF
    assert claims.index.is_unique
    # a claim no panel tests is in the summary, not here: p1-internal has no row
    assert list(claims.index) == ["p1-individual", "book-shortcut"]


def test_the_sentence_counts_the_claims_decided_in_their_own_design():
    t = findings.findings_table(_rows())
    text = findings.decided_sentence(t, chapters=["pairwise", "rank_one"])
    # pairwise and rank_one make 5 claims: rank-one and individual are decided on a prospective panel
    assert text.startswith("Of the 5 claims of both papers gathered here, 2 are decided in their own design "
                           "(on at least one panel of the paper's design, measurement and contrast): p1-rank-one "
                           "and p1-individual; of those, ")
    assert "p1-rank-one agrees with the paper" in text and "on p1-individual the deciding panels differ" in text
    # decided only after answering: not in its own design
    after = findings.findings_table(_rows()[2:3])
    assert findings.decided_sentence(after, chapters=["pairwise"]) == (
        "Of the 3 claims of both papers gathered here, none is decided in its own design (on at least one "
        "panel of the paper's design, measurement and contrast).")


def test_the_book_s_own_questions_get_an_id_each():
    rows = _rows() + [_found("shortcut", "P1: some other question of the chapter", PRO, (0.1, 0.2))]
    t = findings.findings_table(rows)
    own = t[t["paper"] == "beyond both papers"].drop_duplicates("claim")
    assert list(own["claim_id"]) == ["book-shortcut", "book-shortcut-2"]


def test_wide_tables_scroll_and_keep_line_breaks():
    t = findings.findings_table(_rows())
    html = findings.Wide(findings.summary_table(t, chapters=["pairwise"]))._repr_html_()
    assert html.startswith('<div class="table-wrapper" style="overflow-x: auto')
    assert "panels:<br>P1: not supported" in html
    assert "&lt;model&gt;" in findings.Wide(pd.DataFrame({"a": ["<model>"]}))._repr_html_()  # still escaped


def _twins(pairs):
    rows = []
    for pair, exact, d, lo, hi, excluded in pairs:
        rows.append({"panel": "P1", "timing": "before answering", "pair": pair, "exact": exact,
                     "subset": "all items", "pairs": 1, "difference": d, "difference_ci_low": lo,
                     "difference_ci_high": hi, "excluded": excluded})
    kept = sum(1 for p in pairs if p[1] and not p[5])
    rows.append({"panel": "P1", "timing": "before answering", "pair": "mean over same-weight twins",
                 "exact": pd.NA, "subset": "all items", "pairs": kept, "difference": np.nan,
                 "difference_ci_low": np.nan, "difference_ci_high": np.nan, "excluded": ""})
    return pd.DataFrame(rows)


def test_a_panel_with_too_few_twins_shows_each_same_weight_pair():
    from metacog.pages.findings.collect import _twin_verdicts

    t = _twins([("a-think vs a", True, 0.093, 0.009, 0.186, ""),
                ("b-think vs b", True, 0.2, 0.1, 0.3, "b gives one value on 98% of items (near-constant)"),
                ("c-reasoner vs c-chat", False, 0.1, 0.05, 0.2, "")])
    vs = _twin_verdicts(t, [])
    assert [v.claim.split(": ")[0] for v in vs] == ["P1 · a-think vs a (prospective)", "P1 · b-think vs b (prospective)"]
    a, b = vs
    # The chapter decides no single pair, so neither does the findings page: the pair's interval
    # lies above 0, yet the row carries the chapter's "insufficient evidence" and says why.
    assert a.status == INSUFFICIENT and a.statistic.endswith("one same-weight pair")
    assert (a.estimate, a.ci_low, a.ci_high) == (0.093, 0.009, 0.186)
    assert "not on thinking models in general" in a.reason and "this panel has 1" in a.reason
    assert b.status == INSUFFICIENT and "near-constant" in b.reason
    f = findings.findings_table([findings.Found("shortcut", a, a.claim.split(": ")[0], PRO)])
    assert f["verdict_value"].iloc[0] == "insufficient evidence (0.093, 95% CI 0.009 to 0.186)"
    assert f["paper"].iloc[0] == "beyond both papers"


def test_a_reasoning_text_source_it_could_not_fit_names_the_models_tried():
    from metacog.pages.findings.collect import _models_tried

    v = Verdict("squad: the text probe beats the model's own Yes/No", "AUROC difference", np.nan, np.nan,
                np.nan, {}, INSUFFICIENT, "no model follows the format and answers above chance", 0.0)
    gate = pd.DataFrame({"model": ["local/m1", "local/m2"], "carries_signal": [False, False],
                         "failures": ["answers at chance (accuracy 0.51)", ""]})
    result = SimpleNamespace(models={"squad": ([], ["local/m1", "local/m2"])}, gates={"squad": gate})
    out = _models_tried(v, "squad", result)
    assert out.reason.endswith("Models tried: m1 (answers at chance (accuracy 0.51)); m2 (does not follow "
                               "the format)")
    from metacog.hypotheses.verdict import fmt_n

    assert fmt_n(out.n) == "2 models with reasoning texts, no models usable"
    none = _models_tried(v, "other", SimpleNamespace(models={}, gates={}))
    assert fmt_n(none.n) == "no models with reasoning texts"


@pytest.mark.slow
def test_the_prospective_twin_reaches_the_default_books_rows():
    """On the default book's shortcut sources, spar's one same-weight twin (claude-sonnet-4.5 with
    and without thinking, judged before answering) is a row of the findings page."""
    t = findings.findings_table(findings.collect({"shortcut": "shortcut-default"}))
    twin = t[t["panel"].str.contains("claude-sonnet-4.5-think vs claude-sonnet-4.5", regex=False)]
    assert len(twin) == 1, t[["panel", "status", "book_value"]]
    r = twin.iloc[0]
    assert r["design"] == "prospective" and r["status"] == INSUFFICIENT
    assert r["verdict_value"] == "insufficient evidence (0.093, 95% CI 0.009 to 0.186)"
    s = findings.summary_table(t, chapters=["shortcut"]).set_index("claim")
    assert "insufficient evidence (0.093, 95% CI 0.009 to 0.186)" in s.loc["book-shortcut", "prospective"]
