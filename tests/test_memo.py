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


def test_the_trace_file_says_how_each_result_came(cache, monkeypatch):
    trace = cache / "trace.tsv"
    monkeypatch.setenv("METACOG_MEMO_TRACE", str(trace))
    df = pd.DataFrame({"a": [1.0, 2.0]})
    memo.memo(slow_sum, df)
    memo.memo(slow_sum, df)
    rows = [line.split("\t") for line in trace.read_text().splitlines()]
    assert [r[1:3] for r in rows] == [[f"{__name__}.slow_sum", "computed"], [f"{__name__}.slow_sum", "read"]]
    assert all(float(r[3]) >= 0 for r in rows)


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
    assert {"metacog.stats", "metacog.hypotheses.pairwise.rules", "metacog.hypotheses.common"} <= imported
    assert "metacog.book" not in imported
    rules = memo._imports(memo._module_file("metacog.hypotheses.pairwise.rules"), "metacog.hypotheses.pairwise.rules")
    assert "metacog.hypotheses.verdict" in rules  # reached through the chapter's rules module


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
    root = Path(memo.__file__).resolve().parents[2]  # metacog/memo/__init__.py -> the checkout
    env = {**os.environ, "METACOG_CACHE_DIR": str(cache), "PYTHONPATH": str(root)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "ok", err
    stored = list((cache / "results").glob("*.pkl"))
    assert len(stored) == 4 and not list((cache / "results").glob("*.part"))


def test_processes_asking_at_once_compute_a_result_once(cache):
    """Chapters built together ask for the same slow result: the first process computes it, the
    others wait for its file. Each computation appends a line to a log; three processes started
    together leave one line, and all three print the value."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    log = cache / "computed.log"
    code = ("import time\n"
            "from metacog import memo\n"
            "def slow(n, log):\n"
            "    with open(log, 'a') as fh:\n"
            "        fh.write('computed\\n')\n"
            "    time.sleep(1.5)\n"
            "    return n * n\n"
            f"print(memo.memo(slow, 12, {str(log)!r}))\n")
    root = Path(memo.__file__).resolve().parents[2]  # metacog/memo/__init__.py -> the checkout
    env = {**os.environ, "METACOG_CACHE_DIR": str(cache), "PYTHONPATH": str(root)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(out.strip())
    assert outs == ["144"] * 3
    assert log.read_text().splitlines() == ["computed"]


def _load_case(tmp_path, name, helper_body, sentence_body, constant=3, registered="x - 1"):
    """A throwaway module inside the metacog namespace: analyse() calls helper(), reads LIMIT,
    calls a function it finds in the REGISTRY dict, and never calls sentence()."""
    import importlib.util
    import sys

    path = tmp_path / name / "case.py"
    path.parent.mkdir()
    path.write_text(
        f"LIMIT = {constant}\n\n"
        f"def helper(x):\n    return {helper_body}\n\n"
        f"def sentence(x):\n    return {sentence_body}\n\n"
        f"def registered(x):\n    return {registered}\n\n"
        "REGISTRY = {'one': [('step', registered)]}\n\n"
        "def analyse(x):\n    return helper(x) + LIMIT + REGISTRY['one'][0][1](x)\n", encoding="utf-8")
    spec = importlib.util.spec_from_file_location("metacog._memo_case", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_code_digest_follows_what_the_function_reaches_and_nothing_else(tmp_path):
    base = _load_case(tmp_path, "base", "x * 2", "f'{x} models'")
    wording = _load_case(tmp_path, "wording", "x * 2", "f'{x} panels'")
    helper = _load_case(tmp_path, "helper", "x * 3", "f'{x} models'")
    limit = _load_case(tmp_path, "limit", "x * 2", "f'{x} models'", constant=4)
    held = _load_case(tmp_path, "held", "x * 2", "f'{x} models'", registered="x - 2")
    d = {m: memo.code_digest(m.analyse) for m in (base, wording, helper, limit, held)}
    assert d[base] == d[wording]  # a sentence helper the analysis never calls leaves the key alone
    assert d[helper] != d[base]  # an edit to a function it calls changes it
    assert d[limit] != d[base]  # so does a module-level constant it reads
    assert d[held] != d[base]  # and a function it reaches through a registry (a dict of lists)


def test_a_real_analysis_key_ignores_its_modules_sentence_helpers():
    from metacog.hypotheses import rank_one

    reached = memo.code_digest(rank_one.analyse)
    assert reached != memo.code_digest(rank_one.verdict_paragraph)
    # the stats it calls are reached: a different analysis that shares none of them differs
    assert memo.code_digest(rank_one.bootstrap_structure) != memo.code_digest(rank_one.contested)


def test_a_key_is_the_same_in_every_process_whatever_it_imported_before():
    """The power chapter and the findings page ask for the same power analysis; the analysis
    imports pairwise's bootstrap inside a function, which a findings process has imported and
    a chapter process has not yet. Both must reach the same code, so the same key."""
    import subprocess
    import sys

    code = ("import importlib, sys\n"
            "from metacog import memo\n"
            "for m in sys.argv[1:]: importlib.import_module(m)\n"
            "from metacog.hypotheses import power\n"
            "print(memo.code_digest(power.analyse))\n")

    def digest(*before):
        out = subprocess.run([sys.executable, "-c", code, *before], capture_output=True, text=True, check=True)
        return out.stdout.strip()

    alone = digest()
    assert len(alone) == 64
    assert digest("metacog.pages.findings.collect", "metacog.hypotheses.pairwise") == alone
