"""Engine unit tests with litellm's ``mock_response`` (no network, no server)."""

import importlib.util
import math

import pandas as pd
import pytest

from metacog.tidy import schema
from metacog.elicit import BudgetError, Cache, estimate_cost, redact, run
from metacog.elicit import engine
from metacog.tidy.items import Item

if importlib.util.find_spec("litellm") is None:
    pytest.skip("litellm is not installed (pip install -e .[elicit])", allow_module_level=True)

AUDIT = [
    Item(item_id="a1", benchmark="audit", question="Is the Earth round?", gold=True, domain="geo"),
    Item(item_id="a2", benchmark="audit", question="Is the Sun a planet?", gold=False, domain="astro"),
]
SQUAD = [
    Item(item_id="s1", benchmark="squad", question="Who wrote Hamlet?", gold=["Shakespeare"],
         context="Hamlet is a tragedy by William Shakespeare.", context_kind="passage"),
    Item(item_id="s2", benchmark="squad", question="What is the capital of Peru?", gold=["Lima"],
         context="Lima is the capital of Peru.", context_kind="passage"),
]


def test_confidence_probe_rows_conform_and_are_graded(tmp_path):
    df = run(AUDIT, models=["openai/gpt-4o-mini"], probes=["c0"], cache=tmp_path, progress=False,
             mock_response="Final answer: Yes\nConfidence: 0.8")
    assert len(df) == 2
    pd.testing.assert_frame_equal(df, schema.conform(df))
    assert list(df.columns[: len(schema.COLUMNS)]) == list(schema.COLUMNS)
    assert df["decision"].tolist() == ["yes", "yes"]
    assert df["confidence"].tolist() == [0.8, 0.8]
    assert df["correct"].tolist() == [1.0, 0.0]  # gold True / False
    assert (df["template_version"] == "c0@1").all()
    assert (df["backend"] == "litellm").all() and df["backend_version"].str.startswith("litellm").all()
    assert df["cache_key"].str.len().eq(64).all()
    assert (df["cost_usd"] > 0).all()  # gpt-4o-mini is in the offline price map
    assert df["prompt_tokens"].notna().all() and df["latency_s"].notna().all()


def test_second_run_replays_from_cache_and_new_params_ask_again(tmp_path):
    kw = dict(models=["openai/gpt-4o-mini"], probes=["prospective"], cache=tmp_path, progress=False)
    first = run(AUDIT, mock_response="Reasoning.\nFinal answer: No", **kw)
    assert first.attrs["counts"]["done"] == 2
    again = run(AUDIT, mock_response="Reasoning.\nFinal answer: No", **kw)
    assert again.attrs["counts"] == {**again.attrs["counts"], "done": 0, "cached": 2}
    cols = ["decision", "raw_text", "cache_key", "confidence"]
    pd.testing.assert_frame_equal(first[cols], again[cols])
    # A different parameter is a different call.
    other = run(AUDIT, mock_response="Reasoning.\nFinal answer: Yes", **kw)
    assert other.attrs["counts"]["done"] == 2 and (other["decision"] == "yes").all()
    assert not set(other["cache_key"]) & set(first["cache_key"])


def test_counterfactual_only_after_a_correct_answer(tmp_path):
    # The mock says "Lima" to everything: right for s2, wrong for s1.
    df = run(SQUAD, models=["openai/gpt-4o-mini"], probes=["counterfactual"], cache=tmp_path,
             progress=False, mock_response="Final answer: Lima")
    ans = df[df.probe == "answer"].set_index("item_id")
    assert ans.loc["s1", "correct"] == 0.0 and ans.loc["s2", "correct"] == 1.0
    cf = df[df.probe == "counterfactual"]
    assert cf["item_id"].tolist() == ["s2"]
    # The counterfactual prompt carried the model's own answer.
    with Cache(tmp_path) as c:
        req = c.frame().set_index("key").loc[cf["cache_key"].iloc[0], "request"]
    assert "you answered: Lima" in req


def test_judgments_are_scored_against_the_no_context_attempt(tmp_path):
    df = run(SQUAD, models=["openai/gpt-4o-mini"], probes=["answer_no_context", "prospective"],
             cache=tmp_path, progress=False, mock_response="Final answer: Lima")
    # 'Final answer: Lima' parses as neither Yes nor No for the judgment -> unparseable, kept.
    pro = df[df.probe == "prospective"].set_index("item_id")
    assert (pro["parse_status"] == "unparseable").all()
    assert pro["raw_text"].eq("Final answer: Lima").all()
    assert pro.loc["s1", "correct"] == 0.0 and pro.loc["s2", "correct"] == 1.0


def test_rows_follow_model_probe_item_order(tmp_path):
    df = run(AUDIT, models=["openai/gpt-4o-mini", "openai/gpt-4o"], probes=["c1", "c0"],
             cache=tmp_path, progress=False, mock_response="Final answer: Abstain\nConfidence: 0.5")
    assert list(zip(df.model, df.probe, df.item_id)) == [
        ("openai/gpt-4o-mini", "c0", "a1"), ("openai/gpt-4o-mini", "c0", "a2"),
        ("openai/gpt-4o-mini", "c1", "a1"), ("openai/gpt-4o-mini", "c1", "a2"),
        ("openai/gpt-4o", "c0", "a1"), ("openai/gpt-4o", "c0", "a2"),
        ("openai/gpt-4o", "c1", "a1"), ("openai/gpt-4o", "c1", "a2")]
    c0 = df[df.probe == "c0"]
    assert (c0.parse_status == "unparseable").all()  # C0 may not abstain
    c1 = df[df.probe == "c1"]
    assert (c1.decision == "abstain").all() and c1.correct.isna().all()


def test_samples_get_their_own_seed_and_key(tmp_path):
    df = run(AUDIT[:1], models=["openai/gpt-4o-mini"], probes=["c0"], samples=3, cache=tmp_path,
             progress=False, mock_response="Final answer: Yes\nConfidence: 0.9")
    assert df["sample"].tolist() == [0, 1, 2] and df["cache_key"].nunique() == 3


def test_budget_cap_refuses_before_calling(tmp_path):
    est = estimate_cost(
        [engine.make_task("openai/gpt-4o", AUDIT[0], "c2", 0, engine.Settings())])
    assert est.loc[0, "cost_usd"] > 0 and est.loc[0, "completion_tokens"] == 128
    with pytest.raises(BudgetError, match="exceeds max_cost"):
        run(AUDIT, models=["openai/gpt-4o"], probes=["c2"], cache=tmp_path, progress=False,
            max_cost=1e-9, mock_response="Final answer: Yes\nConfidence: 0.9")
    with Cache(tmp_path) as c:
        assert c.count() == 0
    # Local models are free; an unpriced remote model needs an api_base or no cap.
    t_local = engine.make_task("local/smollm2-135m", AUDIT[0], "c0", 0, engine.Settings())
    assert estimate_cost([t_local]).loc[0, "cost_usd"] == 0
    t_unk = engine.make_task("openai/not-a-real-model", AUDIT[0], "c0", 0, engine.Settings())
    assert math.isnan(estimate_cost([t_unk]).loc[0, "cost_usd"])
    with pytest.raises(BudgetError, match="no price"):
        engine.check_budget(estimate_cost([t_unk]), 1.0)
    assert estimate_cost([t_unk], api_base="http://127.0.0.1:1/v1").loc[0, "cost_usd"] == 0


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="unknown probe"):
        run(AUDIT, models=["openai/x"], probes=["vibes"], cache=False)
    with pytest.raises(ValueError, match="no provider prefix"):
        run(AUDIT, models=["gpt4"], probes=["c0"], cache=False)
    with pytest.raises(ValueError, match="Unknown local model"):
        run(AUDIT, models=["local/gpt-99"], probes=["c0"], cache=False)
    with pytest.raises(ValueError, match="appears more than once"):
        run(AUDIT + AUDIT[:1], models=["openai/x"], probes=["c0"], cache=False)
    with pytest.raises(ValueError, match="environment variables"):
        run(AUDIT, models=["openai/x"], probes=["c0"], cache=False, api_key="sk-123")
    with pytest.raises(ValueError, match="not a metacog.tidy.items.Item"):
        run([{"question": "x"}], models=["openai/x"], probes=["c0"], cache=False)


def test_redact_removes_key_like_strings():
    # built at run time so that no key-shaped literal sits in the repository
    openai_like, aws_like = "sk-proj-" + "abcdEFGH12345678", "AKIA" + "ABCDEFGHIJKLMNOP"
    s = redact(f"bad key {openai_like} and {aws_like}, Bearer abc.def-123456")
    assert "sk-proj" not in s and "AKIA" not in s and "abc.def" not in s
    assert s.count("[redacted]") == 3


def test_retryable_classification():
    litellm = engine.get_litellm()

    assert engine.is_retryable(litellm.RateLimitError("slow down", "openai", "m"))
    assert engine.is_retryable(litellm.InternalServerError("boom", "openai", "m"))
    assert engine.is_retryable(TimeoutError())
    assert not engine.is_retryable(litellm.BadRequestError("bad", "m", "openai"))
    assert not engine.is_retryable(litellm.AuthenticationError("no", "openai", "m"))
