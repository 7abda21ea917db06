"""Failures worth retrying are never cached as final; a cache that breaks mid-run loses nothing fetched.

- a server that was not yet running (connection refused) or timed out: the next run asks again by
  itself, without --retry-failed (also for failure rows stored before the 'transient' flag existed);
- a 400 stays cached; a rerun says its failures came from the cache and names --retry-failed;
- a cache corrupted mid-run: the answers fetched are written (to --out) before the error is
  reported, the aiohttp session is closed (no "Exception ignored ... ClientSession.__del__").
"""

import argparse
import importlib.util
import json
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fakeserver import FakeServer
from metacog.elicit import Cache, cli, run
from metacog.elicit.backend import transient_payload
from metacog.elicit.cache import CacheError
from metacog.tidy.items import Item

if importlib.util.find_spec("litellm") is None:
    pytest.skip("litellm is not installed (pip install -e .[elicit])", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-for-the-loopback-server")


def parse(argv):
    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    return p.parse_args(argv)


def items_file(path, questions):
    path.write_text("".join(json.dumps({"item_id": i, "question": q, "gold": str(i)}) + "\n"
                            for i, q in enumerate(questions)))
    return path


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens here now
    return port


def test_server_down_then_up_is_asked_again_without_retry_failed(tmp_path, capfd):
    port = free_port()
    path = items_file(tmp_path / "i.jsonl", [f"Q{i} [[answer:{i}]]" for i in range(4)])
    argv = ["--items", str(path), "--models", "openai/fake", "--probes", "answer", "--api-base",
            f"http://127.0.0.1:{port}/v1", "--cache", str(tmp_path / "c"), "--no-progress",
            "--max-retries", "0", "--timeout", "30", "--out", str(tmp_path / "o.csv")]
    assert cli.main(parse(argv)) == 2  # the server is not running yet: nothing usable came back
    err = capfd.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "4 of 4 calls found no server (connection refused)" in err and "asks these calls again" in err
    assert not (tmp_path / "o.csv").exists()  # no table of failures in place of answers
    with Cache(tmp_path / "c") as c:
        assert c.summary().set_index("status")["rows"].to_dict() == {"error": 4}  # the failures are kept
    with FakeServer(port=port) as srv:  # now it runs, on the same port
        assert cli.main(parse(argv)) == 0
        assert srv.requests == 4
    err = capfd.readouterr().err
    assert "4 rows; asked 4, cached 0, failed 0" in err and "Exception ignored" not in err
    assert (pd.read_csv(tmp_path / "o.csv")["parse_status"] == "ok").all()


def test_a_timeout_is_asked_again_by_the_next_run(tmp_path):
    its = [Item(item_id="h", benchmark="test", question="Q [[hangx1]] [[answer:7]]", gold="7")]
    with FakeServer(hang_s=3.0) as srv:
        kw = dict(models=["openai/fake"], probes=["answer"], cache=tmp_path / "c", api_base=srv.base_url,
                  progress=False, max_retries=0, timeout=1.0)
        first = run(its, **kw)
        assert first["parse_status"].tolist() == ["error"] and "imeout" in first["error"].iloc[0]
        second = run(its, **kw)
        assert second.attrs["counts"]["done"] == 1 and second["decision"].tolist() == ["7"]
        assert srv.requests == 2


def test_failure_rows_stored_before_the_flag_existed_are_classified_by_their_error(tmp_path):
    assert transient_payload({"error_type": "ClientConnectorError", "error": "Cannot connect to host"})
    assert transient_payload({"error_type": "InternalServerError", "status_code": 500,
                              "error": "litellm.InternalServerError: OpenAIException - Connection error. "
                                       "[retries exhausted]"})
    assert transient_payload({"error_type": "RateLimitError", "status_code": 429, "error": "x"})
    assert not transient_payload({"error_type": "BadRequestError", "status_code": 400,
                                  "error": "HTTP 400: bad timeout parameter [not retryable]"})
    assert not transient_payload({"error_type": "InternalServerError", "status_code": 500,
                                  "error": "HTTP 500: injected permanent 500 [retries exhausted]"})
    # A legacy row for a call that found no server: the next run asks it again.
    its = [Item(item_id="x", benchmark="test", question="Q [[answer:3]]", gold="3")]
    with FakeServer() as srv:
        kw = dict(models=["openai/fake"], probes=["answer"], cache=tmp_path / "c", api_base=srv.base_url,
                  progress=False)
        key = run(its, **{**kw, "cache": False})["cache_key"].iloc[0]
        with Cache(tmp_path / "c") as c:
            c.put(key, "openai/fake", "error", {}, {
                "error": "ClientConnectorError: Cannot connect to host 127.0.0.1:9 [retries exhausted]",
                "error_type": "ClientConnectorError", "attempts": 5})
        df = run(its, **kw)
        assert df.attrs["counts"]["done"] == 1 and df["parse_status"].tolist() == ["ok"]
        assert srv.requests == 2


def test_a_400_stays_cached_and_the_rerun_names_retry_failed(tmp_path, capfd):
    with FakeServer() as srv:
        mixed = items_file(tmp_path / "m.jsonl", ["Q [[always400]]", "Q [[answer:1]]"])
        argv = ["--items", str(mixed), "--models", "openai/fake", "--probes", "answer", "--api-base",
                srv.base_url, "--cache", str(tmp_path / "c"), "--no-progress", "--max-retries", "0"]
        assert cli.main(parse(argv)) == 1
        assert "--retry-failed" not in capfd.readouterr().err  # asked now: re-asking cannot fix it
        assert cli.main(parse(argv)) == 1
        assert srv.requests == 2  # nothing asked again
        err = capfd.readouterr().err
        assert "asked 0, cached 2, failed 1" in err
        assert "1 of these failures were replayed from the cache; re-ask them with --retry-failed" in err

        only = items_file(tmp_path / "o.jsonl", ["Q [[always400]]"])
        argv[1] = str(only)
        assert cli.main(parse(argv)) == 2  # the same call: cached from the first run, nothing usable
        lines = capfd.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and "nothing was asked: all 1 call(s) failed in an earlier run" in lines[0]
        assert "--retry-failed" in lines[0] and "HTTP 400" in lines[0]
        assert srv.requests == 2
        assert cli.main(parse([*argv, "--retry-failed"])) == 2
        assert srv.requests == 3  # --retry-failed asks it again
        lines = capfd.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and "every call failed: 1 of 1 calls failed (BadRequestError: HTTP 400" in lines[0]
        assert "asking again cannot fix it" in lines[0]


def _corrupt_later_pages(db: Path, rows: int = 400) -> None:
    """A cache whose header and schema are intact but whose table's later leaf pages are garbled:
    opening and looking keys up work, the first insert of a run fails."""
    with Cache(db) as c:
        c.put_many((f"k{i}", "m", "ok", {"r": i}, {"text": "x" * 200}) for i in range(rows))
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(db.read_bytes())
    leaves = [i for i in range(4096, len(data), 4096) if b"x" * 100 in data[i:i + 4096]]
    assert len(leaves) > 4
    for i in leaves[len(leaves) // 2:]:
        data[i:i + 8] = b"\xff" * 8
    db.write_bytes(bytes(data))


def test_cache_corrupted_mid_run_keeps_what_was_fetched_cli(tmp_path):
    (tmp_path / "cache").mkdir()
    _corrupt_later_pages(tmp_path / "cache" / "responses.sqlite")
    path = items_file(tmp_path / "i.jsonl", [f"Q{i} [[answer:{i}]]" for i in range(200)])
    out = tmp_path / "out.csv"
    with FakeServer(latency=0.05) as srv:
        res = subprocess.run(
            [sys.executable, "-m", "metacog.cli", "elicit", "--items", str(path), "--models", "openai/fake",
             "--probes", "answer", "--api-base", srv.base_url, "--cache", str(tmp_path / "cache"),
             "--out", str(out), "--no-progress", "--concurrency", "16"],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
        fetched = srv.requests
    assert res.returncode == 2, res.stderr
    assert "not a usable SQLite file" in res.stderr and f"to {out}" in res.stderr
    assert "Exception ignored" not in res.stderr and "Traceback" not in res.stderr
    assert "Unclosed client session" not in res.stderr
    df = pd.read_csv(out)
    assert 0 < fetched < 200  # the run stopped asking once the cache failed ...
    assert len(df) == fetched and (df["parse_status"] == "ok").all()  # ... and kept every answer it got
    assert sorted(df["decision"].astype(int)) == sorted(df["item_id"].astype(int))


def test_cache_corrupted_mid_run_keeps_what_was_fetched_package(tmp_path):
    _corrupt_later_pages(tmp_path / "c.sqlite")
    its = [Item(item_id=f"p{i}", benchmark="test", question=f"Q{i} [[answer:{i}]]", gold=str(i))
           for i in range(60)]
    with FakeServer(latency=0.05) as srv:
        with pytest.raises(CacheError, match="not a usable SQLite file") as info:
            run(its, models=["openai/fake"], probes=["answer"], cache=tmp_path / "c.sqlite",
                api_base=srv.base_url, progress=False, concurrency=8)
        fetched = srv.requests
    partial = info.value.partial
    assert 0 < fetched < 60 and len(partial) == fetched and (partial["correct"] == 1.0).all()
    assert partial.attrs["counts"]["not_asked"] == 60 - fetched
