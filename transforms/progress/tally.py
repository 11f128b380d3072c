"""What one process counts of an attempt while it runs: rows written to
results/ (turns) and their bot errors, invalid input rows, failed judge
questions, embedding and classifier failures, and the requests sent to each
endpoint.

Counting costs a lock and an addition; the counts reach other processes
through the objects of transforms/publish/progress_objects.py. Calls are counted for
every attempt live in the process (normally one: a worker process serves one
run at a time).
"""
from __future__ import annotations

import threading
import time
from typing import Any, Mapping

from schemas.tables import CALL_ERROR_COUNTS, CALL_ERROR_STAGES, ERRORS, RESULTS

CALL_FIELDS = ("calls", "retries", "failures", "rate_limited")


class Tally:
    """One attempt's counts in this process (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.turns = self.bot_errors = self.invalid_rows = 0
        self.call_errors = dict.fromkeys(CALL_ERROR_COUNTS, 0)  # judge_errors, ...
        self.first_turn_at: float | None = None
        self.calls: dict[str, dict[str, int]] = {}
        self.stages: dict[str, int] = {}  # turns through a stage before any is written
        self.changes = 0  # bumped by every count: a writer skips unchanged tallies

    def row(self, table: str, row: Mapping[str, Any]) -> None:
        """A row on its way into a table."""
        with self._lock:
            if table == RESULTS.name:
                self.turns += 1
                self.bot_errors += row.get("error") is not None
                if self.first_turn_at is None:
                    self.first_turn_at = time.time()
            elif table == ERRORS.name and row.get("stage") == "read" \
                    and row.get("error_type") != "duplicate_case_id":
                self.invalid_rows += 1
            elif table == ERRORS.name and row.get("stage") in CALL_ERROR_STAGES:
                self.call_errors[CALL_ERROR_STAGES[row["stage"]][0]] += 1
            else:
                return
            self.changes += 1

    def call(self, rec) -> None:
        """A finished call (a CallRecord), counted as usage/ counts it: cache hits
        and calls a spend cap refused are not requests; a call the endpoint's open
        circuit breaker failed at once is a failure, not a request."""
        if rec.cache_hit or rec.budget_refused:
            return
        with self._lock:
            c = self.calls.setdefault(rec.endpoint, dict.fromkeys(CALL_FIELDS, 0))
            c["calls"] += rec.attempts > 0  # CallRecord.sent
            c["retries"] += max(0, rec.attempts - 1)
            c["failures"] += 0 if rec.ok else 1
            c["rate_limited"] += rec.rate_limited
            self.changes += 1

    def stage(self, name: str, n: int = 1) -> None:
        """n turns through a stage (answered, embedded, judged, classified) not written yet."""
        with self._lock:
            self.stages[name] = self.stages.get(name, 0) + n
            self.changes += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"turns": self.turns, "bot_errors": self.bot_errors,
                    "invalid_rows": self.invalid_rows, **self.call_errors,
                    "first_turn_at": self.first_turn_at,
                    "calls": {k: dict(v) for k, v in self.calls.items()},
                    "stages": dict(self.stages)}


_LIVE: dict[tuple[str, str, str], Tally] = {}
_LOCK = threading.Lock()


def tally_for(key: tuple[str, str, str]) -> Tally:
    """The process's tally of an attempt (output, run_id, attempt), made live."""
    with _LOCK:
        tally = _LIVE.get(key)
        if tally is None:
            tally = _LIVE[key] = Tally()
        return tally


def forget(key: tuple[str, str, str]) -> None:
    with _LOCK:
        _LIVE.pop(key, None)


def count_call(rec) -> None:
    """A finished remote call, counted for every live attempt of the process."""
    with _LOCK:
        live = list(_LIVE.values())
    for tally in live:
        tally.call(rec)
