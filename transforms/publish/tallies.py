"""The run's counts (valid cases, invalid rows, bot errors, ...) in one keyed sum.

Each tallied collection is counted where it is produced, one number per
bundle, and only those numbers are flattened and summed. Why not one
(name, 1) element per row into a Flatten and a Count: the FnApiRunner
materialises a Flatten whose inputs come from different stages, and it
decodes the whole buffer in its own process to hand it on, so the runner held
every row's tally at the end of a run (BENCHMARKS.md §1: with this change the
runner's peak at 1 M rows fell from 526 to 441 MiB). One count per name would
instead need a shuffle each.
"""
from __future__ import annotations

from collections.abc import Mapping

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows


class CountPerBundle(beam.DoFn):
    """Elements -> (name, how many this bundle had), emitted once per bundle."""

    def __init__(self, name: str):
        self._name = name
        self._n = 0

    def start_bundle(self):
        self._n = 0

    def process(self, _):
        self._n += 1

    def finish_bundle(self):
        if self._n:
            yield GlobalWindows.windowed_value((self._name, self._n))


class TallyAll(beam.PTransform):
    """{name: pcoll} -> (name, number of elements) for every non-empty pcoll."""

    def expand(self, tallied: Mapping[str, beam.PCollection]):
        return ([pcoll | f"Tally[{name}]" >> beam.ParDo(CountPerBundle(name))
                 for name, pcoll in tallied.items()]
                | "AllTallies" >> beam.Flatten()
                | "Counts" >> beam.CombinePerKey(sum))
