"""Record the local panel's declared runs: ask once with ``make elicit``, replay in the book.

:func:`collect` asks a run's models its probes through :func:`metacog.elicit.run` (every
call goes through the resumable response cache, so an interrupted run picks up where it
stopped) and writes the tidy table to ``data/responses/<run>.parquet``, one model at a
time, atomically. :func:`gather` extends a recording for a chapter's overrides. The runs
are declared and read back by :mod:`metacog.data.recorded`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from metacog.data import recorded
from metacog.data.recorded import Run, load, runs

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
    if run.options.get("protocol"):  # a public panel's protocol (metacog.elicit.protocols)
        from metacog.elicit.protocols.record import collect_protocol

        collect_protocol(run, cache=cache, progress=progress, models=models)
        return load(name)
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

    Examples
    --------
    The recorded SQuAD run, replayed: nothing is asked.

    >>> r = gather("squad")
    >>> sorted(r["probe"].unique()), r.attrs["asked"]
    (['answer', 'answer_no_context', 'counterfactual', 'prospective'], 0)
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


def _check(names: list[str], models: list[str] | None, cache) -> list[str]:
    """Every problem with a ``metacog collect`` call that can be seen before anything is asked:
    the runs file, the run names, model ids and the cache folder. Raises ValueError (one line)."""
    from metacog.paths import writable_folder

    path = recorded.RESPONSES / "runs.yml"
    if not path.exists():
        raise ValueError(f"no runs file at {path}; run `metacog collect` in the project folder "
                         f"(it reads data/responses/runs.yml) or set METACOG_RESPONSES_DIR to the "
                         f"folder that holds runs.yml.")
    declared = runs()
    unknown = [n for n in names if n not in declared]
    if unknown:
        raise ValueError(f"unknown run(s) {unknown}; {path.name} declares {sorted(declared)}.")
    known = {m for n in (names or declared) for m in declared[n].models}
    bare = [m for m in models or [] if "/" not in m and m not in known]
    if bare:
        raise ValueError(f"--models: {bare} have no provider prefix and are not models of the run(s); "
                         f"use litellm ids such as 'openai/<name>' or 'local/<name>'.")
    if cache is not None:
        writable_folder(cache, "--cache")
    return names or list(declared)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="metacog collect", description=__doc__)
    p.add_argument("runs", nargs="*", help="runs to record (default: every run in runs.yml)")
    p.add_argument("--models", help="only these models (comma-separated)")
    p.add_argument("--cache", help="response cache folder (default: the user cache)")
    args = p.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    try:
        names = _check(list(args.runs), models, args.cache)
    except ValueError as exc:  # bad input, seen before anything is asked
        print(f"metacog collect: {exc}", file=sys.stderr)
        return 2
    for name in names:
        df = collect(name, cache=args.cache, models=models)
        print(f"{name}: {len(df)} rows -> {recorded.RESPONSES / (name + '.parquet')}", flush=True)
    return 0
