"""The twin design's rules: a minimum of same-weight pairs, near-constant pairs out,
leave-one-pair-out, related pairs apart, and twins read from spar-style names."""

import numpy as np
import pandas as pd

from metacog.hypotheses import shortcut as hs
from metacog.hypotheses.shortcut import display as sd
from metacog.hypotheses.shortcut import twins as st
from metacog.hypotheses.verdict import INSUFFICIENT, SUPPORTED

CLAIMS = {"all items": "thinking helps"}


def _draws(per_pair, n_boot=200, sd_item=0.002, seed=0):
    """Item-bootstrap draws (n_boot + 1, subsets=1, models) where thinking model 2k beats its
    twin 2k+1 by ``per_pair[k]`` in self-advantage."""
    rng = np.random.default_rng(seed)
    m = 2 * len(per_pair)
    d = np.zeros((n_boot + 1, 1, m))
    for k, x in enumerate(per_pair):
        d[:, 0, 2 * k] = x + np.r_[0, rng.normal(0, sd_item, n_boot)]
    return d


def _flags(n, exact=None):
    exact = [True] * n if exact is None else exact
    rows = []
    for k in range(n):
        rows += [dict(model=f"m{k}-think", reasoning=True, twin=f"m{k}", twin_exact=exact[k]),
                 dict(model=f"m{k}", reasoning=False, twin=f"m{k}-think", twin_exact=exact[k])]
    return pd.DataFrame(rows)


def _conf(n, flat=(), n_items=100, seed=0):
    rng = np.random.default_rng(seed)
    c = pd.DataFrame((rng.random((n_items, 2 * n)) < 0.5).astype(float),
                     columns=[m for k in range(n) for m in (f"m{k}-think", f"m{k}")])
    for m in flat:
        c[m] = 1.0
        c.loc[:1, m] = 0.0  # 98% one value
    return c


def _table(per_pair, exact=None, flat=()):
    n = len(per_pair)
    t = st.twins(_draws(per_pair), ["all items"], list(_conf(n).columns), _flags(n, exact), _conf(n, flat),
                 np.random.default_rng(1), contrast="formal minus other")
    return t.assign(panel="p", timing="after answering")


def _verdict(t):
    return st.twin_verdicts(t, CLAIMS)[0]


def test_consistent_pairs_above_the_minimum_are_supported_with_spread_and_loo():
    t = _table([0.05, 0.06, 0.04, 0.07, 0.05, 0.06])
    row = t[t["pair"] == st.SAME].iloc[0]
    assert row["pairs"] == 6 and row["difference_ci_low"] > 0 and not row["loo_flips"]
    assert row["pair_min"] == 0.04 and row["pair_max"] == 0.07
    assert row["loo_min"] <= row["difference"] <= row["loo_max"]
    assert _verdict(t).status == SUPPORTED


def test_fewer_pairs_than_the_minimum_are_insufficient_and_get_no_interval():
    t = _table([0.05, 0.06, 0.05, 0.06][: st.MIN_PAIRS - 1])
    row = t[t["pair"] == st.SAME].iloc[0]
    assert np.isnan(row["difference_ci_low"]) and np.isnan(row["difference_ci_high"])
    v = _verdict(t)
    assert v.status == INSUFFICIENT and f"at least {st.MIN_PAIRS}" in v.reason
    shown = sd.display_twins(t)
    assert "no interval" in shown.loc[shown["pair"] == st.SAME, "all items"].iloc[0]


def test_a_verdict_that_flips_when_one_pair_is_left_out_is_insufficient():
    # five pairs agree and one points the other way: the interval over all six lies above 0, but
    # leaving out one of the five lets the odd pair pull the interval's lower end to 0
    t = _table([0.03, 0.03, 0.03, 0.03, 0.03, -0.02])
    row = t[t["pair"] == st.SAME].iloc[0]
    assert row["difference_ci_low"] > 0 and row["loo_flips"]
    # read against a margin the interval clears (the book's 0.02 would stop it before the check)
    v = st.twin_verdicts(t, CLAIMS, margin=0.001)[0]
    assert v.status == INSUFFICIENT and "leaving one pair out" in v.reason
    assert _verdict(t).status == INSUFFICIENT and "reaches across 0.02" in _verdict(t).reason


def test_a_near_constant_pair_is_excluded_with_its_reason():
    t = _table([0.05, 0.06, 0.04, 0.07, 0.05, -0.8], flat=["m5"])
    per = t[t["pair"] == "m5-think vs m5"].iloc[0]
    assert "near-constant" in per["excluded"] and "98%" in per["excluded"]
    row = t[t["pair"] == st.SAME].iloc[0]
    assert row["pairs"] == 5 and row["pair_min"] == 0.04  # the -0.8 pair is not averaged
    shown = sd.display_twins(t)
    assert "near-constant" in shown.loc[shown["pair"] == "m5-think vs m5", "left out because"].iloc[0]


def test_only_same_weight_twins_count_for_the_verdict():
    # the two related pairs carry the effect; the same-weight ones alone do not reach the minimum
    t = _table([0.0, 0.01, -0.01, 0.0, 0.2, 0.2], exact=[True, True, True, True, False, False])
    same = t[t["pair"] == st.SAME].iloc[0]
    both = t[t["pair"] == st.ALL_PAIRS].iloc[0]
    assert same["pairs"] == 4 and both["pairs"] == 6
    assert _verdict(t).status == INSUFFICIENT


def test_spar_style_names_give_a_same_weight_twin_and_a_named_reasoning_model():
    f = hs.reasoning_flags(["claude-sonnet-4.5-think", "claude-sonnet-4.5", "deepseek-r1", "gpt-4o"],
                           "spar:prospective", reasoning_models=["deepseek-r1"])
    f = f.set_index("model")
    assert f.at["claude-sonnet-4.5-think", "reasoning"] is True or f.at["claude-sonnet-4.5-think", "reasoning"]
    assert f.at["claude-sonnet-4.5-think", "twin"] == "claude-sonnet-4.5" and f.at["claude-sonnet-4.5", "twin_exact"]
    assert not f.at["claude-sonnet-4.5", "reasoning"] and f.at["deepseek-r1", "reasoning"]
    assert not f.at["gpt-4o", "reasoning"]
    assert hs.twin_pairs(f.reset_index(), list(f.index)) == [("claude-sonnet-4.5-think", "claude-sonnet-4.5", True)]


def test_verdict_claims_name_the_design():
    t = _table([0.05, 0.06, 0.04, 0.07, 0.05, 0.06]).assign(timing="before answering")
    assert _verdict(t).claim.startswith("p (prospective): ")


def test_paragraph_sets_the_twins_beside_a_supported_judge_comparison():
    from metacog.hypotheses.verdict import decide

    label = "p (after answering)"
    judge = decide(f"{label}: reasoning judges are better calibrated to themselves than non-reasoning judges",
                   "d", 0.07, 0.04, 0.1)
    twin = decide(f"{label}: a model with thinking is better calibrated to itself than its twin without",
                  "d", 0.05, -0.01, 0.11, n={"same-weight twin pairs": 8})
    account = decide(f"{label}: the symbolic-shortcut account (twin pairs)", "d", 0.03, -0.03, 0.08)
    text = sd.verdict_paragraph([account], [judge, twin])
    assert "Nor do the same-weight twins" in text and "−0.010 to 0.110" in text


def test_a_mean_over_no_pair_says_why_in_left_out_because():
    # the only same-weight pair is near-constant: the verdict's row averages nothing and says why
    t = _table([0.05, -0.8], exact=[False, True], flat=["m1"])
    assert t.loc[t["pair"] == st.SAME, "pairs"].max() == 0
    shown = sd.display_twins(t).set_index("pair")
    assert shown.at[st.SAME, "left out because"] == "its only same-weight pair is left out (its own row says why)"
    assert shown.at[st.ALL_PAIRS, "left out because"] == "–"  # it averages the related pair
    none = sd.display_twins(_table([0.05], exact=[False])).set_index("pair")
    assert none.at[st.SAME, "left out because"] == "no same-weight pair in this panel"


def test_design_sentence_names_the_prospective_sources_instead_of_pointing_at_counts():
    flags = pd.DataFrame({"panel": ["spar · prospective", "atlas · verbal"],
                          "timing": ["prospective", "after answering"]})
    s = sd.design_sentence(flags, [])
    assert "see the counts above" not in s
    assert "No prospective source (spar · prospective) decides any claim here" in s
