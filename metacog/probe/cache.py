"""The probe's parquet cache: one file per run, named by a content address of everything
that determines its numbers (model file sha256, prompts, sigma, n_trials, seed, chat,
scale, layers, :data:`~metacog.probe.noise.PROBE_VERSION`). The recorded study in
``data/probe/`` is keyed this way, so :func:`probe_key` must not change for the same inputs.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from metacog import settings
from metacog.probe import loading, noise
from metacog.probe.noise import N_TRIALS, PROBE_VERSION, SIGMA, _check_settings
from metacog.probe.prompts import as_prompts

#: Overrides the cache folder (else ``<data dir>/probe``, see :mod:`metacog.settings`).
CACHE_ENV = "METACOG_PROBE_CACHE"


def cache_dir(path: str | os.PathLike | None = None) -> Path:
    """Where probe results live: ``path``, else ``$METACOG_PROBE_CACHE``, else
    ``<data dir>/probe`` (:func:`metacog.settings.data_dir`: ``data/probe`` of the checkout
    when run inside it)."""
    if path is not None:
        return Path(path).expanduser()
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return settings.data_dir() / "probe"


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
    """:func:`~metacog.probe.noise.noise_probe` through a file cache; a hit reads parquet and never imports torch.

    ``model`` is a panel name or a .gguf path (the cache is keyed by the file's sha256,
    the prompts, sigma, n_trials, seed, chat, scale and layers). ``compute=False`` raises
    FileNotFoundError on a miss instead of running the model; ``refresh=True`` recomputes.
    The returned table's ``attrs`` hold ``cache_path`` and ``from_cache``.
    """
    _check_settings(sigma, n_trials, seed, scale, batch_size)
    key, spec = probe_key(loading.model_sha256(model), prompts, sigma, n_trials, seed, chat=chat,
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
            "torch installed (scripts/install_probe.sh) and compute=True, or point "
            f"{CACHE_ENV} (or {settings.DATA_ENV}) at the folder that holds the recorded study."
        )
    m, tok = loading.load_model(model)
    df = noise.noise_probe(m, tok, prompts, sigma, n_trials, seed, chat=chat, scale=scale,
                           batch_size=batch_size, layers=layers, model_name=loading.model_label(model))
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)
    import torch
    import transformers

    meta = dict(spec, model=loading.model_label(model), n_prompts=len(as_prompts(prompts)),
                torch=torch.__version__, transformers=transformers.__version__)
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    df = pd.read_parquet(path)  # same dtypes on a miss as on a hit
    df.attrs.update(cache_path=str(path), from_cache=False)
    return df
