"""Recorded runs of the local panel, read back: ``data/responses/runs.yml`` declares each run
(a benchmark subset, the models and the probes) and ``<run>.parquet`` holds its tidy responses.

Recording them (asking the models) is :mod:`metacog.elicit.record`; the book and
:func:`metacog.data.load_responses` only read them, so building the book loads no model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from metacog import settings

#: Where recorded runs live: $METACOG_RESPONSES_DIR, else ``<data dir>/responses``
#: (:func:`metacog.settings.data_dir`; ``data/responses`` of the checkout when run inside it).
RESPONSES = Path(os.environ.get("METACOG_RESPONSES_DIR") or settings.data_dir() / "responses")


@dataclass(frozen=True)
class Run:
    name: str
    benchmark: str
    models: tuple[str, ...]
    probes: tuple[str, ...]
    n_items: int
    seed: int = 0
    options: dict = field(default_factory=dict)  # extra keyword arguments for load_items
    samples: int = 1  # repeats per call (sample s uses seed + s); > 1 needs temperature > 0
    temperature: float = 0.0
    max_tokens: int | None = None  # None: each template's own max_tokens
    router: str | None = None  # a litellm Router model_list file (relative to runs.yml)

    @property
    def settings(self) -> dict:
        """The keyword arguments of :func:`metacog.elicit.run` this run fixes."""
        out = dict(seed=self.seed, samples=self.samples, temperature=self.temperature,
                   max_tokens=self.max_tokens)
        if self.router:
            out["router"] = self.router
        return out

    @property
    def path(self) -> Path:
        return RESPONSES / f"{self.name}.parquet"  # read at call time: tests may move RESPONSES


def runs(path: Path | None = None) -> dict[str, Run]:
    """Every run declared in ``runs.yml``, by name."""
    path = Path(path) if path else RESPONSES / "runs.yml"
    spec = yaml.safe_load(path.read_text()) or {}
    out = {}
    for name, r in (spec.get("runs") or {}).items():
        missing = {"benchmark", "models", "probes", "n_items"} - set(r)
        if missing:
            raise ValueError(f"{path}: run {name!r} lacks {sorted(missing)}.")
        unknown = set(r) - _FIELDS
        if unknown:
            raise ValueError(f"{path}: run {name!r} has unknown field(s) {sorted(unknown)}; "
                             f"allowed: {sorted(_FIELDS)}.")
        run = Run(name, r["benchmark"], tuple(r["models"]), tuple(r["probes"]), int(r["n_items"]),
                  int(r.get("seed", 0)), dict(r.get("options") or {}), int(r.get("samples", 1)),
                  float(r.get("temperature", 0.0)),
                  None if r.get("max_tokens") is None else int(r["max_tokens"]),
                  str(path.parent / r["router"]) if r.get("router") else None)
        if run.samples < 1 or (run.samples > 1 and run.temperature <= 0):
            raise ValueError(f"{path}: run {name!r} asks samples={run.samples} at temperature="
                             f"{run.temperature}; repeated samples need samples >= 2 and temperature > 0 "
                             "(greedy decoding repeats itself).")
        out[name] = run
    return out


_FIELDS = {"benchmark", "models", "probes", "n_items", "seed", "options", "samples", "temperature",
           "max_tokens", "router"}


def load(name: str) -> pd.DataFrame:
    """The recorded responses of run ``name`` (tidy schema, one row per model x item x probe)."""
    path = RESPONSES / f"{name}.parquet"
    if not path.exists():
        declared = sorted(runs()) if (RESPONSES / "runs.yml").exists() else []
        raise FileNotFoundError(
            f"{path} does not exist: run {name!r} has not been recorded. Record it with "
            f"`make elicit RUNS={name}` (needs the local panel: scripts/install_local.sh). "
            f"Declared runs: {declared}."
        )
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for a truncated or foreign file
        raise ValueError(
            f"{path}: the recording of run {name!r} cannot be read ({type(exc).__name__}: "
            f"{str(exc)[:200]}); it is truncated or not a parquet file. Restore it with "
            f"`git checkout -- {path.name}` in data/responses, or record it again with "
            f"`make elicit RUNS={name}`.") from None
