"""The noise probe itself: Gaussian noise on the input embeddings, the relative displacement
of the hidden state at every layer (see :mod:`metacog.probe` for the conventions).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from metacog.probe.loading import decoder_layers, require_torch, embedding_rms
from metacog.probe.prompts import as_prompts, format_prompt

#: Bump when the probe's numbers would change for the same inputs (part of the cache key).
PROBE_VERSION = 1
#: The paper's settings.
SIGMA = 0.01
N_TRIALS = 40
#: A sigma sweep around the paper's value.
SIGMAS = (0.003, 0.01, 0.03, 0.1)
SCALES = ("embedding_rms", "absolute")

RESULT_COLUMNS = [
    "model", "prompt_id", "layer", "depth", "displacement", "displacement_sd",
    "displacement_tokens", "clean_norm", "n_tokens", "sigma", "noise_std", "scale",
    "n_trials", "seed", "chat",
]


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
    torch = require_torch()
    _check_settings(sigma, n_trials, seed, scale, batch_size)
    s = as_prompts(prompts)
    blocks = decoder_layers(model)
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
