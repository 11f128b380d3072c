"""Warehouse DDL for the output tables, made from their pyarrow schemas so that
it cannot drift from what the pipeline writes (docs/guides/warehouse.md).

    python -m schemas.ddl ENGINE LOCATION [--dataset NAME]

Every table: the run's five, calibration/ (`evalbeam calibrate`) and
comparisons/ (`evalbeam compare`). ENGINE is bigquery, athena, spark or
duckdb; LOCATION the run's --output
(gs://bucket/evals, s3://bucket/evals, a local folder). Columns are declared
explicitly and matched by name, so files of an older schema version (fewer
columns) read the newer columns as NULL.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys

import pyarrow as pa

from schemas import SCHEMA_VERSION
from schemas.manifest import ATTEMPT, other_run, parse_manifest_bytes
from schemas.tables import EVERY_TABLE, TABLES, TableSpec

ENGINES = ("bigquery", "athena", "spark", "duckdb")
PARTITION_TYPES = {"run_date": "date", "bot": "string"}
_TYPES = {  # arrow type -> (bigquery, athena, spark)
    pa.string(): ("STRING", "string", "STRING"),
    pa.float64(): ("FLOAT64", "double", "DOUBLE"),
    pa.int64(): ("INT64", "bigint", "BIGINT"),
    pa.bool_(): ("BOOL", "boolean", "BOOLEAN"),
    pa.list_(pa.string()): ("ARRAY<STRING>", "array<string>", "ARRAY<STRING>"),
}


def column_type(arrow_type: pa.DataType, engine: str) -> str:
    return _TYPES[arrow_type][ENGINES.index(engine)]


def column_name(name: str, engine: str) -> str:
    """A column as Athena's and Spark's DDL take it: in backticks, since their
    Hive parser refuses a reserved word such as results' `references` as a
    bare name (Athena always, Spark in ANSI mode)."""
    return f"`{name}`" if engine in ("athena", "spark") else name


def _columns(spec: TableSpec, engine: str, indent: str = "  ") -> str:
    return ",\n".join(f"{indent}{column_name(f.name, engine)} {column_type(f.type, engine)}"
                       for f in spec.schema)


def duckdb_hive_types(spec: TableSpec) -> str:
    """The partition columns' types for DuckDB, which otherwise guesses them
    from the folder names: bot=2024 would read as a number, bot=007 as 7."""
    return ", ".join(f"'{p}': {PARTITION_TYPES[p].replace('string', 'varchar').upper()}"
                     for p in spec.partitions)


# well-formed UTF-8 (RFC 3629) over a blob's hex(): decode() fails a whole query on
# anything else, and DuckDB before 1.3 (setup.py allows 1.1) has no try()
_UTF8_HEX = ("(?:[0-7][0-9A-F]|C[2-9A-F][89AB][0-9A-F]|D[0-9A-F][89AB][0-9A-F]"
             "|E0[AB][0-9A-F][89AB][0-9A-F]|E[1-9A-CEF][89AB][0-9A-F][89AB][0-9A-F]"
             "|ED[89][0-9A-F][89AB][0-9A-F]|F0[9AB][0-9A-F](?:[89AB][0-9A-F]){2}"
             "|F[1-3](?:[89AB][0-9A-F]){3}|F48[0-9A-F](?:[89AB][0-9A-F]){2})*")


def sql_text(text: str, engine: str = "duckdb") -> str:
    """A SQL string literal: a folder named `it's` must not end the string.
    DuckDB doubles the quote; BigQuery's, Athena's (Hive) and Spark's literals
    take a backslash before it, so a backslash is doubled there too."""
    if engine == "duckdb":
        return "'" + text.replace("'", "''") + "'"
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def duckdb_manifests(location: str, table: str) -> str:
    """The committed attempts, one row (run_id, files, n_rows) per readable
    manifest: the table's files it lists (paths under the output) and the rows
    it counts in them. The manifests are read as bytes, decoded only when they
    are UTF-8 and parsed only when json_valid (CASE: a WHERE may run after the
    projection, as in DuckDB 1.1), so one truncated, empty or non-UTF-8 marker
    leaves out its own run (as `evalbeam status` and the viewer do) instead of
    failing every view, as read_json does; a marker naming another run than
    its folder's, or with no file list, counts for none."""
    def field(path: str, how: str = "json_extract_string") -> str:
        return f"CASE WHEN json_valid(j) THEN {how}(j, '{path}') END"
    return (f"(SELECT run_id, CASE WHEN json_type(listed) = 'ARRAY'\n"
            f"    THEN from_json(listed, '[\"VARCHAR\"]') ELSE [] END AS files,\n"
            f"    coalesce(TRY_CAST(counted AS BIGINT), 0) AS n_rows\n"
            f"  FROM (SELECT parse_filename(parse_dirpath(filename)) AS folder,\n"
            f"    {field('$.run_id')} AS run_id,\n"
            f"    {field('$.attempt')} AS attempt,\n"
            f"    {field('$.files', 'json_type')} AS listing,\n"
            f"    {field(f'$.files.{table}', 'json_extract')} AS listed,\n"
            f"    {field(f'$.tables.{table}')} AS counted\n"
            f"  FROM (SELECT filename, CASE WHEN regexp_full_match(hex(content),\n"
            f"    '{_UTF8_HEX}')\n"
            f"    THEN decode(content) END AS j FROM read_blob(\n"
            f"    {sql_text(location + '/runs/*/manifest.json')})))\n"
            f"  WHERE run_id = folder AND regexp_full_match(attempt, '{ATTEMPT.pattern}')\n"
            f"    AND listing = 'OBJECT')")


def unreadable_manifest(path: str, run_id: str) -> str | None:
    """Why the views leave out the run whose manifest is at `path` (None: they
    read it); the same test as duckdb_manifests, in Python."""
    try:
        with open(path, "rb") as fh:
            marker, why = parse_manifest_bytes(fh.read())
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    why = why or other_run(marker, run_id)
    if why:
        return why
    if not isinstance(marker.get("attempt"), str) or not ATTEMPT.fullmatch(marker["attempt"]):
        return "no attempt id"
    if not isinstance(marker.get("files"), dict):
        return "no file list"
    return None


def left_out_runs(location: str) -> list[str]:
    """One warning per run of a local output whose manifest the views cannot
    read, so the user knows which nightly run's rows are missing from them."""
    lines = []
    for path in sorted(glob.glob(os.path.join(glob.escape(location), "runs", "*",
                                              "manifest.json"))):
        run_id = os.path.basename(os.path.dirname(path))
        why = unreadable_manifest(path, run_id)
        if why:
            lines.append(f"warning: run {run_id}: corrupt manifest {path}: {why}; its files "
                         "are left out of the views until the run is run again")
    return lines


# A DuckDB variable: set to true, the views leave out a run whose listed files
# do not reconcile instead of refusing every query (one damaged run blocked all)
SKIP_DAMAGED = "evalbeam_skip_damaged"


def duckdb_view(spec: TableSpec, location: str) -> str:
    """A view over a table's files; a run's own tables keep only the files the
    committed attempt's manifest (runs/<run_id>/manifest.json) lists, as a
    killed or failed attempt's files stay in the Hive folders until its run id
    runs again, which a nightly run with a new id each night never does. It
    refuses (one line, naming the run) when those files are not all there or
    do not hold the rows the manifest counts: a deleted file would otherwise
    read as fewer rows. With the DuckDB variable SKIP_DAMAGED set to true, it
    reads the other runs instead, leaving that one out."""
    where = sql_text(f"{location}/{spec.name}/**/*.parquet")
    committed = spec.name in TABLES
    read = (f"read_parquet(\n  {where}, hive_partitioning = true, "
            f"union_by_name = true,{' filename = true,' if committed else ''}\n"
            f"  hive_types = {{{duckdb_hive_types(spec)}}})")
    if not committed:
        return f"CREATE OR REPLACE VIEW {spec.name} AS SELECT * FROM {read};"
    return (f"CREATE OR REPLACE VIEW {spec.name} AS\n"
            f"WITH manifests AS {duckdb_manifests(location, spec.name)},\n"
            f"listed AS (SELECT run_id, unnest(files) AS path FROM manifests),\n"
            f"found AS (SELECT l.run_id, count(*) AS n, sum(f.num_rows) AS got FROM listed l\n"
            f"  JOIN parquet_file_metadata({where}) f ON ends_with(f.file_name, '/' || l.path)\n"
            f"  GROUP BY l.run_id),\n"
            f"checked AS (SELECT m.run_id, CASE WHEN len(m.files) = coalesce(f.n, 0)\n"
            f"    AND m.n_rows = coalesce(f.got, 0) THEN true\n"
            f"    WHEN coalesce(getvariable('{SKIP_DAMAGED}'), false) THEN false\n"
            f"    ELSE error('run ' || m.run_id\n"
            f"    || ': its completion marker lists ' || len(m.files) || ' {spec.name}/ files '\n"
            f"    || 'of ' || m.n_rows || ' rows, but the folder holds ' || coalesce(f.n, 0)\n"
            f"    || ' of them, of ' || coalesce(f.got, 0) || ' rows (deleted, replaced or '\n"
            f"    || 'not copied?): run it again to replace them, or SET VARIABLE '\n"
            f"    || '{SKIP_DAMAGED} = true to read the other runs') END AS ok\n"
            f"  FROM manifests m LEFT JOIN found f USING (run_id))\n"
            f"SELECT t.* EXCLUDE (filename) FROM {read} t\n"
            f"SEMI JOIN (SELECT l.run_id, l.path FROM listed l JOIN checked c USING (run_id)\n"
            f"  WHERE c.ok) m\n"
            f"  ON t.run_id = m.run_id AND ends_with(t.filename, '/' || m.path);")


def table_ddl(spec: TableSpec, engine: str, location: str, dataset: str = "evals") -> str:
    """One table's statement(s) for engine; location is the run's --output."""
    where = f"{location.rstrip('/')}/{spec.name}"
    name = f"{dataset}.{spec.name}"
    if engine == "duckdb":
        return duckdb_view(spec, location.rstrip("/"))
    if engine == "bigquery":
        parts = ", ".join(f"{p} {PARTITION_TYPES[p].upper()}" for p in spec.partitions)
        # without it BigQuery reads a Parquet LIST as STRUCT<list ARRAY<STRUCT<element>>>,
        # which the ARRAY<STRING> declared here does not match
        lists = any(pa.types.is_list(f.type) for f in spec.schema)
        return (f"CREATE OR REPLACE EXTERNAL TABLE `{name}` (\n{_columns(spec, engine)}\n)\n"
                f"WITH PARTITION COLUMNS ({parts})\n"
                f"OPTIONS (format = 'PARQUET', uris = [{sql_text(where + '/*', engine)}],\n"
                f"         hive_partition_uri_prefix = {sql_text(where, engine)}"
                + (",\n         enable_list_inference = true" if lists else "") + ");")
    if engine == "athena":
        parts = ", ".join(f"{column_name(p, engine)} {PARTITION_TYPES[p]}"
                          for p in spec.partitions)
        return (f"CREATE EXTERNAL TABLE IF NOT EXISTS {name} (\n{_columns(spec, engine)}\n)\n"
                f"PARTITIONED BY ({parts})\nSTORED AS PARQUET\nLOCATION {sql_text(where + '/', engine)};\n"
                f"MSCK REPAIR TABLE {name};")
    if engine == "spark":
        names = [column_name(p, engine) for p in spec.partitions]
        parts = ",\n".join(f"  {n} {PARTITION_TYPES[p].upper()}"
                           for n, p in zip(names, spec.partitions))
        return (f"CREATE TABLE IF NOT EXISTS {name} (\n{_columns(spec, engine)},\n{parts}\n)\n"
                f"USING parquet\nPARTITIONED BY ({', '.join(names)})\n"
                f"LOCATION {sql_text(where, engine)};\nMSCK REPAIR TABLE {name};")
    raise ValueError(f"unknown engine {engine!r} (one of {', '.join(ENGINES)})")


def all_ddl(engine: str, location: str, dataset: str = "evals") -> str:
    header = f"-- evalbeam output tables, schema_version {SCHEMA_VERSION}"
    return "\n\n".join([header] + [table_ddl(t, engine, location, dataset)
                                   for t in EVERY_TABLE.values()]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m schemas.ddl", description=__doc__.split("\n\n")[0])
    parser.add_argument("engine", choices=ENGINES)
    parser.add_argument("location", help="the run's --output")
    parser.add_argument("--dataset", default="evals", help="dataset / database (not duckdb)")
    args = parser.parse_args(argv)
    sys.stdout.write(all_ddl(args.engine, args.location, args.dataset))
    if args.engine == "duckdb" and "://" not in args.location:
        for line in left_out_runs(args.location.rstrip("/")):
            print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
