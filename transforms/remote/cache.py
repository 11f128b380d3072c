"""CallCache: a content-addressed, on-disk cache of judge and embedding calls.

Key = sha256 over (endpoint base URL, request path and query, model, the exact
JSON request body, a salt). The salt separates calls whose bodies are equal on
purpose but must not share an answer (e.g. vote 2 of 3 at temperature 0.7).
A re-run over unchanged inputs therefore sends zero requests and reproduces
the same replies, even a reply that needed a repair round (the repair request
embeds the bad reply, so it has its own key).

Storage is one SQLite file in WAL mode: one file instead of a million small
ones, atomic writes, and safe for several worker processes of one machine
(each opens its own connection; writers wait on the lock). Only successful
HTTP answers are stored; failures are retried on the next run.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from typing import Any, Mapping

SCHEMA = "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, response TEXT NOT NULL)"


def cache_key(base_url: str, path: str, params: Mapping[str, str], model: str,
              body: Mapping[str, Any], salt: str = "") -> str:
    """The content address of one request (stable across runs and processes)."""
    canonical = json.dumps({"url": base_url.rstrip("/"), "path": path, "params": dict(params),
                            "model": model, "body": body, "salt": salt},
                           sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class CallCache:
    """get/put of parsed JSON responses by key; one connection per thread."""

    def __init__(self, path: str):
        self.path = path
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._local = threading.local()
        self._conn()  # fail early (bad path, unwritable folder), not inside a call

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(SCHEMA)
            self._local.conn = conn
        return conn

    def get(self, key: str) -> Any | None:
        row = self._conn().execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, response: Any) -> None:
        self._conn().execute("INSERT OR REPLACE INTO calls (key, response) VALUES (?, ?)",
                             (key, json.dumps(response, ensure_ascii=False)))

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
