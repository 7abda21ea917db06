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


def _counted_build(cache: str, log: str) -> pd.DataFrame:
    import time

    with open(log, "a") as fh:
        fh.write(f"{os.getpid()}\n")
    time.sleep(1.5)
    return _table(3)


def _tidy_counting_worker(args):
    cache, log = args
    os.environ["METACOG_CACHE_DIR"] = cache
    from metacog.data import tidycache

    return bool(tidycache.cached("log", "c" * 40, lambda: _counted_build(cache, log))
                .reset_index(drop=True).equals(_table(3)))


def test_processes_loading_the_same_log_at_once_parse_it_once(tmp_path):
    """Chapters built at once load the same public log: the first parses it, the others wait for
    its parquet copy instead of parsing it again (each parse of the calibration study costs ~6 s)."""
    log = tmp_path / "builds.txt"
    with mp.get_context("spawn").Pool(3) as pool:
        got = pool.map(_tidy_counting_worker, [(str(tmp_path / "cache"), str(log))] * 3)
    assert got == [True] * 3
    assert len(log.read_text().splitlines()) == 1
