"""The recorded hidden-state study (data/probe/) stays reachable and is paper 2's design: the CC /
OCW groups are inherited from one frozen audit log (the most accurate audit answerer's C0 answers),
the same item texts run through every probed model, and every file in data/probe/ is a batch of the
design the miscalibration chapter's parameter set asks for (its cache key), so the book replays every
model recorded in full without recomputing (and without torch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog import probe, settings

import yaml

from metacog.hypotheses.miscalibration import hidden
from metacog.hypotheses.miscalibration.sources import policy_frames

from metacog.probe import study
from metacog.benchmarks import audit
from metacog.stats import bootstrap_difference

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "data" / "probe"
#: The miscalibration chapter's parameter set (notebooks/manifest.yml).
PARAMS = yaml.safe_load((ROOT / "notebooks" / "manifest.yml").read_text())["parameter_sets"]["miscalibration-default"]
MODELS = tuple(PARAMS["probe_models"])
#: The first batch (4 CC items) of SmolLM2-135M's plain-prompt condition, as recorded by `make probe`.
SMOL_PLAIN = "dc3b45ac4ac7e1b864c4270fe0dc0e25c94397b91b5f1a7fdebb790a61c725ad"


@pytest.fixture(scope="module")
def groups():
    who = hidden.group_answerer(PARAMS["probe_run"], seed=PARAMS["seed"])
    return hidden.probe_groups(PARAMS["group_run"], who["model"], n_per_group=PARAMS["n_per_group"],
                               seed=PARAMS["seed"], threshold=PARAMS["threshold"])


@pytest.fixture(scope="module")
def items():
    return audit.load_frame()


def _study_keys(model, groups, items, n_sweep) -> set[str]:
    ids = list(groups["item_id"])
    chosen = items[items["item_id"].astype(str).isin(ids)][["item_id", "question"]]
    sha = probe.model_sha256(study.network(model))
    conditions = [probe.build_prompts(chosen, "c0").loc[ids], probe.build_prompts(chosen, "c2").loc[ids],
                  probe.length_control(chosen, "c0", "c2").loc[ids]]
    keys = {probe.probe_key(sha, p.loc[b], probe.SIGMA, probe.N_TRIALS, 0)[0]
            for p in conditions for b in study.chunks(groups)}
    keys |= {probe.probe_key(sha, conditions[0].loc[b], s, probe.N_TRIALS, 0)[0]
             for s in study.SWEEP_SIGMAS if s != probe.SIGMA for b in study.chunks(groups, n_sweep)}
    return keys


def test_groups_are_the_most_accurate_audit_answerers_confident_c0_answers(groups):
    answerers = hidden.audit_answerers(PARAMS["probe_run"], seed=PARAMS["seed"])
    best = answerers.iloc[0]
    assert not best["at_chance"] and (answerers["accuracy"].iloc[1:] < best["accuracy"]).all()
    assert set(groups["answerer"]) == {best["model"]} and set(groups["run"]) == {PARAMS["group_run"]}
    n = PARAMS["n_per_group"]
    assert groups["group"].value_counts().to_dict() == {"CC": n, "OCW": n}
    # each item's group is what the answerer's own C0 log says: confident (>= 0.8), right or wrong
    log = policy_frames([PARAMS["group_run"]], read_p_yes=True, seed=PARAMS["seed"]).frames[PARAMS["group_run"]]
    c0 = log[(log["model"] == best["model"]) & (log["probe"] == "c0")].set_index("item_id")
    rows = c0.loc[groups["item_id"]]
    assert (rows["confidence"].to_numpy() >= PARAMS["threshold"]).all()
    assert (rows["correct"].to_numpy() == (groups["group"] == "CC").to_numpy()).all()
    assert (rows["decision"].isin(["yes", "no"])).all()


def test_every_probed_model_reads_the_same_item_texts_from_the_log(groups, items, monkeypatch):
    seen = {}

    def fake_probe(model, prompts, sigma, n_trials=40, seed=0, **kw):
        seen.setdefault(model, []).append((float(sigma), dict(prompts)))
        return pd.DataFrame({"model": model, "prompt_id": list(prompts.index), "layer": 1,
                             "displacement": sigma * (1 + len(model)), "sigma": sigma})

    monkeypatch.setattr(study, "probe_cached", fake_probe)
    studies = hidden.probe_studies(groups, MODELS, items, n_sweep=PARAMS["n_sweep"], seed=PARAMS["seed"],
                                   compute=True)
    assert list(studies) == list(MODELS)
    ids = list(groups["item_id"])
    for m, st in studies.items():
        assert list(st.groups["item_id"]) == ids  # the log's groups, not the model's answers
        for cond in ("plain", "self_critique", "length_control"):
            got = st.probe[st.probe["condition"] == cond]
            assert sorted(got["prompt_id"]) == sorted(ids)
            assert (got.set_index("prompt_id")["group"].loc[ids].to_numpy() == groups["group"].to_numpy()).all()
    # the same prompt texts went to every network at the paper's sigma (three prompts per item)
    at_sigma = {study.network(m): {(i, repr(t)) for sg, p in calls if sg == probe.SIGMA for i, t in p.items()}
                for m, calls in seen.items()}
    assert set(at_sigma) == {study.network(m) for m in MODELS}
    first = next(iter(at_sigma.values()))
    assert len(first) == 3 * len(ids) and all(v == first for v in at_sigma.values())
    # the sweep's plain rows at sigma are the plain condition's own rows
    st = studies[MODELS[0]]
    at = st.sweep[st.sweep["sigma"] == probe.SIGMA]
    plain = st.probe[st.probe["condition"] == "plain"].set_index("prompt_id")
    assert (at.set_index("prompt_id")["displacement"] == plain.loc[at["prompt_id"], "displacement"]).all()


def test_groups_do_not_depend_on_the_probed_model_or_its_answers(groups):
    # paper 2: the groups come from the frozen log, never from a probed model's own answers
    again = hidden.probe_groups(PARAMS["group_run"], groups["answerer"].iloc[0],
                                n_per_group=PARAMS["n_per_group"], seed=PARAMS["seed"],
                                threshold=PARAMS["threshold"])
    pd.testing.assert_frame_equal(again, groups)
    smaller = hidden.probe_groups(PARAMS["group_run"], groups["answerer"].iloc[0], n_per_group=4,
                                  seed=PARAMS["seed"], threshold=PARAMS["threshold"])
    # a smaller draw is the first items of the larger one, so its batches are recorded already
    for g in ("CC", "OCW"):
        assert list(smaller.loc[smaller["group"] == g, "item_id"]) == \
            list(groups.loc[groups["group"] == g, "item_id"])[:4]
    assert study.chunks(smaller) == [b for b in study.chunks(groups) if b[0] in set(smaller["item_id"])]


def _recorded(groups, items):
    """({model: its batch keys}, the committed keys)."""
    keys = {m: _study_keys(m, groups, items, hidden.per_model(PARAMS["n_sweep"], m, "n_sweep")) for m in MODELS}
    return keys, {p.stem for p in RECORDED.glob("*.parquet")}


def test_every_recorded_file_is_a_batch_of_the_study(groups, items):
    keys, committed = _recorded(groups, items)
    union = set().union(*keys.values())
    assert committed <= union, f"{len(committed - union)} file(s) in data/probe/ belong to no batch of the study"
    assert committed, "data/probe/ holds no batch of the study"
    for m, k in keys.items():  # 3 prompts x batches, and the sweep's other sigmas x its batches
        n_sweep = hidden.per_model(PARAMS["n_sweep"], m, "n_sweep")
        assert len(k) == 3 * len(study.chunks(groups)) + 3 * len(study.chunks(groups, n_sweep))


def test_key_of_a_known_batch_is_its_committed_file_name(groups, items):
    first = study.chunks(groups)[0]
    chosen = items[items["item_id"].astype(str).isin(first)][["item_id", "question"]]
    plain = probe.build_prompts(chosen, "c0").loc[first]
    key, spec = probe.probe_key(probe.model_sha256("smollm2-135m"), plain, 0.01, 40, 0)
    assert key == SMOL_PLAIN
    assert (RECORDED / f"{SMOL_PLAIN}.parquet").is_file()
    recorded = (RECORDED / f"{SMOL_PLAIN}.json").read_text()
    assert spec["prompts_sha256"] in recorded and spec["model_sha256"] in recorded


def test_probe_settings_name_a_missing_model_or_p_yes_answerer():
    with pytest.raises(ValueError, match="n_sweep has no entry for probed model 'x'"):
        hidden.per_model({"y": 3}, "x", "n_sweep")
    assert hidden.per_model(7, "x", "n_sweep") == 7
    with pytest.raises(ValueError, match="no P\\(Yes\\) answers for .*nobody · P\\(Yes\\)"):
        hidden.probe_log("audit_policies", ["nobody · P(Yes)"])
    with pytest.raises(ValueError, match="no C0 rows for answerer 'local/nobody'"):
        hidden.probe_groups("audit_full", "nobody")
    assert hidden.recorded_sentence(["a", "b"], ["a", "b"]) == ""
    assert hidden.recorded_sentence(["a"], []).startswith("Not yet recorded: a, so it is left out")
    text = hidden.recorded_sentence(["a", "b c", "d"], ["a"])
    assert text.startswith("Recorded on these groups so far: a. Not yet recorded: b c and d, so they are")
    assert "`metacog probe 'b c' d`" in text


def test_study_replays_from_the_default_folder_without_recomputing(groups, items, monkeypatch):
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
    keys, committed = _recorded(groups, items)
    complete = [m for m in MODELS if keys[m] <= committed]
    studies = hidden.probe_studies(groups, MODELS, items, n_sweep=PARAMS["n_sweep"], seed=PARAMS["seed"],
                                   skip_missing=True)
    assert list(studies) == complete  # a model with a batch missing is left out, never recomputed
    assert "smollm2-135m" in complete  # recorded in full on the audit log's groups (runs.yml)
    for m, st in studies.items():
        assert set(st.probe["condition"]) == {"plain", "self_critique", "length_control"}
        assert sorted(st.sweep["sigma"].unique()) == sorted(study.SWEEP_SIGMAS)
        assert list(st.groups["item_id"]) == list(groups["item_id"])
        assert st.probe.groupby("condition")["prompt_id"].nunique().eq(2 * PARAMS["n_per_group"]).all()
    first = study.chunks(groups)[0]  # a recorded batch replays on its own
    chosen = items[items["item_id"].astype(str).isin(first)][["item_id", "question"]]
    t = probe.probe_cached("smollm2-135m", probe.build_prompts(chosen, "c0").loc[first], compute=False)
    assert t.attrs["from_cache"] and sorted(t["prompt_id"].unique()) == sorted(first)


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
