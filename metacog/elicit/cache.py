"""Content-addressed, append-only response cache in SQLite (WAL mode).

The key of a call is the sha256 of (model, messages, parameters, template
version) in canonical JSON. Every finished call (success or final failure)
appends one row in its own transaction, so a run killed with SIGKILL loses at
most the calls in flight, never a committed row, and never leaves half a row:
the restarted run re-asks only the keys without a row. A key's answer is its
latest 'ok' row; failing that, its latest 'error' row: re-asked by the next run
when the failure was transient (server unreachable, timeout, 429/502/503/504:
``payload['transient']``), else only with ``retry_failed``. Rows are never
updated or deleted.

No secrets go in: the stored request is the model id, the messages and the
sampling parameters; API keys live only in the environment, and the engine
redacts them (and URL passwords, see :mod:`metacog.elicit.redaction`) from
every payload before it is stored.

Two runs on one cache share the work through *leases*: a run claims the keys
it is about to ask (:meth:`Cache.claim`), renews its claim while it runs, and
a finished call releases its key in the same transaction that stores it.
Another run skips keys under a live lease and waits for their rows; a lease
whose owner died (same host, pid gone) or stopped renewing is taken over.

Calls sent in a provider's batch (:mod:`metacog.elicit.provider_batch`) are recorded
in the table ``provider_batches``: one row per (batch id, key) with the model, a digest
of the server's address (no URL, no key) and a state, 'pending' until the key's reply is
stored ('stored') or handed back to ordinary calls ('fallback').

Any SQLite error (a file that is not a database, corrupted in the middle, a
full disk) is raised as :class:`CacheError` naming the file.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import socket
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

SCHEMA_VERSION = 1

_DDL = """
CREATE TABLE IF NOT EXISTS responses (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    key     TEXT NOT NULL,
    model   TEXT NOT NULL,
    status  TEXT NOT NULL CHECK (status IN ('ok', 'error')),
    created REAL NOT NULL,
    request TEXT NOT NULL,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_key ON responses (key);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS leases (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL);
CREATE TABLE IF NOT EXISTS provider_batches (
    batch_id TEXT NOT NULL,
    key      TEXT NOT NULL,
    model    TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    created  REAL NOT NULL,
    state    TEXT NOT NULL DEFAULT 'pending',
    PRIMARY KEY (batch_id, key)
);
CREATE INDEX IF NOT EXISTS provider_batches_key ON provider_batches (key);
"""

#: Seconds a lease lives unless renewed (runs renew every third of it).
LEASE_SECONDS = 60.0


class CacheError(ValueError):
    """The response cache file cannot be used (not SQLite, corrupted, unwritable).

    Raised by :func:`metacog.elicit.run` after a run during which the cache
    failed, ``partial`` holds the rows that run fetched or replayed and
    ``reason`` the cache's own message (else both are None).
    """

    partial = None
    reason = None


def _guarded(method):
    """Turn any sqlite3 error inside ``method`` into a :class:`CacheError` naming the file."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise CacheError(_message(self.path, exc)) from None
    return wrapper


def _message(path, exc) -> str:
    return (f"response cache {path}: not a usable SQLite file ({exc}); point --cache at another "
            "folder or remove the file (its answers are lost; they will be asked again).")


def _owner_alive(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    if host != socket.gethostname():
        return True  # cannot tell: trust the expiry
    try:
        os.kill(int(rest.split(":")[0]), 0)
    except (ProcessLookupError, ValueError):
        return False
    except PermissionError:
        return True
    return True


def canonical(obj: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(model: str, messages: list[dict[str, str]], params: dict[str, Any], template: str) -> str:
    """Content address of one call."""
    blob = canonical({"model": model, "messages": messages, "params": params, "template": template})
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def default_dir() -> Path:
    """``$METACOG_ELICIT_CACHE`` or ``~/.cache/metacog/elicit``."""
    from metacog.data.fetch import cache_dir

    env = os.environ.get("METACOG_ELICIT_CACHE")
    return Path(env).expanduser() if env else cache_dir() / "elicit"


@dataclass(frozen=True)
class Entry:
    key: str
    status: str  # 'ok' or 'error'
    payload: dict[str, Any]
    created: float


class Cache:
    """The response store. ``path`` is a folder (holding ``responses.sqlite``) or a ``.sqlite`` file."""

    FILENAME = "responses.sqlite"

    def __init__(self, path: str | os.PathLike | None = None, *, _owner: str | None = None):
        p = Path(path).expanduser() if path is not None else default_dir()
        if p.suffix not in (".sqlite", ".db", ".sqlite3"):
            p = p / self.FILENAME
        p.parent.mkdir(parents=True, exist_ok=True)
        self.path = p
        self._sibling = _owner is not None  # shares another object's leases: they are not its to drop
        self.owner = _owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        try:
            self._con = sqlite3.connect(str(p), timeout=30, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise CacheError(_message(p, exc)) from None
        try:
            self._wal()
            self._con.execute("PRAGMA synchronous=NORMAL")
            self._con.executescript(_DDL)
            self._con.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                              (str(SCHEMA_VERSION),))
        except sqlite3.Error as exc:
            self._con.close()
            raise CacheError(_message(p, exc)) from None

    def _wal(self) -> None:
        """Switch to WAL mode. Runs opening a new file at once may find it locked (this pragma does
        not wait on SQLite's busy timeout): try again for a few seconds."""
        for attempt in range(60):
            try:
                self._con.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 59:
                    raise
                time.sleep(0.02 + 0.01 * (attempt % 8))

    def __repr__(self) -> str:
        return f"Cache({str(self.path)!r})"

    def __enter__(self) -> "Cache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if not self._sibling:
            try:
                self._con.execute("DELETE FROM leases WHERE owner = ?", (self.owner,))
            except sqlite3.Error:
                pass
        self._con.close()

    def sibling(self) -> "Cache":
        """Another connection to the same file holding the same leases, for another thread's
        writes (one connection must not carry two threads' transactions); closing it keeps them."""
        return Cache(self.path, _owner=self.owner)

    @_guarded
    def put(self, key: str, model: str, status: str, request: dict[str, Any], payload: dict[str, Any]) -> None:
        """Append one finished call and release its lease (one transaction)."""
        with self._con:
            self._con.execute("BEGIN")
            self._con.execute(
                "INSERT INTO responses (key, model, status, created, request, payload) VALUES (?,?,?,?,?,?)",
                (key, model, status, time.time(), canonical(request), canonical(payload)),
            )
            self._con.execute("DELETE FROM leases WHERE key = ? AND owner = ?", (key, self.owner))

    @_guarded
    def claim(self, keys: Iterable[str], ttl: float = LEASE_SECONDS, answered_since: float | None = None
              ) -> list[str]:
        """Lease the ``keys`` no other live run holds; returns those now leased by this cache object.

        A key leased by a run that died (same host, pid gone) or whose lease
        expired is taken over. With ``answered_since``, keys that meanwhile got
        a row (an 'ok' one, or any one stored after that time) are not leased.
        """
        keys = list(dict.fromkeys(keys))
        now = time.time()
        got: list[str] = []
        with self._con:
            self._con.execute("BEGIN IMMEDIATE")
            held: dict[str, tuple[str, float]] = {}
            for i in range(0, len(keys), 900):
                chunk = keys[i:i + 900]
                held.update((k, (o, e)) for k, o, e in self._con.execute(
                    f"SELECT key, owner, expires FROM leases WHERE key IN ({','.join('?' * len(chunk))})",
                    chunk))
            answered: set[str] = set()
            if answered_since is not None:
                for i in range(0, len(keys), 900):
                    chunk = keys[i:i + 900]
                    answered.update(k for (k,) in self._con.execute(
                        f"SELECT DISTINCT key FROM responses WHERE key IN ({','.join('?' * len(chunk))}) "
                        "AND (status = 'ok' OR created >= ?)", [*chunk, answered_since]))
            alive: dict[str, bool] = {}
            for k in keys:
                if k in answered:
                    continue
                h = held.get(k)
                if h is not None and h[0] != self.owner and h[1] > now:
                    if alive.setdefault(h[0], _owner_alive(h[0])):
                        continue
                got.append(k)
            self._con.executemany("INSERT OR REPLACE INTO leases VALUES (?,?,?)",
                                  [(k, self.owner, now + ttl) for k in got])
        return got

    @_guarded
    def renew(self, ttl: float = LEASE_SECONDS) -> None:
        """Extend every lease this cache object holds."""
        self._con.execute("UPDATE leases SET expires = ? WHERE owner = ?", (time.time() + ttl, self.owner))

    @_guarded
    def release(self, keys: Iterable[str] | None = None) -> None:
        """Drop this object's leases on ``keys`` (all of them when None)."""
        if keys is None:
            self._con.execute("DELETE FROM leases WHERE owner = ?", (self.owner,))
        else:
            self._con.executemany("DELETE FROM leases WHERE key = ? AND owner = ?",
                                  [(k, self.owner) for k in keys])

    @_guarded
    def put_many(self, rows: Iterable[tuple[str, str, str, dict[str, Any], dict[str, Any]]]) -> int:
        """Append many (key, model, status, request, payload) rows in one transaction (imports)."""
        now = time.time()
        data = [(k, m, st, now, canonical(rq), canonical(pl)) for k, m, st, rq, pl in rows]
        with self._con:
            self._con.execute("BEGIN")
            self._con.executemany(
                "INSERT INTO responses (key, model, status, created, request, payload) "
                "VALUES (?,?,?,?,?,?)", data)
        return len(data)

    @_guarded
    def record_batch(self, batch_id: str, model: str, endpoint: str, keys: Iterable[str]) -> None:
        """Record that ``keys`` were sent in provider batch ``batch_id`` and release their leases
        (one transaction: another run sees either the lease or the record)."""
        keys = list(dict.fromkeys(keys))
        now = time.time()
        with self._con:
            self._con.execute("BEGIN IMMEDIATE")
            self._con.executemany("INSERT OR IGNORE INTO provider_batches VALUES (?,?,?,?,?,'pending')",
                                  [(batch_id, k, model, endpoint, now) for k in keys])
            self._con.executemany("DELETE FROM leases WHERE key = ? AND owner = ?",
                                  [(k, self.owner) for k in keys])

    @_guarded
    def pending_batches(self, keys: Iterable[str], endpoint: str) -> dict[str, str]:
        """key -> id of the provider batch at ``endpoint`` still holding it, for the ``keys`` that have one."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, str] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i:i + 900]
            out.update(self._con.execute(
                f"SELECT key, batch_id FROM provider_batches WHERE key IN ({','.join('?' * len(chunk))}) "
                "AND endpoint = ? AND state = 'pending' ORDER BY created", [*chunk, endpoint]))
        return out

    @_guarded
    def finish_batch(self, batch_id: str, rows: Iterable[tuple[str, str, str, dict[str, Any], dict[str, Any]]],
                     fallback: Iterable[str] = ()) -> set[str]:
        """Store the (key, model, status, request, payload) ``rows`` of batch ``batch_id`` whose
        key is still pending in it, and mark ``fallback`` keys as handed to ordinary calls (one
        transaction); returns the keys stored here (not those another run stored first)."""
        rows, fallback = list(rows), list(fallback)
        now = time.time()
        with self._con:
            self._con.execute("BEGIN IMMEDIATE")
            pending = {k for (k,) in self._con.execute(
                "SELECT key FROM provider_batches WHERE batch_id = ? AND state = 'pending'", (batch_id,))}
            mine = [r for r in rows if r[0] in pending]
            self._con.executemany(
                "INSERT INTO responses (key, model, status, created, request, payload) VALUES (?,?,?,?,?,?)",
                [(k, m, st, now, canonical(rq), canonical(pl)) for k, m, st, rq, pl in mine])
            self._con.executemany("UPDATE provider_batches SET state = ? WHERE batch_id = ? AND key = ?",
                                  [("stored", batch_id, r[0]) for r in mine]
                                  + [("fallback", batch_id, k) for k in fallback if k in pending])
        return {r[0] for r in mine}

    @_guarded
    def get_many(self, keys: Iterable[str]) -> dict[str, Entry]:
        """The current entry of each key that has one (latest 'ok', else latest 'error')."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, Entry] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i:i + 900]
            rows = self._con.execute(
                f"SELECT key, status, payload, created FROM responses WHERE key IN "
                f"({','.join('?' * len(chunk))}) ORDER BY id", chunk,
            ).fetchall()
            for key, status, payload, created in rows:
                old = out.get(key)
                if old is None or status == "ok" or old.status == "error":
                    out[key] = Entry(key, status, json.loads(payload), created)
        return out

    def get(self, key: str) -> Entry | None:
        return self.get_many([key]).get(key)

    @_guarded
    def count(self) -> int:
        return self._con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    @_guarded
    def summary(self) -> pd.DataFrame:
        """Rows and distinct keys per model and status."""
        return pd.read_sql_query(
            "SELECT model, status, COUNT(*) AS rows, COUNT(DISTINCT key) AS keys "
            "FROM responses GROUP BY model, status ORDER BY model, status", self._con)

    @_guarded
    def frame(self) -> pd.DataFrame:
        """Every stored row (key, model, status, created, request, payload as JSON text)."""
        return pd.read_sql_query("SELECT * FROM responses ORDER BY id", self._con)
