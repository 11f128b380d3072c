"""Column presets, each on a small file in that tool's own form (examples/presets)."""
from __future__ import annotations

import os

import pytest

from pipeline.config import ConfigError, parse_config
from schemas.cases import RowProblem, source_columns, to_case
from tests.conftest import ROOT
from tests.pipeline_helpers import manifest, read_rows, run_cli
from transforms.read.cases import plan_shards, read_shard_rows
from transforms.read.presets import PRESETS, input_columns

PRESET_DIR = os.path.join(ROOT, "examples", "presets")


def _cases(preset: str, name: str):
    columns = source_columns(input_columns(preset, {}))
    out = []
    for shard in plan_shards(os.path.join(PRESET_DIR, name), columns):
        for source, raw in read_shard_rows(shard, columns):
            case = raw if isinstance(raw, RowProblem) else to_case(raw, columns, source)
            assert not isinstance(case, RowProblem), case
            out.append(case)
    return out


@pytest.mark.parametrize("name", ["ragas_v1.jsonl", "ragas_v1.csv"])
def test_ragas_v1_list_references(name):
    cases = _cases("ragas_v1", name)
    assert len(cases) == 5
    assert cases[0].references == ["Refunds are accepted within 30 days of delivery.",
                                   "You can return unused items within 30 days."]
    assert cases[0].expected_answer == cases[0].references[0]
    assert cases[2].references is None and cases[2].expected_answer.startswith("A single")
    assert cases[1].contexts == ["Lumenfold Cloud Plus costs $10 per month or $100 per year."]
    assert cases[1].answer == "The Plus plan costs $10 per month."


def test_ragas_single_and_multi_turn():
    cases = _cases("ragas", "ragas.jsonl")
    assert [c.answer is not None for c in cases] == [True] * 4 + [False]
    assert cases[0].contexts and cases[0].expected_answer
    multi = cases[4]
    assert multi.question == "How long do you keep my video?"
    assert multi.messages == [{"role": "user", "content": "Hi, I'm on the Plus plan."},
                              {"role": "assistant", "content": "Great, how can I help?"}]


def test_deepeval_json_goldens():
    cases = _cases("deepeval", "deepeval.json")
    assert len(cases) == 5
    assert cases[3].question == "Do you ship to Canada?"
    assert cases[3].answer == "Yes, we ship to Canada."
    assert cases[3].contexts[0].startswith("We ship to the US")


def test_openai_evals_and_inspect():
    evals = _cases("openai_evals", "openai_evals.jsonl")
    assert evals[0].question == "How long is the refund window?"
    assert evals[0].messages == [{"role": "system",
                                  "content": "You are Lumenfold's support assistant."}]
    assert len(evals[0].references) == 2 and evals[2].references is None
    inspect = _cases("inspect", "inspect.jsonl")
    assert [c.case_id for c in inspect] == [f"lf-{i}" for i in range(1, 6)]
    assert inspect[1].references and inspect[1].expected_answer == "Plus costs $10 a month."


def test_promptfoo_config_tests_with_default_vars():
    """A promptfooconfig.yaml read as it is: its tests:, each test's vars
    completed from defaultTest's; the expected answer from the first assertion
    that holds one (similar, factuality, equals; not contains, llm-rubric or
    latency); `context` as one passage, or a list of them."""
    cases = _cases("promptfoo", "promptfooconfig.yaml")
    assert [c.question for c in cases] == [
        "How long is the refund window?", "What does the Plus plan cost?",
        "How many cameras can one Hub handle?", "Do you ship to Canada?"]
    assert [c.expected_answer for c in cases] == [
        "Refunds are accepted within 30 days of delivery.", "Plus costs $10 a month.",
        "Up to 16 cameras and doorbells.", None]
    assert cases[0].contexts == ["Refunds are accepted within 30 days of delivery, for unused "
                                 "items."]  # defaultTest's
    assert cases[1].contexts == ["Lumenfold Cloud Plus costs $10 per month or $100 per year."]
    assert len(cases[2].contexts) == 2


def test_promptfoo_csv_expected_cells():
    """promptfoo's CSV: vars as columns, `__expected` holding an assertion; a
    text with no assertion prefix means equals, as in promptfoo."""
    cases = _cases("promptfoo", "promptfoo_tests.csv")
    assert [c.expected_answer for c in cases] == [
        "Refunds are accepted within 30 days of delivery.", "Plus costs $10 a month.",
        "Up to 16 cameras and doorbells.", None]
    assert cases[3].contexts == ["We ship to the US, Canada and the EU."]


@pytest.mark.parametrize("cell, expected", [
    ("similar(0.75): Paris", "Paris"), ("equals:Paris", "Paris"), ("rouge-n(0.5): Paris", "Paris"),
    ("contains: Paris", None), ("not-equals: Rome", None), ("llm-rubric: is polite", None),
    ("is-json", None), ("Paris: the capital", "Paris: the capital"), ("Paris", "Paris")])
def test_promptfoo_expected_cell(cell, expected):
    from schemas.cases import expected_of_cell
    assert expected_of_cell(cell) == expected


def test_promptfoo_variable_mapped_by_name(tmp_path):
    """With the promptfoo preset, `question: topic` reads the test's vars.topic
    (YAML, JSON Lines) and a CSV's topic column alike; a test without it is an
    errors/ row, and a config whose tests: is a file reference says which file
    to give instead."""
    (tmp_path / "tests.yaml").write_text(
        "- vars:\n    topic: Is there a free plan?\n  assert: [{type: equals, value: 'No.'}]\n"
        "- vars: {other: x}\n")
    (tmp_path / "tests.csv").write_text("topic,__expected\nIs there a free plan?,No.\n")
    config = tmp_path / "pf.yaml"
    config.write_text("input: {preset: promptfoo, columns: {question: topic}}\n")
    for name in ("tests.yaml", "tests.csv"):
        out = tmp_path / f"out-{name}"
        assert run_cli("--input", str(tmp_path / name), "--output", str(out), "--config",
                       str(config), "--metrics", "exact_match", "--run-id", "pf") == 0
        (row,) = [r for r in read_rows(str(out), "results")]
        assert (row["question"], row["expected_answer"]) == ("Is there a free plan?", "No.")
        counts = manifest(str(out), "pf")["counts"]
        assert counts["invalid_rows"] == (1 if name == "tests.yaml" else 0)
    (tmp_path / "promptfooconfig.yaml").write_text("tests: file://tests.csv\n")
    with pytest.raises(Exception, match="tests: refers to 'file://tests.csv'; give that file"):
        plan_shards(str(tmp_path / "promptfooconfig.yaml"),
                    source_columns(input_columns("promptfoo", {})))
    (tmp_path / "bad.yaml").write_text("- vars: {topic: Is it free?}\n")
    with pytest.raises(Exception, match=r"as YAML: .* \(line 1, column \d+\)$"):
        plan_shards(str(tmp_path / "bad.yaml"), source_columns(input_columns("promptfoo", {})))


def test_config_overrides_and_unknown_preset():
    assert input_columns("ragas", {"answer": "my_answer"})["answer"] == "my_answer"
    assert parse_config({"input": {"preset": "deepeval", "format": "json"}}).input.preset
    with pytest.raises(ConfigError, match="input.preset must be one of"):
        parse_config({"input": {"preset": "ragas2"}})
    with pytest.raises(ConfigError, match="input.format must be one of"):
        parse_config({"input": {"format": "xlsx"}})
    assert set(PRESETS) >= {"ragas", "ragas_v1", "deepeval"}


def test_older_ragas_file_runs_with_no_row_dead_lettered(tmp_path):
    """The issue's first experience: an older Ragas file with list references."""
    config = tmp_path / "c.yaml"
    config.write_text("input: {preset: ragas_v1}\nmetrics: [exact_match, bleu, rouge]\n")
    out = str(tmp_path / "out")
    assert run_cli("--input", os.path.join(PRESET_DIR, "ragas_v1.jsonl"), "--output", out,
                   "--config", str(config), "--run-id", "v1") == 0
    m = manifest(out, "v1")
    assert m["counts"]["invalid_rows"] == 0 and m["counts"]["errors_rows"] == 0
    assert m["counts"]["valid_cases"] == 5 and m["reconciliation"]["ok"]
    scores = {(r["case_id"], r["metric"]): r for r in read_rows(out, "scores")}
    results = read_rows(out, "results")
    refund = next(r for r in results if r["question"].startswith("How long is the refund"))
    assert len(refund["references"]) == 2
    assert scores[(refund["case_id"], "exact_match")]["value"] == 1.0  # equals a reference


def test_files_in_another_tools_form_get_a_hint(tmp_path, capsys):
    """Without a preset: a Ragas file lacks 'question' (a one-line error naming the
    preset); an older Ragas file runs but would lose its references (a note)."""
    out = str(tmp_path / "out")
    assert run_cli("--input", os.path.join(PRESET_DIR, "ragas.jsonl"), "--output", out) == 2
    err = capsys.readouterr().err
    assert "missing required column 'question'" in err and "set input.preset: ragas" in err
    assert run_cli("--input", os.path.join(PRESET_DIR, "ragas_v1.csv"), "--output", out,
                   "--run-id", "hint") == 0
    assert "note: the columns question, ground_truths look like the 'ragas_v1' preset's" \
        in capsys.readouterr().err
    assert any("input.preset: ragas_v1" in n for n in manifest(out, "hint")["notes"])


def test_deepeval_csv_and_jsonl_with_pipe_joined_contexts(tmp_path):
    """DeepEval's save_as("csv") and save_as("jsonl") write retrieval_context as
    one string joined with '|'; with the deepeval preset every such row used to
    be an error row ('contexts must be a list of strings, got a plain string').
    A JSON array in the cell is still read as a list."""
    import csv
    import json
    goldens = [("How long is the refund window?", "30 days.", "Refunds: 30 days.",
                ["Refunds are accepted within 30 days.", "Items must be unused."]),
               ("Do you ship to Canada?", "Yes.", "Yes, in 5 to 7 days.", ["We ship to Canada."]),
               ("No contexts?", "None.", "None.", None)]
    with open(tmp_path / "g.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["input", "actual_output", "expected_output", "retrieval_context",
                         "context", "name"])
        for q, a, ref, ctx in goldens:
            writer.writerow([q, a, ref, "|".join(ctx) if ctx else None, None, None])
        writer.writerow(["JSON cell?", "x", "x", json.dumps(["a|b", "c"]), None, None])
    with open(tmp_path / "g.jsonl", "w", encoding="utf-8") as fh:
        for q, a, ref, ctx in goldens:
            fh.write(json.dumps({"input": q, "actual_output": a, "expected_output": ref,
                                 "retrieval_context": "|".join(ctx) if ctx else None,
                                 "context": None}) + "\n")
    columns = source_columns(input_columns("deepeval", {}))
    for name in ("g.csv", "g.jsonl"):
        cases = [to_case(raw, columns, src) for shard in plan_shards(str(tmp_path / name), columns)
                 for src, raw in read_shard_rows(shard, columns)]
        assert [c.contexts for c in cases[:3]] == [g[3] for g in goldens], name
        assert cases[0].answer == "30 days." and cases[0].expected_answer == "Refunds: 30 days."
    assert cases[0].case_id == to_case({"question": goldens[0][0], "expected_answer": goldens[0][2],
                                        "contexts": goldens[0][3]}, source_columns({}), "").case_id
    csv_cases = [to_case(raw, columns, src) for shard in plan_shards(str(tmp_path / "g.csv"),
                                                                     columns)
                 for src, raw in read_shard_rows(shard, columns)]
    assert csv_cases[3].contexts == ["a|b", "c"]


def test_precomputed_error_names_the_users_answer_column(tmp_path):
    """A row without a recorded answer said "no recorded answer in the 'answer'
    column" under every preset, though a Ragas file has no 'answer' column: the
    error (results/ and errors/) names the column the file has, 'response'."""
    config = tmp_path / "c.yaml"
    config.write_text("input: {preset: ragas}\nbots: [{name: recorded, type: precomputed}]\n"
                      "metrics: [rouge]\n")
    out = str(tmp_path / "out")
    assert run_cli("--input", os.path.join(PRESET_DIR, "ragas.jsonl"), "--output", out,
                   "--config", str(config), "--run-id", "r") == 0
    said = "no recorded answer in the 'response' column"  # the multi-turn sample
    assert [r["error"] for r in read_rows(out, "results") if r["error"]] == [said]
    assert [r["message"] for r in read_rows(out, "errors")] == [said]


def test_precomputed_error_names_deepeval_and_candidate_columns():
    from schemas.records import EvalCase
    from transforms.answer.bots import PrecomputedBot
    case = EvalCase("c", "Do you ship to Canada?", None, answer=None)
    column = source_columns(input_columns("deepeval", {}))["answer"]
    assert PrecomputedBot("b", column).answer(case).error == \
        "no recorded answer in the 'actual_output' column"
    assert PrecomputedBot("b", ("out", "reply")).answer(case).error == \
        "no recorded answer in the 'out' or 'reply' column"
    assert PrecomputedBot("b").answer(case).error == \
        "no recorded answer in the 'answer' column"


def _rows(path, preset: str, mapping=None):
    """Every row of a file read with a preset: an EvalCase or a RowProblem."""
    columns = source_columns(input_columns(preset, mapping or {}))
    return [raw if isinstance(raw, RowProblem) else to_case(raw, columns, source)
            for shard in plan_shards(str(path), columns)
            for source, raw in read_shard_rows(shard, columns)]


def _pf_rows(path):
    return _rows(path, "promptfoo")


def test_promptfoo_list_var_is_a_clear_errors_row(tmp_path):
    """promptfoo runs `vars: {question: [a, b]}` as one test per value; evalbeam
    reads one case per test, so such a test is an errors/ row saying so (not a
    conversation-parse error)."""
    (tmp_path / "t.yaml").write_text(
        "tests:\n  - vars: {question: ['Is it free', 'Is it paid']}\n  - vars: {question: 'ok?'}\n")
    problem, case = _pf_rows(tmp_path / "t.yaml")
    assert isinstance(problem, RowProblem) and problem.error_type == "invalid_value"
    assert "vars.question is a list of 2 values" in problem.message
    assert "one test per value" in problem.message
    assert case.question == "ok?"


def test_promptfoo_assert_that_is_not_a_list(tmp_path):
    """A test's (or defaultTest's) assert that is one mapping, a number or a string
    does not crash the read: one mapping is read as a list of one, others are
    no reference answer."""
    (tmp_path / "t.yaml").write_text(
        "defaultTest: {assert: {type: latency, threshold: 5}}\n"
        "tests:\n  - vars: {question: 'a?'}\n    assert: {type: equals, value: A}\n"
        "  - vars: {question: 'b?'}\n    assert: 5\n")
    one, two = _pf_rows(tmp_path / "t.yaml")
    assert (one.question, one.expected_answer) == ("a?", "A")
    assert (two.question, two.expected_answer) == ("b?", None)


def test_yaml_alias_bomb_is_refused_quickly(tmp_path):
    """A 'billion laughs' YAML (aliases of aliases) is refused with one line, and
    quickly, instead of expanding (hang, memory)."""
    import time
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]")
    (tmp_path / "bomb.yaml").write_text("\n".join(lines) + "\ntests: [{vars: {question: *i}}]\n")
    start = time.monotonic()
    with pytest.raises(Exception, match="aliases expand"):
        _pf_rows(tmp_path / "bomb.yaml")
    assert time.monotonic() - start < 5
    (tmp_path / "ok.yaml").write_text(
        "x: &q {question: 'shared?'}\ntests:\n  - vars: *q\n  - vars: *q\n")
    assert [c.question for c in _pf_rows(tmp_path / "ok.yaml")] == ["shared?", "shared?"]


def test_promptfoo_csv_numbered_expected_columns(tmp_path):
    """promptfoo's CSV may hold several assertions in `__expected1`,
    `__expected2`, ...: the first that is a reference answer is read."""
    (tmp_path / "t.csv").write_text(
        "question,__expected1,__expected2,__description\n"
        "Is it free?,contains: no,equals: No.,free plan\n"
        "Is it paid?,similar(0.8): Yes.,,paid plan\n")
    one, two = _pf_rows(tmp_path / "t.csv")
    assert (one.question, one.expected_answer) == ("Is it free?", "No.")
    assert two.expected_answer == "Yes."


def test_promptfoo_vars_file_reference_is_named(tmp_path):
    """`vars: file://vars.yaml` (promptfoo loads that file) is an errors/ row
    naming the reference, not 'question is null'."""
    (tmp_path / "t.yaml").write_text("tests:\n  - vars: file://vars.yaml\n")
    (problem,) = _pf_rows(tmp_path / "t.yaml")
    assert "vars is 'file://vars.yaml'" in problem.message
    assert problem.error_type == "invalid_value"


def test_promptfoo_default_test_file_reference_is_named(tmp_path):
    """`defaultTest: file://default.yaml` is refused naming the reference (it was
    'defaultTest a mapping', with no word of the file)."""
    (tmp_path / "promptfooconfig.yaml").write_text(
        "defaultTest: file://default.yaml\ntests:\n  - vars: {question: hi}\n")
    with pytest.raises(Exception, match="defaultTest: refers to 'file://default.yaml'; write"):
        _pf_rows(tmp_path / "promptfooconfig.yaml")


def test_promptfoo_reference_inside_an_assert_set(tmp_path):
    """An `assert-set` groups assertions; an `equals` inside it is the reference."""
    (tmp_path / "t.yaml").write_text(
        "tests:\n  - vars: {question: 'Is it free?'}\n    assert:\n      - type: assert-set\n"
        "        threshold: 0.5\n        assert:\n          - {type: contains, value: 'no'}\n"
        "          - {type: equals, value: 'No.'}\n")
    (case,) = _pf_rows(tmp_path / "t.yaml")
    assert case.expected_answer == "No."


def test_an_empty_yaml_file_says_so(tmp_path):
    (tmp_path / "empty.yaml").write_text("# nothing yet\n")
    with pytest.raises(Exception, match=r"empty\.yaml: the YAML file holds no cases \(it is empty\)"):
        _pf_rows(tmp_path / "empty.yaml")


def test_promptfoo_numeric_reference_is_its_text(tmp_path):
    """`equals: 42` (promptfoo compares the output with the value as text) was an
    errors/ row, 'expected_answer must be a list of strings, got int'."""
    (tmp_path / "t.yaml").write_text(
        "tests:\n  - vars: {question: 'How many?'}\n    assert: [{type: equals, value: 42}]\n"
        "  - vars: {question: 'Pi?'}\n    assert: [{type: equals, value: 3.14}]\n"
        "  - vars: {question: 'Free?'}\n    assert: [{type: equals, value: true}]\n")
    assert [c.expected_answer for c in _pf_rows(tmp_path / "t.yaml")] == ["42", "3.14", "true"]


def test_promptfoo_description_is_the_case_id_and_metadata_the_tags(tmp_path):
    """A promptfoo test's description names it in promptfoo's views; it was
    not read, so evalbeam's outputs named the case by a hash. It is the case
    id; the metadata (defaultTest's merged in, as promptfoo does) is kept as
    `key:value` tags, one per value of a list."""
    (tmp_path / "promptfooconfig.yaml").write_text(
        "defaultTest:\n  metadata: {owner: support}\n"
        "tests:\n"
        "  - description: refund window\n"
        "    vars: {question: 'How long is the refund window?'}\n"
        "    metadata: {category: returns, priority: 1, langs: [en, fr]}\n"
        "  - vars: {question: 'Any description?'}\n")
    first, second = _pf_rows(tmp_path / "promptfooconfig.yaml")
    assert first.case_id == "refund window"
    assert first.tags == ["owner:support", "category:returns", "priority:1", "langs:en",
                          "langs:fr"]
    assert second.case_id.startswith("h-") and second.tags == ["owner:support"]


def test_promptfoo_csv_description_and_metadata_columns(tmp_path):
    """promptfoo's CSV: `__description`, `__metadata:KEY` and `__metadata:KEY[]`
    (a list split on commas, `\\,` keeps one) read as in a test."""
    (tmp_path / "tests.csv").write_text(
        "question,__description,__metadata:category,__metadata:langs[],__expected\n"
        "How long?,refund window,returns,\"en, fr\\, be\",30 days\n"
        "Ship to Canada?,,,,\n")
    first, second = _pf_rows(tmp_path / "tests.csv")
    assert (first.case_id, first.expected_answer) == ("refund window", "30 days")
    assert first.tags == ["category:returns", "langs:en", "langs:fr, be"]
    assert second.case_id.startswith("h-") and second.tags == []
    examples = _cases("promptfoo", "promptfoo_tests.csv")
    assert [c.case_id for c in examples] == [c.case_id for c in
                                             _cases("promptfoo", "promptfooconfig.yaml")]


def test_promptfoo_metadata_key_mapped_to_the_suite(tmp_path):
    """`columns: {suite: metadata.category}` reads the test's metadata.category
    and a CSV's `__metadata:category`; metadata that is not a mapping is an
    errors/ row that says so."""
    (tmp_path / "t.jsonl").write_text(
        '{"vars": {"question": "q1?"}, "metadata": {"category": "returns"}}\n'
        '{"vars": {"question": "q2?"}, "metadata": "returns"}\n')
    (tmp_path / "t.csv").write_text("question,__metadata:category\nq1?,returns\n")
    for name in ("t.csv", "t.jsonl"):
        rows = _rows(tmp_path / name, "promptfoo", {"suite": "metadata.category"})
        assert rows[0].suite == "returns"
    problem = rows[1]
    assert isinstance(problem, RowProblem) and problem.error_type == "wrong_type"
    assert "metadata is 'returns', not a mapping" in problem.message


DEEPEVAL_FIXTURES = os.path.join(ROOT, "tests", "fixtures", "deepeval")


def _deepeval_rows(path):
    return _rows(path, "deepeval")


def test_deepeval_conversational_goldens_as_save_as_writes_them():
    """Real save_as("json") of ConversationalGoldens (deepeval 4.3.1): one with a
    scenario and no turns (a conversation DeepEval simulates) was an errors/
    row saying only 'question is null'; the assistant turns' retrieval_context
    and the additional_metadata were dropped. The scenario-only golden is an
    errors/ row that says what it is; the turns' passages (DeepEval's saved
    RetrievedContextData as its context) are the case's contexts; the
    metadata is kept as key:value tags."""
    scenario, chat = _deepeval_rows(os.path.join(DEEPEVAL_FIXTURES, "conversational_goldens.json"))
    assert isinstance(scenario, RowProblem) and scenario.case_id == "scenario-only"
    assert scenario.error_type == "invalid_value"
    assert scenario.message.startswith("a ConversationalGolden with a scenario and no turns")
    assert (chat.case_id, chat.question) == ("refund-chat", "How long is the refund window?")
    assert chat.answer == "Refunds are accepted within 30 days." and len(chat.messages) == 2
    assert chat.contexts == ["Lamps carry a two-year warranty.",
                             "Refunds are accepted within 30 days of delivery."]
    assert chat.tags == ["channel:web", "scenario:refund", "source:policy.md"]


@pytest.mark.parametrize("file_type", ["json", "jsonl", "csv"])
def test_what_a_deepeval_file_says_beyond_the_case_columns_is_kept_as_tags(file_type):
    """Real save_as of deepeval 4.3.1 (tests/fixtures/deepeval/make.py): a
    ConversationalGolden's scenario and expected_outcome beside its turns,
    each Turn's metadata and a RetrievedContextData's source (its
    `deepeval_source=`) were dropped without a word. They are key:value tags
    after the golden's additional_metadata, each once; the passages stay its
    context."""
    (chat,) = _deepeval_rows(os.path.join(DEEPEVAL_FIXTURES, f"conversation_extras.{file_type}"))
    assert (chat.case_id, chat.question) == ("late-refund", "It arrived 40 days ago.")
    assert chat.contexts == ["Refunds are accepted within 30 days of delivery.",
                             "Store credit is offered after 30 days."]
    assert chat.tags == [
        "team:support", "scenario:A customer asks for a refund 40 days after delivery.",
        "expected_outcome:The assistant politely refuses and offers store credit.",
        "channel:web", "locale:en", "source:policy.md"]
    (golden,) = _deepeval_rows(os.path.join(DEEPEVAL_FIXTURES, f"sourced_golden.{file_type}"))
    assert golden.contexts == ["Plus costs $10 per month.", "Plans renew monthly."]
    assert golden.tags == ["source:pricing.md"]


def test_deepeval_golden_csv_metadata_becomes_tags():
    (golden,) = _deepeval_rows(os.path.join(DEEPEVAL_FIXTURES, "goldens.csv"))
    assert (golden.case_id, golden.contexts) == ("plus-price", ["Plus costs $10 per month."])
    assert golden.tags == ["tier:plus", "langs:en", "langs:fr"]


def test_a_deepeval_image_is_an_errors_row(tmp_path):
    """An MLLMImage in a test case's text is a placeholder `[DEEPEVAL:IMAGE:id]`
    (deepeval 4.3.1); a bot or a metric would read the placeholder as text."""
    import json
    dumps = json.load(open(os.path.join(DEEPEVAL_FIXTURES, "model_dumps.json")))
    (tmp_path / "cases.json").write_text(json.dumps([dumps["multimodal_test_case"],
                                                     dumps["llm_test_case"]]))
    image, text = _deepeval_rows(tmp_path / "cases.json")
    assert isinstance(image, RowProblem) and image.case_id == "photo"
    assert image.message.startswith("'input' holds an image (DeepEval's [DEEPEVAL:IMAGE:"), image
    assert text.tags == ["pricing", "priority:1"]


def test_a_ragas_agent_sample_says_it_holds_tool_calls(tmp_path):
    """Ragas 0.4.3's to_jsonl of an agent's MultiTurnSample: the AI turn that
    calls a tool has empty content, so the errors/ row said 'question[1].content
    is empty (assistant turn without text)', not what the docs promise (tool
    messages are not read: wrong_type). The row names Ragas' field
    (user_input[1]), not evalbeam's column (question[1])."""
    (tmp_path / "multi.jsonl").write_text(
        '{"user_input": [{"content": "Weather in Paris?", "type": "human"}, {"content": "", '
        '"type": "ai", "tool_calls": [{"name": "weather", "args": {"city": "Paris"}}]}, '
        '{"content": "18C, sunny", "type": "tool"}, {"content": "It is 18C and sunny in '
        'Paris.", "type": "ai"}], "reference_tool_calls": [{"name": "weather", "args": '
        '{"city": "Paris"}}]}\n'
        '{"user_input": [{"content": "Weather?", "type": "human"}, {"content": "18C", '
        '"type": "tool"}, {"content": "It is 18C.", "type": "ai"}]}\n')
    calls, result = _rows(tmp_path / "multi.jsonl", "ragas")
    assert isinstance(calls, RowProblem) and calls.error_type == "wrong_type"
    assert calls.message.startswith("user_input[1] calls a tool (weather); evalbeam reads "
                                    "conversations of text turns"), calls.message
    assert isinstance(result, RowProblem) and result.error_type == "wrong_type"
    assert result.message.startswith("user_input[1] is a tool result (role 'tool'); evalbeam "
                                     "reads conversations of text turns"), result.message
    # the field as the user's file names it: Ragas' user_input above, question without a preset
    (tmp_path / "plain.jsonl").write_text(
        (tmp_path / "multi.jsonl").read_text().splitlines()[0].replace("user_input", "question"))
    (plain,) = _rows(tmp_path / "plain.jsonl", None)
    assert plain.message.startswith("question[1] calls a tool (weather)"), plain.message


def test_the_promptfoo_guides_contains_check_reads_a_tests_metadata(tmp_path):
    """docs/guides/migrating-promptfoo.md's `contains` check, as written: it
    looked for every tag in the answer, and a promptfoo test's tags are its
    metadata (`key:value`), so no answer ever passed (and promptfoo's preset
    gave no other way to fill the tags)."""
    import re
    guide = open(os.path.join(ROOT, "docs", "guides", "migrating-promptfoo.md")).read()
    (code,) = [c for c in re.findall(r"```python\n(.*?)```", guide, re.S) if "contains_all" in c]
    scope: dict = {}
    exec(code, scope)
    (tmp_path / "t.yaml").write_text(
        "tests:\n  - vars: {question: 'How long is the refund window?'}\n"
        "    metadata: {category: returns, contains: ['30 days', 'refund']}\n")
    (case,) = _pf_rows(tmp_path / "t.yaml")
    sample = {"answer": "A refund is accepted within 30 days.", "tags": case.tags}
    assert scope["contains_all"](sample)[0] == 1.0
    value, details = scope["contains_all"](dict(sample, answer="Within a month."))
    assert (value, details["missing"]) == (0.0, ["30 days", "refund"])


def test_promptfoo_file_references_and_scenarios_are_not_read_silently(tmp_path):
    """promptfoo loads a var or an assertion value written `file://path`; evalbeam
    read the reference itself as the text (a question 'file://q.txt', a passage
    'file://policy.md', a reference 'file://expected.txt'). Each is an errors/
    row that names it. A config's scenarios: were ignored; they are refused."""
    (tmp_path / "t.yaml").write_text(
        "tests:\n"
        "  - vars: {question: 'file://q.txt'}\n"
        "  - vars: {question: 'Refunds?', context: 'file://policy.md'}\n"
        "  - vars: {question: 'Refunds?'}\n"
        "    assert: [{type: equals, value: 'file://expected.txt'}]\n"
        "  - vars: {question: 'Refunds?', context: ['Within 30 days.']}\n")
    (tmp_path / "t.csv").write_text("question,context,__expected\nfile://q.txt,,\n"
                                    "Refunds?,file://policy.md,\nRefunds?,,file://expected.txt\n")
    for name in ("t.yaml", "t.csv"):
        *refs, ok = _pf_rows(tmp_path / name) + ([] if name == "t.yaml" else [None])
        assert all(isinstance(r, RowProblem) for r in refs), refs
        assert [r.message.split(";")[0] for r in refs] == [
            f"{w} is a file reference ({f!r})" for w, f in (
                ("vars.question" if name == "t.yaml" else "question", "file://q.txt"),
                ("vars.context" if name == "t.yaml" else "context", "file://policy.md"),
                ("assert" if name == "t.yaml" else "__expected", "file://expected.txt"))]
        assert "evalbeam does not load files" in refs[0].message
    (tmp_path / "promptfooconfig.yaml").write_text(
        "tests:\n  - vars: {question: 'Refunds?'}\nscenarios:\n  - config: [{vars: {x: 1}}]\n"
        "    tests: [{vars: {question: 'Plans?'}}]\n")
    with pytest.raises(Exception, match=r"promptfooconfig\.yaml: scenarios: is not read"):
        _pf_rows(tmp_path / "promptfooconfig.yaml")
    (tmp_path / "promptfooconfig.yaml").write_text(  # scenarios alone, no tests:
        "scenarios:\n  - config: [{vars: {x: 1}}]\n    tests: [{vars: {question: 'Plans?'}}]\n")
    with pytest.raises(Exception, match=r"promptfooconfig\.yaml: scenarios: is not read"):
        _pf_rows(tmp_path / "promptfooconfig.yaml")


def test_promptfoo_and_deepeval_names_and_tags_reach_the_tables_across_workers(tmp_path):
    """The new preset columns (description, metadata, a conversation's passages)
    pickle to the workers of a multi-process run and reach results/."""
    (tmp_path / "promptfooconfig.yaml").write_text(
        "defaultTest: {metadata: {owner: support}}\n"
        "tests:\n  - description: refund window\n"
        "    vars: {question: 'How long is the refund window?', answer: '30 days.'}\n"
        "    metadata: {category: returns}\n")
    (tmp_path / "pf.yaml").write_text("input: {preset: promptfoo, columns: {answer: answer, "
                                      "suite: metadata.category}}\n")
    (tmp_path / "de.yaml").write_text("input: {preset: deepeval}\n")
    runs = [("pf", tmp_path / "promptfooconfig.yaml"),
            ("de", os.path.join(DEEPEVAL_FIXTURES, "conversational_goldens.json"))]
    for run_id, cases in runs:
        out = str(tmp_path / run_id)
        assert run_cli("--input", str(cases), "--output", out, "--run-id", run_id,
                       "--config", str(tmp_path / f"{run_id}.yaml"), "--metrics", "exact_match",
                       "--direct_running_mode=multi_processing", "--direct_num_workers=2") == 0
        (row,) = read_rows(out, "results")
        if run_id == "pf":
            assert (row["case_id"], row["suite"], row["tags"]) == (
                "refund window", "returns", ["owner:support", "category:returns"])
        else:
            assert row["case_id"] == "refund-chat"
            assert row["tags"] == ["channel:web", "scenario:refund", "source:policy.md"]
            assert row["contexts"] == ["Lamps carry a two-year warranty.",
                                       "Refunds are accepted within 30 days of delivery."]


def test_deepeval_turn_passages_in_any_shape_cost_at_most_their_row(tmp_path):
    """A turn's retrieval_context as {context, source} objects (a dump of
    RetrievedContextData), one string, or numbers: the reader crashed on an
    unhashable passage (the read is not inside the row's error handling) and
    read a string as its characters."""
    import json
    turns = [{"role": "user", "content": "Refund?"}, {"role": "assistant", "content": "30 days."}]
    shapes = [[{"context": "Refunds within 30 days.", "source": "policy.md"}],
              "Refunds within 30 days.", [3, 4], {"context": "Refunds within 30 days."}]
    (tmp_path / "c.jsonl").write_text("".join(
        json.dumps({"name": f"c{i}", "turns": [turns[0], dict(turns[1], retrieval_context=s)]})
        + "\n" for i, s in enumerate(shapes)))
    objects, text, numbers, one = _rows(tmp_path / "c.jsonl", "deepeval")
    assert objects.contexts == text.contexts == one.contexts == ["Refunds within 30 days."]
    assert isinstance(numbers, RowProblem) and numbers.error_type == "wrong_type"


def test_promptfoo_tests_without_an_answering_bot_are_said_before_and_after(tmp_path, capsys):
    """promptfoo's tests hold no answers: with only the `recorded` bot every row
    was an ERROR and the run said nothing of why. Not a refusal (a test whose
    var is a recorded conversation has its answer): a note before the run, and
    a line in the summary naming what to add."""
    (tmp_path / "tests.jsonl").write_text(
        '{"vars": {"question": "Is there a free plan?"}}\n'
        '{"vars": {"input": [{"role": "user", "content": "hi"},'
        ' {"role": "assistant", "content": "hello"}]}}\n')
    config = tmp_path / "pf.yaml"
    config.write_text("input: {preset: promptfoo}\n")
    out = tmp_path / "out"
    assert run_cli("--input", str(tmp_path / "tests.jsonl"), "--output", str(out), "--config",
                   str(config), "--metrics", "exact_match", "--run-id", "pf") == 0
    err = capsys.readouterr().err.splitlines()
    said = [i for i, line in enumerate(err) if "promptfoo tests hold no answers" in line]
    assert len(said) == 2 and "add a bot to bots:" in err[said[0]], err
    assert err[said[1]].startswith("evalbeam: note: 1 of 2 answers is an ERROR"), err
    config.write_text("input: {preset: promptfoo, columns: {answer: reply}}\n")
    assert run_cli("--input", str(tmp_path / "tests.jsonl"), "--output", str(out), "--config",
                   str(config), "--metrics", "exact_match", "--run-id", "pf2") == 0
    assert "hold no answers" not in capsys.readouterr().err


@pytest.mark.parametrize("preset, example, what", [
    ("openai_evals", "openai_evals.jsonl", "OpenAI evals samples"),
    ("inspect", "inspect.jsonl", "Inspect samples")])
def test_answerless_samples_without_an_answering_bot_are_said_too(tmp_path, capsys, preset,
                                                                  example, what):
    """OpenAI evals and Inspect samples hold no answers either (their presets
    map none): the bundled examples with only the `recorded` bot ended 5 of 5
    ERROR, and, unlike promptfoo's, the run said nothing of why."""
    config = tmp_path / "c.yaml"
    config.write_text(f"input: {{preset: {preset}}}\n")
    out = tmp_path / "out"
    assert run_cli("--input", os.path.join(PRESET_DIR, example), "--output",
                   str(out), "--config", str(config), "--metrics", "exact_match",
                   "--run-id", preset) == 0
    err = capsys.readouterr().err.splitlines()
    said = [line for line in err if f"{what} hold no answers" in line]
    assert len(said) == 2 and "add a bot to bots:" in said[0], err
    assert said[1].startswith("evalbeam: note: 5 of 5 answers are ERROR"), err


def test_promptfoo_vars_that_are_not_read_are_kept_as_tags(tmp_path):
    """A test's vars other than the ones read (`language`, used in a prompt
    template) were dropped without a word: they are `key:value` tags, after
    the metadata's, in tests and in a CSV's columns alike; a mapped var
    (`topic` as the question) is not a tag."""
    (tmp_path / "promptfooconfig.yaml").write_text(
        "defaultTest:\n  vars: {language: fr}\n"
        "tests:\n"
        "  - vars: {question: 'How long?', context: 'Thirty days.', tone: [dry, short]}\n"
        "    metadata: {category: returns}\n"
        "  - vars: {question: 'Ship to Canada?', language: en, empty: null}\n")
    first, second = _pf_rows(tmp_path / "promptfooconfig.yaml")
    assert first.tags == ["category:returns", "language:fr", "tone:dry", "tone:short"]
    assert second.tags == ["language:en"]
    (tmp_path / "tests.csv").write_text(
        "question,language,context,answer,__expected,__metadata:category\n"
        "How long?,fr,Thirty days.,30 days,30 days,returns\nShip?,,,,,\n")
    first, second = _pf_rows(tmp_path / "tests.csv")
    assert (first.tags, second.tags) == (["category:returns", "language:fr"], [])
    row = _rows(tmp_path / "tests.csv", "promptfoo", {"question": "language"})[0]
    assert row.question == "fr" and row.tags == ["category:returns", "question:How long?"]


DE_UNREAD = "guides/migrating-deepeval.md#fields-evalbeam-does-not-read"


def _noted(capsys, marker: str, out: str, run_id: str, cases: str, config: str) -> list[str]:
    """The stderr notes with `marker` of a run of `cases` (exact_match only),
    checked to be the manifest's notes and report.md's too."""
    assert run_cli("--input", cases, "--output", out, "--config", config, "--run-id", run_id,
                   "--metrics", "exact_match") == 0
    said = [line for line in capsys.readouterr().err.splitlines() if marker in line]
    notes = [n for n in manifest(out, run_id)["notes"] if marker in n]
    assert ["evalbeam: note: " + n for n in notes] == said
    with open(os.path.join(out, "runs", run_id, "report.md"), encoding="utf-8") as fh:
        report = fh.read()
    assert all(f"Note: {n}" in report for n in notes), report
    return said


@pytest.mark.parametrize("file_type", ["json", "jsonl", "csv"])
def test_values_in_deepeval_fields_evalbeam_does_not_read_are_said_once(tmp_path, capsys,
                                                                        file_type):
    """deepeval's comments, context, expected tools or a turn's user_id were
    dropped without a word. Each field with values is one line before the run,
    in the manifest's notes and in report.md; save_as writes every column, so
    columns that are there but empty say nothing."""
    (tmp_path / "de.yaml").write_text("input: {preset: deepeval}\n")
    said = {}
    for run_id, name in [("noted", "unread_fields"), ("chat", "unread_conversation"),
                         ("empty", "sourced_golden"), ("empty_chat", "conversation_extras")]:
        said[run_id] = _noted(capsys, "which evalbeam does not read", str(tmp_path / "out"),
                              run_id, os.path.join(DEEPEVAL_FIXTURES, f"{name}.{file_type}"),
                              str(tmp_path / "de.yaml"))
    tail = f", which evalbeam does not read (see {DE_UNREAD})"
    assert said["noted"] == ["evalbeam: note: " + n + tail for n in [
        "1 of 3 rows has DeepEval `context`", "2 of 3 rows have DeepEval `comments`",
        "1 of 3 rows has DeepEval `custom_column_key_values`",
        "1 of 3 rows has DeepEval `expected_tools`"]]
    persona = [] if file_type == "csv" else ["1 of 1 row has DeepEval `persona`"]  # no csv column
    assert said["chat"] == ["evalbeam: note: " + n + tail for n in [
        "1 of 1 row has DeepEval `user_description`", *persona,
        "1 of 1 row has DeepEval `user_id` in a turn"]]
    assert said["empty"] == said["empty_chat"] == []


def test_values_in_ragas_fields_evalbeam_does_not_read_are_counted_not_their_columns(tmp_path):
    """Ragas' reference_contexts or rubrics were dropped unsaid; a column that is
    there with nothing in it (null, [], an empty csv cell) is not counted."""
    import json

    from transforms.read.presets import UNREAD
    rows = [{"user_input": "Refund?", "response": "30 days.", "reference_contexts": ["30 days."],
             "rubrics": None},
            {"user_input": "Plans?", "response": "Two.", "reference_contexts": [], "rubrics": {}},
            {"user_input": "Free?", "response": "No.", "reference_contexts": None,
             "rubrics": {"score1": "wrong"}}]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "r.csv").write_text("user_input,response,reference_contexts,rubrics\n"
                                    "Refund?,30 days.,,\nPlans?,Two.,[],\n")
    columns = source_columns(input_columns("ragas", {}))
    tail = (", which evalbeam does not read (see guides/migrating-ragas.md"
            "#fields-evalbeam-does-not-read)")
    notes: list[str] = []
    plan_shards(str(tmp_path / "r.jsonl"), columns, None, notes, UNREAD["ragas"])
    assert notes == ["1 of 3 rows has Ragas `reference_contexts`" + tail,
                     "1 of 3 rows has Ragas `rubrics`" + tail]
    notes = []
    plan_shards(str(tmp_path / "r.csv"), columns, None, notes, UNREAD["ragas"])
    assert notes == []
    mapped = source_columns(input_columns("ragas", {"contexts": "reference_contexts"}))
    plan_shards(str(tmp_path / "r.jsonl"), mapped, None, notes, UNREAD["ragas"])
    assert notes == ["1 of 3 rows has Ragas `rubrics`" + tail]  # a mapped field is read


def test_a_deepeval_context_mapped_as_the_contexts_is_split_as_retrieval_context_is(tmp_path):
    """DeepEval's HallucinationMetric reads a test case's `context`, not its
    `retrieval_context`; the DeepEval guide maps it (`input: {preset: deepeval,
    columns: {contexts: context}}`). save_as csv and jsonl join `context` with
    '|' as they join retrieval_context, and the mapped column was read as one
    passage 'a|b' (json's list was two). Every format gives the passages."""
    import csv
    import json
    passages = ["Refunds are accepted within 30 days.", "Items must be unused."]
    row = {"input": "How long is the refund window?", "actual_output": "30 days.",
           "expected_output": "30 days.", "retrieval_context": None, "name": "refund"}
    with open(tmp_path / "g.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, [*row, "context"])
        writer.writeheader()
        writer.writerow({**row, "context": "|".join(passages)})
    (tmp_path / "g.jsonl").write_text(json.dumps({**row, "context": "|".join(passages)}) + "\n",
                                      "utf-8")
    (tmp_path / "g.json").write_text(json.dumps([{**row, "context": passages}]), "utf-8")
    columns = source_columns(input_columns("deepeval", {"contexts": "context"}))
    for name in ("g.csv", "g.jsonl", "g.json"):
        (case,) = [to_case(raw, columns, src)
                   for shard in plan_shards(str(tmp_path / name), columns)
                   for src, raw in read_shard_rows(shard, columns)]
        assert case.contexts == passages, name


def test_promptfoo_assertions_evalbeam_does_not_check_are_said_per_type(tmp_path, capsys):
    """A promptfoo config's `contains`, `llm-rubric` or defaultTest's `latency`
    assertions were dropped without a word (the DeepEval and Ragas presets say
    which fields they leave out): a promptfoo user lost checks unsaid. Each
    assertion type whose value is not read (a reference's, such as `equals`,
    is the expected answer) is one line before the run, in the manifest's
    notes and report.md; YAML (an assert-set's too), JSON Lines and CSV cells."""
    import json
    (tmp_path / "promptfooconfig.yaml").write_text(
        "defaultTest:\n  assert: [{type: latency, threshold: 5000}]\n"
        "tests:\n"
        "  - vars: {question: 'Refund window?', answer: '30 days.'}\n"
        "    assert: [{type: equals, value: '30 days.'}, {type: icontains, value: days}]\n"
        "  - vars: {question: 'Canada?', answer: 'Yes.'}\n"
        "    assert:\n      - type: assert-set\n        assert:\n"
        "          - {type: llm-rubric, value: Says yes}\n          - {type: icontains, value: yes}\n")
    (tmp_path / "tests.jsonl").write_text("".join(json.dumps(t) + "\n" for t in [
        {"vars": {"question": "Hours?", "answer": "9 to 5"},
         "assert": [{"type": "similar", "value": "9 to 5", "threshold": 0.8}]},
        {"vars": {"question": "Ship?", "answer": "Yes"},
         "assert": [{"type": "not-contains", "value": "sorry"}]}]))
    (tmp_path / "tests.csv").write_text(
        "question,answer,__expected,__expected1\nRefund?,30 days.,30 days.,contains: 30\n"
        "Canada?,Yes.,grade: says yes,\nHours?,9 to 5,similar(0.8): 9 to 5,\n")
    (tmp_path / "pf.yaml").write_text("input: {preset: promptfoo, columns: {answer: answer}}\n")
    tail = (", which evalbeam does not check (see guides/migrating-promptfoo.md"
            "#assertions-become-metrics-and-verdict-rules)")
    said = {}
    for run_id, name in (("yaml", "promptfooconfig.yaml"), ("jsonl", "tests.jsonl"),
                         ("csv", "tests.csv")):
        said[run_id] = _noted(capsys, "which evalbeam does not check", str(tmp_path / "out"),
                              run_id, str(tmp_path / name), str(tmp_path / "pf.yaml"))
    assert said == {
        "yaml": ["evalbeam: note: " + n + tail for n in [
            "2 of 2 rows have a promptfoo `icontains` assertion",
            "2 of 2 rows have a promptfoo `latency` assertion",
            "1 of 2 rows has a promptfoo `llm-rubric` assertion"]],
        "jsonl": ["evalbeam: note: 1 of 2 rows has a promptfoo `not-contains` assertion" + tail],
        "csv": ["evalbeam: note: " + n + tail for n in [
            "1 of 3 rows has a promptfoo `contains` assertion",
            "1 of 3 rows has a promptfoo `grade` assertion"]]}
