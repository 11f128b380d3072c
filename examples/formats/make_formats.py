"""Writes case files in every input format evalbeam reads, from any list of
rows (dicts of canonical columns). Run it to regenerate the examples here from
the bundled support example:

    python examples/formats/make_formats.py        # writes into examples/formats/

Formats:
- JSON Lines: one JSON object per line (lists and objects as JSON).
- CSV: a header, one record per row; list and object cells hold JSON
  (`["passage one", "passage two"]`); an empty cell is null.
- A Hugging Face dataset folder as `datasets.Dataset.save_to_disk` writes it
  (state.json, dataset_info.json, data-00000-of-00001.arrow: an Arrow IPC
  stream of 1,000-row record batches). Written here with pyarrow alone, so the
  example needs no `datasets` install; `datasets.load_from_disk` reads it.

Standard library and pyarrow only; deterministic output.
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
SUPPORT = HERE.parent / "support"
HF_BATCH_ROWS = 1000  # datasets' default writer_batch_size
EXAMPLE_CASES = 40


def write_jsonl(path: str | os.PathLike, rows: list[dict]) -> str:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return str(path)


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def write_csv(path: str | os.PathLike, rows: list[dict]) -> str:
    columns = list(dict.fromkeys(k for row in rows for k in row))
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(row.get(c)) for c in columns])
    return str(path)


def _features(schema: pa.Schema) -> dict:
    """datasets' feature description of an Arrow schema (strings, lists of
    strings, lists of {role, content})."""
    def feature(t: pa.DataType):
        if pa.types.is_list(t) and pa.types.is_struct(t.value_type):
            return [feature(t.value_type)]  # a list of dicts (Sequence of a dict is not that)
        if pa.types.is_list(t):
            return {"feature": feature(t.value_type), "_type": "Sequence"}
        if pa.types.is_struct(t):
            return {f.name: feature(f.type) for f in t}
        return {"dtype": "string" if pa.types.is_string(t) else str(t), "_type": "Value"}
    return {f.name: feature(f.type) for f in schema}


def write_hf_dataset(folder: str | os.PathLike, table: pa.Table) -> str:
    """The layout of Dataset.save_to_disk (one shard)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    info = {"citation": "", "description": "", "features": _features(table.schema),
            "homepage": "", "license": ""}
    schema = table.schema.with_metadata({"huggingface": json.dumps({"info": {
        "features": info["features"]}})})
    name = "data-00000-of-00001.arrow"
    with pa.OSFile(str(folder / name), "wb") as sink:
        with ipc.new_stream(sink, schema) as writer:
            for batch in table.cast(schema).to_batches(max_chunksize=HF_BATCH_ROWS):
                writer.write_batch(batch)
    fingerprint = hashlib.sha256((folder / name).read_bytes()).hexdigest()[:16]
    (folder / "dataset_info.json").write_text(json.dumps(info, indent=2), "utf-8")
    (folder / "state.json").write_text(json.dumps({
        "_data_files": [{"filename": name}], "_fingerprint": fingerprint,
        "_format_columns": None, "_format_kwargs": {}, "_format_type": None,
        "_output_all_columns": False, "_split": None}, indent=2), "utf-8")
    return str(folder)


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else HERE
    # 40 cases of the support example; none with an empty recorded answer, which
    # CSV cannot tell from a missing one (an empty cell is null)
    rows = [r for r in pq.read_table(SUPPORT / "cases.parquet").to_pylist()
            if r["answer"] != ""][:EXAMPLE_CASES]
    table = pa.Table.from_pylist(rows, schema=pq.read_schema(SUPPORT / "cases.parquet"))
    write_jsonl(out / "cases.jsonl", rows)
    write_csv(out / "cases.csv", rows)
    write_hf_dataset(out / "cases_hf", table)
    print(f"wrote {out}: {len(rows)} cases as cases.jsonl, cases.csv and cases_hf/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
