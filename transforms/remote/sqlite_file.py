"""One SQLite file shared by a run's worker processes (the call cache, the
spend-cap ledger): opened in WAL mode, with its table, by processes that may
all start at one moment."""
from __future__ import annotations

import sqlite3
import time

TIMEOUT_S = 60.0


def is_locked(exc: BaseException) -> bool:
    """A lock held by another process: the file is sound, only busy."""
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


def open_shared(path: str, schema: str, timeout_s: float | None = None) -> sqlite3.Connection:
    """A connection in WAL mode (a commit is an append, not an fsync'd copy),
    with `schema` created.

    Switching a new file to WAL takes an exclusive lock, and SQLite answers
    "database is locked" at once, without waiting on its busy handler, to a
    second process doing the same: worker processes that start together did
    (a judge worker died at start-up; a sound cache was set aside as corrupt).
    So the set-up is retried, with a growing pause, until `timeout_s`."""
    timeout_s = TIMEOUT_S if timeout_s is None else timeout_s
    deadline = time.monotonic() + timeout_s
    pause = 0.005
    while True:
        conn = sqlite3.connect(path, timeout=timeout_s, isolation_level=None,
                               check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(schema)
            return conn
        except sqlite3.DatabaseError as exc:
            conn.close()
            if not is_locked(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.25)
