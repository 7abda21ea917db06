"""Log-probabilities of answer probes: option letters' probabilities at the answer token and the
mean token probability of every reply, over the direct HTTP path and litellm, without changing
the cache key of any request recorded before (tests/fakeserver.py plays the server)."""

import importlib.util
import json
import math

import pandas as pd
import pytest

from fakeserver import FakeServer
from metacog.elicit import Cache, parse, run
from metacog.elicit.tasks import Settings, make_task
from metacog.tidy.items import Item

if importlib.util.find_spec("litellm") is None:
    pytest.skip("litellm is not installed (pip install -e .[elicit])", allow_module_level=True)


def mc(i, marks=""):
    return Item(item_id=f"m{i}", benchmark="mmlu_pro", question=f"Which is prime? {marks}", gold="B",
                context="A) 4\nB) 5\nC) 6\nD) 8", context_kind="options",
                meta={"options": ["4", "5", "6", "8"], "answer_index": 1, "answer_text": "5"})


#: Keys computed by the code before this change (commit 02f3abb): the responses a recorded run
#: cached under them must still be found.
PINNED = {("openai/fake", "answer"): "7059207fcdfaa076de3194eff454a9e6284b3efd4f7277dc4797cb7783017ff1",
          ("openai/fake", "prospective"): "ea6e2f753e0741e5c240135ff528c839c5acf14041ca46e8e5e23021ede45362",
          ("openai/fake", "c0"): "30e8f4ea9cc4dadb068ada7b4c796424a2820d7467d2ddb32c45992796e76dc0",
          ("local/smollm2-135m", "answer"): "22b7b7d65439004c1a011533f8a71807701b37237e783460cd10d58b2fa8f979",
          ("local/smollm2-135m", "c0"): "d3d329a5bcf95d3d29c5121e5075b91b2aabbe4a4cd096a142a6ca346030de4b"}


@pytest.mark.parametrize("model, probe", list(PINNED))
def test_cache_keys_of_recorded_requests_are_unchanged(model, probe):
    it = Item(item_id="q1", benchmark="mmlu_pro", question="Which is a prime?", gold="B",
              context="A) 4\nB) 5\nC) 6\nD) 8", context_kind="options",
              meta={"options": ["4", "5", "6", "8"], "answer_index": 1, "answer_text": "5"})
    t = make_task(model, it, probe, 0, Settings())
    assert t.key == PINNED[(model, probe)]
    if probe == "answer" and not model.startswith("local/"):
        assert t.wire == {"logprobs": True, "top_logprobs": 5} and "logprobs" not in t.params
        assert t.letters == "ABCD"
    assert make_task(model, it, probe, 0, Settings(logprobs=False)).wire == {}


@pytest.fixture(scope="module")
def server():
    with FakeServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-notakey")


def ask(items, server, tmp_path, **kw):
    kw = {"models": ["openai/fake"], "probes": ["answer"], "cache": tmp_path / "cache",
          "api_base": server.base_url, "progress": False, "timeout": 5.0, "max_retries": 1, **kw}
    return run(items, **kw).set_index("item_id")


@pytest.mark.parametrize("transport", ["auto", "litellm"])
def test_letter_probabilities_and_mean_token_probability_from_the_server(server, tmp_path, transport):
    free = Item(item_id="f1", benchmark="test", question="What is 6 times 7? [[answer:42]]", gold="42")
    df = ask([mc(1, "[[answer:B]]"), mc(2, "[[answer:B]] [[nologprobs]]"), free], server, tmp_path,
             transport=transport)
    assert set(df["backend"]) == {"http" if transport == "auto" else "litellm"}
    assert json.loads(df.loc["m1", "option_probs"]) == pytest.approx({"A": 0.2, "B": 0.7, "C": 0.05})
    # tokens 'Let', ' me', ' think.', '\nFinal', ' answer:' at 0.9 and ' B' at 0.7
    assert df.loc["m1", "mean_token_p"] == pytest.approx((5 * 0.9 + 0.7) / 6)
    assert df.loc["m1", "decision"] == "B" and df.loc["m1", "correct"] == 1.0
    assert pd.isna(df.loc["m1", "p_yes"])  # an answer's logprobs are not read as P(Yes)
    # the server sent no logprobs: missing, the row otherwise intact
    assert pd.isna(df.loc["m2", "option_probs"]) and math.isnan(df.loc["m2", "mean_token_p"])
    assert df.loc["m2", "decision"] == "B"
    # a free-form answer: mean token probability, no letters
    assert df.loc["f1", "mean_token_p"] == pytest.approx(0.9) and pd.isna(df.loc["f1", "option_probs"])


def test_a_reply_cached_without_the_new_fields_replays_with_them_missing(server, tmp_path):
    it = mc(3, "[[answer:C]]")
    t = make_task("openai/fake", it, "answer", 0, Settings())
    old = {"text": "Let me think.\nFinal answer: C", "reasoning_content": None, "finish_reason": "stop",
           "p_yes": None, "prompt_tokens": 10, "completion_tokens": 5, "response_model": "fake",
           "cost_usd": None, "latency_s": 0.1, "attempts": 1, "backend": "http", "backend_version": "x"}
    store = Cache(tmp_path / "cache")
    store.put(t.key, t.model, "ok", {"model": t.model, "messages": t.messages, "params": t.params}, old)
    server.seen.clear()
    df = ask([it], server, tmp_path, cache=store)
    assert sum(server.seen.values()) == 0  # replayed, not asked again
    assert df.loc["m3", "decision"] == "C" and df.loc["m3", "cache_key"] == t.key
    assert math.isnan(df.loc["m3", "mean_token_p"]) and pd.isna(df.loc["m3", "option_probs"])


def test_parsers_of_token_logprobs():
    lp = [{"token": "Final", "logprob": math.log(0.5)}, {"token": " answer:", "logprob": 0.0},
          {"token": " (", "logprob": 0.0},
          {"token": "D", "logprob": math.log(0.6), "top_logprobs": [
              {"token": "D", "logprob": math.log(0.6)}, {"token": " D", "logprob": math.log(0.1)},
              {"token": "A", "logprob": math.log(0.2)}, {"token": "Z", "logprob": math.log(0.05)}]}]
    assert parse.option_probs(lp, "ABCD") == pytest.approx({"A": 0.2, "D": 0.7})
    assert parse.mean_token_p(lp) == pytest.approx((0.5 + 1 + 1 + 0.6) / 4)
    assert parse.option_probs(lp, "") is None and parse.mean_token_p(None) is None
    assert parse.option_probs([{"token": "Final answer: 42", "logprob": 0.0}], "ABCD") is None
