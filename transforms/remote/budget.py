"""Spend caps per run: judge calls, judge cost, tokens per endpoint.

A call is *reserved* before it is sent and *settled* when it ends. The
reservation takes the call's worst case: one call, and the cost and tokens
it can reach (the prompt's estimate plus the completion's limit, `max_tokens`,
priced from the endpoint's `price_per_million`); a reservation that would
take a scope past its cap is refused, and the call is not sent. Settling
replaces the reservation by what the call really used (its `usage`; a call
that failed used nothing). So however many calls are in flight, reserved +
spent never passes a cap: the calls of a run never exceed `max_calls`, and
its cost never exceeds `max_cost` by more than what calls in flight used
beyond their estimated prompt (the completion is capped by max_tokens).

Where the tally lives decides what "per run" means across worker processes:

- SqliteLedger: one SQLite file every worker process of the run opens (the
  run's output folder on a local or mounted disk: the in-memory runner, the
  multi-processing runner, a Dask cluster on one machine). Reserve and settle
  are one IMMEDIATE transaction each, so processes cannot both take the last
  unit of a cap. SQLite's locks need a local filesystem (not NFS).
- LocalLedger: the caps times the worker's share (`1 / workers`, as for rate
  limits) in the process's memory, when the output is a URL (gs://, s3://):
  the run never passes the cap, but it can stop below it when one worker's
  share runs out before another's.

A worker process that dies (a Dask worker SIGKILLed) cannot settle what it
reserved. With the SqliteLedger each process is a *holder*: it keeps an
exclusive lock (flock) on a file of its own beside the ledger for as long as
it lives, which the OS drops when the process ends, however it ends; its
reservations are rows of the ledger, marked *sent* just before the call's
first request goes on the wire. When a reservation is refused, the refusing
process looks for holders whose lock it can take (they are gone, for certain:
no lease to expire, no pid to be reused) and, in one transaction, gives back
their unsent reservations and keeps their sent ones as spent at their worst
case (the endpoint may have served them; a call is one call). So a run with a
lost worker still reaches its cap, never passes it. The LocalLedger's share
dies with its process: with a URL output nothing shared can be locked.

A refused call waits while this process has reservations in flight: when
they settle for less than their worst case (a cost or token cap), room comes
back and the call is reserved after all; it is refused only once nothing in
flight here could make room (`InFlight`). So a run stops at its cap, not at
the first moment the worst cases in flight filled it.

Scopes: `judge.calls`, `judge.cost`, `tokens:<endpoint>`.
"""
from __future__ import annotations

import asyncio
import fcntl
import os
import sqlite3
import threading
import uuid
from dataclasses import dataclass, field
from typing import Mapping

from transforms.remote.sqlite_file import PerThread

JUDGE_CALLS, JUDGE_COST = "judge.calls", "judge.cost"
BUDGET_REACHED = "budget reached"


def tokens_scope(endpoint: str) -> str:
    return f"tokens:{endpoint}"


def cost_of(prompt_tokens: float, completion_tokens: float,
            price: Mapping[str, float] | None) -> float | None:
    """Cost from an endpoint's price_per_million (None without a price)."""
    if not price:
        return None
    return (prompt_tokens * price.get("input", 0.0)
            + completion_tokens * price.get("output", 0.0)) / 1e6


def worst_case(endpoint: str, purpose: str, prompt_tokens: float, completion_cap: float,
               price: Mapping[str, float] | None) -> dict[str, float]:
    """What a call can use at most, per scope (reserved before it is sent)."""
    amounts = {tokens_scope(endpoint): prompt_tokens + completion_cap}
    if purpose.startswith("judge:"):
        amounts[JUDGE_CALLS] = 1.0
        amounts[JUDGE_COST] = cost_of(prompt_tokens, completion_cap, price) or 0.0
    return amounts


def actual_use(endpoint: str, purpose: str, ok: bool, prompt_tokens: int,
               completion_tokens: int, estimate: float,
               price: Mapping[str, float] | None, sent: bool = True) -> dict[str, float]:
    """What a finished call used: its reported tokens (the estimate when a
    successful reply reported none, as prompt tokens for its cost too); a failed
    call used the tokens its replies reported (HTTP 200s without an answer,
    retried), else none, but is a call; a call never sent (the endpoint's
    circuit breaker was open) used nothing."""
    if not sent:
        return {}
    reported = prompt_tokens + completion_tokens
    tokens = reported or (estimate if ok else 0.0)
    used = {tokens_scope(endpoint): float(tokens)}
    if purpose.startswith("judge:"):
        used[JUDGE_CALLS] = 1.0
        used[JUDGE_COST] = ((cost_of(prompt_tokens if reported else tokens,
                                     completion_tokens, price) or 0.0)
                            if ok or reported else 0.0)
    return used


@dataclass(frozen=True)
class BudgetSpec:
    """The run's caps (decided by the planner, enforced on the workers), and
    where its workers journal the requests they send (transforms/remote/journal.py:
    beside the ledger, in the attempt's temporary folder)."""
    caps: tuple[tuple[str, float], ...] = ()   # (scope, cap)
    ledger: str | None = None  # the SQLite file the run's workers share; None: per-worker share
    share: float = 1.0         # a worker's share of each cap without a shared ledger
    run: str = ""              # the run id and attempt (a new attempt starts a new tally)
    journal: str | None = None  # the request journal's SQLite file (or objects' base); None: none

    @property
    def capped(self) -> frozenset[str]:
        return frozenset(scope for scope, _ in self.caps)


@dataclass
class Reservation:
    amounts: dict[str, float] = field(default_factory=dict)
    id: str = ""  # its rows in a SqliteLedger ("" elsewhere)


_JUDGE_CAPS = {"judge.max_calls": JUDGE_CALLS, "judge.max_cost": JUDGE_COST}


def scope_of(cap_name: str) -> str:
    """The ledger scope of a cap named as in the config (judge.max_calls,
    endpoints.<name>.max_tokens_per_run)."""
    return _JUDGE_CAPS.get(cap_name) or tokens_scope(cap_name.split(".")[1])


def cap_name(scope: str) -> str:
    """The config name of a ledger scope's cap."""
    return next((name for name, s in _JUDGE_CAPS.items() if s == scope),
                f"endpoints.{scope.split(':', 1)[-1]}.max_tokens_per_run")


def refusal_text(scope: str, cap: float) -> str:
    return f"{BUDGET_REACHED}: {cap_name(scope)} ({cap:g} per run)"


def refusing_cap(reason: str | None) -> str | None:
    """The config name of the cap a refusal_text names (None for other text):
    a call refused by one cap is not a call refused by the run's other caps."""
    prefix = f"{BUDGET_REACHED}: "
    if not reason or not reason.startswith(prefix):
        return None
    return reason[len(prefix):].split(" (", 1)[0]


def settling_may_free(refusal: str) -> bool:
    """Whether calls in flight may settle for less than they reserved in the
    refusing scope: cost and tokens may; a call is a call, failed or not."""
    return not refusal.startswith(refusal_text(JUDGE_CALLS, 0).split(" (")[0])


class InFlight:
    """This process's reservations not yet settled, and a wait for the next
    settle (on any asyncio loop of the process; a settle wakes every waiter)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = 0
        self._generation = 0  # settles so far
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []

    def opened(self) -> None:
        with self._lock:
            self._open += 1

    def closed(self) -> None:
        with self._lock:
            self._open -= 1
            self._generation += 1
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            loop.call_soon_threadsafe(_wake, future)

    def snapshot(self) -> tuple[int, int]:
        """(reservations open, settles so far)."""
        with self._lock:
            return self._open, self._generation

    async def settled_since(self, generation: int) -> None:
        """Return once a reservation has settled after `generation` (at once when
        one already has, or when nothing is open that could)."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._lock:
            if self._generation != generation or self._open == 0:
                return
            self._waiters.append((loop, future))
        await future


def _wake(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


class LocalLedger:
    """The caps (times a share) in this process's memory."""

    def __init__(self, caps: Mapping[str, float], share: float = 1.0):
        self._caps = {s: c * share for s, c in caps.items()}
        self._used = dict.fromkeys(self._caps, 0.0)  # reserved + spent
        self._lock = threading.Lock()
        self.in_flight = InFlight()

    def reserve(self, amounts: Mapping[str, float]) -> Reservation | str:
        """The reservation, or the text saying which cap refused it."""
        wanted = {s: a for s, a in amounts.items() if s in self._caps}
        with self._lock:
            for scope, amount in wanted.items():
                if self._used[scope] + amount > self._caps[scope] + 1e-12:
                    return refusal_text(scope, self._caps[scope])
            for scope, amount in wanted.items():
                self._used[scope] += amount
        self.in_flight.opened()
        return Reservation(wanted)

    def sending(self, reservation: Reservation) -> None:
        """Nothing to note: a process's share dies with it."""

    def settle(self, reservation: Reservation, actual: Mapping[str, float]) -> None:
        with self._lock:
            for scope, amount in reservation.amounts.items():
                self._used[scope] += actual.get(scope, 0.0) - amount
        self.in_flight.closed()

    def close(self) -> None:
        pass


_SCHEMA = ("CREATE TABLE IF NOT EXISTS scopes (run TEXT, scope TEXT, cap REAL NOT NULL, "
           "used REAL NOT NULL DEFAULT 0, PRIMARY KEY (run, scope));"
           # reservations not yet settled, by holder (a process), to give back when it is gone
           "CREATE TABLE IF NOT EXISTS holds (run TEXT, id TEXT, holder TEXT, scope TEXT, "
           "amount REAL NOT NULL, sent INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id, scope))")


def holder_lock(ledger: str, holder: str) -> str:
    """The file a holder of the ledger keeps locked while its process lives."""
    return f"{ledger}.holder-{holder}.lock"


def take_lock(path: str, create: bool = True) -> int | None:
    """An exclusive flock on path, held until its fd is closed or the process
    ends; None when another holds it (or, not `create`, the file is missing)."""
    try:
        fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o600)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def holder_gone(path: str) -> bool:
    """Whether the process that locked path has ended: its lock can be taken
    (and is dropped again at once). A missing file is not proof: not gone."""
    fd = take_lock(path, create=False)
    if fd is None:
        return False
    os.close(fd)
    return True


def _release(conn: sqlite3.Connection, run: str, holder: str) -> None:
    """Give back a gone holder's unsent reservations; its sent ones stay spent."""
    conn.execute("UPDATE scopes SET used = used - (SELECT COALESCE(SUM(amount), 0) FROM holds "
                 "WHERE holds.run = scopes.run AND holds.scope = scopes.scope AND holder = ? "
                 "AND sent = 0) WHERE run = ?", (holder, run))
    conn.execute("DELETE FROM holds WHERE run = ? AND holder = ?", (run, holder))


class SqliteLedger:
    """The caps in one SQLite file shared by the run's worker processes."""

    def __init__(self, path: str, caps: Mapping[str, float], run: str):
        self.path, self._caps, self._run = path, dict(caps), run
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._file = PerThread(path, _SCHEMA)
        self.in_flight = InFlight()
        self._holder = uuid.uuid4().hex
        self._lock_fd = take_lock(holder_lock(path, self._holder))  # before any hold
        with self._transaction() as conn:
            conn.executemany("INSERT OR IGNORE INTO scopes (run, scope, cap) VALUES (?, ?, ?)",
                             [(run, s, c) for s, c in self._caps.items()])

    def _conn(self) -> sqlite3.Connection:
        return self._file.conn()

    def _transaction(self):
        ledger = self

        class _Tx:
            def __enter__(self):
                self.conn = ledger._conn()
                self.conn.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes
                return self.conn

            def __exit__(self, exc_type, *_):
                self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
        return _Tx()

    def reserve(self, amounts: Mapping[str, float]) -> Reservation | str:
        wanted = {s: a for s, a in amounts.items() if s in self._caps}
        if not wanted:
            return Reservation({})
        reserved = self._reserve(wanted)
        if isinstance(reserved, str) and self._reclaim():  # room from a gone process
            reserved = self._reserve(wanted)
        return reserved

    def _reserve(self, wanted: Mapping[str, float]) -> Reservation | str:
        reservation = Reservation(dict(wanted), uuid.uuid4().hex)
        with self._transaction() as conn:
            for scope, amount in wanted.items():
                cap, used = conn.execute("SELECT cap, used FROM scopes WHERE run = ? AND "
                                         "scope = ?", (self._run, scope)).fetchone()
                if used + amount > cap + 1e-12:
                    return refusal_text(scope, cap)
            conn.executemany("UPDATE scopes SET used = used + ? WHERE run = ? AND scope = ?",
                             [(a, self._run, s) for s, a in wanted.items()])
            conn.executemany("INSERT INTO holds (run, id, holder, scope, amount) "
                             "VALUES (?, ?, ?, ?, ?)",
                             [(self._run, reservation.id, self._holder, s, a)
                              for s, a in wanted.items()])
        self.in_flight.opened()
        return reservation

    def _reclaim(self) -> bool:
        """Give back what holders that are gone reserved and did not send
        (whether anything of theirs was found)."""
        holders = [h for (h,) in self._conn().execute(
            "SELECT DISTINCT holder FROM holds WHERE run = ? AND holder != ?",
            (self._run, self._holder))]
        gone = [h for h in holders if holder_gone(holder_lock(self.path, h))]
        if gone:
            with self._transaction() as conn:
                for holder in gone:
                    _release(conn, self._run, holder)
        return bool(gone)

    def sending(self, reservation: Reservation) -> None:
        """Mark the reservation sent: called before its call's first request goes
        on the wire, so that a process lost from here on keeps it spent."""
        if reservation.id:
            self._conn().execute("UPDATE holds SET sent = 1 WHERE id = ?", (reservation.id,))

    def settle(self, reservation: Reservation, actual: Mapping[str, float]) -> None:
        if not reservation.amounts:
            return
        with self._transaction() as conn:
            conn.executemany("UPDATE scopes SET used = used + ? WHERE run = ? AND scope = ?",
                             [(actual.get(s, 0.0) - a, self._run, s)
                              for s, a in reservation.amounts.items()])
            conn.execute("DELETE FROM holds WHERE id = ?", (reservation.id,))
        self.in_flight.closed()

    def used(self) -> dict[str, float]:
        rows = self._conn().execute("SELECT scope, used FROM scopes WHERE run = ?",
                                    (self._run,)).fetchall()
        return dict(rows)

    def close(self) -> None:
        """Settle what this holder leaves, if anything (as a gone holder's), then
        drop its lock. The file may be gone: Finalize removes the temporary folder
        before a Dask worker tears its steps down; the lock's drop then suffices."""
        if self.in_flight.snapshot()[0]:
            try:
                with self._transaction() as conn:
                    _release(conn, self._run, self._holder)
            except sqlite3.Error:
                pass
        self._file.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        try:
            os.remove(holder_lock(self.path, self._holder))
        except OSError:
            pass


def open_ledger(spec: BudgetSpec | None):
    """The process's ledger for a run's caps (None: no cap)."""
    if spec is None or not spec.caps:
        return None
    if spec.ledger:
        return SqliteLedger(spec.ledger, dict(spec.caps), spec.run)
    return LocalLedger(dict(spec.caps), spec.share)
