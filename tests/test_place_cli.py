"""`metacog place` end to end against a fake OpenAI-compatible server that answers at random, and
its bad input: one line on stderr, exit 2, before any call."""

import hashlib
import math
import re

import pandas as pd
import pytest

from fakeserver import FakeServer
from test_cli_errors import cli, one_line_exit_2


class RandomMCQServer(FakeServer):
    """Answers the calibration study's prompt with a letter and a confidence drawn from a hash of
    the prompt (so: at random, but the same on every asking), with token log-probabilities; it
    keeps the reply cap (``max_tokens``) of every request."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.caps = []

    async def _complete(self, req, auth=""):
        self.caps.append(req.get("max_tokens", req.get("max_completion_tokens")))
        return await super()._complete(req, auth)

    def _reply(self, prompt, marks, h, want_logprobs):
        m = re.search(r"LETTER is one of ([A-J](?:,[A-J])*)\]", prompt)
        if not m:
            return super()._reply(prompt, marks, h, want_logprobs)
        letters = m.group(1).split(",")
        d = hashlib.sha256(prompt.encode()).digest()
        letter, conf = letters[d[0] % len(letters)], 30 + d[1] % 70
        content = f"Explanation: a guess.\n\nAnswer: {letter}\n\nConfidence (0-100): {conf}%"
        toks = re.findall(r"\s*\S+", content)
        lp = [{"token": t, "logprob": math.log(0.3 + (d[(i + 2) % 32] % 70) / 100), "top_logprobs": []}
              for i, t in enumerate(toks)]
        return content, ({"content": lp} if want_logprobs else None)


@pytest.mark.slow
def test_place_against_a_server_answering_at_random_writes_the_page(mirror, tmp_path):
    with RandomMCQServer() as srv:
        proc = cli("place", "--panel", "calibration_study", "--model", "openai/fake", "--api-base",
                   srv.base_url, "--n-items", "40", "--seed", "3", "--out", str(tmp_path / "out"),
                   "--cache", str(tmp_path / "cache"), "--no-progress",
                   env={"METACOG_DATA_MIRROR": str(mirror)})
        asked, caps = srv.requests, set(srv.caps)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert asked == 40
    assert caps == {1024}  # by default the study's reply cap
    resp = pd.read_parquet(tmp_path / "out" / "responses.parquet")
    assert set(resp["probe"]) == {"verbal_confidence", "logit_confidence"}
    assert resp["item_id"].nunique() == 40 and (resp["parse_status"] == "ok").all()
    assert resp["confidence"].between(0, 1).all()
    # the reply is kept, and its reasoning part without the stated answer and confidence
    assert resp["raw_text"].str.contains("Confidence").all()
    assert resp["reasoning_text"].notna().all() and not resp["reasoning_text"].str.contains("Confidence").any()
    html = (tmp_path / "out" / "place.html").read_text()
    assert "at chance" in html or "too few correct" in html
    assert "insufficient evidence" in html
    assert "▶ fake (new)" in html and "type-2 AUROC" in html  # marked in the panel table; its ranks
    assert "gpt-4.1" in html  # a panel model's row
    assert "a cap of 1024 tokens (the study's own)" in html
    assert '<img alt="Forest plot: one row per model' in html  # the figure described in words
    assert "Holm's correction" in html and "mean internal − population AUROC is" in html
    # asked again: every reply comes from the cache
    with RandomMCQServer() as srv:
        again = cli("place", "--model", "openai/fake", "--api-base", srv.base_url, "--n-items", "40",
                    "--seed", "3", "--out", str(tmp_path / "out2"), "--cache", str(tmp_path / "cache"),
                    "--no-html", "--no-progress", env={"METACOG_DATA_MIRROR": str(mirror)})
        assert again.returncode == 0, again.stderr[-2000:]
        assert srv.requests == 0
    # a tidy file of answers stands in for live calls (the model is read from it)
    given = cli("place", "--responses", str(tmp_path / "out" / "responses.parquet"), "--n-items", "30",
                "--out", str(tmp_path / "out3"), env={"METACOG_DATA_MIRROR": str(mirror)})
    assert given.returncode == 0, given.stderr[-2000:]
    page = (tmp_path / "out3" / "place.html").read_text()
    assert "On 30 items" in page or "of 30 asked" in page


@pytest.mark.parametrize("args, words", [
    (["--panel", "spar", "--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1"], ["spar", "licence"]),
    (["--panel", "atlas", "--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1"], ["atlas"]),
    (["--model", "gpt-4o", "--api-base", "http://127.0.0.1:9/v1"], ["--model", "openai/NAME"]),
    (["--model", "openai/x"], ["--api-base"]),
    (["--model", "openai/x", "--api-base", "127.0.0.1:9"], ["--api-base", "http"]),
    (["--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1", "--n-items", "0"], ["--n-items"]),
    (["--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1", "--probe", "nope"], ["--probe"]),
    (["--responses", "/nonexistent/answers.csv"], ["--responses", "no such file"]),
    (["--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1", "--max-tokens", "0"], ["--max-tokens"]),
    (["--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1", "--concurrency", "0"], ["--concurrency"]),
    (["--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1", "--timeout", "0"], ["--timeout"]),
    (["--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1", "--max-retries", "-1"], ["--max-retries"]),
])
def test_bad_input_exits_2_with_one_line_before_any_call(tmp_path, args, words):
    one_line_exit_2(cli("place", *args, "--out", str(tmp_path / "o")), "metacog place", *words)


def test_out_under_a_file_exits_2(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    one_line_exit_2(cli("place", "--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1",
                        "--out", str(f / "sub")), "--out")


def test_place_with_no_server_up_exits_2_before_rendering_and_a_rerun_asks_again(mirror, tmp_path):
    """Connection refused on every call: one line, exit 2, no page; the failures are not kept as
    answers, so the same command once the server is up asks every call again."""
    env = {"METACOG_DATA_MIRROR": str(mirror)}
    args = ["place", "--model", "openai/fake", "--n-items", "5", "--seed", "3", "--out",
            str(tmp_path / "out"), "--cache", str(tmp_path / "cache"), "--no-html", "--no-progress"]
    down = cli(*args, "--api-base", "http://127.0.0.1:9/v1", env=env)
    one_line_exit_2(down, "all 5 calls", "127.0.0.1:9", "nothing was lost", "rerun")
    assert not (tmp_path / "out" / "place.ipynb").exists()
    with RandomMCQServer() as srv:
        up = cli(*args, "--api-base", srv.base_url, env=env)
        assert up.returncode == 0, up.stderr[-2000:]
        assert srv.requests == 5
