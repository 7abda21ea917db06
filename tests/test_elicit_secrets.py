"""Secret values of any shape never reach the cache, the output table or the terminal."""

import importlib.util
import secrets

import pytest

from fakeserver import FakeServer
from metacog.elicit import redaction, run
from metacog.tidy.items import Item

needs_litellm = pytest.mark.skipif(importlib.util.find_spec("litellm") is None,
                                   reason="litellm is not installed (pip install -e .[elicit])")


def test_values_of_secret_named_variables_are_redacted_whatever_their_shape(monkeypatch):
    hexkey = secrets.token_hex(20)
    monkeypatch.setenv("GROQ_API_KEY", "gsk_" + "Ab3" * 12)
    monkeypatch.setenv("MY_SERVICE_TOKEN", hexkey)
    monkeypatch.setenv("DB_SECRET", "correct horse battery")
    monkeypatch.setenv("SHORT_TOKEN", "abc")  # too short to redact safely
    monkeypatch.setenv("NOT_A_KEY_NAME", "visible-value-123")
    text = (f"key gsk_{'Ab3' * 12} and {hexkey}; pass=correct horse battery; abc; visible-value-123; "
            "sk-live1234567890")
    out = redaction.redact(text)
    assert hexkey not in out and "gsk_" not in out and "correct horse" not in out
    assert "sk-live" not in out
    assert out.count("[redacted]") == 4
    assert "visible-value-123" in out and "abc" in out
    nested = redaction.redact_payload({"error": hexkey, "list": [f"x {hexkey}"], "n": 3})
    assert nested == {"error": "[redacted]", "list": ["x [redacted]"], "n": 3}


@needs_litellm
@pytest.mark.parametrize("shape", ["hex", "gsk", "words"])
def test_an_echoed_key_of_any_shape_is_never_stored(shape, tmp_path, monkeypatch):
    key = {"hex": secrets.token_hex(24), "gsk": "gsk_" + secrets.token_urlsafe(30).replace("-", "a"),
           "words": "plain-words-" + secrets.token_hex(4)}[shape]
    monkeypatch.setenv("OPENAI_API_KEY", key)
    items = [Item(item_id="e1", benchmark="test", question="Q1 [[echoauth]]", gold="1"),
             Item(item_id="e2", benchmark="test", question="Q2 [[echoreply]]", gold="1")]
    with FakeServer() as srv:
        df = run(items, models=["openai/fake"], probes=["answer"], cache=tmp_path / "cache",
                 api_base=srv.base_url, progress=False, max_retries=0, timeout=5)
        assert f"Bearer {key}" in srv.auth_headers  # the key was really sent and echoed
    out = tmp_path / "out.csv"
    df.to_csv(out)
    assert "[redacted]" in df.set_index("item_id").loc["e1", "error"]
    assert "[redacted]" in df.set_index("item_id").loc["e2", "raw_text"]
    for f in [out, *(tmp_path / "cache").iterdir()]:
        assert key.encode() not in f.read_bytes(), f
