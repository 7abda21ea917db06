"""Token log-probabilities of a reply the local panel (llama.cpp) already wrote.

:mod:`metacog.elicit.local` loads models without ``logits_all`` (cheap), so llama.cpp's own
``logprobs`` option is unavailable; :func:`score_reply` evaluates the reply once more, one token
at a time, reusing the KV cache of the prompt, and reads each next-token distribution.
"""

from __future__ import annotations

from typing import Any

import numpy as np

def score_reply(llm, ptoks: list[int], toks: list[int], text: str, letter_ids: dict[str, list[int]],
                next_logprobs) -> list[dict[str, Any]]:
    """OpenAI-style ``logprobs.content`` of a finished reply ``text``: each of its tokens with
    its log-probability after the prompt and the tokens before it (``next_logprobs(llm, prefix)``:
    one evaluation per token, reusing the KV prefix). ``toks`` is prompt + reply tokenized as
    the model reads it, ``ptoks`` the prompt's tokens. For a multiple-choice item
    (``letter_ids``: each option letter's whole-token spellings) every position also lists the
    letters' log-probabilities (spellings summed) as its ``top_logprobs``, so the answer
    letter's position can be read like a server's."""
    if toks[: len(ptoks)] != ptoks:  # the reply did not re-tokenize at the prompt's boundary
        toks = ptoks + llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
    content = []
    for j in range(len(ptoks), len(toks)):
        lp = next_logprobs(llm, toks[:j])
        top = [{"token": L, "logprob": float(np.logaddexp.reduce(lp[ids])), "bytes": None}
               for L, ids in letter_ids.items() if ids]
        content.append({"token": llm.detokenize([toks[j]]).decode("utf-8", "ignore"),
                        "logprob": float(lp[toks[j]]), "bytes": None, "top_logprobs": top})
    return content
