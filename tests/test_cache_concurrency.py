"""Several processes on one cache at once: the tidy-table cache (metacog.data.tidycache) and the
results cache (metacog.memo) both hand every process the right table, leave one readable
file per entry, and leave no half-written file behind."""

import multiprocessing as mp
import os

import numpy as np
import pandas as pd
import pytest


def _table(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 20_000
    return pd.DataFrame({"model": np.repeat(["m1", "m2"], n // 2), "item_id": np.arange(n).astype(str),
                         "confidence": rng.uniform(size=n), "probe": "prospective"})


def _slow_table(seed: int) -> pd.DataFrame:
    return _table(seed)


def _tidy_worker(args):
    cache, rounds = args
    os.environ["METACOG_CACHE_DIR"] = cache
    from metacog.data import tidycache

    ok = 0
    for r in range(rounds):
        got = tidycache.cached("panel", "k" * 40, lambda: _table(7))
        ok += bool(got.reset_index(drop=True).equals(_table(7)))
    return ok


def _memo_worker(args):
    cache, rounds = args
    os.environ["METACOG_CACHE_DIR"] = cache
    from metacog import memo

    return sum(bool(memo.memo(_slow_table, 11).equals(_table(11))) for _ in range(rounds))


@pytest.mark.parametrize("worker", [_tidy_worker, _memo_worker], ids=["tidy", "memo"])
def test_four_processes_share_one_cache_entry(worker, tmp_path):
    rounds = 6
    with mp.get_context("spawn").Pool(4) as pool:
        done = pool.map(worker, [(str(tmp_path), rounds)] * 4)
    assert done == [rounds] * 4  # every process got the right table every time
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not [p for p in files if p.suffix == ".part"], files  # nothing half-written is left
    kept = [p for p in files if p.suffix in (".parquet", ".pkl")]
    assert len(kept) == 1, kept  # one entry, whichever process wrote it last
    assert worker((str(tmp_path), 1)) == 1  # and it reads back
