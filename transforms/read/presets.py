"""Column presets (`input.preset`): the names other evaluation tools give the
columns, so their files load without a hand-written `input.columns`.

A preset maps each canonical column to a file column, or to candidates tried
in order (the first non-null value of the row wins). `input.columns` entries
override the preset's. Values need no conversion of their own: a reference
list becomes several references, and a question given as a list of turns
(Ragas' MultiTurnSample, OpenAI evals, Inspect, DeepEval's `turns`) becomes the
conversation's last user turn with the turns before it as `messages`.
"""
from __future__ import annotations

import functools
import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from schemas.cases import (CANONICAL_COLUMNS, DEEPEVAL_TAG_COLUMNS, METADATA_COLUMN, Asserted,
                           Cell, Joined, Metadata, Passage, Scenario, TurnContexts, Var,
                           deepeval_tags, turn_list, unchecked_assertions)
from transforms.text.wording import counted

PROMPTFOO_QUESTION_VARS = ("question", "query", "input", "prompt")
PROMPTFOO_ASSERT_COLUMNS = ("assert", "__expected", *(f"__expected{n}" for n in range(1, 10)))

PRESETS: dict[str, dict[str, Any]] = {
    # Ragas >= 0.2 (SingleTurnSample / MultiTurnSample, EvaluationDataset.to_jsonl / to_csv)
    "ragas": {"question": "user_input", "answer": "response", "expected_answer": "reference",
              "contexts": "retrieved_contexts"},
    # Ragas 0.1 and older: `ground_truths` (a list) or `ground_truth` (a string)
    "ragas_v1": {"question": "question", "answer": "answer",
                 "expected_answer": ("ground_truths", "ground_truth"), "contexts": "contexts"},
    # DeepEval goldens and test cases (EvaluationDataset.save_as json / jsonl / csv);
    # a ConversationalGolden's `turns` when there is no `input` (a `scenario` alone
    # is an errors/ row); its csv and jsonl join retrieval_context with '|', its
    # json keeps the list; without one, the passages the turns retrieved; tags,
    # metadata (a test case's) or additional_metadata (a golden's), then a
    # conversation's scenario and expected_outcome, its turns' metadata and the
    # passages' sources as tags (deepeval_tags)
    "deepeval": {"question": ("input", "turns", Scenario("scenario")),
                 "answer": "actual_output", "expected_answer": "expected_output",
                 "contexts": (Joined("retrieval_context", "|"), TurnContexts("turns")),
                 "case_id": "name",
                 "tags": Metadata(("tags", "metadata", "additional_metadata"),
                                  extra=deepeval_tags,
                                  extra_columns=DEEPEVAL_TAG_COLUMNS)},
    # OpenAI evals samples: {"input": [chat messages], "ideal": "..." or [...]}
    "openai_evals": {"question": "input", "expected_answer": "ideal"},
    # Inspect AI datasets: {"id", "input": text or chat messages, "target": text or [...]}
    "inspect": {"case_id": "id", "question": "input", "expected_answer": "target"},
    # promptfoo tests: {description, vars: {...}, assert: [...], metadata: {...}} in YAML
    # (a promptfooconfig.yaml's tests:), JSON or JSON Lines, or a CSV of vars with
    # `__expected`, `__description`, `__metadata:KEY`
    "promptfoo": {
        "case_id": ("description", "__description"),
        "tags": Metadata(("metadata",), METADATA_COLUMN),
        "question": (*(Var(k) for k in PROMPTFOO_QUESTION_VARS),
                     *(Cell(k) for k in PROMPTFOO_QUESTION_VARS)),
        "expected_answer": tuple(Asserted(c) for c in PROMPTFOO_ASSERT_COLUMNS),
        "contexts": (Var("context", passage=True), Var("contexts", passage=True),
                     Passage("context"), Passage("contexts"))},
}


def preset_columns(name: str | None) -> dict[str, Any]:
    """The preset's mapping (empty for None); KeyError for an unknown name."""
    return dict(PRESETS[name]) if name else {}


def input_columns(preset: str | None, columns: Mapping[str, Any]) -> dict[str, Any]:
    """The preset's mapping with the config's `input.columns` on top. With the
    promptfoo preset a mapped name is a test's variable: `topic` (or
    `vars.topic`) is read from the test's vars, and from a CSV's `topic` column;
    `metadata.KEY` from the test's metadata, and a CSV's `__metadata:KEY`. With
    the deepeval preset a column mapped to the contexts (`context`) is split on
    '|' as save_as joined it."""
    mapped = dict(columns)
    if preset == "promptfoo":
        mapped = {col: _promptfoo_var(col, src) for col, src in mapped.items()}
    if preset == "deepeval" and type(mapped.get("contexts")) is str:
        # save_as csv / jsonl join `context` (HallucinationMetric's) with '|' too
        mapped["contexts"] = Joined(mapped["contexts"], "|")
    merged = {**preset_columns(preset), **mapped}
    if preset == "promptfoo" and merged["tags"] is PRESETS["promptfoo"]["tags"]:
        merged["tags"] = _with_other_vars(merged)
    return merged


def _with_other_vars(mapping: Mapping[str, Any]) -> Metadata:
    """promptfoo's tags: its metadata, and the vars no column reads (as
    `key:value`, so a prompt template's `language` is not dropped unsaid)."""
    read = {str(getattr(s, "key", s)) for src in mapping.values()
            for s in (src if isinstance(src, tuple) else (src,))
            if not isinstance(s, Var) or s.shown.startswith("vars.")}
    read |= set(CANONICAL_COLUMNS) - set(mapping)  # read as they are named
    tags = PRESETS["promptfoo"]["tags"]
    return Metadata(tags.names, tags.prefix, frozenset(read))


def _promptfoo_var(column: str, src: Any) -> Any:
    if not isinstance(src, str):
        return src
    if src.startswith("metadata."):
        key = src[len("metadata."):]
        return Var(key, field="metadata"), Cell(METADATA_COLUMN + key)
    key = src[len("vars."):] if src.startswith("vars.") else src
    if column == "contexts":
        return Var(key, passage=True), Passage(key)
    return Var(key), Cell(key)


# Columns that give a tool's files away (any of them, beside the required ones).
_SIGNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {  # preset: (all of, any of)
    "ragas": (("user_input",), ("response", "reference", "retrieved_contexts")),
    "ragas_v1": (("question",), ("ground_truths", "ground_truth")),
    "deepeval": (("input",), ("actual_output", "expected_output", "retrieval_context")),
    "openai_evals": (("input",), ("ideal",)),
    "inspect": (("input",), ("target",)),
    "promptfoo": (("vars",), ("assert", "description", "options", "metadata")),
}


def _tool_signs(names) -> list[tuple[str, tuple[str, ...]]]:
    """(preset, the columns that gave it away) for each tool whose files have
    columns like `names`, in _SIGNS' order."""
    names = set(names)
    return [(preset, every + tuple(sorted(names & set(some))))
            for preset, (every, some) in _SIGNS.items()
            if set(every) <= names and names & set(some)]


def suggest_preset(names, columns: Mapping[str, Any]) -> str | None:
    """A hint when a file's columns look like another tool's and neither a preset
    nor a mapping is in use (a Ragas file would otherwise lose its references)."""
    if any(src != col for col, src in columns.items()):
        return None
    signs = _tool_signs(names)
    if not signs:
        return None
    preset, found = signs[0]
    return (f"the columns {', '.join(found)} look like the '{preset}' preset's: "
            f"set input.preset: {preset}")


def tool_preset(names) -> tuple[str, tuple[str, ...]] | None:
    """(preset, the columns that gave it away) when `names` are one tool's
    columns and no other's; None when they look like no tool's or several."""
    signs = _tool_signs(names)
    return signs[0] if len(signs) == 1 else None


# ------------------------------------------------------------- unread fields

@dataclass(frozen=True, slots=True)
class Unread:
    """Fields of a tool's files that its preset knows it does not read, and
    where its guide says so: a run with values in them says so, rather than
    dropping them unsaid."""
    tool: str
    guide: str
    fields: tuple[str, ...]
    turn_fields: tuple[str, ...] = ()  # fields of each of a row's `turns`
    assertions: tuple[str, ...] = ()  # columns of promptfoo assertions, noted by type

    def without(self, read) -> "Unread":
        """Less the columns `input.columns` maps (those are read)."""
        return replace(self, fields=tuple(f for f in self.fields if f not in read))


UNREAD: dict[str, Unread] = {
    # deepeval 4.3.1's Golden, ConversationalGolden, LLMTestCase and Turn
    "deepeval": Unread(
        "DeepEval", "guides/migrating-deepeval.md#fields-evalbeam-does-not-read",
        ("context", "user_description", "persona", "comments", "custom_column_key_values",
         "expectations", "expected_labels", "tools_called", "expected_tools", "token_cost",
         "input_token_count", "output_token_count", "completion_time"),
        ("user_id", "audio", "latency_ms", "interrupted", "provider_transcript",
         "tools_called", "mcp_tools_called", "mcp_resources_called", "mcp_prompts_called")),
    # Ragas >= 0.2's SingleTurnSample and testset columns
    "ragas": Unread(
        "Ragas", "guides/migrating-ragas.md#fields-evalbeam-does-not-read",
        ("reference_contexts", "reference_tool_calls", "multi_responses", "rubrics",
         "persona_name", "query_style", "query_length")),
    # promptfoo's assertions: only a reference answer's value is read (the expected answer)
    "promptfoo": Unread(
        "promptfoo", "guides/migrating-promptfoo.md#assertions-become-metrics-and-verdict-rules",
        (), assertions=PROMPTFOO_ASSERT_COLUMNS),
}

_EMPTY_TEXT = ("", "null", "none", "[]", "{}")  # how csv files write an empty value


def filled(value: Any) -> bool:
    """Does the value say something? DeepEval's save_as writes every column,
    empty ones as null, "" or [] (csv: an empty cell), so a column's presence
    says nothing."""
    if isinstance(value, str):
        return value.strip().lower() not in _EMPTY_TEXT
    if isinstance(value, (list, tuple, dict)):
        return any(filled(v) for v in (value.values() if isinstance(value, dict) else value))
    return value is not None and value is not False


@functools.lru_cache(maxsize=None)
def _maybe_filled(names: tuple[str, ...]) -> re.Pattern:
    """A key among `names` whose value is not plainly empty (null, "", [], {},
    false): a record without one needs no parse."""
    keys = "|".join(re.escape(n) for n in names)
    return re.compile(rf'"(?:{keys})"\s*:\s*(?!null\b|false\b|""|\[\s*\]|\{{\s*\}})')


def unread_in(unread: Unread, row: Mapping[str, Any]) -> list[str]:
    """The unread fields the row has a value in, as a note names them."""
    found = [f"`{f}`" for f in unread.fields if filled(row.get(f))]
    found += [f"`{kind}` assertion" for kind in dict.fromkeys(
        k for c in unread.assertions for k in unchecked_assertions(row.get(c)))]
    turns = row.get("turns")
    if unread.turn_fields and isinstance(turns, str) and not _maybe_filled(
            unread.turn_fields).search(turns):
        return found
    turns = [t for t in turn_list(turns) or () if isinstance(t, dict)] \
        if unread.turn_fields else []
    return found + [f"`{f}` in a turn" for f in unread.turn_fields
                    if any(filled(t.get(f)) for t in turns)]


@dataclass
class UnreadTally:
    """The rows with values in a preset's unread fields, counted while the
    planner reads the input (one note per field, once per run)."""
    unread: Unread
    rows: int = 0
    found: Counter = field(default_factory=Counter)

    def add(self, row: Any) -> None:
        self.rows += 1
        if isinstance(row, Mapping):
            self.found.update(unread_in(self.unread, row))

    def add_line(self, line: bytes) -> None:
        """A JSON Lines record, parsed only when it may hold a value."""
        names = self.unread.fields + self.unread.turn_fields + self.unread.assertions
        text = line.decode("utf-8", "replace")
        if not _maybe_filled(names).search(text):
            self.rows += 1
            return
        try:
            self.add(json.loads(text))
        except ValueError:
            self.rows += 1

    def notes(self) -> list[str]:
        """One line per field with values, in the preset's order (the same
        input gives the same lines)."""
        u = self.unread
        names = [f"`{f}`" for f in u.fields] + [f"`{f}` in a turn" for f in u.turn_fields]
        asserted = sorted(n for n in self.found if n.endswith(" assertion"))
        return [self._note(name, f"{u.tool} {name}", "read") for name in names
                if self.found[name]] + [self._note(n, f"a {u.tool} {n}", "check")
                                        for n in asserted]

    def _note(self, name: str, what: str, verb: str) -> str:
        n = self.found[name]
        return (f"{n:,} of {counted(self.rows, 'row')} {'has' if n == 1 else 'have'} "
                f"{what}, which evalbeam does not {verb} (see {self.unread.guide})")
