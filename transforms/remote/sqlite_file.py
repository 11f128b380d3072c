"""One SQLite file shared by a run's worker processes (the call cache, the
spend-cap ledger): opened in WAL mode, with its table, by processes that may
all start at one moment."""
from __future__ import annotations

import sqlite3
import threading
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
            conn.executescript(schema)  # its tables (one statement or several)
            return conn
        except sqlite3.DatabaseError as exc:
            conn.close()
            if not is_locked(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


class PerThread:
    """A process's connections to one shared file, one per thread (a
    transaction belongs to its connection: the asyncio loop's thread and a
    DoFn's must not share one)."""

    def __init__(self, path: str, schema: str):
        self.path, self._schema = path, schema
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = open_shared(self.path, self._schema)
            with self._lock:
                self._all.append(conn)
        return conn

    def close(self) -> None:
        """Close every thread's connection (called once the threads are done)."""
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()
        self._local = threading.local()
