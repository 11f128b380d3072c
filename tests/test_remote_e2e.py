"""Remote bots end to end against the loopback fake OpenAI server."""
from __future__ import annotations

import json
import os
import re
from collections import Counter

import pyarrow.parquet as pq
import pytest

from tests.conftest import EXAMPLE, write_cases
from tests.fake_server import FakeOpenAI, ServerConfig
from transforms.remote.breaker import FORBIDDEN_BEFORE_ACCEPTED, CircuitBreaker
from tests.pipeline_helpers import all_output_text, manifest, read_rows, run_cli, run_cli_subprocess

KEY = "sk-e2e-THIS-KEY-MUST-NOT-LEAK-7f3a9c"


def _cases(tmp_path, n: int) -> str:
    rows = [{"case_id": f"r{i:04d}", "question": f"How long is the refund window for order {i}?",
             "expected_answer": "Refunds are accepted within 30 days.",
             "contexts": ["Refunds are accepted within 30 days of delivery."], "suite": "returns"}
            for i in range(n)]
    return write_cases(str(tmp_path / "cases.parquet"), rows)


def _config(tmp_path, server, bots: str, **endpoint) -> str:
    ep = dict(base_url=server.openai_base_url, api_key_env="E2E_KEY", requests_per_second=500,
              max_concurrency=32, timeout_s=1.0, max_attempts=6, backoff_initial_s=0.02,
              backoff_max_s=0.2, price_per_million={"input": 0.15, "output": 0.6})
    ep.update(endpoint)
    path = tmp_path / "config.yaml"
    path.write_text(f"endpoints:\n  llm: {json.dumps(ep)}\nbots:\n{bots}")
    return str(path)


FULL_CONTEXT = ("  - {name: assistant, type: full_context, endpoint: llm, model: gpt-test, "
                f"knowledge: {os.path.join(EXAMPLE, 'knowledge.md')}}}\n")


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv("E2E_KEY", KEY)


def test_1000_cases_with_20_percent_faults_lose_nothing(tmp_path, key_env, monkeypatch, capfd):
    monkeypatch.setenv("EVALBEAM_PROGRESS_S", "0.5")
    server_cfg = ServerConfig(fault_rate=0.2, timeout_sleep_s=1.5, seed=3)
    with FakeOpenAI(server_cfg, api_key=KEY) as server:
        cfg = _config(tmp_path, server, FULL_CONTEXT)
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path, 1000), "--output", out, "--config", cfg,
                       "--run-id", "faults") == 0
        stats = server.stats()
        prompts = [r.json["messages"][-1]["content"] for r in server.requests
                   if r.path == "/v1/chat/completions" and r.json]
    m = manifest(out, "faults")
    assert m["reconciliation"]["ok"], m["reconciliation"]
    results = read_rows(out, "results")
    keys = [(r["case_id"], r["bot"]) for r in results]
    assert len(keys) == 1000 and len(set(keys)) == 1000  # every case × bot, no duplicates
    assert stats["max_attempts_per_request_id"] <= 6
    # one logical call per case; on a loaded machine an attempt can time out on
    # the client before the server has read it, so the server may see fewer ids
    # than the client made calls, never more
    assert len(stats["attempts_by_request_id"]) <= 1000
    assert sum(stats["by_fault"].values()) > 100  # the faults really happened
    answered = [r for r in results if r["error"] is None]
    failed = [r for r in results if r["error"] is not None]
    assert len(stats["attempts_by_request_id"]) >= len(answered)
    assert len(answered) >= 990  # 6 attempts at 20% faults: failures are rare
    assert all(r["verdict"] == "ERROR" for r in failed)
    assert all(r["answer"].startswith("Echo:") and r["latency_ms"] > 0 for r in answered)
    details = [json.loads(r["bot_details"]) for r in answered]
    assert any(d["attempts"] > 1 for d in details)
    assert all(d["total_ms"] >= r["latency_ms"] for d, r in zip(details, answered))
    assert "Lumenfold" in prompts[0] and "refund window for order" in prompts[0]

    usage = read_rows(out, "usage")
    assert len(usage) == 1
    u = usage[0]
    assert (u["endpoint"], u["model"], u["calls"]) == ("llm", "gpt-test", 1000)
    # the client counts every retry; the server sees those that reached it
    assert u["retries"] >= sum(stats["attempts_by_request_id"].values()) - 1000
    assert u["retries"] >= sum(d["attempts"] - 1 for d in details)
    assert u["retries"] <= 5 * 1000  # at most 6 attempts per call
    assert u["failures"] == len(failed) and u["prompt_tokens"] > 0
    assert u["cost"] == pytest.approx((u["prompt_tokens"] * 0.15
                                       + u["completion_tokens"] * 0.6) / 1e6)
    assert 0 < u["latency_p50_ms"] <= u["latency_p95_ms"]
    errors = read_rows(out, "errors")
    assert len(errors) == len(failed)
    assert KEY not in all_output_text(out)
    err = capfd.readouterr().err.splitlines()
    assert "evalbeam: endpoint llm: at most 500 requests/s, 32 at a time, no tokens/min limit" in err
    progress = [line for line in err if re.match(r"evalbeam: [0-9,]+/1,000 cases", line)]
    assert progress and "calls: llm " in progress[-1] and "retries" in progress[-1]
    done = [int(re.match(r"evalbeam: ([0-9,]+)/", line).group(1).replace(",", ""))
            for line in progress]
    assert done == sorted(done) and done[-1] > 0  # cases done of the total, never backwards


@pytest.mark.parametrize("status", [400, 404])
def test_400_and_404_are_not_retried(tmp_path, key_env, status):
    with FakeOpenAI(ServerConfig(status_override=status), api_key=KEY) as server:
        cfg = _config(tmp_path, server, FULL_CONTEXT)
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path, 20), "--output", out, "--config", cfg,
                       "--run-id", "s") == 6  # no bot answered
        stats = server.stats()
    assert stats["total"] == 20 and stats["max_attempts_per_request_id"] == 1
    results = read_rows(out, "results")
    assert all(r["verdict"] == "ERROR" and r["error"].startswith(f"HTTP {status}")
               for r in results)


def test_a_429_with_openai_reset_headers_is_retried_after_the_reset(tmp_path, key_env):
    """A 429 with OpenAI's x-ratelimit-reset-requests and no Retry-After was
    retried after the backoff's few ms: each retry spent a request on another
    429. The same call's next attempt now waits the reset (1 s); usage/ counts
    what the server received."""
    server_cfg = ServerConfig(rate_limit_rps=2, retry_after_s=None, ratelimit_reset_s=1.0)
    with FakeOpenAI(server_cfg, api_key=KEY) as server:
        cfg = _config(tmp_path, server, FULL_CONTEXT, max_attempts=8)
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path, 6), "--output", out, "--config", cfg,
                       "--run-id", "reset") == 0
        stats, requests = server.stats(), list(server.requests)
    assert stats["by_status"].get("429"), "the server must have rate-limited some requests"
    by_call: dict[str, list] = {}
    for r in sorted(requests, key=lambda r: r.ts):
        by_call.setdefault(r.request_id, []).append(r)
    gaps = [b.ts - a.ts for attempts in by_call.values()
            for a, b in zip(attempts, attempts[1:]) if a.status == 429]
    assert gaps and min(gaps) >= 0.9, sorted(gaps)[:5]
    assert all(r["error"] is None for r in read_rows(out, "results"))
    u = read_rows(out, "usage")[0]
    assert (u["calls"], u["calls"] + u["retries"]) == (6, stats["total"])


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_stops_the_endpoints_calls_after_the_first_replies(tmp_path, key_env,
                                                                         status, caplog):
    """A wrong key cost every row a request (60 rows: 60 401s). The first 401 (the
    fifth 403 with nothing accepted: FORBIDDEN_BEFORE_ACCEPTED) stops the
    endpoint: those and the calls already on the wire (max_concurrency) are the
    only requests; every other row fails unsent with one reason, the run says so
    once, and usage/ and the journal count what the server received."""
    with FakeOpenAI(ServerConfig(status_override=status, echo_auth_in_errors=True),
                    api_key=KEY) as server:
        cfg = _config(tmp_path, server, FULL_CONTEXT, max_concurrency=4)
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path, 60), "--output", out, "--config", cfg,
                       "--run-id", "key") == 6  # no bot answered
        stats = server.stats()
    needed = 1 if status == 401 else FORBIDDEN_BEFORE_ACCEPTED
    assert needed <= stats["total"] <= needed + 3 and stats["max_attempts_per_request_id"] == 1
    results = read_rows(out, "results")
    reasons = Counter(r["error"].split(" (")[0] for r in results)
    assert all(r["verdict"] == "ERROR" for r in results) and len(results) == 60
    assert reasons == {f"HTTP {status}: Injected status {status}.": stats["total"],
                       "not sent: endpoint llm refused the credentials earlier in this run":
                       60 - stats["total"]}, reasons
    u = read_rows(out, "usage")[0]
    assert (u["calls"], u["retries"], u["failures"]) == (stats["total"], 0, 60)
    sent = manifest(out, "key")["requests"]["by_endpoint"]["llm"]
    assert (sent["sent_requests"], sent["usage_requests"]) == (stats["total"],) * 2
    said = [r.getMessage() for r in caplog.records if "refused the credentials" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("evalbeam: endpoint llm refused")
    assert KEY not in all_output_text(out) + "\n".join(said)


def test_a_403_for_one_prompt_fails_that_row_only(tmp_path, key_env, caplog):
    """A bot behind a gateway that blocks some prompts with 403 (a red-team
    suite, a WAF, a guardrail): the first 403 stopped the whole endpoint as a
    refused key, so every later row of the bot failed unsent with "refused the
    credentials". Once the endpoint has accepted a request, a 403 fails its own
    row only, with the server's reason; the other rows are answered."""
    cases = _cases(tmp_path, 40)
    table = pq.read_table(cases).to_pylist()
    for i, row in enumerate(table):
        if i % 4 == 3:
            row["question"] += " BLOCKME"
    cases = write_cases(str(tmp_path / "blocked.parquet"), table)
    with FakeOpenAI(ServerConfig(block_containing="BLOCKME"), api_key=KEY) as server:
        cfg = _config(tmp_path, server, FULL_CONTEXT, max_concurrency=4)
        out = str(tmp_path / "out")
        assert run_cli("--input", cases, "--output", out, "--config", cfg,
                       "--run-id", "blocked") == 0
        stats = server.stats()
    results = read_rows(out, "results")
    errors = Counter(r["error"] for r in results)
    assert errors == {None: 30, "HTTP 403: Request blocked by content policy.": 10}, errors
    blocked = {r["case_id"] for r in results if r["error"]}
    assert blocked == {f"r{i:04d}" for i in range(3, 40, 4)}
    assert stats["total"] == 40 and stats["by_status"] == {"200": 30, "403": 10}
    assert not [r for r in caplog.records if "refused the credentials" in r.getMessage()]


def test_403s_before_any_accepted_reply_stop_the_endpoint_and_after_one_never():
    """The rule the two tests above see end to end, on the breaker alone."""
    b = CircuitBreaker("llm", failures=3, cooldown_s=30)
    for _ in range(FORBIDDEN_BEFORE_ACCEPTED - 1):
        assert not b.on_credentials_refused(403, "HTTP 403: no")
    assert b.refusal() is None
    assert b.on_credentials_refused(403, "HTTP 403: no")
    assert b.refusal() == ("not sent: endpoint llm refused the credentials earlier in this run "
                           f"(HTTP 403: no; {FORBIDDEN_BEFORE_ACCEPTED} requests refused with "
                           "403, none accepted); fix its key and run again")
    b = CircuitBreaker("llm", failures=3, cooldown_s=30)
    b.on_accepted()
    assert not any(b.on_credentials_refused(403, "HTTP 403: blocked") for _ in range(100))
    assert b.refusal() is None
    assert b.on_credentials_refused(401, "HTTP 401: bad key") and b.refusal() is not None


def test_api_key_never_leaks(tmp_path, key_env):
    """A server that echoes the credential in its errors; the key is in no output or log."""
    bots = FULL_CONTEXT + ("  - {name: rag, type: http, endpoint: llm, "
                           "options: {path: /assistant, body: {query: '{question}'}, "
                           "answer_path: data.answer}}\n")
    # every request is refused (wrong key) before any fault could be drawn
    with FakeOpenAI(ServerConfig(echo_auth_in_errors=True), api_key=KEY + "-server") as server:
        cfg = _config(tmp_path, server, bots, max_attempts=2)
        out = str(tmp_path / "out")
        proc = run_cli_subprocess("--input", _cases(tmp_path, 30), "--output", out,
                                  "--config", cfg, "--run-id", "leak", timeout=300,
                                  env={"E2E_KEY": KEY, "EVALBEAM_PROGRESS_S": "0.2"})
        echoed = [r for r in server.requests if r.status == 401]
    assert proc.returncode == 6, proc.stderr[-2000:]  # no bot answered
    assert echoed, "the server must have rejected (and echoed) the wrong key"
    results = read_rows(out, "results")
    assert any(r["error"] and "<redacted>" in r["error"] for r in results)
    everything = all_output_text(out) + proc.stdout + proc.stderr
    assert KEY not in everything
    assert "E2E_KEY" in open(os.path.join(out, "runs", "leak", "manifest.json")).read()


def test_http_bot_contexts_feed_context_metrics(tmp_path, key_env):
    bots = ("  - {name: rag, type: http, endpoint: llm, options: {path: /assistant, "
            "body: {query: '{question}', meta: {id: '{case_id}'}}, answer_path: data.answer, "
            "contexts_path: data.sources, context_field: text}}\n")
    with FakeOpenAI(api_key=None) as server:
        server.set_assistant_handler(lambda body: {  # becomes the reply's "data"
            "answer": "Refunds are accepted within 45 days.",
            "sources": [{"text": "Refunds are accepted within 30 days."}]})
        cfg = _config(tmp_path, server, bots, base_url=server.base_url, api_key_env=None)
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path, 5), "--output", out, "--config", cfg,
                       "--run-id", "h") == 0
        bodies = [r.json for r in server.requests if r.path == "/assistant"]
    assert bodies[0]["query"].startswith("How long is the refund window")
    assert bodies[0]["meta"]["id"].startswith("r000")
    results = read_rows(out, "results")
    assert all(r["contexts"] == ["Refunds are accepted within 30 days."] for r in results)
    hall = [s for s in read_rows(out, "scores") if s["metric"] == "hallucination"]
    assert all(s["value"] is not None and s["value"] > 0 for s in hall)  # 45 is not 30
    assert all("45" in s["details"] for s in hall)


def test_chat_bot_system_prompt_and_reasoning_trace(tmp_path, key_env):
    bots = ("  - {name: plain, type: chat, endpoint: llm, model: small, "
            "system_prompt: 'You are terse.'}\n")
    with FakeOpenAI(api_key=KEY) as server:
        server.set_chat_handler(lambda req: {"content": "Thirty days.",
                                             "reasoning_content": "refund policy says 30"})
        cfg = _config(tmp_path, server, bots)
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path, 3), "--output", out, "--config", cfg,
                       "--run-id", "c") == 0
        msgs = [r.json["messages"] for r in server.requests if r.json]
    assert msgs[0][0] == {"role": "system", "content": "You are terse."}
    assert msgs[0][1]["content"].startswith("How long is the refund window")
    results = read_rows(out, "results")
    assert {r["answer"] for r in results} == {"Thirty days."}
    assert all(json.loads(r["bot_details"])["reasoning_content"] == "refund policy says 30"
               for r in results)


def test_a_chat_bots_system_prompt_gets_the_cases_contexts(tmp_path, key_env):
    """promptfoo's RAG prompts put each test's context in the prompt
    (`{{context}}`; the bundled promptfooconfig.yaml does), and its guide makes
    each prompt a chat bot: the `{contexts}` of a system prompt was sent as it
    is, so the bot answered without the passages. It is the case's contexts,
    one per paragraph (nothing for a case without one)."""
    bots = ("  - {name: rag, type: chat, endpoint: llm, model: small, "
            "system_prompt: \"Answer from the context.\\n\\n{contexts}\"}\n")
    rows = [{"case_id": "two", "question": "Refunds?", "contexts": ["Within 30 days.", "Unused."]},
            {"case_id": "none", "question": "Hours?"}]
    with FakeOpenAI(api_key=KEY) as server:
        cfg = _config(tmp_path, server, bots)
        out = str(tmp_path / "out")
        assert run_cli("--input", write_cases(str(tmp_path / "c.parquet"), rows), "--output",
                       out, "--config", cfg, "--run-id", "c") == 0
        systems = {r.json["messages"][1]["content"]: r.json["messages"][0]["content"]
                   for r in server.requests if r.json}
    assert systems == {"Refunds?": "Answer from the context.\n\nWithin 30 days.\n\nUnused.",
                       "Hours?": "Answer from the context.\n\n"}


def test_remote_config_errors_before_anything_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("E2E_KEY", raising=False)
    with FakeOpenAI() as server:
        cfg = _config(tmp_path, server, FULL_CONTEXT)
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path, 2), "--output", out, "--config", cfg) == 2
        assert server.stats()["total"] == 0
    err = capsys.readouterr().err
    assert "E2E_KEY" in err and "is not set" in err and not os.path.exists(out)


@pytest.mark.slow
def test_remote_bot_in_multi_processing_mode(tmp_path):
    with FakeOpenAI(ServerConfig(fault_rate=0.1, faults=("500", "drop"),
                                 latency_s=0.01), api_key=KEY) as server:
        cfg = _config(tmp_path, server, FULL_CONTEXT + "  - {name: recorded, type: precomputed}\n",
                      requests_per_second=100)  # 50/s per worker: the run takes seconds
        out = str(tmp_path / "out")
        proc = run_cli_subprocess("--input", _cases(tmp_path, 300), "--output", out,
                                  "--config", cfg, "--run-id", "mp", workers=2,
                                  env={"E2E_KEY": KEY, "EVALBEAM_PROGRESS_S": "0.3"})
        stats = server.stats()
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the launching process counts nothing itself: its progress lines sum the
    # objects the two worker processes write
    assert ("evalbeam: endpoint llm: at most 100 requests/s, 32 at a time, no tokens/min limit; "
            "each of 2 worker processes keeps to 0.5 of that (50 requests/s)") in proc.stderr
    progress = re.findall(r"^evalbeam: ([0-9,]+)/300 cases .*calls: llm ([0-9,]+)",
                          proc.stderr, re.M)
    assert progress and max(int(d) for d, _ in progress) > 0, proc.stderr[-3000:]
    m = manifest(out, "mp")
    assert m["reconciliation"]["ok"] and m["counts"]["results_rows"] == 600
    assert stats["max_attempts_per_request_id"] <= 6
    assert Counter(r["bot"] for r in read_rows(out, "results")) == {"assistant": 300,
                                                                   "recorded": 300}
    assert read_rows(out, "usage")[0]["calls"] == 300


PLAIN_BOT = "  - {name: plain, type: chat, endpoint: llm, model: small}\n"


def _plain_run(tmp_path, run_id: str, n: int, server_config: ServerConfig | None = None,
               **endpoint) -> str:
    """One chat bot on the fake server over n cases; the output folder."""
    with FakeOpenAI(server_config or ServerConfig(), api_key=KEY) as server:
        cfg = _config(tmp_path, server, PLAIN_BOT, **endpoint)
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path, n), "--output", out, "--config", cfg,
                       "--run-id", run_id) == 0
    return out


def _reports(out: str, run_id: str) -> dict[str, str]:
    """The run's report.md and report.html, by name."""
    texts = {}
    for name in ("report.md", "report.html"):
        with open(os.path.join(out, "runs", run_id, name), encoding="utf-8") as fh:
            texts[name] = fh.read()
    return texts


def test_replies_without_token_counts_are_not_reported_as_free(tmp_path, key_env):
    """A server that sends no `usage` (vLLM without it, some proxies): usage/
    keeps its columns (0 tokens, cost 0 for those calls), and the manifest and
    both reports say how many calls reported no token counts, what they would
    cost by the prompt's length, and that the costs shown are lower bounds."""
    out = _plain_run(tmp_path, "u", 4, ServerConfig(omit_usage=True))
    usage = read_rows(out, "usage")
    assert sum(r["calls"] for r in usage) == 4
    assert sum(r["prompt_tokens"] + r["completion_tokens"] for r in usage) == 0
    assert "unreported_calls" not in usage[0]  # usage/'s columns are unchanged
    m = manifest(out, "u")
    unreported = m["usage"]["unreported_tokens"]
    assert list(unreported) == ["llm"] and unreported["llm"]["calls"] == 4
    assert unreported["llm"]["estimated_prompt_tokens"] > 0
    assert unreported["llm"]["estimated_cost"] > 0
    for text in _reports(out, "u").values():
        assert "4 calls (endpoint llm) reported no token counts: their cost is unknown" in text
        assert "lower bounds" in text


def test_replies_with_token_counts_say_nothing_of_unreported_tokens(tmp_path, key_env):
    out = _plain_run(tmp_path, "u", 2)
    assert "unreported_tokens" not in manifest(out, "u")["usage"]
    assert "reported no token counts" not in _reports(out, "u")["report.md"]


def test_a_token_ceiling_counts_the_estimate_of_replies_without_token_counts(tmp_path,
                                                                             key_env):
    """The ledger counts a reply without token counts at its prompt estimate
    (transforms/remote/budget.py: actual_use); the manifest's spend_caps said
    `used: 0` for such a run, a cap could be reached with nothing used."""
    out = _plain_run(tmp_path, "u", 4, ServerConfig(omit_usage=True),
                     max_tokens_per_run=10_000_000)
    m = manifest(out, "u")
    estimated = m["usage"]["unreported_tokens"]["llm"]["estimated_prompt_tokens"]
    assert estimated > 0
    assert m["spend_caps"]["endpoints.llm.max_tokens_per_run"]["used"] == estimated


def test_a_total_over_priced_endpoints_only_says_so(tmp_path, key_env):
    """One endpoint priced, another not: the reports' total cost added the
    priced one only and did not say so ("cost 0.0004" read as the run's cost).
    usage/ keeps cost null on the unpriced endpoint's rows; the manifest's
    usage.unpriced names it with its calls, and both reports say the total
    covers the priced endpoints only."""
    bots = PLAIN_BOT + "  - {name: other, type: chat, endpoint: free, model: small}\n"
    with FakeOpenAI(api_key=KEY) as server:
        cfg = _config(tmp_path, server, bots)
        with open(cfg, encoding="utf-8") as fh:
            text = fh.read()
        free = json.dumps({"base_url": server.openai_base_url, "api_key_env": "E2E_KEY"})
        with open(cfg, "w", encoding="utf-8") as fh:
            fh.write(text.replace("\nbots:", f"\n  free: {free}\nbots:"))
        out = str(tmp_path / "out")
        assert run_cli("--input", _cases(tmp_path, 3), "--output", out, "--config", cfg,
                       "--run-id", "p") == 0
    usage = read_rows(out, "usage")
    assert {r["endpoint"]: r["cost"] is None for r in usage} == {"llm": False, "free": True}
    m = manifest(out, "p")
    assert m["usage"]["unpriced"] == {"free": {"calls": 3}}
    assert m["usage"]["total"]["cost"] > 0
    for text in _reports(out, "p").values():
        assert "covers the priced endpoints only" in text
        assert "free (3 calls)" in text


def test_a_run_with_every_endpoint_priced_says_nothing_of_unpriced_ones(tmp_path, key_env):
    out = _plain_run(tmp_path, "p", 2)
    assert "unpriced" not in manifest(out, "p")["usage"]
    assert "priced endpoints only" not in _reports(out, "p")["report.md"]


def test_a_request_over_a_bots_max_prompt_tokens_is_not_sent(tmp_path, key_env):
    """A case whose conversation is a pasted log of megabytes was sent to the
    bot's paid API as it was: bots had no size guard (the judge has
    judge.max_prompt_tokens). With bots[].max_prompt_tokens such a case is an
    ERROR row naming the estimate and the limit, no request is made (the fake
    server sees only the others), usage/ counts a failure without a call, and
    the counts reconcile; an http bot's body is measured the same way."""
    huge = "ERROR 500 at /checkout\n" * 20_000  # ~120,000 tokens
    rows = [{"case_id": "small", "question": "Refunds?", "messages": None},
            {"case_id": "log", "question": "Why does checkout fail?",
             "messages": [{"role": "user", "content": huge},
                          {"role": "assistant", "content": "Let me look."}]},
            {"case_id": "small2", "question": "Hours?", "messages": None}]
    bots = ("  - {name: plain, type: chat, endpoint: llm, model: small, "
            "max_prompt_tokens: 8000}\n"
            "  - {name: rag, type: http, endpoint: app, max_prompt_tokens: 8000, options: "
            "{path: /assistant, body: {query: '{question}', history: '{messages}'}, "
            "answer_path: data.answer}}\n")
    with FakeOpenAI(api_key=None) as server:
        server.set_assistant_handler(lambda body: {"answer": "Within 30 days."})
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"endpoints:\n  llm: {{base_url: '{server.openai_base_url}'}}\n"
                       f"  app: {{base_url: '{server.base_url}'}}\nbots:\n{bots}")
        out = str(tmp_path / "out")
        assert run_cli("--input", write_cases(str(tmp_path / "c.parquet"), rows), "--output",
                       out, "--config", str(cfg), "--metrics", "answer_length", "--run-id",
                       "g") == 0
        sent = [r for r in server.requests if r.json]
    assert len(sent) == 4 and not any("ERROR 500" in json.dumps(r.json) for r in sent)
    errors = {(e["bot"], e["case_id"]): e["message"] for e in read_rows(out, "errors")}
    assert set(errors) == {("plain", "log"), ("rag", "log")}
    assert re.fullmatch(r"request ~\d+ tokens over bot plain's limit 8000 "
                        r"\(bots\.plain\.max_prompt_tokens\): not sent", errors["plain", "log"])
    assert "over bot rag's limit 8000" in errors["rag", "log"]
    usage = {u["purpose"]: u for u in read_rows(out, "usage") if u["purpose"].startswith("bot:")}
    assert usage["bot:plain"]["calls"] == 2 and usage["bot:plain"]["failures"] == 1
    m = manifest(out, "g")
    assert m["reconciliation"]["ok"] and m["counts"]["bot_errors"] == 2


def test_bots_max_prompt_tokens_is_checked_in_the_config(tmp_path):
    from pipeline.config import ConfigError, load_config
    endpoint = "endpoints: {llm: {base_url: 'http://127.0.0.1:9/v1'}}\n"
    for bot, said in (("{name: p, type: chat, endpoint: llm, model: m, max_prompt_tokens: 0}",
                       "bots[0].max_prompt_tokens must be an integer >= 1, got 0"),
                      ("{name: p, type: chat, endpoint: llm, model: m, max_prompt_tokens: '9k'}",
                       "bots[0].max_prompt_tokens must be an integer >= 1"),
                      ("{name: r, type: precomputed, max_prompt_tokens: 100}",
                       "bots[0].max_prompt_tokens applies to the bots that send a request")):
        path = tmp_path / "c.yaml"
        path.write_text(f"{endpoint}bots:\n  - {bot}\n")
        with pytest.raises(ConfigError, match=re.escape(said)):
            load_config(str(path))
