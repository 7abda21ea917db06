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


_PER_PANEL = """
import sys, time
from types import SimpleNamespace
import pandas as pd
sys.path.insert(0, {folder!r})
import slowpanel
from metacog.hypotheses.common import per_panel


class Set:  # what per_panel needs of a PanelSet
    def __init__(self, panels):
        self.panels = panels

    def __iter__(self):
        return iter(self.panels)


time.sleep({delay})
panels = [SimpleNamespace(name=f"p{{i}}", source="s", benchmark="b", probe="c0", design=None,
                          confidence=pd.DataFrame({{"m": [i, 1]}}), correct=pd.DataFrame({{"m": [1, 0]}}))
          for i in range(6)]
print(list(per_panel(Set(panels), slowpanel.analyse)["value"]))
"""


def test_chapters_built_at_once_share_the_panels_instead_of_waiting(tmp_path):
    """Two processes ask per_panel for the same six slow panel analyses at once: each panel is
    computed once, by whichever process reaches it first, and both processes compute some (one
    that finds a panel being computed elsewhere moves on to the next instead of waiting), so the
    table is done in about half the time; both get the whole table in panel order."""
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "slowpanel.py").write_text(
        "import time\nimport pandas as pd\n"
        "def analyse(confidence, correct):\n"
        "    time.sleep(1.5)\n"
        "    return pd.DataFrame({'value': [int(confidence.iloc[0, 0])]})\n")
    code = _PER_PANEL
    root = Path(__file__).resolve().parents[1]
    trace = tmp_path / "trace.tsv"
    env = {**os.environ, "METACOG_CACHE_DIR": str(tmp_path / "cache"), "METACOG_MEMO_TRACE": str(trace),
           "PYTHONPATH": str(root)}
    env.pop("METACOG_NO_MEMO", None)
    procs = [subprocess.Popen([sys.executable, "-c", code.format(folder=str(tmp_path), delay=d)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for d in (0, 0.5)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    assert [o[0].strip() for o in outs] == ["[0, 1, 2, 3, 4, 5]"] * 2
    computed = [line.split("\t")[0] for line in trace.read_text().splitlines() if line.split("\t")[2] == "computed"]
    assert len(computed) == 6  # each panel once
    assert len(set(computed)) == 2, computed  # by both processes
