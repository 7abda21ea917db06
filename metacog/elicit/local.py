"""The offline local panel as a litellm provider: ``local/<name>`` runs in-process on llama.cpp.

:class:`LocalProvider` is a ``litellm.CustomLLM`` registered under the
provider name ``local``, so ``litellm.completion(model="local/smollm2-135m",
...)`` works like any hosted model and the engine needs no special path.

How a yes/no judgment is read (no extra tokens are generated for it):

1. greedy generation (temperature 0) of the reasoning, up to ``max_tokens``,
   stopping at the template's final prefix ("Final answer:");
2. the text so far plus the final prefix is evaluated once, and the next-token
   log-probabilities of the choice words (' Yes', 'Yes', ' yes', ... and the
   same for No / Abstain) are summed per choice; the decision is the most
   likely choice, and ``p_yes`` = P(Yes) / (P(Yes) + P(No));
3. for confidence probes (c0-c2), 'Confidence:' is appended and a number is
   generated under a small grammar (at most 6 tokens).

When the model ran out of ``max_tokens`` before writing the final prefix
itself, the reply's ``finish_reason`` is 'length' (the decision was forced).

Calls are serialised by one process-wide lock (the machine has few cores; two
models decoding at once would only thrash), and each call starts from an empty
KV cache so a replayed call gives bit-identical results.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from metacog.elicit import panel as registry
PROVIDER = "local"
_LOCK = threading.RLock()
_LLMS: dict[str, Any] = {}

_VARIANTS = {
    "yes": ("Yes", " Yes", "yes", " yes", "YES", " YES"),
    "no": ("No", " No", "no", " no", "NO", " NO"),
    "abstain": ("Abstain", " Abstain", "abstain", " abstain", "ABSTAIN", " ABSTAIN"),
}

_CONF_GRAMMAR = r'''root ::= " "? num
num ::= "0" ("." [0-9] [0-9]?)? | "1" (".0" "0"?)? | "." [0-9] [0-9]?
'''


def available() -> bool:
    """True when llama_cpp can be imported."""
    try:
        import llama_cpp  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


def llama_version() -> str:
    import llama_cpp

    return f"llama-cpp-python {llama_cpp.__version__}"


def n_threads() -> int:
    """CPU threads for llama.cpp: ``$METACOG_LLAMA_THREADS``, else the cores not already busy.

    llama.cpp's threads wait for each other at every layer, so on a shared
    machine two threads fighting other processes for two cores run several
    times slower than one. Results are bit-identical for any thread count.
    """
    env = os.environ.get("METACOG_LLAMA_THREADS")
    if env:
        return max(1, int(env))
    cores = os.cpu_count() or 1
    try:
        busy = round(os.getloadavg()[0])
    except OSError:
        busy = 0
    return max(1, min(cores, cores - busy))


def close_all() -> None:
    """Free every loaded model (also run at exit).

    llama_cpp's destructor briefly points fd 1/2 at /dev/null; if that happens
    during interpreter teardown, still-buffered prints are lost. So flush first,
    and free the models while the interpreter is intact.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    with _LOCK:
        while _LLMS:
            _, llm = _LLMS.popitem()
            try:
                llm.close()
            except Exception:  # noqa: BLE001
                pass
        _FORMATTERS.clear()
        _CHOICE_IDS.clear()


atexit.register(close_all)


def load(name: str):
    """The (cached) ``llama_cpp.Llama`` for local model ``name``; the GGUF must be fetched."""
    m = registry.get(name)
    with _LOCK:
        return _load(m)


def _load(m):
    if m.name not in _LLMS:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ImportError(
                "local models need llama-cpp-python; build it with scripts/install_local.sh"
            ) from None
        path = registry.gguf_path(m.name)
        _LLMS[m.name] = Llama(model_path=str(path), n_ctx=m.n_ctx, n_threads=n_threads(),
                              n_threads_batch=n_threads(), n_batch=512, seed=0,
                              logits_all=False, verbose=False)
    return _LLMS[m.name]


@dataclass
class _Formatter:
    render: Any  # messages -> prompt text
    stop: list[str]
    bos: list[int]


_FORMATTERS: dict[str, _Formatter] = {}


def _formatter(name: str, llm) -> _Formatter:
    if name in _FORMATTERS:
        return _FORMATTERS[name]
    m = registry.get(name)
    bos_id = llm.token_bos()
    bos_text = llm.detokenize([bos_id], special=True).decode("utf-8", "ignore") if bos_id >= 0 else ""
    eos_text = llm.detokenize([llm.token_eos()], special=True).decode("utf-8", "ignore")
    add_bos = bool(llm._model.add_bos_token()) and bos_id >= 0
    tmpl = llm.metadata.get("tokenizer.chat_template")
    if m.instruct and tmpl:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        jf = Jinja2ChatFormatter(template=tmpl, eos_token=eos_text, bos_token=bos_text)

        def render(messages, protocol=None):
            return jf(messages=messages).prompt

        stop = [eos_text]
    else:
        render = _render_few_shot
        stop = [_SHOT_END.strip(" ")]
    f = _Formatter(render=render, stop=[s for s in stop if s], bos=[bos_id] if add_bos else [])
    _FORMATTERS[name] = f
    return f


# Base (not chat-tuned) models get a few-shot document: two worked examples of the
# same template, then the real request. The examples are fixed, so prompts stay deterministic.
_SHOT_END = "\n\n###\n\n"
_SHOTS = {
    "answer": [
        ("What is the capital of France?", "The capital of France is Paris.\nFinal answer: Paris"),
        ("How many legs does a spider have?", "Spiders are arachnids.\nFinal answer: 8"),
    ],
    "judgment": [
        ("What is the capital of France?", "This is a well-known fact I am sure of.\nFinal answer: Yes"),
        ("How many people attended the meeting described?",
         "That detail would only be in the text I cannot see.\nFinal answer: No"),
    ],
    "confidence": [
        ("Is the Earth round?", "Final answer: Yes\nConfidence: 0.95"),
        ("Was the Eiffel Tower built in 1999?", "Final answer: No\nConfidence: 0.9"),
    ],
}


def _render_few_shot(messages, protocol=None) -> str:
    from metacog.elicit import prompts
    from metacog.tidy.items import Item

    protocol = protocol or {}
    kind = protocol.get("kind", "answer")
    system = "\n\n".join(m["content"].strip() for m in messages if m["role"] == "system")
    user = "\n\n".join(m["content"].strip() for m in messages if m["role"] != "system")
    doc = [system] if system else []
    tag = protocol.get("template")
    if tag and kind in _SHOTS:
        tpl = prompts.get(tag)
        for i, (q, reply) in enumerate(_SHOTS[kind]):
            ex = Item(item_id=f"shot{i}", benchmark="shots", question=q, gold="",
                      context="(example context)", context_kind="background")
            ex_user = tpl.render(ex, own_answer="Paris")[-1]["content"]
            doc.append(f"{ex_user}\n\nResponse:\n{reply}")
    doc.append(f"{user}\n\nResponse:\n")
    return _SHOT_END.join(doc[:-1]) + (_SHOT_END if len(doc) > 1 else "") + doc[-1]


def _tokens(llm, fmt: _Formatter, text: str) -> list[int]:
    toks = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
    if fmt.bos and (not toks or toks[0] != fmt.bos[0]):
        toks = fmt.bos + toks
    return toks


def _next_logprobs(llm, tokens: list[int]) -> np.ndarray:
    """Log-probabilities of the token after ``tokens`` (reusing the KV prefix already evaluated)."""
    n = 0
    if llm.n_tokens > 0:
        for a, b in zip(llm.input_ids[: llm.n_tokens], tokens):
            if a != b:
                break
            n += 1
        n = min(n, len(tokens) - 1)  # always evaluate at least one token for fresh logits
    if n > 0 and llm._ctx.kv_cache_seq_rm(-1, n, -1):
        llm.n_tokens = n
    else:
        llm.reset()
        n = 0
    llm.eval(tokens[n:])
    logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),))
    x = logits.astype(np.float64)
    x = x - x.max()
    return x - math.log(np.exp(x).sum())


def _choice_ids(llm, name: str, choice: str) -> list[int]:
    key = (name, choice)
    if key not in _CHOICE_IDS:
        ids = set()
        variants = _VARIANTS.get(choice.lower(), (choice, " " + choice))
        for v in variants:
            toks = llm.tokenize(v.encode("utf-8"), add_bos=False, special=False)
            if len(toks) == 1:  # whole-word tokens only: ' Y' would also start ' You'
                ids.add(toks[0])
        if not ids:  # e.g. ' Abstain' = ' Ab' + 'stain': fall back to its first piece
            ids.add(llm.tokenize(f" {choice}".encode("utf-8"), add_bos=False, special=False)[0])
        _CHOICE_IDS[key] = sorted(ids)
    return _CHOICE_IDS[key]


_CHOICE_IDS: dict[tuple[str, str], list[int]] = {}


def complete(name: str, messages: list[dict[str, str]], *, max_tokens: int = 128,
             temperature: float = 0.0, seed: int = 0, protocol: dict | None = None,
             stop: list[str] | None = None) -> dict[str, Any]:
    """Answer one chat request with local model ``name``; returns text, usage and choice logprobs.

    ``protocol`` (from the template) switches on the judgment readout:
    {'kind', 'final_prefix', 'choices', 'confidence_prefix', 'template'}. The
    choice words are scored by their whole-word first tokens (' Yes', 'Yes',
    ' yes', ...); a choice with no one-token spelling falls back to its first piece.
    """
    protocol = protocol or {"kind": "answer"}
    kind = protocol.get("kind", "answer")
    # One lock around everything llama_cpp does: loading a model swaps the
    # process-wide stdout/stderr, and two threads doing that at once leave
    # them pointing at /dev/null.
    with _LOCK:
        llm = load(name)
        fmt = _formatter(registry.get(name).name, llm)
        llm.reset()  # every call from an empty KV cache: replays are bit-identical
        llm.set_seed(int(seed))
        prompt = fmt.render(messages, protocol)
        ptoks = _tokens(llm, fmt, prompt)
        stops = list(fmt.stop) + list(stop or [])
        gen_kw = dict(temperature=float(temperature), top_k=1 if temperature == 0 else 40,
                      top_p=1.0, min_p=0.0, repeat_penalty=1.0, seed=int(seed))
        if kind == "answer" or not protocol.get("choices"):
            out = llm.create_completion(ptoks, max_tokens=int(max_tokens), stop=stops, **gen_kw)
            c = out["choices"][0]
            scored = None
            if kind == "answer" and protocol.get("logprobs") and c["text"]:
                from metacog.elicit.local_logprobs import score_reply

                ids = {L: _choice_ids(llm, name, L) for L in protocol.get("letters") or ""}
                scored = score_reply(llm, ptoks, _tokens(llm, fmt, prompt + c["text"]), c["text"], ids,
                                     _next_logprobs)
            return {"text": c["text"], "finish_reason": c["finish_reason"],
                    "prompt_tokens": len(ptoks),
                    "completion_tokens": out["usage"]["completion_tokens"],
                    "logprobs": {"content": scored} if scored else None}
        final = protocol.get("final_prefix") or "Final answer:"
        out = llm.create_completion(ptoks, max_tokens=int(max_tokens), stop=stops + [final], **gen_kw)
        c = out["choices"][0]
        reasoning = c["text"].rstrip()
        finish = c["finish_reason"]
        n_gen = out["usage"]["completion_tokens"]
        head = reasoning + ("\n" if reasoning else "") + final
        lp = _next_logprobs(llm, _tokens(llm, fmt, prompt + head))
        scores = {}
        top = []
        for ch in protocol["choices"]:
            ids = _choice_ids(llm, name, ch)
            scores[ch] = float(np.logaddexp.reduce(lp[ids])) if ids else -math.inf
            for i in ids:
                top.append({"token": llm.detokenize([i]).decode("utf-8", "ignore"),
                            "logprob": float(lp[i]), "bytes": None})
        word = max(scores, key=scores.get)
        text = f"{head} {word}"
        n_gen += 1
        if protocol.get("confidence_prefix"):
            cp = protocol["confidence_prefix"]
            text = f"{text}\n{cp}"
            grammar = _grammar()
            co = llm.create_completion(_tokens(llm, fmt, prompt + text), max_tokens=6,
                                       stop=["\n"] + stops, grammar=grammar, **gen_kw)
            text = text + co["choices"][0]["text"]
            n_gen += co["usage"]["completion_tokens"]
        decision = {"token": " " + word, "logprob": scores[word], "bytes": None, "top_logprobs": top}
        return {"text": text, "finish_reason": finish, "prompt_tokens": len(ptoks),
                "completion_tokens": n_gen, "logprobs": {"content": [decision]},
                "choice_logprobs": scores}


_GRAMMAR = None


def _grammar():
    global _GRAMMAR
    if _GRAMMAR is None:
        from llama_cpp import LlamaGrammar

        _GRAMMAR = LlamaGrammar.from_string(_CONF_GRAMMAR, verbose=False)
    return _GRAMMAR


# ---------------------------------------------------------------------------
# litellm provider
# ---------------------------------------------------------------------------

_PASS = ("max_tokens", "temperature", "seed", "stop")


def _make_provider(litellm):
    from litellm import CustomLLM
    from litellm.types.utils import ChoiceLogprobs

    class LocalProvider(CustomLLM):
        """litellm provider 'local': see the module docstring."""

        def completion(self, model, messages, api_base, custom_prompt_dict, model_response,
                       print_verbose, encoding, api_key, logging_obj, optional_params,
                       acompletion=None, litellm_params=None, logger_fn=None, headers=None,
                       timeout=None, client=None):
            t0 = time.perf_counter()
            kw = {k: optional_params[k] for k in _PASS if optional_params.get(k) is not None}
            if isinstance(kw.get("stop"), str):
                kw["stop"] = [kw["stop"]]
            msgs = [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str)
                     else "".join(p.get("text", "") for p in m["content"])} for m in messages]
            r = complete(model, msgs, protocol=optional_params.get("metacog_protocol"), **kw)
            model_response.choices[0].message.content = r["text"]
            model_response.choices[0].finish_reason = r["finish_reason"] or "stop"
            if r["logprobs"] is not None:
                model_response.choices[0].logprobs = ChoiceLogprobs(**r["logprobs"])
            model_response.model = f"{PROVIDER}/{model}"
            usage = litellm.Usage(prompt_tokens=r["prompt_tokens"],
                                  completion_tokens=r["completion_tokens"],
                                  total_tokens=r["prompt_tokens"] + r["completion_tokens"])
            setattr(model_response, "usage", usage)
            model_response._hidden_params["backend_version"] = (
                f"{llama_version()}; litellm {litellm_version()}")
            model_response._hidden_params["response_cost"] = 0.0
            model_response._hidden_params["local_seconds"] = time.perf_counter() - t0
            return model_response

        async def acompletion(self, *args, **kwargs):
            return await asyncio.to_thread(self.completion, *args, **kwargs)

    return LocalProvider()


@functools.lru_cache(maxsize=None)
def litellm_version() -> str:
    """The installed litellm version, or 'unknown'."""
    try:
        from importlib.metadata import version

        return version("litellm")
    except Exception:  # noqa: BLE001
        return "unknown"


def register(litellm) -> None:
    """Add the 'local' provider to ``litellm.custom_provider_map`` (idempotent)."""
    if any(p.get("provider") == PROVIDER for p in litellm.custom_provider_map):
        return
    litellm.custom_provider_map = list(litellm.custom_provider_map) + [
        {"provider": PROVIDER, "custom_handler": _make_provider(litellm)}
    ]
