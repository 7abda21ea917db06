"""metacog.data.load_responses: every source kind, and every bad input named with its line."""

import json

import numpy as np
import pandas as pd
import pytest

from metacog.data import recorded

from metacog.tidy import schema
from metacog.data import ResponseError, load_responses, response_notes

HEADER = "model,item_id,probe,confidence,correct"


def good_rows(models=("a", "b", "c"), n=4):
    rng = np.random.default_rng(0)
    return [f"{m},q{i},prospective,{rng.random():.2f},{int(rng.random() < .5)}" for m in models for i in range(n)]


def write(tmp_path, lines, name="r.csv"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def error(source, **kw) -> str:
    with pytest.raises(ResponseError) as e:
        load_responses(source, **kw)
    return str(e.value)


def test_csv_with_own_column_names_and_filled_probe_and_benchmark(tmp_path):
    lines = ["llm,question,conf,is_right,reasoning_text"]
    lines += [f"m{j},{i:03d},0.{i}{j},{'yes' if (i + j) % 2 else 'no'},because" for j in range(2) for i in range(5)]
    p = write(tmp_path, lines)
    df = load_responses(str(p), columns={"llm": "model", "question": "item_id", "conf": "confidence",
                                         "is_right": "correct"}, probe="verbal_confidence", benchmark="mine")
    assert len(df) == 10 and list(df.columns[:len(schema.COLUMNS)]) == list(schema.COLUMNS)
    assert set(df["probe"]) == {"verbal_confidence"} and set(df["benchmark"]) == {"mine"}
    assert df["item_id"].iloc[0] == "000"  # ids stay text: leading zeros kept
    assert df.loc[(df.model == "m0") & (df.item_id == "001"), "correct"].item() == 1.0
    assert df["sample"].eq(0).all() and df.attrs["label"] == "r"
    assert df["reasoning_text"].iloc[0] == "because"


def test_probe_narrows_when_the_column_exists(tmp_path):
    lines = [HEADER] + good_rows() + [r.replace("prospective", "counterfactual") for r in good_rows()]
    df = load_responses(write(tmp_path, lines), probe="counterfactual")
    assert set(df["probe"]) == {"counterfactual"} and len(df) == 12
    msg = error(write(tmp_path, lines), probe="nothing")
    assert "no rows with probe 'nothing'" in msg and "counterfactual" in msg


def test_a_file_takes_a_probe_after_a_colon_like_a_run(tmp_path):
    """'path:probe' narrows a file as 'run:probe' narrows a recorded run (the reasoning-text page
    tells a user with a many-probe file to write it so), and is named without its folder."""
    from metacog.data.responses import source_label, source_name

    lines = [HEADER] + good_rows() + [r.replace("prospective", "counterfactual") for r in good_rows()]
    path = write(tmp_path, lines)
    df = load_responses(f"{path}:counterfactual")
    assert set(df["probe"]) == {"counterfactual"} and len(df) == 12
    assert "no rows with probe 'nothing'" in error(f"{path}:nothing")
    assert source_label(f"{path}:counterfactual") == path.stem
    assert str(tmp_path) not in source_name(f"{path}:counterfactual")


def test_true_false_strings_and_booleans_are_correctness(tmp_path):
    lines = [HEADER, "a,1,p,0.2,True", "a,2,p,0.4,false", "b,1,p,0.6,YES", "b,2,p,0.8,n", "b,3,p,0.8,"]
    df = load_responses(write(tmp_path, lines))
    assert df["correct"].tolist()[:4] == [1.0, 0.0, 1.0, 0.0] and np.isnan(df["correct"].iloc[4])
    pq = tmp_path / "b.parquet"
    pd.DataFrame({"model": list("aabb"), "item_id": list("1212"), "probe": "p",
                  "confidence": [.1, .2, .3, .4], "correct": [True, False, False, True]}).to_parquet(pq)
    assert load_responses(pq)["correct"].tolist() == [1.0, 0.0, 0.0, 1.0]


def test_missing_columns_listed_with_a_columns_suggestion(tmp_path):
    p = write(tmp_path, ["model,item,probe,confidence,correct", "a,1,p,0.5,1"])
    msg = error(p)
    assert "missing required column(s) ['item_id']" in msg
    assert "'item'" in msg and "columns=" in msg and str(p) in msg


def test_non_numeric_confidence_names_column_line_and_value(tmp_path):
    lines = [HEADER] + good_rows()
    lines[4] = "a,q3,prospective,high,1"  # data row 4 -> line 5
    msg = error(write(tmp_path, lines))
    assert "column 'confidence'" in msg and "line 5" in msg and "'high'" in msg


def test_hundred_point_scale_is_named(tmp_path):
    lines = [HEADER, "a,1,p,85,1", "a,2,p,40,0", "b,1,p,0.5,1", "b,2,p,70,1"]
    msg = error(write(tmp_path, lines))
    assert "0\u2013100 scale: divide by 100" in msg and "line 2" in msg and "line 5" in msg
    msg = error(write(tmp_path, [HEADER, "a,1,p,0.5,1", "a,2,p,-0.2,0"]))
    assert "[0, 1]" in msg and "line 3" in msg and "divide by 100" not in msg


def test_partial_credit_is_refused(tmp_path):
    lines = [HEADER, "a,1,p,0.5,1", "a,2,p,0.5,0.5", "b,1,p,0.5,0", "b,2,p,0.5,2"]
    msg = error(write(tmp_path, lines))
    assert "column 'correct'" in msg and "line 3 ('0.5')" in msg and "line 5" in msg


def test_duplicates_counted_with_their_lines(tmp_path):
    lines = [HEADER] + good_rows()
    lines.append(lines[2])  # line 3 repeated as line 14
    msg = error(write(tmp_path, lines))
    assert "duplicate" in msg and "1 duplicate" in msg and "2 rows" in msg
    assert "line 3, line 14" in msg and "'sample'" in msg


def test_empty_files_and_unknown_extension(tmp_path):
    empty = tmp_path / "e.csv"
    empty.write_text("")
    assert "empty" in error(empty)
    assert "no rows" in error(write(tmp_path, [HEADER], "h.csv"))
    assert "unknown file type '.xlsx'" in error(write(tmp_path, [HEADER], "x.xlsx"))


def test_model_with_one_item_is_refused(tmp_path):
    lines = [HEADER] + good_rows() + ["lonely,q0,prospective,0.5,1"]
    msg = error(write(tmp_path, lines))
    assert "'lonely'" in msg and "line 14" in msg and "at least two items" in msg


def test_quoted_newlines_keep_physical_line_numbers(tmp_path):
    lines = ["model,item_id,probe,confidence,correct,reasoning_text",
             'a,1,p,0.5,1,"first line', 'second line"', "a,2,p,0.5,0,short",
             'b,1,p,0.5,1,"x', "y", 'z"', "b,2,p,oops,1,short"]
    msg = error(write(tmp_path, lines))
    assert "line 8 ('oops')" in msg


def test_jsonl_physical_lines_and_bad_json(tmp_path):
    recs = [{"model": m, "item_id": str(i), "probe": "p", "confidence": 0.5, "correct": 1}
            for m in "ab" for i in range(3)]
    lines = [json.dumps(r) for r in recs]
    lines.insert(2, "")  # a blank line: records after it move down one physical line
    df = load_responses(write(tmp_path, lines, "r.jsonl"))
    assert len(df) == 6
    bad = list(lines)
    bad[5] = json.dumps({**recs[4], "correct": 0.5})
    assert "line 6" in error(write(tmp_path, bad, "b.jsonl"))
    bad[5] = "{not json"
    assert "line 6 is not valid JSON" in error(write(tmp_path, bad, "c.jsonl"))


def test_parquet_rows_counted_from_one(tmp_path):
    df = pd.DataFrame({"model": list("aaabbb"), "item_id": list("123123"), "probe": "p",
                       "confidence": [.1, .2, 1.3, .4, .5, .6], "correct": [1, 0, 1, 0, 1, 0]})
    p = tmp_path / "r.parquet"
    df.to_parquet(p)
    assert "row 3 (1.3)" in error(p)


def test_existing_file_with_colon_is_a_path(tmp_path):
    p = write(tmp_path, [HEADER] + good_rows(), "run:probe.csv")
    assert len(load_responses(str(p))) == 12
    assert "no such file" in error(str(tmp_path / "other:x.csv"))
    assert "unknown source 'not_a_source'" in error("not_a_source")


def test_notes_are_returned(tmp_path):
    lines = [HEADER] + [f"{m},q{i},my_probe,{0.7 if m == 'a' else i / 10},{i % 2}" for m in "abc" for i in range(4)]
    df = load_responses(write(tmp_path, lines), benchmark="toy")
    notes = response_notes(df)["note"].tolist()
    assert any("Probe 'my_probe' is not among the book's probes" in n for n in notes)  # no list repr
    assert any("'toy'" in n and "correctness identical across 3 models" in n for n in notes)
    assert any("Model 'a'" in n and "same confidence (0.7)" in n for n in notes)
    assert not any("Model 'b'" in n for n in notes)
    assert response_notes(pd.DataFrame()).empty


def test_recorded_run_and_run_probe():
    runs = recorded.runs()
    name = next(n for n in runs if "prospective" in runs[n].probes and recorded.runs()[n].path.exists())
    whole = load_responses(name)
    one = load_responses(f"{name}:prospective")
    assert set(one["probe"]) == {"prospective"}
    assert len(one) == int((whole["probe"] == "prospective").sum()) > 0
    assert one.attrs["label"] == name
    assert "no rows with probe 'nope'" in error(f"{name}:nope")


def test_every_recorded_run_still_loads():
    """Every recorded run loads through the validating loader, whole, with the models and probes
    runs.yml declares for it (compared with the parquet file itself and the declaration)."""
    loaded = 0
    for name, run in recorded.runs().items():
        if run.path.exists():
            df = load_responses(name)
            raw = pd.read_parquet(run.path)
            assert len(df) == len(raw), name
            assert set(df["model"].astype(str)) <= {m.split("/")[-1] for m in run.models} | set(run.models), name
            assert set(df["probe"].astype(str)) <= set(run.probes), name
            loaded += 1
    assert loaded >= 5  # the book replays at least the audit, SQuAD, MMLU-Pro, LegalBench and MATH runs


def test_registered_logs_load_and_narrow(mirror):
    kw = load_responses("battery:keep_withdraw")
    assert set(kw["probe"]) == {"keep_withdraw"} and kw["model"].nunique() == 20
    assert kw.attrs["label"] == "Battery"
    assert load_responses("atlas")["model"].nunique() == 33


def test_schema_conform_refuses_partial_credit_and_names_bad_casts():
    base = {"model": ["a", "b"], "item_id": ["1", "2"], "probe": "p", "confidence": [.5, .5]}
    with pytest.raises(ValueError, match="'correct' must be 0, 1 or missing"):
        schema.conform(pd.DataFrame({**base, "correct": [1, 0.5]}))
    with pytest.raises(ValueError, match=r"'confidence' must be float64 .*'x'"):
        schema.conform(pd.DataFrame({**base, "confidence": [.5, "x"], "correct": [1, 0]}))
    ok = schema.conform(pd.DataFrame({**base, "correct": [True, False]}))
    assert ok["correct"].tolist() == [1.0, 0.0]


def test_probe_match_is_the_same_for_categorical_and_text_columns():
    from metacog.data.responses import _equals

    values = ["a", None, "b", "a", "ab", None]
    text = pd.Series(values, dtype="object")
    cat = pd.Series(values, dtype="category")
    expected = [True, False, False, True, False, False]
    assert _equals(text, "a").tolist() == expected
    assert _equals(cat, "a").tolist() == expected
    assert not _equals(cat, "zz").any()


@pytest.mark.parametrize("sep", [";", "\t"])
def test_a_csv_split_by_semicolons_or_tabs_is_read_as_such(tmp_path, sep):
    rows = ["model,item_id,probe,confidence,correct".replace(",", sep),
            *(sep.join([m, f"q{i}", "verbal", f"0.{i + 1}", str(i % 2)]) for m in ("a", "b") for i in range(5))]
    p = tmp_path / "spreadsheet.csv"
    p.write_text("\n".join(rows) + "\n")
    df = load_responses(str(p))
    assert len(df) == 10 and set(df["model"]) == {"a", "b"}
    assert df["confidence"].tolist()[:3] == pytest.approx([0.1, 0.2, 0.3])


def test_a_missing_column_message_says_how_to_fix_it_from_the_command_line(tmp_path):
    p = tmp_path / "short.csv"
    p.write_text("model,item_id,probe,conf,correct\na,q1,verbal,0.5,1\n")
    msg = error(str(p))
    assert "missing required column(s) ['confidence']" in msg
    assert "Rename those columns in the file" in msg and "'conf': 'confidence'" in msg


def test_a_truncated_recording_gets_a_message_naming_the_run_and_the_fix(tmp_path, monkeypatch):
    import shutil

    name = next(n for n, r in recorded.runs().items() if r.path.exists())
    runs_yml = recorded.RESPONSES / "runs.yml"
    whole = recorded.runs()[name].path.read_bytes()
    monkeypatch.setattr(recorded, "RESPONSES", tmp_path)
    shutil.copy(runs_yml, tmp_path / "runs.yml")
    (tmp_path / f"{name}.parquet").write_bytes(whole[: len(whole) // 2])
    msg = error(name)
    assert f"run {name!r} cannot be read" in msg and "truncated" in msg
    assert f"make elicit RUNS={name}" in msg


@pytest.mark.parametrize("encoding, loads", [("utf-8-sig", True), ("utf-16", False), ("latin-1", False)])
def test_file_encodings_load_or_get_a_message_saying_to_save_as_utf8(tmp_path, encoding, loads):
    text = ("model,item_id,probe,confidence,correct\n"
            + "".join(f"modèle-{m},q{i},verbal,0.{i + 1},{i % 2}\n" for m in (1, 2) for i in range(3)))
    p = tmp_path / f"{encoding}.csv"
    p.write_bytes(text.encode(encoding))
    if loads:  # a byte-order mark is fine, and accents survive
        assert set(load_responses(str(p))["model"]) == {"modèle-1", "modèle-2"}
    else:
        msg = error(str(p))
        assert f"{encoding}.csv" in msg and "save it as UTF-8" in msg
