"""WriteTables: Hive-partitioned Parquet, one file per bundle × partition.

Each bundle writes its rows to temporary files in row groups (memory stays
bounded) and reports them; `finalize_files` then replaces this run's previous
files and moves the new ones into `table/key=value/.../part-<run_id>.<uuid>.parquet`.
File names carry the run id, so runs on the same date live side by side.
Destination folders are created before the rename: Beam's own WriteToFiles
loses files on a local filesystem when they are missing.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindows

from schemas.tables import TableSpec

ROW_GROUP_ROWS = 10_000
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


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


def final_name(run_id: str, temp_path: str) -> str:
    return f"part-{run_id}.{temp_path.rsplit('/', 1)[-1].split('.')[0]}.parquet"


def write_table_file(path: str, schema: pa.Schema, rows: list[dict]) -> None:
    """One Parquet file from rows (used for small tables written at the end)."""
    table = pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()
    with FileSystems.create(path) as fh:
        pq.write_table(table, fh)


def write_small_table(output: str, spec: TableSpec, run_id: str, run_date: str,
                      rows: list[dict]) -> str:
    """A table partitioned by run_date only, as one file `part-<run_id>.0.parquet`
    (a fixed name, so writing it again replaces it); returns its path."""
    folder = partition_dir(output, spec.name, (("run_date", run_date),))
    path = FileSystems.join(folder, f"part-{run_id}.0.parquet")
    write_table_file(path, spec.schema, rows)
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
    def __init__(self, spec: TableSpec, output: str, run_id: str, run_date: str, attempt: str):
        self._spec, self._output, self._run_id, self._run_date = spec, output, run_id, run_date
        self._attempt = attempt
        self._writers: dict[tuple, _PartWriter] = {}

    def start_bundle(self):
        self._writers = {}

    def _partition(self, row: Mapping) -> tuple[tuple[str, str], ...]:
        return tuple((k, self._run_date if k == "run_date" else str(row[k]))
                     for k in self._spec.partitions)

    def process(self, row: Mapping):
        part = self._partition(row)
        writer = self._writers.get(part)
        if writer is None:
            path = FileSystems.join(temp_dir(self._output, self._run_id, self._attempt),
                                    f"{uuid.uuid4().hex}.parquet")
            writer = self._writers[part] = _PartWriter(path, self._spec.schema)
        writer.add(row)

    def finish_bundle(self):
        for part, writer in self._writers.items():
            writer.close()
            yield GlobalWindows.windowed_value(
                WrittenFile(self._spec.name, part, writer.path, writer.rows))
        self._writers = {}


class WriteRows(beam.PTransform):
    """Rows (dicts) -> WrittenFile records of temporary files for one table."""

    def __init__(self, spec: TableSpec, output: str, run_id: str, run_date: str, attempt: str):
        super().__init__()
        self._args = (spec, output, run_id, run_date, attempt)

    def expand(self, rows):
        return rows | beam.ParDo(_WriteBundleFn(*self._args))


def existing_run_files(output: str, table: TableSpec, run_id: str) -> list[str]:
    """This run's files already in a table (from an earlier attempt of the run id)."""
    depth = "/".join("*" for _ in table.partitions)
    pattern = FileSystems.join(output, table.name, depth, f"part-{run_id}.*.parquet")
    try:
        return [m.path for m in FileSystems.match([pattern])[0].metadata_list]
    except Exception:  # nothing there yet
        return []


def finalize_files(output: str, run_id: str, tables: Iterable[TableSpec],
                   written: Iterable[WrittenFile]) -> dict[str, int]:
    """Replace this run's files by the new ones; returns rows per table."""
    tables = list(tables)
    for table in tables:
        old = existing_run_files(output, table, run_id)
        if old:
            FileSystems.delete(old)
    rows: dict[str, int] = {t.name: 0 for t in tables}
    sources, targets = [], []
    for f in written:
        folder = partition_dir(output, f.table, f.partition)
        if not FileSystems.exists(folder):
            FileSystems.mkdirs(folder)
        sources.append(f.temp_path)
        targets.append(FileSystems.join(folder, final_name(run_id, f.temp_path)))
        rows[f.table] = rows.get(f.table, 0) + f.rows
    if sources:
        FileSystems.rename(sources, targets)
    return rows
