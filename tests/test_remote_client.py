"""EndpointClient and the OpenAI adapters against httpx.MockTransport."""
from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from pipeline.config import EndpointConfig
from transforms.remote.client import REQUEST_ID_HEADER, EndpointClient, MissingSecret
from transforms.remote.openai_api import chat, embeddings

KEY = "sk-unit-test-SECRET-0123456789"


def _cfg(**kw) -> EndpointConfig:
    base = dict(base_url="http://llm.test/v1", requests_per_second=1000, max_attempts=4,
                backoff_initial_s=0.01, backoff_max_s=0.05, timeout_s=2)
    base.update(kw)
    return EndpointConfig(**base)


def _ok(content="hi", prompt=7, completion=3):
    return httpx.Response(200, json={"choices": [{"message": {"role": "assistant",
                                                               "content": content}}],
                                     "usage": {"prompt_tokens": prompt,
                                               "completion_tokens": completion}})


def _run(handler, coro_fn, **cfg):
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request, len(seen))

    async def main():
        client = EndpointClient("llm", _cfg(**cfg), transport=httpx.MockTransport(record))
        try:
            return await coro_fn(client)
        finally:
            await client.aclose()
    return asyncio.run(main()), seen


def _chat(client):
    return chat(client, "m", [{"role": "user", "content": "hello"}], purpose="bot:x")


def test_retries_5xx_then_succeeds_with_one_request_id():
    reply, seen = _run(lambda r, n: httpx.Response(503) if n < 3 else _ok(), _chat)
    assert reply.texts == ["hi"] and reply.record.ok
    assert reply.record.attempts == 3 and reply.record.status == 200
    assert len({r.headers[REQUEST_ID_HEADER] for r in seen}) == 1
    assert (reply.record.prompt_tokens, reply.record.completion_tokens) == (7, 3)
    body = json.loads(seen[0].content)
    assert body["temperature"] == 0 and body["model"] == "m"
    assert str(seen[0].url) == "http://llm.test/v1/chat/completions"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_4xx_are_not_retried(status):
    reply, seen = _run(lambda r, n: httpx.Response(status, json={"error": {"message": "no"}}),
                       _chat)
    assert len(seen) == 1 and not reply.record.ok
    assert reply.error == f"HTTP {status}: no"


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_not_followed_retried_or_taken_for_the_answer(status):
    """A 3xx was retried as 'HTTP 307 with a body that is not JSON (0 bytes)'
    (max_attempts requests), and a 3xx with a JSON body was taken as the
    answer. It is an error at once, naming where it points without the
    credentials in that address; the key never goes to the other host."""
    location = f"https://other.test/v1/chat/completions?key={KEY}"
    reply, seen = _run(lambda r, n: httpx.Response(status, headers={"location": location},
                                                   json=_ok().json()), _chat)
    assert len(seen) == 1 and not reply.record.ok and reply.texts == []
    assert [r.url.host for r in seen] == ["llm.test"]
    assert reply.error == (f"HTTP {status}: a redirect to "
                           "https://other.test/v1/chat/completions?key=<redacted>, not followed "
                           "(credentials go only to base_url: set it to the final address)")


def test_attempts_are_bounded_and_error_is_kept():
    reply, seen = _run(lambda r, n: httpx.Response(500, text="boom"), _chat, max_attempts=3)
    assert len(seen) == 3 and reply.record.attempts == 3
    assert reply.texts == [] and reply.error == "HTTP 500: boom"


def test_malformed_and_truncated_bodies_are_retried():
    def handler(request, n):
        if n == 1:
            return httpx.Response(200, content=b'{"choices": [')
        if n == 2:
            raise httpx.RemoteProtocolError("peer closed connection", request=request)
        if n == 3:
            raise httpx.ReadTimeout("slow", request=request)
        return _ok("fine")
    reply, seen = _run(handler, _chat)
    assert reply.texts == ["fine"] and reply.record.attempts == 4


def test_a_json_null_body_is_an_error_not_an_empty_success():
    """A 200 whose body is `null` was a successful call with no data: the bot's
    row had no answer, no error and no errors/ row (found with a proxy-like
    server answering `null`). It is a body that cannot be the answer: retried
    like a malformed one, then the row's error."""
    reply, seen = _run(lambda r, n: httpx.Response(200, content=b"null"), _chat, max_attempts=2)
    assert len(seen) == 2 and not reply.record.ok and reply.texts == []
    assert reply.error == "HTTP 200 with a JSON null body"
    (vectors, rec), _ = _run(lambda r, n: httpx.Response(200, content=b"null"),
                             lambda c: embeddings(c, "e", ["a"]), max_attempts=1)
    assert vectors is None and not rec.ok and rec.error == "HTTP 200 with a JSON null body"


def test_retry_after_is_honoured():
    def handler(request, n):
        return httpx.Response(429, headers={"Retry-After": "0.3"}) if n == 1 else _ok()
    start = time.perf_counter()
    reply, seen = _run(handler, _chat)
    assert time.perf_counter() - start >= 0.3
    assert reply.record.rate_limited == 1 and reply.record.ok


def test_api_key_from_env_never_in_errors(monkeypatch):
    monkeypatch.setenv("UNIT_KEY", KEY)
    reply, seen = _run(
        lambda r, n: httpx.Response(401, json={"error": {"message": "bad key " + r.headers[
            "authorization"]}}), _chat, api_key_env="UNIT_KEY")
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in reply.error and "<redacted>" in reply.error


def test_missing_key_variable_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("NOPE_KEY", raising=False)
    with pytest.raises(MissingSecret, match="NOPE_KEY"):
        EndpointClient("llm", _cfg(api_key_env="NOPE_KEY"))


def test_azure_uses_deployment_path_api_key_header_and_version(monkeypatch):
    monkeypatch.setenv("AZ_KEY", KEY)
    reply, seen = _run(lambda r, n: _ok(), _chat, base_url="https://res.openai.azure.test",
                       api_key_env="AZ_KEY", api_version="2024-06-01")
    url = seen[0].url
    assert url.path == "/openai/deployments/m/chat/completions"
    assert url.params["api-version"] == "2024-06-01"
    assert seen[0].headers["api-key"] == KEY and "authorization" not in seen[0].headers


def test_header_secrets_come_from_env_and_are_scrubbed(monkeypatch):
    monkeypatch.setenv("ASSIST_TOKEN", "tok-SECRET-42")
    reply, seen = _run(lambda r, n: httpx.Response(400, text="echo " + r.headers["x-token"]),
                       _chat, headers={"X-Token": "${ASSIST_TOKEN}"})
    assert seen[0].headers["x-token"] == "tok-SECRET-42"
    assert "tok-SECRET-42" not in reply.error


def test_embeddings_in_order_and_shape_errors():
    def handler(request, n):
        texts = json.loads(request.content)["input"]
        data = [{"index": i, "embedding": [float(i), 1.0]} for i in range(len(texts))]
        return httpx.Response(200, json={"data": list(reversed(data)),
                                         "usage": {"prompt_tokens": 5}})
    (vectors, rec), _ = _run(handler, lambda c: embeddings(c, "e", ["a", "b", "c"]))
    assert vectors == [[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]] and rec.prompt_tokens == 5
    (vectors, rec), _ = _run(lambda r, n: httpx.Response(200, json={"data": []}),
                             lambda c: embeddings(c, "e", ["a"]))
    assert vectors is None and not rec.ok and "1 texts" in rec.error


@pytest.mark.parametrize("vectors, words", [
    ([[1.0, float("nan")], [1.0, 0.0]], "not a finite number"),
    ([[1.0, float("inf")], [1.0, 0.0]], "not a finite number"),
    ([[1.0, 0.0], [1.0, 0.0, 0.5]], "vectors of 2 and 3 dimensions"),
    ([[], []], "empty vector"),
])
def test_embeddings_that_are_not_vectors_of_numbers_are_an_error(vectors, words):
    """NaN in a vector (a server's overflow) passed, so answer_similarity was
    NaN (and the vector went into the call cache); vectors of different lengths
    broke later in numpy."""
    body = json.dumps({"data": [{"index": i, "embedding": v} for i, v in enumerate(vectors)]})
    (got, rec), _ = _run(lambda r, n: httpx.Response(200, content=body.encode()),
                         lambda c: embeddings(c, "e", ["a", "b"]))
    assert got is None and not rec.ok and words in rec.error, rec.error


def test_concurrency_is_bounded():
    in_flight, peak = 0, 0

    async def slow(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return _ok()

    async def main():
        client = EndpointClient("llm", _cfg(max_concurrency=3),
                                transport=httpx.MockTransport(slow))
        replies = await asyncio.gather(*(_chat(client) for _ in range(20)))
        await client.aclose()
        return replies
    replies = asyncio.run(main())
    assert all(r.texts == ["hi"] for r in replies) and peak == 3


@pytest.mark.parametrize("key", ["sk-Line0123456789\n", "sk-Ümlaut0123456789"])
def test_a_key_a_header_cannot_carry_is_a_clear_error_without_the_key(monkeypatch, key):
    """A key read from a file with a line break failed every call; one with a
    character outside ASCII crashed the whole run (UnicodeEncodeError, exit 1)."""
    monkeypatch.setenv("ODD_KEY", key)
    with pytest.raises(MissingSecret, match="ODD_KEY.*cannot carry") as err:
        EndpointClient("llm", _cfg(api_key_env="ODD_KEY"))
    assert "0123456789" not in str(err.value)


@pytest.mark.parametrize("usage, tokens", [
    ({"prompt_tokens": "n/a", "completion_tokens": 3}, (0, 3)),   # raised ValueError
    ({"prompt_tokens": float("inf")}, (0, 0)),                    # raised OverflowError
    ({"prompt_tokens": float("nan"), "completion_tokens": 2}, (0, 2)),
    ({"prompt_tokens": -5, "completion_tokens": 3.7}, (0, 4)),    # a negative cost
    ({"prompt_tokens": True, "completion_tokens": [1]}, (0, 0)),
    ({"prompt_tokens": None, "completion_tokens": None}, (0, 0)),
    ({"prompt_tokens": "12", "completion_tokens": 4}, (12, 4)),
    ({"input_tokens": 6, "output_tokens": 1}, (6, 1)),
    ("tokens: many", (0, 0)),
])
def test_a_usage_block_of_any_shape_never_breaks_the_call_or_the_cost(usage, tokens):
    """A 200 whose `usage` held a word or an infinity ('prompt_tokens': 'n/a',
    1e999) raised out of the client and failed the run; a negative count made a
    negative cost. Counts are whole numbers >= 0; what is not one counts 0."""
    body = json.dumps({"choices": [{"message": {"content": "ok"}}], "usage": usage})
    reply, _ = _run(lambda r, n: httpx.Response(200, content=body.encode()), _chat)
    assert reply.texts == ["ok"] and reply.record.ok
    assert (reply.record.prompt_tokens, reply.record.completion_tokens) == tokens


def test_an_event_stream_is_not_retried_and_an_html_page_is_named():
    """A 200 that streams (text/event-stream: `stream: true` reached the server,
    or a gateway that always streams) was retried max_attempts times, each one
    a paid completion, and said only 'a body that is not JSON'. It is now one
    attempt and says what it got; a proxy's HTML page (a 200 error page) is
    retried as before and its title is the reason."""
    sse = 'data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n'
    reply, seen = _run(lambda r, n: httpx.Response(
        200, content=sse.encode(), headers={"content-type": "text/event-stream"}), _chat)
    assert len(seen) == 1 and reply.record.attempts == 1
    assert "an event stream (text/event-stream), not one JSON body" in reply.error
    html = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    reply, seen = _run(lambda r, n: httpx.Response(
        200, content=html.encode(), headers={"content-type": "text/html"}), _chat)
    assert len(seen) == 4 and reply.record.attempts == 4  # max_attempts: may be transient
    assert "an HTML page, not JSON ('502 Bad Gateway'" in reply.error


@pytest.mark.parametrize("indices", [[0, 0], [1, 2], [0, "1"]])
def test_embeddings_whose_indices_are_not_one_per_text_are_an_error(indices):
    """Replies are put in order by their `index`: two items of index 0 for two
    texts passed the count check, and the second text silently got the first
    one's vector (a wrong similarity, no error)."""
    body = {"data": [{"index": i, "embedding": [float(n + 1), 1.0]}
                     for n, i in enumerate(indices)], "usage": {"prompt_tokens": 2}}
    (vectors, rec), _ = _run(lambda r, n: httpx.Response(200, json=body),
                             lambda c: embeddings(c, "e", ["a", "b"]))
    assert vectors is None and not rec.ok
    assert "indices" in rec.error and "not one per text" in rec.error, rec.error


def test_content_given_as_a_list_of_text_parts_is_read_as_its_text():
    """Some OpenAI-compatible servers (Mistral's, gateways in front of other
    APIs) send `content` as a list of parts [{"type": "text", "text": ...}].
    It was 'content is list, not text': every bot row an ERROR, every judge
    question failed (and, retried, paid for max_attempts times)."""
    parts = [{"type": "text", "text": "Thirty "}, {"type": "text", "text": "days."}]
    body = {"choices": [{"message": {"role": "assistant", "content": parts}}]}
    reply, seen = _run(lambda r, n: httpx.Response(200, json=body), _chat)
    assert reply.error is None and reply.texts == ["Thirty days."] and len(seen) == 1
    other = [{"type": "image_url", "image_url": {"url": "data:..."}}]
    body = {"choices": [{"message": {"role": "assistant", "content": other}}]}
    reply, _ = _run(lambda r, n: httpx.Response(200, json=body), _chat)
    assert "content of choice 0 is list, not text" in reply.error


def test_an_error_object_sent_with_200_is_a_retried_failure_that_says_the_message():
    """Gateways (LiteLLM proxies, some vLLM routers) wrap an upstream failure as
    HTTP 200 {"error": {...}}: it read as 'unexpected chat response shape
    (missing choices)' (or, for embeddings, "unexpected embeddings response:
    'data'"), hid the server's message, and was not retried like the 429 or
    5xx it stands for."""
    err = {"error": {"message": "upstream overloaded, try again", "type": "server_error"}}
    replies = [httpx.Response(200, json=err), _ok("fine")]
    reply, seen = _run(lambda r, n: replies[min(n, 2) - 1], _chat)
    assert reply.texts == ["fine"] and reply.record.attempts == 2
    reply, seen = _run(lambda r, n: httpx.Response(200, json=err), _chat)
    assert len(seen) == 4 and reply.error == (
        "HTTP 200 with an error body: upstream overloaded, try again")
    (vectors, rec), _ = _run(lambda r, n: httpx.Response(200, json={"error": "no model"}),
                             lambda c: embeddings(c, "e", ["a"]))
    assert vectors is None and rec.error == "HTTP 200 with an error body: no model"


def test_a_get_is_not_a_reply_without_token_counts():
    """A reply without `usage` is flagged (its cost is unknown), but a GET (TEI's
    /info: the classifier's labels) uses no tokens: it is not counted among the
    calls whose cost is unknown."""
    (got, posted), _ = _run(lambda req, n: httpx.Response(200, json={"label": "x"}), _both)
    assert got.record.unreported_tokens is None
    assert posted.record.unreported_tokens == 12.0


async def _both(client):
    got = await client.get_json("/info", model="m", purpose="classifier:grounding")
    posted = await client.post_json("/predict", {"inputs": "x"}, model="m",
                                    purpose="classifier:grounding", estimated_tokens=12.0)
    return got, posted
