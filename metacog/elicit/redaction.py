"""Keep credentials out of everything elicitation stores or prints.

Two layers: the *values* of every environment variable named ``*_API_KEY``,
``*_TOKEN`` or ``*_SECRET`` (and the like), whatever they look like, and
key-shaped strings (``sk-...``, ``AKIA...``, ``Bearer ...``) for keys that are
not in this process's environment.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

#: Environment variable names whose values are secrets.
SECRET_NAME = re.compile(r"(_API_KEY|_APIKEY|_TOKEN|_SECRET|_SECRET_KEY|_ACCESS_KEY|_PASSWORD)$", re.I)
#: Shorter values are not redacted (they would blank out ordinary words).
MIN_LENGTH = 6

_SHAPES = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|AKIA[0-9A-Z]{12,}|AIza[0-9A-Za-z_\-]{20,}|(?i:bearer)\s+[A-Za-z0-9._\-]{8,}"
    r"|xox[abp]-[A-Za-z0-9\-]{8,}|gh[pousr]_[A-Za-z0-9]{20,}|gsk_[A-Za-z0-9]{16,})"
)
MARK = "[redacted]"

#: Keyword-argument name parts that suggest a credential; run() refuses them.
SECRET_ARGS = {"key", "token", "secret", "password", "credential", "credentials",
               "authorization", "headers"}


def secret_values(environ: dict[str, str] | None = None) -> tuple[str, ...]:
    """The values of the secret-named environment variables, longest first."""
    env = os.environ if environ is None else environ
    vals = {v.strip() for k, v in env.items() if SECRET_NAME.search(k) and len(v.strip()) >= MIN_LENGTH}
    return tuple(sorted(vals, key=lambda v: (-len(v), v)))


@functools.lru_cache(maxsize=8)
def _pattern(values: tuple[str, ...]) -> re.Pattern | None:
    return re.compile("|".join(re.escape(v) for v in values)) if values else None


def redact(text: Any, _pat: re.Pattern | None | bool = False) -> str:
    """``text`` as a string with every secret value and key-shaped substring replaced by '[redacted]'."""
    s = str(text)
    pat = _pattern(secret_values()) if _pat is False else _pat
    if pat is not None:
        s = pat.sub(MARK, s)
    return _SHAPES.sub(MARK, s)


def redact_payload(obj: Any, _pat: re.Pattern | None | bool = False) -> Any:
    """A copy of ``obj`` (dicts, lists, strings) with :func:`redact` applied to every string in it."""
    if _pat is False:
        _pat = _pattern(secret_values())  # read the environment once per payload
    if isinstance(obj, str):
        return redact(obj, _pat)
    if isinstance(obj, dict):
        return {k: redact_payload(v, _pat) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_payload(v, _pat) for v in obj]
    return obj


def check_kwargs(kwargs: dict[str, Any]) -> None:
    """Refuse credential-like keyword arguments (they would end up in the cache key)."""
    if any(set(k.lower().split("_")) & SECRET_ARGS for k in kwargs):
        raise ValueError("run: pass API keys through environment variables (e.g. OPENAI_API_KEY), "
                         "never as arguments; they would end up in the cache key.")
