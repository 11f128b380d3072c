"""Running a planned evaluation: take the run id's lease, run (or submit)
the pipeline while its progress is watched, and read its completion marker.
Shared by the command line (`evalbeam run`) and the Python API
(`evalbeam.evaluate`), so both run the same pipeline the same way.
"""
from __future__ import annotations

import os
import sys
from typing import Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipeline.graph import build_pipeline
from pipeline.plan import Plan
from pipeline.watch import Watch
from schemas.tables import TABLES
from transforms.publish import lease as leases
from transforms.publish.commit import clean_leftovers, committed_attempt
from transforms.publish.finalize import RunInfo
from transforms.publish.lease import LeaseHeld

LOCAL_RUNNERS = ("fnapirunner", "directrunner", "bundlebaseddirectrunner",
                 "switchingdirectrunner", "prismrunner")
# `--runner=dask` (or Beam's own names for its Dask runner) runs evalbeam's
# fixed copy of Beam's DaskRunner (pipeline/dask_runner.py): Beam 2.77's loses data
DASK_RUNNER = "pipeline.dask_runner.DaskRunner"
DASK_NAMES = ("dask", "daskrunner", "apache_beam.runners.dask.dask_runner.daskrunner")


def _runner(value: str) -> str:
    """The runner a --runner value names (evalbeam's Dask runner for Beam's)."""
    return DASK_RUNNER if value.lower() in DASK_NAMES else value


def beam_options(beam_args: Sequence[str]) -> PipelineOptions:
    """Beam's options from the command line's other flags (the FnApiRunner
    unless a runner is named)."""
    args = list(beam_args)
    for i, arg in enumerate(args):
        if arg.startswith("--runner="):
            args[i] = "--runner=" + _runner(arg.partition("=")[2])
        elif arg == "--runner" and i + 1 < len(args):
            args[i + 1] = _runner(args[i + 1])
    if not any(a == "--runner" or a.startswith("--runner=") for a in args):
        args.append("--runner=FnApiRunner")  # local default: never downloads a runner binary
    return PipelineOptions(args)


def runner_is_local(options: PipelineOptions) -> bool:
    """The pipeline runs in this process (and its children), not as a remote job."""
    runner = options.view_as(StandardOptions).runner or "FnApiRunner"
    return str(runner).rsplit(".", 1)[-1].lower() in LOCAL_RUNNERS


def runner_is_dask(options: PipelineOptions) -> bool:
    return options.view_as(StandardOptions).runner == DASK_RUNNER


def driven_from_here(options: PipelineOptions) -> bool:
    """The job lives only as long as this process: a local runner, or the Dask
    runner, whose client (and so whose job) is this process."""
    return runner_is_local(options) or runner_is_dask(options)


def runs_in_this_process(options: PipelineOptions) -> bool:
    """A local runner that runs the DoFns here, the report's Finalize among them
    (multi_processing runs them in worker processes)."""
    opts = options.get_all_options(retain_unknown_options=True)
    return runner_is_local(options) and opts.get("direct_running_mode") != "multi_processing"


def take_lease(info: RunInfo, runner_local: bool, adopt: bool) -> leases.Lease:
    """The run id's lease for this attempt (LeaseHeld when another attempt has
    it); a fresh attempt then removes what killed attempts left behind."""
    if adopt:  # the detached process of a launcher that took the lease for it
        held = leases.read_lease(info.output, info.run_id)
        if held is None or held.attempt != info.attempt:
            raise LeaseHeld(f"attempt {info.attempt} of run {info.run_id!r} no longer holds "
                            "its lease")
        return leases.update(info.output, held, pid=os.getpid())
    lease = leases.new_lease(info.run_id, info.attempt, info.lease_ttl_s, runner_local,
                             planned_rows=info.planned_rows, bots=len(info.bots))
    lease, taken = leases.acquire(info.output, lease,
                                  lambda: committed_attempt(info.output, info.run_id))
    if taken:
        print(f"evalbeam: note: took over run id {info.run_id!r} from {taken}", file=sys.stderr)
    clean_leftovers(info.output, info.run_id, info.attempt, list(TABLES.values()))
    return lease


def say_before(plan: Plan) -> None:
    """What a run says before it starts (on stderr): its notes (kept in the
    manifest too) and every endpoint's limits."""
    for note in plan.info.notes:
        print(f"evalbeam: note: {note}", file=sys.stderr)
    for line in plan.limits:
        print(f"evalbeam: {line}", file=sys.stderr)


def run_pipeline(plan: Plan, options: PipelineOptions, lease: leases.Lease,
                 detach: bool = False, watch: bool = True):
    """Run (or, detached on a remote runner, submit) the pipeline; its Finalize
    step commits the attempt and releases the lease. A failure marks the lease
    failed, so `status` says so at once and the next run may take over.
    Returns Beam's PipelineResult."""
    info = plan.info
    if runs_in_this_process(options):
        from transforms.publish import chart_engine
        chart_engine.start()  # the report's chart engine boots while the pipeline runs
    beat = leases.Heartbeat.start(info.output, info.run_id, info.attempt, info.lease_ttl_s)
    watching = Watch(info).start() if watch and not detach else None  # p.run() runs it here
    try:
        p = beam.Pipeline(options=options)
        build_pipeline(p, plan)
        result = p.run()
        if not detach:
            result.wait_until_finish()
        return result
    except BaseException as exc:
        from transforms.remote.scrub import scrubber_for
        why = scrubber_for(info.endpoints).scrub(f"{type(exc).__name__}: {exc}")
        leases.update(info.output, lease, state="failed", reason=" ".join(why.split())[:300])
        raise
    finally:
        if watching is not None:
            watching.stop()
        beat.stop()
