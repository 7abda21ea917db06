"""Clear failures: a corrupted cache, bad --max-retries and --out, an unknown provider, a closed
port, every call failed; and two runs on one cache asking each call once (leases)."""

import argparse
import importlib.util
import json
import socket
import sqlite3
import threading

import pytest

from fakeserver import FakeServer
from metacog.elicit import Cache, cli, run
from metacog.elicit.cache import CacheError
from metacog.tidy.items import Item

if importlib.util.find_spec("litellm") is None:
    pytest.skip("litellm is not installed (pip install -e .[elicit])", allow_module_level=True)


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-for-the-loopback-server")


def items(n, marks=""):
    return [Item(item_id=f"f{i}", benchmark="test", question=f"Q{i}? [[answer:{i}]] {marks}", gold=str(i))
            for i in range(n)]


def parse(argv):
    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    return p.parse_args(argv)


@pytest.fixture
def items_file(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps({"item_id": i, "question": f"Q{i}? [[answer:{i}]]", "gold": str(i)})
                            + "\n" for i in range(6)))
    return path


def _fill(path, n=400):
    with Cache(path) as c:
        c.put_many((f"k{i}", "m", "ok", {"r": i}, {"text": "x" * 200}) for i in range(n))


def test_a_cache_corrupted_in_the_middle_gives_the_clear_message(tmp_path):
    db = tmp_path / "c.sqlite"
    _fill(db)
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(db.read_bytes())
    assert len(data) > 8 * 4096
    page = 4096
    leaves = [i for i in range(page, len(data), page) if b"x" * 100 in data[i:i + page]]
    assert len(leaves) > 4
    for i in leaves[len(leaves) // 2:]:  # the table's later leaf pages: headers garbled
        data[i:i + 8] = b"\xff" * 8
    db.write_bytes(bytes(data))
    with Cache(db) as c:  # the header and schema are intact: the open succeeds ...
        with pytest.raises(CacheError, match=r"c\.sqlite: not a usable SQLite file .* remove the file"):
            c.get_many([f"k{i}" for i in range(400)])  # ... reading the middle does not


def test_cli_corrupt_cache_exits_2(tmp_path, items_file, capsys):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "responses.sqlite").write_bytes(b"not a database" * 100)
    code = cli.main(parse(["--items", str(items_file), "--models", "openai/fake", "--api-base",
                           "http://127.0.0.1:9/v1", "--cache", str(tmp_path / "cache"), "--no-progress"]))
    err = capsys.readouterr().err
    assert code == 2 and "not a usable SQLite file" in err and "Traceback" not in err


@pytest.mark.parametrize("extra, message", [
    (["--max-retries", "-1"], "--max-retries must be >= 0"),
    (["--out", "FILE/sub/out.csv"], "is a file, not a folder"),
])
def test_bad_arguments_stop_before_anything_is_asked(extra, message, tmp_path, items_file, capsys):
    (tmp_path / "FILE").write_text("x")
    extra = [a.replace("FILE", str(tmp_path / "FILE")) for a in extra]
    with FakeServer() as srv:
        code = cli.main(parse(["--items", str(items_file), "--models", "openai/fake", "--api-base",
                               srv.base_url, "--cache", str(tmp_path / "c"), "--no-progress", *extra]))
        assert srv.requests == 0
    assert code == 2 and message in capsys.readouterr().err


def test_unknown_provider_exits_2_naming_the_model(tmp_path, items_file, capsys):
    code = cli.main(parse(["--items", str(items_file), "--models", "nosuchprovider/model",
                           "--cache", str(tmp_path / "c"), "--no-progress"]))
    err = capsys.readouterr().err
    assert code == 2 and "'nosuchprovider/model'" in err and "does not know its provider" in err
    assert "--retry-failed" not in err


def test_closed_port_exits_2_in_one_line_naming_the_url(tmp_path, items_file, capsys):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens here now
    url = f"http://127.0.0.1:{port}/v1"
    code = cli.main(parse(["--items", str(items_file), "--models", "openai/fake", "--api-base", url,
                           "--cache", str(tmp_path / "c"), "--no-progress", "--max-retries", "0",
                           "--timeout", "5"]))
    err = capsys.readouterr().err
    assert code == 2 and "every call failed: 12 of 12 calls found no server (connection refused)" in err
    assert url in err and "nothing was lost" in err and "rerun the same command" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_not_retryable_failures_exit_1_and_retryable_ones_exit_0(tmp_path, capsys):
    path = tmp_path / "i.jsonl"
    with FakeServer() as srv:
        for mark, want in (("[[always400]]", 1), ("[[always500]]", 0)):
            rows = [{"item_id": 1, "question": f"Q {mark}", "gold": "1"},
                    {"item_id": 2, "question": "Q [[answer:2]]", "gold": "2"}]
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
            code = cli.main(parse(["--items", str(path), "--models", "openai/fake", "--api-base",
                                   srv.base_url, "--cache", str(tmp_path / mark), "--no-progress",
                                   "--max-retries", "0"]))
            err = capsys.readouterr().err
            assert code == want, err
            assert ("--retry-failed" in err) == (want == 0)


def test_two_runs_on_one_cache_ask_each_call_once(tmp_path):
    its = items(40)
    with FakeServer(latency=0.05) as srv:
        out = {}

        def go(name):
            out[name] = run(its, models=["openai/fake"], probes=["answer"], cache=tmp_path / "shared",
                            api_base=srv.base_url, concurrency=4, progress=False)

        threads = [threading.Thread(target=go, args=(n,)) for n in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert srv.requests == 40
    for df in out.values():
        assert len(df) == 40 and (df["parse_status"] == "ok").all()
    counts = [df.attrs["counts"] for df in out.values()]
    assert sum(c["done"] for c in counts) == 40
    # (whether the second run waited for rows the first was asking depends on scheduling; the
    # server count above is what proves each call was asked once)
    with Cache(tmp_path / "shared") as c:
        assert c.count() == 40
        assert c._con.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0


def test_a_dead_runs_lease_is_taken_over(tmp_path):
    with Cache(tmp_path / "c") as dead, Cache(tmp_path / "c") as live:
        dead.owner = f"{socket.gethostname()}:999999999:gone"  # no such pid
        assert dead.claim(["k1"]) == ["k1"]
        other = Cache(tmp_path / "c")
        other.owner = "elsewhere:1:x"  # another host: trusted until it expires
        assert other.claim(["k2"], ttl=60) == ["k2"]
        assert live.claim(["k1", "k2"]) == ["k1"]
        other.close()


def test_the_writer_connection_stores_under_the_runs_leases(tmp_path):
    """The run's rows are written through a sibling connection (another thread): the same
    owner, so a stored row releases this run's lease; closing the sibling keeps the others."""
    with Cache(tmp_path / "c") as main:
        assert main.claim(["k1", "k2"]) == ["k1", "k2"]
        writer = main.sibling()
        assert writer.owner == main.owner
        writer.put("k1", "m", "ok", {"r": 1}, {"text": "x"})
        writer.close()
        held = main._con.execute("SELECT key FROM leases WHERE owner = ?", (main.owner,)).fetchall()
        assert held == [("k2",)] and main.get("k1").payload == {"text": "x"}
        with Cache(tmp_path / "c") as other:
            assert other.claim(["k1", "k2"], answered_since=0.0) == []  # answered / still leased
    with Cache(tmp_path / "c") as c:
        assert c._con.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0  # dropped by main.close()


def test_scicode_is_refused_before_asking_where_the_sandbox_cannot_seal(tmp_path, monkeypatch):
    from metacog.benchmarks import sandbox

    monkeypatch.setattr(sandbox, "available", lambda: (False, "needs root"))
    code_item = Item(item_id="s1", benchmark="scicode", question="Write f.", gold="def f(): pass")
    with FakeServer() as srv:
        with pytest.raises(ValueError, match=r"cannot grade \['scicode'\] here: the code sandbox needs root"):
            run([code_item], models=["openai/fake"], probes=["answer"], cache=False,
                api_base=srv.base_url, progress=False)
        # judgments alone need no grading of code
        df = run([code_item], models=["openai/fake"], probes=["prospective"], cache=False,
                 api_base=srv.base_url, progress=False)
        assert srv.requests == 1 and len(df) == 1
