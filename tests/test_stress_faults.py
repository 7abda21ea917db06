"""Issue #39, stress: each command that asks a model server, against a server that breaks every call
(tests/faulty_server.py): one that never answers, one that answers 200 with no choices (an empty
list, null, or a choice without a message), one that closes the connection mid-body.

Each command gives up after its --timeout and retries (every call is tried exactly
--max-retries + 1 times), stops with exit 2 and one line saying what failed, that nothing was lost
and how to rerun, keeps no failure as an answer in the cache, and asks the same calls again once a
good server answers on the same address.
"""

import argparse
import importlib.util
import json
import sqlite3

import pandas as pd
import pytest

from faulty_server import FaultyServer
from metacog.elicit import Cache
from metacog.elicit import cli as elicit_cli
from metacog.elicit.backend import transient_payload

if importlib.util.find_spec("litellm") is None:
    pytest.skip("litellm is not installed (pip install -e .[elicit])", allow_module_level=True)

CHAT = "/v1/chat/completions"
FAULTS = ["hang", "no_choices", "null_choices", "no_message", "cut"]
TIMEOUT = 0.5
#: What the one line says for each fault (after 'K of N ...').
SAYS = {"hang": f"calls timed out after {TIMEOUT:g} s", "no_choices": "replies had no choices",
        "null_choices": "replies had no choices", "no_message": "replies had a choice without a message",
        "cut": "calls were cut off: the server closed the connection in the middle of the reply"}


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-for-the-loopback-server")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def tries(srv: FaultyServer) -> int:
    """Chat requests the server took, hung ones included."""
    return srv.chat_calls + srv.hung[CHAT]


def one_line(err: str, *words: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def cache_rows(folder) -> pd.DataFrame:
    """Every stored row (status, payload), after SQLite's own integrity check."""
    db = folder / "responses.sqlite"
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with Cache(folder) as c:
        return c.frame()


# -- metacog elicit ---------------------------------------------------------------------------

def _elicit(argv) -> int:
    p = argparse.ArgumentParser()
    elicit_cli.add_arguments(p)
    return elicit_cli.main(p.parse_args(argv))


@pytest.mark.parametrize("batch", [False, True], ids=["calls", "batch"])
@pytest.mark.parametrize("fault", FAULTS)
def test_elicit_under_a_faulty_server(fault, batch, tmp_path, capsys):
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"item_id": i, "question": f"Q{i}? [[answer:{i}]]", "gold": str(i)})
                             + "\n" for i in range(3)))
    out = tmp_path / "out.parquet"
    with FaultyServer(fault, batch_seconds=0.1) as srv:
        argv = ["--items", str(items), "--models", "openai/fake", "--probes", "answer", "--api-base",
                srv.base_url, "--cache", str(tmp_path / "cache"), "--no-progress", "--timeout", str(TIMEOUT),
                "--max-retries", "1", "--out", str(out), *(["--batch", "--batch-poll", "0.1"] if batch else [])]
        code = _elicit(argv)
        err = capsys.readouterr().err
        assert code == 2, err
        line = err.strip().splitlines()[-1]
        if not batch:
            one_line(err)
        for w in ("every call failed: 3 of 3 " + SAYS[fault], srv.base_url * (fault == "hang"),
                  "nothing was lost", "rerun the same command"):
            assert w in line, (w, line)
        assert tries(srv) == 3 * 2  # each call tried --max-retries + 1 times, then given up
        assert not out.exists()  # no table of failures in place of answers
        rows = cache_rows(tmp_path / "cache")
        assert (rows["status"] == "error").all() and len(rows) == 3  # no failure stored as an answer
        with Cache(tmp_path / "cache") as c:
            assert all(transient_payload(e.payload) for e in c.get_many(rows["key"]).values())

        srv.heal()  # a good server on the same address: the same command asks those calls again
        before = tries(srv) + srv.batch_answered
        assert _elicit(argv) == 0, capsys.readouterr().err
        assert tries(srv) + srv.batch_answered - before == 3
    df = pd.read_parquet(out)
    assert (df["parse_status"] == "ok").all() and df["correct"].eq(1.0).all() and len(df) == 3


@pytest.mark.parametrize("fault", ["hang", "no_choices", "cut"])
def test_elicit_partial_failure_completes_and_a_rerun_asks_only_the_failed(fault, tmp_path, capsys):
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"item_id": i, "question": f"Q{i}? [[answer:{i}]]" + " BREAK" * (i < 2),
                                         "gold": str(i)}) + "\n" for i in range(5)))
    out = tmp_path / "out.parquet"
    with FaultyServer(fault, mark="BREAK") as srv:
        argv = ["--items", str(items), "--models", "openai/fake", "--probes", "answer", "--api-base",
                srv.base_url, "--cache", str(tmp_path / "cache"), "--no-progress", "--timeout", str(TIMEOUT),
                "--max-retries", "0", "--out", str(out)]
        assert _elicit(argv) == 0
        err = capsys.readouterr().err
        assert "5 rows; asked 5, cached 0, failed 2" in err
        assert f"2 of 5 {SAYS[fault]}" in err and "the next run asks these 2 call(s) again" in err
        first = pd.read_parquet(out).set_index("item_id")
        assert first["parse_status"].to_dict() == {"0": "error", "1": "error", "2": "ok", "3": "ok", "4": "ok"}
        srv.heal()
        before = tries(srv)
        assert _elicit(argv) == 0
        assert tries(srv) - before == 2  # only the two failed calls
        assert "5 rows; asked 2, cached 3, failed 0" in capsys.readouterr().err
    assert (pd.read_parquet(out)["parse_status"] == "ok").all()


# -- metacog place -----------------------------------------------------------------------------

def _place_server(fault):
    from test_place_cli import RandomMCQServer

    class PlaceServer(FaultyServer, RandomMCQServer):  # the study's answer format once healed
        pass

    return PlaceServer(fault)


@pytest.mark.parametrize("fault", FAULTS)
def test_place_under_a_faulty_server(fault, mirror, tmp_path, capsys):
    from metacog import cli as metacog_cli
    from metacog.pages.place import run as placing

    with _place_server(fault) as srv:
        code = metacog_cli.main(["place", "--model", "openai/fake", "--api-base", srv.base_url, "--n-items", "3",
                                 "--seed", "3", "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"),
                                 "--no-html", "--no-progress", "--timeout", str(TIMEOUT), "--max-retries", "1"])
        assert code == 2
        one_line(capsys.readouterr().err, f"metacog place: all 3 calls to openai/fake at {srv.base_url} failed: "
                 f"3 of 3 {SAYS[fault]}", "no page was made and nothing was lost", "rerun the same command")
        assert tries(srv) == 3 * 2
        assert not (tmp_path / "out" / "place.ipynb").exists()
        rows = cache_rows(tmp_path / "cache")
        assert len(rows) == 3 and (rows["status"] == "error").all()  # no failure stored as an answer

        srv.heal()  # what the command's rerun asks before its page: the same three calls
        before = tries(srv)
        again = placing.collect("openai/fake", tmp_path / "again", api_base=srv.base_url, n_items=3, seed=3,
                                cache=tmp_path / "cache", timeout=5, retries=0)
        assert tries(srv) - before == 3
    resp = pd.read_parquet(again)
    assert len(resp) == 6 and (resp["parse_status"] == "ok").all()
    placing.refuse_unusable(again, "openai/fake")  # usable now: no error


# -- metacog replicate -------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [False, True], ids=["calls", "batch"])
@pytest.mark.parametrize("fault", FAULTS)
def test_replicate_under_a_faulty_server(fault, batch, mirror, tmp_path, capsys):
    from metacog import cli as metacog_cli

    out, cache = tmp_path / "out", tmp_path / "cache"
    with FaultyServer(fault, batch_seconds=0.1) as srv:
        argv = ["replicate", "--models", "openai/a,openai/b,openai/c", "--api-base", srv.base_url,
                "--benchmarks", "legalbench", "--n-items", "10", "--no-audit", "--no-book", "--out", str(out),
                "--cache", str(cache), "--no-progress", "--timeout", str(TIMEOUT), "--max-retries", "1",
                *(["--batch"] if batch else [])]
        assert metacog_cli.main(argv) == 2
        err = capsys.readouterr().err
        # the run's own log lines ([replicate] ..., and batch mode's notes), then the one line
        said = [ln for ln in err.strip().splitlines() if not ln.startswith(("[replicate]", "metacog.elicit:"))]
        assert said == err.strip().splitlines()[-1:] and "Traceback" not in err, err
        for w in (f"metacog replicate: legalbench: all 60 calls failed: 60 of 60 {SAYS[fault]}",
                  "nothing was lost", "rerun the same command"):
            assert w in said[0], (w, said[0])
        assert tries(srv) == 60 * 2
        assert not (out / "responses.parquet").exists()
        rows = cache_rows(cache)
        assert len(rows) == 60 and (rows["status"] == "error").all()

        srv.heal()
        before = tries(srv) + srv.batch_answered
        assert metacog_cli.main(argv) == 0, capsys.readouterr().err
        assert tries(srv) + srv.batch_answered - before == 60
    df = pd.read_parquet(out / "responses.parquet")
    assert len(df) == 60 and (df["parse_status"] != "error").all()


def test_each_kind_of_failure_has_its_phrase():
    import doctest

    from metacog.elicit import failures

    assert doctest.testmod(failures).failed == 0
    assert failures.kind("ClientConnectorError: Cannot connect to host 127.0.0.1:9 ssl:default") == "refused"
    assert failures.kind("InternalServerError: litellm.InternalServerError: OpenAIException - "
                         "Connection error. [transient: asked again by the next run]") == "refused"
    assert failures.kind("EmptyReply: the reply's choice has no message") == "no_message"
    assert failures.kind("BadRequestError: HTTP 400: bad [not retryable]") == "http 400"
    assert failures.describe(["BadRequestError: HTTP 400: bad max_tokens [not retryable]"], 2) == \
        "1 of 2 calls failed (BadRequestError: HTTP 400: bad max_tokens)"


def test_replicate_partial_failure_completes_counts_and_a_rerun_asks_only_the_failed(mirror, tmp_path, capsys):
    from metacog import cli as metacog_cli

    out = tmp_path / "out"
    with FaultyServer("cut", mark='"model": "b"') as srv:  # every call of model b is cut off
        argv = ["replicate", "--models", "openai/a,openai/b,openai/c", "--api-base", srv.base_url,
                "--benchmarks", "legalbench", "--n-items", "10", "--no-audit", "--no-book", "--out", str(out),
                "--cache", str(tmp_path / "cache"), "--no-progress", "--timeout", str(TIMEOUT), "--max-retries", "0"]
        assert metacog_cli.main(argv) == 0
        assert "legalbench: 20 of 60 calls failed; the next run of the same command asks them again" in \
            capsys.readouterr().err
        first = pd.read_parquet(out / "responses.parquet")
        assert first.groupby("model")["parse_status"].apply(lambda s: (s == "error").sum()).to_dict() == \
            {"openai/a": 0, "openai/b": 20, "openai/c": 0}
        srv.heal()
        before = tries(srv)
        assert metacog_cli.main(argv) == 0
        assert tries(srv) - before == 20  # model b's calls, nothing else
    assert (pd.read_parquet(out / "responses.parquet")["parse_status"] != "error").all()
