"""Finalize: once every table's files are written, put them in place and
write the small tables, the manifest and the report. Runs exactly once."""
from __future__ import annotations

import json
import uuid
import time
from dataclasses import dataclass, field
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas import SCHEMA_VERSION
from schemas.tables import ERRORS, POSTRUN_TABLES, RESULTS, SCORES, SUMMARY, TABLES, USAGE
from transforms.remote.usage import usage_rows
from transforms.publish.report import package_versions, reconcile, render_report
from transforms.publish.report_html import write_html_report
from transforms.publish.summary import summary_rows
from transforms.publish.calibration_page import CALIBRATION_PAGE
from transforms.publish.write import (existing_run_files, finalize_files, temp_dir,
                                      write_small_table)


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
    config: dict[str, Any] = field(default_factory=dict)
    prices: dict[str, dict[str, float]] = field(default_factory=dict)  # endpoint -> per million
    notes: tuple[str, ...] = ()  # what the run said before starting (e.g. no judge configured)
    # unique per attempt: two runs of one run id must not share temporary files
    attempt: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    started: float = field(default_factory=time.time)


def _small_table(info: RunInfo, spec, rows: list[dict]) -> int:
    write_small_table(info.output, spec, info.run_id, info.run_date, rows)
    return len(rows)


def remove_postrun_outputs(output: str, run_id: str) -> None:
    """A new attempt of a run id makes what post-run commands derived from
    the old one (calibration/ rows, calibration.md) stale: remove it."""
    stale = [f for spec in POSTRUN_TABLES.values()
             for f in existing_run_files(output, spec, run_id)]
    page = FileSystems.join(output, "runs", run_id, CALIBRATION_PAGE)
    if FileSystems.exists(page):
        stale.append(page)
    if stale:
        FileSystems.delete(stale)


class Finalize(beam.DoFn):
    def __init__(self, info: RunInfo):
        self._info = info

    def process(self, _, written, metric_stats, verdicts, counts, worst, usage):
        info = self._info
        rows = finalize_files(info.output, info.run_id, TABLES.values(), written)
        remove_postrun_outputs(info.output, info.run_id)
        if rows[ERRORS.name] == 0:  # keep every table readable by a glob
            _small_table(info, ERRORS, [])
        summary = summary_rows(info.run_id, metric_stats, verdicts, info.lower_is_better)
        rows[SUMMARY.name] = _small_table(info, SUMMARY, summary)
        rows[USAGE.name] = _small_table(info, USAGE, usage_rows(info.run_id, usage, info.prices))
        counts = dict(counts)
        counts.update(results_rows=rows[RESULTS.name], scores_rows=rows[SCORES.name],
                      errors_rows=rows[ERRORS.name])
        manifest = {
            "run_id": info.run_id, "run_date": info.run_date, "schema_version": SCHEMA_VERSION,
            "input": info.input, "output": info.output, "bots": list(info.bots),
            "metrics": list(info.metrics), "counts": counts, "tables": rows,
            "reconciliation": reconcile(counts, len(info.bots), len(info.metrics)),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(info.started)),
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "notes": list(info.notes), "config": info.config, "versions": package_versions(),
        }
        run_dir = FileSystems.join(info.output, "runs", info.run_id)
        worst_by_bot = {bot: sorted(items, key=lambda w: w["severity"], reverse=True)
                        for bot, items in worst}
        for w in worst_by_bot.values():
            for item in w:
                item.pop("severity", None)
        manifest["worst_cases"] = worst_by_bot
        with FileSystems.create(FileSystems.join(run_dir, "manifest.json")) as fh:
            fh.write(json.dumps(manifest, indent=2, ensure_ascii=False, default=str).encode())
        with FileSystems.create(FileSystems.join(run_dir, "report.md")) as fh:
            fh.write(render_report(manifest, summary, worst_by_bot).encode())
        write_html_report(run_dir, manifest, summary, worst_by_bot)
        tmp = temp_dir(info.output, info.run_id, info.attempt)
        if FileSystems.exists(tmp):
            FileSystems.delete([tmp])
        yield manifest
