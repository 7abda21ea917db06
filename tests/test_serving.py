"""metacog.hypotheses.serving: which chapters a response file serves, judged from its data with the
chapters' own minimums, and each chapter's parameters re-aimed at it (nothing is executed here)."""

import numpy as np
import pandas as pd
import pytest

from metacog.data.files import split_probe
from metacog.hypotheses import pairwise, power, rank_one, serving, shortcut
from metacog.hypotheses.reasoning_text import MIN_CLASS
from metacog.power.examples import example_responses, write_responses


def frames_of(tmp_path, df, name="panel.csv"):
    path = tmp_path / name
    write_responses(df, path) if "benchmark" in df else df.to_csv(path, index=False)
    return serving.load([str(path)])


def test_minimums_are_the_chapters_own_constants():
    need = serving.minimums()
    assert need["rank_one"] == (rank_one.MIN_MODELS, rank_one.MIN_ITEMS)
    assert need["pairwise"][0] == pairwise.MIN_MODELS and need["power"] == (power.MIN_MODELS, power.MIN_ITEMS)
    assert need["shortcut"][1] == shortcut.MIN_ITEMS


def test_the_model_count_decides_rank_one_and_power(tmp_path):
    few = frames_of(tmp_path, example_responses(n_models=rank_one.MIN_MODELS - 1, n_items=60, seed=1))
    why = serving.shortfall("rank_one", few)
    assert f"needs {rank_one.MIN_MODELS} models" in why and f"at most {rank_one.MIN_MODELS - 1} models" in why
    assert serving.shortfall("power", few) == ""  # power needs fewer models than rank_one
    enough = frames_of(tmp_path, example_responses(n_models=rank_one.MIN_MODELS, n_items=60, seed=1), "five.csv")
    assert serving.shortfall("rank_one", enough) == ""


def test_unflagged_models_do_not_serve_shortcut_and_policies_are_needed_for_miscalibration(tmp_path):
    frames = frames_of(tmp_path, example_responses(n_models=6, n_items=60, seed=2))
    assert f"{shortcut.MIN_JUDGES} of each" in serving.shortfall("shortcut", frames)
    assert "C0, C1 and C2" in serving.shortfall("miscalibration", frames)
    assert "reasoning_text column" in serving.shortfall("reasoning_text", frames)


def _texts(n, right_share, probe="c2"):
    rng = np.random.default_rng(0)
    correct = (rng.random(n) < right_share).astype(float)
    return pd.DataFrame({"model": [f"m{i % 2}" for i in range(n)], "item_id": [f"i{i // 2}" for i in range(n)],
                         "probe": probe, "confidence": 0.7, "correct": correct,
                         "reasoning_text": ["because it is so" if c else "perhaps not" for c in correct]})


def test_reasoning_text_needs_enough_right_and_wrong_texts(tmp_path):
    ok = frames_of(tmp_path, _texts(4 * MIN_CLASS, 0.5))
    assert serving.shortfall("reasoning_text", ok) == ""
    assert serving.text_sources(ok) == [f"{next(iter(ok))}:c2"]
    lopsided = _texts(4 * MIN_CLASS, 0.5)
    lopsided["correct"] = 1.0
    assert "at least" in serving.shortfall("reasoning_text", frames_of(tmp_path, lopsided, "all_right.csv"))


def test_reaim_replaces_sources_and_empties_what_reads_recorded_runs(tmp_path):
    frames = frames_of(tmp_path, _texts(4 * MIN_CLASS, 0.5))
    path = next(iter(frames))
    mc = serving.reaim("miscalibration", {"sources": ["audit_policies"], "cuts": {"audit_policies": 0.5},
                                          "probe_run": "audit_policies", "probe_models": ["smollm2-135m"],
                                          "n_per_group": {"smollm2-135m": 8}, "n_sweep": {}, "lam": 1.0}, frames)
    assert mc == {"sources": [path], "cuts": {}, "probe_run": "", "group_run": "", "probe_models": [],
                  "n_per_group": 0, "n_sweep": {}, "lam": 1.0}
    rt = serving.reaim("reasoning_text", {"sources": ["squad:prospective"], "answer_sources": ["squad:answer"],
                                          "sampled_run": "legalbench_sampled", "outcome_run": "legalbench",
                                          "length_sources": ["calibration_study:verbal_confidence"]}, frames)
    assert rt == {"sources": [f"{path}:c2"], "answer_sources": [], "sampled_run": "", "outcome_run": "",
                  "length_sources": []}  # the file records no reply lengths


def test_a_file_recording_reply_lengths_becomes_a_length_source(tmp_path):
    """The book's own elicitation records completion_tokens with every call: a researcher's file
    of such rows serves the reply-length section; a probe without stated confidences does not."""
    judged = _texts(4 * MIN_CLASS, 0.5).assign(completion_tokens=np.arange(4 * MIN_CLASS) + 20)
    unjudged = judged.assign(probe="answer", confidence=np.nan)
    frames = frames_of(tmp_path, pd.concat([judged, unjudged]))
    path = next(iter(frames))
    assert serving.length_sources(frames) == [f"{path}:c2"]
    rt = serving.reaim("reasoning_text", {"sources": [], "length_sources": ["calibration_study:verbal_confidence"]},
                       frames)
    assert rt["length_sources"] == [f"{path}:c2"]


def test_a_chapter_on_a_file_reads_the_files_own_lengths_and_keeps_what_p_gives(tmp_path):
    """metacog chapter reasoning_text --source 'file.csv:c2' searches the whole file (its other
    probes too), as metacog book --source does; a key given with -p is left as given, and a
    chapter without such sections takes nothing."""
    judged = _texts(4 * MIN_CLASS, 0.5).assign(completion_tokens=np.arange(4 * MIN_CLASS) + 20)
    path = next(iter(frames_of(tmp_path, judged.assign(probe="other"))))
    extra = judged.assign(probe="c2", completion_tokens=pd.NA)
    pd.concat([judged.assign(probe="other"), extra]).to_csv(path, index=False)
    assert serving.found_in_files("reasoning_text", [f"{path}:c2"], {}) == {"length_sources": [f"{path}:other"]}
    assert serving.found_in_files("reasoning_text", [f"{path}:c2"], {"length_sources": []}) == {}
    assert serving.found_in_files("pairwise", [path], {}) == {}


def test_a_source_string_names_what_is_loaded_and_the_probe_kept(tmp_path):
    path = tmp_path / "odd:name.csv"  # a colon inside the file's own name is not a probe
    path.write_text("x\n")
    assert split_probe(str(path)) == (str(path), None)
    assert split_probe(f"{path}:prospective") == (str(path), "prospective")
    assert split_probe("battery:keep_withdraw") == ("battery", "keep_withdraw")
    assert split_probe("atlas") == ("atlas", None)


def test_attempts_beside_prospective_judgments_become_answer_sources(tmp_path):
    judged = _texts(4 * MIN_CLASS, 0.5, "prospective")
    attempts = judged.assign(probe="answer_no_context", confidence=np.nan, raw_text=judged["reasoning_text"],
                             reasoning_text=np.nan)
    frames = frames_of(tmp_path, pd.concat([judged, attempts]))
    assert serving.answer_sources(frames) == [f"{next(iter(frames))}:answer_no_context"]
    assert serving.text_sources(frames) == [f"{next(iter(frames))}:prospective"]  # attempts carry no confidence


def test_an_unknown_chapter_is_refused():
    with pytest.raises(ValueError, match="not a hypothesis chapter"):
        serving.shortfall("bench_squad", {})
