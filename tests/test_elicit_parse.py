"""Templates, reply parsing, cache keys and the cache store (no model calls, no litellm)."""

import math
import sqlite3
import subprocess
import sys

import pytest

from metacog.elicit import cache as cache_mod
from metacog.elicit import parse, prompts
from metacog.tidy.items import Item

ITEM = Item(item_id="q1", benchmark="squad", question="Who wrote Hamlet?", gold="Shakespeare",
            context="Hamlet is a tragedy by William Shakespeare.", context_kind="passage")


def test_every_probe_has_a_template_that_renders():
    for probe in prompts.PROBES:
        t = prompts.get(probe)
        assert t.tag == f"{probe}@{t.version}"
        extra = {"own_answer": "Shakespeare"} if probe == "counterfactual" else {}
        msgs = t.render(ITEM, **extra)
        assert msgs[-1]["role"] == "user" and "Who wrote Hamlet?" in msgs[-1]["content"]
        assert "{" not in msgs[-1]["content"]  # every field filled
        assert prompts.show(probe) == t.source and t.source.startswith("#")


def test_context_is_hidden_or_shown_as_the_probe_requires():
    shown = prompts.get("answer").render(ITEM)[-1]["content"]
    hidden = prompts.get("answer_no_context").render(ITEM)[-1]["content"]
    pro = prompts.get("prospective").render(ITEM)[-1]["content"]
    assert "tragedy by William Shakespeare" in shown
    assert "tragedy" not in hidden and "tragedy" not in pro
    assert "a passage of text" in pro  # told that a context exists


def test_counterfactual_needs_the_own_answer():
    with pytest.raises(ValueError, match="own_answer"):
        prompts.get("counterfactual").render(ITEM)


def test_unknown_probe_and_version_are_clear_errors():
    with pytest.raises(ValueError, match="unknown probe 'nope'"):
        prompts.get("nope")
    with pytest.raises(ValueError, match="no template version 99"):
        prompts.get("c0@99")


def test_yaml_choices_are_strings_not_booleans():
    for probe in ("prospective", "counterfactual", "c0", "c1", "c2"):
        assert all(isinstance(c, str) for c in prompts.get(probe).choices)
    assert prompts.get("c1").choices == ("Yes", "No", "Abstain")


@pytest.mark.parametrize("text,decision,reasoning", [
    ("I know this well.\nFinal answer: Yes", "yes", "I know this well."),
    ("Hmm.\n**Final Answer:** no.", "no", "Hmm."),
    ("final answer: YES, definitely", "yes", ""),
    ("Reasoning mentions Final answer: No as an example.\nFinal answer: Yes", "yes",
     "Reasoning mentions Final answer: No as an example."),
    ("Not sure.\nNo", "no", "Not sure."),
])
def test_parse_judgment(text, decision, reasoning):
    p = parse.parse_judgment(text)
    assert (p.decision, p.reasoning, p.status) == (decision, reasoning, "ok")


def test_parse_judgment_flags_unparseable_and_empty_but_keeps_text():
    p = parse.parse_judgment("I would rather talk about the weather.")
    assert p.status == "unparseable" and p.decision is None and "weather" in p.reasoning
    assert parse.parse_judgment("").status == "empty"
    assert parse.parse_judgment(None).status == "empty"
    # Abstain is only a decision where the template allows it.
    assert parse.parse_judgment("Final answer: Abstain").status == "unparseable"
    p = parse.parse_judgment("Final answer: Abstain\nConfidence: 0.5", ("Yes", "No", "Abstain"),
                             confidence_prefix="Confidence:")
    assert (p.decision, p.confidence) == ("abstain", 0.5)


@pytest.mark.parametrize("text,conf", [
    ("Final answer: Yes\nConfidence: 0.85", 0.85),
    ("Final answer: No\nConfidence: .7", 0.7),
    ("Final answer: No\nConfidence: 85%", 0.85),
    ("Final answer: No\nConfidence: 90", 0.9),
    ("Final answer: No\nConfidence: 1", 1.0),
    ("Final answer: No\nConfidence: 250", None),
    ("Final answer: No\nConfidence: high", None),
    ("Final answer: No", None),
])
def test_parse_confidence(text, conf):
    p = parse.parse_judgment(text, confidence_prefix="Confidence:")
    assert p.decision == "no" or p.decision == "yes"
    assert p.confidence == conf


def test_parse_answer():
    assert parse.parse_answer("Let me think.\nFinal answer: Paris.").decision == "Paris"
    assert parse.parse_answer("Paris").decision == "Paris"
    p = parse.parse_answer("First line\nsecond line without marker")
    assert p.status == "unparseable" and p.decision == "second line without marker"


def test_p_yes_from_logprobs_reads_the_decision_position():
    lp = math.log
    content = [
        {"token": "No", "logprob": lp(0.5), "top_logprobs": [{"token": "No", "logprob": lp(0.5)}]},
        {"token": " reason", "logprob": -0.1, "top_logprobs": []},
        {"token": "\nFinal answer:", "logprob": -0.1, "top_logprobs": []},
        {"token": " Yes", "logprob": lp(0.6), "top_logprobs": [
            {"token": " Yes", "logprob": lp(0.6)}, {"token": " No", "logprob": lp(0.2)},
            {"token": "yes", "logprob": lp(0.1)}]},
    ]
    # Yes variants 0.6 + 0.1 against No 0.2; the earlier "No" in the reasoning is ignored.
    assert parse.p_yes_from_logprobs(content) == pytest.approx(0.7 / 0.9)
    assert parse.p_yes_from_logprobs(None) is None
    assert parse.p_yes_from_top({" Maybe": -0.1}) is None


def test_cache_key_is_stable_and_sensitive():
    msgs = [{"role": "user", "content": "hi"}]
    k = cache_mod.cache_key("m", msgs, {"temperature": 0, "seed": 1}, "c0@1")
    assert k == cache_mod.cache_key("m", [dict(msgs[0])], {"seed": 1, "temperature": 0}, "c0@1")
    assert len(k) == 64
    for other in [("m2", msgs, {"temperature": 0, "seed": 1}, "c0@1"),
                  ("m", [{"role": "user", "content": "hi!"}], {"temperature": 0, "seed": 1}, "c0@1"),
                  ("m", msgs, {"temperature": 0, "seed": 2}, "c0@1"),
                  ("m", msgs, {"temperature": 0, "seed": 1}, "c0@2")]:
        assert cache_mod.cache_key(*other) != k


def test_cache_is_append_only_and_prefers_ok(tmp_path):
    with cache_mod.Cache(tmp_path) as c:
        assert c.path == tmp_path / "responses.sqlite"
        c.put("k1", "m", "error", {"model": "m"}, {"error": "boom"})
        assert c.get("k1").status == "error"
        c.put("k1", "m", "ok", {"model": "m"}, {"text": "Final answer: Yes"})
        c.put("k1", "m", "error", {"model": "m"}, {"error": "later failure"})
        assert c.get("k1").status == "ok" and c.get("k1").payload["text"] == "Final answer: Yes"
        assert c.count() == 3  # nothing was overwritten
        assert c.get("missing") is None
        assert set(c.get_many(["k1", "missing"])) == {"k1"}
        mode = c._con.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
    # Committed rows are visible to another connection (no open transaction left).
    con = sqlite3.connect(tmp_path / "responses.sqlite")
    assert con.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 3


def test_cache_rejects_a_non_sqlite_file(tmp_path):
    bad = tmp_path / "x.sqlite"
    bad.write_text("not a database" * 100)
    with pytest.raises(ValueError, match="not a usable SQLite file"):
        cache_mod.Cache(bad)


def test_importing_metacog_elicit_does_not_import_litellm():
    code = ("import sys, metacog, metacog.elicit, metacog.elicit.cli, metacog.elicit.panel; "
            "print('litellm' in sys.modules, 'llama_cpp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("text, decision, reasoning, status", [
    ("Here is the solver.\n```python\ndef cg(A, b, x, tol):\n    return x\n```\nDone.",
     "def cg(A, b, x, tol):", "Here is the solver.", "ok"),
    ("```\nimport numpy as np\n```\nthen\n```py\n\ndef f(x):\n    return 2 * x\n```",
     "def f(x):", "", "ok"),  # the last block is the answer; prose before the first is the reasoning
    ("I would write\ndef area(r):\n    return 3.14 * r * r", "def area(r):", "I would write", "ok"),
    ("The conjugate gradient method minimises a quadratic form.", None,
     "The conjugate gradient method minimises a quadratic form.", "unparseable"),
    ("```python\n\n```", None, "```python\n\n```", "unparseable"),
    ("   ", None, "", "empty"),
])
def test_parse_code(text, decision, reasoning, status):
    p = parse.parse_code(text)
    assert (p.decision, p.reasoning, p.status) == (decision, reasoning, status)


def test_code_benchmarks_are_parsed_as_code():
    from metacog.elicit import engine

    item = Item("s/1", "scicode", "Write f.", "def f(): pass")
    tpl = prompts.get("answer")
    row = engine._row(_task(engine, item, tpl), "ok", {"text": "```python\ndef f():\n    return 1\n```"},
                      grader=lambda it, text, probe: 0.0)
    assert row["parse_status"] == "ok" and row["decision"] == "def f():"
    other = Item("q/1", "squad", "Who?", "Ann")
    row = engine._row(_task(engine, other, tpl), "ok", {"text": "```python\ndef f():\n    return 1\n```"},
                      grader=lambda it, text, probe: 0.0)
    assert row["parse_status"] == "unparseable"


def _task(engine, item, tpl):
    return engine.Task(model="m", item=item, probe="answer", sample=0, template=tpl, messages=[],
                       params={}, key="k")


def test_default_grader_is_binary_even_for_partial_credit():
    """LegalBench's extraction tasks score an F1; the response table keeps 0/1 (F1 >= 0.5 is correct)."""
    from metacog.elicit.engine import default_grader

    item = Item("t/1", "legalbench", "Name the parties.", ["Acme Corp", "Bolt Ltd", "Cato Inc"],
                meta={"task_kind": "extraction", "labels": []})
    assert default_grader(item, "Acme Corp, Bolt Ltd, Cato Inc", "answer") == 1.0
    assert default_grader(item, "Acme Corp, Bolt Ltd", "answer") == 1.0  # F1 0.8
    assert default_grader(item, "Acme Corp", "answer") == 1.0  # F1 exactly 0.5, as SQuAD's threshold
    assert default_grader(item, "Nobody", "answer") == 0.0
    four = Item("t/2", "legalbench", "Name the parties.", ["Acme Corp", "Bolt Ltd", "Cato Inc", "Dune LLC"],
                meta={"task_kind": "extraction", "labels": []})
    assert default_grader(four, "Acme Corp", "answer") == 0.0  # F1 0.4


def test_code_benchmarks_are_asked_for_a_code_block_under_the_same_probe_name():
    from metacog.elicit import engine

    s = engine.Settings()
    code = Item("s/1", "scicode", "Write f(x) returning 2x.", "def f(x): return 2 * x",
                context="f doubles its input.", context_kind="background")
    for probe in ("answer", "answer_no_context"):
        t = engine.make_task("m", code, probe, 0, s)
        assert t.probe == probe and t.template.tag == f"{probe}_code@1"
        assert "```python code block" in t.messages[-1]["content"]
    assert ("Background:" in engine.make_task("m", code, "answer", 0, s).messages[-1]["content"])
    assert "Background:" not in engine.make_task("m", code, "answer_no_context", 0, s).messages[-1]["content"]
    plain = Item("q/1", "squad", "Who?", "Ann")
    assert engine.make_task("m", plain, "answer", 0, s).template.tag == "answer@1"
