"""Each benchmark page's own section (metacog.pages.benchmark.own) on small frames with a planted
answer, the unknown benchmark, and the template's call of it."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from metacog.pages import benchmark as bp
from metacog.pages.benchmark import own
from metacog.stats.intervals import proportion_ci
from metacog.tidy.items import Item

ROOT = Path(__file__).resolve().parents[1]


def rows(model, probe, outcomes, **cols) -> list[dict]:
    """One response row per item: ``outcomes`` maps item_id -> correct (0/1); ``cols`` maps a column
    to a value or to a {item_id: value} dict."""
    out = []
    for item_id, correct in outcomes.items():
        r = {"model": model, "item_id": item_id, "probe": probe, "sample": 0, "correct": float(correct),
             "parse_status": "ok", "raw_text": "", "decision": "", "completion_tokens": 10,
             "template_version": ("answer_no_context@1" if probe == "answer_no_context" else "answer@1")}
        r.update({k: (v.get(item_id, r.get(k)) if isinstance(v, dict) else v) for k, v in cols.items()})
        out.append(r)
    return out


def row(t: pd.DataFrame, **where) -> pd.Series:
    m = pd.Series(True, index=t.index)
    for k, v in where.items():
        m &= t[k] == v
    assert m.sum() == 1, where
    return t[m].iloc[0]


def test_squad_accuracy_without_the_passage_by_kind_of_answer():
    items = ([Item(f"n{i}", "squad", "When?", [f"{1900 + i}"], "p", "passage") for i in range(10)]
             + [Item(f"t{i}", "squad", "Who?", ["the Arctic"], "p", "passage") for i in range(20)])
    right = {f"n{i}": int(i < 6) for i in range(10)} | {f"t{i}": int(i < 2) for i in range(20)}
    sec = own.own_section(pd.DataFrame(rows("local/a", "answer_no_context", right)), items, "squad")
    n, o = row(sec.table, model="a", answer_kind="number or date"), row(sec.table, model="a", answer_kind="other text")
    assert (n["k"], n["n"], o["k"], o["n"]) == (6, 10, 2, 20)
    assert (n["ci_low"], n["ci_high"]) == pytest.approx(proportion_ci(6, 10))
    assert "6 of 10 number or date answers (0.60, 95% CI" in sec.sentence
    assert "lie apart for a (right more often on number or date answers)." in sec.sentence  # 0.31-0.83 vs 0.03-0.30
    two = pd.DataFrame(rows("local/a", "answer_no_context", right) + rows("local/b", "answer_no_context",
                                                                          {k: int(k.endswith("0")) for k in right}))
    assert ("lie apart for a (right more often on number or date answers); for the other model they overlap."
            in own.own_section(two, items, "squad").sentence)
    assert own.answer_kind(["October the third"]) == "number or date" and own.answer_kind("Brazil") == "other text"
    even = {k: int(k.endswith("0")) for k in right}  # 1 of 10 and 2 of 20: the intervals overlap
    sec = own.own_section(pd.DataFrame(rows("local/a", "answer_no_context", even)), items, "squad")
    assert "overlap for the one model: this run cannot tell" in sec.sentence


def _mmlu(n=40):
    opts = ["0.525", "Paris", "5", "blue whale"]
    return [Item(str(i), "mmlu_pro", f"Q{i}?", "B", "A. 0.525\nB. Paris", "options",
                 meta={"options": opts, "answer_index": 1 if i % 2 else 2}) for i in range(n)]


def test_mmlu_lenient_grader_adds_exactly_the_planted_matches_and_can_change_the_gain_verdict():
    items = _mmlu()
    gold = {it.item_id: it.meta["options"][it.meta["answer_index"]] for it in items}
    strict = {it.item_id: int(it.item_id in ("0", "1")) for it in items}
    planted = ["3", "5", "7"]  # gold 'Paris': wrong by the strict grader, the text in the reply
    text = {i: f"I think it is {gold[i].upper()}  ." if i in planted else "no idea" for i in gold}
    text.update({"4": "about 0.5 or z_5", "6": "x5 maybe"})  # gold '5' only inside other tokens
    data = pd.DataFrame(rows("local/m", "answer", {i: 1 for i in gold})
                        + rows("local/m", "answer_no_context", strict, raw_text=text))
    sec = own.own_section(data, items, "mmlu_pro")
    s, ln = row(sec.table, model="m", grader="strict"), row(sec.table, model="m", grader="lenient")
    assert (s["k"], ln["k"], s["n"], ln["n"]) == (2, 5, 40, 40)
    assert (ln["ci_low"], ln["ci_high"]) == pytest.approx(proportion_ci(5, 40))
    assert "3 more replies under the lenient one" in sec.sentence
    assert s["gain_verdict"] == bp.gain_verdicts(bp.context_gain(data))[0].status
    # every reply holds the gold text: the lenient grader erases the context gain
    data2 = data.copy()
    data2.loc[data2["probe"] == "answer_no_context", "raw_text"] = data2["item_id"].map(lambda i: f"= {gold[i]}")
    sec2 = own.own_section(data2, items, "mmlu_pro")
    s2, l2 = row(sec2.table, grader="strict"), row(sec2.table, grader="lenient")
    assert l2["k"] == 40 and s2["gain_verdict"] == "supported" and l2["gain_verdict"] != "supported"
    assert f"changes for m (from supported to {l2['gain_verdict']})" in sec2.sentence
    assert own.lenient_correct("answer: Blue\n  Whale!", "blue whale") and not own.lenient_correct("0.5", "5")


def test_legalbench_against_always_the_most_common_label():
    yn = [Item(f"y{i}", "legalbench", "Is it? Answer with one of: No, Yes.", "No" if i < 8 else "Yes",
               "def", "definition", meta={"labels": ["No", "Yes"]}) for i in range(12)]
    ab = [Item(f"a{i}", "legalbench", "Which?", "A", "def", "definition", meta={"labels": ["A", "B"]})
          for i in range(4)]  # too few for a bar of their own
    gold = {it.item_id: it.gold for it in yn + ab}
    always_no = rows("local/lazy", "answer_no_context", {i: int(g in ("No", "A")) for i, g in gold.items()},
                     decision={i: "No." for i in gold})
    perfect = rows("local/good", "answer_no_context", {i: 1 for i in gold}, decision=gold)
    sec = own.own_section(pd.DataFrame(always_no + perfect), yn + ab, "legalbench")
    t = sec.table
    assert set(t["answer_set"]) == {"No, Yes"} and set(t["majority_label"]) == {"No"}
    lazy = t[t["model"] == "lazy"].set_index("measure")
    assert lazy.loc["model's answers", "k"] == lazy.loc["always the most common label", "k"] == 8
    assert lazy.loc["replies giving that label", "k"] == 12
    assert "Only good (No, Yes) does better than the most common label." in sec.sentence
    assert "lazy is right on 8 of 12 No/Yes items (0.67, 95% CI" in sec.sentence
    assert "not distinguishable from always answering No (0.67), giving No 12 times" in sec.sentence


def test_math_planted_cut_replies_give_the_exact_share():
    tokens = {f"i{k}": (128 if k < 4 else 30) for k in range(10)}
    right = {f"i{k}": int(k in (0, 5, 6)) for k in range(10)}  # one cut reply right, two of six uncut
    data = pd.DataFrame(rows("local/m", "answer", right, completion_tokens=tokens)
                        + rows("local/m", "answer_no_context", {k: 0 for k in right}, completion_tokens=20))
    t = own.own_section(data, None, "math").table
    cut = row(t, design="with", measure="cut at the cap")
    assert (cut["k"], cut["n"], cut["rate"]) == (4, 10, 0.4) and cut["cap"] == 128
    assert (cut["ci_low"], cut["ci_high"]) == pytest.approx(proportion_ci(4, 10))
    assert tuple(row(t, design="with", measure="right among replies not cut")[["k", "n"]]) == (2, 6)
    assert tuple(row(t, design="with", measure="right among replies cut")[["k", "n"]]) == (1, 4)
    assert row(t, design="without", measure="cut at the cap")["k"] == 0
    t30 = own.own_section(data, None, "math", max_tokens=30).table  # a run's own cap overrides the template's
    assert row(t30, design="with", measure="cut at the cap")["k"] == 10
    sec = own.own_section(data.drop(columns="completion_tokens"), None, "math")
    assert sec.table is None and "no token counts" in sec.sentence


def test_omni_accuracy_by_difficulty_band():
    rating = {"e1": 2.0, "e2": 3.5, "m1": 4.0, "m2": 5.0, "h1": 5.25, "h2": 8.0}
    items = [Item(i, "omni_math", "Find x.", "1", "sol", "solution", meta={"difficulty": d}) for i, d in rating.items()]
    data = pd.DataFrame(rows("local/m", "answer", {"e1": 1, "e2": 1, "m1": 1, "m2": 0, "h1": 0, "h2": 0})
                        + rows("local/m", "answer_no_context", {i: 0 for i in rating}))
    t = own.own_section(data, items, "omni").table
    assert list(t.loc[t["design"] == "with", "band"]) == list(own.BANDS)
    assert [tuple(row(t, design="with", band=b)[["k", "n"]]) for b in own.BANDS] == [(2, 2), (1, 2), (0, 2)]
    assert [own.band(x) for x in (3.99, 4, 5, 5.25, None)] == ["below 4", "4 to 5", "4 to 5", "above 5", None]


def test_scicode_outcomes_parse_fail_pass():
    items = [Item(f"s{i}", "scicode", "Write f.", "def f(): pass", None, "none",
                  meta={"function_header": "def f(x):"}) for i in range(6)]
    good = "```python\ndef f(x):\n    return x\n```"
    broken = "```python\ndef f(x:\n    return [x,\n"  # cut mid-block: no closing fence, no valid code
    text = {"s0": good, "s1": good, "s2": good, "s3": broken, "s4": broken, "s5": "```python\ndef f(x) return\n```"}
    tokens = {"s3": 256, "s4": 256}
    data = pd.DataFrame(rows("local/m", "answer", {"s0": 1, "s1": 0, "s2": 0, "s3": 0, "s4": 0, "s5": 0},
                             raw_text=text, completion_tokens=tokens, template_version="answer_code@1"))
    sec = own.own_section(data, items, "scicode")
    t = sec.table.set_index("outcome")
    assert [t.loc[o, "k"] for o in own.OUTCOMES] == [3, 2, 1] and set(t["n"]) == {6}
    assert t.loc["code does not parse", "cut_at_cap"] == 2
    assert "2 of 3 (0.67, 95% CI" in sec.sentence and "256-token cap" in sec.sentence


def test_unknown_benchmark_says_there_is_no_analysis():
    data = pd.DataFrame(rows("local/m", "answer_no_context", {"x": 1}))
    sec = own.own_section(data, [], "my_own_bench")
    assert sec.table is None and sec.question
    assert sec.sentence.startswith("This run's benchmark, my_own_bench, has no benchmark-specific analysis")


def test_the_template_calls_it_right_after_what_the_probes_hide_and_every_page_has_one():
    from metacog.data import recorded

    text = (ROOT / "notebooks" / "benchmark.md").read_text()
    heads = re.findall(r"^## (.+)$", text, flags=re.M)
    assert heads[heads.index("What the probes hide") + 1] == "What only this benchmark asks"
    assert "own_section(data, items, spec.benchmark" in text and "{glue:text}`bm_own_sentence`" in text
    runs = recorded.runs()
    for run in ("squad", "mmlu_pro", "legalbench", "math", "omni", "scicode"):
        name = own.ALIASES.get(runs[run].benchmark, runs[run].benchmark)
        assert name in own.ANALYSES, run


def test_a_section_table_prints_each_count_and_share_with_its_interval_in_one_cell():
    from metacog.pages.benchmark import own_rates

    t = own_rates.rate_table(pd.DataFrame({"model": ["a"] * 4 + ["b"] * 2, "correct": [1, 0, 0, 0, 1, 1]}), ["model"])
    shown = own_rates.display(t)
    shown = getattr(shown, "data", shown)
    assert list(shown["count"]) == ["1 of 4", "2 of 2"]
    lo, hi = own_rates.proportion_ci(1, 4)
    assert shown["share (95% CI)"].iloc[0] == f"0.25 (95% CI {lo:.2f} to {hi:.2f})"
    assert not {"k", "n", "rate", "ci_low", "ci_high"} & set(shown.columns)
