"""--router: one model name over several loopback deployments, within their limits, with fallbacks;
and the direct HTTP path giving the same rows as litellm."""

import argparse
import importlib.util
import json
import socket

import pytest

from fakeserver import FakeServer
from metacog.elicit import cli, run
from metacog.elicit.router import Deployment, load_router
from metacog.tidy.items import Item

if importlib.util.find_spec("litellm") is None:
    pytest.skip("litellm is not installed (pip install -e .[elicit])", allow_module_level=True)


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "loopback-default-key")
    monkeypatch.setenv("SECOND_SERVER_KEY", "loopback-second-key")


def items(n):
    return [Item(item_id=f"r{i}", benchmark="test", question=f"Q{i}? [[answer:{i}]]", gold=str(i))
            for i in range(n)]


def write(path, doc):
    path.write_text(json.dumps(doc))  # JSON is YAML
    return path


def entry(name, srv_or_url, **extra):
    base = srv_or_url if isinstance(srv_or_url, str) else srv_or_url.base_url
    return {"model_name": name, "litellm_params": {"model": "openai/fake", "api_base": base}, **extra}


def test_calls_spread_over_two_deployments(tmp_path):
    with FakeServer(latency=0.02) as a, FakeServer(latency=0.02) as b:
        second = entry("pool", b)
        second["litellm_params"]["api_key"] = "os.environ/SECOND_SERVER_KEY"
        router = write(tmp_path / "router.yaml", {"model_list": [entry("pool", a), second]})
        df = run(items(40), models=["pool"], probes=["answer"], cache=tmp_path / "c", router=router,
                 progress=False, concurrency=8)
        assert (df["parse_status"] == "ok").all() and (df["correct"] == 1.0).all()
        assert a.requests + b.requests == 40
        assert a.requests >= 10 and b.requests >= 10
        assert a.auth_headers == {"Bearer loopback-default-key"}
        assert b.auth_headers == {"Bearer loopback-second-key"}  # each deployment its own key


def test_rpm_limit_is_respected(tmp_path):
    with FakeServer() as a, FakeServer() as b:
        spec = load_router({"model_list": [entry("pool", a, rpm=5), entry("pool", b)]})
        df = run(items(30), models=["pool"], probes=["answer"], cache=False, router=spec,
                 progress=False, concurrency=4)
        assert (df["parse_status"] == "ok").all()
        assert a.requests == 5 and b.requests == 25
        assert spec.summary()["calls"].tolist() == [5, 25]


def test_full_deployments_wait_for_room_instead_of_failing():
    d = Deployment("m", {"model": "openai/x"}, rpm=2, tpm=100)
    assert d.wait_for(10, now=1000.0) == 0
    d._calls.extend([(1000.0, 10), (1001.0, 10)])
    assert d.wait_for(10, now=1002.0) == pytest.approx(58.0)  # the first slot frees at 1060
    d2 = Deployment("m", {"model": "openai/x"}, tpm=100)
    d2._calls.extend([(1000.0, 60), (1010.0, 30)])
    assert d2.wait_for(20, now=1020.0) == pytest.approx(40.0)  # 60 tokens leave the window at 1060
    assert d2.wait_for(5, now=1020.0) == 0


def test_fallback_takes_over_from_a_dead_deployment(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    s.close()
    with FakeServer() as good:
        spec = load_router({"model_list": [entry("main", dead), entry("backup", good)],
                            "fallbacks": [{"main": ["backup"]}]})
        df = run(items(6), models=["main"], probes=["answer"], cache=False, router=spec,
                 progress=False, max_retries=0)
        assert (df["parse_status"] == "ok").all() and good.requests == 6
        assert set(df["model"]) == {"main"}


@pytest.mark.parametrize("doc, message", [
    ({"model_list": []}, "non-empty 'model_list'"),
    ({"model_list": [{"model_name": "m", "litellm_params": {"model": "nope"}}]}, "entry 1"),
    ({"model_list": [{"model_name": "m", "litellm_params": {"model": "openai/x", "api_key": "sk-x"}}]},
     "os.environ/NAME"),
    ({"model_list": [{"model_name": "m", "litellm_params": {"model": "openai/x"}, "rpm": 0}]},
     "rpm must be a positive integer"),
    ({"model_list": [{"model_name": "m", "litellm_params": {"model": "openai/x"}}],
      "fallbacks": [{"m": ["other"]}]}, "not defined in model_list"),
])
def test_bad_router_files_are_named(doc, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        load_router(write(tmp_path / "r.yaml", doc))


def test_router_yaml_errors_give_the_line(tmp_path, capsys):
    path = tmp_path / "r.yaml"
    path.write_text("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x\n")
    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    args = p.parse_args(["--items", str(write(tmp_path / "i.jsonl", {"item_id": 1, "question": "Q", "gold": "1"})),
                         "--models", "m", "--router", str(path), "--cache", str(tmp_path / "c")])
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert "r.yaml, line" in err and "Traceback" not in err


def test_direct_path_matches_litellm(tmp_path):
    its = items(4) + [Item(item_id="j", benchmark="test", question="Is it? [[yes]]", gold=True)]
    with FakeServer() as srv:
        kw = dict(models=["openai/fake"], probes=["answer", "prospective"], cache=False,
                  api_base=srv.base_url, progress=False)
        fast = run(its, **kw)
        slow = run(its, transport="litellm", **kw)
    assert set(fast["backend"]) == {"http"} and set(slow["backend"]) == {"litellm"}
    cols = ["item_id", "probe", "decision", "parse_status", "correct", "p_yes", "raw_text"]
    assert fast[cols].equals(slow[cols])
    assert fast["p_yes"].notna().any()


def test_a_run_in_runs_yml_takes_a_router_file(tmp_path):
    from metacog.data import recorded
    (tmp_path / "pool.yaml").write_text("model_list:\n  - model_name: pool\n"
                                        "    litellm_params: {model: openai/fake, api_base: 'http://127.0.0.1:9/v1'}\n")
    (tmp_path / "runs.yml").write_text("runs:\n  mine:\n    benchmark: audit\n    n_items: 4\n"
                                       "    models: [pool]\n    probes: [c0]\n    router: pool.yaml\n")
    run_ = recorded.runs(tmp_path / "runs.yml")["mine"]
    assert run_.settings["router"] == str(tmp_path / "pool.yaml")
    assert load_router(run_.settings["router"]).serves("pool")
