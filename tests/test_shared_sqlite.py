"""The SQLite files a run's worker processes share (the call cache, the
spend-cap ledger), opened by several processes at one moment.

Switching a new file to WAL answered "database is locked" at once, not after
the busy timeout, to a second process doing it together: in CI one of two
judge workers died at start-up, and a sound cache in use was set aside as
corrupt. Here processes open fresh files in lock-step, round after round."""
from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading

import pytest

from transforms.remote.budget import JUDGE_CALLS, SqliteLedger
from transforms.remote.cache import SCHEMA, CallCache, check_cache_file

PROCESSES, ROUNDS = 6, 30


def _use_ledger(path: str) -> str | None:
    ledger = SqliteLedger(path, {JUDGE_CALLS: 9.0}, "r")
    refused = ledger.reserve({JUDGE_CALLS: 1.0})
    if not isinstance(refused, str):
        ledger.sending(refused)  # sent: it stays spent when the holder closes unsettled
    ledger.close()
    return refused if isinstance(refused, str) else None


def _use_cache(path: str) -> str | None:
    cache = CallCache(path)
    cache.put(f"k{os.getpid()}", {"a": 1})
    return cache.broken


def _open_in_step(use, barrier, folder: str, failures) -> None:
    for i in range(ROUNDS):
        barrier.wait(timeout=60)  # every process opens file i at one moment
        try:
            problem = use(os.path.join(folder, f"{i}.sqlite"))
        except Exception as exc:  # noqa: BLE001 - reported to the parent
            problem = f"{type(exc).__name__}: {exc}"
        if problem:
            failures.put(problem)


def _run_in_step(use, folder: str) -> list[str]:
    ctx = multiprocessing.get_context("fork")
    barrier, failures = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [ctx.Process(target=_open_in_step, args=(use, barrier, folder, failures))
             for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * PROCESSES
    problems = []
    while not failures.empty():
        problems.append(failures.get())
    return problems


def test_processes_opening_a_new_ledger_together_all_share_it(tmp_path):
    assert _run_in_step(_use_ledger, str(tmp_path)) == []
    used = [SqliteLedger(str(tmp_path / f"{i}.sqlite"), {JUDGE_CALLS: 9.0}, "r").used()
            for i in range(ROUNDS)]
    assert used == [{JUDGE_CALLS: float(PROCESSES)}] * ROUNDS  # every reservation, one file


def test_processes_opening_a_new_cache_together_keep_it(tmp_path):
    assert _run_in_step(_use_cache, str(tmp_path)) == []
    assert sorted(f for f in os.listdir(tmp_path) if "corrupt" in f) == []  # none set aside
    for i in range(ROUNDS):
        with sqlite3.connect(str(tmp_path / f"{i}.sqlite")) as db:
            assert db.execute("SELECT count(*) FROM calls").fetchone() == (PROCESSES,)


@pytest.mark.parametrize("check", ["open", "before the run"])
def test_a_cache_locked_by_another_run_is_not_set_aside(tmp_path, check, monkeypatch):
    path = str(tmp_path / "calls.sqlite")
    with sqlite3.connect(path) as db:  # a sound cache, in a rollback journal: readers wait
        db.execute(SCHEMA)
        db.execute("INSERT INTO calls (key, response) VALUES ('k', '{\"a\": 1}')")
    db.close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another run in the middle of a long write
    try:
        monkeypatch.setattr("transforms.remote.sqlite_file.TIMEOUT_S", 0.2)
        monkeypatch.setattr("sqlite3.connect", _short_timeout(sqlite3.connect))
        if check == "open":
            cache = CallCache(path)
            assert cache.broken and "locked" in cache.broken  # off for this process
        else:
            assert check_cache_file(path) is None
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert [f for f in os.listdir(tmp_path) if "corrupt" in f] == []
    assert CallCache(path).get("k") == {"a": 1}


def _short_timeout(connect):
    def short(path, timeout=5.0, **kw):
        return connect(path, timeout=min(timeout, 0.2), **kw)
    return short


def test_closing_the_call_cache_closes_the_connection_of_the_thread_that_used_it(tmp_path):
    """The runtime's loop thread makes the lookups and the DoFn's thread closes the
    cache once the loop has stopped: close() closed only the caller's connection,
    so the loop's stayed open (and its WAL file on disk) until the process ended."""
    path = str(tmp_path / "calls.sqlite")
    cache = CallCache(path)
    worker = threading.Thread(target=lambda: cache.put("k", {"v": 1}))
    worker.start()
    worker.join()
    assert os.path.exists(path + "-wal")
    cache.close()
    assert not os.path.exists(path + "-wal")  # SQLite removes it when the last connection closes
    again = CallCache(path)
    assert again.get("k") == {"v": 1}
    again.close()
