"""One contract per idea (issue #15): every result's ``summary()`` is a DataFrame, every
interval is ``ci_low``/``ci_high``, and the package has one AUROC."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog import stats
from metacog.hypotheses.panels import panels

PACKAGE = Path(__file__).resolve().parents[1] / "metacog"


def _rng_pairs(n=200, seed=0):
    rng = np.random.default_rng(seed)
    conf = rng.uniform(size=n)
    return conf, (rng.uniform(size=n) < conf).astype(float)


def test_calibration_and_metad_summaries_are_one_row_frames():
    conf, corr = _rng_pairs()
    b, e = stats.brier(corr, conf), stats.ece(corr, conf)
    sb, se = b.summary(), e.summary()
    assert isinstance(sb, pd.DataFrame) and len(sb) == 1
    assert sb.loc[0, "brier"] == pytest.approx(b.brier) and sb.loc[0, "n"] == 200
    assert isinstance(se, pd.DataFrame) and se.loc[0, "ece"] == pytest.approx(e.ece)
    m = stats.metad([30, 20, 10, 5, 3, 2], [2, 3, 5, 10, 20, 30]).summary()
    assert isinstance(m, pd.DataFrame) and len(m) == 1 and m.loc[0, "dprime"] > 0


def test_panel_summary_is_a_frame_and_row_feeds_the_panel_set(tmp_path):
    rng = np.random.default_rng(1)
    rows = [(f"m{j}", f"i{i}", "b", "verbal_confidence", 0, float(rng.uniform()), int(rng.integers(2)))
            for j in range(4) for i in range(30)]
    path = tmp_path / "p.csv"
    pd.DataFrame(rows, columns=["model", "item_id", "benchmark", "probe", "sample", "confidence",
                                "correct"]).to_csv(path, index=False)
    ps = panels([str(path)])
    one = ps.panels[0]
    s = one.summary()
    assert isinstance(s, pd.DataFrame) and len(s) == 1
    assert s.iloc[0].to_dict() == one.row()
    assert ps.summary().iloc[0].to_dict() == one.row()
    assert one.row()["models"] == 4 and one.row()["items"] == 30


def test_bootstrap_tables_name_their_interval_ci_low_ci_high():
    conf, corr = _rng_pairs()
    t = stats.bootstrap_ci(lambda c, y: stats.auroc(y, c), conf, corr, n_boot=100)
    assert {"ci_low", "ci_high"} <= set(t.columns) and not {"lo", "hi"} & set(t.columns)
    assert (t["ci_low"] <= t["estimate"]).all() and (t["estimate"] <= t["ci_high"]).all()


def test_one_auroc_labels_first_nan_for_one_class():
    y = [0, 0, 1, 1, np.nan]
    assert stats.auroc(y, [0.1, 0.4, 0.35, 0.8, 0.5]) == pytest.approx(0.75)  # the NaN pair is dropped
    assert np.isnan(stats.auroc([1, 1, 1], [0.2, 0.5, 0.9]))
    assert np.isnan(stats.auroc_ci([1, 1, 1], [0.2, 0.5, 0.9]).estimate)
    with pytest.raises(ValueError):
        stats.auroc([0, 1], [0.2, 0.5, 0.9])


def _defs(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_no_second_auroc_and_every_summary_is_annotated_as_a_frame():
    """``summary()`` always returns a DataFrame (PrettyTable is one); a one-line text is ``describe()``."""
    second, dict_summaries = [], []
    for f in PACKAGE.rglob("*.py"):
        rel = f.relative_to(PACKAGE.parent).as_posix()
        tree = ast.parse(f.read_text())
        for d in _defs(tree):
            if d.name == "auroc" and rel != "metacog/stats/calibration.py":
                second.append(f"{rel}:{d.lineno}")
            if d.name == "summary":
                ann = ast.unparse(d.returns) if d.returns is not None else ""
                if not any(k in ann for k in ("DataFrame", "PrettyTable")):
                    dict_summaries.append(f"{rel}:{d.lineno} returns {ann or 'unannotated'}")
        if "roc_auc_score" in f.read_text():
            second.append(f"{rel}: roc_auc_score")
    assert second == []
    assert dict_summaries == []
