"""Integration: a local GGUF model asked the calibration study's prompt keeps every token's
log-probability, and its greedy reply is the one llama.cpp's own completion gives."""

import numpy as np
import pytest

from metacog.elicit import local, panel
from metacog.elicit.protocols import calibration_study as cs
from metacog.elicit.protocols.local_reply import reply

pytestmark = [pytest.mark.localmodel, pytest.mark.slow]

if not local.available():
    pytest.skip("llama_cpp is not importable: build it with scripts/install_local.sh",
                allow_module_level=True)
if not panel.is_cached("smollm2-135m"):
    pytest.skip(f"SmolLM2 is not cached in {panel.model_dir()}: run "
                "`python -m metacog.elicit.panel fetch smollm2-135m`", allow_module_level=True)


def test_greedy_reply_with_token_logprobs_matches_llama_cpp():
    msgs = cs.protocol().messages("What is 2 + 2?", ["3", "4", "5"])
    got = reply("local/smollm2-135m", msgs, max_tokens=24)
    ref = local.complete("smollm2-135m", msgs, max_tokens=24)
    assert got["text"] == ref["text"]
    assert got["completion_tokens"] == len(got["token_logprobs"]) == ref["completion_tokens"]
    lp = np.array(got["token_logprobs"])
    assert (lp <= 0).all() and np.isfinite(lp).all()
    # the first token is the most probable one (temperature 0), and it heads the top list
    first = max(got["top_logprobs"].values())
    assert lp[0] == pytest.approx(first)
    assert 0 < cs.logit_confidence(got["token_logprobs"]) <= 1
