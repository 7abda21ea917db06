"""The recorded hidden-state study (data/probe/) stays reachable: the probe's cache keys,
computed for the study's design as the miscalibration chapter's parameter set asks for it (its
probe_models, per-model n_per_group and n_sweep, the log of :func:`probe_log`), are exactly the
committed file names, so the book replays every condition without recomputing (and without
torch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from metacog import probe, settings

import yaml

from metacog.data import recorded
from metacog.hypotheses.miscalibration import hidden

from metacog.probe import study
from metacog.benchmarks import audit
from metacog.stats import bootstrap_difference

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "data" / "probe"
#: The miscalibration chapter's parameter set (notebooks/manifest.yml).
PARAMS = yaml.safe_load((ROOT / "notebooks" / "manifest.yml").read_text())["parameter_sets"]["miscalibration-default"]
MODELS = tuple(PARAMS["probe_models"])
#: The plain-prompt condition of SmolLM2-135M, as recorded by `make probe`.
SMOL_PLAIN = "334c076791584d9c24359069b9f595a2886a27b6e4611004b837e6096b6e34b3"


@pytest.fixture(scope="module")
def design():
    return recorded.load("audit_policies"), audit.load_frame()


@pytest.fixture(scope="module")
def chapter_log():
    return hidden.probe_log(PARAMS["probe_run"], MODELS, seed=PARAMS["seed"])


def _study_keys(model, responses, items, n_per_group: int = 8, n_sweep: int = 4) -> set[str]:
    groups = study.select_items(responses, f"local/{model}", n_per_group)
    ids = list(groups["item_id"])
    chosen = items[items["item_id"].astype(str).isin(ids)][["item_id", "question"]]
    sha = probe.model_sha256(study.network(model))
    conditions = [probe.build_prompts(chosen, "c0").loc[ids], probe.build_prompts(chosen, "c2").loc[ids],
                  probe.length_control(chosen, "c0", "c2").loc[ids]]
    keys = {probe.probe_key(sha, p, probe.SIGMA, probe.N_TRIALS, 0)[0] for p in conditions}
    sweep = conditions[0].loc[ids[:n_sweep]]
    keys |= {probe.probe_key(sha, sweep, s, probe.N_TRIALS, 0)[0] for s in study.SWEEP_SIGMAS}
    return keys


def test_key_of_a_known_condition_is_its_committed_file_name(design):
    responses, items = design
    ids = list(study.select_items(responses, "local/smollm2-135m")["item_id"])
    chosen = items[items["item_id"].astype(str).isin(ids)][["item_id", "question"]]
    plain = probe.build_prompts(chosen, "c0").loc[ids]
    key, spec = probe.probe_key(probe.model_sha256("smollm2-135m"), plain, 0.01, 40, 0)
    assert key == SMOL_PLAIN
    assert (RECORDED / f"{SMOL_PLAIN}.parquet").is_file()
    recorded = (RECORDED / f"{SMOL_PLAIN}.json").read_text()
    assert spec["prompts_sha256"] in recorded and spec["model_sha256"] in recorded


def test_every_recorded_file_is_a_condition_of_the_study(design, chapter_log):
    _, items = design
    keys = set().union(*(_study_keys(m, chapter_log, items,
                                     hidden.per_model(PARAMS["n_per_group"], m, "n_per_group"),
                                     hidden.per_model(PARAMS["n_sweep"], m, "n_sweep")) for m in MODELS))
    committed = {p.stem for p in RECORDED.glob("*.parquet")}
    assert len(keys) == len(MODELS) * (3 + len(study.SWEEP_SIGMAS))
    assert keys == committed


def test_a_p_yes_answerer_is_probed_on_its_own_model_with_groups_from_its_p_yes():
    answerer = "qwen2.5-coder-1.5b · P(Yes)"
    chapter_log = hidden.probe_log(PARAMS["probe_run"], [*MODELS, answerer], seed=PARAMS["seed"])
    assert study.network(f"local/{answerer}") == "qwen2.5-coder-1.5b"
    mine = chapter_log[chapter_log["model"] == f"local/{answerer}"]
    words = chapter_log[chapter_log["model"] == "local/qwen2.5-coder-1.5b"]
    assert len(mine) and len(words)
    groups = study.select_items(chapter_log, f"local/{answerer}", 5)
    assert groups["group"].value_counts().to_dict() == {"CC": 5, "OCW": 5}
    # the groups come from the P(Yes) answers (confidence max(q, 1 - q) >= 0.8), not from the words
    c0 = mine[mine["probe"] == "c0"].set_index("item_id")
    assert (c0.loc[groups["item_id"], "confidence"].to_numpy() >= probe.HIGH_CONFIDENCE).all()
    assert (c0.loc[groups["item_id"], "correct"].to_numpy() == (groups["group"] == "CC").to_numpy()).all()


def test_probe_settings_name_a_missing_model_or_p_yes_answerer():
    with pytest.raises(ValueError, match="n_per_group has no entry for probed model 'x'"):
        hidden.per_model({"y": 3}, "x", "n_per_group")
    assert hidden.per_model(7, "x", "n_sweep") == 7
    with pytest.raises(ValueError, match="no P\\(Yes\\) answers for .*nobody · P\\(Yes\\)"):
        hidden.probe_log("audit_policies", ["nobody · P(Yes)"])
    assert hidden.sizes_sentence(["a", "b", "c"], {"a": 8, "b": 8, "c": 5}) == "8 (a and b) and 5 (c)"
    assert hidden.sizes_sentence(["a"], 8) == "8"


def test_study_replays_from_the_default_folder_without_recomputing(design, monkeypatch):
    from metacog.probe import cache

    def boom(*a, **k):
        raise AssertionError("recomputed instead of reading data/probe/")

    monkeypatch.setattr(cache.loading, "load_model", boom)
    monkeypatch.setattr(cache.noise, "noise_probe", boom)
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    monkeypatch.delenv(settings.DATA_ENV, raising=False)
    monkeypatch.delenv(settings.ROOT_ENV, raising=False)
    assert probe.cache_dir() == RECORDED
    responses, items = design
    st = study.study("smollm2-135m", responses, items, compute=False)
    assert set(st.probe["condition"]) == {"plain", "self_critique", "length_control"}
    assert sorted(st.sweep["sigma"].unique()) == sorted(study.SWEEP_SIGMAS)


def test_cache_folder_follows_the_data_dir_and_names_the_variables(tmp_path, monkeypatch):
    from metacog.probe import cache

    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    monkeypatch.setenv(settings.DATA_ENV, str(tmp_path))
    assert probe.cache_dir() == tmp_path / "probe"
    with pytest.raises(FileNotFoundError, match="METACOG_PROBE_CACHE.*METACOG_DATA_DIR"):
        probe.probe_cached("smollm2-135m", ["Is it?"], compute=False)
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "elsewhere"))
    assert probe.cache_dir() == tmp_path / "elsewhere"


def test_bootstrap_difference_resamples_each_sample_on_its_own():
    rng = np.random.default_rng(3)
    a, b = rng.normal(1.0, 1.0, (40, 3)), rng.normal(0.0, 1.0, (25, 3))
    res = bootstrap_difference(lambda s: s.mean(axis=-2), a, b, n_boot=800, seed=2)
    assert res.estimate == pytest.approx(a.mean(0) - b.mean(0))
    assert res.n_items == 65 and res.draws.shape == (800, 3)
    # the interval is about +-1.96 standard errors of a difference of independent means
    se = np.sqrt(a.var(0, ddof=1) / 40 + b.var(0, ddof=1) / 25)
    assert res.se == pytest.approx(se, rel=0.15)
    assert ((res.ci_low < res.estimate) & (res.estimate < res.ci_high)).all()
    again = bootstrap_difference(lambda s: s.mean(axis=-2), a, b, n_boot=800, seed=2)
    assert np.array_equal(res.draws, again.draws)
