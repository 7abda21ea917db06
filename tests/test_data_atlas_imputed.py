"""Atlas's imputed confidences: the authors' parser wrote 50 where it found no confidence.
The loader marks those rows 'imputed' with a missing confidence, from the authors' per-model
audit; the schema refuses an imputed row that still has a confidence; panels never see them."""

import os

import numpy as np
import pandas as pd
import pytest

import metacog.data as data
from metacog.data import atlas
from metacog.tidy import schema, tables


@pytest.fixture(scope="module", autouse=True)
def own_cache(tmp_path_factory):
    """Tidy-table caches go to a private folder for this module only."""
    old = os.environ.get("METACOG_CACHE_DIR")
    os.environ["METACOG_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        os.environ.pop("METACOG_CACHE_DIR", None)
    else:
        os.environ["METACOG_CACHE_DIR"] = old


def test_mark_imputed_flags_50s_of_audited_models_only():
    models = pd.Series(["fallback", "fallback", "fallback", "stated", "stated", "other"])
    conf = pd.Series([50.0, 50.0, 80.0, 50.0, 90.0, 50.0])
    marked = atlas.mark_imputed(models, conf, imputed={"fallback": 2}, expressed={"stated": 1})
    assert marked.tolist() == [True, True, False, False, False, False]
    # A model missing from the frame is not checked (a subset of the files).
    assert not atlas.mark_imputed(models, conf, imputed={"absent": 3}, expressed={}).any()


def test_mark_imputed_refuses_files_that_differ_from_the_audit():
    models = pd.Series(["fallback", "fallback", "stated"])
    conf = pd.Series([50.0, 50.0, 50.0])
    with pytest.raises(data.DataFileError, match="fallback has 2 confidences of exactly 50.*counted 3"):
        atlas.mark_imputed(models, conf, imputed={"fallback": 3}, expressed={})
    with pytest.raises(data.DataFileError, match="stated has 1"):
        atlas.mark_imputed(models, conf, imputed={"fallback": 2}, expressed={"stated": 2})


def test_schema_refuses_an_imputed_row_with_a_confidence():
    base = {"model": ["m", "m"], "item_id": ["1", "2"], "probe": ["p", "p"], "correct": [1, 0]}
    ok = schema.conform(pd.DataFrame({**base, "confidence": [np.nan, 0.7],
                                      "parse_status": ["imputed", "ok"]}))
    assert ok["parse_status"].tolist() == ["imputed", "ok"]
    with pytest.raises(ValueError, match="row 0 has parse_status 'imputed' but a confidence"):
        schema.conform(pd.DataFrame({**base, "confidence": [0.5, 0.7], "parse_status": ["imputed", "ok"]}))


def test_imputed_rows_become_gaps_in_the_items_by_models_matrix():
    rows = pd.DataFrame({"model": ["a", "a", "b", "b"], "item_id": ["1", "2", "1", "2"],
                         "probe": "verbal_confidence", "confidence": [0.9, np.nan, 0.6, 0.4],
                         "correct": [1.0, 1.0, 0.0, 1.0], "parse_status": ["ok", "imputed", "ok", "ok"]})
    m = tables.wide(schema.conform(rows), "confidence")
    assert np.isnan(m.at["2", "a"]) and m.at["2", "b"] == 0.4
    assert tables.wide(rows, "correct").at["2", "a"] == 1.0  # the answer itself is kept


def test_real_atlas_marks_980_gpt_oss_120b_fallbacks_and_keeps_stated_50s(mirror):
    df = data.load("atlas")
    imputed = df[df["parse_status"] == "imputed"]
    per_model = imputed.groupby("model", observed=True).size()
    assert per_model.to_dict() == atlas.IMPUTED_50
    assert per_model["openai/gpt-oss-120b"] == 980 and len(imputed) == 985
    assert imputed["confidence"].isna().all() and imputed["correct"].notna().all()
    # No other row lost its confidence, and the stated 50s stay.
    assert df.loc[df["parse_status"] == "ok", "confidence"].notna().all()
    stated = df[df["confidence"] == 0.5].groupby("model", observed=True).size()
    assert stated.to_dict() == atlas.EXPRESSED_50
    gpt = df[df["model"] == "openai/gpt-oss-120b"]
    assert len(gpt) == 1500 and gpt["confidence"].notna().sum() == 520
    assert not (gpt["confidence"] == 0.5).any()


def test_real_atlas_panel_leaves_the_fallbacks_out(mirror):
    from metacog.hypotheses.panels import panels

    p = panels(["atlas"]).panels[0]
    col = p.confidence_raw["openai/gpt-oss-120b"]
    assert col.notna().sum() == 520 and not (col == 0.5).any()
    assert p.confidence["openai/gpt-oss-120b"].notna().sum() == 520
