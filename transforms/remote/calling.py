"""What every DoFn that makes remote calls shares: the process's runtime, a
CallLog of its calls, work in flight on the runtime's loop, and the usage
tallies emitted once per bundle."""
from __future__ import annotations

import concurrent.futures
from typing import Any, Awaitable, Mapping

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from transforms.remote.runtime import acquire_runtime, release_runtime
from transforms.remote.usage import CallLog, call_counters, count_calls


def runtime_key(endpoints: Mapping, cache_path: str | None = None) -> int:
    return hash((repr(sorted(endpoints.items())), cache_path))


class CallingDoFn(beam.DoFn):
    """Base of AnswerWith, EmbedTurns and JudgeTurns: open_calls in setup,
    close_calls in teardown, and `yield from self.call_tallies()` in finish_bundle.

    Work submitted with `submit` stays in flight across elements (at most
    `max_pending` awaiting here; each endpoint bounds what is on the wire), and
    `completed` hands back what has finished, so one slow call never stalls a
    whole batch. finish_bundle must `wait_all()` and emit the rest.
    """

    CALLS = "calls"

    def open_calls(self, endpoints: Mapping, remote: bool, cache_path: str | None = None,
                   max_pending: int | None = None) -> None:
        self._endpoints = dict(endpoints)
        self._cache_path = cache_path
        self._runtime = acquire_runtime(runtime_key(self._endpoints, cache_path),
                                        self._endpoints, cache_path) if remote else None
        self._log = CallLog()
        self._counters = call_counters()
        self._pending: list[concurrent.futures.Future] = []
        self._max_pending = max_pending or (
            2 * sum(e.max_concurrency for e in self._endpoints.values()) or 64)

    def submit(self, coro: Awaitable) -> None:
        self._pending.append(self._runtime.submit(coro))

    @property
    def backlog_full(self) -> bool:
        return len(self._pending) >= self._max_pending

    def completed(self, block: bool) -> list[Any]:
        """Results of finished work; with block, first wait until the backlog is half full."""
        finished: list[concurrent.futures.Future] = []
        if block:
            while len(self._pending) > self._max_pending // 2:
                done, rest = concurrent.futures.wait(
                    self._pending, return_when=concurrent.futures.FIRST_COMPLETED)
                finished.extend(done)
                self._pending = list(rest)
        still = []
        for f in self._pending:
            (finished if f.done() else still).append(f)
        self._pending = still
        return [f.result() for f in finished]

    def wait_all(self) -> list[Any]:
        if self._pending:
            concurrent.futures.wait(self._pending)
        return self.completed(block=False)

    def call_tallies(self):
        """((endpoint, model, purpose), usage accumulator) on the CALLS output, and counters."""
        tallies = self._log.drain()
        count_calls(tallies, self._counters)
        for item in tallies:
            yield beam.pvalue.TaggedOutput(self.CALLS, GlobalWindows.windowed_value(item))

    def close_calls(self) -> None:
        if getattr(self, "_runtime", None) is not None:
            release_runtime(runtime_key(self._endpoints, self._cache_path))
            self._runtime = None
