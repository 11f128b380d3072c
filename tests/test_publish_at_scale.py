"""The publish protocol at scale (issue 24): one heartbeat object per process
(an object store takes about one write per second to one object), a launcher
that beats until the workers of a remote job do, a failed attempt that leaves
nothing that looks alive, and Finalize's moves in parallel and resumable."""
from __future__ import annotations

import os
import threading
import time

from transforms.publish import lease as leases

A = "a" * 12


def _held(out: str, ttl: float = 60.0) -> leases.Lease:
    lease, _ = leases.acquire(out, leases.new_lease("r", A, ttl, runner_local=False),
                              lambda: None)
    return lease


def _beat_as(out: str, process: str, at: float | None = None) -> str:
    """A heartbeat object of another process (a worker elsewhere)."""
    path = leases.heartbeat_path(out, "r", A, process)
    leases.write_atomic(path, b"{}")
    if at is not None:
        os.utime(path, (at, at))
    return path


def test_each_process_beats_in_its_own_object_and_the_newest_counts(tmp_path):
    out = str(tmp_path / "out")
    lease = _held(out)
    beat = leases.Heartbeat.start(out, "r", A, 1.0)
    try:
        old = _beat_as(out, "worker-1", at=time.time() - 3600)
        time.sleep(0.4)
        paths = {p for p, _ in leases.heartbeats(out, "r", A)}
        assert paths == {old, leases.heartbeat_path(out, "r", A)}  # two objects, not one shared
        # the newest counts: this process's beat, not the hour-old one (this process
        # may beat again between two reads, so its object's time is read around it)
        before = os.stat(leases.heartbeat_path(out, "r", A)).st_mtime
        newest = leases.last_heartbeat(out, lease)
        after = os.stat(leases.heartbeat_path(out, "r", A)).st_mtime
        assert before <= newest <= after and newest > os.stat(old).st_mtime + 3000
    finally:
        beat.stop()
    leases.release(out, "r", A)
    assert leases.heartbeats(out, "r", A) == [] and leases.read_lease(out, "r") is None


def test_a_failed_attempt_leaves_no_heartbeat_and_its_beats_stop(tmp_path):
    out = str(tmp_path / "out")
    lease = _held(out)
    beat = leases.Heartbeat.start(out, "r", A, 1.0)
    _beat_as(out, "worker-1")
    time.sleep(0.4)
    leases.mark_failed(out, lease, "boom")
    time.sleep(0.6)  # a beat after the failure deletes itself and stops
    try:
        assert leases.heartbeats(out, "r", A) == []
        assert not beat._thread.is_alive()
    finally:
        beat.stop()
    assert leases.read_lease(out, "r").state == "failed"
    newcomer = leases.new_lease("r", "b" * 12, 60.0, runner_local=False)
    assert "failed: boom" in leases.acquire(out, newcomer, lambda: None)[1]


def test_the_launcher_beats_until_a_worker_does(tmp_path):
    out = str(tmp_path / "out")
    _held(out)
    beat = leases.Heartbeat.start(out, "r", A, 1.0)
    try:
        start = time.monotonic()
        threading.Timer(0.5, _beat_as, (out, "worker-7")).start()
        got = leases.wait_for_workers(out, "r", A, lambda: False, timeout_s=30, poll_s=0.05)
        assert got == "workers" and time.monotonic() - start >= 0.5
        assert leases.wait_for_workers(out, "r", "c" * 12, lambda: True, 30, 0.05) == "ended"
        assert leases.wait_for_workers(out, "r", "c" * 12, lambda: False, 0.2, 0.05) == "ended"
    finally:
        beat.stop()
    leases.delete_quietly([p for p, _ in leases.heartbeats(out, "r", A)])
    assert leases.wait_for_workers(out, "r", A, lambda: False, 0.2, 0.05) == "timeout"


def test_finalize_moves_files_in_parallel_and_resumes_a_partial_move(tmp_path, monkeypatch):
    """Issue 24: Finalize renamed every file serially (on an object store a copy
    and a delete each); a retried Finalize must finish what a killed one began."""
    from apache_beam.io.filesystems import FileSystems
    from transforms.publish import commit
    from transforms.publish.write import WrittenFile, temp_dir
    out = str(tmp_path / "out")
    staged = []
    for i in range(40):
        path = os.path.join(temp_dir(out, "r", A), f"{i:04d}.parquet")
        leases.write_atomic(path, b"x")
        staged.append(WrittenFile("scores", (("run_date", "2024-01-01"), ("bot", f"b{i % 3}")),
                                  path, 10))
    rename, threads = FileSystems.rename, set()

    def recorded(sources, targets):
        threads.add(threading.get_ident())
        time.sleep(0.01)
        return rename(sources, targets)
    monkeypatch.setattr(FileSystems, "rename", recorded)
    first, _ = commit.move_into_place(out, "r", A, staged[:15])  # then "killed"
    files, rows = commit.move_into_place(out, "r", A, staged)    # the retry
    assert len(threads) > 1
    assert rows == {"scores": 400} and len(files["scores"]) == 40
    assert set(first["scores"]) <= set(files["scores"])
    assert all(os.path.isfile(p) for p in files["scores"])
    assert not any(os.path.exists(f.temp_path) for f in staged)
