"""The call cache: content-addressed answers of judge and embedding calls.

Key = sha256 over (endpoint base URL, request path and query, model, the exact
JSON request body, a salt). The salt separates calls whose bodies are equal on
purpose but must not share an answer (e.g. vote 2 of 3 at temperature 0.7).
A re-run over unchanged inputs therefore sends zero requests and reproduces
the same replies, even a reply that needed a repair round (the repair request
embeds the bad reply, so it has its own key).

Two tiers. Tier 1, CallCache, is one SQLite file in WAL mode on the worker's
own disk: one file instead of a million small ones, atomic writes, and safe
for the worker processes of one machine (each opens its own connection;
writers wait on the lock), but not over a network filesystem. Tier 2,
SharedCallCache (shared_cache.py), is one object per key under a folder every
worker reaches (gs://, s3://, hdfs://, local). TieredCache asks tier 1, then
tier 2 (copying a tier-2 answer into tier 1), and stores new answers in both.
Only successful HTTP answers are stored; failures are retried on the next run.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Mapping

from transforms.remote.shared_cache import SharedCallCache
from transforms.remote.sqlite_file import PerThread, is_locked

log = logging.getLogger(__name__)
LOCAL, SHARED = "local", "shared"  # the tier that answered a lookup
# How a cacheable call uses the cache (EndpointClient.post_json's cache_mode):
# look, and call on a miss; look only (never call); call without looking and
# replace the cached reply (one its caller found unusable)
USE, ONLY, REFRESH = "use", "only", "refresh"
SCHEMA = "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, response TEXT NOT NULL)"


def cache_key(base_url: str, path: str, params: Mapping[str, str], model: str,
              body: Mapping[str, Any], salt: str = "") -> str:
    """The content address of one request (stable across runs and processes)."""
    canonical = json.dumps({"url": base_url.rstrip("/"), "path": path, "params": dict(params),
                            "model": model, "body": body, "salt": salt},
                           sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def set_aside(path: str) -> str | None:
    """Rename a broken tier-1 file (and its -wal/-shm companions) to
    `<path>.corrupt-<UTC time>`, so the run starts a new one; returns the new
    name (None when another process moved it first)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = f"{path}.corrupt-{stamp}-{os.getpid()}"
    try:
        os.replace(path, aside)
    except FileNotFoundError:
        return None
    for suffix in ("-wal", "-shm"):
        try:
            os.replace(path + suffix, aside + suffix)
        except FileNotFoundError:
            pass
    return aside


def check_cache_file(path: str) -> str | None:
    """Before a run: a tier-1 file that is not a sound SQLite database (garbage,
    truncated, malformed pages) is set aside and rebuilt; returns the one line
    that says so (None: nothing to do). A cache must never cost a run."""
    if not os.path.isfile(path):
        return None
    try:
        conn = sqlite3.connect(path, timeout=60.0)
        try:
            found = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
        finally:
            conn.close()
        why = None if found == ["ok"] else f"quick_check: {'; '.join(map(str, found))[:200]}"
    except sqlite3.DatabaseError as exc:
        if is_locked(exc):  # another run is using it: sound, and not ours to move
            return None
        why = str(exc)
    if why is None:
        return None
    aside = set_aside(path)
    return (f"the call cache {path} is corrupt ({why}); it was set aside as {aside} and is "
            "rebuilt (cached answers are fetched again)")


class CallCache:
    """get/put of parsed JSON responses by key; one connection per thread.

    A file that turns out broken (not a database, malformed pages) never fails
    a call: at open it is set aside and rebuilt (a file locked past the timeout
    is sound and only turns the cache off); later, the cache turns itself off
    for this process (every lookup a miss), with one warning."""

    def __init__(self, path: str):
        self.path = path
        self.broken: str | None = None  # why this process no longer uses the file
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._file = PerThread(path, SCHEMA)
        try:
            self._file.conn()  # fail early (bad path, unwritable folder), not inside a call
        except sqlite3.DatabaseError as exc:
            if is_locked(exc):  # busy past the timeout, not broken: never set it aside
                self._off(exc)
                return
            aside = set_aside(path)
            log.warning("evalbeam: the call cache %s is corrupt (%s); set aside as %s, "
                        "starting a new one", path, exc, aside)
            try:
                self._file.conn()
            except sqlite3.DatabaseError as again:
                self._off(again)

    def _off(self, exc: Exception) -> None:
        if self.broken is None:
            self.broken = str(exc)
            log.warning("evalbeam: the call cache %s stopped working (%s); this process "
                        "goes on without it", self.path, exc)

    def get(self, key: str) -> Any | None:
        if self.broken:
            return None
        try:
            row = self._file.conn().execute("SELECT response FROM calls WHERE key = ?",
                                            (key,)).fetchone()
            return None if row is None else json.loads(row[0])
        except (sqlite3.DatabaseError, ValueError) as exc:  # a malformed page or row
            self._off(exc)
            return None

    def put(self, key: str, response: Any) -> None:
        if self.broken:
            return
        try:
            self._file.conn().execute(
                "INSERT OR REPLACE INTO calls (key, response) VALUES (?, ?)",
                (key, json.dumps(response, ensure_ascii=False)))
        except sqlite3.DatabaseError as exc:
            self._off(exc)

    async def lookup(self, key: str) -> tuple[Any | None, str | None]:
        """(response, LOCAL) or (None, None); the interface TieredCache shares."""
        hit = self.get(key)
        return hit, None if hit is None else LOCAL

    async def store(self, key: str, response: Any, replace: bool = False) -> None:
        self.put(key, response)  # tier 1 always replaces what the key held

    def __len__(self) -> int:
        if self.broken:
            return 0
        return self._file.conn().execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        """Close every thread's connection: the runtime calls it once its loop's
        thread has stopped (the loop's thread made most of the lookups, and its
        connection used to stay open until the process ended)."""
        self._file.close()


@dataclass(frozen=True)
class CacheSpec:
    """Where a run's call cache lives (decided by the launcher, opened on workers).

    path: tier 1's SQLite file; None = a file in the worker's temp folder
    (a cluster's launcher cannot name a folder on every worker).
    shared: tier 2's folder (gs://, s3://, hdfs:// or local); None = no tier 2."""
    path: str | None = None
    shared: str | None = None


class TieredCache:
    """Tier 1 (this machine's SQLite) in front of tier 2 (objects every worker reads)."""

    def __init__(self, local: CallCache, shared: SharedCallCache):
        self.local, self.shared = local, shared

    async def lookup(self, key: str) -> tuple[Any | None, str | None]:
        hit = self.local.get(key)
        if hit is not None:
            return hit, LOCAL
        hit = await self.shared.aget(key)
        if hit is None:
            return None, None
        self.local.put(key, hit)
        return hit, SHARED

    async def store(self, key: str, response: Any, replace: bool = False) -> None:
        """Both tiers; replace: tier 2's object too, although it is a valid one."""
        self.local.put(key, response)
        await self.shared.aput(key, response, replace)

    def close(self) -> None:
        self.local.close()
        self.shared.close()


def worker_cache_path(spec: CacheSpec) -> str:
    """Tier 1's file on this worker: the spec's, or one in the temp folder per tier 2."""
    if spec.path:
        return spec.path
    tag = hashlib.sha256((spec.shared or "").encode("utf-8")).hexdigest()[:12]
    return os.path.join(tempfile.gettempdir(), "evalbeam-cache", f"calls-{tag}.sqlite")


def open_cache(spec: CacheSpec | str | None) -> CallCache | TieredCache | None:
    """The cache a worker process uses; a plain string is a tier-1 file alone."""
    if spec is None:
        return None
    if isinstance(spec, str):
        return CallCache(spec)
    local = CallCache(worker_cache_path(spec))
    return TieredCache(local, SharedCallCache(spec.shared)) if spec.shared else local
