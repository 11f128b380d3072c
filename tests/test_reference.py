"""The generated reference pages (pipeline/reference.py) cover everything:
a column, a config key or a metric without a reference entry fails here."""
from __future__ import annotations

import ast
import dataclasses
import functools
import os
import re

import pytest
import yaml

from pipeline.config import ConfigError, parse_config
from pipeline.reference import (MARKER, SECTIONS, config_choices, config_keys, config_reference,
                                expand, metrics_reference, prose, tables_reference)
from schemas.tables import EVERY_TABLE
from tests.conftest import ROOT
from transforms.score.catalog import METRIC_DOCS
from transforms.score.scoring import METRIC_NAMES, SCORERS


def test_every_column_of_every_table_has_a_meaning_in_the_reference():
    page = tables_reference()
    for spec in EVERY_TABLE.values():
        section = page.split(f"## {spec.name}/\n")[1].split("\n## ")[0]
        assert spec.doc, spec.name
        for column in [*spec.schema.names, *spec.partitions]:
            assert len(spec.columns.get(column, "")) > 5, (spec.name, column)
            assert f"| `{column}`" in section, (spec.name, column)
        assert set(spec.columns) == set(spec.schema.names) | set(spec.partitions)


def test_every_marker_in_the_docs_names_a_section_and_every_section_is_used():
    used = set()
    for folder, _, files in os.walk(os.path.join(ROOT, "docs")):
        for name in files:
            if name.endswith(".md"):
                with open(os.path.join(folder, name), encoding="utf-8") as fh:
                    used |= set(MARKER.findall(fh.read()))
    assert used == set(SECTIONS)


def test_expand_replaces_markers_and_prose_escapes_tags_outside_code():
    assert expand("a\n<!-- reference:tables -->\nb").startswith("a\n## results/")
    assert prose("runs/<run_id>/x and `runs/<run_id>/`") == \
        "runs/&lt;run_id&gt;/x and `runs/<run_id>/`"


def _probe(path: str) -> dict:
    """A config with an unknown key `zzz` at the level of the section `path`
    (`endpoints.<name>`, `bots[]`, ...)."""
    leaf: object = {"zzz": 1}
    for part in reversed([p for p in re.split(r"\.|(?=\[\])", path) if p]):
        if part == "[]":
            leaf = [leaf]
        elif part == "<name>":
            leaf = {"x": leaf}
        else:
            leaf = {part: leaf}
    return leaf


def test_every_config_key_has_a_meaning_and_is_a_key_the_validator_accepts():
    keys = config_keys()
    assert [k.path for k in keys if len(k.meaning) < 10] == []
    sections = {k.path[:k.path.rfind(".") + 1] for k in keys}  # "", "bots[].", ...
    assert len(sections) >= 12
    for section in sections:
        with pytest.raises(ConfigError) as info:
            parse_config(_probe(section.rstrip(".")) if section else {"zzz": 1})
        allowed = set(re.search(r"allowed here: (.*)\)$", str(info.value)).group(1).split(", "))
        documented = {k.path[len(section):] for k in keys if k.path.startswith(section)
                      and "." not in k.path[len(section):] and "[" not in k.path[len(section):]}
        assert documented == allowed, section or "top level"


def test_every_fixed_set_of_values_belongs_to_a_documented_key():
    paths = {k.path for k in config_keys()}
    assert set(config_choices()) <= paths


def test_the_config_example_of_the_docs_is_a_valid_config():
    with open(os.path.join(ROOT, "docs", "reference", "config.md"), encoding="utf-8") as fh:
        text = fh.read()
    example = text.split("```yaml\n")[1].split("```")[0]
    cfg = parse_config(yaml.safe_load(example))
    assert cfg.gate and cfg.bots[0].name == "faq" and cfg.judge.configured
    assert config_reference().count("\n## ") >= 10


def test_the_config_reference_parses_each_module_once(monkeypatch):
    """Each config key's meaning is the string under its field: read with
    inspect.getsource per dataclass, which parses the class's whole module
    (pipeline/config.py) on every call, and config_reference listed every key
    once per section: 390 parses, 12 s of CPU for one page (35 s of a test's
    wall time in CI, and every docs build). Now one parse per module."""
    import pipeline.reference as reference
    if hasattr(reference, "_module_classes"):
        reference._module_classes.cache_clear()
    parsed, parse = [], ast.parse
    monkeypatch.setattr(ast, "parse", lambda *a, **k: parsed.append(1) or parse(*a, **k))
    text = config_reference()
    assert "`endpoints.<name>.requests_per_second`" in text
    assert len(parsed) <= 2, len(parsed)  # pipeline.config and transforms.decide.presets

@functools.lru_cache(maxsize=1)
def _code_strings() -> tuple[str, ...]:
    """Every string literal under transforms/, an f-string's values shown as `…`."""
    out = []
    for folder, _, files in os.walk(os.path.join(ROOT, "transforms")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as fh:
                    tree = ast.parse(fh.read())
                for node in ast.walk(tree):
                    if isinstance(node, ast.Constant) and isinstance(node.value, str):
                        out.append(node.value)
                    elif isinstance(node, ast.JoinedStr):
                        out.append("".join(v.value if isinstance(v, ast.Constant) else "…"
                                           for v in node.values))
    return tuple(out)


def test_every_metric_has_a_reference_entry_and_its_null_reasons_are_the_codes():
    docs, page, strings = METRIC_DOCS, metrics_reference(), _code_strings()
    assert set(docs) == set(METRIC_NAMES)
    for metric, doc in docs.items():
        assert len(doc.formula) > 20 and doc.unit, metric
        assert f"### {metric} {{#{metric}}}" in page and f"(#{metric})" in page
        for reason in doc.nulls:
            parts = [p for p in reason.split("…") if p.strip(" ,:")]
            assert any(all(p in s for p in parts) for s in strings), (metric, reason)
    for scorer in SCORERS:
        for option, default in scorer.option_defaults.items():
            assert f"`metric_options.{scorer.name}.{option}`" in page


def test_a_null_reason_the_code_never_gives_is_caught():
    strings = _code_strings()
    assert any("the reference makes no claim" in s for s in strings)
    assert not any("the reference is too short to judge" in s for s in strings)


def test_the_verdicts_page_shows_the_default_presets_rules_as_the_code_has_them():
    from transforms.decide.presets import PRESETS
    with open(os.path.join(ROOT, "docs", "concepts", "verdicts.md"), encoding="utf-8") as fh:
        text = fh.read()
    block = text.split("- **`default`**")[1].split("  ```yaml\n")[1].split("  ```")[0]
    shown = yaml.safe_load(block)
    from pipeline.reference import _plain
    assert shown == [_plain(r) for r in PRESETS["default"]]


def test_every_input_column_has_a_meaning_in_the_reference():
    from schemas.cases import CANONICAL_COLUMNS, INPUT_COLUMN_DOCS
    from pipeline.reference import inputs_reference
    assert list(INPUT_COLUMN_DOCS) == list(CANONICAL_COLUMNS)
    page = inputs_reference()
    assert all(f"| `{c}` |" in page for c in CANONICAL_COLUMNS)
