"""The run's request journal: every request sent to an endpoint, by every
worker process, so that the calls of a worker lost mid-run are still
accounted for.

usage/ is made of the tallies each DoFn emits at the end of its bundle
(transforms/remote/usage.py). A worker process that dies (a Dask worker
SIGKILLed, a machine gone) takes its tallies with it: the runner redoes the
bundle elsewhere, but the requests the lost process had sent were billed
and are in no tally. So each process also writes, to one SQLite file in the
attempt's temporary folder (where the spend-cap ledger lives, opened the
same way: transforms/remote/sqlite_file.py):

- a row when a call's first request goes out (and its attempts when retried);
- when the call ends and is counted in a tally, that tally's id and the tokens
  the replies reported.

At commit, Finalize knows which tallies reached usage/ (each accumulator
carries the ids of the tallies merged into it); a journal row whose tally is
not among them, or that never ended, was sent by a process that was lost:
`reconcile_requests` counts those per endpoint, with their tokens (reported,
or the prompt's estimate for a call still in flight) and cost.

With an object-store output (gs://, s3://) there is no file every worker
process can lock, and no journal: the limitation stays as documented.
"""
from __future__ import annotations

import logging
import os
import sqlite3
from typing import Any, Iterable, Mapping

from transforms.remote.budget import cost_of
from transforms.remote.sqlite_file import PerThread

_log = logging.getLogger(__name__)

SCHEMA = ("CREATE TABLE IF NOT EXISTS requests (id TEXT PRIMARY KEY, endpoint TEXT NOT NULL, "
          "attempts INTEGER NOT NULL, prompt_estimate REAL NOT NULL, tally TEXT, "
          "prompt_tokens INTEGER, completion_tokens INTEGER)")


class RequestJournal:
    """One process's writer of the run's journal (a connection per thread: the
    asyncio loop's and the DoFn's). A write that fails (a full disk) is logged
    once and never fails the call: the manifest's `ok` then says the journal
    and usage/ disagree."""

    def __init__(self, path: str):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._file = PerThread(path, SCHEMA)
        self._warned = False

    def _write(self, sql: str, args: tuple) -> None:
        try:
            self._file.conn().execute(sql, args)
        except sqlite3.Error as exc:
            if not self._warned:
                self._warned = True
                _log.warning("evalbeam: request journal %s: cannot write: %s",
                             self._file.path, exc)

    def attempted(self, request_id: str, endpoint: str, attempt: int,
                  prompt_estimate: float) -> None:
        """Written before a request goes on the wire: the call's row on its first
        attempt, its count of attempts on a retry."""
        if attempt == 1:
            self._write("INSERT OR IGNORE INTO requests (id, endpoint, attempts, prompt_estimate)"
                        " VALUES (?, ?, 1, ?)", (request_id, endpoint, prompt_estimate))
        else:
            self._write("UPDATE requests SET attempts = ? WHERE id = ?", (attempt, request_id))

    def ended(self, request_id: str, tally: str, prompt_tokens: int,
              completion_tokens: int) -> None:
        """The call ended and is counted in `tally` (a CallLog's current tally)."""
        self._write("UPDATE requests SET tally = ?, prompt_tokens = ?, completion_tokens = ? "
                    "WHERE id = ?", (tally, prompt_tokens, completion_tokens, request_id))

    def close(self) -> None:
        self._file.close()


def open_journal(path: str | None) -> RequestJournal | None:
    return RequestJournal(path) if path else None


JournalRow = tuple[str, int, float, "str | None", "int | None", "int | None"]


def read_journal(path: str) -> list[JournalRow]:
    """Every row: (endpoint, attempts, prompt_estimate, tally, prompt_tokens,
    completion_tokens); [] when no process wrote one (a run without calls)."""
    if not os.path.exists(path):
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60)
    try:
        return conn.execute("SELECT endpoint, attempts, prompt_estimate, tally, prompt_tokens, "
                            "completion_tokens FROM requests").fetchall()
    finally:
        conn.close()


def _endpoint_usage(usage: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """usage/ rows' calls and requests (calls + retries) per endpoint."""
    out: dict[str, dict[str, int]] = {}
    for row in usage:
        e = out.setdefault(row["endpoint"], {"calls": 0, "requests": 0})
        e["calls"] += row["calls"]
        e["requests"] += row["calls"] + row["retries"]
    return out


def _new_lost() -> dict[str, Any]:
    return {"calls": 0, "requests": 0, "in_flight": 0, "prompt_tokens": 0,
            "completion_tokens": 0, "estimated_prompt_tokens": 0.0}


def _add_lost(lost: dict[str, Any], row: JournalRow) -> None:
    _, attempts, estimate, tally, prompt, completion = row
    lost["calls"] += 1
    lost["requests"] += attempts
    if tally is None:  # in flight when its process was lost: its prompt, estimated
        lost["in_flight"] += 1
        lost["estimated_prompt_tokens"] += estimate
    else:
        lost["prompt_tokens"] += prompt or 0
        lost["completion_tokens"] += completion or 0


def reconcile_requests(rows: Iterable[JournalRow], reported: frozenset[str] | set[str],
                       usage: Iterable[Mapping[str, Any]],
                       prices: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """The manifest's `requests`: per endpoint, the calls and requests the
    journal saw sent, those usage/ counts, and those lost with a worker process
    (their tally never reached usage/), with their tokens and cost (the prompt's
    estimate for calls in flight, whose completion is unknown; None without a
    price). `ok`: what the journal saw sent = usage/ + lost, per endpoint."""
    sent: dict[str, dict[str, int]] = {}
    lost: dict[str, dict[str, Any]] = {}
    for row in rows:
        s = sent.setdefault(row[0], {"calls": 0, "requests": 0})
        s["calls"] += 1
        s["requests"] += row[1]
        if row[3] is None or row[3] not in reported:
            _add_lost(lost.setdefault(row[0], _new_lost()), row)
    in_usage = _endpoint_usage(usage)
    by_endpoint = {}
    for endpoint in sorted(set(sent) | set(in_usage)):
        s, u = sent.get(endpoint, {"calls": 0, "requests": 0}), in_usage.get(endpoint, {
            "calls": 0, "requests": 0})
        gone = lost.get(endpoint, _new_lost())
        gone["estimated_prompt_tokens"] = round(gone["estimated_prompt_tokens"])
        gone["cost"] = cost_of(gone["prompt_tokens"] + gone["estimated_prompt_tokens"],
                               gone["completion_tokens"], prices.get(endpoint))
        by_endpoint[endpoint] = {
            "sent_calls": s["calls"], "sent_requests": s["requests"],
            "usage_calls": u["calls"], "usage_requests": u["requests"], "lost": gone,
            "ok": (s["calls"] == u["calls"] + gone["calls"]
                   and s["requests"] == u["requests"] + gone["requests"])}
    return {"journal": True,
            "lost_calls": sum(e["lost"]["calls"] for e in by_endpoint.values()),
            "lost_requests": sum(e["lost"]["requests"] for e in by_endpoint.values()),
            "ok": all(e["ok"] for e in by_endpoint.values()),
            "by_endpoint": by_endpoint}


NO_JOURNAL = {"journal": False,
              "note": "the output is not on a local or mounted disk: no request journal; "
                      "calls sent by a worker process lost mid-run are not counted anywhere"}


def requests_block(path: str | None, reported: frozenset[str], usage: list[Mapping[str, Any]],
                   prices: Mapping[str, Mapping[str, float]]) -> dict[str, Any] | None:
    """The manifest's `requests` (None: a run that sent nothing and has no usage/ row)."""
    if path is None:
        return dict(NO_JOURNAL) if usage else None
    rows = read_journal(path)
    return reconcile_requests(rows, reported, usage, prices) if rows or usage else None
