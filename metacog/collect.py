"""Recorded runs of the local panel: ask once with ``make elicit``, replay in the book.

``data/responses/runs.yml`` declares each run: a benchmark subset, the models
and the probes. :func:`collect` asks them through :func:`metacog.elicit.run`
(every call goes through the resumable response cache, so an interrupted run
picks up where it stopped) and writes the tidy table to
``data/responses/<run>.parquet``, one model at a time, atomically. The book's
chapters read those files with :func:`load`, so building the book loads no model.
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


def items_for(run: Run, n_items: int | None = None, seed: int | None = None):
    """The run's items: its stratified subset, or another one of ``n_items`` drawn with ``seed``."""
    from metacog.benchmarks import load_items

    return load_items(run.benchmark, n_items=n_items or run.n_items,
                      seed=run.seed if seed is None else seed, **run.options)


def collect(name: str, *, cache=None, progress: bool = True, models: list[str] | None = None,
            **elicit_kwargs) -> pd.DataFrame:
    """Ask run ``name``'s models its probes (cached, resumable) and write its parquet file.

    Extra keyword arguments go to :func:`metacog.elicit.run` (``api_base``, ``concurrency`` ...).
    """
    from metacog import elicit

    all_runs = runs()
    if name not in all_runs:
        raise ValueError(f"unknown run {name!r}; runs.yml declares {sorted(all_runs)}.")
    run = all_runs[name]
    items = items_for(run)
    done = load(name) if run.path.exists() else None
    frames = []
    for model in models or run.models:
        df = elicit.run(items, models=[model], probes=list(run.probes), cache=cache, progress=progress,
                        **{**run.settings, **elicit_kwargs})
        frames.append(df.assign(run=name))
        table = pd.concat(frames, ignore_index=True)
        if done is not None:  # keep models recorded earlier that this call did not ask
            keep = done[~done["model"].isin(table["model"])]
            table = pd.concat([keep, table], ignore_index=True)
        _write(table, run.path)
    return load(name)


def _write(df: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".parquet.part")
    df.to_parquet(tmp, index=False, compression="zstd")
    os.replace(tmp, path)  # atomic: a crash never leaves a half-written table


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
    return pd.read_parquet(path)


def gather(name: str, *, models=None, n_items: int | None = None, probes=None, seed: int | None = None,
           cache=None, progress: bool = False, **elicit_kwargs) -> pd.DataFrame:
    """The responses a chapter asks for: run ``name``'s recording, extended where needed.

    With no overrides this is :func:`load` (no model is touched; models the run
    declares but has not recorded yet are not asked either). ``models``,
    ``n_items``, ``probes`` and ``seed`` (the subset's seed) override the run's own;
    whatever the recording does not hold — a new model, items outside the recorded
    subset, another probe — is asked through :func:`metacog.elicit.run` (cached and
    resumable, like :func:`collect`). ``attrs['asked']`` counts the (model, item)
    pairs that were not in the recording. Nothing is written to ``data/responses``.
    """
    all_runs = runs()
    if name not in all_runs:
        raise ValueError(f"unknown run {name!r}; runs.yml declares {sorted(all_runs)}.")
    run = all_runs[name]
    recorded = load(name) if run.path.exists() else pd.DataFrame(columns=["model", "item_id", "probe"])
    # No models asked for: the recorded ones (a declared model not recorded yet is not asked).
    models = list(models or [m for m in run.models if m in set(recorded["model"])] or run.models)
    probes = list(probes or run.probes)
    n_items = int(n_items or run.n_items)
    seed = run.seed if seed is None else int(seed)
    if n_items < 1:
        raise ValueError(f"gather: n_items must be >= 1 (or 0 for the run's {run.n_items}), got {n_items}.")
    same_subset = (n_items, seed) == (run.n_items, run.seed)
    recorded = recorded[recorded["model"].isin(models) & recorded["probe"].isin(probes)]
    if same_subset and set(models) <= set(recorded["model"]) and set(probes) <= set(run.probes):
        out = recorded.reset_index(drop=True)  # all recorded: no benchmark file, no model
        out.attrs["asked"] = 0
        return out
    items = items_for(run, n_items, seed)
    wanted = {i.item_id for i in items}
    recorded = recorded[recorded["item_id"].isin(wanted)]
    first = [p for p in probes if p != "counterfactual"] or ["answer"]
    frames, asked = [recorded], 0
    for model in models:
        mine = recorded[recorded["model"] == model]
        have = {k: set(v) for k, v in mine.groupby("item_id")["probe"]}
        todo = [i for i in items if not set(first) <= have.get(i.item_id, set())]
        if not todo:
            continue
        from metacog import elicit

        ids = {i.item_id for i in todo}
        new = elicit.run(todo, models=[model], probes=probes, cache=cache, progress=progress,
                         **{**run.settings, **elicit_kwargs})
        frames = [f[~((f["model"] == model) & f["item_id"].isin(ids))] for f in frames]
        frames.append(new.assign(run=name))
        asked += len(todo)
    out = pd.concat([f for f in frames if len(f)], ignore_index=True)
    out.attrs["asked"] = asked
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="metacog collect", description=__doc__)
    p.add_argument("runs", nargs="*", help="runs to record (default: every run in runs.yml)")
    p.add_argument("--models", help="only these models (comma-separated)")
    p.add_argument("--cache", help="response cache folder (default: the user cache)")
    args = p.parse_args(argv)
    for name in args.runs or list(runs()):
        df = collect(name, cache=args.cache, models=args.models.split(",") if args.models else None)
        print(f"{name}: {len(df)} rows -> {RESPONSES / (name + '.parquet')}", flush=True)
    return 0
