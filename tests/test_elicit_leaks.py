"""Secrets are redacted by where they come from, not by their name: a key a router file takes from
an innocuously named variable (os.environ/VLLM_KEY), a password in a router or --api-base URL, and
the base64 forms a server may echo them in never reach the cache, the --out file or stderr."""

import base64
import importlib.util
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fakeserver import FakeServer
from metacog.elicit import cli, redaction, run
from metacog.elicit.router import load_router
from metacog.tidy.items import Item

if importlib.util.find_spec("litellm") is None:
    pytest.skip("litellm is not installed (pip install -e .[elicit])", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
MARKS = ("[[echoauth]]", "[[echoreply]]", "[[echobase]]", "[[echokey]]")


def b64(s):
    return base64.b64encode(s.encode()).decode().rstrip("=")


@pytest.fixture
def creds(monkeypatch):
    """A key in a variable whose name says nothing (VLLM_KEY) and a URL password."""
    key = "vk" + secrets.token_hex(16)
    pw = "pw" + secrets.token_hex(8)
    monkeypatch.setenv("VLLM_KEY", key)
    monkeypatch.setenv("OPENAI_API_KEY", "loopback-default-key")
    assert not redaction.SECRET_NAME.search("VLLM_KEY")  # the name alone would not give it away
    return key, pw


def forbidden(key, pw):
    """Every form of the two secrets that must not be written anywhere."""
    return [key, pw, b64(key), b64(f"Bearer {key}"), b64(f"alice:{pw}")]


def router_file(path, keyed, basic, pw):
    doc = {"model_list": [
        {"model_name": "keyed", "litellm_params": {"model": "openai/fake", "api_base": keyed.base_url,
                                                    "api_key": "os.environ/VLLM_KEY"}},
        {"model_name": "basic", "litellm_params": {
            "model": "openai/fake", "api_base": basic.base_url.replace("http://", f"http://alice:{pw}@")}},
    ]}
    path.write_text(json.dumps(doc))
    return path


def items_rows():
    return [{"item_id": f"e{i}", "benchmark": "test", "question": f"Q{i} {m}", "gold": "1"}
            for i, m in enumerate(MARKS)] + [{"item_id": "ok", "benchmark": "test",
                                              "question": "Q [[answer:1]]", "gold": "1"}]


def written(*paths):
    data = b""
    for p in paths:
        for f in ([p] if p.is_file() else sorted(p.iterdir())):
            data += f.read_bytes()
    return data


def check_sent(keyed, basic, key, pw):
    # The secrets really went out, and the servers really echoed them back.
    assert keyed.auth_headers == {f"Bearer {key}"}
    assert basic.auth_headers == {f"Basic {base64.b64encode(f'alice:{pw}'.encode()).decode()}"}


def test_redaction_knows_registered_values_url_passwords_and_base64_forms(monkeypatch):
    monkeypatch.setenv("SOME_PLAIN_NAME", "plain-env-value-9876")
    assert redaction.from_env("os.environ/SOME_PLAIN_NAME", "x") == "plain-env-value-9876"
    text = ("a plain-env-value-9876 b " + b64("plain-env-value-9876") + " c "
            + b64("Bearer plain-env-value-9876") + " d https://bob:hunter2%40x@example.org/v1 e "
            + b64("bob:hunter2@x") + " f http://tok3n-only-user@h/v1 g http://example.org/a@b")
    redaction.register_url("https://bob:hunter2%40x@example.org/v1")
    out = redaction.redact(text)
    for s in ("plain-env-value-9876", b64("plain-env-value-9876"), "hunter2", b64("bob:hunter2@x"),
              "tok3n-only-user"):
        assert s not in out, s
    assert "https://bob:[redacted]@example.org/v1" in out  # the user stays readable
    assert "http://example.org/a@b" in out  # an '@' in a path is not userinfo
    with pytest.raises(ValueError, match="NOT_SET_ANYWHERE is not set"):
        redaction.from_env("os.environ/NOT_SET_ANYWHERE", "api_base")
    assert redaction.from_env("http://plain/v1", "x") == "http://plain/v1"


def test_router_secrets_never_reach_cache_output_or_stderr_package_path(tmp_path, creds, capfd):
    key, pw = creds
    items = [Item(**r) for r in items_rows()]
    with FakeServer() as keyed, FakeServer() as basic:
        router = router_file(tmp_path / "router.yaml", keyed, basic, pw)
        spec = load_router(router)
        assert pw not in repr(spec.deployments) and pw not in spec.summary().to_string()
        df = run(items, models=["keyed", "basic"], probes=["answer"], cache=tmp_path / "cache",
                 router=spec, progress=True, max_retries=0, timeout=30)
        check_sent(keyed, basic, key, pw)
    df.to_csv(tmp_path / "out.csv")
    print(df.to_string())  # what a notebook would show
    err = capfd.readouterr()
    blob = written(tmp_path / "out.csv", tmp_path / "cache") + (err.out + err.err).encode()
    assert b"alice:[redacted]@127.0.0.1" in blob  # the deployment field is stored, without the password
    for s in forbidden(key, pw):
        assert s.encode() not in blob, s
    by = df.set_index(["model", "item_id"])
    assert "[redacted]" in by.loc[("keyed", "e0"), "error"] and "[redacted]" in by.loc[("keyed", "e1"), "raw_text"]
    assert (by.loc[(slice(None), "ok"), "parse_status"] == "ok").all()


def test_router_secrets_never_reach_cache_output_or_stderr_cli_path(tmp_path, creds):
    key, pw = creds
    items_file = tmp_path / "items.jsonl"
    items_file.write_text("".join(json.dumps(r) + "\n" for r in items_rows()))
    out = tmp_path / "out.parquet"
    with FakeServer() as keyed, FakeServer() as basic:
        router = router_file(tmp_path / "router.yaml", keyed, basic, pw)
        res = subprocess.run(
            [sys.executable, "-m", "metacog.cli", "elicit", "--router", str(router), "--items", str(items_file),
             "--models", "keyed,basic", "--probes", "answer", "--cache", str(tmp_path / "cache"),
             "--out", str(out), "--max-retries", "0", "--timeout", "30"],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
            timeout=300)
        check_sent(keyed, basic, key, pw)
    assert res.returncode == 1, res.stderr  # the 401s are final: asking again cannot fix them
    assert "AuthenticationError" in res.stderr and "[redacted]" in res.stderr
    assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr
    df = pd.read_parquet(out)
    assert len(df) == 10 and (df[df.item_id == "ok"].parse_status == "ok").all()
    blob = written(out, tmp_path / "cache") + (res.stdout + res.stderr).encode()
    for s in forbidden(key, pw):
        assert s.encode() not in blob, s


def test_api_base_from_the_environment_is_a_secret(tmp_path, monkeypatch, capsys):
    pw = "pw" + secrets.token_hex(8)
    with FakeServer() as srv:
        monkeypatch.setenv("MY_SERVER", srv.base_url.replace("http://", f"http://carol:{pw}@"))
        items_file = tmp_path / "i.jsonl"
        items_file.write_text(json.dumps({"item_id": 1, "question": "Q [[echoauth]]", "gold": "1"}) + "\n")
        p = cli.argparse.ArgumentParser()
        cli.add_arguments(p)
        code = cli.main(p.parse_args(["--items", str(items_file), "--models", "openai/fake", "--api-base",
                                      "os.environ/MY_SERVER", "--probes", "answer", "--cache", str(tmp_path / "c"),
                                      "--out", str(tmp_path / "o.csv"), "--no-progress",
                                      "--max-retries", "0"]))
        assert srv.requests == 1 and srv.auth_headers == {f"Basic {base64.b64encode(f'carol:{pw}'.encode()).decode()}"}
    err = capsys.readouterr().err
    assert code == 2 and "AuthenticationError" in err  # every call failed: one line, no --out
    assert not (tmp_path / "o.csv").exists()
    blob = written(tmp_path / "c") + err.encode()
    for s in (pw, b64(f"carol:{pw}")):
        assert s.encode() not in blob, s
    monkeypatch.delenv("MY_SERVER")
    code = cli.main(p.parse_args(["--items", str(items_file), "--models", "openai/fake", "--api-base",
                                  "os.environ/MY_SERVER", "--cache", str(tmp_path / "c"), "--no-progress"]))
    assert code == 2 and "MY_SERVER is not set" in capsys.readouterr().err
