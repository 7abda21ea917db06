"""Fault injection against the fake OpenAI-compatible server on 127.0.0.1 (tests/fakeserver.py).

429s, 500s, hangs past the timeout, broken JSON and empty replies; a CLI run
killed with SIGKILL and resumed; secrets never written to disk.
"""

import importlib.util
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from fakeserver import FakeServer
from metacog.elicit import Cache, run
from metacog.tidy.items import Item

if importlib.util.find_spec("litellm") is None:
    pytest.skip("litellm is not installed (pip install -e .[elicit])", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
FAKE_KEY = "sk-test-" + "Zq9" * 8  # looks like an OpenAI key; must never reach the disk
KEYLIKE = re.compile(rb"(sk-[A-Za-z0-9_\-]{8,}|AKIA[0-9A-Z]{12,})")
FAST = dict(backoff=0.01)  # keep the retry waits short in tests


def item(i, marks="", gold=None):
    return Item(item_id=f"i{i}", benchmark="test", question=f"What is {i} squared? {marks}",
                gold=str(i * i) if gold is None else gold)


@pytest.fixture(scope="module")
def server():
    with FakeServer(hang_s=4.0) as srv:
        yield srv


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)


def ask(items, server, tmp_path, **kw):
    kw = {"models": ["openai/fake"], "probes": ["answer"], "cache": tmp_path / "cache",
          "api_base": server.base_url, "progress": False, "timeout": 1.0, "max_retries": 3,
          **FAST, **kw}
    return run(items, **kw)


def test_transient_faults_are_retried_until_they_pass(server, tmp_path):
    items = [item(1, "[[429x2]] [[answer:1]]"), item(2, "[[500x3]] [[answer:4]]"),
             item(3, "[[503x1]] [[answer:9]]"), item(4, "[[badjsonx2]] [[answer:16]]"),
             item(5, "[[hangx1]] [[answer:25]]"), item(6, "[[answer:36]]")]
    df = ask(items, server, tmp_path).set_index("item_id")
    assert (df["parse_status"] == "ok").all(), df[["parse_status", "error"]]
    assert df["attempts"].to_dict() == {"i1": 3, "i2": 4, "i3": 2, "i4": 3, "i5": 2, "i6": 1}
    assert (df["correct"] == 1.0).all()


def test_exhausted_retries_and_hard_errors_become_error_rows(server, tmp_path):
    items = [item(1, "[[always500]]"), item(2, "[[always400]]"), item(3, "[[hangx9]]"),
             item(4, "[[answer:16]]")]
    df = ask(items, server, tmp_path, max_retries=2).set_index("item_id")
    assert df["parse_status"].to_dict() == {"i1": "error", "i2": "error", "i3": "error", "i4": "ok"}
    assert df.loc["i1", "attempts"] == 3 and "InternalServerError" in df.loc["i1", "error"]
    assert df.loc["i2", "attempts"] == 1  # a 400 is not retried
    assert df.loc["i3", "attempts"] == 3 and "imeout" in df.loc["i3", "error"]
    assert df.loc["i4", "decision"] == "16"
    with Cache(tmp_path / "cache") as c:
        entries = c.get_many(df["cache_key"])
    final = entries[df.loc["i1", "cache_key"]].payload["final_status"]
    assert final == "failed after 3 attempt(s): retries exhausted"
    assert "not retryable" in entries[df.loc["i2", "cache_key"]].payload["final_status"]


def test_empty_and_garbage_replies_are_kept_and_flagged(server, tmp_path):
    df = ask([item(1, "[[empty]]"), item(2, "[[garbage]]")], server, tmp_path,
             probes=["prospective"]).set_index("item_id")
    assert df.loc["i1", "parse_status"] == "empty" and df.loc["i1", "raw_text"] == ""
    assert df.loc["i2", "parse_status"] == "unparseable"
    assert "not sure" in df.loc["i2", "raw_text"] and pd.isna(df.loc["i2", "decision"])


def test_logprobs_give_p_yes(server, tmp_path):
    df = ask([item(1, "[[yes]]"), item(2, "[[no]]")], server, tmp_path,
             probes=["prospective", "c0"])
    got = {(r.item_id, r.probe): (r.decision, round(r.p_yes, 6)) for r in df.itertuples()}
    assert got == {("i1", "prospective"): ("yes", 0.9), ("i2", "prospective"): ("no", 0.2),
                   ("i1", "c0"): ("yes", 0.9), ("i2", "c0"): ("no", 0.2)}
    assert df[df.probe == "c0"]["confidence"].between(0.55, 1).all()


def test_retry_failed_reasks_only_failed_rows(server, tmp_path):
    items = [item(1, "[[500x4]] [[answer:1]]"), item(2, "[[answer:4]]"), item(3, "[[answer:9]]")]
    first = ask(items, server, tmp_path, max_retries=1).set_index("item_id")
    assert first["parse_status"].to_dict() == {"i1": "error", "i2": "ok", "i3": "ok"}
    before = dict(server.seen)
    # A plain rerun asks nothing: the failure is cached too.
    again = ask(items, server, tmp_path, max_retries=1)
    assert again.attrs["counts"]["done"] == 0 and dict(server.seen) == before
    # --retry-failed asks only i1 (its 3rd and 4th 500s, then success).
    fixed = ask(items, server, tmp_path, max_retries=3, retry_failed=True).set_index("item_id")
    assert fixed.attrs["counts"]["done"] == 1
    assert (fixed["parse_status"] == "ok").all() and fixed.loc["i1", "decision"] == "1"
    changed = {k for k in server.seen if server.seen[k] != before.get(k)}
    assert len(changed) == 1
    with Cache(tmp_path / "cache") as c:
        s = c.summary()
    assert s.set_index("status")["rows"].to_dict() == {"error": 1, "ok": 3}


def test_concurrency_bound_is_respected(tmp_path):
    with FakeServer(latency=0.15) as srv:
        items = [item(i, f"[[answer:{i * i}]]") for i in range(24)]
        df = ask(items, srv, tmp_path, concurrency=5)
        assert (df["parse_status"] == "ok").all()
        assert 1 < srv.max_in_flight <= 5  # calls overlapped, never more than the bound


def test_secrets_never_reach_disk(server, tmp_path):
    items = [item(1, "[[answer:1]]"), item(2, "[[echoauth]]"), item(3, "[[always500]]")]
    out = tmp_path / "out.csv"
    df = ask(items, server, tmp_path, probes=["answer", "prospective"], max_retries=1)
    df.to_csv(out)
    # The key was really used ...
    assert f"Bearer {FAKE_KEY}" in server.auth_headers
    # ... the echoed key is redacted in the error text ...
    echo = df[df.item_id == "i2"]["error"].iloc[0]
    assert "AuthenticationError" in echo and "[redacted]" in echo and FAKE_KEY not in echo
    # ... and no key-like string is in any file written.
    files = [out] + list((tmp_path / "cache").iterdir())
    assert any(f.name.endswith("-wal") or f.name.endswith(".sqlite") for f in files)
    for f in files:
        data = f.read_bytes()
        assert FAKE_KEY.encode() not in data, f
        assert not KEYLIKE.search(data), (f, KEYLIKE.search(data))


def _cli(args, env):
    return subprocess.Popen([sys.executable, "-m", "metacog.elicit.cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_asks_only_missing(tmp_path):
    n = 60
    items_file = tmp_path / "items.jsonl"
    with open(items_file, "w") as f:
        for i in range(n):
            f.write(json.dumps({"item_id": f"k{i}", "question": f"Q{i}? [[answer:{i}]]",
                                "gold": str(i), "benchmark": "test"}) + "\n")
    cache_dir = tmp_path / "cache"
    out = tmp_path / "out.parquet"
    env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY, "PYTHONPATH": str(ROOT)}
    with FakeServer(latency=0.25) as srv:
        args = ["--items", str(items_file), "--models", "openai/fake", "--probes",
                "answer,prospective", "--api-base", srv.base_url, "--cache", str(cache_dir),
                "--concurrency", "4", "--out", str(out), "--no-progress"]
        proc = _cli(args, env)
        db = cache_dir / "responses.sqlite"
        deadline = time.time() + 120
        done_before = 0
        while time.time() < deadline:
            time.sleep(0.2)
            if db.exists():
                try:
                    con = sqlite3.connect(db, timeout=5)
                    done_before = con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
                    con.close()
                except sqlite3.OperationalError:
                    continue
            if done_before >= 20:
                break
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert not out.exists()
        with Cache(cache_dir) as c:
            killed = c.frame()
        assert 20 <= len(killed) < 2 * n
        assert killed["key"].is_unique
        requests_at_kill = srv.requests

        res = subprocess.run([sys.executable, "-m", "metacog.elicit.cli", *args], cwd=ROOT,
                             env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        assert "model cost map" not in res.stderr  # litellm stayed offline
        df = pd.read_parquet(out)
        # Every expected row exactly once.
        expected = {(f"k{i}", p) for i in range(n) for p in ("answer", "prospective")}
        got = list(zip(df.item_id, df.probe))
        assert len(got) == len(expected) and set(got) == expected
        assert (df.parse_status == "ok").all()
        # Keys committed before the kill were not asked again; at most the 4+4 calls in flight were.
        with Cache(cache_dir) as c:
            final = c.frame()
        assert final["key"].is_unique and len(final) == 2 * n
        assert set(killed["key"]) <= set(final["key"])
        asked_again = srv.requests - requests_at_kill
        assert asked_again <= 2 * n - len(killed) + 8
        resumed = {k for k, v in srv.seen.items() if v > 1}
        assert len(resumed) <= 8
        assert set(df.cache_key) == set(final["key"])
