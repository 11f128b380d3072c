"""ReadCases: Parquet, JSON Lines, CSV or Hugging Face dataset (file, folder
or glob) -> EvalCase | RowProblem.

The files are planned into shards (a Parquet file's row-group slice; for the
other formats see transforms/read/formats.py) when the graph is built; the
shards are distributed over workers and each is read in batches, so the input
is never held in memory at once and every worker gets a share.
"""
from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from schemas.cases import (UNREADABLE, InputError, RowProblem, Source, candidates,
                          check_columns, shown_source, source_names, to_case)
from schemas.records import EvalCase
from transforms.read import formats
from transforms.read.presets import Unread, UnreadTally, suggest_preset
from transforms.text.wording import counted

SHARD_ROWS = 5_000  # rows per shard: small enough to balance the workers
BATCH_ROWS = 2_048   # rows decoded at a time


@dataclass(frozen=True, slots=True)
class Shard:
    path: str
    row_group: int   # Parquet: the row group; Arrow: the unit's first record batch
    first_row: int   # index of the unit's first row (record) within the file
    start: int       # slice of the unit, in rows
    stop: int
    format: str = "parquet"  # parquet | jsonl | csv | arrow
    offset: int = 0          # jsonl, csv, arrow: byte offset where the unit starts
    end: int | None = None   # jsonl, csv: byte offset where it ends (None: end of file)
    shown: str | None = None  # what errors/ sources name instead of the path (in-memory cases)


def _walk(folder: str, fmt: str | None, left_out: list[str] | None = None) -> list[str]:
    """Files of a folder in the format (or any known format); a Hugging Face
    dataset folder met on the way counts as its Arrow files. The files not
    read go to `left_out`, less the quiet ones (`_SUCCESS`, `.DS_Store`: a name
    starting with '.' or '_' and no case file's extension)."""
    found = []
    for root, dirs, names in os.walk(folder):
        if formats.is_hf_dataset(root) and fmt in (None, "hf"):
            found += formats.hf_data_files(root)
            dirs[:] = []
            continue
        if fmt in (None, "hf") and (why := formats.missing_hf_state(root, names)):
            raise InputError(why)
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for name in sorted(names):
            kind, hidden = formats.format_of(name), name.startswith((".", "_"))
            if not hidden and kind not in (None, "arrow") and fmt in (None, kind):
                found.append(os.path.join(root, name))
            elif left_out is not None and (kind is not None or not hidden):
                left_out.append(os.path.join(root, name))
    return found


def list_input_files(pattern: str, fmt: str | None = None,
                     left_out: list[str] | None = None) -> list[str]:
    """A file, a folder (every case file under it; a Hugging Face dataset
    folder) or a glob; sorted (a dataset's Arrow files in their order); never
    empty. A folder's files that are not read go to `left_out`."""
    if os.path.isdir(pattern):
        if _is_dataset(pattern):
            return formats.hf_dataset_files(pattern)
        found = _walk(pattern, fmt, left_out)
        if not found:
            raise InputError(_no_case_files(pattern, fmt))
    elif os.path.isfile(pattern):  # a file named like a glob ("b[1].parquet") is that file
        found = [pattern]
    else:
        try:
            results = FileSystems.match([pattern])[0].metadata_list
        except Exception as exc:  # Beam raises BeamIOError with the details inside
            raise InputError(f"cannot list input {pattern}: {exc}") from None
        found = [m.path for m in results]
        found += [f for folder in _matched_folders(pattern)
                  for f in _folder_files(folder, fmt, left_out)]
    if not found:
        raise InputError(f"no input files match {pattern}")
    return sorted(set(found))


def _folder_files(folder: str, fmt: str | None, left_out: list[str] | None = None) -> list[str]:
    """A folder's case files: a dataset's Arrow files in their order, or every case
    file below it (possibly none)."""
    return (formats.hf_dataset_files(folder) if _is_dataset(folder)
            else _walk(folder, fmt, left_out))


def left_out_note(files: list[str]) -> str:
    """The note that names a folder's files the run does not read (a case file
    saved as .tsv or .xlsx beside the others would be left out without a word)."""
    shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    return (f"{counted(len(files), 'file')} in the input folder "
            f"{'is' if len(files) == 1 else 'are'} not read (a folder is read by its files' "
            f"extensions, and skips names that start with '.' or '_'): {shown}")


def _is_dataset(folder: str) -> bool:
    """A Hugging Face Dataset or DatasetDict folder."""
    return formats.is_hf_dataset(folder) or os.path.isfile(os.path.join(folder, formats.HF_DICT))


def _no_case_files(folder: str, fmt: str | None) -> str:
    """Why a folder gave no input, and how to read the files it holds: input.format
    does not make a folder's other files case files (a README would be read as
    JSON), a glob naming them does."""
    if fmt == "hf":
        return f"no Hugging Face dataset ({formats.HF_STATE}) in the folder {folder}"
    wanted = sorted(e for e, f in formats.EXTENSIONS.items() if fmt in (None, f))
    said = (f"no case files in the folder {folder}: a folder is read by its files' "
            f"extensions ({', '.join(wanted)})")
    others = sorted({os.path.splitext(n)[1] for _, _, names in os.walk(folder)
                     for n in names if not n.startswith((".", "_"))} - {""})
    if others:
        said += (f"; to read files named otherwise, give a glob such as "
                 f"{os.path.join(folder, '*' + others[0])}"
                 + ("" if fmt else " and set input.format"))
    return said


def _matched_folders(pattern: str) -> list[str]:
    """The local folders a glob matches, read as if each were given: Beam's match
    lists files only, so `data/*` passed over a dataset folder beside the files."""
    if "://" in pattern:
        return []
    return sorted(p for p in glob.glob(pattern) if os.path.isdir(p)
                  and not os.path.basename(p).startswith((".", "_")))  # as a folder's walk


def file_format(path: str, declared: str | None) -> str:
    """`input.format` when given (hf: the Arrow files), else the file's extension."""
    if declared == "hf" or (declared is None and path.lower().endswith(".arrow")):
        return "arrow"
    fmt = declared or formats.format_of(path)
    if fmt is None:
        raise InputError(f"{path}: unknown input format (extensions: "
                         f"{', '.join(sorted(formats.EXTENSIONS))}; or set input.format to "
                         f"one of {', '.join(formats.FORMATS)})")
    return fmt


def _open_parquet(path: str) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(FileSystems.open(path))
    except Exception as exc:
        raise InputError(f"cannot read {path} as Parquet: {exc}") from None


def _slices(n: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, SHARD_ROWS):
        yield start, min(n, start + SHARD_ROWS)


def repeated_column(names, columns: Mapping[str, Source]) -> tuple[str, int] | None:
    """(name, times) of a column the run reads that the file's header names more
    than once: the reader would keep one of them without a word."""
    listed = list(names)
    for name in sorted(source_names(columns)):
        if listed.count(name) > 1:
            return name, listed.count(name)
    return None


def _squashed(name: str) -> str:
    """A column name less the ways people vary it: case, spaces, `_`, `-`, `.`."""
    return re.sub(r"[\s_.-]+", "", name.casefold())


def misnamed_columns(names, columns: Mapping[str, Source]) -> list[str]:
    """Hints for columns the run reads that the file has only under another
    spelling (`QUESTION`, `Expected Answer`): names are matched exactly, so an
    optional one would be left out without a word."""
    listed = [n for n in names if isinstance(n, str)]
    hints = []
    for col, src in columns.items():
        wanted = {_squashed(c) for c in candidates(src) if type(c) is str}
        if not wanted or set(listed) & set(candidates(src)):
            continue
        found = next((n for n in listed if _squashed(n) in wanted), None)
        if found is not None:
            reads = shown_source(src) if src == col else f"{col} from {shown_source(src)}"
            hints.append(f"the column {found!r} is not read (names are matched exactly; the run "
                         f"reads {reads}): rename it, or set input.columns: {{{col}: {found}}}")
    return hints


def _check(names, columns: Mapping[str, Source], path: str, notes: list[str] | None) -> None:
    """The required columns are there, and none the run reads is there twice;
    columns that look like another tool's, or like a column the run reads
    spelt otherwise, get a hint (in the error, or as a note of the run)."""
    repeated = repeated_column(names, columns)
    if repeated:
        raise InputError(f"{path}: column {repeated[0]!r} appears {repeated[1]} times; "
                         "rename or remove all but one")
    hints = [*filter(None, [suggest_preset(names, columns)]), *misnamed_columns(names, columns)]
    try:
        check_columns(names, columns, path)
    except InputError as exc:
        raise InputError("; ".join([str(exc), *hints])) from None
    for hint in hints if notes is not None else ():
        if hint not in notes:
            notes.append(hint)


def _plan_parquet(path: str, columns: Mapping[str, Source], notes=None,
                  tally: UnreadTally | None = None) -> list[Shard]:
    pf = _open_parquet(path)
    _check(pf.schema_arrow.names, columns, path, notes)
    if tally is not None:
        _tally_parquet(pf, tally)
    shards, first = [], 0
    for rg in range(pf.metadata.num_row_groups):
        n = pf.metadata.row_group(rg).num_rows
        shards += [Shard(path, rg, first, a, b) for a, b in _slices(n)]
        first += n
    return shards


def _tally_parquet(pf: pq.ParquetFile, tally: UnreadTally) -> None:
    """The unread fields' columns only (Parquet reads by column): a file
    without them costs its row count."""
    u = tally.unread
    names = set(u.fields) | set(u.assertions) | ({"turns"} if u.turn_fields else set())
    wanted = sorted(names & set(pf.schema_arrow.names))
    if not wanted:
        tally.rows += pf.metadata.num_rows
        return
    for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=wanted, use_threads=False):
        for row in _decode_rows(batch):
            tally.add(row)


def _plan_text(path: str, fmt: str, columns: Mapping[str, Source], notes=None,
               tally: UnreadTally | None = None) -> list[Shard]:
    """JSONL or CSV: shards of SHARD_ROWS records between record boundaries."""
    try:
        formats.check_utf8_text(path, formats.FORMAT_NAMES[fmt])
        if fmt == "jsonl":
            pieces, sample = formats.scan_jsonl(path, SHARD_ROWS, tally and tally.add_line)
            if formats.holds_json_array(sample):
                raise InputError(f"{path} holds a JSON array of cases, not JSON Lines (one "
                                 "object per line): name it .json, or set input.format: json")
            keys = formats.jsonl_keys(sample)
            if sample and not keys:
                raise InputError(f"cannot read {path} as JSON Lines: none of its first "
                                 f"{counted(len(sample), 'line')} is a JSON object")
            if sample:
                _check(keys, columns, f"{path} (first {len(sample)} records)", notes)
        else:
            header, pieces = formats.scan_csv(path, SHARD_ROWS, tally and tally.add)
            if header or pieces:  # a 0-byte file: 0 rows, as an empty JSON Lines file
                _check(header, columns, path, notes)
    except (OSError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"cannot read {path} as {fmt.upper()}: {exc}") from None
    shards, first = [], 0
    for offset, end, n in pieces:
        shards.append(Shard(path, 0, first, 0, n, fmt, offset, end))
        first += n
    return shards


def _plan_json(path: str, fmt: str, columns: Mapping[str, Source], notes=None,
               tally: UnreadTally | None = None) -> list[Shard]:
    records = formats.load_records(path, fmt)
    for record in records if tally is not None else ():
        tally.add(record)
    keys = {k for r in records[:formats.SCHEMA_SAMPLE] if isinstance(r, dict) for k in r}
    if records:
        _check(keys, columns, path, notes)
    return [Shard(path, 0, 0, 0, len(records), fmt)] if records else []


def _plan_arrow(path: str, columns: Mapping[str, Source], notes=None,
                tally: UnreadTally | None = None) -> list[Shard]:
    """Runs of consecutive record batches of about SHARD_ROWS rows."""
    schema, batches = formats.scan_arrow(path)
    _check(schema.names, columns, path, notes)
    if tally is not None:  # a Hugging Face dataset: not a tool's file, but its rows count
        tally.rows += sum(n for _, n in batches)
    shards, first, i = [], 0, 0
    while i < len(batches):
        j, rows = i + 1, batches[i][1]
        while j < len(batches) and rows + batches[j][1] <= SHARD_ROWS:
            rows += batches[j][1]
            j += 1
        shards += [Shard(path, i, first, a, b, "arrow", batches[i][0]) for a, b in _slices(rows)]
        first, i = first + rows, j
    return shards


def plan_shards(pattern: str, columns: Mapping[str, Source], fmt: str | None = None,
                notes: list[str] | None = None, unread: Unread | None = None) -> list[Shard]:
    """Check every file's columns and cut the files into shards: Parquet from its
    metadata, Arrow from its message headers, JSONL and CSV in one pass each.
    Hints for the user (a preset that fits the columns; the rows with values
    in the preset's `unread` fields, counted in that same pass, as a JSON file
    is loaded whole for it anyway) go to `notes`."""
    shards: list[Shard] = []
    tally = UnreadTally(unread.without(source_names(columns))) if unread and notes is not None \
        else None
    left_out: list[str] = []
    for path in list_input_files(pattern, fmt, left_out):
        kind = file_format(path, fmt)
        if kind == "parquet":
            shards += _plan_parquet(path, columns, notes, tally)
        elif kind == "arrow":
            shards += _plan_arrow(path, columns, notes, tally)
        elif kind in formats.WHOLE_FILE_FORMATS:
            shards += _plan_json(path, kind, columns, notes, tally)
        else:
            shards += _plan_text(path, kind, columns, notes, tally)
    if tally is not None:
        notes += [n for n in tally.notes() if n not in notes]
    if left_out and notes is not None:
        notes.append(left_out_note(left_out))
    return shards


def _parquet_rows(shard: Shard, wanted_names: set[str]) -> Iterator[dict]:
    pf = _open_parquet(shard.path)
    wanted = sorted(wanted_names & set(pf.schema_arrow.names))
    return _sliced(pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[shard.row_group],
                                   columns=wanted, use_threads=False), shard)


def _sliced(batches, shard: Shard) -> Iterator[dict]:
    """Rows [start, stop) of a unit read batch by batch."""
    offset = 0
    for batch in batches:
        end = offset + batch.num_rows
        if end > shard.start and offset < shard.stop:
            lo, hi = max(shard.start - offset, 0), min(shard.stop, end) - offset
            yield from _decode_rows(batch.slice(lo, hi - lo))
        offset = end
        if offset >= shard.stop:
            break


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


def _shard_records(shard: Shard, columns: Mapping[str, Source]) -> Iterator[Any]:
    names = source_names(columns)
    if shard.format == "parquet":
        return _parquet_rows(shard, names)
    if shard.format == "arrow":
        return _sliced(formats.read_arrow(shard.path, shard.offset, sorted(names)), shard)
    if shard.format == "jsonl":
        return formats.read_jsonl(shard.path, shard.offset, shard.end, names)
    if shard.format in formats.WHOLE_FILE_FORMATS:
        return formats.read_json(shard.path, shard.format)
    return formats.read_csv(shard.path, shard.offset, shard.end, columns)


def read_shard_rows(shard: Shard, columns: Mapping[str, Source]
                    ) -> Iterator[tuple[str, dict | RowProblem]]:
    """(source, raw row dict) for each row of the shard, decoded batch by batch;
    a record that cannot be decoded at all (JSONL, CSV) comes as a RowProblem."""
    n = 0  # rows yielded so far
    try:
        for i, record in enumerate(_shard_records(shard, columns)):
            if i >= shard.stop - shard.start:
                return
            source = f"{shard.shown or shard.path}#{shard.first_row + shard.start + i}"
            if isinstance(record, tuple):
                yield source, RowProblem(source, None, *record)
            else:
                yield source, record
            n = i + 1
        return
    except (OSError, InputError, pa.ArrowException) as exc:
        # a corrupt page: every remaining row of the shard is an error row, so
        # the counts still reconcile and the run goes on
        done = shard.start + n
        message = (f"cannot decode rows {shard.first_row + done}-"
                   f"{shard.first_row + shard.stop - 1} of {shard.path}: {exc}"
                   ).replace("\n", " ")[:500]
        for row in range(done, shard.stop):
            yield (f"{shard.shown or shard.path}#{shard.first_row + row}",
                   {UNREADABLE: ("unreadable_rows", message)})


class _ReadShardFn(beam.DoFn):
    PROBLEMS = "problems"

    def __init__(self, columns: Mapping[str, Source]):
        self._columns = dict(columns)
        self._rows = beam.metrics.Metrics.counter("evalbeam", "input_rows")
        self._invalid = beam.metrics.Metrics.counter("evalbeam", "invalid_rows")

    def process(self, shard: Shard):
        for source, raw in read_shard_rows(shard, self._columns):
            self._rows.inc()
            result = raw if isinstance(raw, RowProblem) else to_case(raw, self._columns, source)
            if isinstance(result, RowProblem):
                self._invalid.inc()
                yield beam.pvalue.TaggedOutput(self.PROBLEMS, result)
            else:
                yield result


class ReadCases(beam.PTransform):
    """Shards -> valid EvalCases (main output) and RowProblems ('problems')."""

    def __init__(self, shards: list[Shard], columns: Mapping[str, Source]):
        super().__init__()
        self._shards = shards
        self._columns = dict(columns)

    def expand(self, pbegin):
        return (pbegin
                | "Shards" >> beam.Create(self._shards, reshuffle=len(self._shards) > 1)
                | "Decode" >> beam.ParDo(_ReadShardFn(self._columns)).with_outputs(
                    _ReadShardFn.PROBLEMS, main="cases"))


def read_valid_cases(shard: Shard, columns: Mapping[str, Source]) -> Iterator[EvalCase]:
    """A shard's valid cases, read again (the corpus statistics' pass over the
    input); invalid rows were reported by ReadCases."""
    for source, raw in read_shard_rows(shard, columns):
        case = None if isinstance(raw, RowProblem) else to_case(raw, columns, source)
        if isinstance(case, EvalCase):
            yield case
