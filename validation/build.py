"""Flattens the hand-written validation sources into evalbeam input files.

    python validation/build.py [OUT_DIR]      (default: validation/)

Each answer of each question becomes one case (one row), so the `precomputed`
bot replays it and every metric scores it like a real bot's answer:

    case_id          <question id>:<kind>          e.g. science-en-001:wrong_date
    question, contexts, expected_answer (the reference), answer
    suite            the domain
    label            PASS for a good answer, FAIL for a bad one
    tags             lang:<code>, kind:<kind>, group:<hallucinated|poor|off_topic|good>,
                     length:<long|short>, question:<question id>, split:<dev|test>

`split` is fixed per question (a hash of its id): thresholds are chosen on
`dev` and reported on `test` as well, so the figures are not only in-sample.
Writes cases.parquet (all) beside this script, deterministic byte for byte.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_sources import (CJK, GOOD_KINDS, HALLUCINATED_KINDS, POOR_KINDS,  # noqa: E402
                           check_file)

SCHEMA = pa.schema([
    ("case_id", pa.string()), ("question", pa.string()), ("expected_answer", pa.string()),
    ("contexts", pa.list_(pa.string())), ("answer", pa.string()), ("suite", pa.string()),
    ("tags", pa.list_(pa.string())), ("label", pa.string()),
])
LONG_WORDS = 150


def group_of(kind: str) -> str:
    if kind in GOOD_KINDS:
        return "good"
    if kind in HALLUCINATED_KINDS:
        return "hallucinated"
    if kind in POOR_KINDS:
        return "poor"
    return "off_topic"


def is_long(text: str, lang: str) -> bool:
    if lang in CJK:
        return len(text) >= 250
    return len(text.split()) >= LONG_WORDS


def split_of(question_id: str) -> str:
    """dev for two thirds of the questions, test for the rest (stable)."""
    return "test" if int(hashlib.sha1(question_id.encode()).hexdigest(), 16) % 3 == 0 else "dev"


def rows_of(record: dict) -> list[dict]:
    rows = []
    for a in record["answers"]:
        kind, lang = a["kind"], record["lang"]
        rows.append({
            "case_id": f"{record['id']}:{kind}", "question": record["question"],
            "expected_answer": record["reference"], "contexts": record["contexts"],
            "answer": a["text"], "suite": record["domain"],
            "tags": [f"lang:{lang}", f"kind:{kind}", f"group:{group_of(kind)}",
                     f"length:{'long' if is_long(a['text'], lang) else 'short'}",
                     f"question:{record['id']}", f"split:{split_of(record['id'])}"],
            "label": "PASS" if a["label"] == "good" else "FAIL"})
    return rows


def main(out_dir: str = HERE) -> int:
    files = sorted(glob.glob(os.path.join(HERE, "sources", "*.jsonl")))
    problems: list[str] = []
    seen: set[str] = set()
    for path in files:
        problems += check_file(path, seen)
    if problems:
        print("\n".join(problems[:20]), file=sys.stderr)
        return 1
    rows = []
    for path in files:
        with open(path, encoding="utf-8") as fh:
            rows += [r for line in fh if line.strip() for r in rows_of(json.loads(line))]
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "cases.parquet")
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), out, compression="zstd")
    print(f"{len(files)} source files, {len(seen)} questions, {len(rows)} answers -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
