"""Reading a run through its completion marker: the one way every reader of a
run (compare, calibrate, status, report.html's trends, the Python API, the
viewer) finds the run's files.

A run id's tables may hold files of several attempts for a while: the
committed one, a killed re-run's (moved in, never committed) and, during a
re-run, the next one's. Only `runs/<run_id>/manifest.json` says which attempt
finished and which files are its. So a reader never globs a table for the run
id: it reads the manifest, checks it, and opens exactly the files it lists.

    run = read_completed_run(output, run_id)   # NoCompletedAttempt, CorruptManifest
    run.attempt, run.run_date, run.bots, run.metrics, run.counts, run.manifest
    run.files("results")                        # the committed files, full paths
    run.read(RESULTS, ["case_id", "verdict"])   # a pyarrow Table of those files
    read_manifest(output, run_id)              # the checked manifest, or None

Every error is a RunUnreadable (a ValueError) whose message is one line; the
commands print it and exit 2.
"""
from __future__ import annotations

import io
import os
import re
import shutil
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from schemas.manifest import ATTEMPT, other_run, parse_manifest_bytes
from schemas.messages import json_kind
from schemas.tables import TABLES, TableSpec
from transforms.publish.lease import run_dir
from transforms.publish.write import RUN_ID_PATTERN, glob_characters

MANIFEST = "manifest.json"
PARQUET_MAGIC = b"PAR1"             # how a whole Parquet file ends
# a listed file's end is read once (one ranged read on an object store): its
# footer's length, PAR1 and the footer itself unless larger (then one read
# more); pyarrow's own first read of a footer is as long, and a smaller file
# is read whole
TAIL_BYTES = 64 << 10
MAX_MANIFEST_BYTES = 64 << 20  # a manifest is small; a bigger file is not one
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")  # \Z: "$" also matches before a last "\n"
_STEM = re.compile(r"^[A-Za-z0-9_-]{1,128}\Z")


class RunUnreadable(ValueError):
    """A run cannot be read as asked; the message is one line (exit 2)."""


class NoCompletedAttempt(RunUnreadable):
    """The run id has no completion marker: unknown, still running, or every
    attempt was killed or failed before its commit."""


class CorruptManifest(RunUnreadable):
    """The completion marker is there but is not a manifest evalbeam wrote for
    this run id (truncated, tampered, foreign, or from an older version)."""


def check_run_id(run_id: str, flag: str = "--run-id") -> None:
    """Run ids are 1-128 letters, digits, '-' or '_' everywhere (a path such as
    `../../x` must never name another folder's run)."""
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.match(run_id):
        raise RunUnreadable(f"{flag} {run_id!r} must be 1-128 letters, digits, '-' or '_'")


def check_output(output: str) -> str:
    """One output folder, named as it is, without its trailing '/' (the root
    stays '/', not '', which would be the current folder); returned. Refused:
    an empty name (`--output "$OUT"` with OUT unset would read the current
    folder, or /), and glob characters (read as a pattern over several
    folders, written as a literal one)."""
    if not output.strip():
        raise RunUnreadable("--output is empty")
    bad = glob_characters(output)
    if bad:
        raise RunUnreadable(f"--output {output!r} contains the glob character(s) {bad}; a "
                            "run is read from one folder named without * ? [ ] { }")
    return output.rstrip("/") or "/"


def manifest_path(output: str, run_id: str) -> str:
    return FileSystems.join(run_dir(output, run_id), MANIFEST)


def unreachable(output: str, exc: Exception, verb: str = "read") -> RunUnreadable:
    """Why `output` cannot be read (or written: verb) here, in one line: for a
    URL, the Beam extra whose filesystem it needs (none for a scheme Beam
    has no filesystem for: memory://, a typo)."""
    first = first_line(exc)
    if "://" in output:
        scheme = output.split("://", 1)[0]
        extra = {"gs": "gcp", "s3": "aws", "hdfs": "hadoop", "azfs": "azure"}.get(scheme)
        needs = (f"install apache-beam[{extra}] and its credentials" if extra else
                 "Beam has no filesystem for it: gs://, s3://, hdfs://, azfs:// or a local path")
        return RunUnreadable(f"cannot {verb} {output}: no usable filesystem for {scheme}:// "
                             f"here ({needs}): {first}")
    return RunUnreadable(f"cannot {verb} {output}: {first}")


def first_line(exc: Exception, limit: int = 200) -> str:
    """An error's first line, at most `limit` characters (its type's name when
    it says nothing)."""
    return (str(exc).splitlines() or [type(exc).__name__])[0][:limit]


def _read_manifest_bytes(output: str, run_id: str) -> tuple[str, bytes | None]:
    """The marker's path and bytes (None when it does not exist)."""
    try:
        path = manifest_path(output, run_id)
        if not FileSystems.exists(path):
            return path, None
        with FileSystems.open(path) as fh:
            data = fh.read(MAX_MANIFEST_BYTES + 1)
    except Exception as exc:  # no filesystem for the scheme, no credentials, a folder
        raise unreachable(output, exc) from None
    return path, data


def _problem(manifest: dict, run_id: str) -> str | None:
    """What is wrong with a manifest's object (None: a marker of this run id)."""
    named = other_run(manifest, run_id)
    if named:
        return named
    attempt = manifest.get("attempt")
    if not isinstance(attempt, str) or not ATTEMPT.fullmatch(attempt):
        return "no attempt id (written by an older evalbeam? run it again)"
    date = manifest.get("run_date")
    if not isinstance(date, str) or not _DATE.match(date):
        return "no run_date YYYY-MM-DD"
    for key in ("bots", "metrics"):
        value = manifest.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return f"{key!r} is not a list of names"
    for key in ("counts", "tables"):
        value = manifest.get(key)
        if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                for k, v in value.items()):
            return f"{key!r} is not a mapping of names to counts"
    reconciliation = manifest.get("reconciliation")
    if not isinstance(reconciliation, dict) or not isinstance(reconciliation.get("ok"), bool):
        return "'reconciliation' has no ok: true/false"
    for key, kind in (("config", dict), ("worst_cases", dict), ("notes", list),
                      ("head_to_head", list), ("finished_at", str)):
        if key in manifest and not isinstance(manifest[key], kind):
            return f"{key!r} is not a JSON {json_kind(kind())}"
    if not all(isinstance(pair, dict) for pair in manifest.get("head_to_head", [])):
        return "'head_to_head' is not a list of objects"
    files = manifest.get("files")
    if not isinstance(files, dict):
        return "no file list (written by an older evalbeam? run it again)"
    for table, paths in files.items():
        if table not in TABLES:
            return f"it lists files of an unknown table {table!r}"
        if not isinstance(paths, list):
            return f"its {table} files are not a list"
        for path in paths:
            why = bad_listed_path(TABLES[table], run_id, attempt, path)
            if why:
                return why
    return None


def bad_listed_path(spec: TableSpec, run_id: str, attempt: str, path: Any) -> str | None:
    """Why a listed file is not one of this attempt's files in the table's Hive
    folders (None: it is): a tampered list must not open files elsewhere."""
    if not isinstance(path, str):
        return f"a listed {spec.name} file is not a path"
    parts = path.split("/")
    name = parts[-1]
    ok = (len(parts) == len(spec.partitions) + 2 and parts[0] == spec.name
          and all(p.startswith(f"{col}=") and p[len(col) + 1:] not in ("", ".", "..")
                  and "\\" not in p and "\x00" not in p
                  for col, p in zip(spec.partitions, parts[1:-1]))
          and name.startswith(f"part-{run_id}.{attempt}.") and name.endswith(".parquet")
          and bool(_STEM.match(name[len(f"part-{run_id}.{attempt}."):-len(".parquet")])))
    return None if ok else f"it lists {path[:200]!r}, not a {spec.name} file of its attempt"


def parse_manifest(data: bytes, run_id: str, where: str) -> dict:
    """The manifest in `data`, checked (CorruptManifest naming `where` otherwise)."""
    if len(data) > MAX_MANIFEST_BYTES:
        manifest, why = None, f"larger than {MAX_MANIFEST_BYTES >> 20} MiB"
    else:
        manifest, why = parse_manifest_bytes(data)
        why = why or _problem(manifest, run_id)
    if why:
        raise corrupt(run_id, where, why)
    return manifest


def corrupt(run_id: str, where: str, why: str) -> CorruptManifest:
    """The one line for a marker that is not what a reader needs (exit 2): also
    for a command's own check of a part only it reads (calibrate's config)."""
    return CorruptManifest(f"run {run_id}: corrupt manifest {where}: {why}; run it again "
                           "to replace it")


def read_manifest(output: str, run_id: str) -> dict | None:
    """The run id's completion marker, checked; None when there is none.
    Raises RunUnreadable (a bad run id, an unreachable folder) or
    CorruptManifest."""
    check_output(output)
    check_run_id(run_id)
    path, data = _read_manifest_bytes(output, run_id)
    return None if data is None else parse_manifest(data, run_id, path)


@dataclass(frozen=True)
class CompletedRun:
    """A run's committed attempt: its manifest and the files it lists."""

    output: str
    run_id: str
    manifest: Mapping[str, Any]

    @property
    def attempt(self) -> str:
        return self.manifest["attempt"]

    @property
    def run_date(self) -> str:
        return self.manifest["run_date"]

    @property
    def bots(self) -> list[str]:
        return list(self.manifest["bots"])

    @property
    def metrics(self) -> list[str]:
        return list(self.manifest["metrics"])

    @property
    def counts(self) -> dict[str, int]:
        return dict(self.manifest["counts"])

    def files(self, table: str) -> list[str]:
        """The committed attempt's files of a table (full paths; [] when it has none)."""
        return [FileSystems.join(self.output, p) for p in self.manifest["files"].get(table, [])]

    def local_files(self, table: str, stage: str) -> list[str]:
        """The committed files of a table as local paths, for readers that open
        paths themselves (DuckDB): the files of a local output; for a URL output
        (gs://, s3://, hdfs://) their copies under `stage`, in the table's Hive
        folders, fetched once through Beam's FileSystems (with the command's
        filesystem options)."""
        if "://" not in self.output:
            self.check_files(table)
            return self.files(table)
        out = []
        for path in self.files(table):
            local = os.path.join(stage, *path[len(self.output) + 1:].split("/"))
            if not os.path.exists(local):
                os.makedirs(os.path.dirname(local), exist_ok=True)
                try:
                    with FileSystems.open(path, "application/octet-stream",
                                          CompressionTypes.UNCOMPRESSED) as src, \
                            open(local + ".part", "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
                except Exception as exc:  # a listed file gone, no credentials
                    self.check_files(table)
                    raise RunUnreadable(f"run {self.run_id!r}: cannot read its {table}/ "
                                        f"files: {first_line(exc)}") from None
                os.replace(local + ".part", local)
            out.append(local)
        self.check_rows(table, sum(self.listed_rows(table, local, path)
                                   for local, path in zip(out, self.files(table))))
        return out

    def check_files(self, *tables: str) -> None:
        """RunUnreadable when a file the marker lists (of `tables`; default: of
        every table) cannot be read as the Parquet file it was (listed_rows),
        or the files hold other rows than the marker counts."""
        for table in tables or list(self.manifest["files"]):
            self._checked_tails(table)

    def _checked_tails(self, table: str) -> list[_Tail]:
        """The end of each listed file of a table, each checked (listed_rows),
        and their rows checked against the marker's count."""
        checked = [self._listed(table, path) for path in self.files(table)]
        self.check_rows(table, sum(rows for _, rows in checked))
        return [tail for tail, _ in checked]

    def listed_rows(self, table: str, path: str, named: str | None = None) -> int:
        """The rows a listed file's Parquet footer counts; RunUnreadable naming
        the file (`named`: the listed file a local copy at `path` is of) when it
        is missing (the folder lost it after the commit), does not end as a
        Parquet file does (a copy cut it short), or its footer cannot be read
        (bytes of it changed, or its length points outside the file): the one
        check of every reader, whose own would raise pyarrow's or DuckDB's
        error instead."""
        return self._listed(table, path, named)[1]

    def _listed(self, table: str, path: str, named: str | None = None) -> tuple[_Tail, int]:
        """listed_rows, and the file's end it read (one open, one read of its
        last TAIL_BYTES: on an object store a size and one ranged read)."""
        try:
            tail = _read_tail(path)
        except Exception as exc:  # noqa: BLE001 - each filesystem says "not found" its own way
            if not FileSystems.exists(path):
                why = "which is missing (deleted, or not copied with the folder?)"
            elif isinstance(exc, (OSError, ValueError)):  # a folder in its place
                why = "which is not a whole Parquet file (cut short by a copy?)"
            else:
                raise
        else:
            if not tail.data.endswith(PARQUET_MAGIC):
                why = "which is not a whole Parquet file (cut short by a copy?)"
            else:
                try:
                    return tail, _footer_rows(tail)
                except (OSError, ValueError, pa.ArrowException) as exc:  # OSError: Thrift's,
                    # ValueError: ArrowInvalid (a length outside the file), a name not UTF-8
                    why = f"whose Parquet footer cannot be read ({first_line(exc)})"
        raise RunUnreadable(f"run {self.run_id!r}: its completion marker lists the "
                            f"{table}/ file {named or path}, {why}; run it again to replace it")

    def check_rows(self, table: str, held: int) -> None:
        """RunUnreadable when a table's listed files hold other than the rows the
        marker counts: one replaced after the commit (an overwrite, a restore
        of another copy) would otherwise read as fewer rows, or more."""
        counted = self.manifest["tables"].get(table)
        if counted is not None and held != counted:
            raise RunUnreadable(f"run {self.run_id!r}: its completion marker counts {counted} "
                                f"{table}/ rows, its listed files hold {held} (one replaced "
                                "after the commit?); run it again to replace them")

    def no_files(self, table: str) -> str:
        """Why the attempt lists no file of a table: it evaluated nothing (every
        input row invalid, or none), or the manifest lists none."""
        counts = self.manifest["counts"]
        if counts.get("valid_cases") == 0:
            rows = counts.get("input_rows", 0)
            why = ("the input has no rows" if not rows else
                   f"none of its {rows} input rows is a valid case; the reasons are in errors/")
            return f"run {self.run_id!r} has no {table}/ rows: it evaluated nothing ({why})"
        return f"run {self.run_id!r} has no {table}/ files under {self.output}"

    def dataset(self, spec: TableSpec) -> ds.Dataset:
        """The committed files of a table as a dataset, partition columns as text
        (a bot named `2024` stays a string)."""
        paths = self.files(spec.name)
        if not paths:
            raise RunUnreadable(self.no_files(spec.name))
        tails = self._checked_tails(spec.name)  # each listed file whole, its footer sound,
        filesystem, paths, base = _arrow_paths(  # its rows; read from there on an object store
            paths, FileSystems.join(self.output, spec.name), tails)
        partitioning = ds.partitioning(pa.schema([(p, pa.string()) for p in spec.partitions]),
                                       flavor="hive")
        try:
            return ds.dataset(paths, format="parquet", partitioning=partitioning,
                              partition_base_dir=base, filesystem=filesystem)
        except (OSError, pa.ArrowInvalid) as exc:  # a listed file changed meanwhile
            raise self.unreadable(spec.name, exc) from None

    def unreadable(self, table: str, exc: Exception) -> RunUnreadable:
        """The one line for a listed file that cannot be read: missing (said
        so), or there but not Parquet (cut short by a copy, overwritten)."""
        self.check_files(table)
        return RunUnreadable(f"run {self.run_id!r}: cannot read its {table}/ files: "
                             f"{first_line(exc)}")

    def read(self, spec: TableSpec, columns: Sequence[str] | None = None,
             where: ds.Expression | None = None, dataset: ds.Dataset | None = None
             ) -> pa.Table:
        """The run's rows of a table (only `columns`, all by default), optionally
        filtered further; from `dataset`, self.dataset(spec) already made, when
        given (each dataset() reads every listed file's end again)."""
        dataset = self.dataset(spec) if dataset is None else dataset
        columns = list(dataset.schema.names if columns is None else columns)
        missing = [c for c in columns if c not in dataset.schema.names]
        if missing:
            raise RunUnreadable(f"run {self.run_id!r}: its {spec.name}/ files have no column "
                                f"{missing[0]!r} (written by an older evalbeam? run it again)")
        condition = ds.field("run_id") == self.run_id
        if where is not None:
            condition = condition & where
        try:  # the dataset opened its first file only; the others open here
            return dataset.to_table(columns=columns, filter=condition)
        except (OSError, pa.ArrowInvalid) as exc:
            raise self.unreadable(spec.name, exc) from None


def _open(path: str):
    return FileSystems.open(path, "application/octet-stream", CompressionTypes.UNCOMPRESSED)


@dataclass(frozen=True)
class _Tail:
    """A file's last bytes, read once: its `size` and its last len(data) bytes
    (all of them for a file of at most TAIL_BYTES)."""

    path: str
    size: int
    data: bytes

    @property
    def start(self) -> int:
        return self.size - len(self.data)

    def source(self) -> pa.NativeFile:
        """The file as pyarrow reads it: its end from these bytes, a byte
        before them from the file itself (opened at the first such read)."""
        if self.start == 0:
            return pa.BufferReader(self.data)
        return pa.PythonFile(_TailedFile(self), mode="r")


class _TailedFile(io.RawIOBase):
    """A file whose end is known (a _Tail): reads there cost nothing."""

    def __init__(self, tail: _Tail) -> None:
        super().__init__()
        self.tail, self.pos, self.rest = tail, 0, None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self.pos, os.SEEK_END: self.tail.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def readinto(self, buffer) -> int:
        n = max(0, min(len(buffer), self.tail.size - self.pos))
        at = self.pos - self.tail.start
        if at >= 0:
            chunk = self.tail.data[at:at + n]
        else:
            if self.rest is None:
                self.rest = _open(self.tail.path)
            self.rest.seek(self.pos)
            chunk = self.rest.read(n)
        buffer[:len(chunk)] = chunk
        self.pos += len(chunk)
        return len(chunk)

    def close(self) -> None:
        if self.rest is not None:
            self.rest.close()
        super().close()


def _read_tail(path: str) -> _Tail:
    """The file's last TAIL_BYTES (all of a smaller file), read through Beam's
    FileSystems: a seek and one read (on gs:// or s3:// the size their open
    asks for and one ranged read); a read more when its footer is longer."""
    with _open(path) as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - TAIL_BYTES))
        data = fh.read(size - max(0, size - TAIL_BYTES))
        if len(data) >= 8 and data.endswith(PARQUET_MAGIC):
            need = int.from_bytes(data[-8:-4], "little") + 8  # the footer, its length, PAR1
            if len(data) < need <= size:
                fh.seek(size - need)
                data = fh.read(need)
    return _Tail(path, size, data)


def _footer_rows(tail: _Tail) -> int:
    """The rows a whole Parquet file holds, from its footer (in `tail`, the
    file's end read once). ValueError when the footer places a column's pages
    outside the file's data or over another column's (or its data page before
    its dictionary), or its row groups hold other than its rows: pyarrow
    reads such a footer, and a reader of that column then fails with DuckDB's
    or pyarrow's own error."""
    meta = pq.ParquetFile(tail.source()).metadata
    data_end = tail.size - meta.serialized_size - 8  # the footer, its length, PAR1
    spans = []
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            start = (chunk.dictionary_page_offset if chunk.has_dictionary_page
                     else chunk.data_page_offset)
            end = start + chunk.total_compressed_size  # none: a row group of no row
            data = chunk.data_page_offset if group.num_rows else start  # 0 rows: no page
            named = f"column {chunk.path_in_schema[:100]!r} of row group {g}"
            if (group.num_rows or end != start) and not (
                    len(PARQUET_MAGIC) <= start <= data < end <= data_end):
                raise ValueError(f"it places {named} at bytes {start}-{end}, outside the "
                                 f"data's {len(PARQUET_MAGIC)}-{data_end}")
            if end != start:
                spans.append((start, end, named))
    spans.sort()
    for (_, end, named), (start, _, other) in zip(spans, spans[1:]):
        if start < end:
            raise ValueError(f"it places {other} over the bytes of {named}")
    held = sum(meta.row_group(g).num_rows for g in range(meta.num_row_groups))
    if held != meta.num_rows:
        raise ValueError(f"its row groups hold {held} rows, it counts {meta.num_rows}")
    return meta.num_rows


class _BeamFiles(pafs.FileSystemHandler):
    """pyarrow's read-only view of a URL scheme through Beam's FileSystems, so
    that a run's tables on s3:// or hdfs:// are read with the options the
    command was given (--s3_endpoint_url, --hdfs_host, ...) like its manifest:
    pyarrow's own S3 and HDFS clients know none of them (and HDFS's needs a
    local libhdfs)."""

    def __init__(self, scheme: str, tails: Mapping[str, _Tail] | None = None) -> None:
        self.scheme = scheme
        self.tails = dict(tails or {})  # path -> the end of the file, read by the check

    def _url(self, path: str) -> str:
        return f"{self.scheme}://{path}"

    def get_type_name(self) -> str:
        return f"beam-{self.scheme}"

    def equals(self, other) -> bool:
        return isinstance(other, _BeamFiles) and other.scheme == self.scheme

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths):
        infos = []
        for path in paths:
            if path in self.tails:  # its size known: no request
                infos.append(pafs.FileInfo(path, pafs.FileType.File, size=self.tails[path].size))
                continue
            found = FileSystems.match([self._url(path)])[0].metadata_list
            size = next((m.size_in_bytes for m in found if m.path == self._url(path)), None)
            infos.append(pafs.FileInfo(path, pafs.FileType.NotFound) if size is None else
                         pafs.FileInfo(path, pafs.FileType.File, size=size))
        return infos

    def open_input_file(self, path: str):
        if path in self.tails:  # its footer (a small file: all of it) already read
            return self.tails[path].source()
        return pa.PythonFile(_open(self._url(path)), mode="r")

    open_input_stream = open_input_file

    def _read_only(self, *args, **kwargs):
        raise NotImplementedError("a run's tables are read, never written, here")

    get_file_info_selector = create_dir = delete_dir = delete_dir_contents = \
        delete_root_dir_contents = delete_file = move = copy_file = open_output_stream = \
        open_append_stream = _read_only


def _arrow_paths(paths: Sequence[str], base: str, tails: Sequence[_Tail] = ()
                 ) -> tuple[pafs.FileSystem | None, list[str], str]:
    """Beam's filesystem (as pyarrow's) for URLs (gs://, s3://, hdfs://), which
    answers from `tails` (the files' ends, read by the check) what they hold:
    sizes, footers, and the whole of a small file; None for local paths."""
    if "://" not in base:
        return None, list(paths), base
    scheme, _, base_path = base.partition("://")
    filesystem = pafs.PyFileSystem(_BeamFiles(scheme, {
        t.path.partition("://")[2]: t for t in tails}))
    return filesystem, [p.partition("://")[2] for p in paths], base_path


def _why_not(output: str, run_id: str) -> str:
    """What the run id's lease says of an attempt that did not commit ("; attempt
    A failed: stopped by SIGTERM", "; attempt A is running"), so that a caller
    who reads a run that failed learns why ('' without a lease). An attempt
    killed before it could mark its lease (its process gone, its heartbeat
    older than its ttl) failed too, as `evalbeam status` says."""
    from transforms.publish.lease import read_lease, why_free
    try:
        lease = read_lease(output, run_id)
        why = lease and lease.state != "failed" and why_free(output, lease, None)
    except (OSError, ValueError):
        return ""
    if lease is None:
        return ""
    if lease.state == "failed":
        return f"; attempt {lease.attempt} failed: {lease.reason or 'no reason recorded'}"
    if why:
        return f"; attempt {lease.attempt} failed: {why}"
    return f"; attempt {lease.attempt} has its lease ({lease.state}, {lease.owner()})"


def read_completed_run(output: str, run_id: str) -> CompletedRun:
    """The run's committed attempt; NoCompletedAttempt when it has none (unknown,
    running, or killed before its commit), CorruptManifest, or RunUnreadable."""
    output = check_output(output)
    manifest = read_manifest(output, run_id)
    if manifest is None:
        raise NoCompletedAttempt(f"run {run_id} has no completed attempt under {output} (no "
                                 f"runs/{run_id}/{MANIFEST}{_why_not(output, run_id)}; see "
                                 "evalbeam status)")
    return CompletedRun(output, run_id, manifest)
