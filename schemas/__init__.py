"""Data contracts of evalbeam: input cases, in-flight records, output tables."""

SCHEMA_VERSION = "1"
