import os

import pandas as pd
import pytest

from metacog.data.model_metadata import COLUMNS, MODES, lookup, model_metadata

BATTERY = ["Claude Haiku 4.5", "Claude Opus 4.6", "Claude Sonnet 4.6", "DeepSeek R1", "DeepSeek V3.2",
           "Gemini 2.5 Flash", "Gemini 2.5 Pro", "Gemini 3 Flash", "Gemini 3.1 Pro", "GLM-5",
           "Gemma 3 1B", "Gemma 3 12B", "Gemma 3 27B", "GPT-5.4", "GPT-5.4 mini", "GPT-5.4 nano",
           "Qwen 80B Inst", "Qwen 80B Think", "Qwen 235B", "Qwen Coder 480B"]


def _mirror_or_skip():
    if not os.environ.get("METACOG_DATA_MIRROR"):
        pytest.skip("METACOG_DATA_MIRROR is not set")


def test_columns_types_and_sources():
    df = model_metadata()
    assert list(df.columns) == COLUMNS
    for col in ("reasoning", "reasoning_trained", "twin_exact", "verified"):
        assert df[col].dtype == bool, col
    assert (df["source"].str.strip().str.len() > 10).all()
    assert df["reasoning_mode"].isin(MODES).all()
    assert not df.duplicated(["model", "dataset"]).any()
    # the booleans agree with the mode
    assert (df["reasoning"] == df["reasoning_mode"].isin(["always", "default_on"])).all()
    assert (df["reasoning_trained"] == (df["reasoning_mode"] != "none")).all()


def test_covers_every_atlas_model_in_the_mirror():
    _mirror_or_skip()
    from metacog.data import locate
    from metacog.data.atlas import canonical_model

    folder = locate("atlas", download=False)
    ids = set()
    for f in (folder / "raw").glob("*.csv"):
        ids |= set(pd.read_csv(f, usecols=["model"])["model"].map(canonical_model))
    assert len(ids) == 33
    meta = model_metadata("atlas")
    assert set(meta["model"]) == ids


def test_covers_battery_and_local_panel():
    from metacog.data.battery import SPELLINGS
    from metacog.elicit.panel import REGISTRY

    battery = model_metadata("battery")
    assert sorted(battery["model"]) == sorted(BATTERY) == sorted(set(SPELLINGS.values()))
    local = model_metadata("local")
    assert set(local["model"]) == {f"local/{name}" for name in REGISTRY}
    assert not local["reasoning"].any()


def test_battery_rows_join_atlas_and_agree():
    meta = model_metadata()
    atlas = meta[meta["dataset"] == "atlas"].set_index("model")
    battery = meta[meta["dataset"] == "battery"]
    assert battery["model_key"].isin(atlas.index).all()
    for _, row in battery.iterrows():
        a = atlas.loc[row["model_key"]]
        assert (row["reasoning"], row["reasoning_mode"], row["vendor"]) == \
               (a["reasoning"], a["reasoning_mode"], a["vendor"])


def test_twins_are_symmetric_within_dataset_and_cross_the_reasoning_line():
    meta = model_metadata()
    for ds, part in meta.groupby("dataset"):
        idx = part.set_index("model")
        for model, row in idx[idx["twin"] != ""].iterrows():
            assert row["twin"] in idx.index, (ds, model)
            other = idx.loc[row["twin"]]
            assert other["twin"] == model
            assert other["reasoning"] != row["reasoning"]
    q = lookup(["qwen/qwen3-next-80b-a3b-thinking@x", "qwen/qwen3-next-80b-a3b-instruct"], dataset="atlas")
    assert q["reasoning"].tolist() == [True, False] and q["twin_exact"].all()


def test_known_flags():
    meta = model_metadata("atlas").set_index("model")
    assert meta.loc["deepseek-ai/deepseek-r1-0528", "reasoning"]
    assert meta.loc["openai/gpt-oss-20b", "reasoning"]
    assert not meta.loc["google/gemma-3-27b", "reasoning"]
    assert not meta.loc["google/gemini-2.0-flash", "reasoning_trained"]


def test_lookup_errors():
    with pytest.raises(ValueError, match="not in the model metadata"):
        lookup(["no/such-model"], dataset="atlas")
    with pytest.raises(ValueError, match="not one of"):
        model_metadata("nope")
