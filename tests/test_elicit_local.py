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
