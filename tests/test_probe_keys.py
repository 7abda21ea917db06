"""The recorded hidden-state study (data/probe/) stays reachable: the probe's cache keys,
computed for the study's design, are exactly the committed file names, so the book replays
every condition without recomputing (and without torch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from metacog import probe, settings

from metacog.data import recorded

from metacog.probe import study
from metacog.benchmarks import audit
from metacog.stats import bootstrap_difference

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "data" / "probe"
MODELS = ("smollm2-135m", "qwen2.5-coder-0.5b")  # the miscalibration chapter's probe_models
#: The plain-prompt condition of SmolLM2-135M, as recorded by `make probe`.
SMOL_PLAIN = "334c076791584d9c24359069b9f595a2886a27b6e4611004b837e6096b6e34b3"


@pytest.fixture(scope="module")
def design():
    return recorded.load("audit_policies"), audit.load_frame()


def _study_keys(model, responses, items) -> set[str]:
    groups = study.select_items(responses, f"local/{model}")
    ids = list(groups["item_id"])
    chosen = items[items["item_id"].astype(str).isin(ids)][["item_id", "question"]]
    sha = probe.model_sha256(model)
    conditions = [probe.build_prompts(chosen, "c0").loc[ids], probe.build_prompts(chosen, "c2").loc[ids],
                  probe.length_control(chosen, "c0", "c2").loc[ids]]
    keys = {probe.probe_key(sha, p, probe.SIGMA, probe.N_TRIALS, 0)[0] for p in conditions}
    sweep = conditions[0].loc[ids[:4]]
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


def test_every_recorded_file_is_a_condition_of_the_study(design):
    responses, items = design
    keys = set().union(*(_study_keys(m, responses, items) for m in MODELS))
    committed = {p.stem for p in RECORDED.glob("*.parquet")}
    assert len(keys) == 2 * (3 + len(study.SWEEP_SIGMAS))
    assert keys == committed


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
