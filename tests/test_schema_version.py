"""The output tables' schema_version contract (schemas/__init__.py): a column is
only ever added, every addition raises SCHEMA_VERSION, and the version history
in the code and its twin in docs/concepts/tables.md say the same.
(`comparisons.min_difference` came in without a raise: the snapshot test below
is what would have caught it.)"""
from __future__ import annotations

import json
import os
import re

import schemas
from schemas import SCHEMA_VERSION
from schemas.tables import EVERY_TABLE
from tests.conftest import ROOT

SNAPSHOT = os.path.join(ROOT, "tests", "fixtures", "schema_columns.json")
NAME = re.compile(r"`(\w+)`")


def columns_now() -> dict[str, dict]:
    return {name: {"columns": [f"{f.name} {f.type}" for f in t.schema],
                   "partitions": list(t.partitions)} for name, t in EVERY_TABLE.items()}


def code_history() -> dict[str, str]:
    """{version: its entry} from SCHEMA_VERSION's docstring in schemas/__init__.py."""
    with open(schemas.__file__, encoding="utf-8") as fh:
        text = fh.read()
    doc = text.split('SCHEMA_VERSION = "', 1)[1].split('"""', 2)[1]
    return dict(re.findall(r"^(\d+): (.*?)(?=^\d+: |\Z)", doc, re.S | re.M))


def docs_history() -> dict[str, str]:
    with open(os.path.join(ROOT, "docs", "concepts", "tables.md"), encoding="utf-8") as fh:
        section = fh.read().split("## Schema versions", 1)[1]
    return dict(re.findall(r"^\| (\d+) \| (.*) \|$", section, re.M))


def test_a_changed_column_raises_the_schema_version():
    """The tables' columns are the snapshot's as long as the version is: adding a
    column without raising SCHEMA_VERSION (or changing one at all) fails here."""
    with open(SNAPSHOT, encoding="utf-8") as fh:
        snapshot = json.load(fh)
    now = columns_now()
    if snapshot["schema_version"] == SCHEMA_VERSION:
        changed = sorted(n for n in set(now) | set(snapshot["tables"])
                         if now.get(n) != snapshot["tables"].get(n))
        assert not changed, (f"{changed} changed at schema_version {SCHEMA_VERSION}: raise "
                             "SCHEMA_VERSION, record the change in schemas/__init__.py and "
                             "docs/concepts/tables.md, then rewrite " + SNAPSHOT)
        return
    # a raised version: only additions, then the snapshot is rewritten for it
    for name, old in snapshot["tables"].items():
        assert name in now, f"table {name} removed"
        assert now[name]["partitions"] == old["partitions"], name
        assert now[name]["columns"][:len(old["columns"])] == old["columns"], (
            f"{name}: a column was renamed, retyped, moved or removed")
    raise AssertionError(f"schema_version is now {SCHEMA_VERSION}: rewrite {SNAPSHOT}")


def test_the_version_history_and_its_docs_twin_agree():
    code, docs = code_history(), docs_history()
    assert list(code) == [str(i) for i in range(1, int(SCHEMA_VERSION) + 1)]
    assert list(docs) == list(code)
    known = {c for t in EVERY_TABLE.values() for c in t.schema.names}
    for version in code:
        named_code = set(NAME.findall(code[version])) & known
        named_docs = set(NAME.findall(docs[version])) & known
        assert named_code == named_docs, version
    assert "min_difference" in NAME.findall(code["3"])


def test_every_column_the_history_names_exists():
    known = {c for t in EVERY_TABLE.values() for c in t.schema.names}
    for version, entry in code_history().items():
        for table, names in re.findall(r"(\w+)/\s+gains\s+((?:`\w+`[\s,andor]*)+)", entry):
            for name in NAME.findall(names):
                assert name in known and name in EVERY_TABLE[table].schema.names, (
                    version, table, name)
