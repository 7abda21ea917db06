"""Content-addressed, append-only response cache in SQLite (WAL mode).

The key of a call is the sha256 of (model, messages, parameters, template
version) in canonical JSON. Every finished call (success or final failure)
appends one row in its own transaction, so a run killed with SIGKILL loses at
most the calls in flight, never a committed row, and never leaves half a row:
the restarted run re-asks only the keys without a row. A key's answer is its
latest 'ok' row; failing that, its latest 'error' row (re-asked only with
``retry_failed``). Rows are never updated or deleted.

No secrets go in: the stored request is the model id, the messages and the
sampling parameters; API keys live only in the environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
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
"""


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

    def __init__(self, path: str | os.PathLike | None = None):
        p = Path(path).expanduser() if path is not None else default_dir()
        if p.suffix not in (".sqlite", ".db", ".sqlite3"):
            p = p / self.FILENAME
        p.parent.mkdir(parents=True, exist_ok=True)
        self.path = p
        self._con = sqlite3.connect(str(p), timeout=30, isolation_level=None, check_same_thread=False)
        try:
            self._con.execute("PRAGMA journal_mode=WAL")
            self._con.execute("PRAGMA synchronous=NORMAL")
            self._con.executescript(_DDL)
            self._con.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                              (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError as exc:
            self._con.close()
            raise ValueError(f"response cache {p}: not a usable SQLite file ({exc}); "
                             "point --cache at another folder or remove the file.") from None

    def __repr__(self) -> str:
        return f"Cache({str(self.path)!r})"

    def __enter__(self) -> "Cache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._con.close()

    def put(self, key: str, model: str, status: str, request: dict[str, Any], payload: dict[str, Any]) -> None:
        """Append one finished call (its own transaction)."""
        self._con.execute(
            "INSERT INTO responses (key, model, status, created, request, payload) VALUES (?,?,?,?,?,?)",
            (key, model, status, time.time(), canonical(request), canonical(payload)),
        )

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

    def count(self) -> int:
        return self._con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def summary(self) -> pd.DataFrame:
        """Rows and distinct keys per model and status."""
        return pd.read_sql_query(
            "SELECT model, status, COUNT(*) AS rows, COUNT(DISTINCT key) AS keys "
            "FROM responses GROUP BY model, status ORDER BY model, status", self._con)

    def frame(self) -> pd.DataFrame:
        """Every stored row (key, model, status, created, request, payload as JSON text)."""
        return pd.read_sql_query("SELECT * FROM responses ORDER BY id", self._con)
