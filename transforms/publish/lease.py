"""The lease on a run id: one attempt at a time, and who is running it.

A run takes `runs/<run_id>/lease.json` before it starts (create-if-absent) and
its Finalize step releases it after the completion marker (the manifest) is
in place, so neither depends on the launching process (a detached run, a
Dataflow job). While the attempt runs, each process that runs it writes its
own `runs/<run_id>/heartbeat.<attempt>.<host>-<pid>.json` every few seconds
(the launcher until the workers have started, then every worker). A second run of
the same id is refused and names the holder, unless the lease is free to take
over: its attempt is already committed, it was marked failed, its heartbeat is
older than its ttl, or its owner was a local process on this host that no
longer exists. Taking over is itself exclusive (`takeover.<attempt>` is
created if absent), so two newcomers cannot both win; a marker whose taker died
before it wrote the lease is passed over for the next (`takeover.<attempt>.2`).

On a local filesystem create-if-absent is O_EXCL (atomic). Object stores
(gs://, s3://) get a best-effort check-then-write followed by a read-back.
"""
from __future__ import annotations

import getpass
import json
import os
import socket
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any, Callable

from apache_beam.io.filesystems import FileSystems

DEFAULT_TTL_S = 300.0
# how long a launcher that submitted a remote job keeps the lease alive while
# the job's workers start (Dataflow: minutes; a large custom image: longer)
STARTUP_WAIT_S = 1800.0
LEASE = "lease.json"


class LeaseHeld(RuntimeError):
    """Another attempt holds the run id's lease; the message names it."""


@dataclass(frozen=True)
class Lease:
    run_id: str
    attempt: str
    host: str
    pid: int
    user: str
    acquired_at: float
    ttl_s: float
    runner_local: bool = True   # the pid runs the pipeline (not a remote job's launcher)
    state: str = "running"      # running | failed
    reason: str | None = None   # why it failed
    planned_rows: int | None = None  # the run's input rows, for its progress (status)
    bots: int | None = None          # how many bots answer each case

    def owner(self) -> str:
        return f"{self.user}@{self.host} pid {self.pid}"


def run_dir(output: str, run_id: str) -> str:
    return FileSystems.join(output, "runs", run_id)


def lease_path(output: str, run_id: str) -> str:
    return FileSystems.join(run_dir(output, run_id), LEASE)


def process_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def heartbeat_path(output: str, run_id: str, attempt: str, process: str | None = None) -> str:
    """One heartbeat object per process that runs the attempt (its launcher, each
    worker process): an object store takes about one write per second to one
    object, which a shared heartbeat of ~30 workers beating every 30 s exceeds."""
    return FileSystems.join(run_dir(output, run_id),
                            f"heartbeat.{attempt}.{process or process_name()}.json")


def heartbeats(output: str, run_id: str, attempt: str) -> list[tuple[str, float]]:
    """(path, last written) of the attempt's heartbeat objects, from one listing."""
    pattern = FileSystems.join(run_dir(output, run_id), f"heartbeat.{attempt}.*.json")
    try:
        found = FileSystems.match([pattern])[0].metadata_list
    except Exception:  # none yet
        return []
    return [(m.path, float(m.last_updated_in_seconds or 0.0)) for m in found]


def _local(path: str) -> bool:
    return "://" not in path


def read_json(path: str) -> dict | None:
    """A small JSON file, or None when it is missing or unreadable."""
    try:
        with FileSystems.open(path) as fh:
            data = json.loads(fh.read().decode("utf-8"))
        return data if isinstance(data, dict) else None
    except Exception:  # missing, half written by a killed process, not JSON
        return None


def write_atomic(path: str, data: bytes) -> None:
    """Replace a file all at once: a reader sees the old or the new bytes, never a
    mix (write beside it, then rename; an object store's write is atomic)."""
    if not _local(path):
        with FileSystems.create(path) as fh:
            fh.write(data)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def delete_quietly(paths: list[str]) -> None:
    for path in paths:
        try:
            FileSystems.delete([path])
        except Exception:  # already gone
            pass


def _create_exclusive(path: str, data: bytes) -> bool:
    """Create a file only if it does not exist; False when it does."""
    if _local(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return True
    if FileSystems.exists(path):
        return False
    write_atomic(path, data)
    return True


def _encode(lease: Lease) -> bytes:
    return json.dumps(asdict(lease), indent=2).encode("utf-8")


_LEASE_TYPES = {"run_id": str, "attempt": str, "host": str, "pid": int, "user": str,
                "acquired_at": (int, float), "ttl_s": (int, float), "runner_local": bool,
                "state": str, "reason": (str, type(None))}


def read_lease(output: str, run_id: str) -> Lease | None:
    """The run id's lease, or None (none, or not a lease this version wrote)."""
    return _lease_of(read_json(lease_path(output, run_id)))


def _lease_of(data: dict | None) -> Lease | None:
    """A lease (or a takeover marker) read back, or None (not one this version wrote)."""
    try:
        lease = Lease(**data) if data else None
    except TypeError:  # not a lease of this version
        return None
    if lease is not None and not all(isinstance(getattr(lease, k), t)
                                     for k, t in _LEASE_TYPES.items()):
        return None  # tampered: a field of the wrong type
    return lease


def last_heartbeat(output: str, lease: Lease) -> float:
    """When the lease's attempt last showed a sign of life (its newest heartbeat)."""
    return max([lease.acquired_at] + [t for _, t in heartbeats(output, lease.run_id,
                                                                 lease.attempt)])


def _process_gone(lease: Lease) -> bool:
    """The owner was a local process on this host, and it no longer exists."""
    return lease.runner_local and local_process_gone(lease.host, lease.pid)


def local_process_gone(host: str, pid: int) -> bool:
    """A process of this host that no longer exists (one of another host: False)."""
    if host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def why_free(output: str, lease: Lease, committed_attempt: str | None,
             now: float | None = None) -> str | None:
    """Why the lease may be taken over (None: it is held)."""
    now = time.time() if now is None else now
    if lease.attempt == committed_attempt:
        return "its attempt finished (the completion marker names it)"
    if lease.state == "failed":
        return f"its attempt failed: {lease.reason}"
    idle = now - last_heartbeat(output, lease)
    if idle > lease.ttl_s:
        return f"no heartbeat for {idle:.0f} s (ttl {lease.ttl_s:g} s)"
    if _process_gone(lease):
        return f"its process {lease.pid} on {lease.host} is gone"
    return None


def new_lease(run_id: str, attempt: str, ttl_s: float, runner_local: bool,
              pid: int | None = None, planned_rows: int | None = None,
              bots: int | None = None) -> Lease:
    return Lease(run_id=run_id, attempt=attempt, host=socket.gethostname(),
                 pid=os.getpid() if pid is None else pid, user=_user(), acquired_at=time.time(),
                 ttl_s=ttl_s, runner_local=runner_local, planned_rows=planned_rows, bots=bots)


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in a container
        return str(os.getuid())


def acquire(output: str, lease: Lease, committed_attempt: Callable[[], str | None]
            ) -> tuple[Lease, str | None]:
    """Take the run id's lease for `lease.attempt` (acquired now); returns the lease
    and which attempt was taken over and why (None if the lease was free), or
    raises LeaseHeld naming the holder."""
    lease = Lease(**{**asdict(lease), "acquired_at": time.time()})
    path = lease_path(output, lease.run_id)
    for _ in range(3):  # the lease may vanish (released) between looking and taking
        if _create_exclusive(path, _encode(lease)):
            return _confirm(output, lease, None)
        held = read_lease(output, lease.run_id)
        if held is None:
            stamp = _modified(path)
            if stamp is None:
                continue  # released meanwhile
            # unreadable: its writer was killed while creating it
            held = Lease(lease.run_id, f"unreadable-{stamp}", "?", 0, "?", 0.0, 0.0, False,
                         "failed", "the lease file is unreadable")
        reason = why_free(output, held, committed_attempt())
        if reason is None:
            beat = time.time() - last_heartbeat(output, held)
            raise LeaseHeld(
                f"run id {lease.run_id!r} is being run by {held.owner()} (attempt "
                f"{held.attempt}, started {_iso(held.acquired_at)}, last heartbeat "
                f"{beat:.0f} s ago); it can be taken over when its heartbeat is "
                f"{held.ttl_s:g} s old (see: evalbeam status)")
        if not _claim_takeover(output, lease, held.attempt):
            raise LeaseHeld(f"run id {lease.run_id!r}: another run is taking over the stale "
                            f"lease of attempt {held.attempt} right now")
        current = read_lease(output, lease.run_id)
        if current is not None and current.attempt != held.attempt:
            raise LeaseHeld(f"run id {lease.run_id!r} was taken by {current.owner()} "
                            f"(attempt {current.attempt}) meanwhile")
        write_atomic(path, _encode(lease))
        return _confirm(output, lease, f"attempt {held.attempt} ({reason})")
    raise LeaseHeld(f"run id {lease.run_id!r}: could not take its lease (it keeps changing)")


def _claim_takeover(output: str, lease: Lease, attempt: str) -> bool:
    """Create takeover.<attempt> exclusively: only one newcomer takes a stale lease
    over. A marker whose taker died before it wrote the lease (its local process is
    gone, or the marker is older than its ttl) would refuse every later run of the
    id for good: it is passed over for the next one (takeover.<attempt>.2, ...),
    itself created exclusively, so two newcomers still cannot both win."""
    folder = run_dir(output, lease.run_id)
    for n in range(1, 101):
        marker = FileSystems.join(folder, f"takeover.{attempt}" + (f".{n}" if n > 1 else ""))
        if _create_exclusive(marker, _encode(lease)):
            return True
        taker = _lease_of(read_json(marker))
        if taker is None:  # unreadable: killed while writing it; judged by its age
            stamp = _modified(marker)
            if stamp is not None and time.time() - stamp > lease.ttl_s:
                continue
            return False
        if not (_process_gone(taker) or time.time() - taker.acquired_at > taker.ttl_s):
            return False  # its taker is at work right now
    return False


def _modified(path: str) -> int | None:
    """A file's modification time (whole seconds), None when it does not exist."""
    try:
        return int(FileSystems.match([path])[0].metadata_list[0].last_updated_in_seconds)
    except Exception:
        return None


def _confirm(output: str, lease: Lease, taken_over: str | None) -> tuple[Lease, str | None]:
    """Read the lease back (an object store has no create-if-absent)."""
    current = read_lease(output, lease.run_id)
    if current is None or current.attempt != lease.attempt:
        holder = current.owner() if current else "someone"
        raise LeaseHeld(f"run id {lease.run_id!r} was taken by {holder} at the same moment")
    return lease, taken_over


def holds(output: str, run_id: str, attempt: str) -> bool:
    current = read_lease(output, run_id)
    return current is not None and current.attempt == attempt


def update(output: str, lease: Lease, **changes: Any) -> Lease:
    """Rewrite our own lease (a new owner pid, the failed state)."""
    changed = Lease(**{**asdict(lease), **changes})
    if holds(output, lease.run_id, lease.attempt):
        write_atomic(lease_path(output, lease.run_id), _encode(changed))
    return changed


def release(output: str, run_id: str, attempt: str) -> None:
    """Give the lease up (after the completion marker is written), and the
    heartbeat and takeover markers that belonged to it."""
    folder = run_dir(output, run_id)
    if holds(output, run_id, attempt):
        delete_quietly([lease_path(output, run_id)])
    progress = FileSystems.join(folder, "progress")  # transforms/publish/progress_objects.py
    delete_quietly([p for p, _ in heartbeats(output, run_id, attempt)]
                   + _matching(folder, "takeover.*") + _matching(progress, f"{attempt}.*"))
    if _local(progress):
        try:
            os.rmdir(progress)  # only when empty: another attempt's objects stay
        except OSError:
            pass


def mark_failed(output: str, lease: Lease, reason: str) -> Lease:
    """The attempt failed: its lease says why (what `status` reports and what
    frees the run id for the next run) and its heartbeats go, so nothing of it
    looks alive."""
    failed = update(output, lease, state="failed", reason=reason)
    delete_quietly([p for p, _ in heartbeats(output, lease.run_id, lease.attempt)])
    return failed


def _matching(folder: str, pattern: str) -> list[str]:
    try:
        return [m.path for m in FileSystems.match([FileSystems.join(folder, pattern)])[0]
                .metadata_list]
    except Exception:
        return []


def stale_files(output: str, run_id: str, attempt: str) -> list[str]:
    """Heartbeats, commit flags and temporary files of other attempts of the run id."""
    folder = run_dir(output, run_id)
    progress = FileSystems.join(folder, "progress")  # transforms/publish/progress_objects.py
    return [p for p in _matching(folder, "heartbeat.*.json") + _matching(folder, "*.tmp-*")
            + _matching(folder, "committing.*.json")
            + _matching(folder, "log.*.txt") + _matching(folder, "report.*.md")
            + _matching(folder, "report.*.html")
            + _matching(progress, "*.json") + _matching(progress, "*.tmp-*")
            if f".{attempt}." not in p.rsplit("/", 1)[-1]
            and not p.rsplit("/", 1)[-1].startswith(f"{attempt}.")]


def wait_for_workers(output: str, run_id: str, attempt: str, job_ended: Callable[[], bool],
                     timeout_s: float = STARTUP_WAIT_S, poll_s: float = 5.0) -> str:
    """After submitting a remote job, while this process's Heartbeat keeps the
    lease alive: wait until another process (a worker) beats for the attempt
    ('workers'), the job has ended or the lease is no longer the attempt's
    ('ended'), or timeout_s ('timeout'). A worker's start-up can take longer
    than the lease's ttl; without this a slow start read as a dead run."""
    mine = heartbeat_path(output, run_id, attempt)
    deadline = time.monotonic() + timeout_s
    while True:
        if any(path != mine for path, _ in heartbeats(output, run_id, attempt)):
            return "workers"
        if job_ended() or not holds(output, run_id, attempt):
            return "ended"
        if time.monotonic() >= deadline:
            return "timeout"
        time.sleep(poll_s)


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class PerAttempt:
    """A daemon thread per process and attempt, shared by whoever starts it
    (the launcher, DoFns on workers) and stopped when its last user stops.
    Subclasses set `_live` (their own registry) and `_run` (the loop)."""

    _live: dict
    _lock = threading.Lock()

    def __init__(self, output: str, run_id: str, attempt: str):
        self.key = (output, run_id, attempt)
        self.users = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"evalbeam-{type(self).__name__}",
                                        daemon=True)

    @classmethod
    def start(cls, output: str, run_id: str, attempt: str, *args: Any):
        with cls._lock:
            shared = cls._live.get((output, run_id, attempt))
            if shared is None:
                shared = cls._live[(output, run_id, attempt)] = cls(output, run_id, attempt,
                                                                    *args)
                shared._thread.start()
            shared.users += 1
            return shared

    def stop(self) -> bool:
        """One user fewer; True (and the thread told to stop) when it was the last."""
        with self._lock:
            self.users -= 1
            if self.users > 0:
                return False
            self._live.pop(self.key, None)
        self._stop.set()
        return True

    def _run(self) -> None:
        raise NotImplementedError


class Heartbeat(PerAttempt):
    """Writes this process's heartbeat of the attempt every `ttl / 5` seconds (at
    most 30 s) on a daemon thread, while the lease is still the attempt's and
    not failed. One per process and attempt, shared by whoever starts it (the
    launcher, DoFns on workers)."""

    _live: dict[tuple[str, str, str], "Heartbeat"] = {}

    def __init__(self, output: str, run_id: str, attempt: str, ttl_s: float):
        super().__init__(output, run_id, attempt)
        self.interval = max(0.2, min(30.0, ttl_s / 5))

    def _running(self) -> bool:
        """The lease is still this attempt's, and not marked failed."""
        output, run_id, attempt = self.key
        current = read_lease(output, run_id)
        return current is not None and current.attempt == attempt and current.state != "failed"

    def beat(self) -> bool:
        """One heartbeat; False once the lease is no longer this running attempt's."""
        output, run_id, attempt = self.key
        if not self._running():
            return False
        path = heartbeat_path(output, run_id, attempt)
        write_atomic(path, json.dumps({"attempt": attempt, "at": time.time(),
                                       "host": socket.gethostname(),
                                       "pid": os.getpid()}).encode())
        if not self._running():  # released or failed meanwhile: leave nothing behind
            delete_quietly([path])
            return False
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.beat():
                    break
            except Exception:  # a missed beat is not a failed run; the next one may work
                pass
            self._stop.wait(self.interval)
        with self._lock:
            if self._live.get(self.key) is self:
                self._live.pop(self.key, None)


STOP_POLL_S = 1.0  # how often a process that sends requests reads its attempt's lease


def stop_reason(output: str, run_id: str, attempt: str) -> str | None:
    """Why the attempt will not be published (None: it may be), as Finalize's
    check says, from the lease read back: it was marked failed (its launcher
    was stopped: SIGTERM, Ctrl-C) or another attempt took it over. A lease
    that cannot be read (a read that failed, or released after the commit) is
    no reason: it would fail the calls of a run that goes on to publish."""
    current = read_lease(output, run_id)
    if current is None:
        return None
    if current.attempt != attempt:
        return f"attempt {current.attempt} took its lease over"
    if current.state == "failed":
        return (current.reason or "marked failed").split(";")[0]
    return None


class AttemptWatch(PerAttempt):
    """Reads the attempt's lease every STOP_POLL_S on a daemon thread and keeps
    why it was stopped in `stopped` (None while it runs): what the remote
    calls of this process check before each request (an attribute read, no
    file read per request), on any machine that sees the output folder. One
    per process and attempt, shared by the DoFns that send requests."""

    _live: dict[tuple[str, str, str], "AttemptWatch"] = {}

    def __init__(self, output: str, run_id: str, attempt: str):
        super().__init__(output, run_id, attempt)
        self.stopped: str | None = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.stopped = stop_reason(*self.key)
            except Exception:  # a failed read is no stop; the next one may work
                pass
            if self.stopped is not None:
                return  # for good: a stopped attempt is never published
            self._stop.wait(STOP_POLL_S)
