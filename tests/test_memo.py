"""The disk cache of slow analyses: reuse, keys, damaged files, opting out."""

import numpy as np
import pandas as pd
import pytest

from metacog import memo
CALLS = []


def slow_sum(frame, scale=1.0):
    CALLS.append(1)
    return float(frame.to_numpy().sum() * scale)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("METACOG_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("METACOG_NO_MEMO", raising=False)
    CALLS.clear()
    return tmp_path


def test_same_inputs_are_computed_once_and_other_inputs_again():
    df = pd.DataFrame(np.arange(6.0).reshape(3, 2))
    assert memo.memo(slow_sum, df, scale=2.0) == 30.0
    assert memo.memo(slow_sum, df, scale=2.0) == 30.0
    assert len(CALLS) == 1
    assert memo.memo(slow_sum, df, scale=3.0) == 45.0
    assert memo.memo(slow_sum, df.iloc[::-1], scale=2.0) == 30.0  # other row order, other key
    assert len(CALLS) == 3


def test_a_damaged_result_is_recomputed(cache):
    df = pd.DataFrame({"a": [1.0, 2.0]})
    memo.memo(slow_sum, df)
    (stored,) = list((cache / "results").glob("*.pkl"))
    stored.write_bytes(b"not a pickle")
    assert memo.memo(slow_sum, df) == 3.0
    assert len(CALLS) == 2


def test_opting_out_always_recomputes(monkeypatch):
    monkeypatch.setenv("METACOG_NO_MEMO", "1")
    df = pd.DataFrame({"a": [1.0]})
    memo.memo(slow_sum, df)
    memo.memo(slow_sum, df)
    assert len(CALLS) == 2


def test_unkeyable_arguments_are_refused():
    with pytest.raises(TypeError, match="cannot key"):
        memo.memo(slow_sum, object())


def test_code_version_follows_the_imports_of_a_module():
    closure = memo.code_version("metacog.hypotheses.pairwise")
    assert closure != memo.code_version("metacog.stats.bootstrap")
    imported = memo._imports(memo._module_file("metacog.hypotheses.pairwise"), "metacog.hypotheses.pairwise")
    assert {"metacog.stats", "metacog.hypotheses.verdict", "metacog.hypotheses.common"} <= imported
    assert "metacog.book" not in imported


def test_a_foreign_result_at_the_key_is_recomputed_not_returned(cache):
    import pickle

    df = pd.DataFrame({"a": [1.0, 2.0]})
    memo.memo(slow_sum, df)
    (stored,) = list((cache / "results").glob("*.pkl"))
    stored.write_bytes(pickle.dumps("a string someone else stored here"))
    assert memo.memo(slow_sum, df) == 3.0
    stored.write_bytes(pickle.dumps({"memo_key": "another key", "result": -1.0}))
    assert memo.memo(slow_sum, df) == 3.0
    assert len(CALLS) == 3
    assert memo.memo(slow_sum, df) == 3.0 and len(CALLS) == 3  # the replaced entry is reused


def test_processes_sharing_the_cache_get_whole_results(cache):
    """Four processes computing the same keys at once: every one gets the right values, and
    what is left in the cache is one whole, readable entry per key."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("import numpy as np, pandas as pd\n"
            "from metacog import memo\n"
            "def big(n):\n"
            "    return pd.DataFrame(np.arange(n * 1000.0).reshape(n, 1000))\n"
            "for r in range(20):\n"
            "    got = memo.memo(big, 200 + r % 4)\n"
            "    assert got.shape == (200 + r % 4, 1000) and got.iloc[-1, -1] == (200 + r % 4) * 1000 - 1\n"
            "print('ok')\n")
    root = Path(memo.__file__).resolve().parents[1]
    env = {**os.environ, "METACOG_CACHE_DIR": str(cache), "PYTHONPATH": str(root)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "ok", err
    stored = list((cache / "results").glob("*.pkl"))
    assert len(stored) == 4 and not list((cache / "results").glob("*.part"))
