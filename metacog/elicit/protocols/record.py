"""Record a declared run that asks a public panel's protocol (``options: {protocol: ...}`` in
``data/responses/runs.yml``): :func:`metacog.elicit.record.collect` hands such runs here.

The run's items are :func:`~metacog.elicit.protocols.ask.panel_items` (``n_items`` drawn with
``seed``), asked through the response cache with the run's ``max_tokens`` cap (a re-run asks
only what the cache lacks), and written as a tidy table (one row per item x probe) to
``data/responses/<run>.parquet``, atomically. ``partial=True`` writes only the items already
in the cache, in draw order, without asking anything (to publish a run still being recorded).
"""

from __future__ import annotations

import os

import pandas as pd

from metacog.elicit.cache import Cache, cache_key
from metacog.elicit.protocols import ask as A
from metacog.elicit.protocols import calibration_study as cs

PROTOCOLS = ("calibration_study",)


def collect_protocol(run, *, cache=None, progress: bool = True, models=None, partial: bool = False) -> pd.DataFrame:
    """Ask (or, with ``partial``, only replay) run ``run``'s items and write its parquet file."""
    name = run.options.get("protocol")
    if name not in PROTOCOLS:
        raise ValueError(f"run {run.name!r}: protocol {name!r} is not one of {list(PROTOCOLS)}.")
    items = A.panel_items(run.n_items, run.seed)
    store = cache if isinstance(cache, Cache) else Cache(cache)
    frames = []
    try:
        for model in models or run.models:
            todo = items
            if partial:
                proto = cs.protocol()
                params = proto.params(run.max_tokens)
                keys = [cache_key(model, proto.messages(it.question, list(it.options)), params, proto.tag)
                        for it in items.itertuples(index=False)]
                have = store.get_many(keys)
                done = [k in have and have[k].status == "ok" for k in keys]
                n = done.index(False) if False in done else len(done)
                todo = items.iloc[:n]  # the first n in draw order: still a random sample
            rows = A.ask(todo, model, cache=store, max_tokens=run.max_tokens, progress=progress)
            frames.append(A.to_tidy(rows).assign(run=run.name))
    finally:
        if store is not cache:
            store.close()
    table = pd.concat(frames, ignore_index=True)
    run.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = run.path.with_suffix(".parquet.part")
    table.to_parquet(tmp, index=False, compression="zstd")
    os.replace(tmp, run.path)
    return table
