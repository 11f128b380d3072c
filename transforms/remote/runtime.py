"""The asyncio loop that remote calls run on, one per worker process.

Beam calls a DoFn one element at a time; the DoFn hands each call to this
loop (running in its own thread) and keeps going, so up to `max_concurrency`
requests per endpoint are in flight while the worker also scores and writes.
DoFn instances of the same process share the runtime (and so each endpoint's
rate limiter and connection pool): a per-worker limit means per process.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Awaitable, Mapping

from transforms.remote.budget import BudgetSpec, open_ledger
from transforms.remote.cache import CacheSpec, open_cache
from transforms.remote.client import CallRecord, EndpointClient
from transforms.remote.journal import open_journal
from transforms.progress.tally import count_call
from transforms.remote.scrub import Scrubber, scrubber_for


class AsyncRuntime:
    def __init__(self, endpoints: Mapping[str, Any], cache: CacheSpec | str | None = None,
                 budget: BudgetSpec | None = None):
        self._configs = dict(endpoints)
        self.cache = open_cache(cache)
        self.ledger = open_ledger(budget)  # the run's spend caps, shared by every endpoint
        # every request sent, for the calls of a process lost mid-run (journal.py)
        self.journal = open_journal(budget.journal if budget is not None else None)
        self.scrubber: Scrubber = scrubber_for(self._configs)  # every endpoint's secrets
        self._clients: dict[str, EndpointClient] = {}
        # what says the run was stopped (publish.lease.AttemptWatch, given by the
        # DoFns: this package sits below publish/), checked before each request
        self._watching: dict[Any, int] = {}  # watch -> how many DoFns gave it
        self._watches: tuple[Any, ...] = ()  # the same, as read before each request
        self._watch_lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="evalbeam-remote",
                                        daemon=True)
        self._thread.start()

    def submit(self, coro: Awaitable) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Awaitable) -> Any:
        return self.submit(coro).result()

    def client(self, name: str) -> EndpointClient:
        """The endpoint's client (created on the loop's thread on first use)."""
        client = self._clients.get(name)
        if client is None:
            if name not in self._configs:
                raise KeyError(f"endpoint {name!r} is not configured")

            async def make() -> EndpointClient:
                return EndpointClient(name, self._configs[name], cache=self.cache,
                                      scrubber=self.scrubber, ledger=self.ledger,
                                      journal=self.journal, stopped=self.stopped)
            client = self._clients.setdefault(name, self.run(make()))
        return client

    def watch(self, watch: Any) -> None:
        """Send nothing more once `watch.stopped` says why the run was stopped
        (each DoFn of the process gives it; unwatch when it is torn down)."""
        with self._watch_lock:
            self._watching[watch] = self._watching.get(watch, 0) + 1
            self._watches = tuple(self._watching)

    def unwatch(self, watch: Any) -> None:
        with self._watch_lock:
            left = self._watching.pop(watch, 0) - 1
            if left > 0:
                self._watching[watch] = left
            self._watches = tuple(self._watching)

    def stopped(self) -> str | None:
        """Why the run was stopped (None: it runs): an attribute read per watch."""
        for watch in self._watches:
            if watch.stopped is not None:
                return watch.stopped
        return None

    def record(self, rec: CallRecord, log) -> None:
        """Count a finished call: in the caller's CallLog, in the run's progress, and
        in the request journal as counted in the log's current tally."""
        tally = log.add(rec)
        count_call(rec)
        if self.journal is not None and rec.request_id is not None:
            self.journal.ended(rec.request_id, tally, rec.prompt_tokens, rec.completion_tokens)

    def flush_journal(self) -> None:
        """Write what the request journal holds (an object journal batches its
        events): before a bundle's tallies leave its DoFn."""
        if self.journal is not None:
            self.journal.flush()

    def close(self) -> None:
        async def close_all():
            for c in self._clients.values():
                await c.aclose()
        try:
            self.run(close_all())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
            if self.cache is not None:
                self.cache.close()
            if self.ledger is not None:
                self.ledger.close()
            if self.journal is not None:
                self.journal.close()


_SHARED: dict[int, tuple[AsyncRuntime, int]] = {}
_SHARED_LOCK = threading.Lock()


def _key(endpoints: Mapping[str, Any], cache: CacheSpec | None,
         budget: BudgetSpec | None = None) -> int:
    return hash((repr(sorted(endpoints.items())), cache, budget))


def acquire_runtime(endpoints: Mapping[str, Any], cache: CacheSpec | None = None,
                    budget: BudgetSpec | None = None) -> AsyncRuntime:
    """The process's runtime for these endpoints, call cache and spend caps
    (reference counted)."""
    key = _key(endpoints, cache, budget)
    with _SHARED_LOCK:
        runtime, refs = _SHARED.get(key, (None, 0))
        if runtime is None:
            runtime = AsyncRuntime(endpoints, cache, budget)
        _SHARED[key] = (runtime, refs + 1)
        return runtime


def release_runtime(endpoints: Mapping[str, Any], cache: CacheSpec | None = None,
                    budget: BudgetSpec | None = None) -> None:
    key = _key(endpoints, cache, budget)
    with _SHARED_LOCK:
        runtime, refs = _SHARED.get(key, (None, 0))
        if runtime is None:
            return
        if refs <= 1:
            del _SHARED[key]
            runtime.close()
        else:
            _SHARED[key] = (runtime, refs - 1)


def flush_journals() -> None:
    """Flush the request journal of every runtime of this process (a failed
    run reads the journal next)."""
    if not _SHARED_LOCK.acquire(timeout=1):  # held by the thread a signal interrupted
        return
    try:
        runtimes = [runtime for runtime, _ in _SHARED.values()]
    finally:
        _SHARED_LOCK.release()
    for runtime in runtimes:
        runtime.flush_journal()
