"""The ``metacog elicit`` command (metacog/elicit/cli.py), driven in-process against the fake server."""

import argparse
import importlib.util
import json

import pandas as pd
import pytest

from fakeserver import FakeServer
from metacog.elicit import cli

if importlib.util.find_spec("litellm") is None:
    pytest.skip("litellm is not installed (pip install -e .[elicit])", allow_module_level=True)


def parse(argv):
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command")
    cli.add_arguments(sub.add_parser("elicit"))
    return p.parse_args(["elicit", *argv])


def write_items(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def items_file(tmp_path):
    return write_items(tmp_path / "items.jsonl", [
        {"item_id": i, "question": f"Is {i} even? [[answer:{'yes' if i % 2 == 0 else 'no'}]]",
         "gold": i % 2 == 0, "context": f"{i} is {'even' if i % 2 == 0 else 'odd'}."}
        for i in range(10)])


def test_cli_runs_and_writes_parquet_and_csv(items_file, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cli-0000000000")
    with FakeServer() as srv:
        for suffix in (".parquet", ".csv"):
            out = tmp_path / f"out{suffix}"
            args = parse(["--items", str(items_file), "--models", "openai/fake", "--probes",
                          "prospective,answer", "--n-items", "4", "--seed", "3", "--api-base",
                          srv.base_url, "--cache", str(tmp_path / "c"), "--out", str(out),
                          "--no-progress", "--concurrency", "2", "--timeout", "5"])
            assert cli.main(args) == 0
            df = pd.read_parquet(out) if suffix == ".parquet" else pd.read_csv(out)
            assert len(df) == 8 and set(df.probe) == {"prospective", "answer"}
            assert df.item_id.astype(str).nunique() == 4
    err = capsys.readouterr().err
    assert "8 rows; asked 8, cached 0" in err and "8 rows; asked 0, cached 8" in err
    # The subset is the seeded one, in file order.
    items = cli.load_items(parse(["--items", str(items_file), "--n-items", "4", "--seed", "3"]))
    assert [it.item_id for it in items] == sorted(df.item_id.astype(str).unique(), key=int)
    assert items[0].context_kind == "background" and items[0].benchmark == "custom"


def test_cli_bad_inputs_exit_2_with_a_message(items_file, tmp_path, capsys):
    assert cli.main(parse(["--models", "openai/x"])) == 2
    assert "give --benchmark NAME or --items FILE.jsonl" in capsys.readouterr().err
    assert cli.main(parse(["--items", str(tmp_path / "nope.jsonl")])) == 2
    assert "no such file" in capsys.readouterr().err
    bad = write_items(tmp_path / "bad.jsonl", [{"item_id": 1, "question": "q", "gold": 1, "colour": "red"}])
    assert cli.main(parse(["--items", str(bad)])) == 2
    assert "line 1: unknown field(s) ['colour']" in capsys.readouterr().err
    (tmp_path / "broken.jsonl").write_text('{"item_id": 1,\n')
    assert cli.main(parse(["--items", str(tmp_path / "broken.jsonl")])) == 2
    assert "line 1: not valid JSON" in capsys.readouterr().err
    assert cli.main(parse(["--items", str(items_file), "--out", str(tmp_path / "x.xlsx")])) == 2
    assert "use a .parquet or .csv" in capsys.readouterr().err
    assert cli.main(parse(["--items", str(items_file), "--probes", "vibes"])) == 2
    assert "unknown probe(s) ['vibes']" in capsys.readouterr().err


def test_cli_budget_cap(items_file, tmp_path, capsys):
    args = parse(["--items", str(items_file), "--models", "openai/gpt-4o", "--probes", "c2",
                  "--max-cost", "0.000001", "--cache", str(tmp_path / "c"), "--no-progress"])
    assert cli.main(args) == 2
    assert "exceeds max_cost" in capsys.readouterr().err
