"""What every DoFn that makes remote calls shares: the process's runtime, a
CallLog of its calls, work in flight on the runtime's loop, and the usage
tallies emitted once per bundle."""
from __future__ import annotations

import concurrent.futures
from typing import Any, Awaitable, Mapping

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from transforms.remote.budget import BudgetSpec
from transforms.remote.cache import CacheSpec
from transforms.remote.usage import CallLog, call_counters, count_calls


class CallingDoFn(beam.DoFn):
    """Base of AnswerWith, EmbedTurns and JudgeTurns: they call open_calls in
    setup; teardown closes the calls.

    Work submitted with `submit` stays in flight across elements (at most
    `max_pending` awaiting here; each endpoint bounds what is on the wire);
    `process` ends with `yield from self.finished()`, which hands back what
    has finished, so one slow call never stalls a whole batch. finish_bundle
    waits for the rest and emits the bundle's usage tallies. Every result
    passes through `emitted` (a subclass's counters) on its way out.
    """

    CALLS = "calls"
    # (output, run_id, attempt) of the run, set by the graph when the run has a lease:
    # the process then writes its progress object from the first call on, not only
    # once a table's rows are written (a stage of its own on Dask, reached minutes later)
    progress_key: tuple[str, str, str] | None = None
    # publish.progress_objects.ProgressWriter, set by the graph beside the key (this
    # package sits below publish/ and does not import it)
    progress_writer: Any = None
    # publish.lease.AttemptWatch, set by the graph beside the key: the process's
    # calls go on unsent once the attempt is stopped (its lease marked failed)
    attempt_watch: Any = None
    _progress = None
    _watch = None

    def start_progress(self) -> None:
        if (self.progress_key is not None and self.progress_writer is not None
                and self._progress is None):
            self._progress = self.progress_writer.start(*self.progress_key)

    def count_done(self, stage: str, n: int = 1) -> None:
        """n turns through this stage (answered, embedded, judged, classified), in
        the run's progress."""
        if self._progress is not None:
            self._progress.tally.stage(stage, n)

    def open_calls(self, endpoints: Mapping, remote: bool, cache: CacheSpec | None = None,
                   max_pending: int | None = None, budget: BudgetSpec | None = None) -> None:
        self._endpoints = dict(endpoints)
        self._cache, self._budget = cache, budget
        self._runtime = None
        if remote:  # the HTTP client is imported by DoFns that call out, not by every run
            from transforms.remote.runtime import acquire_runtime
            self._runtime = acquire_runtime(self._endpoints, cache, budget)
            if self.progress_key is not None and self.attempt_watch is not None:
                self._watch = self.attempt_watch.start(*self.progress_key)
                self._runtime.watch(self._watch)
        self._log = CallLog()
        self.start_progress()
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

    def emitted(self, result: Any) -> Any:
        """What goes out for a finished result (subclasses count errors here)."""
        return result

    def outputs(self, result: Any) -> list[Any]:
        """The elements a finished result emits: itself (a subclass whose work
        items are batches emits each element of the batch)."""
        return [self.emitted(result)]

    def finished(self) -> list[Any]:
        """Finished results, emitted; blocks only while the backlog is full."""
        return [out for r in self.completed(block=self.backlog_full) for out in self.outputs(r)]

    def call_tallies(self):
        """((endpoint, model, purpose), usage accumulator) on the CALLS output, and counters."""
        tallies = self._log.drain()
        if self._runtime is not None:  # a tally in usage/ never has calls the journal lacks
            self._runtime.flush_journal()
        count_calls(tallies, self._counters)
        for item in tallies:
            yield beam.pvalue.TaggedOutput(self.CALLS, GlobalWindows.windowed_value(item))

    def finish_bundle(self):
        for result in self.wait_all():
            for out in self.outputs(result):
                yield GlobalWindows.windowed_value(out)
        yield from self.call_tallies()

    def teardown(self):
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        if getattr(self, "_runtime", None) is not None:
            from transforms.remote.runtime import release_runtime
            if self._watch is not None:
                self._runtime.unwatch(self._watch)
                self._watch.stop()
                self._watch = None
            release_runtime(self._endpoints, self._cache, getattr(self, "_budget", None))
            self._runtime = None
