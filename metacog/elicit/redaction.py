"""Keep credentials out of everything elicitation stores or prints.

Secrets are known by where they come from, not by what they look like:

- every value a router file or an option takes from the environment
  (``api_key: os.environ/VLLM_KEY``, ``--api-base os.environ/NAME``), whatever
  the variable is called, and every API key the engine sends (:func:`register`);
- every password in a URL (``http://user:pass@host``): the userinfo is blanked
  wherever a URL appears, and the credentials are registered too (:func:`register_url`);
- the values of environment variables named ``*_API_KEY``, ``*_TOKEN``,
  ``*_SECRET`` (and the like), which litellm may read by name;
- key-shaped strings (``sk-...``, ``AKIA...``, ``Bearer ...``) for keys from anywhere else.

Each secret is also redacted in the forms a server may echo it in: base64 (the
``Authorization: Basic`` form of ``user:pass``, the base64 of a key, of
``Bearer <key>``) and percent-encoded.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import threading
from typing import Any, NamedTuple
from urllib.parse import quote, unquote

#: Environment variable names whose values are secrets.
SECRET_NAME = re.compile(r"(_API_KEY|_APIKEY|_TOKEN|_SECRET|_SECRET_KEY|_ACCESS_KEY|_PASSWORD)$", re.I)
#: Shorter values are not redacted (they would blank out ordinary words).
MIN_LENGTH = 6
#: ``os.environ/NAME``: a value taken from the environment (litellm's convention).
ENV_REF = re.compile(r"^os\.environ/([A-Za-z_][A-Za-z0-9_]*)$")

_SHAPES = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|AKIA[0-9A-Z]{12,}|AIza[0-9A-Za-z_\-]{20,}|(?i:bearer)\s+[A-Za-z0-9._\-]{8,}"
    r"|xox[abp]-[A-Za-z0-9\-]{8,}|gh[pousr]_[A-Za-z0-9]{20,}|gsk_[A-Za-z0-9]{16,})"
)
# scheme://userinfo@ : the userinfo runs to the last '@' before the path (passwords may hold '@').
_URL_AUTH = re.compile(r"\b([A-Za-z][A-Za-z0-9+.\-]*://)([^/?#\s\"'<>\\]*)@")
MARK = "[redacted]"

#: Keyword-argument name parts that suggest a credential; run() refuses them.
SECRET_ARGS = {"key", "token", "secret", "password", "credential", "credentials",
               "authorization", "headers"}

_REGISTERED: set[str] = set()
_LOCK = threading.Lock()


def register(value: Any) -> None:
    """Treat ``value`` as a secret from now on, in this process (with its encoded forms)."""
    v = "" if value is None else str(value).strip()
    if len(v) >= MIN_LENGTH and v not in _REGISTERED:
        with _LOCK:
            _REGISTERED.add(v)


def url_credentials(url: str | None) -> tuple[str, str | None, str | None]:
    """(url without its userinfo, user, password), user and password percent-decoded."""
    if not url:
        return url or "", None, None
    m = _URL_AUTH.search(url)
    if not m or m.start() != 0:
        return url, None, None
    user, sep, pw = m.group(2).partition(":")
    return m.group(1) + url[m.end():], unquote(user), unquote(pw) if sep else None


@functools.lru_cache(maxsize=256)
def register_url(url: str | None) -> None:
    """Register the credentials in ``url``'s userinfo: the password, ``user:pass`` (whose base64 is
    what Basic auth sends) and a lone user part (often a token)."""
    if not url:
        return
    for m in _URL_AUTH.finditer(url):
        info = m.group(2)
        user, sep, pw = info.partition(":")
        for v in ([pw, unquote(pw), info, f"{unquote(user)}:{unquote(pw)}"] if sep else [user, unquote(user)]):
            register(v)


def from_env(value: Any, where: str) -> Any:
    """``value``, or the environment variable it names as ``os.environ/NAME``, registered as a secret.

    ValueError naming ``where`` when the variable is not set.
    """
    m = ENV_REF.match(value) if isinstance(value, str) else None
    if not m:
        return value
    got = os.environ.get(m.group(1))
    if got is None:
        raise ValueError(f"{where}: environment variable {m.group(1)} is not set.")
    register(got)
    register_url(got)
    return got


def _b64(s: str) -> list[str]:
    raw = s.encode("utf-8")
    return [base64.b64encode(raw).decode().rstrip("="), base64.urlsafe_b64encode(raw).decode().rstrip("=")]


@functools.lru_cache(maxsize=16)
def _forms(values: tuple[str, ...]) -> tuple[str, ...]:
    """Each secret as sent or echoed: itself, percent-encoded and -decoded, and in base64
    (of itself and of ``Bearer <it>``); longest first so a longer form wins."""
    out: set[str] = set()
    for v in values:
        out.update({v, quote(v, safe=""), unquote(v), *_b64(v), *_b64(f"Bearer {v}")})
    return tuple(sorted((f for f in out if len(f) >= MIN_LENGTH), key=lambda f: (-len(f), f)))


def _named(items) -> set[str]:
    return {v.strip() for k, v in items if SECRET_NAME.search(k) and len(v.strip()) >= MIN_LENGTH}


@functools.lru_cache(maxsize=4)
def _named_raw(items: tuple[tuple[bytes, bytes], ...]) -> frozenset[str]:
    return frozenset(_named((os.fsdecode(k), os.fsdecode(v)) for k, v in items))


def secret_values(environ: dict[str, str] | None = None) -> tuple[str, ...]:
    """Every secret value and its encoded forms, longest first: the registered ones and the
    values of the secret-named environment variables."""
    raw = getattr(os.environ, "_data", None) if environ is None else None
    if isinstance(raw, dict):  # the process environment: scanned again only when it changed
        vals = set(_named_raw(tuple(raw.items())))
    else:
        vals = _named((os.environ if environ is None else environ).items())
    with _LOCK:  # another thread may be registering
        vals.update(_REGISTERED)
    return _forms(tuple(sorted(vals)))


class Secrets(NamedTuple):
    """The secret forms to look for, and one pattern matching any of them."""

    values: tuple[str, ...]
    pattern: re.Pattern | None


@functools.lru_cache(maxsize=8)
def _compiled(values: tuple[str, ...]) -> Secrets:
    return Secrets(values, re.compile("|".join(re.escape(v) for v in values)) if values else None)


def current() -> Secrets:
    """The secrets known now (read the environment once, then pass it to many redactions)."""
    return _compiled(secret_values())


def _blank_userinfo(m: re.Match) -> str:
    user, sep, _ = m.group(2).partition(":")
    return f"{m.group(1)}{user}:{MARK}@" if sep else f"{m.group(1)}{MARK}@"


def redact_url(url: Any) -> str:
    """``url`` with the password (or a lone user part) of its userinfo blanked."""
    return _URL_AUTH.sub(_blank_userinfo, str(url))


# Cheap substring tests before the regular expressions (most text holds no secret at all).
_SHAPE_HINTS = ("sk-", "AKIA", "AIza", "xox", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "gsk_")


def redact(text: Any, _sec: Secrets | None = None) -> str:
    """``text`` as a string with every secret value (and its encoded forms), URL password and
    key-shaped substring replaced by '[redacted]'."""
    s = str(text)
    sec = current() if _sec is None else _sec
    if "://" in s and "@" in s:
        s = _URL_AUTH.sub(_blank_userinfo, s)
    if sec.pattern is not None and any(v in s for v in sec.values):
        s = sec.pattern.sub(MARK, s)
    if any(h in s for h in _SHAPE_HINTS) or "bearer" in s.lower():
        s = _SHAPES.sub(MARK, s)
    return s


def redact_payload(obj: Any, _sec: Secrets | None = None) -> Any:
    """A copy of ``obj`` (dicts, lists, strings) with :func:`redact` applied to every string in it."""
    if _sec is None:
        _sec = current()  # read the environment once per payload
    if isinstance(obj, str):
        return redact(obj, _sec)
    if isinstance(obj, dict):
        return {k: redact_payload(v, _sec) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_payload(v, _sec) for v in obj]
    return obj


def check_kwargs(kwargs: dict[str, Any]) -> None:
    """Refuse credential-like keyword arguments (they would end up in the cache key)."""
    if any(set(k.lower().split("_")) & SECRET_ARGS for k in kwargs):
        raise ValueError("run: pass API keys through environment variables (e.g. OPENAI_API_KEY), "
                         "never as arguments; they would end up in the cache key.")
