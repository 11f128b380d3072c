"""Per-process progress objects: `runs/<run_id>/progress/<attempt>.<worker>.json`.

Each process that writes a run's rows keeps one object with its tally and
rewrites it every few seconds (1 s on a local folder, 10 s on an object
store) while its attempt holds the run's lease, so that whoever watches the
run (the launching command, `evalbeam status` on any machine that sees the
folder) sums the objects of the attempt. The objects go with the lease when
the run is released.
"""
from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from typing import Any

from apache_beam.io.filesystems import FileSystems

from schemas.tables import CALL_ERROR_COUNTS
from transforms.progress.tally import CALL_FIELDS, Tally, forget, tally_for
from transforms.publish import lease as leases

FOLDER = "progress"
LOCAL_INTERVAL_S = 1.0
REMOTE_INTERVAL_S = 10.0


def progress_dir(output: str, run_id: str) -> str:
    return FileSystems.join(leases.run_dir(output, run_id), FOLDER)


def _worker_name() -> str:
    """Unique per process: host, pid and a random part (pids repeat across hosts)."""
    host = "".join(c if c.isalnum() or c in "-_" else "-" for c in socket.gethostname())[:40]
    return f"{host}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class ProgressWriter(leases.PerAttempt):
    """One per process and attempt (shared, like lease.Heartbeat): writes the
    attempt's tally every interval on a daemon thread while the lease is the
    attempt's, and once more when its last user stops."""

    _live: dict[tuple[str, str, str], "ProgressWriter"] = {}

    def __init__(self, output: str, run_id: str, attempt: str):
        self.tally: Tally = tally_for((output, run_id, attempt))
        self.path = FileSystems.join(progress_dir(output, run_id),
                                     f"{attempt}.{_worker_name()}.json")
        self.interval = REMOTE_INTERVAL_S if "://" in output else LOCAL_INTERVAL_S
        self.started = time.time()
        self._written = -1
        # write() runs on the daemon thread and on callers' threads: one at a time, or
        # a body snapshotted earlier can be renamed over a newer one (a stale object)
        self._write_lock = threading.Lock()
        super().__init__(output, run_id, attempt)

    def stop(self) -> bool:
        last = super().stop()
        if last:
            self._thread.join(timeout=5)
            forget(self.key)
        return last

    def write(self) -> bool:
        """Write the tally when it changed; False once the lease is not the attempt's."""
        with self._write_lock:
            return self._write()

    def _write(self) -> bool:
        output, run_id, attempt = self.key
        if not leases.holds(output, run_id, attempt):
            return False
        if self.tally.changes == self._written:
            return True
        changes = self.tally.changes
        body = {"attempt": attempt, "worker": self.path.rsplit("/", 1)[-1], "at": time.time(),
                "started": self.started, **self.tally.snapshot()}
        leases.write_atomic(self.path, json.dumps(body).encode())
        self._written = changes
        if not leases.holds(output, run_id, attempt):  # released meanwhile: leave nothing
            leases.delete_quietly([self.path])
            return False
        return True

    def _run(self) -> None:
        while True:
            try:
                if not self.write():
                    break
            except Exception:  # a missed write is not a failed run
                pass
            if self._stop.wait(self.interval):
                try:
                    self.write()  # the last counts of a finished bundle
                except Exception:
                    pass
                break


def worker_objects(output: str, run_id: str, attempt: str | None = None) -> list[str]:
    """The paths of the run's progress objects (of one attempt, or all)."""
    pattern = f"{attempt}.*.json" if attempt else "*.json"
    try:
        return [m.path for m in FileSystems.match(
            [FileSystems.join(progress_dir(output, run_id), pattern)])[0].metadata_list]
    except Exception:  # no folder yet
        return []


def read_totals(output: str, run_id: str, attempt: str) -> dict[str, Any] | None:
    """The attempt's counts summed over its workers' objects (None: none yet)."""
    parts = [p for p in (leases.read_json(path) for path in worker_objects(output, run_id,
                                                                           attempt)) if p]
    if not parts:
        return None
    calls: dict[str, dict[str, int]] = {}
    for part in parts:
        for endpoint, c in (part.get("calls") or {}).items():
            into = calls.setdefault(endpoint, dict.fromkeys(CALL_FIELDS, 0))
            for k in CALL_FIELDS:
                into[k] += int(c.get(k, 0))
    stages: dict[str, int] = {}
    for part in parts:
        for stage, n in (part.get("stages") or {}).items():
            stages[stage] = stages.get(stage, 0) + int(n)
    firsts = [p["first_turn_at"] for p in parts if p.get("first_turn_at")]
    return {"workers": len(parts), "calls": calls, "stages": stages,
            **{k: sum(int(p.get(k, 0)) for p in parts)
               for k in ("turns", "bot_errors", "invalid_rows", *CALL_ERROR_COUNTS)},
            "first_turn_at": min(firsts) if firsts else None,
            "started": min(float(p.get("started", p.get("at", 0))) for p in parts),
            "at": max(float(p.get("at", 0)) for p in parts)}
