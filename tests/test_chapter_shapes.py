"""Every hypothesis chapter on response files of shapes the book was never written against.

The files are simulated (:func:`metacog.power.examples.example_responses`) and reshaped the way
a new user's file might be: two models; 30 models × 3 benchmarks with no ``domain`` and no
``n_options``; two confidence probes with many ties at 1.0; model names without "/"; 14 models ×
5 benchmarks with two probes and neither optional column. Each chapter is executed and
rendered with ``metacog chapter`` (small resample counts) on at least three of them, and its
page is scanned (:func:`metacog.pages.hygiene.scan_html`, strict) for tracebacks, empty figures
and tables, sources the run was not given, reprs, float noise and machine paths.

The chapters' Exercises sections are left out of the scan: they belong to the exercise pages'
own review (they are written against the default sources). A crash anywhere, exercises
included, fails the run.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog import chapter
from metacog.pages.hygiene import scan_html
from metacog.power.examples import example_responses, write_responses

#: Resample counts small enough to keep each chapter well under a minute on two cores.
SMALL = {
    "rank_one": {"n_boot": 30, "pa_iterations": 5},
    "pairwise": {"n_permutations": 49, "n_boot": 30, "n_null": 30},
    "shortcut": {"n_boot": 30},
    "power": {"n_sims": 10, "n_sims_factor": 2, "kappas": [0.0, 0.4], "n_models_grid": [5, 10],
              "n_items_grid": [100], "n_recovery_seeds": 2, "n_perm": 19, "n_null": 20, "n_boot": 20,
              "local_items": [40], "local_kappas": [0.0, 0.8]},
    "miscalibration": {"n_boot": 30, "n_perm": 19},
    "reasoning_text": {"n_boot": 30},
}


def _two_probes(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    """``df`` plus a second probe whose confidence piles up at 1.0 (a 'certain' habit)."""
    rng = np.random.default_rng(seed)
    second = df.copy()
    c = second["confidence"].to_numpy()
    noisy = np.round(np.clip(c + rng.normal(0, 0.1, len(c)), 0, 1), 1)
    second["confidence"] = np.where(c >= 0.55, 1.0, noisy)
    second["probe"] = "stated_certainty"
    return pd.concat([df, second], ignore_index=True)


def make_shapes(folder: Path) -> dict[str, Path]:
    """The five files: name -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    two = example_responses(n_models=3, n_items=40, seed=1)
    two = two[two["model"] != "model-03"]
    thirty = example_responses(n_models=30, n_items=30, seed=2).drop(columns=["domain"])
    ties = _two_probes(example_responses(n_models=6, n_items=40, seed=3), 3)
    ties["confidence"] = np.where(ties["confidence"] >= 0.6, 1.0, ties["confidence"])
    plain = example_responses(n_models=5, n_items=40, seed=4)
    plain["model"] = plain["model"].map({"model-01": "GPT 4o", "model-02": "llama3.1-8b",
                                         "model-03": "Claude_Sonnet", "model-04": "qwen", "model-05": "M5"})
    fourteen = _two_probes(example_responses(n_models=14, n_items=30, seed=5,
                                             benchmarks=("algebra", "history", "law", "chemistry", "poetry")),
                           5).drop(columns=["domain"])
    frames = {"two_models.csv": two, "thirty_models.parquet": thirty, "ties.csv": ties,
              "plain_names.jsonl": plain, "fourteen_by_five.parquet": fourteen}
    return {name: write_responses(df, folder / name) for name, df in frames.items()}


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    return make_shapes(tmp_path_factory.mktemp("shapes") / "my files")


def test_the_shapes_are_what_they_claim(shapes):
    from metacog.data import load_responses

    two, thirty, ties, plain, fourteen = (load_responses(shapes[n]) for n in (
        "two_models.csv", "thirty_models.parquet", "ties.csv", "plain_names.jsonl", "fourteen_by_five.parquet"))
    assert two["model"].nunique() == 2
    assert thirty["model"].nunique() == 30 and thirty["benchmark"].nunique() == 3
    for df in (thirty, fourteen):
        assert df["domain"].isna().all() and "n_options" not in df
    tied = ties[ties["probe"] == "stated_certainty"]
    assert ties["probe"].nunique() == 2 and (tied["confidence"] == 1.0).mean() > 0.4
    assert not plain["model"].str.contains("/").any()
    assert fourteen["model"].nunique() == 14 and fourteen["benchmark"].nunique() == 5
    assert fourteen["probe"].nunique() == 2


def _findings(page: Path, source: Path, n_models: int) -> pd.DataFrame:
    return scan_html(page.parent, strict=True, sources=[source.name], model_counts=[n_models],
                     skip_sections=("exercises",))


def _run(name: str, source: Path, out: Path) -> Path:
    return chapter.run(name, [str(source)], out, parameters=SMALL[name]).page


#: chapter -> the shapes it is rendered on (at least three each). Two models are too few for
#: the chapters that compare models across a panel; those refuse the file up front (below).
CASES = {
    "rank_one": ("thirty_models.parquet", "ties.csv", "fourteen_by_five.parquet"),
    "pairwise": ("thirty_models.parquet", "plain_names.jsonl", "fourteen_by_five.parquet"),
    "shortcut": ("two_models.csv", "thirty_models.parquet", "fourteen_by_five.parquet"),
    "power": ("thirty_models.parquet", "ties.csv", "plain_names.jsonl"),
    "miscalibration": ("two_models.csv", "ties.csv", "plain_names.jsonl", "fourteen_by_five.parquet"),
    "reasoning_text": ("two_models.csv", "thirty_models.parquet", "fourteen_by_five.parquet"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name, shape", [(c, s) for c, shapes_ in CASES.items() for s in shapes_])
def test_chapter_renders_cleanly_on_a_file_of_another_shape(name, shape, shapes, tmp_path, monkeypatch):
    from metacog.data import load_responses

    monkeypatch.setenv("METACOG_NO_MEMO", "1")  # compute afresh: a warning shows only when computed
    source = shapes[shape]
    page = _run(name, source, tmp_path / "out")  # a failing cell raises BookError
    found = _findings(page, source, load_responses(source)["model"].nunique())
    assert found.empty, "\n" + found.to_string(index=False, max_colwidth=110)
    html = page.read_text()
    assert str(source.parent) not in html and "my files" not in html  # the file by its name only
    if name in ("rank_one", "pairwise", "power", "shortcut"):
        # the panels' designs are unknown: never called "after answering" on the file's word
        assert "the data do not say when" in html or "unknown" in html


@pytest.mark.parametrize("name", ["rank_one", "pairwise", "power"])
def test_two_models_are_refused_up_front_in_one_sentence(name, shapes, tmp_path):
    with pytest.raises(chapter.ChapterInputError) as err:
        _run(name, shapes["two_models.csv"], tmp_path / "out")
    msg = str(err.value)
    assert "two_models.csv" in msg and "at least 3" in msg and "\n" not in msg
    assert not (tmp_path / "out").exists()  # stopped before anything executed


# --- the pieces the chapters above rely on, each checked on its own (fast) ---

def test_vendor_comparison_says_unknown_for_names_without_a_vendor(tmp_path):
    from metacog.hypotheses import pairwise as hp
    from metacog.hypotheses.panels import panels

    df = example_responses(n_models=6, n_items=40, seed=0, benchmarks=("algebra",))
    out = hp.vendor_blocks(panels([str(write_responses(df, tmp_path / "plain.csv"))]).panels)
    assert list(out.columns) == ["result"]
    assert "vendor is unknown for 6 models" in out["result"].iloc[0]
    named = hp.model_vendors(["openai/gpt-4o", "openai/o3", "meta/llama", "model-01"])
    assert named.tolist() == ["openai", "openai", "meta", None]


def test_heat_maps_keep_negative_values_on_a_scale_centred_at_zero(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from metacog.hypotheses import figures
    from metacog.hypotheses.panels import panels

    df = example_responses(n_models=6, n_items=60, seed=7, benchmarks=("algebra",))
    # one model's confidence runs against everyone else's: negative correlations
    flip = df["model"] == "model-01"
    df.loc[flip, "confidence"] = 1 - df.loc[flip, "confidence"]
    ps = panels([str(write_responses(df, tmp_path / "against.csv"))])
    for make in (figures.correlation_heatmap, figures.calibration_heatmap):
        fig, _ = make(ps, 5)
        mesh = fig.axes[0].collections[0]
        lo, hi = mesh.norm.vmin, mesh.norm.vmax
        assert lo < 0 < hi and np.isclose(-lo, hi), (make.__name__, lo, hi)
        assert np.nanmin(mesh.get_array()) >= lo  # nothing clipped
        matplotlib.pyplot.close(fig)


def test_a_figure_without_data_is_replaced_by_a_sentence(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from metacog.hypotheses import figures

    glued = {}
    monkeypatch.setattr("myst_nb.glue", lambda key, value, display=True: glued.__setitem__(key, value))
    fig, ax = plt.subplots()
    ax.axvline(0)  # reference lines are not data
    ax.axhline(0.25, ls="--")
    figures.glue_figure("f", fig, "A caption.", empty="No panel has two models")
    assert "Figure" not in type(glued["f"]).__name__
    assert glued["f_caption"] == "No panel has two models; there is nothing to draw."
    fig, ax = plt.subplots()
    ax.scatter([1, 2], [3, 4])
    figures.glue_figure("g", fig, "A caption.")
    assert type(glued["g"]).__name__ == "Figure" and glued["g_caption"] == "A caption."


def test_models_without_a_chance_level_are_named_not_passed_as_gated():
    from metacog.hypotheses import miscalibration as hm
    from metacog.hypotheses.adequacy import adequacy, ungated, ungated_sentence

    df = example_responses(n_models=4, n_items=40, seed=2, benchmarks=("algebra",))
    a = adequacy(df, probe="verbal_confidence")
    assert sorted(ungated(a)) == sorted(df["model"].unique())
    assert ungated_sentence(a).startswith("Chance is unknown for model-01, model-02, model-03 and model-04")
    shown = hm.display_gate(a.assign(at_chance=~a["carries_signal"]))
    assert set(shown["chance"]) == {"unknown"}
    assert set(shown["in the verdicts"]) == {"yes, not gated: chance unknown"}
    with_k = adequacy(df.assign(n_options=4), probe="verbal_confidence")
    assert ungated(with_k) == [] and ungated_sentence(with_k) == ""


def test_timing_sentence_names_only_the_run_and_says_when_unknown():
    from metacog.hypotheses.by_design import timing_sentence

    t = pd.DataFrame({"panel": ["mine · a", "mine · b"], "timing": ["unknown", "unknown"]})
    s = timing_sentence(t)
    assert s == "Of this run's panels, for mine · a and mine · b the data do not say when the judgment was made."
    assert "after answering" not in s


def test_quantities_never_shows_a_float_or_list_repr():
    from metacog.hypotheses.miscalibration.dynamics import stable_but_wrong
    from metacog.tidy.report import quantities

    shown = quantities(stable_but_wrong().summary()).set_index("quantity")["value"]
    assert shown["decision margin at fixed point"] == "\u22120.250"
    assert shown["fixed point"] == "(\u22120.250, 0.900)"
    assert shown["fixed point in wrong region"] == "yes"
