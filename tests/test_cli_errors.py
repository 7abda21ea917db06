"""Every command-line mistake ends in one line on stderr and exit 2, before anything runs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def cli(*args, cwd=ROOT, env=None):
    env = {**os.environ, **(env or {})}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "metacog.cli", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, stdin=subprocess.DEVNULL)


def one_line_exit_2(proc, *words):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def test_data_verify_unknown_dataset():
    one_line_exit_2(cli("data", "--verify", "nosuch"), "nosuch", "known datasets")


def test_example_data_out_under_a_file(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    one_line_exit_2(cli("example-data", "--out", str(blocker / "x.csv")), "--out", "a_file")


def test_chapter_out_under_a_file_fails_before_loading(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    line = one_line_exit_2(cli("chapter", "rank_one", "--source", "atlas", "--out", str(blocker / "o")),
                           "--out")
    assert "a_file" in line


@pytest.mark.parametrize("content, words", [
    (b"", ["chapters"]),
    (b"\xff\xfe\x00bad", ["UTF-8"]),
    (b"chapters: 5\n", ["chapters"]),
    (b"parameter_sets: {}\nchapters:\n  - just-a-string\n", ["chapter 1"]),
    (b"chapters: [\n", ["YAML"]),
])
def test_check_on_a_bad_manifest(tmp_path, content, words):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "manifest.yml").write_bytes(content)
    one_line_exit_2(cli("check", cwd=tmp_path, env={"METACOG_PROJECT_ROOT": str(tmp_path)}),
                    "metacog check", *words)


def test_book_only_an_unknown_page():
    one_line_exit_2(cli("book", "--only", "nosuch", "--no-html"), "nosuch", "no such page")


def test_check_on_the_real_manifest_exits_0():
    proc = cli("check")
    assert proc.returncode == 0, proc.stderr
    assert "rank_one:" in proc.stdout


@pytest.mark.parametrize("flags, words", [
    (["--timeout", "inf"], ["--timeout"]),
    (["--timeout", "nan"], ["--timeout"]),
    (["--timeout", "0"], ["--timeout"]),
    (["--max-tokens", "0"], ["--max-tokens"]),
    (["--max-tokens", "-1"], ["--max-tokens"]),
    (["--concurrency", "0"], ["--concurrency"]),
])
def test_elicit_refuses_impossible_numbers_before_asking(tmp_path, flags, words):
    proc = cli("elicit", "--benchmark", "audit", "--models", "openai/x", "--api-base",
               "http://127.0.0.1:9/v1", "--cache", str(tmp_path / "c"), *flags)
    one_line_exit_2(proc, *words)
    assert not (tmp_path / "c" / "responses.sqlite").exists()  # nothing was asked or cached


@pytest.mark.parametrize("flag", ["--cache", "--out"])
def test_elicit_refuses_an_unwritable_path_before_asking(tmp_path, flag):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    target = str(blocker / ("c" if flag == "--cache" else "o.parquet"))
    other = ["--out", str(tmp_path / "o.parquet")] if flag == "--cache" else ["--cache", str(tmp_path / "c")]
    proc = cli("elicit", "--benchmark", "audit", "--models", "openai/x", "--api-base",
               "http://127.0.0.1:9/v1", flag, target, *other)
    one_line_exit_2(proc, flag)


def test_ctrl_c_mid_run_prints_one_line_and_keeps_what_was_asked(tmp_path):
    """SIGINT during `metacog elicit` ends it with exit 130 and one line, no traceback; the answers
    already fetched stay in the cache."""
    import json
    import signal
    import sqlite3
    import time

    from fakeserver import FakeServer

    items = tmp_path / "items.jsonl"
    # 400 calls two at a time with 0.3 s replies take a minute, so the run is still asking when
    # the signal comes, however loaded the machine
    items.write_text("".join(json.dumps({"item_id": f"k{i}", "question": f"Q{i}? [[answer:{i}]]",
                                         "gold": str(i), "benchmark": "test"}) + "\n" for i in range(400)))
    cache = tmp_path / "cache"
    code = "import sys; from metacog.cli import run; sys.exit(run(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    with FakeServer(latency=0.3) as srv:
        proc = subprocess.Popen([sys.executable, "-c", code, "elicit", "--items", str(items), "--models",
                                 "openai/fake", "--probes", "answer", "--api-base", srv.base_url,
                                 "--cache", str(cache), "--concurrency", "2", "--no-progress"],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                # Ctrl-C as at a terminal: a test suite started in the background
                                # (nohup, `cmd &` in a script) ignores SIGINT, and so would the child
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        db, done = cache / "responses.sqlite", 0
        for _ in range(600):  # polls until a few answers are cached (fails only if none ever are)
            time.sleep(0.1)
            if db.exists():
                try:
                    with sqlite3.connect(db, timeout=5) as con:
                        done = con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
                except sqlite3.OperationalError:
                    continue
            if done >= 4:
                break
        assert done >= 4 and proc.poll() is None, (done, proc.poll())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert err.strip().splitlines()[-1].startswith("metacog: interrupted")
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM responses").fetchone()[0] >= done


def _panel_file(tmp_path, name, models, items_of, confidence=0.7, correct=1):
    import pandas as pd

    rows = [{"model": m, "item_id": f"q{i}", "probe": "verbal", "benchmark": "b",
             "confidence": confidence,
             "correct": correct if correct == "" else (correct if (i + k) % 3 else 1 - correct)}
            for k, m in enumerate(models) for i in items_of(k)]
    path = tmp_path / name
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("chapter_name", ["pairwise", "rank_one"])
@pytest.mark.parametrize("case, words", [
    ("one_model", ["1 model", "at least 3"]),
    ("no_shared_items_2", ["0 items are answered by two or more models"]),
    ("no_shared_items_6", ["0 items are answered by two or more models"]),
    ("empty_confidence", ["confidence column is empty"]),
    ("empty_correct", ["correct column is empty"]),
])
def test_a_file_a_chapter_cannot_use_is_refused_before_it_runs(tmp_path, chapter_name, case, words):
    models = {"one_model": ["m1"], "no_shared_items_2": ["m1", "m2", "m3"][:2],
              "no_shared_items_6": [f"m{k}" for k in range(6)]}.get(case, ["m1", "m2", "m3", "m4"])
    if case.startswith("no_shared"):
        items_of = lambda k: range(100 * k, 100 * k + 40)  # noqa: E731  (disjoint items per model)
    else:
        items_of = lambda k: range(40)  # noqa: E731
    kw = {"confidence": ""} if case == "empty_confidence" else {"correct": ""} if case == "empty_correct" else {}
    src = _panel_file(tmp_path, f"{case}.csv", models, items_of, **kw)
    out = tmp_path / "out"
    proc = cli("chapter", chapter_name, "--source", str(src), "--out", str(out))
    line = one_line_exit_2(proc, f"{case}.csv", *words)
    assert str(tmp_path) not in line  # the file is named by its name, not its path
    assert not (out / f"{chapter_name}.ipynb").exists()  # stopped before executing


def test_data_verify_of_a_corrupt_copy_says_which_file_and_what_to_do(tmp_path, mirror):
    """A mirror whose math500 file differs from the pinned sha256: one line, exit 2, naming
    the file and the fix; the intact mirror verifies (exit 0)."""
    import shutil

    copy = tmp_path / "mirror" / "benchmarks" / "math"
    copy.mkdir(parents=True)
    shutil.copy(mirror / "benchmarks" / "math" / "math500.jsonl", copy / "math500.jsonl")
    ok = cli("data", "--verify", "math500", env={"METACOG_DATA_MIRROR": str(tmp_path / "mirror"),
                                                  "METACOG_CACHE_DIR": str(tmp_path / "cache")})
    assert ok.returncode == 0 and "math500: ok" in ok.stdout, ok.stderr
    with open(copy / "math500.jsonl", "ab") as f:
        f.write(b"\n{}\n")
    bad = cli("data", "--verify", "math500", env={"METACOG_DATA_MIRROR": str(tmp_path / "mirror"),
                                                   "METACOG_CACHE_DIR": str(tmp_path / "cache")})
    one_line_exit_2(bad, "math500.jsonl", "sha256", "Delete it and fetch again")


@pytest.mark.parametrize("args, words", [
    (["nonexistent_run"], ["unknown run", "nonexistent_run", "audit_300"]),
    (["--models", "nope", "audit_300"], ["--models", "nope", "provider prefix"]),
])
def test_collect_refuses_bad_runs_and_models_before_asking(args, words):
    one_line_exit_2(cli("collect", *args), "metacog collect", *words)


def test_collect_cache_under_a_file(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    one_line_exit_2(cli("collect", "--cache", str(blocker / "c"), "audit_300"), "--cache", "a_file")


def test_collect_outside_the_project_names_the_runs_file(tmp_path):
    env = {"METACOG_RESPONSES_DIR": str(tmp_path / "nowhere")}
    one_line_exit_2(cli("collect", "audit_300", cwd=tmp_path, env=env), "runs.yml", "METACOG_RESPONSES_DIR")
