"""Reading a finished run back: its manifest and its rows of a published table.

Files are found with Beam's FileSystems (the run's own `part-<run_id>.*`
files, so other runs' files are never opened) and read with pyarrow.dataset
and Hive partitioning, with every partition column typed as text (a bot
named `2024` stays a string).
"""
from __future__ import annotations

import json
from typing import Sequence

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
from apache_beam.io.filesystems import FileSystems

from schemas.tables import TableSpec
from transforms.publish.write import RUN_ID_PATTERN, existing_run_files


class PostRunError(ValueError):
    """A run cannot be used as asked (unknown, unfinished, a table missing, no
    labels): the command exits 2 with this one line."""


def load_manifest(output: str, run_id: str) -> dict:
    """The manifest a finished run wrote last (its absence: unknown or unfinished run)."""
    if not RUN_ID_PATTERN.match(run_id):
        raise PostRunError(f"--run-id {run_id!r} must be 1-128 letters, digits, '-' or '_'")
    path = FileSystems.join(output, "runs", run_id, "manifest.json")
    if not FileSystems.exists(path):
        raise PostRunError(f"no finished run {run_id!r} under {output} "
                             f"({path} does not exist)")
    with FileSystems.open(path) as fh:
        return json.loads(fh.read().decode("utf-8"))


def _arrow_paths(paths: Sequence[str], base: str) -> tuple[pafs.FileSystem | None, list[str], str]:
    """pyarrow's filesystem for URLs (gs://, s3://, hdfs://); None for local paths."""
    if "://" not in base:
        return None, list(paths), base
    filesystem, base_path = pafs.FileSystem.from_uri(base)
    return filesystem, [pafs.FileSystem.from_uri(p)[1] for p in paths], base_path


def run_dataset(output: str, spec: TableSpec, run_id: str) -> ds.Dataset:
    """The run's files of one table as a dataset, partition columns included."""
    paths = existing_run_files(output, spec, run_id)
    if not paths:
        raise PostRunError(f"run {run_id!r} has no {spec.name}/ files under {output}")
    filesystem, paths, base = _arrow_paths(paths, FileSystems.join(output, spec.name))
    partitioning = ds.partitioning(pa.schema([(p, pa.string()) for p in spec.partitions]),
                                   flavor="hive")
    return ds.dataset(paths, format="parquet", partitioning=partitioning,
                      partition_base_dir=base, filesystem=filesystem)


def read_run_rows(output: str, spec: TableSpec, run_id: str, columns: Sequence[str],
                  where: ds.Expression | None = None) -> pa.Table:
    """The run's rows of a table (only `columns`), optionally filtered further."""
    dataset = run_dataset(output, spec, run_id)
    missing = [c for c in columns if c not in dataset.schema.names]
    if missing:
        raise PostRunError(f"run {run_id!r}: its {spec.name}/ files have no column "
                           f"{missing[0]!r} (written by an older evalbeam? run it again)")
    condition = ds.field("run_id") == run_id
    if where is not None:
        condition = condition & where
    return dataset.to_table(columns=list(columns), filter=condition)
