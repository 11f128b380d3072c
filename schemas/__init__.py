"""Data contracts of evalbeam: input cases, in-flight records, output tables."""

SCHEMA_VERSION = "2"
"""The output tables' version, written to every manifest. Tables change only by
adding columns (never renaming, retyping or removing one), and every added
column raises the version, so a reader written for version N reads N + k.

1: the first tables.
2: usage/ gains `shared_cache_hits` (cache hits served by the shared tier).
"""
