"""The reference pages of the docs, generated from the code when the site is
built, so they cannot drift from it:

- the command line from the argument parsers (`pipeline.cli`),
- the config keys from the validator's dataclasses (`pipeline.config`),
- the metrics from the scorer registry (`transforms.score`),
- the tables from their schemas (`schemas.tables`), the input columns from
  `schemas.cases`.

A docs page holds a marker `<!-- reference:NAME -->` where the generated
Markdown goes (scripts/mkdocs_hooks.py replaces it at build time).

    python -m pipeline.reference NAME      # print one section's Markdown
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import re
import sys
import textwrap
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa
import yaml

MARKER = re.compile(r"<!-- reference:([a-z_]+) -->")


def prose(text: str) -> str:
    """Plain text as Markdown on one line: `<` and `>` outside code spans are
    escaped (`runs/<run_id>/` would otherwise be read as an HTML tag)."""
    parts = " ".join(str(text).split()).split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;").replace(">", "&gt;")
                    for i, p in enumerate(parts))


def cell(text: str) -> str:
    """Text for a Markdown table cell."""
    return prose(text).replace("|", "\\|")


def table_rows(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows])


# ---------------------------------------------------------------- tables

def arrow_type(typ: pa.DataType) -> str:
    if pa.types.is_list(typ):
        return f"list<{arrow_type(typ.value_type)}>"
    return {pa.string(): "string", pa.float64(): "double", pa.int64(): "int64",
            pa.bool_(): "bool"}.get(typ, str(typ))


def inputs_reference() -> str:
    from schemas.cases import INPUT_COLUMN_DOCS, REQUIRED_COLUMNS
    return "\n".join(table_rows(("column", "type", "required", "meaning"), [
        (f"`{c}`", typ, "yes" if c in REQUIRED_COLUMNS else "no", meaning)
        for c, (typ, meaning) in INPUT_COLUMN_DOCS.items()])) + "\n"


def tables_reference() -> str:
    from schemas.ddl import PARTITION_TYPES
    from schemas.tables import EVERY_TABLE
    out = []
    for spec in EVERY_TABLE.values():
        parts = ", ".join(f"`{p}=`" for p in spec.partitions)
        rows = [(f"`{f.name}`", arrow_type(f.type), spec.columns[f.name]) for f in spec.schema]
        rows += [(f"`{p}` (partition)", PARTITION_TYPES[p], spec.columns[p])
                 for p in spec.partitions]
        out += [f"## {spec.name}/", "", spec.doc, "", f"Partitions: {parts}.", "",
                *table_rows(("column", "type", "meaning"), rows), ""]
    return "\n".join(out)

# ---------------------------------------------------------------- command line

def subcommands(parser) -> dict:
    """name -> (summary, parser) of the parser's subcommands, in their order."""
    import argparse
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {a.dest: a.help for a in action._choices_actions}
    return {name: (summaries.get(name, ""), p) for name, p in action.choices.items()}


def options(parser) -> list:
    """The parser's documented options (not -h, not suppressed ones)."""
    import argparse
    return [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS
            and not isinstance(a, argparse._HelpAction)]


def _option_row(action) -> tuple[str, ...]:
    names = ", ".join(f"`{o}`" for o in action.option_strings)
    value = "" if action.nargs == 0 else f"`{action.metavar or action.dest.upper()}`"
    needed = "required" if action.required else (
        "repeatable" if type(action).__name__ == "_AppendAction" else "")
    return (names, value, needed, action.help)


def cli_reference() -> str:
    from pipeline.cli import EXIT_CODES, _parser
    parser = _parser()
    out = ["```", *(f"evalbeam {name:<10} {summary}"
                    for name, (summary, _) in subcommands(parser).items()), "```", ""]
    for name, (summary, sub) in subcommands(parser).items():
        notes = (sub.epilog or "").split("Exit codes:")[0].strip()
        usage = sub.format_usage().strip().removeprefix("usage: ").replace("\n       ", "\n")
        out += [f"## evalbeam {name}", "", prose(sub.description), "", "```", usage, "```", "",
                *table_rows(("option", "value", "", "meaning"),
                            [_option_row(a) for a in options(sub)]), ""]
        if notes:
            out += [prose(notes), ""]
        out += [f"Exit codes of `evalbeam {name}`:", "",
                *table_rows(("exit", "meaning"), [(str(code), text) for code, text in
                                                  sorted(EXIT_CODES[name].items())]), ""]
    return "\n".join(out)


# ---------------------------------------------------------------- config

@dataclass(frozen=True)
class ConfigKey:
    path: str       # e.g. endpoints.<name>.requests_per_second
    type: str
    default: str
    meaning: str


@functools.lru_cache(maxsize=None)
def _module_classes(module: str) -> dict[str, list[ast.stmt]]:
    """The body of each top-level class of a module, its source parsed once
    (inspect.getsource of a class parses the whole module on every call: the
    config reference took 12 s of CPU, 390 parses of pipeline/config.py)."""
    tree = ast.parse(inspect.getsource(sys.modules[module]))
    return {n.name: n.body for n in tree.body if isinstance(n, ast.ClassDef)}


def attribute_docs(cls: type) -> dict[str, str]:
    """The string under each field of a dataclass (its attribute docstring)."""
    body = _module_classes(cls.__module__).get(cls.__qualname__)
    if body is None:  # a nested class
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for node, after in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def type_name(t: Any) -> str:
    """A type annotation as a config reader knows it."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in args if a is not type(None))
    if origin is dict:
        return "mapping" if args[1] is Any else f"mapping of name to {type_name(args[1])}"
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"list of {type_name(args[0])}"
        return "[" + ", ".join(type_name(a) for a in args) + "]"
    if dataclasses.is_dataclass(t):
        return "mapping"
    return {bool: "true / false", int: "integer", float: "number", str: "text",
            Any: "any"}.get(t, getattr(t, "__name__", str(t)))


def _plain(value: Any) -> Any:
    """A default as YAML data: dataclasses without their default-valued fields."""
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.metadata.get("config_key", True) and getattr(value, f.name) != (
                    f.default_factory() if f.default_factory is not dataclasses.MISSING
                    else f.default)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def default_text(f: dataclasses.Field) -> str:
    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
        return "required"
    value = f.default if f.default is not dataclasses.MISSING else f.default_factory()
    if value is None:
        return "unset"
    if isinstance(value, str):
        return f"`{value}`"
    if dataclasses.is_dataclass(value):
        return "see below"
    text = yaml.safe_dump(_plain(value), default_flow_style=True, width=10**6).strip()
    text = text.removesuffix("\n...").strip()
    return f"`{text}`" if len(text) <= 48 else "see meaning"


def config_keys(cls: type | None = None, prefix: str = "") -> list[ConfigKey]:
    """Every key the config validator accepts, depth first, with its doc."""
    from pipeline.config import Config, key_fields, nested
    cls = cls or Config
    docs, hints = attribute_docs(cls), typing.get_type_hints(cls)
    out = []
    for f in key_fields(cls):
        path, hint = prefix + f.name, hints[f.name]
        out.append(ConfigKey(path, type_name(hint), default_text(f), docs.get(f.name, "")))
        inner, suffix = nested(hint)
        if inner is not None:
            out += config_keys(inner, path + suffix)
    return out


def config_choices() -> dict[str, tuple[str, ...]]:
    """The values the validator accepts for keys with a fixed set of them."""
    from pipeline.config import (BOT_TYPES, CLASSIFIER_APIS, EMBEDDING_PROVIDERS, SAFETY_MODES,
                                 VERDICTS)
    from schemas.cases import CANONICAL_COLUMNS
    from transforms.answer.remote_bots import HTTP_BOT_OPTIONS
    from transforms.decide.presets import PRESETS
    from transforms.enrich.judge.keys import RUBRIC_INPUTS
    from transforms.enrich.judge.prompts import TEMPLATE_NAMES
    from transforms.read.formats import FORMATS
    from transforms.read.presets import PRESETS as INPUT_PRESETS
    from transforms.score.custom import NEEDS
    return {"input.columns": CANONICAL_COLUMNS, "input.format": FORMATS,
            "input.preset": tuple(INPUT_PRESETS), "bots[].type": BOT_TYPES,
            "bots[].options": tuple(sorted(HTTP_BOT_OPTIONS)) + ("temperature", "max_tokens"),
            "embeddings.provider": EMBEDDING_PROVIDERS, "judge.prompts": TEMPLATE_NAMES,
            "judge.safety.mode": SAFETY_MODES, "judge.rubrics.<name>.inputs": RUBRIC_INPUTS,
            "custom_metrics[].needs": NEEDS, "verdict.preset": tuple(PRESETS),
            "verdict.otherwise": VERDICTS, "verdict.rules[].verdict": VERDICTS,
            "classifier.api": CLASSIFIER_APIS, "judge.escalate": ("undecided",)}


def config_reference() -> str:
    choices, keys = config_choices(), config_keys()
    out = []
    for top in dict.fromkeys(k.path.split(".")[0].split("[")[0] for k in keys):
        rows = []
        for key in keys:
            if key.path == top or key.path.startswith((top + ".", top + "[")):
                meaning = key.meaning
                if key.path in choices:
                    label = {"m": "Keys", "l": "Items"}.get(key.type[0], "Values")
                    meaning += f" {label}: {', '.join(f'`{c}`' for c in choices[key.path])}."
                rows.append((f"`{key.path}`", key.type, key.default, meaning))
        out += [f"## {top}", "", *table_rows(("key", "type", "default", "meaning"), rows), ""]
    return "\n".join(out + presets_reference())


def presets_reference() -> list[str]:
    """The rules of every verdict preset, as `verdict.rules` would write them."""
    from transforms.decide.presets import PRESETS
    out = ["## Verdict presets", "", "The rules of each `verdict.preset` (and `--preset`), in "
           "order; the first that matches decides.", ""]
    for name, rules in PRESETS.items():
        out += [f"`{name}`:", "", "```yaml"]
        out += [f"- {yaml.safe_dump(_plain(r), default_flow_style=True, sort_keys=False).strip()}"
                for r in rules]
        out += ["```", ""]
    return out


# ---------------------------------------------------------------- metrics

def metric_entries() -> list[dict[str, Any]]:
    """Every built-in metric with what the registry and the catalog say about it."""
    from transforms.enrich.classifier.score import NO_CLASSIFIER
    from transforms.enrich.judge.scorers import NO_JUDGE
    from transforms.score.catalog import METRIC_DOCS
    from transforms.score.scoring import LOWER_IS_BETTER, MISSING, SCORERS, higher_is_better
    out = []
    for scorer in SCORERS:
        for metric in scorer.metrics:
            doc = METRIC_DOCS[metric]
            inputs = list(scorer.needs) + (["embedder"] if scorer.features else []) + (
                ["judge"] if scorer.judge else []) + (["classifier"] if scorer.classifier else [])
            nulls = ["`bot failed: …`", *(f"`{MISSING[n]}`" for n in scorer.needs
                                          if n in MISSING)]
            if scorer.features:
                nulls.append("the embedding call failed (its error)")
            if scorer.judge:
                nulls += [f"`{NO_JUDGE}`", "the judge's question failed after its retries "
                          "and repair round (its error; the raw replies in details)"]
            if scorer.classifier:
                nulls += [f"`{NO_CLASSIFIER}`", "a pair's classifier call failed (its error)"]
            nulls += [f"`{n}`" for n in doc.nulls]
            options = [f"`metric_options.{scorer.name}.{k}` (default `{_flow(v)}`)"
                       for k, v in scorer.option_defaults.items()]
            out.append({"metric": metric, "scorer": scorer.name, "inputs": inputs,
                        "higher_is_better": higher_is_better(metric, LOWER_IS_BETTER),
                        "unit": doc.unit,
                        "formula": doc.formula, "nulls": nulls, "options": options,
                        "judge": scorer.judge, "semantic": bool(scorer.features),
                        "classifier": scorer.classifier})
    return out


def _flow(value: Any) -> str:
    return yaml.safe_dump(_plain(value), default_flow_style=True, width=10**6).strip() \
        .removesuffix("\n...").strip()


DIRECTIONS = {True: "↑ higher is better", False: "↓ lower is better",
              None: "none (compare reports a change, never better or worse)"}


def metrics_reference() -> str:
    from transforms.score.scoring import GROUPS
    entries = metric_entries()
    out = [*table_rows(("metric", "inputs", "direction", "unit"), [
        (f"[`{e['metric']}`](#{e['metric']})", ", ".join(e["inputs"]) or "—",
         DIRECTIONS[e["higher_is_better"]], e["unit"])
        for e in entries]), "",
        "Groups select several metrics at once in `metrics:` and `--metrics`: "
        + "; ".join(f"`{g}` ({', '.join(ms)})" for g, ms in GROUPS.items()) + ".", ""]
    families = (("Offline metrics", lambda e: not (e["judge"] or e["semantic"]
                                                   or e["classifier"])),
                ("Semantic metrics (need an embedder)", lambda e: e["semantic"] and not e["judge"]),
                ("Judge metrics (need a judge)", lambda e: e["judge"]),
                ("Classifier metrics (need a classifier endpoint)", lambda e: e["classifier"]))
    for title, belongs in families:
        out += [f"## {title}", ""]
        for e in filter(belongs, entries):
            out += [f"### {e['metric']} {{#{e['metric']}}}", "", prose(e["formula"]) + ".", "",
                    f"- **Inputs**: {', '.join(e['inputs']) or 'none'}",
                    f"- **Direction**: {DIRECTIONS[e['higher_is_better']]}; unit: {e['unit']}",
                    f"- **Null when**: {'; '.join(e['nulls'])}"]
            if e["options"]:
                out.append(f"- **Options**: {'; '.join(e['options'])}")
            out.append("")
    return "\n".join(out)


SECTIONS: dict[str, Callable[[], str]] = {
    "metrics": metrics_reference,
    "config": config_reference,
    "cli": cli_reference,
    "inputs": inputs_reference,
    "tables": tables_reference,
}


def expand(markdown: str) -> str:
    """The page with every marker replaced by its generated section."""
    return MARKER.sub(lambda m: SECTIONS[m.group(1)]().rstrip() + "\n", markdown)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in SECTIONS:
        print(f"usage: python -m pipeline.reference {{{','.join(SECTIONS)}}}", file=sys.stderr)
        return 2
    sys.stdout.write(SECTIONS[args[0]]())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
