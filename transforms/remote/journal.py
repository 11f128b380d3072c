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
process can lock: each process writes its own journal objects instead
(ObjectJournal: one writer per object, so no lock), a batch of events per
object, `<attempt's temporary folder>/requests.<process>-<n>.jsonl` (beside
the attempt's other files, not in a folder of their own: an object store's
match and the commit's clean-up see one level), flushed when a bundle
ends (before its tallies leave the DoFn, so a tally in usage/ never has calls
the journal has not seen end) and every FLUSH_S seconds while requests are
in flight. Finalize lists and merges them and reconciles as for the SQLite
file. What a lost process can still leave uncounted is what it sent since
its last flush: at most FLUSH_S seconds of its requests
(tests/test_request_journal.py measures it).

A failed attempt never reaches Finalize: `billed` says what its
journal holds, for the failure's message and the lease's reason.
"""
from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from transforms.remote.budget import cost_of
from transforms.remote.sqlite_file import PerThread
from transforms.text.wording import counted

_log = logging.getLogger(__name__)

SCHEMA = ("CREATE TABLE IF NOT EXISTS requests (id TEXT PRIMARY KEY, endpoint TEXT NOT NULL, "
          "attempts INTEGER NOT NULL, prompt_estimate REAL NOT NULL, tally TEXT, "
          "prompt_tokens INTEGER, completion_tokens INTEGER, purpose TEXT)")


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
                  prompt_estimate: float, purpose: str = "") -> None:
        """Written before a request goes on the wire: the call's row on its first
        attempt (with its purpose, which the spend caps count by), its count of
        attempts on a retry."""
        if attempt == 1:
            self._write("INSERT OR IGNORE INTO requests (id, endpoint, attempts, prompt_estimate,"
                        " purpose) VALUES (?, ?, 1, ?, ?)",
                        (request_id, endpoint, prompt_estimate, purpose))
        else:
            self._write("UPDATE requests SET attempts = ? WHERE id = ?", (attempt, request_id))

    def ended(self, request_id: str, tally: str, prompt_tokens: int,
              completion_tokens: int) -> None:
        """The call ended and is counted in `tally` (a CallLog's current tally)."""
        self._write("UPDATE requests SET tally = ?, prompt_tokens = ?, completion_tokens = ? "
                    "WHERE id = ?", (tally, prompt_tokens, completion_tokens, request_id))

    def flush(self) -> None:
        """Nothing to do: every event is written as it happens."""

    def close(self) -> None:
        self._file.close()


FLUSH_S = 2.0  # an object journal's longest wait between flushes while events are pending


class ObjectJournal:
    """One process's journal on an object store: its events (as JSON lines)
    buffered and written as a new object `<base>.<process>-<n>.jsonl` at each
    flush, by this process only. A write that fails is logged once and its
    events are kept for the next flush; it never fails a call."""

    def __init__(self, base: str, flush_s: float = FLUSH_S):
        self.base, self._flush_s = base.rstrip("/"), flush_s
        self._name, self._seq = uuid.uuid4().hex, 0
        self._pending: list[str] = []
        # re-entrant: a stopped run's signal handler flushes on whatever thread it interrupted
        self._lock, self._write_lock = threading.RLock(), threading.RLock()
        self._warned = False
        self._stop = threading.Event()
        self._timer = threading.Thread(target=self._every_few_seconds, daemon=True,
                                       name="evalbeam-journal")
        self._timer.start()

    def _add(self, event: list) -> None:
        line = json.dumps(event, separators=(",", ":"))
        with self._lock:
            self._pending.append(line)

    def attempted(self, request_id: str, endpoint: str, attempt: int,
                  prompt_estimate: float, purpose: str = "") -> None:
        self._add(["a", request_id, endpoint, attempt, prompt_estimate, purpose])

    def ended(self, request_id: str, tally: str, prompt_tokens: int,
              completion_tokens: int) -> None:
        self._add(["e", request_id, tally, prompt_tokens, completion_tokens])

    def flush(self) -> None:
        """Write the pending events as one object (blocking: called at a bundle's
        end before its tallies are emitted, and by the timer)."""
        with self._write_lock:
            with self._lock:
                batch, self._pending = self._pending, []
            if not batch:
                return
            path = f"{self.base}.{self._name}-{self._seq:06d}.jsonl"
            try:
                with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
                    fh.write(("\n".join(batch) + "\n").encode("utf-8"))
                self._seq += 1
            except Exception as exc:  # noqa: BLE001 - kept for the next flush
                with self._lock:
                    self._pending[:0] = batch
                if not self._warned:
                    self._warned = True
                    _log.warning("evalbeam: request journal %s: cannot write: %s", path, exc)

    def _every_few_seconds(self) -> None:
        while not self._stop.wait(self._flush_s):
            self.flush()

    def close(self) -> None:
        self._stop.set()
        self._timer.join(timeout=10)
        self.flush()


def in_objects(path: str) -> bool:
    """A journal path is the base name of objects unless it is the SQLite file."""
    return not path.endswith(".sqlite")


def open_journal(path: str | None) -> RequestJournal | ObjectJournal | None:
    if not path:
        return None
    return ObjectJournal(path) if in_objects(path) else RequestJournal(path)


# endpoint, attempts, prompt_estimate, tally, prompt_tokens, completion_tokens, purpose
JournalRow = tuple[str, int, float, "str | None", "int | None", "int | None", str]


def merge_events(lines: Iterable[str]) -> list[JournalRow]:
    """The rows an object journal's events describe, whatever their order (a
    call's attempts: the most seen; its tally: the one it ended in). A line
    that does not parse (a partial object) is skipped."""
    calls: dict[str, list] = {}
    for line in lines:
        try:
            kind, request_id, *rest = json.loads(line)
        except (ValueError, TypeError):
            continue
        row = calls.setdefault(request_id, [None, 0, 0.0, None, None, None, ""])
        if kind == "a":
            endpoint, attempt, estimate, *purpose = rest
            row[0], row[1] = endpoint, max(row[1], attempt)
            row[2] = estimate if attempt == 1 else row[2]
            row[6] = purpose[0] if purpose and attempt == 1 else row[6]
        elif kind == "e":
            row[3:6] = rest
    return [tuple(r) for r in calls.values() if r[0] is not None]


READ_THREADS = 32  # journal objects read at once (a long run writes one per process every 2 s)


def _read_object(path: str) -> list[str]:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
        return fh.read().decode("utf-8", "replace").splitlines()


def _object_lines(base: str) -> list[str]:
    try:
        found = FileSystems.match([f"{base.rstrip('/')}.*.jsonl"])[0].metadata_list
    except Exception:  # noqa: BLE001 - nothing matched: no process wrote one
        return []
    with ThreadPoolExecutor(READ_THREADS, thread_name_prefix="evalbeam-journal-read") as pool:
        return [line for lines in pool.map(_read_object, [m.path for m in found])
                for line in lines]


def read_journal(path: str) -> list[JournalRow]:
    """Every row: (endpoint, attempts, prompt_estimate, tally, prompt_tokens,
    completion_tokens, purpose); [] when no process wrote one (a run without calls)."""
    if in_objects(path):
        return merge_events(_object_lines(path))
    if not os.path.exists(path):
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60)
    try:
        return conn.execute("SELECT endpoint, attempts, prompt_estimate, tally, prompt_tokens, "
                            "completion_tokens, COALESCE(purpose, '') FROM requests").fetchall()
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


def _is_lost(row: JournalRow, reported: frozenset[str] | set[str]) -> bool:
    """A call whose tally never reached usage/: its worker process was lost
    (in flight, no tally; or ended, its tally not among the reported)."""
    return row[3] is None or row[3] not in reported


def _add_lost(lost: dict[str, Any], row: JournalRow) -> None:
    _, attempts, estimate, tally, prompt, completion, _ = row
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
        if _is_lost(row, reported):
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


def lost_usage(rows: Iterable[JournalRow], reported: frozenset[str] | set[str],
               prices: Mapping[str, Mapping[str, float]]) -> list[dict[str, Any]]:
    """The calls lost with a worker process as usage/-like rows (endpoint,
    purpose, calls, tokens, cost; a call in flight at its prompt's estimate), so
    that the manifest's `spend_caps` counts what the endpoints served, as the
    ledger that enforced the caps did, not only what usage/ counts."""
    out = []
    for endpoint, _, estimate, tally, prompt, completion, purpose in (
            row for row in rows if _is_lost(row, reported)):
        prompt_tokens = round(estimate) if tally is None else prompt or 0
        out.append({"endpoint": endpoint, "purpose": purpose, "calls": 1,
                    "prompt_tokens": prompt_tokens, "completion_tokens": completion or 0,
                    "cost": cost_of(prompt_tokens, completion or 0, prices.get(endpoint))})
    return out


NO_JOURNAL = {"journal": False,  # a RunInfo made without a journal (not by the planner)
              "note": "no request journal was kept: "
                      "calls sent by a worker process lost mid-run are not counted anywhere"}


IN_OBJECTS_NOTE = (f"the output is an object store: each worker process writes its journal "
                   f"in batches (when a bundle ends, and every {FLUSH_S:g} s while it sends); "
                   f"a process lost mid-run leaves the requests it sent since its last batch, "
                   f"at most its last {FLUSH_S:g} s of them, uncounted")


def requests_block(path: str | None, reported: frozenset[str], usage: list[Mapping[str, Any]],
                   prices: Mapping[str, Mapping[str, float]],
                   rows: list[JournalRow] | None = None) -> dict[str, Any] | None:
    """The manifest's `requests` (None: a run that sent nothing and has no usage/ row);
    rows: the journal, when the caller has read it already."""
    if path is None:
        return dict(NO_JOURNAL) if usage else None
    rows = read_journal(path) if rows is None else rows
    if not rows and not usage:
        return None
    block = reconcile_requests(rows, reported, usage, prices)
    return {**block, "note": IN_OBJECTS_NOTE} if in_objects(path) else block


@dataclass(frozen=True)
class Billed:
    """What a failed attempt sent, as its journal holds it: requests that no
    usage/ table counts (it never commits one) but the endpoints billed.
    cost: None when an endpoint has no price. by_endpoint: per endpoint, the
    same four."""
    calls: int
    requests: int
    tokens: int
    cost: float | None
    by_endpoint: Mapping[str, Mapping[str, Any]]

    def line(self) -> str:
        """'before it failed it sent N requests (llm: N requests, T tokens, cost C), ...'"""
        parts = [f"{endpoint}: {counted(e['requests'], 'request')}, "
                 f"{counted(e['tokens'], 'token')}, "
                 + ("cost unknown" if e["cost"] is None else f"cost {e['cost']:.4g}")
                 for endpoint, e in self.by_endpoint.items()]
        return (f"before it failed it sent {counted(self.requests, 'request')} (" + "; ".join(parts)
                + "), billed and in no usage/ table")


def billed(path: str | None, prices: Mapping[str, Mapping[str, float]]) -> Billed | None:
    """What a failed attempt's journal holds (None: it sent nothing, or has no
    journal): its requests, per endpoint with their tokens and cost as
    reconcile_requests counts them (none reached a usage/ table)."""
    try:
        rows = read_journal(path) if path else []
    except Exception:  # noqa: BLE001 - the failure is what the user must read
        return None
    if not rows:
        return None
    block = reconcile_requests(rows, frozenset(), [], prices)
    per = {endpoint: {"calls": e["lost"]["calls"], "requests": e["lost"]["requests"],
                      "tokens": (e["lost"]["prompt_tokens"] + e["lost"]["estimated_prompt_tokens"]
                                 + e["lost"]["completion_tokens"]),
                      "cost": e["lost"]["cost"]}
           for endpoint, e in block["by_endpoint"].items()}
    costs = [e["cost"] for e in per.values()]
    return Billed(calls=block["lost_calls"], requests=block["lost_requests"],
                  tokens=sum(e["tokens"] for e in per.values()),
                  cost=None if None in costs else sum(costs), by_endpoint=per)
