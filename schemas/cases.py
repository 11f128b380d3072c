"""Input case contract: canonical columns, column mapping and row validation.

A row either becomes an `EvalCase` or a `RowProblem` with the reason; nothing
is dropped silently.
"""
from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import pyarrow as pa

from schemas.messages import parse_messages, split_conversation, type_name
from schemas.records import EvalCase

REQUIRED_COLUMNS = ("question",)
OPTIONAL_COLUMNS = ("case_id", "expected_answer", "contexts", "answer", "suite", "tags", "label",
                    "messages")
# Columns that make up a case for its derived id: what the bot is asked and
# what it is judged against, never the answer (a baseline and a candidate with
# different answers must pair), nor the suite, the tags or a reviewer's label
# (regrouping or labelling cases must not change their ids). `messages` counts
# too, when present (derive_case_id).
ID_COLUMNS = ("question", "expected_answer", "contexts")
LABEL_VERDICTS = ("PASS", "WARN", "FAIL")
CANONICAL_COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
# column -> (type, meaning): the input table of the docs is made from this
INPUT_COLUMN_DOCS: dict[str, tuple[str, str]] = {
    "question": ("string", "the user's input"),
    "case_id": ("string", "a stable id; when absent `h-` + a SHA-1 of the case's inputs "
                "(question, expected_answer, contexts, messages; never the answer, so two "
                "runs with different answers pair; give ids when one question has several "
                "recorded answers)"),
    "expected_answer": ("string or list<string>", "the reference answer: one, or several "
                        "(see Multiple references); metrics that need it are null (not 0) "
                        "without it"),
    "contexts": ("list<string>", "retrieved passages (a JSON array in a string column is "
                 "accepted)"),
    "answer": ("string", "a recorded answer, used by the `precomputed` bot"),
    "suite": ("string", "a slice for the summaries"),
    "tags": ("list<string>", "free labels, copied to results/"),
    "label": ("string or number", "a reviewer's judgement of the recorded answer: a verdict "
              "name (`PASS`, `WARN`, `FAIL`, any case) or a number in [0, 1] (1 = "
              "acceptable); copied to results/ (as text: `PASS`, `0.75`) for `evalbeam "
              "calibrate`; not part of the derived `case_id`"),
    "messages": ("list<{role, content}>", "the earlier turns of a conversation, before the "
                 "question (see Conversations): roles `system`, `user`, `assistant` in any "
                 "case; a content of text or of OpenAI's text parts"),
}

# Common exports map without configuration (Ragas' names).
RAGAS_COLUMNS = {"user_input": "question", "response": "answer", "reference": "expected_answer",
                 "retrieved_contexts": "contexts"}


# Key of a raw row whose values could not be decoded: (error_type, message).
# Set by the reader (invalid UTF-8, an unreadable data page); such a row is a
# RowProblem like any other invalid row, so a bad byte never stops the run.
UNREADABLE = "__evalbeam_unreadable__"


MAX_VALUE_DEPTH = 32  # lists/objects in a value: messages need 4 (content parts), not 32


class TooDeep:
    """A JSON value that nests too deeply to parse (set by the JSON readers in
    place of the value): its row is an error row naming the column."""

    def __repr__(self) -> str:
        return "<too deeply nested JSON>"


def too_deep(value: Any, limit: int = MAX_VALUE_DEPTH) -> bool:
    """The value is TooDeep or has lists/dicts nested more than `limit` deep
    (walked without recursion: the walk itself must not overflow)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, TooDeep) or depth > limit:
            return True
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)
    return False


def strings_in(value: Any) -> Iterator[str]:
    """Every str inside a value (lists, tuples, mappings), walked without
    recursion (the walk itself must not overflow)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def not_text(value: Any) -> bool:
    """The value holds a str that is not text: a lone UTF-16 surrogate, which
    JSON may spell (`"\\ud800"`) and Python parses, but which no UTF-8 file
    can hold."""
    return any(not item.isascii() and _lone_surrogate(item) for item in strings_in(value))


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# DeepEval writes an MLLMImage into a test case's text as this placeholder
IMAGE_PLACEHOLDER = "[DEEPEVAL:IMAGE:"


def holds_image(value: Any) -> bool:
    """Whether a value holds DeepEval's image placeholder anywhere (a turn's
    content, a passage): evalbeam reads text, and a bot, a metric or a judge
    would read the placeholder as words."""
    return any(IMAGE_PLACEHOLDER in item for item in strings_in(value))


def _check_images(raw: Mapping[str, Any], row: Mapping[str, Any],
                  columns: Mapping[str, Source]) -> None:
    for col, value in row.items():
        if holds_image(value):
            given = [c for c in candidates(columns[col]) if raw.get(c) is not None]
            raise ValueError(f"{shown_source(given[0] if given else columns[col])} holds an "
                             "image (DeepEval's "
                             f"{IMAGE_PLACEHOLDER}...] for an MLLMImage); evalbeam evaluates "
                             "text only: leave multimodal test cases out, or describe the "
                             "image in text")


def _not_text_message(column: str) -> str:
    return (f"column '{column}' holds a lone UTF-16 surrogate (a JSON escape "
            "\\ud800-\\udfff without its pair), which is not text")


# The columns whose cell may hold JSON text that to_case parses into a list (a CSV
# cell's contexts): the strings it gives were not in the row to_case walked first
_PARSED_COLUMNS = ("contexts", "tags", "messages")


class InputError(ValueError):
    """A problem with the input as a whole: the run must not start."""


@dataclass(frozen=True, slots=True)
class RowProblem:
    """A row that cannot be evaluated, with where it came from and why."""

    source: str
    case_id: str | None
    error_type: str
    message: str


# A canonical column's source: one column name, or candidates tried in order
# (a preset's `ground_truth` then `ground_truths`): the first non-null value wins.
Source = str | tuple[str, ...]


def source_columns(mapping: Mapping[str, Any]) -> dict[str, Source]:
    """Canonical column -> column name(s) in the files (identity unless mapped)."""
    unknown = sorted(set(mapping) - set(CANONICAL_COLUMNS))
    if unknown:
        raise InputError(f"input.columns maps unknown column(s) {unknown}; "
                         f"known: {list(CANONICAL_COLUMNS)}")
    out: dict[str, Source] = {}
    for col in CANONICAL_COLUMNS:
        src = mapping.get(col, col)
        if isinstance(src, (list, tuple)):
            # str subclasses (a preset's Var, Joined) keep what they read
            src = tuple(s if isinstance(s, str) else str(s) for s in src)
            src = src if len(src) != 1 else src[0]
        elif not isinstance(src, str):
            raise InputError(f"input.columns.{col} must be a column name, got {src!r}")
        out[col] = src
    return out


class Joined(str):
    """A column whose list is written as one string joined with `separator`
    (DeepEval's save_as csv / jsonl: `"|".join(retrieval_context)`). A JSON
    array (or Python list literal) in it is still read as a list."""

    def __new__(cls, name: str, separator: str):
        self = super().__new__(cls, name)
        self.separator = separator
        return self

    def __getnewargs__(self):  # pickles (Beam) with its separator
        return str(self), self.separator

    def unjoined(self, value: Any) -> Any:
        """The cell's list: a plain string split on the separator."""
        if isinstance(value, str) and not is_text_list(value):
            value = value.split(self.separator)
        return passages(value)


# DeepEval's save_as writes a RetrievedContextData(context, source) as this text
_SAVED_RETRIEVED = re.compile(r"deepeval_source=.*?,deepeval_context=(.*)", re.DOTALL)


def passages(value: Any) -> Any:
    """DeepEval's retrieved passages as text: a RetrievedContextData (the object,
    its dump {context, source}, or its saved text `deepeval_source=...,
    deepeval_context=...`) as its context; anything else as it is (a wrong
    type is its row's error, later)."""
    if not isinstance(value, list):
        return value
    out = []
    for item in value:
        found = item.get("context") if isinstance(item, Mapping) else getattr(item, "context",
                                                                              None)
        if not isinstance(item, str) and isinstance(found, str):
            item = found
        saved = _SAVED_RETRIEVED.fullmatch(item) if isinstance(item, str) else None
        out.append(saved.group(1) if saved else item)
    return out


class TurnContexts(str):
    """Every passage the assistant turns of a DeepEval conversation retrieved
    (each Turn's retrieval_context), in order, each once: the recorded reply
    may rest on what an earlier turn retrieved. The column read is `turns`."""

    def __getnewargs__(self):
        return (str(self),)

    def read(self, value: Any) -> list[str] | None:
        value = turn_list(value, str(self))
        if value is None:
            return None
        found: list[Any] = []
        for turn in value:
            given = turn.get("retrieval_context") if isinstance(turn, Mapping) else None
            if given is None:
                continue
            for item in passages(given if isinstance(given, list) else [given]):
                if not isinstance(item, str) or item not in found:  # each passage once
                    found.append(item)
        return found or None


def turn_list(value: Any, name: str = "turns") -> list[Any] | None:
    """A DeepEval conversation's turns: the list, or its JSON text (a CSV cell)."""
    if isinstance(value, str) and is_text_list(value):
        value = parse_text_list(value, name)
    return value if isinstance(value, list) else None


_SAVED_SOURCE = re.compile(r"deepeval_source=(.*?),deepeval_context=.*", re.DOTALL)


def passage_sources(value: Any, separator: str = "|") -> list[str]:
    """The `source` of each RetrievedContextData among DeepEval's passages (the
    object, its dump, or the text save_as writes, joined with `separator` in
    csv and jsonl): passages() keeps only their context."""
    if isinstance(value, str):
        value = parse_text_list(value, "retrieval_context") if is_text_list(value) \
            else value.split(separator)
    found = []
    for item in value if isinstance(value, list) else []:
        source = item.get("source") if isinstance(item, Mapping) else getattr(item, "source",
                                                                              None)
        saved = _SAVED_SOURCE.fullmatch(item) if isinstance(item, str) else None
        source = saved.group(1) if saved else source
        if isinstance(source, str) and source:
            found.append(source)
    return found


DEEPEVAL_TAG_COLUMNS = ("scenario", "expected_outcome", "turns", "retrieval_context")


def deepeval_tags(raw: Mapping[str, Any]) -> list[str]:
    """What else a DeepEval case says, as key:value tags, so none of it is
    dropped unsaid: a conversation's `scenario` and `expected_outcome` (a
    golden with turns: evalbeam scores the turns, these describe them), each
    turn's `metadata`, and the `source` of every retrieved passage (the
    case's and its turns'), each tag once."""
    turns = turn_list(raw.get("turns")) or []
    tags = [f"{key}:{raw[key]}" for key in ("scenario", "expected_outcome")
            if turns and isinstance(raw.get(key), str) and raw[key]]
    for turn in turns:
        found = turn.get("metadata") if isinstance(turn, Mapping) else None
        tags += metadata_tags(found) if isinstance(found, Mapping) else []
    sources = passage_sources(raw.get("retrieval_context")) + [
        s for turn in turns if isinstance(turn, Mapping)
        for s in passage_sources(turn.get("retrieval_context"))]
    tags += [f"source:{s}" for s in sources]
    return list(dict.fromkeys(tags))


class Scenario(str):
    """A DeepEval ConversationalGolden's `scenario`: never a question, but a row
    that has only it is a conversation to simulate, and its errors/ row says so."""

    def __getnewargs__(self):
        return (str(self),)

    def read(self, value: Any) -> None:
        return None

    def check(self, raw: Mapping[str, Any]) -> None:
        scenario = raw.get(self)
        if scenario is not None and raw.get("input") is None and not raw.get("turns"):
            raise ValueError(f"a ConversationalGolden with a scenario and no turns "
                             f"({str(scenario)[:60]!r}) is a conversation DeepEval simulates "
                             "(ConversationSimulator); evalbeam evaluates conversations that "
                             "happened: simulate it, then give its turns")


class Var(str):
    """A promptfoo test's variable `vars.<key>`, in tests written as JSON, JSON
    Lines or YAML (`{"vars": {"question": ...}, "assert": [...]}`); the column
    read is `vars` (`field`: or `metadata`, for `metadata.<key>`). `passage`:
    a string is one passage (promptfoo's `context` var), so it becomes a list
    of one."""

    def __new__(cls, key: str, passage: bool = False, field: str = "vars"):
        self = super().__new__(cls, field)
        self.key, self.passage = key, passage
        return self

    def __getnewargs__(self):  # pickles (Beam) with its key
        return self.key, self.passage, str(self)

    @property
    def shown(self) -> str:
        return f"{self}.{self.key}"

    def read(self, value: Any) -> Any:
        found = value.get(self.key) if isinstance(value, Mapping) else None
        return one_passage(found) if self.passage else found

    def check(self, raw: Mapping[str, Any]) -> None:
        no_file_reference(self.shown, self.read(raw.get(self)))


def no_file_reference(shown: str, value: Any) -> None:
    """promptfoo loads a value written `file://path`; evalbeam would read the
    reference itself as the text, so such a row is an errors/ row."""
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, str) and item.startswith("file://"):
            raise ValueError(f"{shown} is a file reference ({item[:120]!r}); evalbeam does "
                             "not load files: write the text in the test")


class Cell(str):
    """A column of promptfoo's CSV of tests, read as it is (a `file://` value
    is an errors/ row, as in a test's vars)."""

    def __getnewargs__(self):
        return (str(self),)

    def read(self, value: Any) -> Any:
        return value

    def check(self, raw: Mapping[str, Any]) -> None:
        no_file_reference(str(self), raw.get(self))


class Passage(str):
    """A column whose plain string is one passage (a promptfoo CSV's `context`);
    a JSON array in it is still read as a list."""

    def __getnewargs__(self):
        return (str(self),)

    def read(self, value: Any) -> Any:
        return one_passage(value)

    def check(self, raw: Mapping[str, Any]) -> None:
        no_file_reference(str(self), self.read(raw.get(self)))


METADATA_COLUMN = "__metadata:"
# a promptfoo test's own fields (JSON, YAML): a CSV row's other columns are its vars
PROMPTFOO_TEST_KEYS = ("description", "vars", "assert", "options", "metadata", "provider",
                       "providerOutput", "threshold")  # promptfoo's CSV: `__metadata:KEY`, `__metadata:KEY[]`


class Metadata(str):
    """Another tool's metadata as tags, `key:value` (one per value of a list):
    the mappings of `names` (promptfoo's test `metadata`; DeepEval's `metadata`,
    `additional_metadata`; JSON text in a CSV cell), lists of strings as they
    are (DeepEval's `tags`), and with `prefix` a CSV's `PREFIX<KEY>` columns
    (promptfoo's `__metadata:KEY`, `__metadata:KEY[]`: a list split on commas,
    `\\,` keeping one). The column named is the first name. With `read_vars`
    (promptfoo) the test's other vars too (`vars` but those keys; a CSV's
    columns but those and the `__` ones). `extra`: the row's other tags after
    these (DeepEval's deepeval_tags), from the file's `extra_columns`."""

    def __new__(cls, names: tuple[str, ...], prefix: str | None = None,
                read_vars: frozenset[str] | None = None,
                extra: Callable[[Mapping[str, Any]], list[str]] | None = None,
                extra_columns: tuple[str, ...] = ()):
        self = super().__new__(cls, names[0])
        self.names, self.prefix, self.read_vars = tuple(names), prefix, read_vars
        self.extra, self.extra_columns = extra, tuple(extra_columns)
        return self

    def __getnewargs__(self):
        return self.names, self.prefix, self.read_vars, self.extra, self.extra_columns

    def other_vars(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """The vars of a promptfoo test (or the cells of its CSV row) that no
        column reads: `language`, used in a prompt template."""
        if self.read_vars is None:
            return {}
        if "vars" in raw:
            given = raw["vars"] if isinstance(raw["vars"], Mapping) else {}
        else:
            given = {k: v for k, v in raw.items() if isinstance(k, str)
                     and not k.startswith("__") and k not in PROMPTFOO_TEST_KEYS}
        return {k: v for k, v in given.items() if k not in self.read_vars and v != ""}

    def read_row(self, raw: Mapping[str, Any]) -> Any:
        tags: list[str] = []
        for name in self.names:
            value = _json_text(raw.get(name))
            if isinstance(value, Mapping):
                tags += metadata_tags(value)
            elif isinstance(value, list) and all(isinstance(v, str) for v in value):
                tags += value
            elif value is not None:
                return value  # check() makes the row an errors/ row
        found = csv_metadata(raw, self.prefix) if self.prefix else None
        tags += metadata_tags(found or {}) + metadata_tags(self.other_vars(raw))
        return tags + (self.extra(raw) if self.extra else []) or None

    def check(self, raw: Mapping[str, Any]) -> None:
        for name in self.names:
            value = _json_text(raw.get(name))
            if value is not None and not isinstance(value, (Mapping, list)):
                raise TypeError(f"{name} is {str(value)[:80]!r}, not a mapping of keys to "
                                "values")


def _json_text(value: Any) -> Any:
    """A CSV cell's JSON object or array as the value it holds."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def csv_metadata(raw: Mapping[str, Any], prefix: str = METADATA_COLUMN
                 ) -> dict[str, Any] | None:
    """The `__metadata:KEY` cells of a promptfoo CSV row, as promptfoo reads
    them (an empty cell sets nothing)."""
    found: dict[str, Any] = {}
    for name, value in raw.items():
        if not (isinstance(name, str) and name.startswith(prefix)) or value is None:
            continue
        key = name[len(prefix):]
        if key.endswith("[]") and isinstance(value, str):
            found[key[:-2]] = [v.strip().replace("\\,", ",")
                               for v in re.split(r"(?<!\\),", value)]
        else:
            found[key] = value
    return found or None


def metadata_tags(metadata: Mapping[str, Any]) -> list[str]:
    """`key:value` per value (a list gives one tag per item; a null none)."""
    tags = []
    for key, value in metadata.items():
        for item in value if isinstance(value, list) else [value]:
            if item is None:
                continue
            text = _as_text(item)
            if not isinstance(text, str):  # a mapping or a nested list
                text = json.dumps(text, ensure_ascii=False, sort_keys=True, default=str)
            tags.append(f"{key}:{text}")
    return tags


def one_passage(value: Any) -> Any:
    if not isinstance(value, str) or is_text_list(value):
        return value
    return [value]


def is_text_list(value: str) -> bool:
    """Whether a string holds a list written as text (parse_text_list reads it):
    such a cell stays as it is, to be read as that list."""
    try:
        return isinstance(parse_text_list(value, "the cell"), list)
    except TypeError:
        return False


# promptfoo assertion types whose value is a reference answer (rouge-n, bleu,
# gleu and meteor may hold several); `not-` ones are not references
REFERENCE_ASSERTIONS = ("equals", "similar", "factuality", "levenshtein", "rouge-n", "bleu",
                        "gleu", "meteor")
# `__expected` prefixes (promptfoo's CSV) of assertions that are not one
OTHER_ASSERTIONS = ("contains", "icontains", "starts-with", "regex", "is-json", "contains-json",
                    "javascript", "python", "fn", "grade", "llm-rubric", "model-graded-closedqa",
                    "answer-relevance", "context-faithfulness", "context-recall",
                    "context-relevance", "moderation", "webhook", "cost", "latency",
                    "perplexity", "classifier", "is-valid-openai-tools-call", "not-", "select-best")


class Asserted(str):
    """promptfoo's expected output: the value of a test's first assertion whose
    value is a reference answer (`equals`, `similar`, `factuality`, ...), from
    the `assert` list of tests written as JSON or YAML, or from a CSV's
    `__expected` cell (`similar(0.8): text`; a text with no assertion prefix
    means `equals`, as in promptfoo)."""

    def __getnewargs__(self):
        return (str(self),)

    def read(self, value: Any) -> Any:
        if isinstance(value, str):
            return expected_of_cell(value)
        if isinstance(value, Mapping):  # one assertion, not in a list
            value = [value]
        if not isinstance(value, (list, tuple)):
            return None
        if value and all(isinstance(v, str) for v in value):  # a CSV cell's JSON array
            return list(value)
        for item in value:
            if not isinstance(item, Mapping):
                continue
            if item.get("type") == "assert-set":  # a group: its own assert list
                found = self.read(item.get("assert"))
                if found is not None:
                    return found
            elif _reference_type(str(item.get("type", ""))) and item.get("value") is not None:
                return _as_text(item["value"])
        return None

    def check(self, raw: Mapping[str, Any]) -> None:
        no_file_reference(str(self), self.read(raw.get(self)))


def _as_text(value: Any) -> Any:
    """A number or boolean as promptfoo compares it, as its text (`equals: 42`);
    a string or a list as it is."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value) if isinstance(value, (int, float)) else value


def _reference_type(kind: str) -> bool:
    return kind.split("(")[0].strip() in REFERENCE_ASSERTIONS


def expected_of_cell(cell: str) -> str | None:
    """The reference answer of a promptfoo CSV `__expected` cell (None: an
    assertion that holds none, such as `contains: refund`)."""
    kind, value = cell_assertion(cell)
    return value if kind in REFERENCE_ASSERTIONS else None


def cell_assertion(cell: str) -> tuple[str, str | None]:
    """The assertion type of a promptfoo CSV `__expected` cell and the value
    after its prefix; a text with no assertion prefix is `equals` of itself."""
    head, colon, rest = cell.partition(":")
    kind = head.split("(")[0].strip().lower()
    if colon and (kind in REFERENCE_ASSERTIONS or kind in OTHER_ASSERTIONS
                  or kind.startswith("not-")):
        return kind, rest.strip() or None
    if cell.strip() in ("is-json", "contains-json"):
        return cell.strip(), None
    return "equals", cell or None


def unchecked_assertions(value: Any) -> list[str]:
    """The types of a promptfoo test's assertions (its `assert` list, an
    assert-set's within, or a CSV `__expected` cell) whose value evalbeam does
    not read: all but the reference answers' (`equals`, `similar`, ...)."""
    if isinstance(value, str):
        kinds = [cell_assertion(value)[0]] if value.strip() else []
    else:
        items = [value] if isinstance(value, Mapping) else \
            value if isinstance(value, (list, tuple)) else []
        kinds = []
        for item in (i for i in items if isinstance(i, Mapping)):
            kind = str(item.get("type") or "").split("(")[0].strip()
            kinds += unchecked_assertions(item.get("assert")) if kind == "assert-set" else [kind]
    return [k for k in kinds if k and k not in REFERENCE_ASSERTIONS]


def _check_sources(raw: Mapping[str, Any], columns: Mapping[str, Source]) -> None:
    """Each tool column's own check (`check(raw)`: DeepEval's scenario without
    turns, metadata that is not a mapping). And promptfoo runs a test whose var
    is a list of values once per value; evalbeam reads one case per test, so it
    says so; and of vars that are not a mapping (`vars: file://vars.yaml`,
    which promptfoo loads)."""
    for src in columns.values():
        for var in candidates(src):
            if callable(getattr(var, "check", None)):  # a tool's own row check
                var.check(raw)
            if not isinstance(var, Var) or var != "vars":
                continue
            if isinstance(raw.get(var), str):
                raise ValueError(f"vars is {raw.get(var)[:80]!r}, not a mapping of variables "
                                 "(evalbeam does not load vars files): write the vars in the test")
            found = var.read(raw.get(var)) if not var.passage else None
            if isinstance(found, list) and not all(isinstance(v, Mapping) for v in found):
                raise ValueError(f"{var.shown} is a list of {len(found)} values (promptfoo runs "
                                 "one test per value); evalbeam reads one case per test: "
                                 "write one test per value")


def candidates(src: Source) -> tuple[str, ...]:
    return (src,) if isinstance(src, str) else src


def shown_source(src: Source) -> str:
    """A source as its user knows it, for messages: `'response'`, `'a' or 'b'`."""
    return "'" + "' or '".join(getattr(s, "shown", s) for s in candidates(src)) + "'"


def source_names(columns: Mapping[str, Source]) -> set[str]:
    """Every file column the mapping may read."""
    return {name for src in columns.values() for column in candidates(src)
            for name in (*getattr(column, "names", (column,)),
                         *getattr(column, "extra_columns", ()))}


def picked_name(raw: Mapping[str, Any], columns: Mapping[str, Source], col: str) -> str:
    """The name, as the user's file has it (Ragas' `user_input`, promptfoo's
    `vars.input`), of the candidate a column's value came from, for messages."""
    src = columns.get(col, col)
    found = next((s for s in candidates(src) if _value(raw, s) is not None), col)
    return str(getattr(found, "shown", found))


def pick(raw: Mapping[str, Any], src: Source) -> Any:
    """The row's value for a source: the first candidate that is not null."""
    if isinstance(src, str):
        return _value(raw, src)
    return next((v for v in (_value(raw, s) for s in src) if v is not None), None)


def _value(raw: Mapping[str, Any], src: str) -> Any:
    if isinstance(src, Joined):
        return src.unjoined(raw.get(src))
    if isinstance(src, (Var, Asserted, Passage, Cell, TurnContexts, Scenario)):
        return src.read(raw.get(src))
    if isinstance(src, Metadata):
        return src.read_row(raw)
    return raw.get(src)


def check_columns(names, columns: Mapping[str, Source], path: str) -> None:
    """Raise InputError when a required column is missing after mapping."""
    names = set(names)
    for col in REQUIRED_COLUMNS:
        src = columns[col]
        if col == "question" and names & set(candidates(columns.get("messages", ()))):
            continue  # the whole conversation in messages: its last user turn
        if not names & set(candidates(src)):
            hint = f" (mapped from {shown_source(src)})" if src != col else ""
            raise InputError(f"{path}: missing required column '{col}'{hint}; "
                             f"columns present: {sorted(names)}{_separator_hint(names)}")


def _separator_hint(names: set) -> str:
    """A header read as one column that another separator would split: a CSV
    written with ';' or tabs (spreadsheets in many locales do); Excel's `sep=`
    line above the header."""
    if any(str(name).startswith("sep=") for name in names):
        return (" (the first line is Excel's 'sep=' line, not the header: delete it, so "
                "that the header is the first line)")
    if len(names) != 1:
        return ""
    (name,) = names
    for sep, called in ((";", "';'"), ("\t", "tabs")):
        if sep in str(name):
            return (f" (the header looks separated by {called}; evalbeam reads CSV "
                    "separated by commas: save it with commas, or as JSON Lines or Parquet)")
    return ""


def check_file_schema(schema: pa.Schema, columns: Mapping[str, Source], path: str) -> None:
    """Raise InputError when a required column is missing after mapping."""
    check_columns(schema.names, columns, path)


def derive_case_id(row: Mapping[str, Any]) -> str:
    """Stable id from the row's content, so re-runs give the same ids. The
    earlier turns of a conversation are part of it (only when present, so that
    the ids of single-turn rows stay what they were)."""
    content = {k: row.get(k) for k in ID_COLUMNS}
    if row.get("messages") is not None:
        content["messages"] = row["messages"]
    payload = json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
    # surrogatepass: a lone surrogate (an error row's content) must not stop the hash
    return "h-" + hashlib.sha1(payload.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _optional_text(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    raise TypeError(f"{name} must be a string, got {type(value).__name__}")


def _string_list(value: Any, name: str) -> list[str] | None:
    """A list of strings; a JSON array in a string column is accepted too."""
    if value is None:
        return None
    if isinstance(value, str):
        value = parse_text_list(value, name)
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of strings, got {type(value).__name__}")
    bad = [type_name(v) for v in value if not isinstance(v, str)]
    if bad:
        raise TypeError(f"{name} must be a list of strings, found element(s) of type {bad[0]}")
    return list(value)


def _passages(value: Any) -> list[str] | None:
    """contexts: a list of strings, or one passage written as plain text (a CSV
    cell typed as it is, a JSON Lines string), as the promptfoo preset reads
    `vars.context`; text that opens with '[' is read as a list or refused."""
    if isinstance(value, str) and not value.lstrip().startswith("["):
        return [value]
    return _string_list(value, "contexts")


def _references(value: Any) -> list[str] | None:
    """expected_answer: one reference (a string) or several (a list of strings)."""
    if value is None or isinstance(value, str):
        return None if value is None else [value]
    if not isinstance(value, (list, tuple)):  # a number, a boolean, an object
        raise TypeError("expected_answer must be a string or a list of strings, got "
                        f"{type(value).__name__}")
    refs = _string_list(value, "expected_answer")
    if not refs:
        raise ValueError("expected_answer is an empty list of references")
    return refs


def parse_text_list(value: str, name: str) -> Any:
    """A list written as text: a JSON array, or a Python list literal as pandas'
    to_csv writes one (Ragas' EvaluationDataset.to_csv)."""
    try:
        return json.loads(value)
    except ValueError:
        pass
    except RecursionError:
        raise TypeError(f"{name} is a JSON text nested too deeply to read") from None
    if value.lstrip().startswith("["):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    # the usual slip in a CSV: one passage typed into the cell as it is
    raise TypeError(f"{name} must be a list of strings, got a plain string: write it as a "
                    'JSON array, ["first", "second"] (one item: ["its text"])')


def is_label_error(message: str | None) -> bool:
    """Whether an errors/ row's message is parse_label's: every one of its
    messages starts with the column's name."""
    return bool(message) and message.startswith("label ")


def parse_label(value: Any) -> str | None:
    """A reviewer's label: a verdict name (PASS, WARN, FAIL; any case) or a
    number in [0, 1] (1 = fully acceptable). Returned normalised as text
    ("PASS", "0.75") so one string column holds both kinds."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError("label must be a verdict name or a number in [0, 1], got bool")
    if isinstance(value, str):
        text = value.strip()
        if text.upper() in LABEL_VERDICTS:
            return text.upper()
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"label {value[:40]!r} is not PASS, WARN, FAIL or a number "
                             "in [0, 1]") from None
    if not isinstance(value, (int, float)):
        raise TypeError(f"label must be a verdict name or a number in [0, 1], got "
                        f"{type(value).__name__}")
    number = float(value)
    if not 0.0 <= number <= 1.0:  # also rejects NaN
        raise ValueError(f"label {value!r} is outside [0, 1]")
    return repr(number)


def _split(turns: list[dict[str, str]], name: str
           ) -> tuple[str, list[dict[str, str]], str | None]:
    """(question, earlier turns, recorded reply) of a whole conversation. A
    system turn after the question is refused, not dropped: it instructs no
    turn a bot is sent (they all come before it) and is no reply."""
    question, messages = split_conversation(turns)
    after = range(len(messages) + 1, len(turns))
    late = next((i for i in after if turns[i]["role"] == "system"), None)
    if late is not None:
        raise ValueError(f"{name}[{late}] is a system turn after the last user turn (the "
                         "question): a bot is sent the turns before the question only; move "
                         "it before the question or remove it")
    replies = [turns[i]["content"] for i in after]  # the rest are assistant turns
    return question, messages, "\n\n".join(replies) or None


def _question(value: Any, messages: list[dict[str, str]] | None, name: str = "question",
              messages_name: str = "messages"
              ) -> tuple[str, list[dict[str, str]] | None, str | None]:
    """(question, earlier turns, recorded reply); a question given as a whole
    conversation (a list of turns) is split into its last user turn and the
    turns before it; the assistant's reply after that turn (Ragas' and
    DeepEval's recorded conversations end with it) is the recorded reply."""
    if value is None:
        if messages is not None:  # the whole conversation in messages (OpenAI's chat format)
            if not any(m["role"] == "user" for m in messages):
                raise ValueError("question is null and messages has no user turn to answer")
            return _split(messages, messages_name)
        raise ValueError("question is null")
    if isinstance(value, (list, tuple)):
        if messages is not None:
            raise ValueError("question is a conversation and messages is set too")
        return _split(parse_messages(value, name), name)
    if not isinstance(value, str):
        raise TypeError(f"question must be a string, got {type(value).__name__}")
    return value, messages, None


def to_case(raw: Mapping[str, Any], columns: Mapping[str, Source], source: str
            ) -> EvalCase | RowProblem:
    """Validate one input row (already read as a dict of source columns)."""
    row = {col: pick(raw, src) for col, src in columns.items()}
    deep = [col for col, value in row.items() if too_deep(value)]
    for col in deep:
        row[col] = None  # neither read nor hashed any further
    broken = [col for col, value in row.items() if col not in deep and not_text(value)]
    for col in broken:
        row[col] = None  # the row's other columns still give its case id
    given_id = row.get("case_id")
    case_id = None if given_id is None else str(given_id)
    if broken and UNREADABLE not in raw:
        raw = {UNREADABLE: ("invalid_encoding", _not_text_message(broken[0]))}
    if deep and UNREADABLE not in raw:
        raw = {UNREADABLE: ("invalid_value", f"{', '.join(deep)} nested more than "
                                             f"{MAX_VALUE_DEPTH} levels deep")}
    if UNREADABLE in raw:
        error_type, message = raw[UNREADABLE]
        derived = derive_case_id(row) if any(v is not None for v in row.values()) else None
        return RowProblem(source, case_id or derived, error_type, message)
    try:
        _check_sources(raw, columns)
        _check_images(raw, row, columns)
        # a conversation's problems name the field as the file has it (user_input[1])
        named = {col: picked_name(raw, columns, col) if given else col for col, given in (
            ("question", isinstance(row["question"], (list, tuple))),
            ("messages", row.get("messages") is not None))}
        question, messages, reply = _question(
            row["question"], parse_messages(row.get("messages"), named["messages"]),
            named["question"], named["messages"])
        answer = _optional_text(row.get("answer"), "answer")
        if not question.strip():
            raise ValueError("question is empty")
        references = _references(row.get("expected_answer"))
        case = EvalCase(
            case_id=case_id or derive_case_id(_id_content(row, question, messages)),
            question=question,
            expected_answer=references[0] if references else None,
            contexts=_passages(row.get("contexts")),
            answer=reply if answer is None else answer,
            suite=_optional_text(row.get("suite"), "suite"),
            tags=_string_list(row.get("tags"), "tags") or [],
            label=parse_label(row.get("label")),
            source=source,
            references=references if references and len(references) > 1 else None,
            messages=messages or None,
            answer_from_conversation=answer is None and reply is not None,
        )
    except (TypeError, ValueError) as exc:
        kind = "wrong_type" if isinstance(exc, TypeError) else "invalid_value"
        return RowProblem(source, case_id or derive_case_id(row), kind, str(exc))
    # JSON text inside a string cell (a CSV cell's contexts) is parsed above; every
    # other value of the case was in the row, checked already
    broken = [col for col in _PARSED_COLUMNS
              if isinstance(row.get(col), str) and not_text(getattr(case, col))]
    if broken:
        return RowProblem(source, case.case_id, "invalid_encoding", _not_text_message(broken[0]))
    return case


def _id_content(row: Mapping[str, Any], question: str, messages) -> dict[str, Any]:
    """The row as its derived id sees it: list columns given as JSON text (CSV)
    count as the lists they hold, so one case has one id in every format. A
    conversation counts as its question and earlier turns (as normalised), as
    if given in `question` and `messages`: never the recorded reply after the
    question, and never nothing (a file of whole conversations in `messages`
    hashed a null question, so every row with one system prompt had one id)."""
    content = dict(row, question=question)
    if isinstance(content.get("contexts"), str):
        content["contexts"] = _passages(content["contexts"])
    if isinstance(content.get("tags"), str):
        content["tags"] = _string_list(content["tags"], "tags")
    refs = content.get("expected_answer")
    if isinstance(refs, (list, tuple)):  # one reference has one id, as a list or a string
        content["expected_answer"] = refs[0] if len(refs) == 1 else list(refs)
    content["messages"] = messages or None
    return content
