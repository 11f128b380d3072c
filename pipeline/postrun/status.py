"""`evalbeam status --output DIR --run-id ID`: running, finished or failed.

Read from the run id's lease (`runs/<id>/lease.json`, with its heartbeat) and
its completion marker (`runs/<id>/manifest.json`), so it works for a run
started in the background or on a cluster, from any machine that sees DIR.

    state      exit  when
    finished   0     the manifest is there and no newer attempt holds the lease
    failed     1     the lease's attempt failed, or its heartbeat is older than
                     its ttl, or its local process is gone, with no marker
    unknown    2     neither a lease nor a manifest (or a bad invocation)
    corrupt    2     the manifest is there but unreadable or not this run's, and
                     no attempt is running; or a file it lists is missing; or the
                     lease file is unreadable and there is no manifest
    finished   3     ... but the manifest says the counts do not reconcile
    running    5     the lease's attempt is alive (fresh heartbeat)
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from apache_beam.io.filesystems import FileSystems

from transforms.publish.progress_objects import read_totals
from transforms.progress.text import figures, progress_line
from transforms.publish import lease as leases
from transforms.publish.completed import (CompletedRun, CorruptManifest, RunUnreadable,
                                          check_output, check_run_id, read_manifest)
from transforms.text.wording import counted

EXIT = {"finished": 0, "failed": 1, "unknown": 2, "corrupt": 2, "unreconciled": 3,
        "running": 5, "evaluated_nothing": 6}


@dataclass(frozen=True)
class RunStatus:
    state: str  # running | finished | failed | unknown | corrupt | unreconciled | evaluated_nothing
    line: str                # the one-line answer
    details: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT[self.state]


def _rows(n: object, noun: str) -> str:
    """A manifest's count as the other lines word it ('10,320 rows'); '? rows'
    where the manifest has none (an older or damaged one)."""
    return counted(n, noun) if isinstance(n, int) else f"? {noun}s"


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _finished(output: str, run_id: str, manifest: dict, note: str = "") -> RunStatus:
    try:  # finished, and its tables are all there
        CompletedRun(output, run_id, manifest).check_files()
    except RunUnreadable as exc:
        return RunStatus("corrupt", f"evalbeam: error: {exc}")
    ok = manifest.get("reconciliation", {}).get("ok", False)
    c = manifest.get("counts", {})
    line = (f"run {run_id}: finished (attempt {manifest.get('attempt', '?')}, "
            f"{manifest.get('finished_at', '?')}; {_rows(c.get('input_rows'), 'input row')}, "
            f"{_rows(c.get('results_rows'), 'results row')}; counts "
            f"{'reconcile' if ok else 'do NOT reconcile'}){note}")
    details = [f"tables:   {t}/ {_rows(n, 'row')}" for t, n in manifest.get("tables", {}).items()]
    # the folder read, not the manifest's `output`: the folder may have been
    # copied, restored or mounted elsewhere since the run wrote it
    details.append(f"report:   {output}/runs/{run_id}/report.md")
    from transforms.publish.report import asking_bots, evaluated_nothing
    if ok and not manifest.get("allow_empty", True) and evaluated_nothing(
            c, asking_bots(manifest.get("config"))):
        # as `evalbeam run` exits 6; a manifest from before allow_empty finished as it was
        why = ("no input row is a valid case" if c.get("valid_cases") == 0 else
               "no bot answered: every answer is an ERROR")
        return RunStatus("evaluated_nothing", line + f"; it evaluated nothing: {why} "
                         "(errors/ says why)", details)
    return RunStatus("finished" if ok else "unreconciled", line, details)


def previous(manifest: dict | None, corrupt: str | None = None) -> str:
    if corrupt:
        return f"the earlier completion marker is corrupt: {corrupt}"
    if not manifest:
        return "no earlier attempt finished"
    return (f"the tables hold attempt {manifest.get('attempt', '?')}, finished "
            f"{manifest.get('finished_at', '?')}")


def run_status(output: str, run_id: str, now: float | None = None) -> RunStatus:
    """The run's state from its lease and completion marker (a pure read).
    Raises RunUnreadable for a bad run id or an unreachable folder."""
    now = time.time() if now is None else now
    output = check_output(output)
    check_run_id(run_id)
    try:
        manifest, corrupt = read_manifest(output, run_id), None
    except CorruptManifest as exc:
        manifest, corrupt = None, str(exc)
    lease = leases.read_lease(output, run_id)
    if lease is None:
        if corrupt:
            return RunStatus("corrupt", f"evalbeam: error: {corrupt}")
        if manifest is None and FileSystems.exists(leases.lease_path(output, run_id)):
            return RunStatus("corrupt", f"evalbeam: error: run {run_id}: its lease "
                             f"{leases.lease_path(output, run_id)} is unreadable (cut short, "
                             "or not written by this evalbeam) and it has no completion "
                             "marker: no attempt can be followed; a new run of the id "
                             "takes over")
        if manifest is None:
            return RunStatus("unknown", f"evalbeam: error: no run {run_id!r} under {output} "
                                        "(no lease, no manifest)")
        return _finished(output, run_id, manifest)
    if manifest is not None and manifest.get("attempt") == lease.attempt:
        return _finished(output, run_id, manifest, " (its lease is still being released)")
    why = leases.why_free(output, lease, None, now)
    owner = (f"attempt {lease.attempt} by {lease.owner()}, started "
             f"{_when(lease.acquired_at)}")
    if why is None:
        beat = now - leases.last_heartbeat(output, lease)
        return RunStatus("running", f"run {run_id}: running ({owner}; last heartbeat "
                                    f"{beat:.0f} s ago)",
                         [progress_text(output, lease, now), previous(manifest, corrupt)])
    if corrupt:
        return RunStatus("corrupt", f"evalbeam: error: {corrupt}",
                         [f"its last attempt failed ({owner}: {why})"])
    return RunStatus("failed", f"run {run_id}: failed ({owner}: {why}; no completion marker)",
                     [previous(manifest),
                      "a new run of the id takes over and cleans up what the attempt left"])


def progress_text(output: str, lease: leases.Lease, now: float) -> str:
    """The running attempt's progress, as the launching command prints it."""
    totals = read_totals(output, lease.run_id, lease.attempt)
    if lease.planned_rows is None:
        return "progress: not reported (the run was started by an older evalbeam)"
    f = figures(totals, lease.planned_rows, lease.bots or 1, now, lease.acquired_at)
    if totals is None:
        return f"progress: 0/{lease.planned_rows:,} cases (no worker has reported yet)"
    n = totals["workers"]
    return f"progress: {progress_line(f)} (from {n} worker process{'es' * (n != 1)})"


def print_status(output: str, run_id: str) -> int:
    try:
        status = run_status(output, run_id)
    except RunUnreadable as exc:
        status = RunStatus("unknown", f"evalbeam: error: {exc}")
    print(status.line, file=sys.stderr if status.exit_code == 2 else sys.stdout)
    for line in status.details:
        print(f"  {line}")
    return status.exit_code
