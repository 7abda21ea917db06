"""metacog.hypotheses.panels on a small synthetic tidy table with a planted structure, and on the real logs."""

import numpy as np
import pandas as pd
import pytest

from metacog import stats
from metacog.hypotheses.panels import panels

MODELS = ["m1", "m2", "m3", "m4"]


def toy(tmp_path, name="toy.csv"):
    """Two benchmarks. On 'big' (60 items) every model's verbal confidence tracks its OWN
    correctness (planted self-knowledge); 'small' has 6 items. A binary 'prospective' probe
    whose rows lack correctness takes it from the 'answer' rows; 'ghost' has no answers."""
    rng = np.random.default_rng(3)
    rows = []
    for bench, n in (("big", 60), ("small", 6)):
        for m in MODELS:
            correct = (rng.random(n) < 0.5).astype(int)
            conf = np.clip(0.3 + 0.4 * correct + rng.normal(0, 0.1, n), 0, 1).round(3)
            for i in range(n):
                item = f"{bench}{i}"
                rows.append((m, item, bench, "verbal_confidence", 0, conf[i], correct[i]))
                rows.append((m, item, bench, "answer", 0, np.nan, correct[i]))
                rows.append((m, item, bench, "prospective", 0, float(correct[i] if i % 3 else 1 - correct[i]),
                             np.nan))
                rows.append((m, item, bench, "verbal_confidence", 1, 0.5, correct[i]))  # a later sample
        for i in range(n):
            rows.append(("ghost", f"{bench}{i}", bench, "prospective", 0, 1.0, np.nan))
    df = pd.DataFrame(rows, columns=["model", "item_id", "benchmark", "probe", "sample", "confidence", "correct"])
    path = tmp_path / name
    df.to_csv(path, index=False)
    return str(path), df


def test_panels_split_binarise_and_align(tmp_path):
    src, raw = toy(tmp_path)
    ps = panels([src])
    names = {(p.benchmark, p.probe) for p in ps}
    assert names == {("big", "verbal_confidence"), ("big", "prospective")}
    verbal = next(p for p in ps if p.probe == "verbal_confidence")
    assert verbal.cut == "median" and verbal.label == "toy"
    assert verbal.name == "toy · big · verbal confidence"
    assert verbal.confidence.shape == (60, 4)
    assert verbal.confidence.index.equals(verbal.correct.index)
    assert verbal.confidence.columns.equals(verbal.correct.columns)
    assert set(np.unique(verbal.confidence.to_numpy())) == {0.0, 1.0}
    assert verbal.cut_report["yes_share"].between(0.4, 0.6).all()
    # sample 1 was left out: its constant 0.5 would show in the raw matrix
    assert (verbal.table["sample"] == 0).all() and not (verbal.confidence_raw == 0.5).all().any()
    # the planted self-knowledge is there after the cut
    t = stats.self_other_test(verbal.confidence, verbal.correct, n_perm=199)
    assert t.statistic > 0.3 and t.p_value < 0.05
    # the raw matrix and the correctness match the file cell by cell
    first = raw[(raw.benchmark == "big") & (raw.probe == "verbal_confidence") & (raw["sample"] == 0)]
    r = first.iloc[7]
    assert verbal.confidence_raw.loc[r.item_id, r.model] == r.confidence
    assert verbal.correct.loc[r.item_id, r.model] == r.correct


def test_correctness_from_answer_rows_and_dropped_models(tmp_path):
    src, raw = toy(tmp_path)
    ps = panels([src])
    pro = next(p for p in ps if p.probe == "prospective")
    assert pro.cut == "binary" and "ghost" not in pro.confidence.columns
    answers = raw[(raw.probe == "answer") & (raw.benchmark == "big")]
    expected = answers.pivot(index="item_id", columns="model", values="correct").astype(float)
    assert pro.correct.equals(expected.loc[pro.correct.index, pro.correct.columns])
    # judgments agree with correctness on 2 items in 3, as planted
    agree = (pro.confidence == pro.correct).to_numpy().mean()
    assert agree == pytest.approx(2 / 3, abs=0.02)
    notes = ps.notes
    ghost = notes[notes.note.str.contains("'ghost' dropped")]
    assert len(ghost) == 2 and ghost.note.str.contains("no correctness").all()
    small = notes[(notes.benchmark == "small") & (notes.probe == "verbal_confidence")]
    assert small.note.str.contains("min_items=10").any()
    assert notes.note.str.contains("only sample 0").any()


def test_cuts_by_label_and_validation(tmp_path):
    src, _ = toy(tmp_path)
    ps = panels([src], cuts={"toy": 0.7})
    verbal = next(p for p in ps if p.probe == "verbal_confidence")
    assert verbal.cut == 0.7
    assert verbal.confidence.equals((verbal.confidence_raw >= 0.7).astype(float))
    assert next(p for p in panels([src], default_cut="0.7") if p.probe == "verbal_confidence").cut == 0.7
    with pytest.raises(ValueError, match="90 looks like a 0\u2013100 scale: use 0.9"):
        panels([src], cuts={src: 90})
    with pytest.raises(ValueError, match="neither a source nor"):
        panels([src], cuts={"other": 0.5})


def test_min_models_probes_and_summary(tmp_path):
    src, _ = toy(tmp_path)
    ps = panels([src], probes=["verbal_confidence"], min_models=5)
    assert len(ps) == 0
    assert ps.notes.note.str.contains("fewer than min_models=5").any()
    ps = panels([src], probes=["verbal_confidence"])
    s = ps.summary()
    assert s.loc[0, ["models", "items"]].tolist() == [4, 60]
    assert s.loc[0, "cut"] == "median" and 0.4 <= s.loc[0, "yes_share_min"] <= s.loc[0, "yes_share_max"] <= 0.6
    assert s.loc[0, "correct_share"] == pytest.approx(np.nanmean(ps.panels[0].correct.to_numpy()))


def test_no_benchmark_column_uses_the_label(tmp_path):
    rng = np.random.default_rng(1)
    rows = [(m, f"i{i}", "c0", float(rng.random() < .5), float(rng.random() < .5)) for m in MODELS for i in range(12)]
    path = tmp_path / "mine.parquet"
    pd.DataFrame(rows, columns=["model", "item_id", "probe", "confidence", "correct"]).to_parquet(path)
    (p,) = panels([str(path)]).panels
    assert p.benchmark == "mine" and p.name == "mine · c0" and p.cut == "binary"


def test_identical_correctness_and_constant_judgments_are_noted(tmp_path):
    rng = np.random.default_rng(2)
    y = (rng.random(15) < 0.5).astype(float)
    rows = [(m, f"i{i}", "c1", 1.0 if m == "m4" else float(rng.random()), y[i])
            for m in MODELS for i in range(15)]
    path = tmp_path / "same.csv"
    pd.DataFrame(rows, columns=["model", "item_id", "probe", "confidence", "correct"]).to_csv(path, index=False)
    ps = panels([str(path)])
    (p,) = ps.panels
    assert any("identical across models" in n for n in p.notes)
    assert any("'m4' says yes on every item" in n for n in p.notes)
    assert p.cut_report.set_index("model").loc["m4", "constant"]


def test_recorded_runs_drop_models_without_correctness():
    ps = panels(["legalbench_sampled", "squad"])
    assert {p.source for p in ps} == {"squad"}
    notes = ps.notes[ps.notes.source == "legalbench_sampled"]
    assert notes.note.str.contains("no correctness").sum() >= 2
    assert notes.note.str.contains("Not built").any()
    squad = next(p for p in ps if p.probe == "prospective")
    assert squad.correct.notna().all().all() and squad.confidence.shape[1] == 3


def test_atlas_and_battery_panels(mirror):
    ps = panels(["atlas", "battery"])
    s = ps.summary().set_index(["source", "probe"])
    assert s.loc[("atlas", "verbal_confidence"), "models"] == 33
    assert s.loc[("atlas", "verbal_confidence"), "items"] == 1500
    assert s.loc[("battery", "keep_withdraw"), "cut"] == "binary"
    assert s.loc[("battery", "keep_withdraw"), ["models", "items"]].tolist() == [20, 524]


def test_reuse_builds_each_source_once_with_the_same_notes(tmp_path, monkeypatch):
    """Inside panels.reuse() (the findings page gathering six chapters) a source is loaded and cut
    once per setting: a second panels() call gets the same panels and the same notes; another cut
    is built anew; outside the block every call builds again."""
    from metacog.hypotheses import panels as module

    src, _ = toy(tmp_path)
    loads = []
    real = module.load_responses
    monkeypatch.setattr(module, "load_responses", lambda s: loads.append(s) or real(s))
    with module.reuse():
        a, b = panels([src]), panels([src])
        c = panels([src], cuts={src: 0.5})
    assert [id(p) for p in a] == [id(p) for p in b] and len(a.panels) > 0
    assert a.notes.equals(b.notes) and len(a.notes) > 0
    assert len(loads) == 2  # the default cut once, the fixed cut once
    seen = {id(p) for p in a}
    assert [p.cut for p in c if p.cut != "binary"] and not seen & {id(p) for p in c}
    d = panels([src])
    assert len(loads) == 3 and not seen & {id(p) for p in d}
    assert module._reused is None
