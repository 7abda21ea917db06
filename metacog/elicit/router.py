"""One model over several deployments: litellm Router's ``model_list`` format, with rpm/tpm limits.

A router file (YAML) looks like litellm's own Router configuration::

    model_list:
      - model_name: qwen-7b                 # the name runs ask for (the cache key uses it)
        litellm_params:
          model: openai/Qwen/Qwen2.5-7B-Instruct
          api_base: http://gpu-1:8000/v1
          api_key: os.environ/VLLM_KEY      # keys only by environment variable
        rpm: 600                            # requests per minute (optional)
        tpm: 200000                         # tokens per minute (optional; estimated before the call)
      - model_name: qwen-7b
        litellm_params: {model: openai/Qwen/Qwen2.5-7B-Instruct, api_base: http://gpu-2:8000/v1}
    fallbacks:
      - qwen-7b: [gpt-4o-mini]              # asked when every retry on qwen-7b failed

Any ``litellm_params`` value may be given as ``os.environ/NAME``; every value
taken from the environment is registered as a secret (redacted from whatever is
stored or printed, whatever the variable is called), and so is any password in
an ``api_base`` URL (``http://user:pass@host``, sent as Basic auth).

Each call goes to the deployment of its model name with the most room under
its limits (ties: fewest calls in flight, then least used); when every
deployment is at its limit the call waits for the first free slot instead of
failing. A retry may land on another deployment. Deployments on an
OpenAI-compatible server take the direct HTTP path; others go through litellm.
"""

from __future__ import annotations

import asyncio
import collections
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from metacog.elicit.redaction import ENV_REF as _ENV_REF
from metacog.elicit.redaction import from_env, redact_url, register, register_url

WINDOW = 60.0  # seconds over which rpm and tpm are counted
_ENTRY_KEYS = {"model_name", "litellm_params", "rpm", "tpm", "model_info"}
_TOP_KEYS = {"model_list", "fallbacks", "router_settings"}


@dataclass
class Deployment:
    """One server of a model name, with its limits and its recent use."""

    model_name: str
    params: dict[str, Any]  # litellm_params without the key ('os.environ/NAME' kept); 'model' is the id
    key_env: str | None = None  # environment variable holding the API key
    rpm: int | None = None
    tpm: int | None = None
    in_flight: int = 0
    used: int = 0
    _calls: collections.deque = field(default_factory=collections.deque)  # (time, tokens)

    def _trim(self, now: float) -> None:
        while self._calls and self._calls[0][0] <= now - WINDOW:
            self._calls.popleft()

    def wait_for(self, tokens: int, now: float) -> float:
        """Seconds until a call of ``tokens`` fits under the limits (0 when it fits now)."""
        self._trim(now)
        waits = [0.0]
        if self.rpm is not None and len(self._calls) >= self.rpm:
            waits.append(self._calls[len(self._calls) - self.rpm][0] + WINDOW - now)
        if self.tpm is not None:
            excess = sum(t for _, t in self._calls) + tokens - self.tpm
            for t0, t in self._calls:
                if excess <= 0:
                    break
                excess -= t
                waits.append(t0 + WINDOW - now)
        return max(waits)

    @property
    def api_key(self) -> str | None:
        key = os.environ.get(self.key_env) if self.key_env else None
        register(key)
        return key

    def resolved(self) -> dict[str, Any]:
        """``params`` with every ``os.environ/NAME`` value read from the environment (as a secret)."""
        out = {k: from_env(v, f"router {self.model_name}: litellm_params.{k}") for k, v in self.params.items()}
        register_url(out.get("api_base"))
        return out

    def describe(self) -> str:
        """'name: model @ api_base' with the URL's password blanked (an env reference stays a reference)."""
        base = self.params.get("api_base")
        return f"{self.model_name}: {self.params.get('model')} @ {redact_url(base) if base else 'provider default'}"

    def __repr__(self) -> str:
        return f"Deployment({self.describe()!r}, key_env={self.key_env!r}, rpm={self.rpm}, tpm={self.tpm})"


@dataclass
class RouterSpec:
    """Deployments by model name, and the fallbacks of each name."""

    deployments: dict[str, list[Deployment]]
    fallbacks: dict[str, list[str]] = field(default_factory=dict)
    source: str = "<router>"

    def serves(self, model: str) -> bool:
        return model in self.deployments

    def summary(self) -> "pd.DataFrame":
        """One row per deployment: model_name, model, api_base, rpm, tpm, calls made."""
        import pandas as pd

        return pd.DataFrame([{"model_name": d.model_name, "model": d.params.get("model"),
                              "api_base": redact_url(d.params["api_base"]) if d.params.get("api_base")
                              else None, "rpm": d.rpm, "tpm": d.tpm,
                              "calls": d.used} for ds in self.deployments.values() for d in ds])

    async def acquire(self, model: str, tokens: int) -> Deployment:
        """The deployment to ask now (waiting, within the window, until one has room)."""
        pool = self.deployments[model]
        while True:
            now = time.monotonic()
            ranked = sorted(pool, key=lambda d: (d.wait_for(tokens, now), d.in_flight, d.used))
            best = ranked[0]
            wait = best.wait_for(tokens, now)
            if wait <= 0:
                best._calls.append((now, tokens))
                best.in_flight += 1
                best.used += 1
                return best
            await asyncio.sleep(min(wait, WINDOW) + 0.01)

    @staticmethod
    def release(d: Deployment) -> None:
        d.in_flight -= 1


def _fail(where: str, msg: str) -> ValueError:
    return ValueError(f"router {where}: {msg}")


def _lines(text: str) -> list[int]:
    """1-based line of each model_list entry (for error messages)."""
    try:
        node = yaml.compose(text)
        for k, v in node.value:
            if k.value == "model_list":
                return [item.start_mark.line + 1 for item in v.value]
    except Exception:  # noqa: BLE001 - only used to point at lines
        pass
    return []


def _deployment(e: Any, where: str) -> Deployment:
    if not isinstance(e, dict):
        raise _fail(where, "each model_list entry is a mapping with model_name and litellm_params.")
    unknown = set(e) - _ENTRY_KEYS
    if unknown:
        raise _fail(where, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_ENTRY_KEYS)}.")
    name, params = e.get("model_name"), e.get("litellm_params")
    if not isinstance(name, str) or not name:
        raise _fail(where, "model_name must be a non-empty string.")
    if not isinstance(params, dict) or not isinstance(params.get("model"), str) or "/" not in params["model"]:
        raise _fail(where, "litellm_params.model must be a litellm id with a provider, e.g. 'openai/<name>'.")
    params = dict(params)
    key_env = None
    if "api_key" in params:
        m = _ENV_REF.match(str(params.pop("api_key")))
        if not m:
            raise _fail(where, "api_key must name an environment variable as 'os.environ/NAME'; "
                        "keys never go in files.")
        key_env = m.group(1)
        register(os.environ.get(key_env))
    for k, v in params.items():
        if k == "api_base" and isinstance(v, str):
            register_url(v)
        if k != "model" and isinstance(v, str) and _ENV_REF.match(v):
            register_url(from_env(v, f"{where}: litellm_params.{k}"))  # must be set; its value is a secret
    limits = {}
    for k in ("rpm", "tpm"):
        v = e.get(k, params.pop(k, None))
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise _fail(where, f"{k} must be a positive integer, got {v!r}.")
        limits[k] = v
    return Deployment(name, params, key_env, limits["rpm"], limits["tpm"])


def load_router(spec: str | os.PathLike | dict) -> RouterSpec:
    """A :class:`RouterSpec` from a YAML file (litellm Router format) or an already-parsed dict."""
    if isinstance(spec, dict):
        doc, text, src = spec, "", "<dict>"
    else:
        path = Path(spec)
        if not path.is_file():
            raise ValueError(f"router {path}: no such file.")
        text, src = path.read_text(encoding="utf-8"), str(path)
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            raise ValueError(f"router {path}{at}: not valid YAML ({getattr(exc, 'problem', exc)}).") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("model_list"), list) or not doc["model_list"]:
        raise _fail(src, "needs a non-empty 'model_list' (litellm Router format).")
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        raise _fail(src, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_TOP_KEYS)}.")
    lines = _lines(text)
    deployments: dict[str, list[Deployment]] = {}
    for i, e in enumerate(doc["model_list"]):
        where = f"{src}, model_list entry {i + 1}" + (f" (line {lines[i]})" if i < len(lines) else "")
        d = _deployment(e, where)
        deployments.setdefault(d.model_name, []).append(d)
    fallbacks: dict[str, list[str]] = {}
    for f in doc.get("fallbacks") or []:
        if not isinstance(f, dict):
            raise _fail(src, "fallbacks is a list of {model_name: [other model_name, ...]}.")
        for name, others in f.items():
            others = [others] if isinstance(others, str) else list(others or [])
            bad = [o for o in [name, *others] if o not in deployments]
            if bad:
                raise _fail(src, f"fallbacks name(s) {bad} not defined in model_list.")
            fallbacks[name] = others
    return RouterSpec(deployments, fallbacks, src)
