"""What every DoFn that makes remote calls shares: the process's runtime, a
CallLog of its calls, and the usage tallies emitted once per bundle."""
from __future__ import annotations

from typing import Mapping

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from transforms.remote.runtime import acquire_runtime, release_runtime
from transforms.remote.usage import CallLog, call_counters, count_calls


def runtime_key(endpoints: Mapping) -> int:
    return hash(repr(sorted(endpoints.items())))


class CallingDoFn(beam.DoFn):
    """Base of AnswerWith and EmbedTurns: open_calls in setup, close_calls in
    teardown, and `yield from self.call_tallies()` in finish_bundle."""

    CALLS = "calls"

    def open_calls(self, endpoints: Mapping, remote: bool) -> None:
        self._endpoints = dict(endpoints)
        self._runtime = acquire_runtime(runtime_key(self._endpoints), self._endpoints) \
            if remote else None
        self._log = CallLog()
        self._counters = call_counters()

    def call_tallies(self):
        """((endpoint, model), usage accumulator) on the CALLS output, and Beam counters."""
        tallies = self._log.drain()
        count_calls(tallies, self._counters)
        for item in tallies:
            yield beam.pvalue.TaggedOutput(self.CALLS, GlobalWindows.windowed_value(item))

    def close_calls(self) -> None:
        if getattr(self, "_runtime", None) is not None:
            release_runtime(runtime_key(self._endpoints))
            self._runtime = None
