"""Integration: the real SmolLM2-135M through litellm's 'local' provider (llama.cpp on CPU)."""

import math

import pandas as pd
import pytest

from metacog.elicit import panel
from metacog.elicit import local, prompts, run
from metacog.tidy.items import Item

pytestmark = [pytest.mark.localmodel, pytest.mark.slow]

if not local.available():
    pytest.skip("llama_cpp is not importable: build it with scripts/install_local.sh",
                allow_module_level=True)
if not panel.is_cached("smollm2-135m"):
    pytest.skip(f"SmolLM2 is not cached in {panel.model_dir()}: run "
                "`python -m metacog.elicit.panel fetch smollm2-135m`", allow_module_level=True)

MODEL = "local/smollm2-135m"
ITEMS = [
    Item(item_id="t1", benchmark="audit", question="Is Paris the capital of France?", gold=True),
    Item(item_id="t2", benchmark="audit", question="Is the Pacific the smallest ocean?", gold=False),
    Item(item_id="t3", benchmark="audit", question="Do spiders have six legs?", gold=False),
]


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    df = run(ITEMS, models=[MODEL], probes=["prospective", "c0"], cache=cache, max_tokens=32,
             progress=False)
    return df, cache


def test_rows_are_complete_and_consistent(first):
    df, _ = first
    assert len(df) == 6
    assert (df["parse_status"] == "ok").all()
    assert (df["backend"] == "llama_cpp").all()
    assert df["backend_version"].str.contains("llama-cpp-python").all()
    assert (df["cost_usd"] == 0).all()
    assert (df["prompt_tokens"] > 20).all() and (df["completion_tokens"] >= 1).all()
    assert df["p_yes"].between(0, 1, inclusive="neither").all()
    pro = df[df.probe == "prospective"]
    # Two choices: the decision is the more likely first token.
    assert ((pro["p_yes"] > 0.5) == (pro["decision"] == "yes")).all()
    assert pro["raw_text"].str.contains("Final answer: (Yes|No)$", regex=True).all()
    c0 = df[df.probe == "c0"]
    assert c0["confidence"].between(0, 1).all()
    assert c0["correct"].isin([0.0, 1.0]).all()


def test_replay_from_cache_matches_a_live_rerun(first):
    df, cache = first
    cached = run(ITEMS, models=[MODEL], probes=["prospective", "c0"], cache=cache, max_tokens=32,
                 progress=False)
    assert cached.attrs["counts"]["done"] == 0
    live = run(ITEMS, models=[MODEL], probes=["prospective", "c0"], cache=False, max_tokens=32,
               progress=False)
    assert live.attrs["counts"]["done"] == 6
    cols = ["item_id", "probe", "decision", "raw_text", "confidence", "cache_key"]
    pd.testing.assert_frame_equal(cached[cols], live[cols])
    assert (cached["p_yes"] - live["p_yes"]).abs().max() < 1e-9


def test_litellm_path_gives_what_llama_cpp_gives_directly(first):
    df, _ = first
    t = prompts.get("prospective")
    row = df[(df.probe == "prospective") & (df.item_id == "t1")].iloc[0]
    direct = local.complete("smollm2-135m", t.render(ITEMS[0]), max_tokens=32, seed=0,
                            protocol={"kind": t.kind, "final_prefix": t.final_prefix,
                                      "choices": list(t.choices), "confidence_prefix": None})
    assert direct["text"] == row["raw_text"]
    lp = direct["choice_logprobs"]
    p = math.exp(lp["Yes"]) / (math.exp(lp["Yes"]) + math.exp(lp["No"]))
    assert p == pytest.approx(row["p_yes"], abs=1e-9)


def test_answer_probe_keeps_letter_probabilities_and_mean_token_probability(tmp_path):
    it = Item(item_id="m1", benchmark="mmlu_pro", question="Which of these numbers is prime?", gold="B",
              context="A) 4\nB) 5\nC) 6\nD) 8", context_kind="options",
              meta={"options": ["4", "5", "6", "8"], "answer_index": 1, "answer_text": "5"})
    df = run([it], models=[MODEL], probes=["answer"], cache=tmp_path, max_tokens=24, progress=False)
    r = df.iloc[0]
    assert 0 < r["mean_token_p"] <= 1
    if not pd.isna(r["option_probs"]):  # the letters at the answer token, from llama.cpp's logits
        probs = __import__("json").loads(r["option_probs"])
        assert set(probs) == set("ABCD") and 0 < sum(probs.values()) <= 1 + 1e-9
        if r["decision"] in probs:
            assert max(probs, key=probs.get) == r["decision"]  # greedy decoding wrote the likeliest
    again = run([it], models=[MODEL], probes=["answer"], cache=tmp_path, max_tokens=24, progress=False)
    assert again.iloc[0]["mean_token_p"] == r["mean_token_p"]  # replayed from the cache
    off = run([it], models=[MODEL], probes=["answer"], cache=tmp_path / "off", max_tokens=24,
              progress=False, logprobs=False)
    assert math.isnan(off.iloc[0]["mean_token_p"]) and off.iloc[0]["raw_text"] == r["raw_text"]
    assert off.iloc[0]["cache_key"] == r["cache_key"]  # the same request: scoring is no part of the key
