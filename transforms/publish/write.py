"""WriteTables: Hive-partitioned Parquet, one file per bundle × partition.

Each bundle writes its rows to temporary files of the attempt in row groups
(memory stays bounded) and reports them; Finalize then publishes them
(transforms/publish/commit.py) as
`table/key=value/.../part-<run_id>.<attempt>.<n>.parquet`. File names carry the
run id, so runs on the same date live side by side. Every row passes the
run's scrubber on its way in: no configured secret is written, and text that
is not valid Unicode cannot abort the writer.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
import uuid
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindows

from schemas.tables import TableSpec
from transforms.publish.rows import to_json
from transforms.remote.scrub import REDACTED, Scrubber, scrubber_for

ROW_GROUP_ROWS = 10_000
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,128}\Z")  # \Z: "$" also matches before a last "\n"
GLOB_CHARS = "*?[]{}"


def glob_characters(path: str) -> str:
    """The glob characters in an output folder's name ('' when none): Beam and
    DuckDB would read such a name as a pattern over several folders."""
    return "".join(sorted({c for c in path if c in GLOB_CHARS}))


def unwritable(folder: str) -> str | None:
    """Why a local folder (made when missing) cannot be written in, or None.
    A real probe in the nearest folder that exists: permission bits say
    nothing to root or on a read-only mount."""
    existing = os.path.abspath(folder)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"{existing} is a file, not a folder"
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".evalbeam-probe-", dir=existing))
    except OSError as exc:
        return f"cannot write in {existing} ({exc.strerror or exc})"
    return None


@dataclass(frozen=True, slots=True)
class WrittenFile:
    table: str
    partition: tuple[tuple[str, str], ...]  # (column, value) pairs, outermost first
    temp_path: str
    rows: int


def temp_dir(output: str, run_id: str, attempt: str) -> str:
    """Where one attempt of a run writes before Finalize moves files into place."""
    return FileSystems.join(output, "_tmp", f"{run_id}-{attempt}")


def partition_dir(output: str, table: str, partition: Sequence[tuple[str, str]]) -> str:
    return FileSystems.join(output, table, *(f"{k}={v}" for k, v in partition))


SCRUBBED_FLAG = "secrets_scrubbed"
JSON_COLUMNS = ("bot_details", "details", "messages")  # JSON text: scrubbed value by value
FLAG_COLUMNS = ("bot_details", "details")  # where a row says that a text of it held a secret


def scrub_json_text(text: str, scrubber: Scrubber, hits: list) -> str:
    """A JSON text without secrets that is still JSON: scrubbed whole, the text
    may lose a quote (a secret hidden behind `&#x2d;` is scrubbed decoded, and
    so is a `%22` beside it); one that held a secret is scrubbed value by value
    (keys too) and written again. Text that is no JSON is scrubbed as text."""
    found: list = []
    clean = scrubber.scrub(text, found)
    if not found:
        return clean
    hits += found
    try:
        data = json.loads(text)
    except ValueError:
        return clean
    return to_json(scrubber.scrub_value(data, keys=True)) or clean


def flagged(details: str | None) -> str | None:
    """The JSON object `details` saying secrets_scrubbed: true ({} when null);
    anything but an object stays as it is."""
    try:
        data = json.loads(details or "{}")
    except ValueError:
        return details
    if not isinstance(data, dict):
        return details
    return to_json({**data, SCRUBBED_FLAG: True})


def scrub_row(row: Mapping, scrubber: Scrubber) -> dict:
    """Every text of a row (lists of texts too) without secrets and writable as
    UTF-8 (JSON columns still JSON); a row that held a secret, found here or
    where a reply arrived (a text says <redacted>), says so in its details
    (results: bot_details, scores: details). Its values stay: a number holds
    no text."""
    out, hits = {}, []
    for key, value in row.items():
        if isinstance(value, str):
            value = (scrub_json_text(value, scrubber, hits) if key in JSON_COLUMNS
                     else scrubber.scrub(value, hits))
        elif isinstance(value, list):
            value = [scrubber.scrub(v, hits) if isinstance(v, str) else v for v in value]
        out[key] = value
    flag = next((c for c in FLAG_COLUMNS if c in out), None)
    if flag and (hits or any(REDACTED in v for v in _texts(out))):  # or scrubbed upstream
        out[flag] = flagged(out[flag])
    return out


def _texts(row: Mapping) -> list[str]:
    """The row's texts, those of its lists too."""
    return [t for v in row.values() for t in (v if isinstance(v, list) else [v])
            if isinstance(t, str)]


def write_table_file(path: str, schema: pa.Schema, rows: list[dict],
                     scrubber: Scrubber | None = None) -> None:
    """One Parquet file from rows (used for small tables written at the end)."""
    rows = [scrub_row(r, scrubber or Scrubber()) for r in rows]
    table = pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()
    with FileSystems.create(path) as fh:
        pq.write_table(table, fh)


def ensure_folder(folder: str) -> None:
    if not FileSystems.exists(folder):
        FileSystems.mkdirs(folder)  # Beam loses files renamed into missing folders


class NotWritten(Exception):
    """A post-run command's file could not be written (a full disk, a folder
    that is a file or read-only): one line naming it, not a traceback."""


def _why(exc: OSError) -> str:
    """An OSError's reason in a few words; Beam's wraps one per file."""
    inner = [e for e in (getattr(exc, "exception_details", None) or {}).values()
             if isinstance(e, OSError)]
    first = inner[0] if inner else exc
    text = str(first).strip()
    return first.strerror or (text.splitlines()[0] if text else type(first).__name__)


def replace_file(output: str, path: str, write: Callable[[str], None]) -> None:
    """A post-run command's file (calibration/, comparisons/, their pages),
    which readers see at once: `write(temp)` writes it under `_tmp/`, which no
    table glob reaches, then it is renamed over `path`. Written in place, a
    failed write (a full disk, a kill) left a partial file that failed every
    query of the table (DuckDB: "No magic bytes found"), and a reader could
    meet one half-written."""
    temp = FileSystems.join(output, "_tmp", f"{os.path.basename(path)}.{uuid.uuid4().hex}")
    try:
        write(temp)
        ensure_folder(path.rsplit("/", 1)[0])
        FileSystems.rename([temp], [path])
    except BaseException as exc:
        try:
            if FileSystems.exists(temp):
                FileSystems.delete([temp])
        except OSError:
            pass  # the folder it was in is what failed
        if isinstance(exc, OSError):
            raise NotWritten(f"cannot write {path}: {_why(exc)}; the earlier file, "
                             "if any, is left as it was") from None
        raise


def replace_table_file(output: str, path: str, schema: pa.Schema, rows: list[dict]) -> None:
    """A table's file, replaced whole (replace_file)."""
    replace_file(output, path, lambda temp: write_table_file(temp, schema, rows))


def replace_text_file(output: str, path: str, text: str) -> None:
    """A page, replaced whole (replace_file): a full disk leaves the earlier one."""
    def write(temp: str) -> None:
        with FileSystems.create(temp, "text/plain", CompressionTypes.UNCOMPRESSED) as fh:
            fh.write(text.encode("utf-8"))
    replace_file(output, path, write)


def write_small_table(output: str, spec: TableSpec, run_id: str, run_date: str,
                      rows: list[dict]) -> str:
    """A table partitioned by run_date only, as one file `part-<run_id>.0.parquet`
    (a fixed name, so writing it again replaces it); returns its path."""
    folder = partition_dir(output, spec.name, (("run_date", run_date),))
    path = FileSystems.join(folder, f"part-{run_id}.0.parquet")
    replace_table_file(output, path, spec.schema, rows)
    return path


class _PartWriter:
    """Buffers one partition's columns and flushes them as row groups."""

    def __init__(self, path: str, schema: pa.Schema):
        self.path, self.schema = path, schema
        self.columns: dict[str, list] = {n: [] for n in schema.names}
        self.buffered = self.rows = 0
        self._stream = FileSystems.create(path)
        self._writer = pq.ParquetWriter(self._stream, schema)

    def add(self, row: Mapping) -> None:
        for name, col in self.columns.items():
            col.append(row.get(name))
        self.buffered += 1
        if self.buffered >= ROW_GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.buffered:
            batch = pa.table({n: pa.array(v, type=self.schema.field(n).type)
                              for n, v in self.columns.items()}, schema=self.schema)
            self._writer.write_table(batch)
            self.rows += self.buffered
            self.buffered = 0
            for col in self.columns.values():
                col.clear()

    def close(self) -> None:
        self.flush()
        self._writer.close()
        self._stream.close()


class _WriteBundleFn(beam.DoFn):
    def __init__(self, spec: TableSpec, output: str, run_id: str, run_date: str, attempt: str,
                 endpoints: Mapping | None = None, lease_ttl_s: float | None = None,
                 secret_texts: Sequence[str] = ()):
        self._spec, self._output, self._run_id, self._run_date = spec, output, run_id, run_date
        self._attempt = attempt
        self._endpoints = dict(endpoints or {})  # whose secrets are scrubbed from every row
        self._secret_texts = tuple(secret_texts)  # ... and these (see scrub.secret_texts)
        self._lease_ttl_s = lease_ttl_s          # None: no heartbeat from here (unit tests)
        self._writers: dict[tuple, _PartWriter] = {}
        self._scrubber = Scrubber()
        self._heartbeat = None
        self._progress = None

    def setup(self):
        # secrets from this worker's environment
        self._scrubber = scrubber_for(self._endpoints, self._secret_texts)
        if self._lease_ttl_s is not None:  # the attempt is alive while its workers are
            from transforms.publish.lease import Heartbeat
            self._heartbeat = Heartbeat.start(self._output, self._run_id, self._attempt,
                                              self._lease_ttl_s)
            from transforms.publish.progress_objects import ProgressWriter  # rows counted as written
            self._progress = ProgressWriter.start(self._output, self._run_id, self._attempt)

    def teardown(self):
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def start_bundle(self):
        self._writers = {}

    def _partition(self, row: Mapping) -> tuple[tuple[str, str], ...]:
        return tuple((k, self._run_date if k == "run_date" else str(row[k]))
                     for k in self._spec.partitions)

    def process(self, row: Mapping):
        row = scrub_row(row, self._scrubber)
        part = self._partition(row)
        writer = self._writers.get(part)
        if writer is None:
            path = FileSystems.join(temp_dir(self._output, self._run_id, self._attempt),
                                    f"{uuid.uuid4().hex}.parquet")
            writer = self._writers[part] = _PartWriter(path, self._spec.schema)
        writer.add(row)
        if self._progress is not None:
            self._progress.tally.row(self._spec.name, row)

    def finish_bundle(self):
        for part, writer in self._writers.items():
            writer.close()
            yield GlobalWindows.windowed_value(
                WrittenFile(self._spec.name, part, writer.path, writer.rows))
        self._writers = {}


class WriteRows(beam.PTransform):
    """Rows (dicts) -> WrittenFile records of temporary files for one table."""

    def __init__(self, spec: TableSpec, output: str, run_id: str, run_date: str, attempt: str,
                 endpoints: Mapping | None = None, lease_ttl_s: float | None = None,
                 secret_texts: Sequence[str] = ()):
        super().__init__()
        self._args = (spec, output, run_id, run_date, attempt, endpoints, lease_ttl_s,
                      secret_texts)

    def expand(self, rows):
        return rows | beam.ParDo(_WriteBundleFn(*self._args))
