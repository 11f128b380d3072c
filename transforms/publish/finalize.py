"""Finalize: once every table's files are written, publish the attempt
atomically (transforms/publish/commit.py), write the small tables, the report
and the manifest (the completion marker, last), then release the run id's
lease. Runs exactly once, as a step of the pipeline: nothing needs the
launching process afterwards (a detached run, a Dataflow job)."""
from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas import SCHEMA_VERSION
from schemas.tables import (ALL_SUITES, ERRORS, POSTRUN_TABLES, RESULTS, SCORES, SUMMARY, TABLES,
                            USAGE)
from transforms.publish import chart_engine, lease
from transforms.publish.commit import (attempt_temp_dirs, checkpoint, committed,
                                       comparison_files, critical_section, install_report,
                                       listed_files, move_into_place, relative, run_files,
                                       staged_report_path, supersede, write_manifest)
from transforms.publish.calibration_page import CALIBRATION_PAGE
from transforms.publish.head_to_head import ordered_pairs, overall
from transforms.publish.report import (asking_bots, cap_report, outcome_notes, package_versions,
                                      reconcile, render_report, spend_summary)
from transforms.publish.report_html import write_html_report
from transforms.publish.savings import cascade_report, with_savings
from transforms.publish.summary import summary_rows
from transforms.publish.write import WrittenFile, temp_dir, write_table_file
from transforms.remote.journal import lost_usage, read_journal, requests_block
from transforms.remote.scrub import Scrubber, scrubber_for
from transforms.remote.usage import (refused_by_cap, unreported_by_endpoint,
                                     unreported_judge_cost, usage_rows)
from transforms.score.scoring import NO_DIRECTION


def new_attempt() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    run_date: str
    output: str
    input: str
    planned_rows: int
    bots: tuple[str, ...]
    metrics: tuple[str, ...]
    lower_is_better: frozenset[str]
    no_direction: frozenset[str] = NO_DIRECTION  # with custom metrics of `direction: none`
    config: dict[str, Any] = field(default_factory=dict)
    prices: dict[str, dict[str, float]] = field(default_factory=dict)  # endpoint -> per million
    notes: tuple[str, ...] = ()  # what the run said before starting (e.g. no judge configured)
    # unique per attempt: two runs of one run id must not share temporary files
    attempt: str = field(default_factory=new_attempt)
    started: float = field(default_factory=time.time)
    # endpoint configs (variable names, no values): whose secrets are scrubbed
    endpoints: Mapping[str, Any] = field(default_factory=dict)
    # the config's other texts carrying a secret, as written (${VAR}, a literal):
    # scrubbed as the endpoints' are (scrub.secret_texts)
    secret_texts: tuple[str, ...] = ()
    lease_ttl_s: float | None = None  # None: no lease (unit tests of the graph)
    caps: dict[str, float] = field(default_factory=dict)  # spend caps: "judge.max_calls" -> cap
    # the request journal every worker process writes (transforms/remote/journal.py):
    # a SQLite file, or the base name of objects with an object-store output; None: none
    journal: str | None = None
    sampled_metrics: frozenset[str] = frozenset()  # computed on judge.sample's rows only
    # Finalize runs on a long-lived worker (Dask, a remote runner): the report's
    # charts are drawn in a child process that ends with the report
    charts_apart: bool = False
    # --allow-empty: a run that evaluates nothing is a success (exit 0, status finished)
    allow_empty: bool = False


def remove_postrun_outputs(output: str, run_id: str) -> None:
    """A new attempt of a run id makes what post-run commands derived from
    the old one stale: calibration/ rows and calibration.md, and every
    comparison it was part of, as candidate or baseline (comparisons/ rows
    and pages): remove them."""
    stale = run_files(output, POSTRUN_TABLES.values(), run_id) + comparison_files(output, run_id)
    page = FileSystems.join(output, "runs", run_id, CALIBRATION_PAGE)
    if FileSystems.exists(page):
        stale.append(page)
    if stale:
        FileSystems.delete(stale)


class LeaseLost(RuntimeError):
    """Another attempt took the run id over; this one must not commit."""


def _stage_small_table(info: RunInfo, spec, rows: list[dict], scrubber: Scrubber) -> WrittenFile:
    """A small table written whole into the attempt's temporary folder."""
    path = FileSystems.join(temp_dir(info.output, info.run_id, info.attempt),
                            f"{spec.name}.parquet")
    write_table_file(path, spec.schema, rows, scrubber)
    return WrittenFile(spec.name, (("run_date", info.run_date),), path, len(rows))


def run_counts(planned_rows: int, counted: tuple[str, ...],
               tallies: list[tuple[str, int]]) -> dict[str, int]:
    """The manifest's input counts in a fixed order; a count whose collection
    was empty has no tally (Count.PerKey emits nothing for it) and is 0."""
    return {"input_rows": planned_rows, **dict.fromkeys(counted, 0), **dict(tallies)}


def check_still_running(info: RunInfo) -> None:
    """LeaseLost unless the lease is still this attempt's and not marked
    failed: a Dask launcher stopped (SIGTERM, Ctrl-C) marks it failed and says
    the run was stopped, while a task already on a worker may go on to here."""
    current = lease.read_lease(info.output, info.run_id)
    if current is None or current.attempt != info.attempt:
        raise LeaseLost(f"attempt {info.attempt} of run {info.run_id} no longer holds its "
                        f"lease (now: {current.attempt if current else 'nobody'}); "
                        "it does not publish")
    if current.state == "failed":
        raise LeaseLost(f"attempt {info.attempt} of run {info.run_id} was marked failed "
                        f"({current.reason}); it does not publish")


class Finalize(beam.DoFn):
    def __init__(self, info: RunInfo, counted: tuple[str, ...] = ()):
        """counted: the names of the tallies in the `counts` side input."""
        self._info = info
        self._counted = counted
        self._scrubber = Scrubber()
        self._heartbeat = None

    def setup(self):
        info = self._info
        self._scrubber = scrubber_for(info.endpoints, info.secret_texts)
        if info.lease_ttl_s is not None:
            self._heartbeat = lease.Heartbeat.start(info.output, info.run_id, info.attempt,
                                                    info.lease_ttl_s)

    def teardown(self):
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None

    def _step(self, name: str) -> None:
        checkpoint(self._info.output, self._info.run_id, self._info.attempt, name)

    def _after_marker(self, keep: set[str]) -> None:
        """The commit's end, once the completion marker is written: the reports
        installed, the id's files but `keep` and the temporary folders removed,
        the lease released."""
        info = self._info
        install_report(info.output, info.run_id, info.attempt)
        self._step("supersede")
        supersede(info.output, info.run_id, TABLES.values(), keep)
        lease.delete_quietly(attempt_temp_dirs(info.output, info.run_id))
        self._step("release")
        lease.release(info.output, info.run_id, info.attempt)

    def process(self, _, written, metric_stats, verdicts, counts, worst, usage, skipped=(),
                head_to_head=()):
        info, scrub = self._info, self._scrubber
        done = committed(info.output, info.run_id)
        if done is not None and done.get("attempt") == info.attempt:
            # run again by the runner after its worker was lost past the marker (Dask
            # redoes the task, and the upstream from the call cache): publishing again
            # would replace the committed tables and manifest with the redo's counts
            with critical_section(info.output, info.run_id, info.attempt):
                self._after_marker(listed_files(info.output, done))
            yield done
            return
        if info.lease_ttl_s is not None:
            check_still_running(info)
        verdicts = list(verdicts)
        summary = summary_rows(info.run_id, metric_stats, verdicts, info.lower_is_better,
                               info.sampled_metrics, info.no_direction)
        rows_per_bot: dict[str, int] = {}
        for (bot, suite, _), n in verdicts:
            if suite == ALL_SUITES:
                rows_per_bot[bot] = rows_per_bot.get(bot, 0) + n
        usage = list(usage)
        reported = frozenset().union(*(figures.get("tallies", ()) for _, figures in usage))
        refused = refused_by_cap(usage)
        unreported = unreported_by_endpoint(usage, info.prices)
        judge_cost = unreported_judge_cost(usage, info.prices)
        usage = with_savings(usage_rows(info.run_id, usage, info.prices), dict(skipped),
                             rows_per_bot)
        staged = list(written) + [
            _stage_small_table(info, SUMMARY, summary, scrub),
            _stage_small_table(info, USAGE, usage, scrub)]
        if not any(f.table == ERRORS.name for f in written):  # every table readable by a glob
            staged.append(_stage_small_table(info, ERRORS, [], scrub))
        self._step("publish")
        files, rows = move_into_place(info.output, info.run_id, info.attempt, staged)
        counts = run_counts(info.planned_rows, self._counted, counts)
        counts.update(results_rows=rows.get(RESULTS.name, 0), scores_rows=rows.get(SCORES.name, 0),
                      errors_rows=rows.get(ERRORS.name, 0))
        manifest = {
            "run_id": info.run_id, "run_date": info.run_date, "schema_version": SCHEMA_VERSION,
            "attempt": info.attempt,
            "input": info.input, "output": info.output, "bots": list(info.bots),
            "metrics": list(info.metrics), "counts": counts,
            "tables": {t: rows.get(t, 0) for t in TABLES},
            "reconciliation": reconcile(counts, len(info.bots), len(info.metrics)),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(info.started)),
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "notes": list(info.notes) + outcome_notes(counts, asking_bots(info.config)),
            "config": info.config,
            "allow_empty": info.allow_empty,
            "versions": package_versions(),
            "usage": spend_summary(usage, unreported),
        }
        journal = read_journal(info.journal) if info.journal else []
        requests = requests_block(info.journal, reported, usage, info.prices, journal)
        if requests is not None:
            manifest["requests"] = requests
        if info.caps:  # what the endpoints served: usage/ and the calls lost with a worker
            manifest["spend_caps"] = cap_report(
                info.caps, usage + lost_usage(journal, reported, info.prices), refused,
                unreported, judge_cost)
        if "escalated_rows" in self._counted:
            manifest["cascade"] = cascade_report(counts, usage)
        worst_by_bot = {bot: sorted(items, key=lambda w: w["severity"], reverse=True)
                        for bot, items in worst}
        for w in worst_by_bot.values():
            for item in w:
                item.pop("severity", None)
        manifest["worst_cases"] = worst_by_bot
        pairs = ordered_pairs(info.bots, head_to_head)
        manifest["head_to_head"] = [{"bots": list(pair), "paired": stats["paired"],
                                     "rows": overall(stats)} for pair, stats in pairs]
        manifest["files"] = {t: sorted(relative(info.output, p) for p in paths)
                             for t, paths in sorted(files.items())}
        manifest = scrub.scrub_value(manifest)
        pairs = scrub.scrub_value(pairs)
        report = render_report(manifest, scrub.scrub_value(summary), manifest["worst_cases"],
                               pairs)
        lease.write_atomic(staged_report_path(info.output, info.run_id, info.attempt),
                           scrub.scrub(report).encode("utf-8"))
        # the HTML page and stale post-run outputs are settled before the commit,
        # so the lease is released right after the completion marker
        with chart_engine.drawn_apart() if info.charts_apart else contextlib.nullcontext():
            write_html_report(staged_report_path(info.output, info.run_id, info.attempt, "html"),
                              manifest, scrub.scrub_value(summary), manifest["worst_cases"],
                              pairs)
        remove_postrun_outputs(info.output, info.run_id)
        self._step("commit")
        # a SIGTERM or Ctrl-C from here to the release waits for it: the run ends
        # committed and released, never marked stopped with its marker in place
        with critical_section(info.output, info.run_id, info.attempt):
            if info.lease_ttl_s is not None:  # a stop may have come while it drew the report
                check_still_running(info)
            write_manifest(info.output, info.run_id, manifest)  # the completion marker
            self._after_marker({p for paths in files.values() for p in paths})
        yield manifest
