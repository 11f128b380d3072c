"""Odd 200 replies of the judge, the bots, and the classifier, in real runs:
each is a correct reading or a null score with a one-line reason, never a
score of someone else's text, and never a request asked again for nothing.
The loopback server sends the bytes (tests/fake_server.py set_raw_handler)."""
from __future__ import annotations

import base64
import email.utils
import json
import re
import struct
import time
from typing import Callable

from tests.conftest import SAMPLE_ROWS, write_cases
from tests.fake_server import FakeOpenAI, RawReply, embed_text
from tests.pipeline_helpers import (manifest, read_rows, run_cli, run_cli_subprocess,
                                    run_sample)

ANSWER = "Refunds are accepted within 30 days."
VERDICT = '{"score": 4, "reason": "on topic"}'  # judge_relevance 0.75
DRAFT = '{"score": 1, "reason": "draft"}'


def _reply(content, finish: str = "stop", **message) -> dict:
    return {"choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": content, **message}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 10}}


def _raw(reply, content_type: str = "application/json") -> RawReply:
    return RawReply(reply if isinstance(reply, bytes) else json.dumps(reply).encode(),
                    content_type=content_type)


def _run_bots(tmp_path, replies: dict, code: int = 0) -> tuple[str, dict, dict]:
    """A run of one chat bot per entry of `replies` (bot name -> what its model
    answers), each on its own endpoint of one server, over two cases, that
    exits `code` (6: no bot answered): (output folder, results of c0 by bot,
    chat requests by bot)."""
    asked: dict[str, int] = {}

    def answer(route, data):
        if route != "chat":
            return None
        asked[data["model"]] = asked.get(data["model"], 0) + 1
        return replies[data["model"]]

    with FakeOpenAI() as server:
        server.set_raw_handler(answer)
        endpoint = (f"{{base_url: '{server.openai_base_url}', requests_per_second: 500, "
                    "max_attempts: 3, backoff_initial_s: 0.01, backoff_max_s: 0.02}")
        cfg = tmp_path / "c.yaml"
        cfg.write_text("endpoints:\n" + "".join(f"  {b}: {endpoint}\n" for b in replies)
                       + "bots:\n" + "".join(f"  - {{name: {b}, type: chat, endpoint: {b}, "
                                             f"model: {b}}}\n" for b in replies)
                       + "metrics: [exact_match]\n")
        rows = [{"case_id": f"c{i}", "question": f"How long is the refund window ({i})?",
                 "expected_answer": ANSWER} for i in range(2)]
        out = str(tmp_path / "out")
        assert run_cli("--input", write_cases(str(tmp_path / "c.parquet"), rows), "--output",
                       out, "--config", str(cfg), "--run-id", "odd") == code
    assert manifest(out, "odd")["reconciliation"]["ok"]
    results = {r["bot"]: r for r in read_rows(out, "results") if r["case_id"] == "c0"}
    return out, results, asked


def _scores(out: str) -> dict:
    return {(s["bot"], s["case_id"], s["metric"]): s for s in read_rows(out, "scores")}


def test_reasoning_sent_in_the_content_is_not_scored_as_the_answer(tmp_path):
    """A reasoning model served without a reasoning parser (DeepSeek-R1 on vLLM,
    Ollama's /v1) sends its thinking in the content; thinking parts (Mistral's
    magistral, Anthropic-style gateways) come beside the text. The answer after
    it was scored together with the thinking (exact_match 0 for the right
    answer), or the reply was an error ('list, not text'). Now the thinking goes
    to bot_details' reasoning_content and the answer alone is scored; a reply
    that is only thinking is an error row, not an empty answer."""
    thinking = "Maybe 45 days? The policy says 30."
    out, results, asked = _run_bots(tmp_path, {
        "tagged": _raw(_reply(f"<think>\n{thinking}\n</think>\n\n{ANSWER}")),
        "closing_only": _raw(_reply(f"{thinking}\n</think>\n\n{ANSWER}")),
        "parts": _raw(_reply([{"type": "thinking", "thinking": [{"type": "text",
                                                                 "text": thinking}]},
                              {"type": "text", "text": ANSWER}])),
        "unclosed": _raw(_reply(f"<think>\n{thinking}", "length")),
    })
    scores = _scores(out)
    for bot in ("tagged", "closing_only", "parts"):
        row = results[bot]
        assert row["answer"] == ANSWER and row["error"] is None, (bot, row)
        assert json.loads(row["bot_details"])["reasoning_content"] == thinking
        assert scores[(bot, "c0", "exact_match")]["value"] == 1.0
    cut = results["unclosed"]
    assert cut["verdict"] == "ERROR" and cut["answer"] is None
    assert cut["error"] == ("reply content of choice 0 is only reasoning (thinking), no answer: "
                            "cut off at the token limit (finish_reason 'length')")
    assert scores[("unclosed", "c0", "exact_match")]["value"] is None
    errors = read_rows(out, "errors")
    assert sorted((e["bot"], e["case_id"]) for e in errors) == [("unclosed", "c0"),
                                                                ("unclosed", "c1")]
    assert set(asked.values()) == {2}  # a bot is measured as it answers: no retry


def _run_http_bots(tmp_path, replies: dict, answer_path: str) -> tuple[dict, dict]:
    """A run of one http bot per entry of `replies` (bot name -> the JSON its
    assistant answers), over one case: (results by bot, scores)."""

    def answer(route, data):
        return _raw(replies[data["bot"]]) if route == "assistant" else None

    with FakeOpenAI() as server:
        server.set_raw_handler(answer)
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"endpoints:\n  web: {{base_url: '{server.base_url}', "
                       "requests_per_second: 500}\nbots:\n" + "".join(
                           f"  - {{name: {b}, type: http, endpoint: web, options: {{path: "
                           f"/assistant, answer_path: {answer_path}, body: {{question: "
                           f"'{{question}}', bot: {b}}}}}}}\n" for b in replies)
                       + "metrics: [exact_match]\n")
        out = str(tmp_path / "out")
        rows = [{"case_id": "c0", "question": "How long is the refund window?",
                 "expected_answer": ANSWER}]
        assert run_cli("--input", write_cases(str(tmp_path / "c.parquet"), rows), "--output",
                       out, "--config", str(cfg), "--run-id", "odd") == 0
    assert manifest(out, "odd")["reconciliation"]["ok"]
    return {r["bot"]: r for r in read_rows(out, "results")}, _scores(out)


def test_an_http_assistants_thinking_is_not_scored_as_its_answer(tmp_path):
    """An http assistant in front of a reasoning model (DeepSeek-R1 without a
    reasoning parser) passes its <think> block on in the answer: it was scored
    with the answer (exact_match 0.0 for the right one), while a chat bot's is
    moved aside. Now the same: the thinking in bot_details' reasoning_content,
    the answer after it scored, an answer that is only thinking an error row;
    an answer without thinking is as it was."""
    thinking = "Maybe 45 days? The policy says 30."
    answers = {"tagged": f"<think>\n{thinking}\n</think>\n\n{ANSWER}",
               "closing_only": f"{thinking}\n</think>\n\n{ANSWER}",
               "only": f"<think>\n{thinking}\n</think>\n", "plain": ANSWER}

    results, scores = _run_http_bots(
        tmp_path, {b: {"data": {"answer": a}} for b, a in answers.items()}, "data.answer")
    for bot in ("tagged", "closing_only", "plain"):
        assert results[bot]["answer"] == ANSWER and results[bot]["error"] is None, results[bot]
        assert scores[(bot, "c0", "exact_match")]["value"] == 1.0
        assert json.loads(results[bot]["bot_details"]).get("reasoning_content") == (
            None if bot == "plain" else thinking)
    only = results["only"]
    assert only["verdict"] == "ERROR" and only["answer"] is None
    assert only["error"] == "'data.answer' is only reasoning (thinking), no answer"


def test_an_empty_reply_a_content_filter_stopped_or_of_tool_calls_is_no_answer(tmp_path):
    """finish_reason 'content_filter' with an empty content, and an empty content
    beside tool calls, were scored as the bot's answer '' (exact_match 0.0, a
    FAIL the bot did not earn): now ERROR rows that say why. Text the filter
    cut short is scored as it is and says so, as a cut at the token limit does."""
    tool = [{"id": "1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]
    out, results, asked = _run_bots(tmp_path, {
        "filtered": _raw(_reply("", "content_filter")),
        "filtered_part": _raw(_reply("Refunds are", "content_filter")),
        "tools": _raw(_reply("", tool_calls=tool)),
    })
    scores = _scores(out)
    assert results["filtered"]["error"] == ("the provider's content filter stopped the reply "
                                            "(finish_reason 'content_filter')")
    assert results["tools"]["error"] == ("reply content of choice 0 is empty: the reply holds "
                                         "only tool calls (lookup), no text")
    for bot in ("filtered", "tools"):
        assert results[bot]["verdict"] == "ERROR" and results[bot]["answer"] is None
        assert scores[(bot, "c0", "exact_match")]["value"] is None
    part = results["filtered_part"]
    assert part["answer"] == "Refunds are" and part["error"] is None
    assert json.loads(part["bot_details"])["finish_reason"] == "content_filter"
    assert scores[("filtered_part", "c0", "exact_match")]["value"] == 0.0
    assert len(read_rows(out, "errors")) == 4 and set(asked.values()) == {2}


def test_a_body_that_is_not_utf8_is_read_in_its_charset_or_refused_once(tmp_path):
    """A 200 in Latin-1 was 'a body that is not JSON' and asked again up to
    max_attempts (each attempt a paid completion, the same bytes each time). Its
    declared charset is now read; without one the row says which byte, after
    one request."""
    body = json.dumps(_reply("Café: " + ANSWER), ensure_ascii=False).encode("latin-1")
    out, results, asked = _run_bots(tmp_path, {
        "declared": _raw(body, "application/json; charset=iso-8859-1"),
        "undeclared": _raw(body),
    })
    assert results["declared"]["answer"] == "Café: " + ANSWER
    bad = results["undeclared"]
    assert bad["verdict"] == "ERROR" and re.fullmatch(
        r"HTTP 200 with a body that is not UTF-8 \(byte 0xE9 at offset \d+\) and no other "
        r"charset in its Content-Type: not read, not retried", bad["error"]), bad["error"]
    assert asked == {"declared": 2, "undeclared": 2}
    usage = {u["endpoint"]: u for u in read_rows(out, "usage")}
    assert (usage["undeclared"]["calls"], usage["undeclared"]["retries"],
            usage["undeclared"]["failures"]) == (2, 0, 2)


def _run_judge(tmp_path, replies: dict) -> tuple[str, dict, dict]:
    """A run of judge_relevance over one recorded answer per entry of `replies`
    (case id -> the judge's reply to its question): (output folder, scores by
    case, judge requests by case, repairs included)."""
    asked: dict[str, int] = {}

    def answer(route, data):
        case = re.search(r"CASE-(\w+)-END", json.dumps(data.get("messages"))).group(1)
        asked[case] = asked.get(case, 0) + 1
        return replies[case]

    with FakeOpenAI() as server:
        server.set_raw_handler(answer)
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"endpoints:\n  judge: {{base_url: '{server.openai_base_url}', "
                       "requests_per_second: 500, max_attempts: 3, backoff_initial_s: 0.01, "
                       "backoff_max_s: 0.02}\njudge: {endpoint: judge, model: j}\n"
                       "metrics: [judge_relevance]\nembeddings: {provider: hashing}\n")
        rows = [{"case_id": case, "question": f"CASE-{case}-END How long is the refund window?",
                 "answer": ANSWER, "expected_answer": ANSWER} for case in replies]
        out = str(tmp_path / "out")
        assert run_cli("--input", write_cases(str(tmp_path / "c.parquet"), rows), "--output",
                       out, "--config", str(cfg), "--run-id", "judged") == 0
    assert manifest(out, "judged")["reconciliation"]["ok"]
    return out, {s["case_id"]: s for s in read_rows(out, "scores")}, asked


def test_the_judge_reads_its_verdict_after_its_thinking(tmp_path):
    """A judge that thinks in the content with a draft verdict inside <think>
    (or in a thinking part) had 'the reply holds 2 JSON objects': a repair
    request, then a null score; a thinking part made the reply 'list, not text',
    asked three times. The verdict after the thinking is now read, in one call."""
    out, scores, asked = _run_judge(tmp_path, {
        "tagged": _raw(_reply(f"<think>\nA draft: {DRAFT}. No, better 4.\n</think>\n{VERDICT}")),
        "parts": _raw(_reply([{"type": "thinking", "thinking": f"draft {DRAFT}"},
                              {"type": "text", "text": VERDICT}])),
    })
    for case in ("tagged", "parts"):
        assert scores[case]["value"] == 0.75 and scores[case]["error"] is None, scores[case]
    assert asked == {"tagged": 1, "parts": 1}
    assert not read_rows(out, "errors")


def test_a_closing_think_tag_in_running_text_is_part_of_the_answer(tmp_path):
    """A lone </think> anywhere split the content there: an answer that names the
    tag ("close it with </think> and ...") was scored as its tail with its head
    as reasoning, and a judge verdict whose reason quotes it lost the JSON's
    start (a repair request, then a null score). A lone closing tag ends
    reasoning only where it ends a line (DeepSeek-R1, QwQ: `...\n</think>\n\n`),
    in any case and as </thinking> too, outside code."""
    mention = "Close the block with </think> and the answer follows."
    fenced = "Write this:\n```\n</think>\n```\nthen the answer."
    out, results, _ = _run_bots(tmp_path, {
        "mention": _raw(_reply(mention)), "fenced": _raw(_reply(fenced)),
        "upper": _raw(_reply(f"Maybe 45 days.</THINK>\n\n{ANSWER}")),
        "thinking": _raw(_reply(f"Maybe 45 days.\n</thinking>\n{ANSWER}"))})
    assert results["mention"]["answer"] == mention
    assert results["fenced"]["answer"] == fenced
    for bot in ("upper", "thinking"):
        assert results[bot]["answer"] == ANSWER, results[bot]
        assert json.loads(results[bot]["bot_details"])["reasoning_content"] == "Maybe 45 days."
    quoted = '{"score": 4, "reason": "explains that </think> ends a reasoning block"}'
    (tmp_path / "j").mkdir()
    _, scores, asked = _run_judge(tmp_path / "j", {"quoted": _raw(_reply(quoted))})
    assert scores["quoted"]["value"] == 0.75 and asked == {"quoted": 1}


def test_a_judge_reply_a_content_filter_stopped_is_asked_once(tmp_path):
    """A judge reply withheld by the provider's content filter was asked again up
    to max_attempts (null content: 3 requests) or got a repair request quoting
    the same material to the same filter (empty or cut content: 2 requests), and
    its reason said 'content is null' or 'the reply is empty'. Now one request,
    a null score and the filter named."""
    out, scores, asked = _run_judge(tmp_path, {
        "null": _raw(_reply(None, "content_filter")),
        "empty": _raw(_reply("", "content_filter")),
        "cut": _raw(_reply('{"score": 4, "rea', "content_filter")),
    })
    assert asked == {"null": 1, "empty": 1, "cut": 1}
    named = "the provider's content filter stopped the reply (finish_reason 'content_filter')"
    for case in asked:
        assert scores[case]["value"] is None and named in scores[case]["error"], scores[case]
    errors = read_rows(out, "errors")
    assert sorted(e["case_id"] for e in errors) == ["cut", "empty", "null"]
    usage = [u for u in read_rows(out, "usage") if u["endpoint"] == "judge"]
    assert sum(u["calls"] + u["retries"] for u in usage) == 3


def test_a_classifier_prediction_giving_a_label_twice_is_not_read(tmp_path):
    """TEI's /predict answering [ENTAILMENT 0.9, ENTAILMENT 0.1, ...] was read
    as the last one (grounding_classifier 0.1, a score the model never gave):
    now a null score with the reason."""
    def predict(route, data):
        if route != "predict":
            return None
        one = [{"label": "ENTAILMENT", "score": 0.9}, {"label": "entailment", "score": 0.1},
               {"label": "CONTRADICTION", "score": 0.0}]
        return _raw([one for _ in data["inputs"]])

    with FakeOpenAI() as server:
        server.set_raw_handler(predict)
        code, out = run_sample(tmp_path, (
            f"endpoints:\n  nli: {{base_url: '{server.base_url}', requests_per_second: 500, "
            "backoff_initial_s: 0.01}\nclassifier: {endpoint: nli, model: m, labels: "
            "{supported: ENTAILMENT, contradicted: CONTRADICTION}}\n"
            "metrics: [grounding_classifier]\n"), "dup")
    assert code == 0 and manifest(out, "dup")["reconciliation"]["ok"]
    scored = {s["case_id"]: s for s in read_rows(out, "scores")}
    with_contexts = [r["case_id"] for r in SAMPLE_ROWS if r.get("contexts") and r.get("answer")]
    assert with_contexts
    for case in with_contexts:
        assert scored[case]["value"] is None
        assert "label 'entailment' is given twice in one prediction" in scored[case]["error"]


def test_a_retry_after_longer_than_a_call_waits_fails_the_call_and_holds_the_endpoint(tmp_path):
    """Retry-After: 86400 (or an HTTP-date a day ahead: a quota spent for the day)
    was waited 5 minutes an attempt, every attempt, every call: a run of four
    cases stalled for most of an hour to end in errors. Now the call fails at once
    with the wait asked for, and the endpoint's other calls fail unsent until
    then: one request per endpoint. A short HTTP-date is still waited out."""
    tomorrow = email.utils.formatdate(time.time() + 86400, usegmt=True)
    asked: dict[str, int] = {}

    def answer(route, data):
        model = data["model"]
        asked[model] = asked.get(model, 0) + 1
        if model == "soon" and asked[model] > 1:
            return _raw(_reply(ANSWER))
        wait = {"seconds": "86400", "date": tomorrow,
                "soon": email.utils.formatdate(time.time() + 2, usegmt=True)}[model]
        return RawReply(json.dumps({"error": {"message": "Quota exceeded."}}).encode(), 429,
                        headers=(("Retry-After", wait),))

    with FakeOpenAI() as server:
        server.set_raw_handler(answer)
        endpoint = (f"{{base_url: '{server.openai_base_url}', max_concurrency: 1, "
                    "max_attempts: 3, backoff_initial_s: 0.01, backoff_max_s: 0.02}")
        bots = ("seconds", "date", "soon")
        cfg = tmp_path / "c.yaml"
        cfg.write_text("endpoints:\n" + "".join(f"  {b}: {endpoint}\n" for b in bots)
                       + "bots:\n" + "".join(f"  - {{name: {b}, type: chat, endpoint: {b}, "
                                             f"model: {b}}}\n" for b in bots)
                       + "metrics: [exact_match]\n")
        rows = [{"case_id": f"c{i}", "question": f"Refund window {i}?", "expected_answer": ANSWER}
                for i in range(4)]
        out = str(tmp_path / "out")
        started = time.monotonic()
        done = run_cli_subprocess("--input", write_cases(str(tmp_path / "c.parquet"), rows),
                                  "--output", out, "--config", str(cfg), "--run-id", "held",
                                  "--runner", "FnApiRunner", timeout=150)
        took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    assert took < 120, took
    assert manifest(out, "held")["reconciliation"]["ok"]
    assert asked["seconds"] == 1 and asked["date"] == 1
    results = read_rows(out, "results")
    for bot in ("seconds", "date"):
        errors = sorted(r["error"] for r in results if r["bot"] == bot)
        assert all(r["verdict"] == "ERROR" for r in results if r["bot"] == bot)
        first = [e for e in errors if e.startswith("HTTP 429")]
        assert len(first) == 1 and re.search(
            r"Quota exceeded\. \(the server asks to wait 8\d{4} s, longer than a call waits "
            r"\(300 s\): not retried\)", first[0]), first
        held = [e for e in errors if e.startswith(f"not sent: endpoint {bot} asked to wait")]
        assert len(held) == 3 and all("Quota exceeded." in e for e in held), errors
        usage = [u for u in read_rows(out, "usage") if u["endpoint"] == bot]
        assert (sum(u["calls"] for u in usage), sum(u["retries"] for u in usage),
                sum(u["failures"] for u in usage)) == (1, 0, 4)
    assert all(r["answer"] == ANSWER for r in results if r["bot"] == "soon")
    assert "endpoint seconds asked to wait 86400 s" in done.stderr


def test_a_usage_block_without_counts_is_not_taken_for_free_calls(tmp_path):
    """`usage: {}` (some proxies) or counts that are no numbers counted as a
    reply that reported 0 tokens: usage/ showed the calls at cost 0 and neither
    the manifest nor the report said their cost is unknown, as they do for a
    reply without `usage`. Now they are calls that reported no token counts."""
    def without(usage) -> RawReply:
        return _raw({**_reply(ANSWER), "usage": usage})

    out, results, _ = _run_bots(tmp_path, {
        "empty": without({}),
        "words": without({"prompt_tokens": "lots", "completion_tokens": -3}),
        "counted": without({"prompt_tokens": 7, "completion_tokens": "3"}),
    })
    assert all(r["answer"] == ANSWER for r in results.values())
    unreported = manifest(out, "odd")["usage"]["unreported_tokens"]
    assert sorted(unreported) == ["empty", "words"]
    assert all(v["calls"] == 2 and v["estimated_prompt_tokens"] > 0 for v in unreported.values())
    with open(f"{out}/runs/odd/report.md", encoding="utf-8") as fh:
        assert "reported no token counts" in fh.read()
    counted = [u for u in read_rows(out, "usage") if u["endpoint"] == "counted"]
    assert sum(u["prompt_tokens"] for u in counted) == 14
    assert sum(u["completion_tokens"] for u in counted) == 6


def _embedding_scores(tmp_path, item: Callable[[int, list[float]], dict] | None) -> dict:
    """answer_similarity and answer_relevance of SAMPLE_ROWS with an embeddings
    endpoint whose reply's i-th item is item(i, the text's vector) (None: the
    fake server's own reply)."""
    def embed(route, data):
        if route != "embeddings":
            return None
        return _raw({"data": [item(i, embed_text(t, 16)) for i, t in enumerate(data["input"])]})

    tmp_path.mkdir()
    with FakeOpenAI() as server:
        if item is not None:
            server.set_raw_handler(embed)
        code, out = run_sample(tmp_path, (
            f"endpoints:\n  emb: {{base_url: '{server.openai_base_url}', "
            "requests_per_second: 500}\n"
            "embeddings: {provider: endpoint, endpoint: emb, model: m}\n"
            "metrics: [answer_similarity, answer_relevance]\ncache: {enabled: false}\n"),
            "plain" if item is None else "odd")
    assert code == 0
    return {(s["case_id"], s["metric"]): (s["value"], s["error"])
            for s in read_rows(out, "scores")}


def _same_scores(plain: dict, other: dict) -> None:
    assert plain.keys() == other.keys()
    assert any(v == 1.0 for v, _ in plain.values())
    for key, (value, error) in plain.items():
        got, got_error = other[key]
        assert got_error == error, key
        assert (got is None and value is None) or abs(got - value) < 1e-6, (key, got, value)


def test_embeddings_far_from_length_one_score_as_their_direction(tmp_path):
    """Vectors whose values are huge (1e39: past float32) or tiny (1e-46: below
    it) became inf or zeros when kept as float32, and their cosine with anything
    was 0.0: answer_similarity 0.0 for an answer equal to its reference, with no
    error. A cosine depends on the direction only: now the scores are those of
    the same vectors at length 1."""
    plain = _embedding_scores(tmp_path / "plain", None)
    _same_scores(plain, _embedding_scores(tmp_path / "scaled", lambda i, v: {
        "index": i, "embedding": [x * (1e39 if i % 2 else 1e-46) for x in v]}))


def test_embeddings_sent_as_base64_are_read_as_float32(tmp_path):
    """A vector sent as base64 (OpenAI's encoding_format=base64, which gateways
    and SDKs may ask for on their own) failed every embedding score with
    'could not convert string to float'. It is little-endian float32:
    now read as such, the scores those of the same vectors sent as numbers; a
    string that is not base64 says so in one line."""
    plain = _embedding_scores(tmp_path / "plain", None)
    _same_scores(plain, _embedding_scores(tmp_path / "b64", lambda i, v: {
        "index": i, "embedding": base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode()}))
    bad = _embedding_scores(tmp_path / "bad", lambda i, v: {"index": i, "embedding": "A!"})
    errors = {e for v, e in bad.values()}
    assert all(v is None for v, _ in bad.values())
    assert any("the embedding is a string that is not base64 ('A!'...)" in (e or "") for e in errors), \
        errors


def test_embeddings_without_an_index_are_read_in_order(tmp_path):
    """Items with no `index` (OpenAI-compatible servers that omit it) were
    refused: 'item indices [None, None] are not one per text', every embedding
    score null. Without any index they are in input order; a reply where some
    items have one and others not is still refused."""
    plain = _embedding_scores(tmp_path / "plain", None)
    _same_scores(plain, _embedding_scores(tmp_path / "none", lambda i, v: {"embedding": v}))
    mixed = _embedding_scores(tmp_path / "mixed", lambda i, v: {"embedding": v, **(
        {"index": i} if i else {})})
    assert all(v is None for v, _ in mixed.values())
    assert any("are not one per text" in (e or "") for _, e in mixed.values())


def test_a_200_carrying_vllms_error_shape_is_the_servers_error(tmp_path):
    """A 200 whose body is vLLM's error ({"object": "error", "message": ...}, no
    `error` key) was read as an answer: 'unexpected chat response shape
    (missing 'choices')', the server's message lost, and not retried as the
    {"error": ...} a gateway wraps in a 200 is. Now both are the same: the
    message, retried within max_attempts. So is an error beside empty answer
    fields (`"choices": []`, a gateway's completion object), which said 'the
    chat response has no choices', the server's message lost."""
    vllm = _raw({"object": "error", "message": "The model is overloaded.",
                 "type": "ServiceUnavailableError", "param": None, "code": 503})
    error = {"message": "The model is overloaded.", "type": "server_error"}
    out, results, asked = _run_bots(tmp_path, {
        "vllm": vllm, "wrapped": _raw({"error": error}),
        "beside": _raw({"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
                        "model": "m", "choices": [], "usage": None, "error": error})}, code=6)
    for bot in ("vllm", "wrapped", "beside"):
        assert results[bot]["error"] == "HTTP 200 with an error body: The model is overloaded."
        assert json.loads(results[bot]["bot_details"])["attempts"] == 3
    assert asked == {"vllm": 6, "wrapped": 6, "beside": 6}


def test_a_200_error_body_that_refuses_the_request_is_not_asked_again(tmp_path):
    """A 200 error body was retried whatever it said, as the 5xx or 429 a gateway
    wraps that way (above, still retried). One that refuses the request itself (a
    request error by type, vLLM's code 400, a prompt over the model's context)
    would be refused again: each of max_attempts requests sent the whole prompt."""
    out, results, asked = _run_bots(tmp_path, {
        "typed": _raw({"error": {"message": "Unrecognized request argument supplied: x",
                                 "type": "invalid_request_error"}}),
        "vllm400": _raw({"object": "error", "message": "Invalid 'n'.",
                         "type": "BadRequestError", "param": None, "code": 400}),
        "toolong": _raw({"error": "Input validation error: `inputs` tokens + "
                                  "`max_new_tokens` must be <= 4096. Given: 5000 `inputs` "
                                  "tokens (too many input tokens)"})}, code=6)
    assert asked == {"typed": 2, "vllm400": 2, "toolong": 2}  # one request per case
    assert results["typed"]["error"] == ("HTTP 200 with an error body: Unrecognized request "
                                         "argument supplied: x")
    assert json.loads(results["vllm400"]["bot_details"])["attempts"] == 1


def test_a_judge_reply_cut_off_before_any_text_is_asked_once(tmp_path):
    """A reasoning judge that spent max_tokens thinking (content null beside its
    reasoning_content, an empty content, or an unclosed <think>, each with
    finish_reason 'length') was asked again up to max_attempts (null content: 3
    requests, each as long) or repaired at the same max_tokens (2 requests).
    The same request ends the same way: now one request, a null score and the
    reason naming the token limit."""
    out, scores, asked = _run_judge(tmp_path, {
        "null": _raw(_reply(None, "length", reasoning_content="Let me weigh the answer...")),
        "empty": _raw(_reply("", "length")),
        "thinking": _raw(_reply("<think>\nLet me weigh the answer...", "length")),
    })
    assert asked == {"null": 1, "empty": 1, "thinking": 1}
    for case in asked:
        assert scores[case]["value"] is None, scores[case]
        assert "cut off at the token limit" in scores[case]["error"], scores[case]
    assert "raise max_tokens" in scores["null"]["error"]
    assert sorted(e["case_id"] for e in read_rows(out, "errors")) == ["empty", "null", "thinking"]


def test_a_gemini_style_answer_in_several_parts_is_their_joined_text(tmp_path):
    """A Gemini-style reply (candidates[0].content.parts) holds the answer in
    several text parts, beside thought parts and function calls: answer_path
    at the parts was an ERROR row ("is list, not text"), and a path at the
    first part's text scored half the answer or the thinking. Now the text
    parts are joined, thought parts go to reasoning_content, function calls
    are skipped, and a reply with no text part is an ERROR row saying why."""
    thought = {"text": "Maybe 45 days? The policy says 30.", "thought": True}
    call = {"functionCall": {"name": "lookup_policy", "args": {"topic": "refunds"}}}
    parts = {"two": [{"text": "Refunds are accepted "}, {"text": "within 30 days."}],
             "thought": [thought, {"text": ANSWER, "thoughtSignature": "c2ln"}],
             "call": [call, {"text": ANSWER}],
             "only_call": [call], "only_thought": [thought]}

    results, scores = _run_http_bots(tmp_path, {
        b: {"candidates": [{"content": {"role": "model", "parts": p}, "finishReason": "STOP"}]}
        for b, p in parts.items()}, "candidates.0.content.parts")
    for bot in ("two", "thought", "call"):
        assert results[bot]["answer"] == ANSWER and results[bot]["error"] is None, results[bot]
        assert scores[(bot, "c0", "exact_match")]["value"] == 1.0
    assert json.loads(results["thought"]["bot_details"])["reasoning_content"] == thought["text"]
    assert results["only_call"]["error"] == (
        "response does not match the bot's paths: \"'candidates.0.content.parts' has no text "
        "part: only function calls (lookup_policy)\"")
    assert results["only_thought"]["error"] == ("'candidates.0.content.parts' is only "
                                                "reasoning (thinking), no answer")
    for bot in ("only_call", "only_thought"):
        assert results[bot]["verdict"] == "ERROR" and results[bot]["answer"] is None
