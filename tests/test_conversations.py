"""Conversations: earlier turns reach remote bots in order, per-answer metrics
score the last answer, conversation-level judge metrics and config rubrics
go through the judge framework."""
from __future__ import annotations

import json
import sys

import pytest

from schemas.cases import RowProblem, source_columns, to_case
from tests.conftest import EXAMPLE, ROOT
from tests.fake_server import FakeOpenAI
from tests.judge_script import ScriptedJudge
from tests.pipeline_helpers import manifest, read_rows, run_cli

sys.path.insert(0, f"{ROOT}/examples/formats")
from make_formats import write_jsonl  # noqa: E402

COLS = source_columns({})
KEY = "sk-test-7f3a9c1e5b2d"  # random-looking: the scrubber removes any 8-character run of it
HISTORY = [{"role": "user", "content": "Hi, my name is Dana and I am on the Plus plan."},
           {"role": "assistant", "content": "Hello Dana! How can I help with your Plus plan?"}]


def test_messages_are_normalised_and_validated():
    case = to_case({"question": "And the price?", "messages": [
        {"type": "human", "content": "Tell me about Plus"}, {"type": "ai", "content": "Sure."}]},
        COLS, "f#0")
    assert case.messages == [{"role": "user", "content": "Tell me about Plus"},
                             {"role": "assistant", "content": "Sure."}]
    as_json = to_case({"question": "q", "messages": json.dumps(HISTORY)}, COLS, "f#0")
    assert as_json.messages == HISTORY
    # a question given as the whole conversation: its last user turn is the question
    whole = to_case({"question": HISTORY + [{"role": "user", "content": "What does it cost?"},
                                            {"role": "assistant", "content": "recorded"}]},
                    COLS, "f#0")
    assert (whole.question, whole.messages) == ("What does it cost?", HISTORY)
    for raw, words in [({"question": "q", "messages": [{"role": "robot", "content": "x"}]},
                        "messages[0].role must be one of"),
                       ({"question": "q", "messages": [{"role": "user", "content": 3}]},
                        "messages[0].content must be a string"),
                       ({"question": "q", "messages": "hello"}, "got a plain string"),
                       ({"question": [{"role": "assistant", "content": "hi"}]}, "no user turn")]:
        problem = to_case(raw, COLS, "f#1")
        assert isinstance(problem, RowProblem) and words in problem.message, raw
    # the derived id covers the conversation; single-turn ids are unchanged by it
    assert to_case({"question": "q"}, COLS, "").case_id != as_json.case_id


def _cases(tmp_path) -> str:
    rows = [
        {"case_id": "conv", "question": "What does my plan cost per month?",
         "expected_answer": "The Plus plan costs $10 per month.", "messages": HISTORY},
        {"case_id": "forgetful", "question": "Can I add a camera?",
         "expected_answer": "Yes, Plus covers up to 10 cameras.",
         "messages": [{"role": "system", "content": "You are Lumenfold's support assistant."},
                      *HISTORY]},
        {"case_id": "single", "question": "Do you ship to Canada?",
         "expected_answer": "Yes, we ship to Canada."},
    ]
    return write_jsonl(tmp_path / "cases.jsonl", rows)


def _config(tmp_path, server) -> str:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""
endpoints:
  llm: {{base_url: '{server.openai_base_url}', api_key_env: CONV_KEY, requests_per_second: 500,
        backoff_initial_s: 0.01}}
  assistant: {{base_url: '{server.base_url}', api_key_env: CONV_KEY, requests_per_second: 500}}
bots:
  - {{name: plain, type: chat, endpoint: llm, model: bot-model, system_prompt: "Be brief."}}
  - {{name: kb, type: full_context, endpoint: llm, model: bot-model,
      knowledge: {EXAMPLE}/knowledge.md}}
  - name: rag
    type: http
    endpoint: assistant
    options: {{path: /assistant, body: {{query: "{{question}}", history: "{{messages}}"}},
              answer_path: data.answer}}
embeddings: {{provider: hashing}}
metrics: [bleu, conversation, clarity]
metric_options:
  role_adherence: {{role: "A concise, friendly support assistant for Lumenfold."}}
judge:
  endpoint: llm
  model: judge-model
  rubrics:
    clarity:
      criteria: "Is the answer clear and easy to follow for a customer?"
      steps: ["Read the question", "Judge the answer's clarity"]
      scale: [0, 10]
      inputs: [question, answer, messages]
""")
    return str(cfg)


def test_conversation_reaches_bots_in_order_and_is_judged(tmp_path, monkeypatch):
    monkeypatch.setenv("CONV_KEY", KEY)
    judge = ScriptedJudge(rubric_scores={"rubric": 8})

    def chat(request):
        if request.get("model") == "judge-model":
            return judge(request)
        last = request["messages"][-1]["content"]
        return "As an AI, FORGOT your plan." if "camera" in last else "Your plan costs $10."

    with FakeOpenAI(api_key=KEY) as server:
        server.set_chat_handler(chat)
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path), "--output", out, "--config",
                       _config(tmp_path, server), "--run-id", "conv") == 0
        requests = [r.json for r in server.recorded() if r.json]
    assert manifest(out, "conv")["reconciliation"]["ok"]

    bot_calls = [r for r in requests if r.get("model") == "bot-model"]
    plain = [r["messages"] for r in bot_calls if r["messages"][0]["content"] == "Be brief."]
    conv = next(m for m in plain if m[-1]["content"] == "What does my plan cost per month?")
    # three turns in order after the system prompt: user, assistant, the question
    assert conv == [{"role": "system", "content": "Be brief."}, *HISTORY,
                    {"role": "user", "content": "What does my plan cost per month?"}]
    kb = [r["messages"] for r in bot_calls if r["messages"][0]["content"] != "Be brief."]
    kb_conv = next(m for m in kb if m[0] == HISTORY[0])
    assert kb_conv[:2] == HISTORY and "What does my plan cost" in kb_conv[2]["content"]
    http = [r for r in requests if "history" in r]
    assert {json.dumps(r["history"]) for r in http} == {
        json.dumps(HISTORY), json.dumps([]),
        json.dumps([{"role": "system", "content": "You are Lumenfold's support assistant."},
                    *HISTORY])}

    scores = {(r["bot"], r["case_id"], r["metric"]): r for r in read_rows(out, "scores")}
    s = lambda b, c, m: scores[(b, c, m)]["value"]  # noqa: E731
    assert s("plain", "conv", "knowledge_retention") == 1.0
    assert s("plain", "forgetful", "knowledge_retention") == 0.5  # the final answer forgot
    assert s("plain", "forgetful", "role_adherence") == 0.5
    assert s("plain", "conv", "conversation_relevancy") == 1.0
    assert s("plain", "conv", "conversation_completeness") is not None
    details = json.loads(scores[("plain", "forgetful", "knowledge_retention")]["details"])
    assert details["final_turn"] == 0 and details["assistant_turns"] == 2
    assert s("plain", "conv", "clarity") == pytest.approx(0.8)  # 8 on [0, 10]
    single = scores[("plain", "single", "knowledge_retention")]
    assert single["value"] is None and single["error"] == "no messages (not a conversation)"
    assert s("plain", "single", "bleu") is not None  # per-answer metrics: the last answer
    usage = {r["purpose"] for r in read_rows(out, "usage")}
    assert {"judge:knowledge_retention", "judge:clarity", "judge:role_adherence"} <= usage
    results = {(r["bot"], r["case_id"]): r for r in read_rows(out, "results")}
    assert json.loads(results[("plain", "conv")]["messages"]) == HISTORY
    assert results[("plain", "single")]["messages"] is None


def test_rubric_config_is_validated():
    from pipeline.config import ConfigError, parse_config
    from transforms.score.custom import rubric_scorers
    from transforms.score.scoring import select_scorers
    base = {"endpoints": {"llm": {"base_url": "http://127.0.0.1:1/v1"}},
            "judge": {"endpoint": "llm", "model": "m"}}

    def judge(rubrics):
        return parse_config({**base, "judge": {**base["judge"], "rubrics": rubrics}}).judge

    cfg = judge({"tone": {"criteria": "Polite?", "steps": "Read it.", "inputs": ["answer"]}})
    assert cfg.rubrics["tone"].steps == ("Read it.",) and cfg.rubrics["tone"].scale == (1.0, 5.0)
    for rubrics, message in [
        ({"tone": {"steps": ["x"]}}, "missing key 'judge.rubrics.tone.criteria'"),
        ({"tone": {"criteria": "x", "inputs": ["vibes"]}}, "unknown 'vibes'"),
        ({"tone": {"criteria": "x", "scale": [5, 1]}}, "low < high"),
        ({"tone": {"criteria": "x", "weight": 2}}, "unknown key 'judge.rubrics.tone.weight'"),
        ({"2fast": {"criteria": "x"}}, "must be a metric name"),
        # no input: the judge scored the criteria against an empty prompt on every row
        ({"tone": {"criteria": "x", "inputs": []}}, "inputs must name at least one of"),
        ({"tone": {"criteria": "x", "inputs": ["answer", "answer"]}}, "names answer twice"),
    ]:
        with pytest.raises(ConfigError, match=message):
            judge(rubrics)
    clash = rubric_scorers(judge({"bleu": {"criteria": "x"}}).rubrics)
    with pytest.raises(ValueError, match="defined twice"):
        select_scorers(None, {}, True, tuple(clash))
    chosen = select_scorers(("tone",), {}, True, tuple(rubric_scorers(cfg.rubrics)))
    assert [(s.name, o, s.judge) for s, o in chosen] == [("tone", {"scale": [1.0, 5.0]}, True)]


def _recorded_conversations(tmp_path) -> str:
    rows = [{"case_id": f"c{i}", "question": f"What does plan {i} cost per month?",
             "answer": f"Plan {i} costs ${10 + i} per month.", "messages": HISTORY,
             "contexts": [f"Plan {i} costs ${10 + i} per month."]} for i in range(3)]
    return write_jsonl(tmp_path / "recorded.jsonl", rows)


def test_conversation_and_rubric_calls_are_cached_across_processes(tmp_path, monkeypatch):
    """Issue 22 item 13: the conversation and rubric prompts joined the fenced
    blocks into plain strings, so their cache keys held the per-process salted
    fence ids: four identical runs made 20 rubric calls, 0 cache hits. Two runs
    in two processes: the second asks the judge nothing."""
    from tests.pipeline_helpers import run_cli_subprocess
    monkeypatch.setenv("CONV_KEY", KEY)
    with FakeOpenAI(api_key=KEY) as server:
        server.set_chat_handler(ScriptedJudge(rubric_scores={"rubric": 8}))
        cfg = tmp_path / "c.yaml"
        cfg.write_text(
            f"endpoints:\n  llm: {{base_url: '{server.openai_base_url}', api_key_env: CONV_KEY, "
            "requests_per_second: 500}\nbots:\n  - {name: recorded, type: precomputed}\n"
            "metrics: [conversation, clarity]\n"
            "metric_options: {role_adherence: {role: A support assistant.}}\n"
            "judge:\n  endpoint: llm\n  model: judge-model\n"
            "  rubrics:\n    clarity:\n      criteria: Is the answer clear?\n"
            "      scale: [0, 10]\n      inputs: [question, answer, messages, contexts]\n")
        cases, out = _recorded_conversations(tmp_path), str(tmp_path / "out")
        calls = []
        for run_id in ("first", "second"):
            proc = run_cli_subprocess("--input", cases, "--output", out, "--config", str(cfg),
                                      "--run-id", run_id, env={"CONV_KEY": KEY})
            assert proc.returncode == 0, proc.stderr[-2000:]
            calls.append(len([r for r in server.recorded()
                              if r.path == "/v1/chat/completions"]))
    # 3 cases x (3 per-turn conversation metrics + completeness + the rubric), no repairs
    assert calls[0] == 15
    assert calls[1] == calls[0]  # the second process: every question from the cache
    scores = [r for r in read_rows(out, "scores") if r["run_id"] == "second"]
    assert len(scores) == 15 and all(r["value"] is not None for r in scores), \
        [(r["metric"], r["error"]) for r in scores if r["value"] is None]


def test_a_figure_the_user_stated_in_an_earlier_turn_is_not_invented():
    """A figure the user gave in turn 1 and the answer repeats counted as
    unsupported (the facts were checked against the last question only):
    unsupported_facts 1, hallucination 0.73, groundedness 0.22 against 0, 0.45
    and 0.44 for the same words in one turn. Every user turn is the question."""
    from schemas.records import EvalCase, Turn
    from transforms.score.scoring import SCORERS, score_turn
    answer, contexts = ("The refund for order 4471 arrives within 5 days.",
                        ["Refunds arrive within 5 days of approval."])
    single = EvalCase("single", "My order 4471 arrived broken. When will I get my refund?",
                      contexts=contexts)
    conv = EvalCase("conv", "When will I get my refund?", contexts=contexts, messages=[
        {"role": "system", "content": "Support for order 9999 only."},
        {"role": "user", "content": "Hi, my order 4471 arrived broken."},
        {"role": "assistant", "content": "Sorry to hear that. I can help."}])
    by_name = {s.name: s for s in SCORERS}

    def values(case):
        turn = Turn(case, "bot", answer)
        out = {**score_turn(by_name["hallucination"], {"window": 12}, turn),
               **score_turn(by_name["groundedness"], {}, turn)}
        return {k: out[k].value for k in ("hallucination", "unsupported_facts", "groundedness")}

    assert values(conv) == values(single)
    assert values(conv)["unsupported_facts"] == 0
    # the system prompt and the assistant's own turns attest nothing
    said = Turn(EvalCase("c", "When?", contexts=contexts, messages=[
        {"role": "system", "content": "Order 4471."}, {"role": "assistant", "content": "4471"}]),
        "bot", answer)
    assert score_turn(by_name["hallucination"], {"window": 12}, said)["unsupported_facts"].value == 1


SYSTEM = {"role": "system", "content": "You are Lumenfold's support assistant."}


def test_a_row_without_a_user_turn_is_no_conversation(tmp_path, monkeypatch):
    """A system prompt alone before the question made the case a conversation:
    the four conversation metrics asked the judge about a single exchange
    (knowledge_retention 1.0, role_adherence 1.0 ...). A row with no user turn
    to answer, or with a blank turn, is an errors/ row with the reason; every
    input row is a results row or an errors row."""
    single = to_case({"question": "Do you ship to Canada?", "messages": [SYSTEM]}, COLS, "f#0")
    assert not single.is_conversation and single.messages == [SYSTEM]  # still sent to bots
    assert to_case({"question": "q", "messages": HISTORY}, COLS, "f#0").is_conversation
    split = to_case({"question": [SYSTEM, {"role": "user", "content": "Hi?"}]}, COLS, "f#0")
    assert (split.question, split.is_conversation) == ("Hi?", False)
    for raw, words in [
            ({"question": [SYSTEM]}, "the conversation has no user turn to answer"),
            ({"question": None, "messages": [SYSTEM]},
             "question is null and messages has no user turn to answer"),
            ({"question": "q", "messages": [{"role": "user", "content": " "}, HISTORY[1]]},
             "messages[0].content is empty (user turn without text)"),
            ({"question": "q", "messages": [SYSTEM, {"role": "assistant", "content": ""}]},
             "messages[1].content is empty (assistant turn without text)")]:
        problem = to_case(raw, COLS, "f#1")
        assert isinstance(problem, RowProblem) and words in problem.message, (raw, problem)
        assert problem.error_type == "invalid_value"

    rows = [{"case_id": "system-only", "question": "Do you ship to Canada?",
             "answer": "Yes, we ship to Canada.", "messages": [SYSTEM]},
            {"case_id": "conv", "question": "What does my plan cost?",
             "answer": "Your Plus plan costs $10.", "messages": [SYSTEM, *HISTORY]},
            {"case_id": "no-user", "question": [SYSTEM], "answer": "Yes."},
            {"case_id": "null-question", "question": None, "answer": "Yes.",
             "messages": [SYSTEM]},
            {"case_id": "blank", "question": "q?", "answer": "a",
             "messages": [{"role": "user", "content": ""}, HISTORY[1]]}]
    monkeypatch.setenv("CONV_KEY", KEY)
    with FakeOpenAI(api_key=KEY) as server:
        server.set_chat_handler(ScriptedJudge())
        cfg = _recorded_config(server, tmp_path)
        out = str(tmp_path / "out")
        assert run_cli("--input", write_jsonl(tmp_path / "c.jsonl", rows), "--output", out,
                       "--config", cfg, "--run-id", "r") == 0
        asked = [r.json for r in server.recorded() if r.path == "/v1/chat/completions"]
    assert len(asked) == 4  # the four conversation metrics of "conv" only
    assert not any("Canada" in json.dumps(r) for r in asked)
    scores = {(r["case_id"], r["metric"]): r for r in read_rows(out, "scores")}
    for metric in ("knowledge_retention", "conversation_relevancy", "role_adherence",
                   "conversation_completeness"):
        row = scores[("system-only", metric)]
        assert (row["value"], row["error"]) == (None, "no messages (not a conversation)")
        assert scores[("conv", metric)]["value"] is not None
    errors = {r["case_id"]: r for r in read_rows(out, "errors")}
    assert set(errors) == {"no-user", "null-question", "blank"}
    assert {r["stage"] for r in errors.values()} == {"read"}
    results = read_rows(out, "results")
    assert {r["case_id"] for r in results} == {"system-only", "conv"}
    counts = manifest(out, "r")["counts"]
    assert counts["input_rows"] == len(rows) == counts["results_rows"] + counts["invalid_rows"]
    assert manifest(out, "r")["reconciliation"]["ok"]


def _recorded_config(server, tmp_path) -> str:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        f"endpoints:\n  llm: {{base_url: '{server.openai_base_url}', api_key_env: CONV_KEY, "
        "requests_per_second: 500}\nbots:\n  - {name: recorded, type: precomputed}\n"
        "metrics: [conversation]\njudge: {endpoint: llm, model: judge-model}\n")
    return str(cfg)


def test_the_reply_after_the_last_user_turn_is_the_recorded_answer():
    """A recorded conversation (Ragas' MultiTurnSample, DeepEval's turns) ends
    with the assistant's reply: the question is the last user turn, and that
    reply is what the recorded bot answered (it was dropped, so every such row
    was ERROR). The answer column, when set, wins."""
    from transforms.answer.bots import PrecomputedBot
    ends_replied = to_case({"question": [*HISTORY, {"role": "user", "content": "Price?"},
                                         {"role": "assistant", "content": "$10."}]}, COLS, "f#0")
    assert (ends_replied.question, ends_replied.messages) == ("Price?", HISTORY)
    turn = PrecomputedBot("recorded").answer(ends_replied)
    assert turn.error is None and turn.answer == "$10."
    assert turn.details["from"].startswith("the conversation's assistant reply")
    both = to_case({"question": [*HISTORY, {"role": "user", "content": "Price?"},
                                 {"role": "assistant", "content": "$10."}],
                    "answer": "Ten dollars."}, COLS, "f#0")
    turn = PrecomputedBot("recorded").answer(both)
    assert turn.answer == "Ten dollars." and "from" not in turn.details
    ends_asked = to_case({"question": [*HISTORY, {"role": "user", "content": "Price?"}]},
                         COLS, "f#0")
    assert ends_asked.answer is None and not ends_asked.answer_from_conversation
    assert PrecomputedBot("recorded").answer(ends_asked).error == \
        "no recorded answer in the 'answer' column"

def test_a_file_in_openai_chat_format_is_read_as_whole_conversations(tmp_path):
    """{"messages": [system, user, assistant]} with no question column (OpenAI's
    chat format): the file was refused ("missing required column 'question'").
    Its last user turn is the question and the assistant's reply the recorded
    answer; a row without a user turn is an errors/ row."""
    rows = [{"messages": [SYSTEM, {"role": "user", "content": "How long is the refund window?"},
                          {"role": "assistant", "content": "Refunds are accepted within 30 days."}]},
            {"messages": [SYSTEM, *HISTORY, {"role": "user", "content": "What does it cost?"},
                          {"role": "assistant", "content": "Plus costs $10 a month."}]},
            {"messages": [SYSTEM]}]
    out = str(tmp_path / "out")
    assert run_cli("--input", write_jsonl(tmp_path / "chat.jsonl", rows), "--output", out,
                   "--run-id", "r") == 0
    results = sorted(read_rows(out, "results"), key=lambda r: r["question"])
    assert [(r["question"], r["answer"], r["error"]) for r in results] == [
        ("How long is the refund window?", "Refunds are accepted within 30 days.", None),
        ("What does it cost?", "Plus costs $10 a month.", None)]
    assert json.loads(results[1]["messages"]) == [SYSTEM, *HISTORY]
    errors = read_rows(out, "errors")
    assert len(errors) == 1 and "no user turn" in errors[0]["message"]
    assert manifest(out, "r")["reconciliation"]["ok"]


def test_a_system_turn_after_the_question_is_refused_not_dropped(tmp_path):
    """A conversation with a system turn after its last user turn lost that
    turn silently (only the assistant's replies after the question were kept,
    and a bot is sent the turns before it): the row is an errors/ row naming
    the turn, in the question and in a chat-format messages; the rest of the
    run is read as before."""
    asked = {"role": "user", "content": "What does it cost?"}
    reply = {"role": "assistant", "content": "Plus costs $10 a month."}
    late = {"role": "system", "content": "Answer in French."}
    rows = [{"case_id": "in-question", "question": [*HISTORY, asked, late, reply]},
            {"case_id": "in-messages", "messages": [SYSTEM, asked, reply, late]},
            {"case_id": "fine", "messages": [SYSTEM, asked, reply]}]
    out = str(tmp_path / "out")
    assert run_cli("--input", write_jsonl(tmp_path / "late.jsonl", rows), "--output", out,
                   "--run-id", "r") == 0
    errors = {e["case_id"]: e for e in read_rows(out, "errors")}
    assert sorted(errors) == ["in-messages", "in-question"]
    for case_id, turn in (("in-question", "question[3]"), ("in-messages", "messages[3]")):
        assert (errors[case_id]["stage"], errors[case_id]["error_type"]) == ("read",
                                                                            "invalid_value")
        assert errors[case_id]["message"].startswith(
            f"{turn} is a system turn after the last user turn"), errors[case_id]
    results = read_rows(out, "results")
    assert [(r["case_id"], r["answer"]) for r in results] == [("fine", reply["content"])]
    assert manifest(out, "r")["reconciliation"]["ok"]


def test_a_turn_missing_its_role_or_content_is_told_so_in_json_words(tmp_path):
    """A turn without `content` (or with `"content": null`, as OpenAI writes an
    assistant turn that only calls tools) was dead-lettered as 'content must be a
    string, got NoneType', and one without a role as "role must be one of …, got
    'None'": Python's names for JSON's null. Each is still an errors/ row and the
    counts reconcile."""
    turns = {"no_content": [{"role": "user"}], "null_content": [{"role": "user", "content": None}],
             "no_role": [{"content": "hi"}], "null_role": [{"role": None, "content": "hi"}],
             "ok": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps({"case_id": k, "question": "And now?", "answer": "Yes.",
                                        "messages": v}) + "\n" for k, v in turns.items()),
                    encoding="utf-8")
    out = str(tmp_path / "out")
    assert run_cli("--input", str(path), "--output", out, "--run-id", "m") == 0
    said = {e["case_id"]: e["message"] for e in read_rows(out, "errors")}
    assert said == {"no_content": "messages[0] has no content",
                    "null_content": "messages[0].content must be a string or a list of text "
                                    "parts, got null",
                    "no_role": "messages[0] has no role (system, user or assistant)",
                    "null_role": "messages[0].role must be one of system, user, assistant "
                                 "(or human/ai), got null"}
    assert [r["case_id"] for r in read_rows(out, "results")] == ["ok"]
    assert manifest(out, "m")["reconciliation"]["ok"]


def test_roles_are_read_in_any_case():
    """Chat logs and LangChain exports write roles as "User", "ASSISTANT",
    "Human": each was an errors/ row ("role must be one of system, user,
    assistant ..., got 'User'"). A role is read in any case, stored lower case
    (the same turns, the same derived id); a tool turn is still refused as one."""
    lower = to_case({"question": "And now?", "messages": HISTORY}, COLS, "f#0")
    mixed = to_case({"question": "And now?", "messages": [
        {"role": "User", "content": HISTORY[0]["content"]},
        {"role": "ASSISTANT", "content": HISTORY[1]["content"]}]}, COLS, "f#0")
    assert not isinstance(mixed, RowProblem), mixed
    assert mixed.messages == HISTORY and mixed.case_id == lower.case_id
    human = to_case({"question": [{"type": "Human", "content": "Hi?"}]}, COLS, "f#0")
    assert human.question == "Hi?"
    tool = to_case({"question": "q", "messages": [{"role": "Tool", "content": "42"}]}, COLS, "f#0")
    assert "is a tool result (role 'tool')" in tool.message



def test_a_role_that_is_no_text_is_told_in_json_words():
    """`"role": true` or `"role": 1` was refused as "got 'True'" / "got '1'": a
    text the file never held. The value is shown in JSON's words."""
    for role, shown in [(True, "true"), (1, "1"), (None, "null"), ("robot", "'robot'")]:
        problem = to_case({"question": "q", "messages": [{"role": role, "content": "hi"}]},
                          COLS, "f#0")
        assert problem.message.endswith(f"(or human/ai), got {shown}"), problem



def test_a_null_turn_is_told_in_json_words():
    """A null in a list of turns ([null, {...}], a gap in an exported log) was
    "must be an object with role and content, got NoneType": Python's name."""
    for raw, name in [({"question": "q", "messages": [None, HISTORY[0]]}, "messages"),
                      ({"question": [None, HISTORY[0]]}, "question")]:
        problem = to_case(raw, COLS, "f#0")
        assert problem.message == f"{name}[0] must be an object with role and content, got null"


# OpenAI's content parts: what chat logs exported from the API hold
PARTS_ROWS = [
    {"case_id": "parts", "messages": [
        {"role": "System", "content": [{"type": "text", "text": "You are Lumenfold's support "
                                                                 "assistant."}]},
        {"role": "user", "content": [{"type": "text", "text": "Hi, I am Dana."},
                                     {"type": "text", "text": "I am on the Plus plan."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello Dana!"}]},
        {"role": "USER", "content": [{"type": "text", "text": "What does it cost?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Plus costs $10 a month."}]}]},
    {"case_id": "image", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "What is in this photo?"},
                                     {"type": "image_url",
                                      "image_url": {"url": "https://example.com/a.png"}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A camera."}]}]},
]


def test_a_refusal_is_a_turn_and_a_tool_part_is_refused_as_a_tool_turn():
    """Two more shapes of exported chat logs: OpenAI's assistant message that
    refused (`"content": null, "refusal": "..."`) was "content must be a
    string, got null", though its words are the turn; a tool call or result
    inside a turn's content (Anthropic's tool_use / tool_result parts) is
    refused as tool turns are, not as an image would be."""
    refused = to_case({"question": "And the card number?", "messages": [
        HISTORY[0], {"role": "assistant", "content": None,
                     "refusal": "I can't share card numbers."}]}, COLS, "f#0")
    assert refused.messages[1] == {"role": "assistant", "content": "I can't share card numbers."}
    tool = to_case({"question": "q", "messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "42"}]}]}, COLS, "f#0")
    assert (tool.error_type, tool.message) == (
        "wrong_type", "messages[0].content[0] is a tool's part (type 'tool_result'); evalbeam "
        "reads conversations of text turns (an agent's tool calls and tool results are not "
        "read)")



def test_a_responses_api_conversation_is_read():
    """OpenAI's Responses API writes a conversation as items: messages
    ({"type": "message", "role", "content": [{"type": "input_text" | "output_text",
    "text"}]}) and tool items ({"type": "function_call", "name", ...}, no
    role). The messages read as turns; a tool item was "role must be one of
    ..., got 'function_call'" and is refused as a tool turn."""
    said = [{"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "Hi, I am Dana."}]},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Hello Dana!", "annotations": []}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "What does it cost?"}]}]
    case = to_case({"question": said}, COLS, "f#0")
    assert (case.question, case.messages) == ("What does it cost?", [
        {"role": "user", "content": "Hi, I am Dana."},
        {"role": "assistant", "content": "Hello Dana!"}])
    tool = to_case({"question": [said[0], {"type": "function_call", "call_id": "c1",
                                           "name": "price", "arguments": "{}"}, said[2]]},
                   COLS, "f#0")
    assert (tool.error_type, tool.message) == (
        "wrong_type", "question[1] is a tool's item (type 'function_call'); evalbeam reads "
        "conversations of text turns (an agent's tool calls and tool results are not read)")


def test_an_older_function_call_turn_is_refused_as_a_tool_call():
    """OpenAI's older function calling ({"role": "assistant", "content": null,
    "function_call": {"name": ..., "arguments": ...}}), still in exported chat
    logs, was "content must be a string ..., got null": it is refused as a
    tool call, named, as tool_calls are."""
    problem = to_case({"question": "q", "messages": [HISTORY[0], {
        "role": "assistant", "content": None,
        "function_call": {"name": "get_plan_price", "arguments": "{}"}}]}, COLS, "f#0")
    assert (problem.error_type, problem.message) == (
        "wrong_type", "messages[1] calls a tool (get_plan_price); evalbeam reads conversations "
        "of text turns (an agent's tool calls and tool results are not read)")


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_openai_content_parts_are_read_as_text(tmp_path, monkeypatch, fmt):
    """A turn whose content is OpenAI's list of parts ([{"type": "text", "text":
    ...}]), as chat logs exported from the API hold it, was an errors/ row
    ("content must be a string, got list"). Its text parts are joined with a
    line break, and a chat bot is sent text turns; a part that is not text (an
    image) makes the row an errors/ row that names it. In JSON Lines and in
    Parquet (whose structs give every part every field, null where unset)."""
    from tests.conftest import write_cases
    path = (write_jsonl(tmp_path / "chat.jsonl", PARTS_ROWS) if fmt == "jsonl"
            else write_cases(str(tmp_path / "chat.parquet"), PARTS_ROWS))
    history = [{"role": "system", "content": "You are Lumenfold's support assistant."},
               {"role": "user", "content": "Hi, I am Dana.\nI am on the Plus plan."},
               {"role": "assistant", "content": "Hello Dana!"}]
    monkeypatch.setenv("CONV_KEY", KEY)
    with FakeOpenAI(api_key=KEY) as server:
        server.set_chat_handler(lambda request: "Plus costs $10.")
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"endpoints:\n  llm: {{base_url: '{server.openai_base_url}', "
                       "api_key_env: CONV_KEY}\nbots:\n  - {name: recorded, type: precomputed}\n"
                       "  - {name: plain, type: chat, endpoint: llm, model: bot-model}\n")
        out = str(tmp_path / "out")
        assert run_cli("--input", path, "--output", out, "--config", str(cfg),
                       "--run-id", "r") == 0
        sent = [r.json["messages"] for r in server.recorded() if r.json]
    assert sent == [[*history, {"role": "user", "content": "What does it cost?"}]]
    results = {r["bot"]: r for r in read_rows(out, "results")}
    assert [(r["case_id"], r["question"], r["answer"], r["error"])
            for r in (results["recorded"], results["plain"])] == [
        ("parts", "What does it cost?", "Plus costs $10 a month.", None),
        ("parts", "What does it cost?", "Plus costs $10.", None)]
    assert json.loads(results["recorded"]["messages"]) == history
    errors = read_rows(out, "errors")
    assert [(e["case_id"], e["error_type"], e["message"]) for e in errors] == [
        ("image", "invalid_value", "messages[0].content[1] is a part of type 'image_url'; "
         "evalbeam evaluates text only: leave multimodal turns out, or describe the part "
         "in text")]
    assert manifest(out, "r")["reconciliation"]["ok"]


def test_whole_conversations_get_one_derived_id_each(tmp_path):
    """A file in OpenAI's chat format ({"messages": [system, user, assistant]}, no
    question column) hashed a null question and the turns before the last user
    turn: every row with the same system prompt had one id, and the run
    reported them as a repeated case id. A conversation given as the question
    hashed the whole list, its recorded reply too, so two runs with different
    replies did not pair (the id is never the answer's). Now a conversation's id
    is its question and earlier turns, the same in either column."""
    turns = [SYSTEM, *HISTORY, {"role": "user", "content": "What does it cost?"}]
    rows = [{"messages": [SYSTEM, {"role": "user", "content": "How long is the refund window?"},
                          {"role": "assistant", "content": "30 days."}]},
            {"messages": [SYSTEM, {"role": "user", "content": "Do you ship to Canada?"},
                          {"role": "assistant", "content": "Yes."}]},
            {"messages": [*turns, {"role": "assistant", "content": "$10 a month."}]}]
    out = str(tmp_path / "out")
    assert run_cli("--input", write_jsonl(tmp_path / "chat.jsonl", rows), "--output", out,
                   "--run-id", "r") == 0
    results = read_rows(out, "results")
    assert len({r["case_id"] for r in results}) == 3 and read_rows(out, "errors") == []
    ids = {to_case(raw, COLS, "f#0").case_id for raw in (
        {"question": [*turns, {"role": "assistant", "content": "Ten dollars."}]},
        {"question": turns},
        {"question": turns[-1]["content"], "messages": turns[:-1]},
        {"question": [{**t, "role": t["role"].upper()} for t in turns]})}
    cost = next(r["case_id"] for r in results if r["question"] == "What does it cost?")
    assert ids == {cost}


def test_an_empty_conversation_says_it_has_no_user_turn():
    """A chat-format row whose messages list is empty ({"messages": []}, an
    exported log's empty session) was an errors/ row saying only "question is
    null", as if the conversation had not been read; it says what it lacks, as
    a list of turns without a user turn does."""
    for raw in ({"messages": []}, {"messages": "[]", "question": None}):
        problem = to_case(raw, COLS, "f#0")
        assert (problem.error_type, problem.message) == (
            "invalid_value", "question is null and messages has no user turn to answer")
    assert to_case({"question": None}, COLS, "f#0").message == "question is null"
