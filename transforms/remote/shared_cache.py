"""SharedCallCache: the second tier of the call cache, shared by every worker.

A worker's SQLite file (tier 1, transforms/remote/cache.py) is one machine's:
SQLite's WAL mode does not work over a network filesystem. Tier 2 is one small
object per cache key under any folder Beam's FileSystems reach (gs://, s3://,
hdfs://, a local or mounted path), so workers on different machines, and
tomorrow's run, share the answers:

    <root>/<key[:2]>/<key>      (256 prefix folders; the key is a sha256)

An object is written once and never trusted blindly. Its first line is a
header `evalbeam-call/1 <key> <sha256 of the body> <body length>`, then the
JSON body; an object whose header, length or checksum does not match (a
partial upload, a truncated copy, bytes flipped) is ignored and rewritten.
A writer puts the bytes under a temporary name and then publishes them under
the key's name: on a local or mounted filesystem with a hard link, which is
atomic and never replaces an existing object (create-if-absent); elsewhere
with FileSystems.rename after checking that no valid object exists (object
stores replace objects atomically, so a reader sees a whole object or none;
two workers racing on one key both write a valid answer for it).

Lookups and writes block on the network, so they run on this cache's own
thread pool, never on the asyncio loop that carries the calls.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.localfilesystem import LocalFileSystem

MAGIC = b"evalbeam-call/1"
IO_THREADS = 16  # object reads and writes in flight per worker process
_RAW = CompressionTypes.UNCOMPRESSED
_log = logging.getLogger(__name__)


def encode_object(key: str, response: Any) -> bytes:
    """The stored form of one response: header line + JSON body."""
    body = json.dumps(response, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    digest = hashlib.sha256(body).hexdigest()
    return b" ".join((MAGIC, key.encode("ascii"), digest.encode("ascii"),
                      str(len(body)).encode("ascii"))) + b"\n" + body


def decode_object(key: str, blob: bytes) -> Any | None:
    """The response stored in blob, or None unless blob is a whole, intact object for key."""
    header, newline, body = blob.partition(b"\n")
    parts = header.split(b" ")
    if (not newline or len(parts) != 4 or parts[0] != MAGIC or parts[1] != key.encode("ascii")
            or parts[3] != str(len(body)).encode("ascii")
            or parts[2] != hashlib.sha256(body).hexdigest().encode("ascii")):
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def object_path(root: str, key: str) -> str:
    return FileSystems.join(root, key[:2], key)


def publish_local(tmp: str, final: str) -> bool:
    """final := tmp unless final exists (a hard link is atomic and never replaces);
    True when this call published it, False when another writer was first."""
    try:
        os.link(tmp, final)
    except FileExistsError:
        return False  # another worker published it first
    except OSError:  # no hard links here (some FUSE mounts): a plain rename
        os.replace(tmp, final)
    return True


class SharedCallCache:
    """get/put of parsed JSON responses by key, one object each under root."""

    def __init__(self, root: str):
        self.root = root.rstrip("/")
        self._local = isinstance(FileSystems.get_filesystem(self.root), LocalFileSystem)
        self._pool = ThreadPoolExecutor(IO_THREADS, thread_name_prefix="evalbeam-shared-cache")
        self._lock = threading.Lock()
        self.write_failures = 0

    def _read(self, path: str) -> bytes | None:
        try:
            with FileSystems.open(path, compression_type=_RAW) as fh:
                return fh.read()
        except Exception:  # noqa: BLE001 - absent or unreadable: a miss either way
            return None

    def get(self, key: str) -> Any | None:
        blob = self._read(object_path(self.root, key))
        return None if blob is None else decode_object(key, blob)

    def put(self, key: str, response: Any, replace: bool = False) -> bool:
        """Store response unless a valid object exists; True when this call's bytes
        were published, False when a valid object was there or another writer won the
        race (on an object store, where a rename replaces, the last of two racing
        writers wins and both say True; both wrote a valid answer for the key).
        replace: the caller found the object's reply unusable (a judge reply an
        older version kept): it is replaced like a corrupt one.
        A failed write is logged and counted, never raised (the call itself succeeded)."""
        final = object_path(self.root, key)
        tmp = f"{final}.tmp-{uuid.uuid4().hex}"
        try:
            existing = self._read(final)
            if existing is not None:
                if not replace and decode_object(key, existing) is not None:
                    return False  # written once; a valid object is never replaced
                # corrupt, partial or unusable: never trusted, rewritten
                FileSystems.delete([final])
            with FileSystems.create(tmp, compression_type=_RAW) as fh:
                fh.write(encode_object(key, response))
            if self._local:
                return publish_local(tmp, final)
            FileSystems.rename([tmp], [final])
            return True
        except Exception as exc:  # noqa: BLE001
            with self._lock:
                self.write_failures += 1
                first = self.write_failures == 1
            if first:
                _log.warning("evalbeam: shared call cache %s: cannot write %s: %s",
                             self.root, final, exc)
            return False
        finally:
            if self._local and os.path.exists(tmp):
                os.remove(tmp)

    async def aget(self, key: str) -> Any | None:
        return await asyncio.wrap_future(self._pool.submit(self.get, key))

    async def aput(self, key: str, response: Any, replace: bool = False) -> bool:
        return await asyncio.wrap_future(self._pool.submit(self.put, key, response, replace))

    def close(self) -> None:
        self._pool.shutdown(wait=True)
