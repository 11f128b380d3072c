"""evalbeam's Dask runner (pipeline/dask_runner.py) on small probe pipelines,
against a real cluster (a `dask scheduler` and two `dask worker` processes).

Each probe shows one bug of Beam 2.77's own DaskRunner: the same test runs
with Beam's runner as a strict xfail, so it fails there today and this file
says so when Beam fixes it (docs/upstream/ has each write-up)."""
from __future__ import annotations

import os
import threading
import time

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms.window import GlobalWindows

from tests.conftest import ROOT
from tests.dask_cluster import DaskCluster

pytest.importorskip("distributed")

OURS = "pipeline.dask_runner.DaskRunner"
BEAMS = "apache_beam.runners.dask.dask_runner.DaskRunner"
RUNNERS = [OURS, pytest.param(BEAMS, marks=pytest.mark.xfail(strict=True,
                                                              reason="Beam 2.77's DaskRunner"))]


@pytest.fixture(scope="module")
def cluster():
    # the probe DoFns are this module's: the workers import them by name
    with DaskCluster(workers=2, env={"PYTHONPATH": ROOT}) as c:
        yield c


def run(cluster, runner: str, build, *options: str) -> beam.runners.runner.PipelineResult:
    p = beam.Pipeline(options=PipelineOptions([f"--runner={runner}",
                                               f"--dask_client_address={cluster.address}",
                                               *options]))
    build(p)
    result = p.run()
    try:
        result.wait_until_finish()
    finally:
        result.client.close()  # Beam's runner leaves its client open (ours closes it)
    return result


class Record(beam.DoFn):
    """Appends each element (and the worker's pid) as a line to a file."""

    def __init__(self, path: str):
        self.path = path

    def process(self, x):
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f"{x}\t{os.getpid()}\n")
        yield x


def lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as fh:
            return [line.split("\t")[0] for line in fh.read().splitlines()]
    except FileNotFoundError:
        return []


def pids(path: str) -> set[str]:
    with open(path, encoding="utf-8") as fh:
        return {line.split("\t")[1] for line in fh.read().splitlines()}


class SplitOdd(beam.DoFn):
    def process(self, x):
        yield beam.pvalue.TaggedOutput("odd", x) if x % 2 else x


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_multi_output_pardo_keeps_its_outputs_apart(cluster, runner, tmp_path):
    odd = str(tmp_path / "odd")

    def build(p):
        split = (p | beam.Create(list(range(10)))
                 | beam.ParDo(SplitOdd()).with_outputs("odd", main="even"))
        _ = split.odd | beam.ParDo(Record(odd))

    run(cluster, runner, build)
    assert sorted(lines(odd), key=int) == ["1", "3", "5", "7", "9"]


class BufferUntilFinish(beam.DoFn):
    def start_bundle(self):
        self.buffer = []

    def process(self, x):
        self.buffer.append(x)

    def finish_bundle(self):
        for x in self.buffer:
            yield GlobalWindows.windowed_value(x)


@pytest.mark.parametrize("runner", RUNNERS)
def test_what_finish_bundle_emits_is_kept(cluster, runner, tmp_path):
    out = str(tmp_path / "out")
    run(cluster, runner, lambda p: p | beam.Create(list(range(10)))
        | beam.ParDo(BufferUntilFinish()) | beam.ParDo(Record(out)))
    assert sorted(lines(out), key=int) == [str(i) for i in range(10)]


@pytest.mark.parametrize("runner", RUNNERS)
def test_every_branch_is_computed(cluster, runner, tmp_path):
    first, second = str(tmp_path / "first"), str(tmp_path / "second")

    def build(p):
        nums = p | beam.Create([1, 2, 3])
        _ = nums | "First" >> beam.ParDo(Record(first))
        _ = nums | "Second" >> beam.ParDo(Record(second))

    run(cluster, runner, build)
    assert sorted(lines(first)) == ["1", "2", "3"]
    assert sorted(lines(second)) == ["1", "2", "3"]


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_side_input_is_computed_once(cluster, runner, tmp_path):
    upstream, out = str(tmp_path / "upstream"), str(tmp_path / "out")

    def build(p):
        nums = p | beam.Create(list(range(8))) | "Upstream" >> beam.ParDo(Record(upstream))
        total = nums | beam.CombineGlobally(sum)
        _ = (nums | beam.Map(lambda x, t: f"{x}/{t}", beam.pvalue.AsSingleton(total))
             | beam.ParDo(Record(out)))

    run(cluster, runner, build, "--dask_partition_size=1")  # 8 bundles read the side input
    assert sorted(lines(out)) == [f"{i}/28" for i in range(8)]
    # the work upstream of the side input, which the main input shares, ran once
    assert sorted(lines(upstream)) == [str(i) for i in range(8)]


class Stamped(beam.DoFn):
    """Appends `tag<element>` and the time to a shared file."""

    def __init__(self, path: str, tag: str):
        self.path, self.tag = path, tag

    def process(self, x, *_):
        time.sleep(0.02)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f"{self.tag}{x}\t{time.time():.6f}\n")
        yield x


def test_a_chain_that_needs_a_side_input_starts_after_it(cluster, tmp_path):
    # the cases' chain ran up to the step that reads the idf side input and
    # waited there, every bundle's output in memory, while the corpus was read
    log = str(tmp_path / "log")

    def build(p):
        side = (p | "SideShards" >> beam.Create(list(range(12)))
                | "SideRead" >> beam.ParDo(Stamped(log, "s")) | beam.CombineGlobally(sum))
        _ = (p | "Shards" >> beam.Create(list(range(12))) | "Read" >> beam.ParDo(Stamped(log, "r"))
             | "Use" >> beam.ParDo(Stamped(log, "u"), beam.pvalue.AsSingleton(side)))

    run(cluster, OURS, build)
    with open(log, encoding="utf-8") as fh:
        order = [line.split("\t")[0] for line in
                 sorted(fh.read().splitlines(), key=lambda line: float(line.split("\t")[1]))]
    assert sorted(order) == sorted(f"{t}{i}" for t in "sru" for i in range(12))
    first_read = min(i for i, x in enumerate(order) if x.startswith("r"))
    assert all(x.startswith("s") for x in order[:first_read]) and first_read == 12, order


class ReadShard(beam.DoFn):
    """A cheap first step with two outputs (as evalbeam's read of a shard)."""

    def __init__(self, path: str):
        self.path = path

    def process(self, x):
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f"r{x}\t{time.time():.6f}\n")
        yield x
        yield beam.pvalue.TaggedOutput("problems", -1)


def in_flight(path: str) -> int:
    """The most bundles read (r) and not yet done (d) at any moment."""
    with open(path, encoding="utf-8") as fh:
        events = sorted((float(t), name[0]) for name, t in
                        (line.split("\t") for line in fh.read().splitlines()))
    level = peak = 0
    for _, kind in events:
        level += 1 if kind == "r" else -1 if kind == "d" else 0
        peak = max(peak, level)
    return peak


def test_a_worker_keeps_a_window_of_bundles_in_flight_not_all_it_can_read(cluster, tmp_path):
    # a cheap first step ran ahead while the slow steps after it worked, and
    # every bundle it read waited in memory; 2 workers x 1 thread: 4 at a time
    from pipeline.dask_runner import BUNDLES_PER_THREAD
    log = str(tmp_path / "log")

    def build(p):
        corpus = p | "Corpus" >> beam.Create(list(range(4))) | beam.CombineGlobally(sum)
        read = (p | "Shards" >> beam.Create(list(range(16)))
                | "Read" >> beam.ParDo(ReadShard(log)).with_outputs("problems", main="rows"))
        _ = read.problems | "Problems" >> beam.Map(lambda x: x)
        _ = (read.rows
             | "Slow" >> beam.Map(lambda x, _: time.sleep(0.3) or x,
                                  beam.pvalue.AsSingleton(corpus))
             | "Done" >> beam.ParDo(Stamped(log, "d")))

    run(cluster, OURS, build)
    assert len(lines(log)) == 32
    assert in_flight(log) <= BUNDLES_PER_THREAD * 2, in_flight(log)


def _files_list(p, log: str):
    """16 bundles, two branches of each, flattened into a side input (as
    evalbeam's list of written files for Finalize)."""
    rows = (p | "Shards" >> beam.Create(list(range(16)))
            | "Read" >> beam.ParDo(ReadShard(log)).with_outputs("problems", main="rows"))
    a = rows.rows | "A" >> beam.Map(lambda x: time.sleep(0.1) or x)
    b = rows.rows | "B" >> beam.ParDo(Stamped(log, "b"))
    files = (a, b) | beam.Flatten()
    return (p | "Once" >> beam.Create([None])
            | "Finalize" >> beam.Map(lambda _, f: len(f), beam.pvalue.AsList(files)))


def test_a_flatten_of_a_bundles_branches_is_ranked_with_that_bundle(cluster, tmp_path):
    # db.concat numbered the second branch's bundle i as n + i: ranked behind
    # every bundle, its tasks (fused with the branch's steps) waited for the
    # end of the run with their inputs kept (~70 such tasks per worker at 1 M rows)
    import dask
    from pipeline.dask_runner import _Translator, _bundle_priority, overrides
    log, out = str(tmp_path / "log"), str(tmp_path / "out")
    run(cluster, OURS, lambda p: _files_list(p, log) | beam.ParDo(Record(out)))
    assert lines(out) == ["32"]
    assert len(lines(log)) == 32

    p = beam.Pipeline(options=PipelineOptions([]))
    _files_list(p, log)
    p.replace_all(overrides())
    translator = _Translator("job", {})
    p.visit(translator)
    (optimized,) = dask.optimize(translator.leaves())
    ranks = {_bundle_priority(key) for key in dict(optimized.__dask_graph__())}
    assert min(ranks) == -15, sorted(ranks)[:3]  # -31 before


class CountSetups(beam.DoFn):
    def __init__(self, path: str):
        self.path = path

    def setup(self):
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f"setup\t{os.getpid()}\n")

    def process(self, x):
        time.sleep(0.05)
        yield x

    def teardown(self):
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f"teardown\t{os.getpid()}\n")


@pytest.mark.parametrize("runner", RUNNERS)
def test_setup_runs_once_per_worker_process_and_teardown_when_the_job_ends(cluster, runner,
                                                                          tmp_path):
    calls = str(tmp_path / "calls")
    run(cluster, runner, lambda p: p | beam.Create(list(range(40)))
        | beam.ParDo(CountSetups(calls)), "--dask_partition_size=1")  # 40 bundles
    made = lines(calls)
    assert 1 <= made.count("setup") <= 2  # two worker processes, one thread each
    assert made.count("teardown") == made.count("setup")


class Counted(beam.DoFn):
    def __init__(self):
        self.seen = beam.metrics.Metrics.counter("probe", "seen")

    def process(self, x):
        self.seen.inc()
        yield x


@pytest.mark.parametrize("runner", RUNNERS)
def test_beam_counters_are_gathered(cluster, runner):
    result = run(cluster, runner, lambda p: p | beam.Create(list(range(25)))
                 | beam.ParDo(Counted()))
    counters = result.metrics().query(beam.metrics.MetricsFilter().with_name("seen"))["counters"]
    assert sum(c.committed for c in counters) == 25


class MergeSizes(beam.CombineFn):
    """Sums, and records how many accumulators each merge received."""

    def __init__(self, path: str):
        self.path = path

    def create_accumulator(self):
        return 0, 0

    def add_input(self, acc, x):
        return acc[0] + x, acc[1] + 1

    def merge_accumulators(self, accs):
        accs = list(accs)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f"{len(accs)}\t{os.getpid()}\n")
        return sum(a[0] for a in accs), sum(a[1] for a in accs)

    def extract_output(self, acc):
        return acc


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_combine_merges_bundle_accumulators_instead_of_grouping_every_value(cluster, runner,
                                                                               tmp_path):
    merges, out = str(tmp_path / "merges"), str(tmp_path / "out")
    run(cluster, runner, lambda p: p | beam.Create(list(range(100)))
        | beam.Map(lambda x: ("k", x)) | beam.CombinePerKey(MergeSizes(merges))
        | beam.ParDo(Record(out)))
    assert lines(out) == [str(("k", (4950, 100)))]
    # each Create item is a bundle here, combined where it was read: merges get
    # accumulators, never a list of 100 values
    sizes = [int(n) for n in lines(merges)]
    if runner == OURS:
        # a tree: 100 bundles' accumulators merged 8 at a time (each merge also
        # gets a fresh accumulator first) into 13, those into 2, which the
        # last merge (after the shuffle) takes
        from pipeline.dask_runner import MERGE_FAN_IN, MAX_SHUFFLE_PARTITIONS
        assert MERGE_FAN_IN == 8 and MAX_SHUFFLE_PARTITIONS == 4
        assert sorted(sizes) == sorted([1 + 4] + [1 + 8] * 12 + [1 + 8, 1 + 5] + [1 + 2])
    else:
        assert max(sizes) == 100


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_create_of_work_items_is_spread_over_the_workers(cluster, runner, tmp_path):
    out = str(tmp_path / "out")
    run(cluster, runner, lambda p: p | beam.Create(list(range(6)))
        | beam.Map(lambda x: time.sleep(0.5) or x) | beam.ParDo(Record(out)))
    assert sorted(lines(out)) == [str(i) for i in range(6)]
    assert len(pids(out)) == 2


class Fan(beam.DoFn):
    """One element -> n (one bundle of n elements downstream)."""

    def __init__(self, n: int):
        self.n = n

    def process(self, _):
        yield from range(self.n)


class Tagged(beam.DoFn):
    """Appends `tag<TAB>element` to a shared file and counts in its own step."""

    def __init__(self, path: str, tag: str):
        self.path, self.tag = path, tag
        self.seen = beam.metrics.Metrics.counter("probe", "tagged")

    def process(self, x):
        self.seen.inc()
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(f"{self.tag}{x}\t{os.getpid()}\n")
        yield x


def test_the_steps_of_one_task_stream_elements_instead_of_holding_the_bundle(cluster, tmp_path):
    # a worker held each step's whole output for its bundle (5,000 rows of an
    # input shard) before the next step started; in a chain of single-output
    # steps each element now goes on to the next step as it is made
    log = str(tmp_path / "log")
    result = run(cluster, OURS, lambda p: p | beam.Create([0]) | beam.ParDo(Fan(20))
                 | "A" >> beam.ParDo(Tagged(log, "a")) | "B" >> beam.ParDo(Tagged(log, "b")))
    order = lines(log)
    assert sorted(order) == sorted([f"a{i}" for i in range(20)] + [f"b{i}" for i in range(20)])
    assert order[:4] == ["a0", "b0", "a1", "b1"], order
    # each step's counter stays its own while their calls interleave
    counters = result.metrics().query(beam.metrics.MetricsFilter().with_name("tagged"))
    by_step = {c.key.step: c.committed for c in counters["counters"]}
    assert sorted(by_step.values()) == [20, 20] and len(by_step) == 2, by_step


class FailAt(beam.DoFn):
    def __init__(self, at: int):
        self.at = at

    def process(self, x):
        if x == self.at:
            raise ValueError(f"bad element {x}")
        yield x


def test_an_error_in_a_streaming_chain_names_the_step_it_came_from(cluster):
    with pytest.raises(Exception) as err:
        run(cluster, OURS, lambda p: p | beam.Create([0]) | beam.ParDo(Fan(10))
            | "Breaks" >> beam.ParDo(FailAt(5)) | "After" >> beam.Map(lambda x: x))
    text = "\n".join([str(err.value), *getattr(err.value, "__notes__", [])])
    assert "bad element 5" in text
    assert "in step 'Breaks'" in text and "'After'" not in text, text


def _combine_graph(bundles: int):
    """The graph of Create(bundles items) -> CombinePerKey(sum), as the runner
    translates it (nothing runs)."""
    from pipeline.dask_runner import _Translator, overrides
    p = beam.Pipeline(options=PipelineOptions([]))
    _ = p | beam.Create(list(range(bundles))) | beam.Map(lambda x: (x % 7, x)) \
        | beam.CombinePerKey(sum)
    p.replace_all(overrides())
    translator = _Translator("job", {})
    p.visit(translator)
    return translator.leaves().__dask_graph__()


def _combine_tasks(bundles: int) -> int:
    return len(_combine_graph(bundles))


def test_a_combines_task_graph_grows_linearly_with_bundles():
    # the scheduler holds the whole graph: a task shuffle over every bundle's
    # partition grew as n^1.5 (2,000 bundles: ~96,000 tasks for one combine)
    small, big = _combine_tasks(200), _combine_tasks(2000)
    assert big < 10 * small


def test_a_combines_shuffle_is_a_small_last_step_after_a_tree_of_merges():
    # a shuffle keeps every input's pieces until its last input is there: over
    # 25 partitions of merged accumulators, a 1 M-row run's workers held ~4,400
    # pieces; merged level after level, the shuffle takes at most 4 partitions
    from dask.utils import key_split
    graph = _combine_graph(2000)
    prefixes = [key_split(k) for k in graph]
    assert 0 < prefixes.count("shuffle-split") <= 4 * 4  # 32 * 32 before
    # 2,000 bundles -> 250 -> 32 -> 4 merges
    assert prefixes.count("merge") == 250 + 32 + 4


def test_the_trim_preload_calls_malloc_trim_on_a_schedule():
    import threading
    from pipeline.dask_worker_trim import trim_every
    calls, stop = [], threading.Event()
    thread = trim_every(0.02, trim=lambda pad: calls.append(pad), stop=stop)
    time.sleep(0.3)
    stop.set()
    thread.join(1)
    assert len(calls) >= 3 and set(calls) == {0}
    assert trim_every(0, trim=lambda pad: None) is None  # 0 turns it off


def _thread_names():
    import threading
    return sorted(t.name for t in threading.enumerate())


def test_workers_started_with_the_trim_preload_run_the_pipeline(tmp_path):
    # the configuration BENCHMARKS §9 measured flat from 100 k to 1 M rows
    env = {"PYTHONPATH": ROOT, "PYTHONMALLOC": "malloc", "MALLOC_TRIM_THRESHOLD_": "65536",
           "DASK_DISTRIBUTED__WORKER__PRELOAD": '["pipeline.dask_worker_trim"]',
           "EVALBEAM_TRIM_EVERY": "0.2"}
    out = str(tmp_path / "out")
    with DaskCluster(workers=1, env=env) as c:
        from distributed import Client
        with Client(c.address) as client:
            names = next(iter(client.run(_thread_names).values()))
        assert "evalbeam-malloc-trim" in names
        run(c, OURS, lambda p: p | beam.Create(list(range(5))) | beam.ParDo(Record(out)))
    assert sorted(lines(out)) == [str(i) for i in range(5)]


_RELEASE = threading.Event()


def _busy_until_released() -> None:
    """A task that runs until the test releases it (at most 30 s)."""
    _RELEASE.wait(30)


def test_a_job_whose_results_were_cancelled_fails_instead_of_finishing():
    """A client that loses its scheduler cancels every future, and Beam's
    wait_until_finish went over cancelled futures quietly: the run said DONE with
    nothing computed (found by killing the scheduler of a local cluster mid-run)."""
    from apache_beam.runners.runner import PipelineState
    from distributed import Client, LocalCluster

    from pipeline.dask_runner import DaskRunnerResult, _MetricReports
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as local, Client(local) as client:
        _RELEASE.clear()
        try:  # (a cancelled task that has started runs on: the cluster's close waited for it)
            future = client.submit(_busy_until_released, pure=False)
            client.cancel([future])
            result = DaskRunnerResult(client, [future], job="j", reports=_MetricReports("j"))
            with pytest.raises(RuntimeError, match="the Dask job did not complete: 1 of its 1 "
                                                   "results cancelled"):
                result.wait_until_finish()
            assert result.state == PipelineState.FAILED
        finally:
            _RELEASE.set()


def test_a_local_cluster_run_prints_no_dask_info_logs(tmp_path):
    """`--runner=dask` without an address (Beam starts a LocalCluster, as
    docs/guides/dask.md says) printed some 36 INFO lines of Dask's scheduler and
    nannies ('INFO:distributed.scheduler:State start', ...) around the run's own."""
    from tests.conftest import SAMPLE_ROWS, write_cases
    from tests.pipeline_helpers import run_cli_subprocess
    cases = write_cases(str(tmp_path / "cases.parquet"), SAMPLE_ROWS)
    proc = run_cli_subprocess("--input", cases, "--output", str(tmp_path / "out"),
                              "--run-id", "local", "--runner=dask")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "run local: " in proc.stdout
    assert "INFO:distributed" not in proc.stderr
