"""Recorded runs: declared in runs.yml, written atomically per model, replayed by the book."""

import re
from pathlib import Path

import pandas as pd
import pytest

from metacog.data import recorded

from metacog.elicit import record

from metacog.tidy import schema
REPO = Path(__file__).resolve().parents[1]

RUNS = """
runs:
  tiny:
    benchmark: audit
    n_items: 11
    seed: 3
    models: [openai/gpt-4o-mini, openai/gpt-4o]
    probes: [c0]
"""


@pytest.fixture
def responses(tmp_path, monkeypatch):
    (tmp_path / "runs.yml").write_text(RUNS)
    monkeypatch.setattr(recorded, "RESPONSES", tmp_path)
    return tmp_path


def test_runs_are_read_with_their_settings(responses):
    r = recorded.runs()["tiny"]
    assert r.benchmark == "audit" and r.n_items == 11 and r.seed == 3
    assert r.models == ("openai/gpt-4o-mini", "openai/gpt-4o") and r.probes == ("c0",)
    assert r.path == responses / "tiny.parquet"


def test_a_run_missing_a_field_is_refused(tmp_path):
    f = tmp_path / "runs.yml"
    f.write_text("runs:\n  bad:\n    benchmark: audit\n    models: [m]\n")
    with pytest.raises(ValueError, match=r"run 'bad' lacks \['n_items', 'probes'\]"):
        recorded.runs(f)


def test_a_run_with_an_unknown_field_is_refused(tmp_path):
    f = tmp_path / "runs.yml"
    f.write_text(RUNS + "    sampels: 3\n")
    with pytest.raises(ValueError, match=r"run 'tiny' has unknown field\(s\) \['sampels'\]"):
        recorded.runs(f)


@pytest.mark.parametrize("extra", ["    samples: 3\n", "    samples: 0\n    temperature: 0.7\n"])
def test_repeated_samples_without_temperature_are_refused(tmp_path, extra):
    f = tmp_path / "runs.yml"
    f.write_text(RUNS + extra)
    with pytest.raises(ValueError, match=r"repeated samples need samples >= 2 and temperature > 0"):
        recorded.runs(f)


def test_a_sampled_run_records_every_sample(tmp_path, monkeypatch):
    (tmp_path / "runs.yml").write_text(RUNS + "    samples: 3\n    temperature: 0.7\n    max_tokens: 32\n")
    monkeypatch.setattr(recorded, "RESPONSES", tmp_path)
    run = recorded.runs()["tiny"]
    assert (run.samples, run.temperature, run.max_tokens) == (3, 0.7, 32)
    df = record.collect("tiny", cache=tmp_path / "cache", progress=False,
                         mock_response="Final answer: Yes\nConfidence: 0.7")
    assert len(df) == 2 * 11 * 3
    assert all(sorted(g) == [0, 1, 2] for _, g in df.groupby(["model", "item_id"])["sample"])
    assert df["cache_key"].nunique() == len(df)  # each sample is its own call


def test_collect_writes_every_model_and_load_replays_it(responses, tmp_path):
    df = record.collect("tiny", cache=tmp_path / "cache", progress=False,
                         mock_response="Final answer: Yes\nConfidence: 0.7")
    assert set(df["model"]) == {"openai/gpt-4o-mini", "openai/gpt-4o"}
    assert len(df) == 2 * 11 and (df["run"] == "tiny").all()
    assert df["item_id"].nunique() == 11
    assert not list(responses.glob("*.part"))
    again = recorded.load("tiny")
    pd.testing.assert_frame_equal(df, again)
    schema.conform(again)  # still the tidy schema after the parquet round trip


def test_recording_one_model_keeps_the_others(responses, tmp_path):
    record.collect("tiny", cache=tmp_path / "cache", progress=False, mock_response="Final answer: Yes\nConfidence: 0.7")
    record.collect("tiny", cache=tmp_path / "cache2", progress=False, models=["openai/gpt-4o"],
                    mock_response="Final answer: No\nConfidence: 0.6")
    df = recorded.load("tiny")
    assert df.groupby("model").size().to_dict() == {"openai/gpt-4o": 11, "openai/gpt-4o-mini": 11}
    assert set(df.loc[df.model == "openai/gpt-4o", "decision"]) == {"no"}
    assert set(df.loc[df.model == "openai/gpt-4o-mini", "decision"]) == {"yes"}


def test_loading_an_unrecorded_run_says_how_to_record_it(responses):
    with pytest.raises(FileNotFoundError, match=r"make elicit RUNS=tiny"):
        recorded.load("tiny")


def test_recorded_runs_in_the_repository_conform_and_hold_no_secrets():
    folder = REPO / "data" / "responses"
    declared = recorded.runs(folder / "runs.yml")
    key = re.compile(r"(sk-[A-Za-z0-9_\-]{16,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,})")
    for f in folder.glob("*.parquet"):
        assert f.stem in declared, f"{f.name} is not declared in runs.yml"
        df = pd.read_parquet(f)
        schema.conform(df, source=f.name)
        assert set(df["model"]) <= set(declared[f.stem].models)
        text = df.select_dtypes(exclude="number").astype(str).to_string()
        assert not key.search(text), f"{f.name} holds a key-like string"


@pytest.mark.localmodel
@pytest.mark.slow
@pytest.mark.parametrize("run_name, probe, n", [("audit_policies", "c0", 3), ("squad", "prospective", 2),
                                                ("scicode", "answer", 1)])
def test_recorded_calls_replay_identically_when_asked_live(run_name, probe, n):
    """A few recorded SmolLM2 calls, asked again live with no cache, give the same reply."""
    from metacog import elicit
    from metacog.elicit import local

    if not local.available():
        pytest.skip("llama-cpp-python or the SmolLM2 file is missing: run scripts/install_local.sh smollm2-135m")
    folder = REPO / "data" / "responses"
    run = recorded.runs(folder / "runs.yml")[run_name]
    table = pd.read_parquet(folder / f"{run_name}.parquet")
    model = "local/smollm2-135m"
    rows = table[(table["model"] == model) & (table["probe"] == probe)].sort_values("item_id").head(n)
    assert len(rows) == n
    items = [i for i in record.items_for(run) if i.item_id in set(rows["item_id"])]
    live = elicit.run(items, models=[model], probes=[probe], cache=False, progress=False, **run.settings)
    live = live[live["probe"] == probe].set_index("item_id").loc[rows["item_id"]]
    assert live["raw_text"].tolist() == rows["raw_text"].tolist()
    assert live["decision"].tolist() == rows["decision"].tolist()
    assert live["cache_key"].tolist() == rows["cache_key"].tolist()


def test_gather_replays_the_recording_untouched(responses, tmp_path):
    recorded = record.collect("tiny", cache=tmp_path / "cache", progress=False,
                               mock_response="Final answer: Yes\nConfidence: 0.7")
    out = record.gather("tiny")
    assert out.attrs["asked"] == 0
    pd.testing.assert_frame_equal(out, recorded)


def test_gather_does_not_ask_a_declared_model_that_is_not_recorded(responses, tmp_path):
    record.collect("tiny", cache=tmp_path / "cache", progress=False, models=["openai/gpt-4o"],
                    mock_response="Final answer: Yes\nConfidence: 0.7")
    out = record.gather("tiny", cache=tmp_path / "c2", mock_response="Final answer: No")
    assert out.attrs["asked"] == 0 and set(out["model"]) == {"openai/gpt-4o"}


def test_gather_asks_only_what_the_recording_lacks(responses, tmp_path):
    record.collect("tiny", cache=tmp_path / "cache", progress=False,
                    mock_response="Final answer: Yes\nConfidence: 0.7")
    before = (responses / "tiny.parquet").read_bytes()
    out = record.gather("tiny", models=["openai/gpt-4o", "openai/my-new-model"], cache=tmp_path / "c2",
                         mock_response="Final answer: No\nConfidence: 0.4")
    assert out.attrs["asked"] == 11  # the new model's 11 items; gpt-4o is replayed
    assert set(out.loc[out.model == "openai/gpt-4o", "decision"]) == {"yes"}
    assert set(out.loc[out.model == "openai/my-new-model", "decision"]) == {"no"}
    assert "openai/gpt-4o-mini" not in set(out["model"])
    assert (responses / "tiny.parquet").read_bytes() == before  # the recording is not rewritten

    old_ids = set(out["item_id"])
    bigger = record.gather("tiny", models=["openai/gpt-4o"], n_items=22, cache=tmp_path / "c3",
                            mock_response="Final answer: No\nConfidence: 0.4")
    new_ids = set(bigger["item_id"]) - old_ids
    assert bigger["item_id"].nunique() == 22
    assert bigger.attrs["asked"] == len(new_ids) > 0
    assert set(bigger.loc[bigger.item_id.isin(new_ids), "decision"]) == {"no"}
    assert set(bigger.loc[~bigger.item_id.isin(new_ids), "decision"]) == {"yes"}


def test_gather_refuses_an_unknown_run_and_a_bad_size(responses):
    with pytest.raises(ValueError, match=r"unknown run 'nope'.*\['tiny'\]"):
        record.gather("nope")
    with pytest.raises(ValueError, match=r"n_items must be >= 1"):
        record.gather("tiny", n_items=-3)
