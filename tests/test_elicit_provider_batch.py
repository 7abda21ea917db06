"""Provider batch mode (run(batch=True), metacog elicit --batch) against tests/openai_server.py.

Batch rows equal ordinary rows; a rerun replays with no server call; calls in the error
file, in an expired or failed batch fall back to chat calls (counted exactly); a server
without batch endpoints is asked one by one; two runs on one cache submit one batch; a run
that stops waiting (or is killed by SIGKILL) leaves its batch recorded, and the rerun
collects it without submitting again; batch prices match litellm's.
"""

import importlib.util
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from metacog.elicit import estimate_cost, run
from metacog.elicit import engine, provider_batch
from metacog.tidy.items import Item
from openai_server import OpenAIServer, digest

if importlib.util.find_spec("litellm") is None:
    pytest.skip("litellm is not installed (pip install -e .[elicit])", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
FAKE_KEY = "sk-test-" + "Bq7" * 8  # must never reach the disk
COLS = ["cache_key", "probe", "item_id", "decision", "confidence", "correct", "p_yes", "parse_status",
        "raw_text", "mean_token_p", "option_probs", "prompt_tokens", "completion_tokens"]


def items(n, marks=lambda i: ""):
    """SQuAD-like items the fake server answers right ('[[answer:i]]' is the gold)."""
    return [Item(item_id=f"s{i}", benchmark="squad", question=f"What is {i}? [[answer:{i}]] {marks(i)}",
                 gold=[str(i)], context=f"The number is {i}.", context_kind="passage") for i in range(n)]


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)


def ask(srv, cache, its, **kw):
    kw = {"models": ["openai/fake"], "probes": ["answer"], "cache": cache, "api_base": srv.base_url,
          "progress": False, "batch": True, "batch_poll": 0.05, "backoff": 0.01, **kw}
    return run(its, **kw)


def test_batch_rows_equal_ordinary_rows_and_replay_without_calls(tmp_path):
    its = items(5)
    probes = ["prospective", "answer", "counterfactual"]
    with OpenAIServer(batch_seconds=0.2) as srv:
        b = ask(srv, tmp_path / "b", its, models=["openai/gpt-4o-mini"], probes=probes)
        st = srv.stats()
        # two phases, two batches; nothing asked one by one
        assert st["batches_created"] == 2 and st["files_uploaded"] == 2 and st["chat_calls"] == 0
        assert b.attrs["counts"]["batched"] == len(b) == 15 and b.attrs["counts"]["batches"] == 2
        o = ask(srv, tmp_path / "o", its, models=["openai/gpt-4o-mini"], probes=probes, batch=False)
        assert srv.stats()["chat_calls"] == 15
        pd.testing.assert_frame_equal(b[COLS], o[COLS])
        assert (b["correct"][b.probe == "answer"] == 1.0).all() and b["p_yes"].notna().sum() == 10
        assert (b["backend"] == "batch").all() and (o["backend"] == "http").all()
        assert b["latency_s"].isna().all() and o["latency_s"].notna().all()
        # at the batch price: litellm's own batch cost of the same tokens (half, for gpt-4o-mini)
        litellm = engine.get_litellm()
        want = [sum(litellm.cost_per_token(model="openai/gpt-4o-mini", prompt_tokens=int(p),
                                           completion_tokens=int(c), call_type="retrieve_batch"))
                for p, c in zip(b.prompt_tokens, b.completion_tokens)]
        assert b["cost_usd"].tolist() == pytest.approx(want, rel=1e-12)
        assert b["cost_usd"].tolist() == pytest.approx((o["cost_usd"] / 2).tolist(), rel=1e-9)
        before = srv.stats()
        again = ask(srv, tmp_path / "b", its, models=["openai/gpt-4o-mini"], probes=probes)
        after = srv.stats()
    assert again.attrs["counts"]["cached"] == 15 and again.attrs["counts"]["done"] == 0
    assert {k: after[k] for k in ("chat_calls", "files_uploaded", "batches_created")} == \
        {k: before[k] for k in ("chat_calls", "files_uploaded", "batches_created")}
    pd.testing.assert_frame_equal(again[COLS], b[COLS])
    assert FAKE_KEY.encode() not in (tmp_path / "b" / "responses.sqlite").read_bytes()


def _states(cache_dir):
    with sqlite3.connect(cache_dir / "responses.sqlite") as con:
        return dict(con.execute("SELECT state, COUNT(*) FROM provider_batches GROUP BY state").fetchall())


def test_error_lines_and_expired_or_failed_batches_fall_back_to_chat_calls(tmp_path, capsys):
    bad = {1, 6}
    its = items(8, lambda i: "[[batcherror]]" if i in bad else "")
    with OpenAIServer(batch_seconds=0.1) as srv:
        df = ask(srv, tmp_path / "err", its)
        st = srv.stats()
        assert st["batches_created"] == 1 and st["batch_answered"] == 6 and st["chat_calls"] == 2
        # the two chat calls are exactly the error-file requests
        asked = {digest("fake", m) for m in [json.loads(r)["messages"] for r in _requests(tmp_path / "err")]}
        assert set(st["chat_digests"]) <= asked and len(st["chat_digests"]) == 2
        assert (df.parse_status == "ok").all() and (df.correct == 1.0).all()
        assert df.set_index("item_id")["backend"].to_dict() == {
            f"s{i}": ("http" if i in bad else "batch") for i in range(8)}
        assert _states(tmp_path / "err") == {"stored": 6, "fallback": 2}
        assert "injected_error" in capsys.readouterr().err

        srv.end = "expired"  # the first half answered, the rest in the error file
        df = ask(srv, tmp_path / "exp", items(8))
        st2 = srv.stats()
        assert st2["batches_created"] == 2 and st2["chat_calls"] - st["chat_calls"] == 4
        assert df.backend.tolist() == ["batch"] * 4 + ["http"] * 4 and (df.correct == 1.0).all()
        assert "batch_expired" in capsys.readouterr().err

        srv.end = "failed"
        df = ask(srv, tmp_path / "fail", items(8))
        st3 = srv.stats()
    assert st3["batches_created"] == 3 and st3["chat_calls"] - st2["chat_calls"] == 8
    assert (df.backend == "http").all() and (df.parse_status == "ok").all()
    assert _states(tmp_path / "fail") == {"fallback": 8}


def _requests(cache_dir):
    with sqlite3.connect(cache_dir / "responses.sqlite") as con:
        return [r for (r,) in con.execute("SELECT request FROM responses WHERE payload LIKE '%\"http\"%'")]


def test_a_plugged_in_answer_and_error_ids(tmp_path):
    def answer(body):  # another helper's simulated panel: always "7"
        return {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                             "message": {"role": "assistant", "content": "Final answer: 7"}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}

    its = items(3)
    bad = engine.make_task("openai/fake", its[1], "answer", 0, engine.Settings()).key
    with OpenAIServer(answer=answer, batch_seconds=0.1, error_ids={bad}) as srv:
        df = ask(srv, tmp_path / "c", its)
        st = srv.stats()
    assert (df.decision == "7").all() and df.prompt_tokens.tolist() == [3, 3, 3]
    assert st["batch_answered"] == 2 and st["chat_calls"] == 1
    assert df.set_index("cache_key").loc[bad, "backend"] == "http"


def test_a_server_without_batch_endpoints_is_asked_one_by_one(tmp_path, capsys):
    with OpenAIServer(batch=False) as srv:
        df = ask(srv, tmp_path / "c", items(4), probes=["answer", "counterfactual"])
        st = srv.stats()
    assert st["chat_calls"] == 8 and st["files_uploaded"] == st["batches_created"] == 0
    assert (df.parse_status == "ok").all() and len(df) == 8 and (df.backend == "http").all()
    err = capsys.readouterr().err
    assert err.count("has no batch endpoints (HTTP 404 on /files)") == 1  # one line, both phases


def test_two_runs_on_one_cache_submit_one_batch(tmp_path):
    its = items(6)
    out = {}
    with OpenAIServer(batch_seconds=0.5) as srv:
        def go(name):
            out[name] = ask(srv, tmp_path / "c", its, probes=["prospective", "answer"])

        ths = [threading.Thread(target=go, args=(n,)) for n in ("a", "b")]
        for t in ths:
            t.start()
        for t in ths:
            t.join(60)
        st = srv.stats()
    # both runs took their rows from the one batch (collected or waited for), none from a replay
    assert out["a"].attrs["counts"]["cached"] == out["b"].attrs["counts"]["cached"] == 0
    assert st["chat_calls"] == 0 and sum(st["batch_lines"].values()) == 12
    assert max(st["batch_lines"].values()) == 1  # no key in two batches
    pd.testing.assert_frame_equal(out["a"][COLS], out["b"][COLS])
    assert (out["a"].parse_status == "ok").all()


def test_runs_opening_a_new_cache_at_once_all_get_it(tmp_path):
    # the WAL switch of a fresh file does not wait on SQLite's busy timeout: two runs starting
    # together (as in the test above) could find it locked
    from metacog.elicit import Cache

    errors = []

    def open_close(folder):
        try:
            Cache(folder).close()
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    for i in range(100):
        ths = [threading.Thread(target=open_close, args=(tmp_path / str(i),)) for _ in range(4)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
    assert errors == []


def test_a_run_that_stops_waiting_leaves_its_batch_to_the_next_run(tmp_path):
    with OpenAIServer(batch_seconds=1.5) as srv:
        first = ask(srv, tmp_path / "c", items(4), batch_wait=0)
        assert (first.parse_status == "missing").all()
        assert first.attrs["counts"]["pending_batch"] == 4
        assert first["error"].str.contains("waiting in provider batch").all()
        # the next run, even an ordinary one, collects the recorded batch instead of asking again
        second = ask(srv, tmp_path / "c", items(4), batch=False)
        st = srv.stats()
    assert st["batches_created"] == 1 and st["chat_calls"] == 0
    assert (second.parse_status == "ok").all() and (second.backend == "batch").all()


def test_a_batch_the_server_accepted_but_the_cache_never_recorded_is_adopted(tmp_path, capsys):
    its = items(4)
    with OpenAIServer(batch_seconds=0.2) as srv:
        # what a run killed right after create_batch leaves: a batch on the server, none in the cache
        ts = [engine.make_task("openai/fake", it, "answer", 0, engine.Settings()) for it in its]
        tag = provider_batch.keys_tag(provider_batch.endpoint_id(srv.base_url), [t.key for t in ts])
        [(_, data)] = provider_batch.chunks(ts)
        conn = dict(custom_llm_provider="openai", api_base=srv.base_url, api_key=FAKE_KEY)
        litellm = engine.get_litellm()
        f = litellm.create_file(file=("in.jsonl", data), purpose="batch", **conn)
        litellm.create_batch(completion_window="24h", endpoint="/v1/chat/completions", input_file_id=f.id,
                             metadata={"metacog_keys": tag}, **conn)
        df = ask(srv, tmp_path / "c", its)
        st = srv.stats()
    assert st["batches_created"] == 1 and st["files_uploaded"] == 1 and st["chat_calls"] == 0
    assert (df.backend == "batch").all() and (df.correct == 1.0).all()
    assert df.attrs["counts"]["batches"] == 0 and df.attrs["counts"]["batched"] == 4
    assert "collecting it instead of submitting again" in capsys.readouterr().err


def test_big_runs_are_cut_into_batches_within_the_limits(tmp_path, monkeypatch):
    monkeypatch.setattr(provider_batch, "MAX_REQUESTS", 3)
    ts = [engine.make_task("openai/fake", it, "answer", 0, engine.Settings()) for it in items(7)]
    parts = provider_batch.chunks(ts)
    assert [len(p) for p, _ in parts] == [3, 3, 1] and [t for p, _ in parts for t in p] == ts
    assert [json.loads(x)["custom_id"] for x in parts[0][1].splitlines()] == [t.key for t in ts[:3]]
    one = len(parts[0][1].splitlines()[0]) + 1
    monkeypatch.setattr(provider_batch, "MAX_BYTES", 2 * one + 1)  # two lines fit, not three
    assert [len(p) for p, _ in provider_batch.chunks(ts)] == [2, 2, 2, 1]
    with OpenAIServer(batch_seconds=0.1) as srv:
        df = ask(srv, tmp_path / "c", items(7))
        st = srv.stats()
    assert st["batches_created"] == 4 and st["chat_calls"] == 0 and (df.correct == 1.0).all()


def test_a_batch_or_output_the_server_forgot_is_asked_one_by_one(tmp_path, capsys):
    with OpenAIServer(batch_seconds=0.3) as srv:
        assert (ask(srv, tmp_path / "a", items(3), batch_wait=0).parse_status == "missing").all()
        srv.batches.clear()  # a server restarted without its batches
        df = ask(srv, tmp_path / "a", items(3))
        assert srv.stats()["chat_calls"] == 3 and (df.backend == "http").all()
        assert "is unknown to the server (404)" in capsys.readouterr().err
        ask(srv, tmp_path / "b", items(4, lambda i: "!"), batch_wait=0)
        [bid] = list(srv.batches)
        time.sleep(0.35)
        with urllib.request.urlopen(f"{srv.base_url}/batches/{bid}") as r:  # it completes now
            done = json.loads(r.read())
        assert done["status"] == "completed"
        del srv.files[done["output_file_id"]]  # outputs expire on the server
        df = ask(srv, tmp_path / "b", items(4, lambda i: "!"))
        st = srv.stats()
    assert st["chat_calls"] == 3 + 4 and (df.backend == "http").all() and (df.correct == 1.0).all()
    assert "is gone from the server (404)" in capsys.readouterr().err
    assert _states(tmp_path / "b") == {"fallback": 4}


def _stats(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/_stats", timeout=5) as r:
        return json.loads(r.read())


def test_sigkill_after_the_batch_was_created_then_rerun_submits_nothing_twice(tmp_path):
    srv = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py"), "--port", "0",
                            "--batch-seconds", "6"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(srv.stdout.readline().split()[1])
        src = tmp_path / "items.jsonl"
        src.write_text("".join(json.dumps({"item_id": f"s{i}", "benchmark": "squad", "gold": [str(i)],
                                           "question": f"What is {i}? [[answer:{i}]]",
                                           "context": f"The number is {i}.", "context_kind": "passage"}) + "\n"
                               for i in range(6)))
        out, cache = tmp_path / "out.parquet", tmp_path / "cache"
        args = [sys.executable, "-m", "metacog.elicit.cli", "--items", str(src), "--models", "openai/fake",
                "--api-base", f"http://127.0.0.1:{port}/v1", "--probes", "answer,counterfactual", "--batch",
                "--batch-poll", "0.2", "--cache", str(cache), "--out", str(out), "--no-progress"]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": FAKE_KEY}
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            try:
                if (cache / "responses.sqlite").exists() and _states(cache).get("pending"):
                    break
            except sqlite3.OperationalError:  # the file is there, its tables not yet
                pass
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        st = _stats(port)
        assert st["batches_created"] == 1 and list(st["batches"].values()) != ["completed"]
        assert _states(cache) == {"pending": 6} and not out.exists()

        res = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        st = _stats(port)
    finally:
        srv.kill()
        srv.wait()
    # phase 1's batch was collected, not submitted again; phase 2 (counterfactual) is the second
    assert st["batches_created"] == 2 and st["chat_calls"] == 0
    assert sorted(st["batch_lines"].values()) == [1] * 12
    df = pd.read_parquet(out)
    assert len(df) == 12 and (df.parse_status == "ok").all() and (df.backend == "batch").all()
    assert _states(cache) == {"stored": 12}


def test_batch_cost_estimate_is_litellms_batch_price():
    litellm = engine.get_litellm()
    for model in ("openai/gpt-4o-mini", "openai/ft:gpt-4o-2024-08-06", "openai/gpt-4"):
        ts = [engine.make_task(model, it, "answer", 0, engine.Settings()) for it in items(3)]
        full, half = estimate_cost(ts), estimate_cost(ts, batch=True)
        pt, ct = int(half.loc[0, "prompt_tokens"]), int(half.loc[0, "completion_tokens"])
        want = sum(litellm.cost_per_token(model=model, prompt_tokens=pt, completion_tokens=ct,
                                          call_type="retrieve_batch"))
        assert half.loc[0, "cost_usd"] == pytest.approx(want, rel=1e-12) and want > 0
        info = litellm.get_model_info(model)
        if info.get("input_cost_per_token_batches") is None:  # gpt-4: no batch price, half
            assert half.loc[0, "cost_usd"] == pytest.approx(full.loc[0, "cost_usd"] / 2, rel=1e-12)
        else:
            assert half.loc[0, "cost_usd"] == pytest.approx(
                pt * info["input_cost_per_token_batches"] + ct * info["output_cost_per_token_batches"])
    # unpriced models stay NaN without an api_base, free on your own server
    t = engine.make_task("openai/not-a-model", items(1)[0], "answer", 0, engine.Settings())
    assert math.isnan(estimate_cost([t], batch=True).loc[0, "cost_usd"])
    assert estimate_cost([t], "http://127.0.0.1:1/v1", batch=True).loc[0, "cost_usd"] == 0


def test_a_cache_made_before_batches_gets_their_table_and_keeps_its_rows(tmp_path):
    from metacog.elicit import Cache

    with sqlite3.connect(tmp_path / "responses.sqlite") as con:  # the schema before provider batches
        con.executescript("""
            CREATE TABLE responses (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL,
                model TEXT NOT NULL, status TEXT NOT NULL, created REAL NOT NULL, request TEXT NOT NULL,
                payload TEXT NOT NULL);
            CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE leases (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL);
            INSERT INTO responses (key, model, status, created, request, payload)
                VALUES ('k1', 'openai/fake', 'ok', 1.0, '{}', '{"text": "Final answer: 1"}');""")
    with Cache(tmp_path / "responses.sqlite") as c:
        assert c.get("k1").payload == {"text": "Final answer: 1"}
        c.record_batch("batch_1", "openai/fake", "ep", ["k2", "k3"])
        assert c.pending_batches(["k1", "k2", "k3"], "ep") == {"k2": "batch_1", "k3": "batch_1"}
        assert c.pending_batches(["k2"], "other") == {}
        stored = c.finish_batch("batch_1", [("k2", "openai/fake", "ok", {}, {"text": "x"})], ["k3"])
        assert stored == {"k2"} and c.pending_batches(["k2", "k3"], "ep") == {}
        # a second collector of the same batch stores nothing again
        assert c.finish_batch("batch_1", [("k2", "openai/fake", "ok", {}, {"text": "x"})]) == set()
        assert c.count() == 2


def test_batch_needs_the_cache():
    with pytest.raises(ValueError, match="batch=True needs the response cache"):
        run(items(1), models=["openai/fake"], probes=["answer"], cache=False, batch=True)


@pytest.mark.parametrize("flag, value", [("--batch-poll", "0"), ("--batch-wait", "-1")])
def test_bad_batch_flags_are_one_line_errors(tmp_path, capsys, flag, value):
    from metacog.elicit.cli import _standalone

    src = tmp_path / "items.jsonl"
    src.write_text(json.dumps({"item_id": "a", "question": "q", "gold": "g"}) + "\n")
    code = _standalone(["--items", str(src), "--models", "openai/fake", "--batch", flag, value,
                        "--cache", str(tmp_path / "c"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"metacog elicit: {flag} {float(value)}:") and err.count("\n") == 1
    assert not (tmp_path / "c" / "responses.sqlite").exists()
