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

from collections.abc import Callable, Mapping
from typing import Any

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows


class CountPerBundle(beam.DoFn):
    """Elements -> (name, how many this bundle had), emitted once per bundle;
    with `name_of`, each element is counted under name_of(element)."""

    def __init__(self, name: str, name_of: Callable[[Any], str] | None = None):
        self._name = name
        self._name_of = name_of
        self._n: dict[str, int] = {}

    def start_bundle(self):
        self._n = {}

    def process(self, element):
        name = self._name if self._name_of is None else self._name_of(element)
        self._n[name] = self._n.get(name, 0) + 1

    def finish_bundle(self):
        for name, n in self._n.items():
            yield GlobalWindows.windowed_value((name, n))


class TallyAll(beam.PTransform):
    """{name: pcoll} -> (name, number of elements) for every non-empty pcoll; the
    elements of a pcoll named in `split` are counted under split[name](element)."""

    def __init__(self, split: Mapping[str, Callable[[Any], str]] | None = None):
        super().__init__()
        self._split = dict(split or {})

    def expand(self, tallied: Mapping[str, beam.PCollection]):
        return ([pcoll | f"Tally[{name}]" >> beam.ParDo(CountPerBundle(name,
                                                                       self._split.get(name)))
                 for name, pcoll in tallied.items()]
                | "AllTallies" >> beam.Flatten()
                | "Counts" >> beam.CombinePerKey(sum))
