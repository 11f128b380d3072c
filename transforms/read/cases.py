"""ReadCases: Parquet file, folder or glob -> EvalCase | RowProblem.

The files are planned into shards (a file's row-group slice) when the graph is
built; the shards are distributed over workers and each is read in batches,
so the input is never held in memory at once and every worker gets a share.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, Mapping

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from schemas.cases import UNREADABLE, InputError, RowProblem, check_file_schema, to_case
from schemas.records import EvalCase

SHARD_ROWS = 5_000  # rows per shard: small enough to balance the workers
BATCH_ROWS = 2_048   # rows decoded at a time


@dataclass(frozen=True, slots=True)
class Shard:
    path: str
    row_group: int
    first_row: int   # index of the row group's first row within the file
    start: int       # slice of the row group, in rows
    stop: int


def list_input_files(pattern: str) -> list[str]:
    """A file, a folder (every *.parquet under it) or a glob; sorted; never empty."""
    if os.path.isdir(pattern):
        found = [os.path.join(root, name) for root, _, names in os.walk(pattern)
                 for name in names if name.endswith(".parquet") and not name.startswith((".", "_"))]
    elif os.path.isfile(pattern):  # a file named like a glob ("b[1].parquet") is that file
        found = [pattern]
    else:
        try:
            results = FileSystems.match([pattern])[0].metadata_list
        except Exception as exc:  # Beam raises BeamIOError with the details inside
            raise InputError(f"cannot list input {pattern}: {exc}") from None
        found = [m.path for m in results]
    if not found:
        raise InputError(f"no input files match {pattern}")
    return sorted(found)


def _open_parquet(path: str) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(FileSystems.open(path))
    except Exception as exc:
        raise InputError(f"cannot read {path} as Parquet: {exc}") from None


def plan_shards(pattern: str, columns: Mapping[str, str]) -> list[Shard]:
    """Check every file's schema (metadata only) and cut the files into shards."""
    shards: list[Shard] = []
    for path in list_input_files(pattern):
        pf = _open_parquet(path)
        check_file_schema(pf.schema_arrow, columns, path)
        first = 0
        for rg in range(pf.metadata.num_row_groups):
            n = pf.metadata.row_group(rg).num_rows
            for start in range(0, n, SHARD_ROWS):
                shards.append(Shard(path, rg, first, start, min(n, start + SHARD_ROWS)))
            first += n
    return shards


def read_shard_rows(shard: Shard, columns: Mapping[str, str]) -> Iterator[tuple[str, dict]]:
    """(source, raw row dict) for each row of the shard, decoded batch by batch.

    Every planned row comes out exactly once: a row with text that is not
    UTF-8 is marked (UNREADABLE) with its values decoded with replacement, and
    when the file cannot be decoded any further (a corrupt page) each remaining
    row of the shard is an UNREADABLE row, so the counts still reconcile."""
    done = shard.start  # rows of the row group handled so far
    try:
        pf = _open_parquet(shard.path)
        wanted = sorted(set(columns.values()) & set(pf.schema_arrow.names))
        offset = 0
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[shard.row_group],
                                     columns=wanted, use_threads=False):
            end = offset + batch.num_rows
            if end > shard.start and offset < shard.stop:
                lo, hi = max(shard.start - offset, 0), min(shard.stop, end) - offset
                for i, row in enumerate(_decode_rows(batch.slice(lo, hi - lo))):
                    yield f"{shard.path}#{shard.first_row + offset + lo + i}", row
                    done = offset + lo + i + 1
            offset = end
            if offset >= shard.stop:
                break
    except (OSError, InputError, pa.ArrowException) as exc:
        message = (f"cannot decode rows {shard.first_row + done}-{shard.first_row + shard.stop - 1}"
                   f" of {shard.path}: {exc}".replace("\n", " ")[:500])
        for row in range(done, shard.stop):
            yield f"{shard.path}#{shard.first_row + row}", {UNREADABLE: ("unreadable_rows",
                                                                          message)}


def _decode_rows(batch: pa.RecordBatch) -> list[dict]:
    """The batch as dicts; text that is not UTF-8 marks its row instead of
    failing the batch (pyarrow does not check UTF-8 when reading Parquet)."""
    try:
        return batch.to_pylist()
    except UnicodeDecodeError:
        pass
    rows: list[dict] = [{} for _ in range(batch.num_rows)]
    for name, column in zip(batch.schema.names, batch.columns):
        try:
            values = column.to_pylist()
        except UnicodeDecodeError:
            values = [_bytes_to_text(v) for v in column.cast(_as_binary(column.type)).to_pylist()]
            for row, value in zip(rows, values):
                if isinstance(value, _BadText) or (isinstance(value, list) and any(
                        isinstance(v, _BadText) for v in value)):
                    problem = row.get(UNREADABLE, ("invalid_utf8", ""))[1]
                    row[UNREADABLE] = ("invalid_utf8", (problem + "; " if problem else "")
                                       + f"column '{name}' is not valid UTF-8")
        for row, value in zip(rows, values):
            row[name] = value
    return rows


class _BadText(str):
    """Text decoded with replacement characters (its bytes were not UTF-8)."""


def _bytes_to_text(value):
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return _BadText(value.decode("utf-8", "replace"))
    if isinstance(value, list):
        return [_bytes_to_text(v) for v in value]
    return value


def _as_binary(t: pa.DataType) -> pa.DataType:
    """The same type with every string replaced by binary (to read undecodable text)."""
    if pa.types.is_string(t):
        return pa.binary()
    if pa.types.is_large_string(t):
        return pa.large_binary()
    if pa.types.is_list(t):
        return pa.list_(_as_binary(t.value_type))
    if pa.types.is_large_list(t):
        return pa.large_list(_as_binary(t.value_type))
    return t


class _ReadShardFn(beam.DoFn):
    PROBLEMS = "problems"

    def __init__(self, columns: Mapping[str, str]):
        self._columns = dict(columns)
        self._rows = beam.metrics.Metrics.counter("evalbeam", "input_rows")
        self._invalid = beam.metrics.Metrics.counter("evalbeam", "invalid_rows")

    def process(self, shard: Shard):
        for source, raw in read_shard_rows(shard, self._columns):
            self._rows.inc()
            result = to_case(raw, self._columns, source)
            if isinstance(result, RowProblem):
                self._invalid.inc()
                yield beam.pvalue.TaggedOutput(self.PROBLEMS, result)
            else:
                yield result


class ReadCases(beam.PTransform):
    """Shards -> valid EvalCases (main output) and RowProblems ('problems')."""

    def __init__(self, shards: list[Shard], columns: Mapping[str, str]):
        super().__init__()
        self._shards = shards
        self._columns = dict(columns)

    def expand(self, pbegin):
        return (pbegin
                | "Shards" >> beam.Create(self._shards, reshuffle=len(self._shards) > 1)
                | "Decode" >> beam.ParDo(_ReadShardFn(self._columns)).with_outputs(
                    _ReadShardFn.PROBLEMS, main="cases"))


def read_valid_cases(shard: Shard, columns: Mapping[str, str]) -> Iterator[EvalCase]:
    """A shard's valid cases, read again (the second passes over the input:
    corpus statistics, duplicate ids); invalid rows were reported by ReadCases."""
    for source, raw in read_shard_rows(shard, columns):
        case = to_case(raw, columns, source)
        if isinstance(case, EvalCase):
            yield case


def read_case_texts(shard: Shard, columns: Mapping[str, str]) -> Iterator[str]:
    """Every text of a shard's valid rows (question, answers, passages): the IDF corpus."""
    for case in read_valid_cases(shard, columns):
        yield case.question
        for text in (case.expected_answer, case.answer):
            if text:
                yield text
        yield from case.contexts or ()
