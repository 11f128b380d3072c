"""Tests for tests/fake_server.py (the OpenAI-compatible fake server)."""
from __future__ import annotations

import email.utils
import json
import math
import select
import subprocess
import sys
import threading
import time

import httpx
import pytest

from tests.conftest import ROOT
from tests.fake_server import FakeOpenAI, ServerConfig, embed_text

CHAT = "/v1/chat/completions"
AZURE_CHAT = "/openai/deployments/my-gpt/chat/completions"


def chat_body(text: str = "What is the refund window?", **extra) -> dict:
    return {"model": "gpt-test", "messages": [{"role": "system", "content": "Be brief."},
                                              {"role": "user", "content": text}], **extra}


@pytest.fixture
def server():
    with FakeOpenAI(ServerConfig()) as s:
        yield s


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server.base_url, timeout=5) as c:
        yield c


# ----------------------------------------------------------------------------- shapes

def test_listens_on_loopback_only(server):
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server._httpd.server_address[0] == "127.0.0.1"
    assert server.openai_base_url == server.base_url + "/v1"


def test_chat_completion_shape(client):
    r = client.post(CHAT, json=chat_body("hello there world"))
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["object"] == "chat.completion"
    assert body["model"] == "gpt-test"
    assert isinstance(body["id"], str) and isinstance(body["created"], int)
    [choice] = body["choices"]
    assert choice == {"index": 0, "finish_reason": "stop",
                      "message": {"role": "assistant", "content": "Echo: hello there world"}}
    usage = body["usage"]
    assert all(isinstance(v, int) for v in usage.values())
    assert usage["prompt_tokens"] == math.ceil(2 * 1.3) + math.ceil(3 * 1.3)
    assert usage["completion_tokens"] == math.ceil(4 * 1.3)
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    # deterministic
    again = client.post(CHAT, json=chat_body("hello there world")).json()
    assert again["choices"] == body["choices"] and again["usage"] == usage


def test_chat_n_choices_long_prompt_and_content_parts(client):
    body = client.post(CHAT, json=chat_body("x" * 500, n=3)).json()
    assert [c["index"] for c in body["choices"]] == [0, 1, 2]
    assert body["choices"][2]["message"]["content"] == "Echo: " + "x" * 200
    parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": "part one"}]}]}
    body = client.post(CHAT, json=parts).json()
    assert body["choices"][0]["message"]["content"] == "Echo: part one"
    assert body["model"] == "fake-model"


def test_chat_bad_requests(client):
    r = client.post(CHAT, content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert client.post(CHAT, json={"model": "m"}).status_code == 400
    assert client.get(CHAT).status_code == 405
    r = client.post("/v1/nope", json={})
    assert r.status_code == 404 and "error" in r.json()


def test_embeddings_shape_and_determinism(client, server):
    r = client.post("/v1/embeddings", json={"model": "emb", "input": ["alpha", "beta", "alpha"]})
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "list" and body["model"] == "emb"
    assert [d["index"] for d in body["data"]] == [0, 1, 2]
    vecs = [d["embedding"] for d in body["data"]]
    assert all(d["object"] == "embedding" for d in body["data"])
    assert all(len(v) == 16 for v in vecs)
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-9 for v in vecs)
    assert vecs[0] == vecs[2] != vecs[1]
    assert vecs[0] == embed_text("alpha", 16)
    assert body["usage"]["prompt_tokens"] == body["usage"]["total_tokens"] > 0
    single = client.post("/v1/embeddings", json={"input": "alpha"}).json()
    assert single["data"][0]["embedding"] == vecs[0]
    server.configure(embedding_dim=8)
    assert len(client.post("/v1/embeddings", json={"input": "a"}).json()["data"][0]["embedding"]) == 8
    dims = client.post("/v1/embeddings", json={"input": "a", "dimensions": 4}).json()
    assert len(dims["data"][0]["embedding"]) == 4
    assert client.post("/v1/embeddings", json={"input": []}).status_code == 400


def test_azure_routes_need_api_version(client):
    r = client.post(AZURE_CHAT, json=chat_body("hi"))
    assert r.status_code == 400
    assert "api-version" in r.json()["error"]["message"]
    r = client.post(AZURE_CHAT, params={"api-version": "2024-06-01"}, json=chat_body("hi"))
    assert r.status_code == 200
    assert r.json()["model"] == "my-gpt"
    assert r.json()["choices"][0]["message"]["content"] == "Echo: hi"
    r = client.post("/openai/deployments/emb/embeddings", params={"api-version": "2024-06-01"},
                    json={"input": "hi"})
    assert r.status_code == 200 and r.json()["model"] == "emb"
    assert client.post("/openai/deployments/emb/embeddings", json={"input": "hi"}).status_code == 400


def test_assistant_and_models(client):
    for key in ("query", "question", "message"):
        r = client.post("/assistant", json={key: "Do you ship to Canada?", "session": 1})
        assert r.status_code == 200
        body = r.json()
        assert "Do you ship to Canada?" in body["data"]["answer"]
        assert body["data"]["sources"] == [{"text": "passage 1"}, {"text": "passage 2"}]
        assert isinstance(body["meta"]["latency_ms"], (int, float))
    models = client.get("/v1/models").json()
    assert models["object"] == "list" and models["data"][0]["object"] == "model"


# ----------------------------------------------------------------------------- auth

def test_auth():
    with FakeOpenAI(api_key="sk-test") as s, httpx.Client(base_url=s.base_url, timeout=5) as c:
        r = c.post(CHAT, json=chat_body())
        assert r.status_code == 401
        assert r.json()["error"]["code"] == "invalid_api_key"
        assert c.post(CHAT, json=chat_body(), headers={"Authorization": "Bearer nope"}).status_code == 401
        assert c.post(CHAT, json=chat_body(),
                      headers={"Authorization": "Bearer sk-test"}).status_code == 200
        # api-key header is for the Azure routes only
        assert c.post(CHAT, json=chat_body(), headers={"api-key": "sk-test"}).status_code == 401
        az = {"params": {"api-version": "2024-06-01"}, "json": chat_body()}
        assert c.post(AZURE_CHAT, headers={"api-key": "sk-test"}, **az).status_code == 200
        assert c.post(AZURE_CHAT, headers={"api-key": "wrong"}, **az).status_code == 401
        assert c.get("/_admin/stats").status_code == 200  # admin needs no key
        st = s.stats()
        assert st["by_status"] == {"401": 4, "200": 2}
        # leak tests: the received credentials can be echoed into error bodies
        assert "sk-leaky" not in c.post(CHAT, json=chat_body(),
                                        headers={"Authorization": "Bearer sk-leaky"}).text
        s.configure(echo_auth_in_errors=True)
        r = c.post(CHAT, json=chat_body(), headers={"Authorization": "Bearer sk-leaky"})
        assert r.status_code == 401 and "sk-leaky" in r.json()["error"]["message"]
        s.configure(api_key=None)
        assert c.post(CHAT, json=chat_body()).status_code == 200


# ----------------------------------------------------------------------------- scripted replies

def test_chat_handler(server, client):
    seen = []

    def handler(req):
        seen.append(req)
        return "scripted: " + req["messages"][-1]["content"]

    server.set_chat_handler(handler)
    body = client.post(CHAT, json=chat_body("ping")).json()
    assert body["choices"][0]["message"]["content"] == "scripted: ping"
    assert seen[0]["model"] == "gpt-test"

    server.set_chat_handler(lambda req: {"content": "42", "reasoning_content": "because",
                                         "finish_reason": "length"})
    choice = client.post(CHAT, json=chat_body()).json()["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "42", "reasoning_content": "because"}
    assert choice["finish_reason"] == "length"

    full = {"id": "x", "object": "chat.completion", "choices": [], "usage": {}}
    server.set_chat_handler(lambda req: full)
    assert client.post(CHAT, json=chat_body()).json() == full

    server.set_chat_handler(lambda req: 1 / 0)
    r = client.post(CHAT, json=chat_body())
    assert r.status_code == 500 and "ZeroDivisionError" in r.json()["error"]["message"]

    server.set_chat_handler(None)
    assert client.post(CHAT, json=chat_body("x")).json()["choices"][0]["message"]["content"] == "Echo: x"


# ----------------------------------------------------------------------------- faults

@pytest.mark.parametrize("kind", ["500", "503", "timeout", "drop", "malformed", "truncated"])
def test_fault_kinds(kind):
    cfg = ServerConfig(fault_rate=1.0, faults=(kind,), timeout_sleep_s=1.0)
    with FakeOpenAI(cfg) as s, httpx.Client(base_url=s.base_url, timeout=0.3) as c:
        def call():
            return c.post(CHAT, json=chat_body())

        if kind in ("500", "503"):
            r = call()
            assert r.status_code == int(kind)
            assert "message" in r.json()["error"]
            assert (r.headers.get("retry-after") == "1") == (kind == "503")
        elif kind == "timeout":
            with pytest.raises(httpx.ReadTimeout):
                call()
        elif kind in ("drop", "truncated"):
            with pytest.raises(httpx.RemoteProtocolError):
                call()
        elif kind == "malformed":
            r = call()
            assert r.status_code == 200 and r.headers["content-type"] == "application/json"
            with pytest.raises(json.JSONDecodeError):
                r.json()
        # admin routes are never faulted; the fault is recorded and counted
        assert c.get("/_admin/stats").json()["by_fault"] == {kind: 1}
        [rec] = s.requests
        assert rec.fault == kind
        if kind != "timeout":
            assert s.stats()["by_status"] == {kind: 1}
            assert rec.status == (None if kind == "drop" else int(kind) if kind[0] == "5" else 200)
        else:
            assert rec.status is None and s.stats()["in_flight"] == 1  # still sleeping
        # faults stop when the knob is turned off
        s.configure(fault_rate=0.0)
        with httpx.Client(base_url=s.base_url, timeout=2) as c2:
            assert c2.post(CHAT, json=chat_body()).status_code == 200


def test_fault_rate_mixture_is_seeded():
    def run():
        cfg = ServerConfig(fault_rate=0.5, faults=("500", "503"), seed=7)
        with FakeOpenAI(cfg) as s, httpx.Client(base_url=s.base_url, timeout=5) as c:
            return [c.post(CHAT, json=chat_body()).status_code for _ in range(20)]

    first = run()
    assert first == run()
    assert 200 in first and ({500, 503} & set(first))


# ----------------------------------------------------------------------------- rate limit

def test_rate_limit_429_retry_after_seconds():
    cfg = ServerConfig(rate_limit_rps=3)
    with FakeOpenAI(cfg) as s, httpx.Client(base_url=s.base_url, timeout=5) as c:
        rs = [c.post(CHAT, json=chat_body()) for _ in range(6)]
        codes = [r.status_code for r in rs]
        assert 3 <= codes.count(200) <= 4 and codes[:3] == [200, 200, 200]
        r = rs[-1]
        assert r.status_code == 429
        assert r.headers["retry-after"] == "1"
        assert r.headers["x-ratelimit-remaining-requests"] == "0"
        assert r.json()["error"]["code"] == "rate_limit_exceeded"
        assert rs[0].headers["x-ratelimit-remaining-requests"] == "2"
        st = s.stats()
        assert st["rate_limited"] == codes.count(429) == st["by_status"]["429"]
        # no Retry-After when configured so; fractional seconds kept
        s.configure(retry_after_s=None)
        assert "retry-after" not in c.post(CHAT, json=chat_body()).headers
        s.configure(retry_after_s=0.5)
        assert c.post(CHAT, json=chat_body()).headers["retry-after"] == "0.5"
        # raising the limit at run time refills the bucket
        s.configure(rate_limit_rps=None)
        assert c.post(CHAT, json=chat_body()).status_code == 200


def test_rate_limit_retry_after_http_date():
    cfg = ServerConfig(rate_limit_rps=0.5, retry_after_s=2, retry_after_http_date=True)
    with FakeOpenAI(cfg) as s, httpx.Client(base_url=s.base_url, timeout=5) as c:
        assert c.post(CHAT, json=chat_body()).status_code == 200
        r = c.post(CHAT, json=chat_body())
        assert r.status_code == 429
        when = email.utils.parsedate_to_datetime(r.headers["retry-after"]).timestamp()
        assert time.time() + 1 <= when <= time.time() + 4


# ----------------------------------------------------------------------------- counting

def test_attempts_by_request_id_and_records(server, client):
    for rid, times in (("call-a", 3), ("call-b", 1)):
        for _ in range(times):
            client.post(CHAT, json=chat_body(rid), headers={"X-Client-Request-Id": rid})
    client.post("/v1/embeddings", json={"input": "no id"})
    st = server.stats()
    assert st["attempts_by_request_id"] == {"call-a": 3, "call-b": 1}
    assert st["max_attempts_per_request_id"] == 3
    assert st["total"] == 5
    assert st["by_path"] == {CHAT: 4, "/v1/embeddings": 1}
    assert st["by_status"] == {"200": 5}
    assert st["first_ts"] <= st["last_ts"]
    assert st["connections"] == 1  # HTTP/1.1 keep-alive: one connection for all requests
    rec = server.requests[0]
    assert (rec.path, rec.method, rec.status, rec.fault) == (CHAT, "POST", 200, None)
    assert rec.request_id == "call-a" and rec.headers["x-client-request-id"] == "call-a"
    assert rec.json["messages"][-1]["content"] == "call-a"
    assert server.requests[-1].request_id is None
    # admin requests are not counted
    assert client.get("/_admin/stats").json()["total"] == 5
    assert len(client.get("/_admin/requests", params={"limit": 2}).json()) == 2
    server.reset_stats()
    st = server.stats()
    assert st["total"] == 0 and st["attempts_by_request_id"] == {} and server.requests == []


def test_max_in_flight_and_latency(server):
    server.configure(latency_s=0.2)
    with httpx.Client(base_url=server.base_url, timeout=5,
                      limits=httpx.Limits(max_connections=8)) as c:
        threads = [threading.Thread(target=c.post, args=(CHAT,), kwargs={"json": chat_body()})
                   for _ in range(8)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
    # the server counts a request out after its response is written, so a
    # loaded machine can show the client its answer first
    deadline = time.monotonic() + 5
    while (st := server.stats())["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert st["total"] == 8 and st["in_flight"] == 0
    assert st["max_in_flight"] >= 4
    assert elapsed >= 0.2  # the latency knob (concurrency: max_in_flight above)


def test_configure_at_run_time(server, client):
    t0 = time.perf_counter()
    client.post(CHAT, json=chat_body())
    fast = time.perf_counter() - t0
    server.configure(latency_s=0.25)
    t0 = time.perf_counter()
    assert client.post(CHAT, json=chat_body()).status_code == 200
    assert time.perf_counter() - t0 >= 0.25
    server.configure(latency_s=0.0, status_override=503)
    r = client.post(CHAT, json=chat_body())
    assert r.status_code == 503 and r.headers["retry-after"] == "1" and "error" in r.json()
    server.configure(status_override=400)
    assert client.post("/v1/embeddings", json={"input": "x"}).json()["error"]["type"] == \
        "invalid_request_error"
    server.configure(status_override=None)
    assert client.post(CHAT, json=chat_body()).status_code == 200
    with pytest.raises(ValueError):
        server.configure(no_such_knob=1)
    with pytest.raises(ValueError):
        server.configure(faults=("explode",))
    # admin route does the same as configure()
    r = client.post("/_admin/config", json={"latency_s": 0.01, "faults": ["500"]})
    assert r.status_code == 200 and r.json()["config"]["faults"] == ["500"]
    assert server.config.latency_s == 0.01 and server.config.faults == ("500",)
    assert client.post("/_admin/config", json={"bogus": 1}).status_code == 400


# ----------------------------------------------------------------------------- subprocess mode

def test_subprocess_mode_ready_and_admin():
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_server", "--port", "0", "--latency", "0.01",
         "--rate-limit", "100", "--fault-rate", "0", "--api-key", "sk-sub"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 15)
        assert ready, "server did not print READY"
        line = proc.stdout.readline().strip()
        assert line.startswith("READY http://127.0.0.1:")
        url = line.split(" ", 1)[1]
        with httpx.Client(base_url=url, timeout=5) as c:
            auth = {"Authorization": "Bearer sk-sub", "X-Client-Request-Id": "r1"}
            assert c.post(CHAT, json=chat_body(), headers=auth).status_code == 200
            assert c.post(CHAT, json=chat_body()).status_code == 401
            st = c.get("/_admin/stats").json()
            assert st["total"] == 2 and st["by_status"] == {"200": 1, "401": 1}
            assert st["attempts_by_request_id"] == {"r1": 1}
            assert c.post("/_admin/config", json={"status_override": 503}).status_code == 200
            assert c.post(CHAT, json=chat_body(), headers=auth).status_code == 503
            assert c.post("/_admin/reset").json() == {"ok": True}
            assert c.get("/_admin/stats").json()["total"] == 0
    finally:
        proc.terminate()
        rc = proc.wait(timeout=10)
        stderr = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert rc == 0, stderr
    assert stderr == ""  # per-request log lines are silenced
