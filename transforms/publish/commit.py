"""Publishing one attempt of a run atomically: stage, move in, commit, supersede.

The protocol (docs/concepts/publishing.md):

1. An attempt writes its files under `_tmp/<run_id>-<attempt>/`, which no
   table glob reaches.
2. Finalize moves them into their Hive folders under attempt-specific names,
   `part-<run_id>.<attempt>.<n>.parquet`. The previous attempt's files stay.
3. It stages report.md and report.html, then writes
   `runs/<run_id>/manifest.json` all at once (write beside, rename): the
   completion marker. It names the attempt and lists its
   files; this is the commit.
4. Only then are the run id's other files deleted (earlier attempts, and
   leftovers of killed ones), then the temporary folders, then the lease.

A kill before 3 leaves the previous attempt committed and complete; a kill
after 3 leaves the new one committed and complete (the next run of the id
deletes what 4 did not). A reader of one run id reads the manifest and then
the files it lists (transforms/publish/completed.py, the only way evalbeam
reads a run), so it sees one attempt whole, never a gap or a mix.

From the marker to the lease's release is the commit's critical section
(critical_section): a stop asked for meanwhile (SIGTERM, Ctrl-C:
pipeline/stopping.py) waits for its end, so a stopped run ends committed and
released, or not committed, never between.
"""
from __future__ import annotations

import contextlib
import glob
import json
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from apache_beam.io.filesystems import FileSystems

from schemas.tables import COMPARISONS, TableSpec
from transforms.publish.completed import CorruptManifest, manifest_path, read_manifest
from transforms.publish.lease import (delete_quietly, local_process_gone, read_json, run_dir,
                                      stale_files, write_atomic)
from transforms.publish.rows import to_json
from transforms.publish.write import WrittenFile, ensure_folder, partition_dir, temp_dir

ATTEMPT_LENGTH = 12  # hex characters of an attempt id
PAUSE_ENV = "EVALBEAM_TEST_PAUSE_AT"  # tests: "step" (wait to be killed) or "step:seconds"


def final_name(run_id: str, attempt: str, temp_path: str) -> str:
    """part-<run_id>.<attempt>.<file>.parquet (file: the staged file's own name)."""
    stem = temp_path.rsplit("/", 1)[-1].split(".")[0]
    return f"part-{run_id}.{attempt}.{stem}.parquet"


REPORTS = ("md", "html")  # runs/<run_id>/report.<ext>, staged per attempt


def staged_report_path(output: str, run_id: str, attempt: str, ext: str = "md") -> str:
    return FileSystems.join(run_dir(output, run_id), f"report.{attempt}.{ext}")


def install_report(output: str, run_id: str, attempt: str) -> None:
    """report.md and report.html become the committed attempt's (staged before
    the commit, renamed after it; the next run of the id finishes a rename a
    kill interrupted), so a killed attempt's report never replaces them."""
    for ext in REPORTS:
        staged = staged_report_path(output, run_id, attempt, ext)
        if FileSystems.exists(staged):
            FileSystems.rename([staged], [FileSystems.join(run_dir(output, run_id),
                                                           f"report.{ext}")])


def write_manifest(output: str, run_id: str, manifest: dict) -> None:
    """The completion marker, written all at once."""
    write_atomic(manifest_path(output, run_id),
                 to_json(manifest, indent=2, sort_keys=False).encode("utf-8"))


def add_counters(output: str, run_id: str, attempt: str,
                 counters: Mapping[str, Mapping[str, int]]) -> bool:
    """Add the job's Beam counters to the manifest of `attempt`, once the
    launcher has them (after the job's own Finalize committed it). False when
    the manifest is not that attempt's (it failed, or a newer one committed:
    a whole run would have had to start and finish meanwhile)."""
    manifest = committed(output, run_id)
    if manifest is None or manifest.get("attempt") != attempt:
        return False
    write_manifest(output, run_id, {**manifest, "counters": counters})
    return True


def committed(output: str, run_id: str) -> dict | None:
    """The run id's completion marker (its manifest) for the writer's side, or
    None: a corrupt marker commits nothing, and a new attempt replaces it.
    Readers use transforms.publish.completed, which says why it is corrupt."""
    try:
        return read_manifest(output, run_id)
    except CorruptManifest:
        return None


def committed_attempt(output: str, run_id: str) -> str | None:
    manifest = committed(output, run_id)
    return manifest.get("attempt") if manifest else None


def relative(output: str, path: str) -> str:
    return path[len(output.rstrip("/")) + 1:] if path.startswith(output.rstrip("/") + "/") \
        else path


def _match(pattern: str) -> list[str]:
    try:
        return [m.path for m in FileSystems.match([pattern])[0].metadata_list]
    except Exception:  # nothing there yet
        return []


def comparison_files(output: str, run_id: str) -> list[str]:
    """What `evalbeam compare` wrote about the run id, as candidate or as
    baseline: its comparisons/ table files (part-<candidate>.<stem>.parquet)
    and pages (runs/<candidate>/compare/<stem>.md|html), where the stem
    starts with the baseline's run id (pipeline.postrun.compare.page_stem;
    run ids hold no '.', so the parts split apart)."""
    found = []
    for path in _match(FileSystems.join(output, COMPARISONS.name, "*", "part-*.parquet")):
        candidate, _, stem = path.rsplit("/", 1)[-1][len("part-"):].partition(".")
        if run_id in (candidate, stem.split(".", 1)[0]):
            found.append(path)
    for path in _match(FileSystems.join(output, "runs", "*", "compare", "*")):
        parts = path.split("/")
        if run_id in (parts[-3], parts[-1].split(".", 1)[0]):
            found.append(path)
    return found


def run_files(output: str, tables: Iterable[TableSpec], run_id: str) -> list[str]:
    """Every file of the run id in the tables (any attempt, any date)."""
    found = []
    for table in tables:
        depth = "/".join("*" for _ in table.partitions)
        found += _match(FileSystems.join(output, table.name, depth,
                                         f"part-{run_id}.*.parquet"))
    return found


def attempt_temp_dirs(output: str, run_id: str) -> list[str]:
    """`_tmp/<run_id>-<attempt>` of every attempt (the attempt is exactly 12 hex
    digits, so run id `a` never matches the folders of run id `a-1`)."""
    name = f"{run_id}-" + "[0-9a-f]" * ATTEMPT_LENGTH
    if "://" not in output:
        return glob.glob(os.path.join(glob.escape(output), "_tmp", name))
    # an object store has no folders: the files under them
    return _match(FileSystems.join(output, "_tmp", name, "*"))


MOVE_THREADS = 32  # renames in flight at once (on an object store each is a copy + delete)


def _in_parallel(fn, items) -> None:
    """fn over items on a thread pool; the first error is raised."""
    items = list(items)
    if len(items) < 2:
        for item in items:
            fn(item)
        return
    with ThreadPoolExecutor(max_workers=min(MOVE_THREADS, len(items)),
                            thread_name_prefix="evalbeam-move") as pool:
        for _ in pool.map(fn, items):
            pass


def _move_if_staged(move: tuple[str, str]) -> None:
    source, target = move
    if FileSystems.exists(source):  # a retried Finalize skips what it already moved
        FileSystems.rename([source], [target])


def move_into_place(output: str, run_id: str, attempt: str,
                    written: Iterable[WrittenFile]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Rename the staged files into their Hive folders, many at a time, and
    resumably (a retried Finalize moves only what is still staged); returns
    (files, rows) per table."""
    files: dict[str, list[str]] = {}
    rows: dict[str, int] = {}
    moves, folders = [], set()
    for f in written:
        folder = partition_dir(output, f.table, f.partition)
        target = FileSystems.join(folder, final_name(run_id, attempt, f.temp_path))
        files.setdefault(f.table, []).append(target)
        rows[f.table] = rows.get(f.table, 0) + f.rows
        moves.append((f.temp_path, target))
        folders.add(folder)
    _in_parallel(ensure_folder, sorted(folders))
    _in_parallel(_move_if_staged, moves)
    return files, rows


def listed_files(output: str, manifest: Mapping | None) -> set[str]:
    """The paths of the files a completion marker lists (none without one)."""
    return {FileSystems.join(output, p) for paths in (manifest or {}).get("files", {}).values()
            for p in paths}


def supersede(output: str, run_id: str, tables: Iterable[TableSpec], keep: Iterable[str]) -> int:
    """Delete the run id's files that the committed attempt does not list."""
    keep = set(keep)
    old = [p for p in run_files(output, tables, run_id) if p not in keep]
    _in_parallel(lambda path: delete_quietly([path]), old)
    return len(old)


def clean_leftovers(output: str, run_id: str, attempt: str, tables: Sequence[TableSpec]) -> int:
    """Before an attempt starts (it holds the lease): remove what killed attempts
    left behind, i.e. table files no completion marker lists, other attempts'
    temporary folders, heartbeats and half-written files. Returns files removed."""
    manifest = committed(output, run_id)
    if manifest and manifest.get("attempt"):
        install_report(output, run_id, manifest["attempt"])
    # no marker (or a corrupt one, which commits nothing): no file of the id is kept
    removed = supersede(output, run_id, tables, listed_files(output, manifest))
    others = [d for d in attempt_temp_dirs(output, run_id)
              if d.rstrip("/") != temp_dir(output, run_id, attempt).rstrip("/")]
    stale = stale_files(output, run_id, attempt)
    delete_quietly(others + stale)
    return removed + len(others) + len(stale)


def checkpoint(output: str, run_id: str, attempt: str, step: str) -> None:
    """A test hook: with EVALBEAM_TEST_PAUSE_AT=step the attempt stops here (leaving
    `paused.<step>` in its temporary folder) until killed, or for `step:seconds`."""
    wanted, _, seconds = os.environ.get(PAUSE_ENV, "").partition(":")
    if wanted != step:
        return
    folder = temp_dir(output, run_id, attempt)
    marker = FileSystems.join(folder, f"paused.{step}")
    write_atomic(marker, b"")
    time.sleep(float(seconds) if seconds else 3600.0)
    delete_quietly([marker])
    if "://" not in folder:  # after the temporary folders' removal it made one again
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def committing_path(output: str, run_id: str, attempt: str) -> str:
    return FileSystems.join(run_dir(output, run_id), f"committing.{attempt}.json")


class _Section:
    """This process's commit under way, and the stop a signal put off to its end."""
    depth = 0
    deferred: Callable[[], None] | None = None


@contextlib.contextmanager
def critical_section(output: str, run_id: str, attempt: str) -> Iterator[None]:
    """The marker's write to the lease's release. A stop asked for in this
    process meanwhile (defer_stop) runs at its end; a launcher whose worker
    process commits sees `committing.<attempt>.json` (naming that process) and
    waits for it to go (wait_for_commit) before it ends its workers."""
    path = committing_path(output, run_id, attempt)
    write_atomic(path, json.dumps({"host": socket.gethostname(), "pid": os.getpid()}).encode())
    _Section.depth += 1
    try:
        yield
    finally:
        _Section.depth -= 1
        delete_quietly([path])
        stop, _Section.deferred = _Section.deferred, None
        if stop is not None:
            stop()


def defer_stop(stop: Callable[[], None]) -> bool:
    """From a signal handler: True when a commit's critical section is under way
    in this process (the handler may have interrupted it), and `stop` then runs
    at its end; False (stop now) otherwise. Set first, then checked: a section
    ending on another thread meanwhile runs it or leaves it to the caller."""
    _Section.deferred = stop
    if _Section.depth > 0:
        return True
    _Section.deferred = None
    return False


def wait_for_commit(output: str, run_id: str, attempt: str, timeout_s: float) -> bool:
    """Wait (at most timeout_s) while another process of this host is in the
    attempt's critical section; False when it was still there at the end."""
    deadline = time.monotonic() + timeout_s
    while True:
        flag = read_json(committing_path(output, run_id, attempt)) or {}
        pid = flag.get("pid")
        if (not isinstance(pid, int) or pid == os.getpid()
                or local_process_gone(str(flag.get("host")), pid)):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
