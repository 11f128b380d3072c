"""Beam's DaskRunner (apache_beam.runners.dask), with the pieces that are wrong
for evalbeam fixed; everything else is Beam's own code.

`--runner=dask` selects it (pipeline.cli), with `--dask_client_address` naming
the scheduler (Beam's DaskOptions, unchanged). What differs from Beam 2.77's
runner, and why (docs/upstream/ has a repro and the fix of each, ready to send):

1. A multi-output ParDo keeps its outputs apart. Beam keys bags by producing
   transform, so every consumer of any output saw every element of every output.
   Here bags are keyed by PCollection; a multi-output ParDo's bundle returns one
   list per tag and each output PCollection takes its own.
2. What a DoFn emits in `finish_bundle` is kept (Beam collected the outputs
   before calling finish_bundle, so they were dropped).
3. Every leaf of the graph is computed (Beam computed only the last bag it
   translated, so other branches never ran).
4. A side input is computed once, as a node of the same task graph, and handed
   to every bundle that reads it (Beam iterated the side input's bag inside each
   bundle: a nested compute that redid its upstream work every time).
5. A DoFn instance is set up once per worker process and job and reused for
   every bundle (Beam called setup/teardown around each partition, so a model
   or an HTTP client was rebuilt per bundle); instances are pooled per thread
   and torn down when the job ends, or when idle after the launcher is gone.
6. Beam counters are gathered: each bundle reports its metric updates to the
   scheduler as an event, the launcher merges one report per task (a task
   recomputed after a lost worker counts once), and `result.metrics()` answers
   (it raised NotImplementedError).
7. CombinePerKey (and so CombineGlobally, Count, Top) is lifted: each bundle
   combines its own elements per key, only accumulators are shuffled (by key,
   across partitions), so no worker holds all values of a key. Beam grouped
   every value first, e.g. every row's metric value of a run on one worker.
   The bundles' accumulators are merged per key MERGE_FAN_IN at a time, as
   they finish, and the merges again, a tree, until at most
   MAX_SHUFFLE_PARTITIONS partitions are left for the shuffle: the task graph
   (held by the scheduler) grows linearly with shards, and what a worker keeps
   for a combine is a few partial merges, not one shuffle piece per partition
   and per output held until the last bundle is done.
8. A Create of work items (file shards) gives each item its own partition (up to
   MAX_CREATE_PARTITIONS) unless --dask_npartitions / --dask_partition_size say
   otherwise; Beam's default of 128 items per partition put a whole input on
   one worker.
9. A worker keeps about one bundle per thread in flight (Beam's held every
   step's whole output and let cheap first steps run ahead; a worker held
   4-7 bundles of 5,000 rows, more the longer the run): single-output ParDos
   stream elements within a task (_stream_bundle), a chain that needs a side
   input starts after it, bundle j starts when bundle j - window is done,
   and a bundle's tasks come before the next bundle's (_ordered_graph,
   _bundle_by_bundle).

Like Beam's runner it supports bounded pipelines in the global window.
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import pickle
import re
import threading
import time
import uuid
from typing import Any, Iterable, Iterator, Sequence

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.internal import pickler
from apache_beam.metrics.execution import MetricsContainer, MetricUpdates
from apache_beam.pipeline import AppliedPTransform, PipelineVisitor, PTransformOverride
from apache_beam.runners.common import (DoFnContext, DoFnInvoker, DoFnSignature, Receiver,
                                        _OutputHandler)
from apache_beam.runners.dask import dask_runner as beam_dask
from apache_beam.runners.dask import transform_evaluator as beam_ops
from apache_beam.runners.dask.overrides import _Create, _Flatten, _GroupByKeyOnly, dask_overrides
from apache_beam.runners.direct.direct_metrics import DirectMetrics
from apache_beam.runners.runner import PipelineState
from apache_beam.runners.worker import statesampler
from apache_beam.transforms.sideinputs import SideInputMap
from apache_beam.transforms.window import GlobalWindow, GlobalWindows
from apache_beam.utils.counters import CounterFactory
from apache_beam.utils.windowed_value import WindowedValue

from transforms.remote.client import MissingSecret
from transforms.remote.scrub import scrub_exception

_LOGGER = logging.getLogger(__name__)

MAX_CREATE_PARTITIONS = 4096
MAX_SHUFFLE_PARTITIONS = 4    # a combine's accumulators are shuffled over at most this many
BUNDLES_PER_THREAD = 2        # bundles in flight per worker thread (the window)
MERGE_FAN_IN = 8              # ... after merging this many partitions at a time, a tree
METRICS_TOPIC = "evalbeam-beam-metrics"
IDLE_TEARDOWN_S = 120.0   # a job's DoFns idle this long on a worker are torn down
NO_WORKER_S = 300.0       # a job whose cluster has had no worker this long fails (default)
CLASS_PATH = "pipeline.dask_runner.DaskRunner"


# --- the graph: Beam transforms -> dask bags ---------------------------------------

@dataclasses.dataclass(frozen=True)
class _Step:
    """What a worker needs to run one step of one job: the pickled DoFn (or
    CombineFn) with its arguments, pickled once by Beam's pickler."""
    job: str
    name: str
    payload: bytes
    tags: tuple[str, ...] = ()   # a ParDo's additional output tags

    @property
    def key(self) -> tuple[str, str]:
        return self.job, self.name


class _LiftedCombinePerKey(beam.PTransform):
    """Stands for a CombinePerKey whose CombineFn takes no side input."""

    def __init__(self, combine_fn):
        super().__init__()
        self.combine_fn = combine_fn

    def expand(self, pcoll):
        return pvalue.PCollection.from_(pcoll)

    def infer_output_type(self, input_type):
        return beam.typehints.Any


class _LiftCombinePerKey(PTransformOverride):
    def matches(self, applied: AppliedPTransform) -> bool:
        t = applied.transform
        if t.__class__ is not beam.CombinePerKey or t.args or t.kwargs:
            return False
        main = next(iter(applied.main_inputs.values()), None)
        return main is None or main.windowing.windowfn == GlobalWindows()

    def get_replacement_transform_for_applied_ptransform(self, applied):
        return _LiftedCombinePerKey(applied.transform.fn)


def overrides() -> list[PTransformOverride]:
    """Beam's Dask overrides, after lifting combiners (before their GroupByKey
    would be replaced)."""
    return [_LiftCombinePerKey(), *dask_overrides()]


class _CreateOp(beam_ops.Create):
    """Beam's Create, with one partition per item by default (items of a Create
    in a batch pipeline are usually units of work such as file shards)."""

    def apply(self, input_bag, side_inputs=None):
        import dask.bag as db
        if self.bag_kwargs.get("npartitions") or self.bag_kwargs.get("partition_size"):
            return super().apply(input_bag, side_inputs)
        items = self.transform.values
        return db.from_sequence(items, npartitions=max(1, min(len(items),
                                                              MAX_CREATE_PARTITIONS)))


class _ParDoOp(beam_ops.DaskBagOp):
    """A ParDo over partitions (bundles): a plain list per partition for a
    single-output ParDo, {tag: list} when it has additional outputs."""

    job: str = ""

    def apply(self, input_bag, side_inputs=None):
        transform = self.transform
        args, kwargs = transform.raw_side_inputs
        main_input = next(iter(self.applied.main_inputs.values()))
        window_fn = main_input.windowing.windowfn if hasattr(main_input, "windowing") else None
        views = [(type(si), si._view_options()) for si in self.applied.side_inputs]
        tags = tuple(str(t) for t in self.applied.outputs if t is not None and str(t) != "None")
        payload = pickler.dumps((transform.fn, list(args), kwargs, views, window_fn))
        step = _Step(self.job, self.applied.full_label, payload, tags)
        # a single-output ParDo streams: in a task that runs several steps, each
        # element goes on to the next step as it is made; a multi-output one
        # returns {tag: list}, which its consumers (other tasks) each read
        func, lazy = (_process_bundle, False) if tags else (_stream_bundle, True)
        return _with_side_items(input_bag, func, step, side_inputs or (), lazy=lazy)


class _CombineOp(beam_ops.DaskBagOp):
    """A lifted CombinePerKey: combine per key within each partition, shuffle
    only the (key, accumulator) pairs, merge and extract per key."""

    job: str = ""

    def apply(self, input_bag, side_inputs=None):
        step = _Step(self.job, self.applied.full_label, pickler.dumps(self.transform.combine_fn))
        partial = input_bag.map_partitions(_precombine, step)
        while partial.npartitions > MAX_SHUFFLE_PARTITIONS:
            # a task shuffle starts only when all its inputs are there, and keeps
            # every input's pieces (one per output partition) until then: over
            # 25 partitions, 7 combines, ~4,400 pieces held by the workers through a
            # 1 M-row run, and a task count of ~n^1.5 held by the scheduler. Merged
            # MERGE_FAN_IN at a time as they come, level after level, a worker holds
            # a few partial merges per combine and the shuffle is a small last step.
            partial = _merge_partials(partial, step)
        return partial.groupby(_first, shuffle="tasks").map(_merge_and_extract, step)


def _merge_partials(bag, step: _Step):
    """A bag of (key, accumulator) lists -> one of ceil(n / MERGE_FAN_IN)
    partitions, each the per-key merge of MERGE_FAN_IN neighbours."""
    import dask.bag as db
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
    name = "merge-" + tokenize(bag.name, step)
    n = bag.npartitions
    groups = [range(start, min(n, start + MERGE_FAN_IN)) for start in range(0, n, MERGE_FAN_IN)]
    dsk = {(name, j): (_merge_lists, [(bag.name, i) for i in group], step)
           for j, group in enumerate(groups)}
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[bag])
    return db.Bag(graph, name, len(dsk))


def _count_partition(partition) -> list[int]:
    return [sum(1 for _ in partition)]


def _with_side_items(bag, func, step: _Step, items: Sequence, lazy: bool = False):
    """bag.map_partitions(func, step, *items), as a layer of the same graph.

    Dask's map_partitions turns an Item argument into a graph of its own (a
    nested "finalize" computation), which recomputes everything upstream of
    the side input; naming the items' keys in this layer computes them once.

    lazy: func returns an iterator. It is wrapped in dask.bag's `reify`, as
    dask.bag's own lazy operations are: where dask fuses steps into one task,
    its optimizer drops the inner `reify`s, so elements flow from step to step
    one at a time; only a task's result is made a list (kept, sent, read by
    several consumers). Without it every step of a task held its whole bundle's
    output at once."""
    import dask.bag as db
    from dask.bag.core import reify
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
    # the step's label in the key: dask's dashboard and logs name tasks by it
    label = re.sub(r"[^0-9A-Za-z]+", "_", step.name).strip("_")[-60:]
    name = f"{label}-pardo-" + tokenize(bag.name, step, [item.key for item in items])
    dsk = {(name, i): (func, (bag.name, i), step, *[item.key for item in items])
           for i in range(bag.npartitions)}
    if lazy:
        dsk = {key: (reify, task) for key, task in dsk.items()}
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[bag, *items])
    return db.Bag(graph, name, bag.npartitions)


def _flatten(bags):
    """Beam's Flatten. Bags of one bundle count: partition i holds every bag's
    partition i, so the flattened bag's i is still bundle i (its priority, its
    window). db.concat numbers the second bag's partitions after the first's:
    bundle i of the fifth bag became 4n + i, and its task, ranked behind every
    bundle, waited for the end of the run with its inputs kept."""
    import dask.bag as db
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
    n = bags[0].npartitions
    if len(bags) == 1 or any(b.npartitions != n for b in bags):
        return db.concat(bags)
    name = "flatten-" + tokenize(*[b.name for b in bags])
    dsk = {(name, i): (_concat, [(b.name, i) for b in bags]) for i in range(n)}
    return db.Bag(HighLevelGraph.from_collections(name, dsk, dependencies=bags), name, n)


def _first(kv):
    return kv[0]


def _pick(partition: dict, tag: str) -> list:
    return partition.get(tag, [])


def _as_list(partition) -> list:
    return list(partition)


def _concat(lists) -> list:
    return [x for part in lists for x in part]


class _Translator(PipelineVisitor):
    """Beam transforms -> dask bags, one bag per PCollection."""

    def __init__(self, job: str, bag_kwargs: dict):
        self.job, self.bag_kwargs = job, bag_kwargs
        self.bags: dict[pvalue.PValue, Any] = {}
        self.consumed: set[pvalue.PValue] = set()
        self._side_items: dict[pvalue.PValue, Any] = {}
        self._created: set[str] = set()            # bags of a Create
        self._first_steps: dict[str, str] = {}     # ParDo layer over a Create -> that bag
        self._side_edges: list[tuple[str, tuple[str, ...]]] = []  # ParDo layer, its sides

    def _op(self, node: AppliedPTransform):
        cls = type(node.transform)
        if cls is _Create:
            return _CreateOp(node, bag_kwargs=self.bag_kwargs)
        if cls is beam.ParDo:
            op = _ParDoOp(node, bag_kwargs=self.bag_kwargs)
        elif cls is _LiftedCombinePerKey:
            op = _CombineOp(node, bag_kwargs=self.bag_kwargs)
        else:
            return beam_ops.TRANSLATIONS.get(cls, beam_ops.NoOp)(node,
                                                                 bag_kwargs=self.bag_kwargs)
        op.job = self.job
        return op

    def _side_item(self, pcoll):
        """The side input's whole contents as one node of the graph, computed once."""
        if pcoll not in self._side_items:
            self._side_items[pcoll] = self.bags[pcoll].reduction(_as_list, _concat)
        return self._side_items[pcoll]

    def visit_transform(self, node: AppliedPTransform) -> None:
        import dask.bag as db
        op = self._op(node)
        inputs = [pc for pc in node.inputs if not isinstance(pc, pvalue.PBegin)]
        self.consumed.update(inputs)
        bags = [self.bags[pc] for pc in inputs if pc in self.bags]
        sides = []
        for si in node.side_inputs:
            self.consumed.add(si.pvalue)
            sides.append(self._side_item(si.pvalue))
        if isinstance(op, beam_ops.Flatten):
            out = _flatten(bags) if bags else db.from_sequence([], npartitions=1)
        else:
            out = op.apply(bags[0] if bags else None, sides or None)
        if isinstance(op, _CreateOp):
            self._created.add(out.name)
        elif isinstance(op, _ParDoOp):
            if bags and bags[0].name in self._created:
                self._first_steps[out.name] = bags[0].name
            if sides:
                self._side_edges.append((out.name, tuple(item.key for item in sides)))
        outputs = dict(node.outputs)
        if isinstance(op, _ParDoOp) and len(outputs) > 1:
            for tag, pcoll in outputs.items():
                main = tag is None or str(tag) == "None"
                self.bags[pcoll] = out.map_partitions(_pick, None if main else str(tag))
        else:
            for pcoll in outputs.values():
                if out is not None:
                    self.bags[pcoll] = out

    def leaves(self):
        """One collection that depends on every PCollection nothing consumes
        (their element count, so nothing big comes back to the launcher).

        One, because dask optimises each computed collection's graph on its own:
        computing the leaves as a list fuses a chain they share differently into
        each one, under other keys, and runs the shared work once per leaf."""
        import dask.bag as db
        seen, counts = set(), []
        for pcoll, bag in self.bags.items():
            if pcoll not in self.consumed and bag.name not in seen:
                seen.add(bag.name)
                counts.append(bag.map_partitions(_count_partition))
        return db.concat(counts).sum()

    def ordered(self, result, window: int):
        """result's graph, ordered for a worker's memory (_ordered_graph)."""
        return _ordered_graph(result, self._first_steps, self._side_edges, window)


def _ordered_graph(result, first_steps: dict[str, str],
                   side_edges: Sequence[tuple[str, Sequence[str]]], window: int):
    """The graph of `result` with two orders that dask does not keep on its
    own, both by making the first step of a chain (a ParDo over a Create's
    items: evalbeam's read of one input shard) wait for more than its input.

    Dask runs whatever is ready, and a worker starts another ready task while
    the scheduler is still handing it the next step of the one it finished.
    So a cheap first step ran ahead for bundle after bundle, and its output
    waited in the worker's memory: measured, a worker held 4-7 bundles of
    5,000 rows at once, more the longer the run. The FnApiRunner keeps one
    bundle per worker in flight; so do these:

    1. Side inputs first (_side_input_waits): the first step of a chain that
       leads to a ParDo with side inputs waits for those side inputs, as the
       FnApiRunner runs a side input's stage before the stage that reads it.
    2. A window of bundles (_window_waits): bundle j's first step waits until
       bundle j - window's own tasks are done, so at most `window` bundles
       are in flight, whatever the number of bundles."""
    from dask.bag import Item
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
    graph = result.__dask_graph__()
    layers, deps = dict(graph.layers), {k: set(v) for k, v in graph.dependencies.items()}
    layer_waits = _side_input_waits(deps, first_steps, side_edges)
    key_waits = _window_waits(graph, first_steps, window)
    for first in set(layer_waits) | {key[0] for key in key_waits}:
        sides = sorted(layer_waits.get(first, ()))
        tasks = {}
        for key, task in layers[first].items():
            before = key_waits.get(key, [])
            wait = sides + before
            tasks[key] = _waiting(task, first_steps[first], wait) if wait else task
            deps[first].update(k[0] if isinstance(k, tuple) else k for k in before)
        deps[first].update(sides)
        layers[first] = MaterializedLayer(tasks)
    return Item(HighLevelGraph(layers, deps), result.key)


def _upstream(deps: dict, name) -> set:
    seen, todo = set(), [name]
    while todo:
        for dep in deps.get(todo.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def _side_input_waits(deps: dict[str, set[str]], first_steps: dict[str, str],
                      side_edges: Sequence[tuple[str, Sequence[str]]]) -> dict[str, set[str]]:
    """{first-step layer: the side inputs it waits for}. A chain that a side
    input is itself computed from is left alone (no cycle)."""
    waits: dict[str, set[str]] = {}
    for consumer, sides in side_edges:
        if consumer not in deps:
            continue
        before = _upstream(deps, consumer)
        for first in first_steps:
            if first == consumer or first not in before:
                continue
            for side in sides:
                if side not in deps[first] and first not in _upstream(deps, side):
                    waits.setdefault(first, set()).add(side)
                    deps[first].add(side)
    return waits


def _window_waits(graph, first_steps: dict[str, str], window: int) -> dict[Any, list]:
    """{(first-step layer, j): the keys it waits for}: the last tasks of
    bundle j - window's own work. A bundle's own work is what follows its
    first step task by task (keys (name, j)) up to where rows of many
    bundles meet (a combine, a side input); a task that reads such a meeting
    point (a side input computed from all bundles) is not part of it, so no
    bundle waits for another's wait (no cycle)."""
    from dask.core import get_deps
    dsk = dict(graph)
    dependencies, dependents = get_deps(dsk)
    waits: dict[Any, list] = {}
    for first in first_steps:
        keys = sorted((k for k in graph.layers[first].keys()), key=lambda k: k[1])
        below: set = set()
        todo = list(keys)
        while todo:
            for d in dependents.get(todo.pop(), ()):
                if d not in below:
                    below.add(d)
                    todo.append(d)
        ends: dict[int, list] = {}
        for key in keys:
            i, region, todo = key[1], {key}, [key]
            while todo:
                for d in dependents.get(todo.pop(), ()):
                    if d in region or not (isinstance(d, tuple) and len(d) == 2 and d[1] == i):
                        continue
                    if all(x in region or x not in below for x in dependencies[d]):
                        region.add(d)
                        todo.append(d)
            ends[i] = sorted((k for k in region if not dependents.get(k, set()) & region), key=str)
        for key in keys:
            if key[1] - window in ends:
                waits[key] = ends[key[1] - window]
    return waits


def _bundle_by_bundle(collection):
    """The collection's optimised graph, each task with a scheduler priority:
    a bundle's tasks before the next bundle's, and everything that is not one
    bundle's (merges, shuffles, side inputs) as soon as it can run.

    dask.order put each bundle's writes at the end of the whole graph (they
    only feed the completion step), so a worker kept every bundle's scored
    rows until the writes got a turn: a worker held 4-7 bundles of 5,000 rows,
    and more the longer the run. As the FnApiRunner does, a bundle's rows now
    leave the worker before it starts the next. Priorities are set on the
    optimised (fused) graph: dask's optimisation renames the tasks it fuses
    and drops per-layer annotations."""
    import dask
    from dask.bag import Item
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
    (optimized,) = dask.optimize(collection)
    layer = MaterializedLayer(dict(optimized.__dask_graph__()),
                              annotations={"priority": _bundle_priority})
    name = optimized.key  # an Item's layer is named by its key
    return Item(HighLevelGraph({name: layer}, {name: set()}), name)


def _bundle_priority(key) -> int:
    """Bundle i's tasks (keys (name, i)) -i; any other task 1 (higher first)."""
    if isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], int):
        return -key[1]
    return 1


def _waiting(task, source: str, sides: Sequence[str]):
    """task with its input partition (source, i) read only once `sides` exist."""
    if isinstance(task, tuple) and len(task) == 2 and task[0] == source \
            and isinstance(task[1], int):
        return (_after, task, *sides)
    if isinstance(task, tuple) and task and callable(task[0]):
        return (task[0], *(_waiting(arg, source, sides) for arg in task[1:]))
    return task


def _after(value, *_):
    return value


# --- on the workers: bundles, DoFn instances, metrics -------------------------------

class _Collector(Receiver):
    def __init__(self):
        self.values: list = []

    def receive(self, windowed_value: WindowedValue) -> None:
        self.values.append(windowed_value.value)


class _Receivers(dict):
    """Receivers per output tag (None: the main output), emptied per bundle."""

    def __missing__(self, tag):
        self[tag] = _Collector()
        return self[tag]

    def take(self, tags: Sequence[str]):
        if not tags:
            out = self[None].values
        else:
            out = {t: c.values for t, c in self.items()}
        for c in self.values():
            c.values = []
        return out


class _DoFnInstance:
    """One set-up DoFn with its invoker; runs one bundle at a time."""

    def __init__(self, step: _Step, side_values: Sequence[list]):
        fn, args, kwargs, views, window_fn = pickler.loads(step.payload)
        self.step, self.window_fn = step, window_fn
        self.receivers = _Receivers()
        handler = _OutputHandler(window_fn=window_fn, main_receivers=self.receivers[None],
                                 tagged_receivers=self.receivers,
                                 per_element_output_counter=None, output_batch_converter=None,
                                 process_yields_batches=False,
                                 process_batch_yields_elements=False)
        side_maps = [SideInputMap(view, options, [WindowedValue(v, 0, (GlobalWindow(),))
                                                  for v in values])
                     for (view, options), values in zip(views, side_values)]
        self.invoker = DoFnInvoker.create_invoker(
            DoFnSignature(fn), handler, context=DoFnContext(step.name, state=None),
            side_inputs=side_maps, input_args=args, input_kwargs=kwargs,
            user_state_context=None, bundle_finalizer_param=beam.DoFn.BundleFinalizerParam())
        self.invoker.invoke_setup()

    def run_bundle(self, items: Iterable) -> tuple[Any, MetricUpdates]:
        container = MetricsContainer(self.step.name)
        sampler = statesampler.StateSampler("", CounterFactory())
        previous = statesampler.get_current_tracker()
        statesampler.set_current_tracker(sampler)
        try:
            with sampler.scoped_state(self.step.name, "process", metrics_container=container):
                self.invoker.invoke_start_bundle()
                for item in items:
                    self.invoker.invoke_process(beam_ops.get_windowed_value(item,
                                                                           self.window_fn))
                self.invoker.invoke_finish_bundle()  # its output is kept (Beam lost it)
        finally:
            statesampler.set_current_tracker(previous)
        return self.receivers.take(self.step.tags), container.get_cumulative()

    def stream_bundle(self, items: Iterable) -> Iterator[Any]:
        """The bundle's main output, yielded as each element's output is made;
        its metric updates are reported at the end. The tracker is set around
        each call only: between calls this generator is suspended while the
        steps before and after it in the same task run theirs."""
        container = MetricsContainer(self.step.name)
        sampler = statesampler.StateSampler("", CounterFactory())
        state = sampler.scoped_state(self.step.name, "process", metrics_container=container)
        out = self.receivers[None]

        def call(method, *args):
            previous = statesampler.get_current_tracker()
            statesampler.set_current_tracker(sampler)
            try:
                with state:
                    method(*args)
            finally:
                statesampler.set_current_tracker(previous)
            made, out.values = out.values, []
            return made

        yield from call(self.invoker.invoke_start_bundle)
        for item in items:
            yield from call(self.invoker.invoke_process,
                            beam_ops.get_windowed_value(item, self.window_fn))
        yield from call(self.invoker.invoke_finish_bundle)  # kept (Beam lost it)
        _report_metrics(self.step, container.get_cumulative())

    def teardown(self) -> None:
        try:
            self.invoker.invoke_teardown()
        except Exception:  # teardown is best effort, as in Beam
            _LOGGER.warning("teardown of %s failed", self.step.name, exc_info=True)


class _Pool:
    """The set-up instances of one step of one job in this process (one per
    thread that runs its bundles at the same time)."""

    def __init__(self, step: _Step, side_values: Sequence[list]):
        self.step, self.side_values = step, side_values
        self.idle: list[_DoFnInstance] = []
        self.busy = 0
        self.last_used = time.monotonic()
        self.closed = False


_POOLS: dict[tuple[str, str], _Pool] = {}
_COMBINE_FNS: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()
_REAPER: threading.Thread | None = None


def _acquire(step: _Step, side_values: Sequence[list]) -> tuple[_Pool, _DoFnInstance]:
    with _LOCK:
        pool = _POOLS.get(step.key)
        if pool is None:
            pool = _POOLS[step.key] = _Pool(step, side_values)
            _start_reaper()
        pool.busy += 1
        pool.last_used = time.monotonic()
        instance = pool.idle.pop() if pool.idle else None
    if instance is None:
        try:
            instance = _DoFnInstance(step, pool.side_values)
        except BaseException:
            with _LOCK:
                pool.busy -= 1
            raise
    return pool, instance


def _release(pool: _Pool, instance: _DoFnInstance, ok: bool) -> None:
    with _LOCK:
        pool.busy -= 1
        pool.last_used = time.monotonic()
        keep = ok and not pool.closed
        if keep:
            pool.idle.append(instance)
    if not keep:  # a failed bundle may leave the instance broken; a closed job is over
        instance.teardown()


def _note_step(exc: BaseException, step: _Step) -> None:
    """Name the step an error came from, once: in a task of streaming steps
    it passes through the later steps too."""
    if not any(n.endswith(_NOTE_TAIL) for n in getattr(exc, "__notes__", ())):
        exc.add_note(f"in step {step.name!r}{_NOTE_TAIL}")


_NOTE_TAIL = " (evalbeam's Dask runner)"


@contextlib.contextmanager
def _bundle_instance(step: _Step, side_values: Sequence[list]) -> Iterator[_DoFnInstance]:
    """A set-up instance of the step for one bundle: back to the pool when the
    bundle ends well, torn down when it fails or is abandoned midway (a later
    step of a streaming task failed); an error names its step once and leaves
    scrubbed (_shipped)."""
    try:
        pool, instance = _acquire(step, side_values)
    except BaseException as exc:
        raise _shipped(exc, step)
    ok = False
    try:
        yield instance
        ok = True
    except GeneratorExit:  # abandoned, not failed
        raise
    except BaseException as exc:
        raise _shipped(exc, step)
    finally:
        _release(pool, instance, ok)


def _shipped(exc: BaseException, step: _Step) -> BaseException:
    """The error as it may leave the worker: Dask sends its text to the
    scheduler, which keeps it for the dashboard's exceptions page
    (/info/main/exceptions.html) and its task pages, and to the launcher;
    a secret it quotes (a custom metric's Crash with the key) is scrubbed in
    place, as the worker's logs are."""
    if isinstance(exc, MissingSecret):
        exc = _on_this_worker(exc)
    if isinstance(exc, Exception):
        _note_step(exc, step)
    return scrub_exception(exc)


def _on_this_worker(exc: MissingSecret) -> MissingSecret:
    """A variable the run's up-front check found on every worker, missing on
    this one (it joined later): said with the worker's address, or the user
    looks where it is set, the launcher."""
    try:
        from distributed import get_worker
        address = get_worker().address
    except (ImportError, ValueError):
        return exc  # not on a distributed worker (dask's local scheduler)
    return MissingSecret(f"{exc} on the Dask worker {address}, which joined after the run's "
                         "check of the workers; set it up on every worker (docs/guides/dask.md)"
                         ).with_traceback(exc.__traceback__)


def _process_bundle(items, step: _Step, *side_values):
    with _bundle_instance(step, side_values) as instance:
        out, updates = instance.run_bundle(items)
    _report_metrics(step, updates)
    return out


def _stream_bundle(items, step: _Step, *side_values) -> Iterator[Any]:
    """_process_bundle of a single-output ParDo, as a generator (see
    _with_side_items); the instance is busy until the generator ends."""
    with _bundle_instance(step, side_values) as instance:
        yield from instance.stream_bundle(items)


def _combine_fn(step: _Step):
    with _LOCK:
        fn = _COMBINE_FNS.get(step.key)
    if fn is None:
        fn = pickler.loads(step.payload)
        fn.setup()
        with _LOCK:
            fn = _COMBINE_FNS.setdefault(step.key, fn)
    return fn


_MISSING = object()


def _precombine(items, step: _Step) -> list:
    fn = _combine_fn(step)
    accs: dict = {}
    for key, value in items:
        acc = accs.get(key, _MISSING)
        accs[key] = fn.add_input(fn.create_accumulator() if acc is _MISSING else acc, value)
    return [(key, fn.compact(acc)) for key, acc in accs.items()]


def _merged(fn, accs: Iterable):
    """fn's merge of accs into a new accumulator: a CombineFn may modify the
    first one it is given, and these are task results that dask may hand to
    a retried task again."""
    return fn.merge_accumulators(itertools.chain([fn.create_accumulator()], accs))


def _merge_lists(lists: Sequence[list], step: _Step) -> list:
    fn = _combine_fn(step)
    by_key: dict = {}
    for part in lists:
        for key, acc in part:
            by_key.setdefault(key, []).append(acc)
    return [(key, fn.compact(_merged(fn, accs))) for key, accs in by_key.items()]


def _merge_and_extract(group, step: _Step):
    key, pairs = group
    fn = _combine_fn(step)
    return key, fn.extract_output(_merged(fn, (acc for _, acc in pairs)))


def _report_metrics(step: _Step, updates: MetricUpdates) -> None:
    if not (updates.counters or updates.distributions or updates.gauges
            or updates.string_sets or updates.bounded_tries):
        return
    try:
        from distributed import get_worker
        worker = get_worker()
        task = str(worker.get_current_task())
    except (ImportError, ValueError, KeyError):
        return  # not on a distributed worker (dask's local scheduler): nowhere to send them
    worker.log_event(METRICS_TOPIC, {"job": step.job, "task": task, "step": step.name,
                                     "updates": pickle.dumps(updates)})


def release_job(job: str) -> int:
    """Tear down this process's DoFns and CombineFns of a job; returns how many."""
    with _LOCK:
        pools = [p for k, p in _POOLS.items() if k[0] == job]
        fns = [f for k, f in _COMBINE_FNS.items() if k[0] == job]
        for k in [k for k in _POOLS if k[0] == job]:
            del _POOLS[k]
        for k in [k for k in _COMBINE_FNS if k[0] == job]:
            del _COMBINE_FNS[k]
        instances = []
        for pool in pools:
            pool.closed = True
            instances += pool.idle
            pool.idle = []
    for instance in instances:
        instance.teardown()
    for fn in fns:
        try:
            fn.teardown()
        except Exception:
            _LOGGER.warning("CombineFn teardown failed", exc_info=True)
    return len(instances) + len(fns)


def _idle_jobs(now: float) -> set[str]:
    with _LOCK:
        by_job: dict[str, list[_Pool]] = {}
        for (job, _), pool in _POOLS.items():
            by_job.setdefault(job, []).append(pool)
    return {job for job, pools in by_job.items()
            if all(p.busy == 0 and now - p.last_used > IDLE_TEARDOWN_S for p in pools)}


def _reap_forever() -> None:
    """Tears down the DoFns of jobs whose bundles stopped coming (their launcher
    is gone, so nobody will release them): their heartbeats stop with them."""
    while True:
        time.sleep(min(30.0, IDLE_TEARDOWN_S / 4))
        for job in _idle_jobs(time.monotonic()):
            release_job(job)


def _start_reaper() -> None:
    global _REAPER
    if _REAPER is None or not _REAPER.is_alive():
        _REAPER = threading.Thread(target=_reap_forever, name="evalbeam-dofn-reaper",
                                   daemon=True)
        _REAPER.start()


# --- on the launcher: the job and its result --------------------------------------

class _MetricReports:
    """The metric updates the bundles reported, one per (task, step)."""

    def __init__(self, job: str):
        self.job = job
        self.by_task: dict[tuple[str, str], bytes] = {}
        self._lock = threading.Lock()

    def receive(self, event) -> None:
        _, msg = event
        if isinstance(msg, dict) and msg.get("job") == self.job:
            with self._lock:
                self.by_task[(msg["task"], msg["step"])] = msg["updates"]

    def results(self) -> DirectMetrics:
        metrics = DirectMetrics()
        with self._lock:
            reports = list(self.by_task.items())
        for key, payload in reports:
            updates = pickle.loads(payload)
            metrics.commit_physical(key, updates)
            metrics.commit_logical(key, updates)
        return metrics


class JobLost(RuntimeError):
    """The job ended without its results: the launcher lost the scheduler, or
    the job was cancelled. The message says all there is (no traceback)."""

    one_line = True


def no_worker_timeout(options) -> float:
    """--dask_no_worker_timeout: how long the cluster may have no worker before
    the job fails (NO_WORKER_S by default; a cluster whose workers restart
    slowly, say from an autoscaler, needs longer, a CI job less)."""
    raw = options.get_all_options(retain_unknown_options=True).get("dask_no_worker_timeout")
    if raw is None:
        return NO_WORKER_S
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        raise ValueError(f"--dask_no_worker_timeout must be a number of seconds above 0, "
                         f"got {raw!r}")
    return value


class _NoWorkerWatch:
    """Cancels the job once its cluster has had no worker for `limit` seconds
    (--dask_no_worker_timeout): its tasks wait for one forever (every worker
    lost, none replacing them), while the launcher keeps the run's lease alive
    and `status` says running."""

    def __init__(self, client, futures: Sequence, limit: float = NO_WORKER_S):
        self.client, self.futures, self.why, self.limit = client, futures, "", limit
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="evalbeam-dask-no-worker",
                                        daemon=True)

    def __enter__(self) -> "_NoWorkerWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()

    def _watch(self) -> None:
        limit = self.limit
        since = None
        while not self._done.wait(min(5.0, limit / 5)):
            try:
                workers = len(self.client.nthreads())
            except Exception:  # the scheduler lost: wait_until_finish says so
                continue
            since = None if workers else (since or time.monotonic())
            if since is not None and time.monotonic() - since >= limit:
                self.why = (f"the cluster has had no worker for {limit:g} s: every worker "
                            "was lost and none joined")
                self.client.cancel(self.futures)
                return


@dataclasses.dataclass
class DaskRunnerResult(beam_dask.DaskRunnerResult):
    job: str = ""
    reports: _MetricReports | None = None
    no_worker_s: float = NO_WORKER_S
    _closed: bool = False

    def wait_until_finish(self, duration=None) -> str:
        try:
            with _NoWorkerWatch(self.client, self.futures, self.no_worker_s) as no_worker:
                state = super().wait_until_finish(duration)
            # Beam's loop ends quietly over cancelled futures: a client that lost its
            # scheduler cancels them all, and the job said DONE with nothing computed
            lost = [f for f in self.futures if f.status != "finished"]
            if state == PipelineState.DONE and lost:
                self._state = PipelineState.FAILED
                why = no_worker.why or ("the launcher lost the scheduler" if self._scheduler_lost()
                                        else "the job was cancelled")
                raise JobLost(f"the Dask job did not complete: {len(lost)} of its "
                              f"{len(self.futures)} results {lost[0].status} ({why})")
            return state
        finally:
            if self._state in (PipelineState.DONE, PipelineState.FAILED):
                self._finish()

    def cancel(self) -> str:
        try:
            return super().cancel()
        finally:
            self._finish()

    def _finish(self) -> None:
        """Gather the last metric reports, tear the job's DoFns down on every
        worker, close the client (Beam's runner left it open)."""
        if self._closed:
            return
        self._closed = True
        if self._scheduler_lost():
            # nothing to ask it (the workers' reaper tears their DoFns down); closing
            # ends the client's reconnecting, which logs the cancelled attempt's
            # traceback: the job's error says what happened, in one line
            logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
            self.client.close()
            return
        try:
            for event in self.client.get_events(METRICS_TOPIC):
                self.reports.receive(event)
        except Exception:
            _LOGGER.warning("could not read the job's metric reports", exc_info=True)
        try:
            self.client.run(release_job, self.job)
        except Exception:
            _LOGGER.warning("could not tear the job's DoFns down", exc_info=True)
        try:
            self.client.unsubscribe_topic(METRICS_TOPIC)
            self.client.close()
        except Exception:
            pass

    def _scheduler_lost(self) -> bool:
        """The client lost its scheduler: it cancelled the futures and is trying
        to reconnect (for --dask_connection_timeout), or gave up and closed."""
        return self.client.status in ("connecting", "closing", "closed")

    def metrics(self):
        return self.reports.results()


class DaskRunner(beam_dask.DaskRunner):
    """Executes a pipeline on a Dask distributed cluster (see the module doc)."""

    def run_pipeline(self, pipeline, options):
        try:
            import dask.distributed as ddist
        except ImportError:
            raise ImportError("the Dask runner needs dask and distributed: "
                              "pip install dask distributed (or '.[dask]' in evalbeam's clone)") from None
        dask_options = options.view_as(beam_dask.DaskOptions).get_all_options(
            drop_default=True, current_only=True)
        bag_kwargs = beam_dask.DaskOptions._extract_bag_kwargs(dask_options)
        pipeline.replace_all(overrides())
        job = uuid.uuid4().hex
        translator = _Translator(job, bag_kwargs)
        pipeline.visit(translator)
        where = dask_options.get("address") or dask_options.get("scheduler_file")
        if not where:
            # Beam starts a LocalCluster here: its scheduler and nannies log every start
            # and stop at INFO through Beam's root handler, dozens of lines around the run's
            logging.getLogger("distributed").setLevel(logging.WARNING)
        try:  # the scheduler answered the plan's check: it went away since
            client = ddist.Client(**dask_options)
        except OSError as exc:
            raise JobLost(f"cannot reach the Dask scheduler {where}: "
                          + f"{type(exc).__name__}: {exc}".split("\n")[0]) from None
        try:
            threads = sum(client.nthreads().values())
            window = max(2, BUNDLES_PER_THREAD * threads)
            collection = _bundle_by_bundle(translator.ordered(translator.leaves(), window))
            reports = _MetricReports(job)
            client.subscribe_topic(METRICS_TOPIC, reports.receive)
            futures = [client.compute(collection, optimize_graph=False)]
        except BaseException:
            client.close()
            raise
        return DaskRunnerResult(client, futures, job=job, reports=reports,
                                no_worker_s=no_worker_timeout(options))
