"""Run the CLI in-process and read every output table back (hive partitioning)."""
from __future__ import annotations

import json
import os

import pyarrow.dataset as ds

from pipeline.cli import run

TABLE_NAMES = ("results", "scores", "summary", "errors", "usage")


def run_cli(*args: str) -> int:
    return run(["run", *args])


def read_table(output: str, name: str):
    """A whole table as a pyarrow Table, partition columns included."""
    return ds.dataset(os.path.join(output, name), format="parquet",
                      partitioning="hive").to_table()


def read_rows(output: str, name: str) -> list[dict]:
    return read_table(output, name).to_pylist()


def manifest(output: str, run_id: str) -> dict:
    with open(os.path.join(output, "runs", run_id, "manifest.json"), encoding="utf-8") as fh:
        return json.load(fh)


def files_under(folder: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, f), folder)
                  for r, _, fs in os.walk(folder) for f in fs)
