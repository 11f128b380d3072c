"""Issue 9: whatever a server sends, the run goes on (items 1, 5, 10), and no
secret is written in any encoding (item 7). The loopback server's hostile
modes (tests/fake_server.py HOSTILE_KINDS) send the replies."""
from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
from contextlib import ExitStack

import httpx

from pipeline.config import DEFAULT_MAX_REPLY_BYTES
from tests.conftest import write_cases
from tests.fake_server import FakeOpenAI, ServerConfig
from tests.pipeline_helpers import (all_output_text, everything_written, leaks, manifest,
                                    read_rows, run_cli)
from tests.test_remote_client import _cfg
from transforms.progress.tally import Tally
from transforms.remote.breaker import CircuitBreaker
from transforms.remote.budget import JUDGE_CALLS, actual_use
from transforms.remote.client import EndpointClient
from transforms.remote.openai_api import chat
from transforms.remote.usage import add_call, new_usage

N_CASES = 9  # every 3rd reply of each server is hostile: 3 of 9


def _cases(tmp_path, n: int = N_CASES) -> str:
    rows = [{"case_id": f"h{i}", "question": f"How long is the refund window for order {i}?",
             "expected_answer": "Refunds are accepted within 30 days."} for i in range(n)]
    return write_cases(str(tmp_path / "cases.parquet"), rows)


def _endpoint(url: str, **extra) -> str:
    ep = dict(base_url=url, requests_per_second=500, max_attempts=2, backoff_initial_s=0.01,
              backoff_max_s=0.02, timeout_s=5.0)
    return json.dumps({**ep, **extra})


CHAT_KINDS = {  # hostile kind -> words of the ERROR row's reason
    "lone_surrogate": "not valid Unicode (lone surrogate U+D83D",
    "numeric_content": "reply content of choice 0 is int, not text",
    "null_content": "reply content of choice 0 is null",
    "empty_choices": "the chat response has no choices",
    "missing_message": "choice 0 has no message",
    "refusal": "the model refused: I can't help with that.",
}
HTTP_KINDS = {"lone_surrogate": "not valid Unicode", "numeric_content": "is int, not text"}


def test_hostile_replies_become_error_rows_with_the_reason(tmp_path):
    """Item 1 (one bad reply aborted the whole run) and item 5 (a huge reply was
    scored): every hostile reply is an ERROR row; the rest of the run is intact."""
    endpoints, bots, expect = [], [], {}
    with ExitStack() as stack:
        def server(kind, **knobs):
            return stack.enter_context(FakeOpenAI(ServerConfig(hostile=kind, hostile_every=3,
                                                               **knobs)))
        for kind, words in CHAT_KINDS.items():
            s = server(kind)
            endpoints.append(f"  {kind}: {_endpoint(s.openai_base_url)}")
            bots.append(f"  - {{name: chat_{kind}, type: chat, endpoint: {kind}, model: m}}")
            expect[f"chat_{kind}"] = words
        for kind, words in HTTP_KINDS.items():
            s = server(kind)
            endpoints.append(f"  http_{kind}: {_endpoint(s.base_url)}")
            bots.append(f"  - {{name: http_{kind}, type: http, endpoint: http_{kind}, options: "
                        "{path: /assistant, answer_path: data.answer}}")
            expect[f"http_{kind}"] = words
        s = server("huge_body", huge_body_bytes=300_000)
        endpoints.append(f"  huge: {_endpoint(s.openai_base_url, max_reply_bytes=100_000)}")
        bots.append("  - {name: huge, type: chat, endpoint: huge, model: m}")
        expect["huge"] = "larger than max_reply_bytes (100000 bytes)"
        cfg = tmp_path / "c.yaml"
        cfg.write_text("endpoints:\n" + "\n".join(endpoints) + "\nbots:\n" + "\n".join(bots)
                       + "\nmetrics: [exact_match, bleu]\n")
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path), "--output", out, "--config", str(cfg),
                       "--run-id", "hostile") == 0
    m = manifest(out, "hostile")
    assert m["reconciliation"]["ok"], m["reconciliation"]
    results = read_rows(out, "results")
    assert len(results) == N_CASES * len(expect)
    assert not os.listdir(os.path.join(out, "_tmp"))
    for bot, words in expect.items():
        rows = [r for r in results if r["bot"] == bot]
        failed = [r for r in rows if r["verdict"] == "ERROR"]
        assert len(failed) == N_CASES // 3, (bot, [r["error"] for r in rows])
        assert all(words in r["error"] and r["answer"] is None for r in failed), (bot, failed[0])
        assert all(r["answer"] for r in rows if r["verdict"] != "ERROR")
    refused = [json.loads(r["bot_details"]) for r in results
               if r["bot"] == "chat_refusal" and r["verdict"] == "ERROR"]
    assert all(d["refusal"] == "I can't help with that." for d in refused)
    errors = read_rows(out, "errors")
    assert len(errors) == len(expect) * (N_CASES // 3)
    assert {e["stage"] for e in errors} == {"bot"}


def test_default_reply_cap_refuses_a_9_mb_reply():
    """Item 5: the cap is on by default (8 MiB); the body is not read past it."""
    assert DEFAULT_MAX_REPLY_BYTES == 8 * 1024 * 1024
    huge = json.dumps({"choices": [{"message": {"content": "x" * (9 * 1024 * 1024)}}]})

    async def main():
        client = EndpointClient("llm", _cfg(), transport=httpx.MockTransport(
            lambda r: httpx.Response(200, content=huge.encode())))
        try:
            return await chat(client, "m", [{"role": "user", "content": "hi"}], purpose="bot:x")
        finally:
            await client.aclose()
    reply = asyncio.run(main())
    assert reply.texts == [] and not reply.record.ok and reply.record.attempts == 1
    assert "larger than max_reply_bytes (8388608 bytes)" in reply.error


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_one_chat_bot(tmp_path, name: str, endpoint: str, n_cases: int, code: int = 0) -> str:
    """A run (id `name`) of one chat bot `name` on the endpoint `name` (JSON), with
    exact_match only, that exits `code` (6: no answer, nothing evaluated);
    returns the output folder."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"endpoints:\n  {name}: {endpoint}\n"
                   f"bots:\n  - {{name: {name}, type: chat, endpoint: {name}, model: m}}\n"
                   "metrics: [exact_match]\n")
    out = str(tmp_path / "out")
    assert run_cli("--input", _cases(tmp_path, n_cases), "--output", out, "--config", str(cfg),
                   "--run-id", name) == code
    return out


def test_a_server_that_is_down_trips_the_circuit_breaker(tmp_path):
    """Item 10: without the breaker every call makes all its attempts (here 200 x 6
    refused connections and their backoff); with it the rest fail fast."""
    url = f"http://127.0.0.1:{_free_port()}/v1"
    down = _endpoint(url, max_attempts=6, backoff_initial_s=0.2, backoff_max_s=1.0)
    out = _run_one_chat_bot(tmp_path, "down", down, 200, code=6)
    results = read_rows(out, "results")
    assert len(results) == 200 and all(r["verdict"] == "ERROR" for r in results)
    opened = [r["error"] for r in results if "circuit open" in r["error"]]
    assert len(opened) > 150
    assert "consecutive connection failures to endpoint down" in opened[0]
    usage = read_rows(out, "usage")[0]
    attempts = [json.loads(r["bot_details"])["attempts"] for r in results]
    # calls + retries are the attempts made; a call the open breaker failed at
    # once is no request, but it is a failure (its row's error: circuit open)
    assert 0 < usage["calls"] == sum(a > 0 for a in attempts) < 200
    assert usage["calls"] + usage["retries"] == sum(attempts)
    assert usage["failures"] == 200
    assert usage["retries"] < 100  # without the breaker: 200 x 5 = 1000


def test_breaker_opens_fails_fast_then_probes_once():
    now = [0.0]
    b = CircuitBreaker("llm", failures=3, cooldown_s=30, clock=lambda: now[0])
    for _ in range(2):
        assert b.refusal() is None
        b.on_connection_failure("connection refused")
    assert b.refusal() is None
    b.on_connection_failure("connection refused")
    assert "circuit open: 3 consecutive connection failures to endpoint llm" in b.refusal()
    now[0] = 31.0
    assert b.refusal() is None          # the probe
    assert b.refusal() is not None      # only one probe at a time
    b.on_connection_failure("still down")
    assert b.refusal() is not None      # open again for another cooldown
    now[0] = 62.0
    assert b.refusal() is None
    b.on_response()                     # the server is back
    assert b.refusal() is None and b.consecutive == 0


def test_client_probes_again_and_recovers():
    calls = {"n": 0}

    def handler(request):
        calls["n"] += 1
        if calls["n"] <= 3:
            raise httpx.ConnectError("connection refused")
        return httpx.Response(200, json={"choices": [{"message": {"content": "back"}}]})

    async def main():
        client = EndpointClient("llm", _cfg(max_attempts=1, circuit_failures=3,
                                            circuit_cooldown_s=0.2),
                                transport=httpx.MockTransport(handler))
        try:
            ask = lambda: chat(client, "m", [{"role": "user", "content": "hi"}],  # noqa: E731
                               purpose="bot:x")
            first = [await ask() for _ in range(5)]
            await asyncio.sleep(0.25)
            return first, await ask()
        finally:
            await client.aclose()
    first, later = asyncio.run(main())
    assert calls["n"] == 4  # 3 refused, 2 refused by the breaker without a request, 1 probe
    assert [("circuit open" in (r.error or "")) for r in first] == [False] * 3 + [True] * 2
    assert later.texts == ["back"]


def _five_judge_calls(handler) -> list:
    """Five judge calls in a row through a client with 2 attempts a call and a
    breaker that opens after 3 connection failures (no backoff waits)."""
    async def main():
        client = EndpointClient("llm", _cfg(max_attempts=2, circuit_failures=3,
                                            circuit_cooldown_s=60, backoff_initial_s=0.0,
                                            backoff_max_s=0.0),
                                transport=httpx.MockTransport(handler))
        try:
            return [await chat(client, "m", [{"role": "user", "content": "hi"}],
                               purpose="judge:x") for _ in range(5)]
        finally:
            await client.aclose()
    return asyncio.run(main())


def test_a_server_that_hangs_trips_the_circuit_breaker_too():
    """A judge server that stops answering but whose port still accepts
    connections (a SIGSTOPped or wedged process: the kernel's backlog accepts)
    gave read timeouts, which never opened the breaker: every call made all its
    attempts of timeout_s each. 800 cases ran at ~1 case/s instead of ~45 (with
    the defaults, 6 x 60 s a call: hours). An attempt that got no reply at all
    within timeout_s now counts as a connection failure; any reply resets it."""
    requests = {"n": 0}

    def handler(request):
        requests["n"] += 1
        if requests["n"] == 2:  # a reply between timeouts: the count starts again
            return httpx.Response(500, text="busy")
        raise httpx.ReadTimeout("no reply", request=request)

    replies = _five_judge_calls(handler)
    # timeout, 500 (reset), timeout, timeout, timeout -> open; the rest fail at once
    assert requests["n"] == 5
    assert [r.record.attempts for r in replies] == [2, 2, 1, 0, 0]
    assert "circuit open: 3 consecutive connection failures" in replies[3].error
    assert "timeout" in replies[3].error


def test_calls_refused_by_an_open_breaker_are_failures_not_requests():
    """usage/ calls + retries are the requests made; a call the open breaker
    refused before any attempt is not one, but it is a failure (its row has
    the `circuit open` error), and it does not spend judge.max_calls."""
    requests = {"n": 0}

    def handler(request):
        requests["n"] += 1
        raise httpx.ConnectError("connection refused")

    replies = _five_judge_calls(handler)
    # call 1: 2 attempts; call 2: 1 attempt, then the breaker opens; calls 3-5: none
    assert requests["n"] == 3
    assert [r.record.attempts for r in replies] == [2, 1, 0, 0, 0]
    assert all("circuit open" in r.error for r in replies[1:])
    usage = new_usage()
    for r in replies:
        add_call(usage, r.record)
    assert usage["calls"] + usage["retries"] == requests["n"]
    assert (usage["calls"], usage["retries"], usage["failures"]) == (2, 1, 5)
    tally = Tally()
    for r in replies:
        tally.call(r.record)
    assert tally.snapshot()["calls"]["llm"] == {"calls": 2, "retries": 1, "failures": 5,
                                                "rate_limited": 0}
    assert actual_use("llm", "judge:x", False, 0, 0, 10.0, None)[JUDGE_CALLS] == 1.0
    assert actual_use("llm", "judge:x", False, 0, 0, 10.0, None, sent=False) == {}


# ------------------------------------------------------------------ secrets (item 7)

KEY = "sk-q7Zx-KEY-0123456789abcdefXYZ"
TOKEN = "tk-98765-QWERTY-zyxwv-5521"


def test_secrets_echoed_in_every_encoding_are_scrubbed_everywhere(tmp_path, monkeypatch,
                                                                  capfd):
    monkeypatch.setenv("HOSTILE_KEY", KEY)
    monkeypatch.setenv("TENANT_TOKEN", TOKEN)
    monkeypatch.setenv("EVALBEAM_PROGRESS_S", "0.2")
    with FakeOpenAI(ServerConfig(hostile="echo_secrets", hostile_every=2)) as echo, \
            FakeOpenAI(ServerConfig(echo_auth_in_errors=True, status_override=400)) as errs:
        auth = ", api_key_env: HOSTILE_KEY, headers: {X-Tenant-Token: '${TENANT_TOKEN}'}"
        cfg = tmp_path / "c.yaml"
        cfg.write_text(
            f"endpoints:\n  echo: {_endpoint(echo.openai_base_url)[:-1]}{auth}}}\n"
            f"  errs: {_endpoint(errs.openai_base_url)[:-1]}{auth}}}\n"
            "bots:\n  - {name: echo, type: chat, endpoint: echo, model: m}\n"
            "  - {name: errs, type: chat, endpoint: errs, model: m}\n"
            "metrics: [exact_match, keyword_recall, hallucination]\n")
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path, 6), "--output", out, "--config", str(cfg),
                       "--run-id", "s") == 0
        echoed = [r for r in echo.requests if r.status == 200]
    assert echoed
    results = read_rows(out, "results")
    answered = [r for r in results if r["bot"] == "echo" and r["answer"]]
    flagged = [r for r in answered if "<redacted>" in r["answer"]]
    assert len(flagged) == 3
    assert all(json.loads(r["bot_details"])["secrets_scrubbed"] is True for r in flagged)
    errs_rows = [r for r in results if r["bot"] == "errs"]
    assert all("<redacted>" in r["error"] for r in errs_rows)
    assert all(json.loads(r["bot_details"])["secrets_scrubbed"] is True for r in errs_rows)
    captured = capfd.readouterr()
    everything = everything_written(out, captured.out, captured.err)
    assert leaks(everything, KEY) == [] and leaks(everything, TOKEN) == []
    m = json.dumps(manifest(out, "s"))
    assert "HOSTILE_KEY" in m and "${TENANT_TOKEN}" in m  # names, never values


URL_PASSWORD, URL_QUERY_KEY = "UrlPassw0rdSecret", "QueryKeySecret42"


def _with_credentials(url: str) -> str:
    """http://alice:<password>@127.0.0.1:port/v1?key=<query key>"""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://alice:{URL_PASSWORD}@{rest}?key={URL_QUERY_KEY}"


def test_credentials_inside_base_url_are_redacted_everywhere(tmp_path, capfd):
    """Issue 22 item 3: a base_url's userinfo and query values were written
    verbatim to manifest.json and report.html, and the server's echo of the
    derived `Basic base64(user:password)` landed in results/."""
    basic = base64.b64encode(f"alice:{URL_PASSWORD}".encode()).decode()
    with FakeOpenAI(ServerConfig(hostile="echo_secrets", hostile_every=2)) as echo, \
            FakeOpenAI(ServerConfig(echo_auth_in_errors=True, status_override=400)) as errs:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(
            f"endpoints:\n  echo: {_endpoint(_with_credentials(echo.openai_base_url))}\n"
            f"  errs: {_endpoint(_with_credentials(errs.openai_base_url))}\n"
            "bots:\n  - {name: echo, type: chat, endpoint: echo, model: m}\n"
            "  - {name: errs, type: chat, endpoint: errs, model: m}\n"
            "metrics: [exact_match, keyword_recall]\n")
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path, 6), "--output", out, "--config", str(cfg),
                       "--run-id", "u") == 0
        sent = [r for r in echo.requests if r.status == 200]
    # the credentials were used as a client uses them: Basic auth and the query
    assert sent and all(r.headers.get("authorization") == f"Basic {basic}" for r in sent)
    assert all(r.query == f"key={URL_QUERY_KEY}" for r in sent)
    results = read_rows(out, "results")
    assert any("<redacted>" in (r["answer"] or "") for r in results if r["bot"] == "echo")
    captured = capfd.readouterr()
    everything = "\n".join([all_output_text(out), captured.out, captured.err])
    for secret in (URL_PASSWORD, URL_QUERY_KEY, basic, f"alice:{URL_PASSWORD}"):
        assert leaks(everything, secret) == [], secret
    m = json.dumps(manifest(out, "u"))
    assert "http://<redacted>@127.0.0.1" in m and "?key=<redacted>" in m
    page = open(os.path.join(out, "runs", "u", "report.html"), encoding="utf-8").read()
    assert URL_PASSWORD not in page and URL_QUERY_KEY not in page


def test_error_text_is_scrubbed_before_it_is_cut():
    """A key straddling the 300-character cut kept its prefix."""
    body = {"error": {"message": "x" * 290 + " " + KEY + " trailing"}}

    async def main():
        os.environ["CUT_KEY"] = KEY
        try:
            client = EndpointClient("llm", _cfg(api_key_env="CUT_KEY"),
                                    transport=httpx.MockTransport(
                                        lambda r: httpx.Response(400, json=body)))
            return await chat(client, "m", [{"role": "user", "content": "hi"}],
                              purpose="bot:x")
        finally:
            os.environ.pop("CUT_KEY", None)
    reply = asyncio.run(main())
    assert reply.error.startswith("HTTP 400: xxx") and "<redact" in reply.error
    assert leaks(reply.error, KEY) == []


def test_request_logs_do_not_print_a_base_url_credential(caplog):
    """httpx logs every request's full URL at INFO ('HTTP Request: POST
    http://...?key=...'); Beam's worker processes log at INFO, so a run with
    --direct_running_mode=multi_processing printed the base_url's query key
    (and, on Dataflow, would send it to the job's logs)."""
    caplog.set_level("INFO")
    with FakeOpenAI() as server:
        async def main():
            client = EndpointClient("llm", _cfg(base_url=_with_credentials(server.openai_base_url),
                                                max_attempts=1))
            try:
                return await chat(client, "m", [{"role": "user", "content": "hi"}],
                                  purpose="bot:x")
            finally:
                await client.aclose()
        reply = asyncio.run(main())
    assert reply.error is None
    for secret in (URL_PASSWORD, URL_QUERY_KEY):
        assert leaks(caplog.text, secret) == [], caplog.text


def test_a_bot_reply_cut_off_before_any_text_is_an_error_not_an_empty_answer(tmp_path):
    """A reasoning model that spends max_tokens thinking answers `content: ""`
    with finish_reason 'length': the empty string was the bot's answer, scored
    (exact_match 0, bleu 0, a FAIL verdict) as if the bot had said nothing. It is
    now an ERROR row saying why; a reply cut off after some text is scored and
    its bot_details say it was cut off; tool calls alone are named as such."""
    replies = {"h0": {"content": "", "finish_reason": "length",
                      "reasoning_content": "Let me think about refunds..."},
               "h1": {"content": "Refunds are accepted within", "finish_reason": "length"},
               "h2": {"content": None, "tool_calls": [
                   {"id": "c1", "type": "function",
                    "function": {"name": "lookup_policy", "arguments": "{}"}}]}}

    def handler(request):
        question = request["messages"][-1]["content"]
        return replies.get(f"h{question.split()[-1].rstrip('?')}", "Refunds: 30 days.")
    with FakeOpenAI() as server:
        server.set_chat_handler(handler)
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"endpoints:\n  llm: {_endpoint(server.openai_base_url)}\n"
                       "bots:\n  - {name: b, type: chat, endpoint: llm, model: m}\n"
                       "metrics: [exact_match, bleu]\n")
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path, 4), "--output", out, "--config", str(cfg),
                       "--run-id", "cut") == 0
    assert manifest(out, "cut")["reconciliation"]["ok"]
    rows = {r["case_id"]: r for r in read_rows(out, "results")}
    assert rows["h0"]["verdict"] == "ERROR" and rows["h0"]["answer"] is None
    assert "cut off at the token limit before any text" in rows["h0"]["error"]
    assert rows["h1"]["answer"] == "Refunds are accepted within" and rows["h1"]["error"] is None
    assert json.loads(rows["h1"]["bot_details"])["finish_reason"] == "length"
    assert rows["h2"]["verdict"] == "ERROR"
    assert "only tool calls (lookup_policy)" in rows["h2"]["error"]
    assert rows["h3"]["error"] is None and rows["h3"]["answer"] == "Refunds: 30 days."
    errors = read_rows(out, "errors")
    assert sorted(e["case_id"] for e in errors) == ["h0", "h2"]


def test_a_key_in_base_url_path_or_fragment_is_written_nowhere(tmp_path, capfd):
    """Round 4: base_url http://host/key/<key>/v1#token=<token> (a literal key,
    no api_key_env): the server's 404 echoes the path with the key; results/,
    scores/, errors/, report.md/html and manifest.json (the fragment too) had it."""
    key, frag = "sk-pathKEY-7Hq2Wm9Zr4Tn8Bv0", "fragTok-Zq81Lm22Xc93"
    with FakeOpenAI() as server:
        host = server.openai_base_url.rsplit("/v1", 1)[0]
        out = _run_one_chat_bot(tmp_path, "p", _endpoint(f"{host}/key/{key}/v1#token={frag}"), 3,
                               code=6)
        assert any(key in r.path for r in server.requests)  # the key was used, and echoed
    errors = read_rows(out, "errors")
    assert errors and all("Unknown route POST /key/<redacted>/v1" in r["message"] for r in errors)
    captured = capfd.readouterr()
    everything = everything_written(out, captured.out, captured.err)
    assert leaks(everything, key) == [] and leaks(everything, frag) == []
    assert "/key/<redacted>/v1#token=<redacted>" in json.dumps(manifest(out, "p"))


USER_TOKEN = "U0a1B2c3D4e5F6g7H8i9J0kL"


def test_a_key_in_an_http_bot_body_is_written_nowhere(tmp_path, monkeypatch, capfd):
    """Round 5: an http bot's options.body with a literal key (api_key: sk-...)
    and one from the environment (${BODY_TOKEN}): the scrubber knew only the
    endpoints' secrets, so a server that echoes the body it got in its error
    (JSON-escaped and base64) put them in results/, errors/ and the report."""
    literal, token = "sk-bodyLIT-4Tn8Bv0xHq2Wm9Zr", "bodyTok-Xw4Tn8Bv2q7ZrLm9"
    monkeypatch.setenv("BODY_TOKEN", token)

    def echo_body(body: dict) -> str:
        sent = json.dumps(body)
        raise ValueError(f"bad request {sent} / {base64.b64encode(sent.encode()).decode()}")
    with FakeOpenAI() as server:
        server.set_assistant_handler(echo_body)
        cfg = tmp_path / "c.yaml"
        cfg.write_text(
            f"endpoints:\n  rag: {_endpoint(server.base_url, max_attempts=1)}\n"
            "bots:\n  - {name: rag, type: http, endpoint: rag, options: {path: /assistant, "
            "answer_path: data.answer, body: {question: '{question}', api_key: '" + literal +
            "', auth: {bearer: 'Bearer ${BODY_TOKEN}'}, user: '" + USER_TOKEN +
            "', model: Qwen2.5-72B-Instruct}}}\nmetrics: [exact_match]\n")
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path, 3), "--output", out, "--config", str(cfg),
                       "--run-id", "b") == 6  # no bot answered
        sent = [r.json for r in server.requests if r.path == "/assistant"]
    assert sent and all(b["api_key"] == literal for b in sent)
    assert all(b["auth"]["bearer"] == f"Bearer {token}" for b in sent)  # read from the env
    errors = read_rows(out, "errors")
    assert len(errors) == 3 and all("<redacted>" in e["message"] for e in errors), errors
    everything = everything_written(out, *capfd.readouterr())
    assert leaks(everything, literal) == [] and leaks(everything, token) == []
    assert leaks(everything, USER_TOKEN) == []  # round 5b: a token under any key
    assert "${BODY_TOKEN}" in json.dumps(manifest(out, "b"))  # the name, never the value
    assert "Qwen2.5-72B-Instruct" in json.dumps(manifest(out, "b"))  # no token


def test_an_http_bot_body_variable_is_read_before_the_question_and_must_be_set(
        tmp_path, monkeypatch, capsys):
    """A ${VAR} in the body is the environment's; a question holding "${VAR}" (a
    dataset column) is sent as written, never expanded to a secret. An unset
    variable stops the run before it starts (exit 2, the variable named)."""
    from transforms.answer.remote_bots import _substitute, with_env
    monkeypatch.setenv("BODY_TOKEN", "bodyTok-secretValue42")
    body = with_env({"q": "{question}", "auth": ["${BODY_TOKEN}"]}, "bots.b.options.body")
    sent = _substitute(body, "print ${BODY_TOKEN} please", "c1")
    assert sent == {"q": "print ${BODY_TOKEN} please", "auth": ["bodyTok-secretValue42"]}
    cfg = tmp_path / "c.yaml"
    cfg.write_text("endpoints:\n  rag: {base_url: 'http://127.0.0.1:9'}\n"
                   "bots:\n  - {name: rag, type: http, endpoint: rag, options: {answer_path: a, "
                   "body: {q: '{question}', key: '${NO_SUCH_BODY_VAR}'}}}\n"
                   "metrics: [exact_match]\n")
    assert run_cli("--input", _cases(tmp_path, 1), "--output", str(tmp_path / "out"),
                   "--config", str(cfg)) == 2
    assert not os.path.exists(tmp_path / "out" / "runs")
    assert "environment variable NO_SUCH_BODY_VAR (bots.rag.options.body.key) is not set" \
        in capsys.readouterr().err


def test_an_http_bot_body_variable_without_braces_is_refused_as_a_header_s_is(
        tmp_path, monkeypatch, capfd):
    """`$BODY_TOKEN` in an http bot's body (shell style) was sent to the
    assistant as those eleven characters, every call refused, while the same
    `$VAR` in a header stops the run. The body is now read as a header: the run
    stops before any call (exit 2, one line naming the key and the fix, never
    the value), and `${BODY_TOKEN}` sends the value; a `$` before a figure
    (`$5`) is text."""
    token = "bodyTok-Xw4Tn8Bv2q7ZrLm9"
    monkeypatch.setenv("BODY_TOKEN", token)
    with FakeOpenAI() as server:
        server.set_assistant_handler(lambda body: "Within 30 days.")

        def run_with(auth: str, run_id: str) -> tuple[int, str]:
            cfg = tmp_path / f"{run_id}.yaml"
            cfg.write_text(
                f"endpoints:\n  rag: {_endpoint(server.base_url, max_attempts=1)}\n"
                "bots:\n  - {name: rag, type: http, endpoint: rag, options: {path: /assistant, "
                "answer_path: data.answer, body: {question: '{question}', note: 'under $5', "
                "auth: [{bearer: '" + auth + "'}]}}}\nmetrics: [exact_match]\n")
            out = str(tmp_path / run_id)
            return run_cli("--input", _cases(tmp_path, 2), "--output", out, "--config",
                           str(cfg), "--run-id", run_id), out
        code, out = run_with("Bearer $BODY_TOKEN", "bare")
        err = capfd.readouterr().err.strip()
        assert code == 2 and not os.path.exists(out)
        assert not [r for r in server.recorded() if r.path == "/assistant"]
        assert err == ("evalbeam: error: bots[0].options.body.auth[0].bearer sends $BODY_TOKEN "
                       "as it is: write ${BODY_TOKEN} to read the variable, or "
                       "$$BODY_TOKEN for the text $BODY_TOKEN")
        assert token not in err
        assert run_with("Bearer ${BODY_TOKEN}", "braced")[0] == 0
        sent = [r.json for r in server.recorded() if r.path == "/assistant"]
    assert len(sent) == 2 and all(b["auth"] == [{"bearer": f"Bearer {token}"}]
                                  and b["note"] == "under $5" for b in sent)


def test_a_token_in_a_header_not_named_like_a_secret_is_written_nowhere(tmp_path, capfd):
    """Round 5: only headers named like a secret (key, token, auth, ...) had their
    literal values scrubbed and redacted: a token in X-Access or X-Tenant (20+
    characters mixing cases and digits) went to manifest.json as written and a
    server's echo of it to results/ and the report. A plain value stays."""
    token = "T0a1B2c3D4e5F6g7H8i9J0kL"
    with FakeOpenAI(ServerConfig(hostile="echo_secrets", hostile_every=1)) as echo:
        headers = {"X-Access": token, "X-Tenant": f"Tenant {token}", "X-Region": "eu-west-1",
                   "X-Model": "Qwen2.5-72B-Instruct"}
        out = _run_one_chat_bot(tmp_path, "x", _endpoint(echo.openai_base_url, headers=headers),
                                2)
        assert all(r.headers.get("x-access") == token for r in echo.requests)
    everything = everything_written(out, *capfd.readouterr())
    assert leaks(everything, token) == []
    public = json.dumps(manifest(out, "x")["config"])
    assert "eu-west-1" in public and "Qwen2.5-72B-Instruct" in public  # what names no key


def test_a_variable_glued_to_text_is_refused_and_a_doubled_dollar_is_a_dollar(
        tmp_path, monkeypatch, capfd):
    """`$VAR` was refused only at a text's start or after a blank (`Bearer
    $KEY`): glued to text (`Bearer$KEY`, `token=$KEY`, a URL's `?key=$KEY` in an
    http bot's body) it was sent as those characters, every call refused, and a
    `${VAR}` in base_url went out as written. Now a `$NAME` anywhere in a header or
    a body is refused before the run (exit 2, one line naming the key, never a
    value), so is a variable in base_url or a path (not read there), and `$$` writes a
    literal `$` (`$$HOME` sends `$HOME`, `$${X}` sends `${X}`)."""
    token = "gluedTok-Xw4Tn8Bv2q7ZrLm9"
    monkeypatch.setenv("GLUED_TOKEN", token)
    with FakeOpenAI() as server:
        server.set_assistant_handler(lambda body: "Within 30 days.")

        def run_with(run_id: str, header: str, body: str, base: str = "",
                     path: str = "/assistant") -> tuple[int, str]:
            cfg = tmp_path / f"{run_id}.yaml"
            ep = json.loads(_endpoint(server.base_url + base, max_attempts=1))
            ep["headers"] = {"X-Auth": header}
            cfg.write_text(
                f"endpoints:\n  rag: {json.dumps(ep)}\n"
                "bots:\n  - {name: rag, type: http, endpoint: rag, options: {path: '" + path
                + "', answer_path: data.answer, body: {question: '{question}', link: '" + body
                + "'}}}\nmetrics: [exact_match]\n")
            out = str(tmp_path / run_id)
            code = run_cli("--input", _cases(tmp_path, 1), "--output", out, "--config",
                           str(cfg), "--run-id", run_id)
            return code, capfd.readouterr().err.strip()

        for run_id, header, body, base, path, said in [
            ("h", "Bearer$GLUED_TOKEN", "x", "", "/assistant", "endpoints.rag.headers.X-Auth sends "
             "$GLUED_TOKEN as it is: write ${GLUED_TOKEN} to read the variable, or "
             "$$GLUED_TOKEN for the text $GLUED_TOKEN"),
            ("b", "k", "https://docs.example/?key=$GLUED_TOKEN", "", "/assistant",
             "bots[0].options.body.link sends $GLUED_TOKEN as it is"),
            ("u", "k", "x", "/?key=${GLUED_TOKEN}", "/assistant", "endpoints.rag.base_url "
             "holds a variable (${GLUED_TOKEN}), which is not read from the environment"),
            ("p", "k", "x", "", "/assistant/$GLUED_TOKEN", "bots[0].options.path holds a "
             "variable ($GLUED_TOKEN), which is not read from the environment in a URL"),
        ]:
            code, err = run_with(run_id, header, body, base, path)
            assert code == 2 and said in err and err.count("\n") == 0, err
            assert token not in err and not os.path.exists(tmp_path / run_id)
        assert not [r for r in server.recorded() if r.path == "/assistant"]
        code, _ = run_with("ok", "Bearer${GLUED_TOKEN}", "cost: US$$5, $$HOME, $${X}")
        assert code == 0
        sent = [r for r in server.recorded() if r.path == "/assistant"]
    assert len(sent) == 1 and sent[0].headers["x-auth"] == f"Bearer{token}"
    assert sent[0].json["link"] == "cost: US$5, $HOME, ${X}"
