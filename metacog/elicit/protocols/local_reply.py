"""A greedy reply from a local GGUF model with the log-probability of every token it wrote.

:func:`metacog.elicit.local.complete` loads models with ``logits_all=False`` (cheap), so
llama.cpp's own ``logprobs`` option is unavailable there. Here the reply is decoded one token at a
time, reading the next-token distribution after each step: at temperature 0 the chosen token is
the most probable one, so its log-probability is what an OpenAI-compatible server reports as the
token's ``logprob`` (the calibration study's "logit" confidence is the mean of their
exponentials). Same model, chat template and lock as :mod:`metacog.elicit.local`.
"""

from __future__ import annotations

import math
import time

import numpy as np


def reply(name: str, messages: list[dict[str, str]], *, max_tokens: int = 1024, top: int = 5) -> dict:
    """Greedy reply of local model ``name`` ('qwen2.5-coder-1.5b' or 'local/...').

    Returns text, token_logprobs (one per generated token), top_logprobs of the first token
    ({token text: logprob}), finish_reason ('stop' or 'length'), prompt_tokens,
    completion_tokens and seconds (compute time of this call).
    """
    from metacog.elicit import local, panel

    name = name.removeprefix("local/")
    with local._LOCK:
        t0 = time.perf_counter()
        llm = local.load(name)
        fmt = local._formatter(panel.get(name).name, llm)
        llm.reset()
        prompt = fmt.render(messages)
        ptoks = local._tokens(llm, fmt, prompt)
        if len(ptoks) + max_tokens > llm.n_ctx():
            max_tokens = max(1, llm.n_ctx() - len(ptoks))
        stop_ids = {llm.token_eos(), llm._model.token_eot()}
        stop_text = [s for s in fmt.stop if s]
        llm.eval(ptoks)
        out, lps, first_top, finish = [], [], {}, "length"
        for step in range(int(max_tokens)):
            logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),))
            x = logits.astype(np.float64)
            x = x - x.max()
            lp = x - math.log(np.exp(x).sum())
            tok = int(np.argmax(lp))
            if step == 0:
                for i in np.argsort(lp)[::-1][:top]:
                    first_top[llm.detokenize([int(i)]).decode("utf-8", "ignore")] = float(lp[i])
            if tok in stop_ids:
                finish = "stop"
                break
            out.append(tok)
            lps.append(float(lp[tok]))
            text = llm.detokenize(out).decode("utf-8", "ignore")
            if any(s in text for s in stop_text):
                finish = "stop"
                break
            llm.eval([tok])
        text = llm.detokenize(out).decode("utf-8", "ignore")
        for s in stop_text:
            text = text.split(s)[0]
        return {"text": text, "token_logprobs": lps, "top_logprobs": first_top, "finish_reason": finish,
                "prompt_tokens": len(ptoks), "completion_tokens": len(out),
                "seconds": time.perf_counter() - t0}
