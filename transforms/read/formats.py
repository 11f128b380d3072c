"""Input formats beside Parquet: JSON Lines, CSV and Hugging Face datasets.

Each format is planned into the same shards as Parquet (`Shard`, a slice of
at most SHARD_ROWS records that one worker reads), so big inputs spread over
the workers and the second passes (corpus statistics, duplicate ids) re-read
a shard exactly as the first did:

* JSON Lines (`.jsonl`, `.ndjson`): one planning pass finds where every
  SHARD_ROWS-th record starts; a shard is a byte range [offset, end) that
  starts and ends at a line boundary. A JSON text never holds a raw newline,
  so every newline ends a record. Blank lines are not records.
  `.jsonl.gz` cannot be split: one shard per file.
* CSV: the planning pass runs Python's csv parser, so a quoted field holding
  newlines stays inside its record and shards are cut only between records
  (a safe boundary by construction). A shard re-reads the header first.
* Hugging Face datasets saved with `save_to_disk`: a folder with state.json
  and data-*.arrow files, each an Arrow IPC stream. The planning pass reads
  the stream's message headers and notes where each record batch starts; a
  shard is a run of consecutive batches, read from its offset.

Every record keeps its place as `file#row` (0-based record index, as for
Parquet) and the planned row count is exact, so the manifest reconciles.
"""
from __future__ import annotations

import codecs
import csv
import gzip
import json
import os
from typing import IO, Any, Callable, Collection, Iterator, Mapping

import pyarrow as pa
import pyarrow.ipc as ipc
from apache_beam.io.filesystems import CompressionTypes, FileSystems

from schemas.cases import UNREADABLE, InputError, Source, TooDeep, candidates, parse_text_list
from schemas.messages import json_kind
from transforms.read import json_records
from transforms.text.wording import counted

FORMATS = ("parquet", "jsonl", "csv", "hf", "json", "yaml")
FORMAT_NAMES = {"parquet": "Parquet", "jsonl": "JSON Lines", "csv": "CSV", "json": "JSON",
                "yaml": "YAML", "hf": "Hugging Face dataset folder (Dataset.save_to_disk)"}
EXTENSIONS = {".parquet": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".jsonl.gz": "jsonl",
              ".ndjson.gz": "jsonl", ".csv": "csv", ".csv.gz": "csv", ".json": "json",
              ".yaml": "yaml", ".yml": "yaml"}
WHOLE_FILE_FORMATS = ("json", "yaml")  # read whole: one shard per file
csv.field_size_limit(2**31 - 1)  # long contexts: the default limit is 128 KiB per field
HF_STATE = "state.json"
HF_DICT = "dataset_dict.json"
HF_INFO = "dataset_info.json"
SCHEMA_SAMPLE = 100  # JSONL records whose keys decide whether a required column exists
# Columns whose CSV cell may hold a JSON array (the CSV convention for lists);
# contexts and tags accept JSON text anyway (schemas.cases).
JSON_CELL_COLUMNS = ("expected_answer", "messages", "question")


def format_of(path: str) -> str | None:
    """The format a file's name says, or None."""
    name = path.lower()
    for ext in sorted(EXTENSIONS, key=len, reverse=True):
        if name.endswith(ext):
            return EXTENSIONS[ext]
    if name.endswith(".arrow"):
        return "arrow"
    return None


def is_hf_dataset(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, HF_STATE))


def missing_hf_state(folder: str, names: list[str]) -> str | None:
    """Why a folder that save_to_disk wrote (dataset_info.json beside Arrow files)
    cannot be read, when its state.json is gone: without it, it is a folder of
    files, and its dataset_info.json would be refused as a JSON input of cases."""
    if HF_STATE in names or HF_INFO not in names or not any(n.endswith(".arrow") for n in names):
        return None
    return (f"{folder} holds a Hugging Face dataset's {HF_INFO} and Arrow files but no "
            f"{HF_STATE}, which save_to_disk writes beside them to list its data files: "
            f"copy the whole folder, {HF_STATE} included")


def check_inside(folder: str, name: Any, what: str) -> None:
    """A file name a dataset's own JSON gives must stay in the dataset's folder:
    no absolute path, no folder part, no '..' (a crafted state.json must not
    make the run read files elsewhere)."""
    if (not isinstance(name, str) or not name or name in (".", "..") or os.path.isabs(name)
            or os.path.basename(name) != name or "\\" in name or "\x00" in name):
        raise InputError(f"{folder}: {what} names {str(name)[:200]!r}, not a file of the "
                         "dataset's own folder; refused")


def hf_data_files(folder: str) -> list[str]:
    """The Arrow files of a save_to_disk folder, in the dataset's order."""
    try:
        with open(os.path.join(folder, HF_STATE), encoding="utf-8") as fh:
            state = json.load(fh)
        names = [f["filename"] for f in state.get("_data_files") or []]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{folder}: unreadable {HF_STATE} of a Hugging Face dataset: "
                         f"{exc}") from None
    for name in names:
        check_inside(folder, name, f"{HF_STATE} _data_files")
    if not names:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".arrow"))
    missing = [n for n in names if not os.path.isfile(os.path.join(folder, n))]
    if missing or not names:
        raise InputError(f"{folder}: Hugging Face dataset without its data file "
                         f"{missing[0] if missing else 'data-*.arrow'}")
    return [os.path.join(folder, n) for n in names]


def hf_dataset_files(folder: str) -> list[str]:
    """A dataset folder, or a DatasetDict folder (every split, in its order)."""
    if is_hf_dataset(folder):
        return hf_data_files(folder)
    try:
        with open(os.path.join(folder, HF_DICT), encoding="utf-8") as fh:
            splits = json.load(fh).get("splits") or []
    except (OSError, ValueError, AttributeError) as exc:
        raise InputError(f"{folder}: unreadable {HF_DICT} of a Hugging Face dataset: "
                         f"{exc}") from None
    for split in splits:
        check_inside(folder, split, f"{HF_DICT} splits")
    return [f for split in splits for f in hf_data_files(os.path.join(folder, split))]


# ------------------------------------------------------------------ JSON Lines

class _Gunzip(gzip.GzipFile):
    """A .gz file's bytes that say when its stream ends early (a download or copy
    cut short): Beam's decompression stops there without a word, and the rows
    after it were gone unsaid. Closes the file it reads."""

    def __init__(self, raw: IO[bytes]):
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def read(self, size: int = -1) -> bytes:
        return self._whole(super().read, size)

    def readline(self, size: int = -1) -> bytes:
        return self._whole(super().readline, size)

    @staticmethod
    def _whole(read: Callable[[int], bytes], size: int) -> bytes:
        try:
            return read(size)
        except EOFError:
            raise OSError("the file is truncated: its gzip stream ends early") from None

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def _open(path: str) -> IO[bytes]:
    """The file's bytes (decompressed for .gz), through Beam's filesystems."""
    if CompressionTypes.detect_compression_type(path) == CompressionTypes.GZIP:
        return _Gunzip(FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED))
    return FileSystems.open(path, compression_type=CompressionTypes.AUTO)


def splittable(path: str) -> bool:
    """A compressed file (gzip, bzip2, ...) is read from its start: one shard."""
    return CompressionTypes.detect_compression_type(path) == CompressionTypes.UNCOMPRESSED


def _lines(fh: IO[bytes], offset: int = 0, end: int | None = None) -> Iterator[bytes]:
    """The lines of [offset, end) (end None: to the end of the stream)."""
    if offset:
        fh.seek(offset)
    pos = offset
    for line in iter(fh.readline, b""):  # Beam's compressed files are not iterable
        if end is not None and pos >= end:
            break
        pos += len(line)
        yield line


def _record(line: bytes) -> bytes:
    """A line without a leading UTF-8 byte-order mark (Notepad, PowerShell; in
    files joined with `cat`, at the start of every part)."""
    return line[3:] if line.startswith(codecs.BOM_UTF8) else line


# Binary files that get named (or declared) as CSV or JSON Lines, by their first bytes.
BINARY_STARTS = ((b"PAR1", "a Parquet file"), (b"ARROW1", "an Arrow file"),
                 (b"\xff\xff\xff\xff", "an Arrow stream"),
                 (b"PK\x03\x04", "a zip archive (an Excel workbook? save it as CSV UTF-8)"),
                 (b"\x1f\x8b", "gzip-compressed (name it {name}.gz)"))


def wide_unicode(head: bytes) -> str | None:
    """'UTF-16' or 'UTF-32' when a text file's first bytes say so (a byte-order
    mark, or the NUL bytes of ASCII in those encodings), else None. Excel's
    'Unicode text' and Windows PowerShell write UTF-16; read as UTF-8, its header
    became NUL-riddled column names and its lines no JSON at all."""
    encoding = json.detect_encoding(head)
    return None if encoding.startswith("utf-8") else encoding[:6].upper()


def binary_kind(head: bytes, name: str) -> str | None:
    """What a file that is not text is, from its first bytes (None: text)."""
    return next((what.format(name=name) for start, what in BINARY_STARTS
                 if head.startswith(start)), None)


def check_utf8_text(path: str, what: str) -> None:
    """InputError in one line when a CSV or JSON Lines file is UTF-16 or UTF-32
    text, or not text at all (read as text, either became a 'missing column'
    error whose 'columns present' were a screenful of bytes)."""
    with _open(path) as fh:
        head = fh.read(8)
    kind = binary_kind(head, os.path.basename(path))
    if kind:
        raise InputError(f"{path} is {kind}, not {what} text")
    encoding = wide_unicode(head[:4])
    if encoding:
        raise InputError(f"{path} is {encoding} text; evalbeam reads {what} as UTF-8: "
                         f"convert it (e.g. iconv -f {encoding} -t UTF-8)")


def scan_jsonl(path: str, shard_rows: int, each: Callable[[bytes], None] | None = None
               ) -> tuple[list[tuple[int, int | None, int]], list]:
    """One pass: ([(offset, end, records)] cut every shard_rows records, the
    first parsed records for the schema check); `each` sees every record."""
    can_split = splittable(path)
    pieces, start, count, pos, sample = [], 0, 0, 0, []
    with _open(path) as fh:
        for line in _lines(fh):
            if _record(line).strip():
                if count == shard_rows and can_split:
                    pieces.append((start, pos, count))
                    start, count = pos, 0
                count += 1
                if len(sample) < SCHEMA_SAMPLE:
                    sample.append(_record(line))
                if each is not None:
                    each(_record(line))
            pos += len(line)
    pieces.append((start, None, count))
    return [p for p in pieces if p[2]], sample


def holds_json_array(sample: list[bytes]) -> bool:
    """Does a JSON Lines file hold one JSON array of objects instead (a .json file's
    content, pretty-printed or on one line)? Read as lines, its cases were lost
    or split into invalid_json rows."""
    first = sample[0].strip() if sample else b""
    if first == b"[":
        return True
    if not first.startswith(b"["):
        return False
    try:
        value = json_records.loads(first.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def jsonl_keys(sample: list[bytes]) -> set[str]:
    keys: set[str] = set()
    for line in sample:
        try:
            obj = json_records.loads(line.decode("utf-8"))
        except ValueError:
            continue
        if isinstance(obj, dict):
            keys.update(obj)
    return keys


def repeated_key(text: str, keys: Mapping[str, str]) -> tuple[str, int] | None:
    """(key, times) of a key the run reads that the line's object gives more than
    once: json keeps the last without a word (a header naming a read column
    twice is refused for the same reason). `keys`: each name and its JSON text;
    the line is parsed again only when one's text is there twice."""
    if not any(text.count(quoted) > 1 for quoted in keys.values()):
        return None
    try:
        pairs = json.loads(text, object_pairs_hook=lambda p: p)
    except RecursionError:  # too deep to parse again: its keys are not checked
        return None
    given = [k for k, _ in pairs]
    return next(((n, given.count(n)) for n in sorted(keys) if given.count(n) > 1), None)


def parse_jsonl_record(line: bytes, keys: Mapping[str, str] | None = None
                       ) -> dict | tuple[str, str]:
    """A record's object, or (error_type, message)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "invalid_encoding", f"the line is not valid UTF-8 (byte {exc.start})"
    try:
        obj = json_records.loads(text)
    except ValueError as exc:
        return "invalid_json", f"the line is not valid JSON: {exc}"[:300]
    if isinstance(obj, TooDeep):
        return "invalid_json", "the line nests too deeply to read as JSON"
    if not isinstance(obj, dict):
        return "invalid_json", f"the line is a JSON {json_kind(obj)}, not an object"
    repeated = repeated_key(text, keys or {})
    if repeated:
        return "invalid_json", (f"the key {repeated[0]!r} appears {repeated[1]} times in the "
                                "line, and only one can be read: keep one")
    return obj


def read_jsonl(path: str, offset: int, end: int | None, names: Collection[str] = ()
               ) -> Iterator[dict | tuple[str, str]]:
    """The records of [offset, end); `names`: the keys the run reads (checked
    for repeats)."""
    keys = {n: json.dumps(n, ensure_ascii=False) for n in names}
    with _open(path) as fh:
        for line in _lines(fh, offset, end):
            if _record(line).strip():
                yield parse_jsonl_record(_record(line), keys)


# ------------------------------------------------------------- JSON (an array)

def holds_json_lines(text: str) -> bool:
    """Does a .json file hold JSON Lines (its first line one whole object), as
    datasets' to_json, Spark's write.json and pandas' to_json(lines=True) write
    it? Read whole, it is 'Extra data' or one object, not an array of cases."""
    first = text.lstrip("\ufeff \t\r\n").split("\n", 1)[0].strip()
    if not first.startswith("{"):
        return False
    try:
        obj = json_records.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and not wraps_records(obj)


def wraps_records(obj: dict) -> bool:
    """A one-line object that holds its cases rather than being one ({"cases":
    [{...}, ...]}, or nested too deeply to read): a case's lists hold texts
    (contexts, tags), never objects or lists."""
    return any(isinstance(v, TooDeep) or (isinstance(v, list) and any(
        isinstance(x, (dict, list, TooDeep)) for x in v)) for v in obj.values())


def load_json_records(path: str) -> list:
    """A .json file holding an array of objects (DeepEval's save_as("json")):
    read whole, so one shard per file; JSON Lines is the splittable form."""
    text = ""
    try:
        with _open(path) as fh:
            raw = fh.read()
        text = raw.decode(json.detect_encoding(raw))
        data = json_records.loads(text, levels=2)
    except (UnicodeDecodeError, ValueError) as exc:
        data = exc
    if not isinstance(data, list) and holds_json_lines(text):
        raise InputError(f"{path} holds JSON Lines (one object per line), not a JSON array "
                         "of cases: name it .jsonl, or set input.format: jsonl")
    if isinstance(data, Exception):
        raise InputError(f"cannot read {path} as JSON: {data}"[:300]) from None
    if not isinstance(data, list):
        what = "JSON nested too deeply" if isinstance(data, TooDeep) else f"a JSON {json_kind(data)}"
        raise InputError(f"{path}: a JSON input must be an array of objects (one per case), "
                         f"got {what}")
    return data


def load_yaml_records(path: str) -> list:
    """A YAML file of cases: a list of objects, or promptfoo's tests (a
    promptfooconfig.yaml, whose `tests:` list is read, each test's `vars` and
    `assert` completed from `defaultTest`'s, as promptfoo does)."""
    import yaml
    try:
        with _open(path) as fh:
            data = yaml.safe_load(fh.read().decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError) as exc:
        raise InputError(f"cannot read {path} as YAML: {_yaml_problem(exc)}"[:300]) from None
    _check_aliases(path, data)
    if data is None:
        raise InputError(f"{path}: the YAML file holds no cases (it is empty)")
    if isinstance(data, dict) and ("tests" in data or "scenarios" in data):
        return _promptfoo_tests(path, data)
    if not isinstance(data, list):
        raise InputError(f"{path}: a YAML input must be a list of cases (or a promptfoo "
                         f"config with a tests: list), got {type(data).__name__}")
    return data


# values a YAML document may hold once its aliases are expanded, beyond its own
# (a "billion laughs" of aliases of aliases would hang the read or eat memory)
MAX_ALIAS_GROWTH = 1_000_000


def _check_aliases(path: str, data: Any) -> None:
    """An InputError when aliases (`*name`) make the document refer to itself,
    or expand it by more than MAX_ALIAS_GROWTH values. PyYAML shares an aliased
    value, so sizes are counted once per distinct value."""
    sizes: dict[int, int] = {}
    distinct = 0
    stack: list[tuple[Any, bool]] = [(data, False)]
    open_ids: set[int] = set()
    while stack:
        value, done = stack.pop()
        if not isinstance(value, (list, dict)):
            continue
        key = id(value)
        items = list(value.values()) + list(value) if isinstance(value, dict) else value
        if done:
            open_ids.discard(key)
            sizes[key] = 1 + sum(sizes.get(id(v), 1) for v in items)
            continue
        if key in open_ids:
            raise InputError(f"{path}: a YAML alias refers to a value that holds it")
        if key in sizes:
            continue
        distinct += 1 + len(items)
        open_ids.add(key)
        stack.append((value, True))
        stack.extend((v, False) for v in items)
    if sizes.get(id(data), 1) > distinct + MAX_ALIAS_GROWTH:
        raise InputError(f"{path}: YAML aliases expand it to {sizes[id(data)]:,} values "
                         f"(more than {MAX_ALIAS_GROWTH:,} beyond the file's own); "
                         "write the values out or use fewer aliases")


def _yaml_problem(exc: Exception) -> str:
    """What is wrong and where (PyYAML's message spans several lines)."""
    problem, mark = getattr(exc, "problem", None), getattr(exc, "problem_mark", None)
    if not problem:
        return " ".join(str(exc).split())
    return f"{problem}" + (f" (line {mark.line + 1}, column {mark.column + 1})" if mark else "")


def _promptfoo_tests(path: str, config: dict) -> list:
    tests, default = config.get("tests"), config.get("defaultTest") or {}
    refs = [t for t in (tests if isinstance(tests, list) else [tests]) if isinstance(t, str)]
    if refs:
        raise InputError(f"{path}: tests: refers to {refs[0]!r}; give that file as the "
                         "input (promptfoo's CSV, JSON Lines or YAML tests load with "
                         "input.preset: promptfoo)")
    if config.get("scenarios"):
        raise InputError(f"{path}: scenarios: is not read (promptfoo runs each scenario's "
                         "config with its tests): write those cases under tests:, one per "
                         "combination, or give them as their own tests file")
    if isinstance(default, str):
        raise InputError(f"{path}: defaultTest: refers to {default[:80]!r}; write its vars "
                         "and assert in the config (evalbeam does not load that file)")
    if not isinstance(tests, list) or not isinstance(default, dict):
        raise InputError(f"{path}: tests: must be a list of tests and defaultTest a mapping")
    shared_vars = default.get("vars") if isinstance(default.get("vars"), dict) else {}
    shared_asserts = _assertions(default.get("assert"))
    shared_meta = default.get("metadata") if isinstance(default.get("metadata"), dict) else {}
    out = []
    for test in tests:
        if isinstance(test, dict):
            test = {**test, "vars": _merged(shared_vars, test.get("vars")),
                    "assert": [*shared_asserts, *_assertions(test.get("assert"))]}
            if shared_meta or "metadata" in test:
                test["metadata"] = _merged(shared_meta, test.get("metadata"))
        out.append(test)
    return out


def _merged(shared: dict, given: Any) -> Any:
    """A test's vars or metadata over defaultTest's, as promptfoo merges them; a
    value that is not a mapping stays as it is (its row says what is wrong)."""
    if isinstance(given, dict):
        return {**shared, **given}
    return given if given is not None else dict(shared)


def _assertions(value: Any) -> list:
    """A test's assert as a list: one mapping is a list of one; anything else
    (a number, a string) holds no assertion evalbeam reads."""
    return value if isinstance(value, list) else [value] if isinstance(value, dict) else []


def load_records(path: str, fmt: str) -> list:
    return load_yaml_records(path) if fmt == "yaml" else load_json_records(path)


def read_json(path: str, fmt: str = "json") -> Iterator[dict | tuple[str, str]]:
    for item in load_records(path, fmt):
        if isinstance(item, TooDeep):
            yield "invalid_json", "the record nests too deeply to read as JSON"
        else:
            yield item if isinstance(item, dict) else (
                "invalid_json", f"the record is a JSON {json_kind(item)}, not an object")


# ------------------------------------------------------------------------ CSV

class _TrackedLines:
    """Decoded lines for csv.reader, counting the bytes consumed; the reader
    pulls exactly the lines of one record per next(), so `pos` is where the
    next record starts, and it pulls past the last line only for a record whose
    quoted field is still open there (`ended`)."""

    def __init__(self, lines: Iterator[bytes], pos: int = 0):
        self._lines, self.pos, self.ended, self._first = lines, pos, False, True

    def __iter__(self):
        return self

    def __next__(self) -> str:
        try:
            line = next(self._lines)
        except StopIteration:
            self.ended = True
            raise
        self.pos += len(line)
        if self._first:  # a UTF-8 byte-order mark goes before csv sees the line: after
            self._first, line = False, _record(line)  # it, a quoted header is not quoted
        return line.decode("utf-8", "surrogateescape")


def _csv_reader(lines: _TrackedLines):
    return csv.reader(lines, strict=False)


_LONE_CR = "new-line character seen in unquoted field"  # csv's words for a lone CR


def _csv_problem(exc: csv.Error) -> str:
    """What csv's error means to the file's author (its own words speak of
    Python's universal-newline mode)."""
    if _LONE_CR in str(exc):
        return ("an unquoted cell holds a carriage return (CR) without a line feed: a cell "
                "with a line break must be quoted")
    return str(exc)


def _records(reader) -> Iterator[list[str] | tuple[str, str]]:
    """The reader's records; a line csv cannot read (a lone CR in an unquoted
    cell) is one (error type, message) record, and the reader goes on with the
    next line: a row's problem, not the run's."""
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield "invalid_csv", _csv_problem(exc)


def _header(reader, path: str) -> list[str]:
    """The header's names; none for a 0-byte file, which holds no records (0 rows,
    as an empty JSON Lines file: one such part of a folder does not stop the run)."""
    try:
        header = next(reader)
    except StopIteration:
        return []
    except csv.Error as exc:
        if _LONE_CR in str(exc):
            raise InputError(f"cannot read {path} as CSV: its header ends in a carriage return "
                             "(CR) without a line feed, as Excel for Mac's \"CSV (Macintosh)\" "
                             "writes: save it as \"CSV UTF-8\", or with LF or CRLF line endings"
                             ) from None
        raise InputError(f"cannot read {path} as CSV: {exc}") from None
    return [h.strip() for h in header]


def csv_header(path: str) -> list[str]:
    with _open(path) as fh:
        return _header(_csv_reader(_TrackedLines(_lines(fh))), path)


def scan_csv(path: str, shard_rows: int, each: Callable[[dict], None] | None = None
             ) -> tuple[list[str], list[tuple[int, int | None, int]]]:
    """One parse of the file: (header, [(offset, end, records)]). The first
    piece starts at 0 (its reader skips the header); `each` sees every record
    as a dict."""
    can_split = splittable(path)
    pieces, start, count = [], 0, 0
    with _open(path) as fh:
        lines = _TrackedLines(_lines(fh))
        reader = _csv_reader(lines)
        header = _header(reader, path)
        records = _records(reader)
        while True:
            before = lines.pos
            record = next(records, None)
            if record is None:
                break
            if not record:
                continue  # a blank line
            if count == shard_rows and can_split:
                pieces.append((start, before, count))
                start, count = before, 0
            count += 1
            if each is not None and isinstance(record, list):
                each(dict(zip(header, record)))
    pieces.append((start, None, count))
    return header, [p for p in pieces if p[2]]


def _cell(value: str, column: str | None) -> Any:
    """An empty cell is null; a JSON array (or a Python list literal, as pandas
    writes lists) in a list-capable column is a list."""
    if value == "":
        return None
    if column in JSON_CELL_COLUMNS and value.lstrip().startswith("["):
        try:
            parsed = parse_text_list(value, column)
        except TypeError:
            return value
        if isinstance(parsed, list) and parsed and all(
                isinstance(v, dict if column != "expected_answer" else str) for v in parsed):
            return parsed
    return value


def csv_record(header: list[str], record: list[str], canonical: Mapping[str, str]
               ) -> dict | tuple[str, str]:
    if len(record) != len(header):
        return "invalid_csv", (f"the record has {len(record)} fields, the header "
                               f"{len(header)}")
    row: dict[str, Any] = {}
    bad = []
    for name, value in zip(header, record):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            bad.append(name)
            continue
        row[name] = _cell(value, canonical.get(name))
    if bad:  # an error row that keeps the readable cells (its case_id among them)
        row[UNREADABLE] = ("invalid_encoding", f"column {bad[0]!r} is not valid UTF-8")
    return row


def unclosed_quote(record: list[str]) -> tuple[str, str]:
    """The record that a quote never closed made of the rest of the file (the
    open field is its last): its lines would otherwise be one cell, of a valid
    row when the field count happens to fit, without a word."""
    after = record[-1].rstrip("\r\n").count("\n")
    return "invalid_csv", (f"a quoted field in this record is never closed, so the rest of "
                           f"the file ({counted(after, 'line')}) was read into "
                           'it: close the quote (a quote inside a quoted cell is written '
                           'twice: "")')


def read_csv(path: str, offset: int, end: int | None, columns: Mapping[str, Source]
             ) -> Iterator[dict | tuple[str, str]]:
    header = csv_header(path)
    canonical: dict[str, str] = {}
    for col, src in columns.items():  # a name two columns read (DeepEval's turns): the first
        for name in candidates(src):
            canonical.setdefault(name, col)
    with _open(path) as fh:
        lines = _TrackedLines(_lines(fh, offset, end))
        reader = _csv_reader(lines)
        if offset == 0:
            next(reader, None)  # the header
        for record in _records(reader):
            if isinstance(record, tuple):
                yield record
            elif record:
                yield unclosed_quote(record) if lines.ended else csv_record(
                    header, record, canonical)


# ------------------------------------------------------ Hugging Face (Arrow IPC)

def _arrow_source(path: str) -> pa.NativeFile:
    if "://" not in path:
        return pa.memory_map(path)
    return pa.PythonFile(FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED))


def scan_arrow(path: str) -> tuple[pa.Schema, list[tuple[int, int]]]:
    """(schema, [(byte offset, rows)] of every record batch of an IPC stream)."""
    try:
        with _arrow_source(path) as src:
            if src.read(6) == b"ARROW1":  # the random-access file format, not a stream
                raise InputError(
                    f"{path} is an Arrow IPC file; .arrow inputs are read as the IPC streams "
                    "Dataset.save_to_disk writes: write the cases as Parquet "
                    "(pyarrow.parquet.write_table) or as a stream (pyarrow.ipc.new_stream)")
            src.seek(0)
            reader = ipc.MessageReader.open_stream(src)
            try:
                schema = ipc.read_schema(reader.read_next_message())
            except StopIteration:  # 0 bytes, or the end marker alone
                raise InputError(f"cannot read {path} as an Arrow stream: it holds no schema "
                                 "(empty, or cut short)") from None
            batches = []
            while True:
                pos = src.tell()
                try:
                    message = reader.read_next_message()
                except StopIteration:
                    break
                if message.type != "record batch":
                    raise InputError(f"{path}: Arrow {message.type} messages are not "
                                     "supported")
                batches.append((pos, ipc.read_record_batch(message, schema).num_rows))
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"cannot read {path} as an Arrow stream: {exc}") from None
    return schema, batches


def read_arrow(path: str, offset: int, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """Record batches from the one starting at `offset` to the end of the stream."""
    with _arrow_source(path) as src:
        schema = ipc.read_schema(ipc.MessageReader.open_stream(src).read_next_message())
        wanted = [c for c in columns if c in schema.names]
        src.seek(offset)
        reader = ipc.MessageReader.open_stream(src)
        while True:
            try:
                message = reader.read_next_message()
            except StopIteration:
                return
            yield ipc.read_record_batch(message, schema).select(wanted)


