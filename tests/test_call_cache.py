"""The call cache: content addressing, persistence, single flight, what is
never cached (bots, failures), and per-text caching of embeddings."""
from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from pipeline.config import EndpointConfig
from tests.fake_server import FakeOpenAI
from tests.pipeline_helpers import fake_runtime
from transforms.enrich.embeddings.endpoint import EmbeddingError, EndpointEmbedder
from transforms.remote.cache import CallCache, cache_key
from transforms.remote.client import EndpointClient
from transforms.remote.openai_api import chat
from transforms.remote.usage import CallLog

MSG = [{"role": "user", "content": "judge this"}]


def _cfg(**kw) -> EndpointConfig:
    base = dict(base_url="http://llm.test/v1", requests_per_second=1000, max_attempts=1,
                backoff_initial_s=0.01, backoff_max_s=0.02, timeout_s=2)
    base.update(kw)
    return EndpointConfig(**base)


def _ok(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    return httpx.Response(200, json={"choices": [{"message": {
        "role": "assistant", "content": f"t={body['temperature']}"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2}})


def _with_client(cache, handler, fn):
    seen = []

    def record(request):
        seen.append(request)
        return handler(request)

    async def main():
        client = EndpointClient("llm", _cfg(), transport=httpx.MockTransport(record), cache=cache)
        try:
            return await fn(client)
        finally:
            await client.aclose()
    return asyncio.run(main()), seen


def test_keys_depend_on_every_part_of_the_request():
    base = cache_key("http://a/v1", "/chat/completions", {}, "m", {"x": 1})
    assert base == cache_key("http://a/v1/", "/chat/completions", {}, "m", {"x": 1})
    variants = [cache_key("http://b/v1", "/chat/completions", {}, "m", {"x": 1}),
                cache_key("http://a/v1", "/embeddings", {}, "m", {"x": 1}),
                cache_key("http://a/v1", "/chat/completions", {"api-version": "1"}, "m", {"x": 1}),
                cache_key("http://a/v1", "/chat/completions", {}, "m2", {"x": 1}),
                cache_key("http://a/v1", "/chat/completions", {}, "m", {"x": 2}),
                cache_key("http://a/v1", "/chat/completions", {}, "m", {"x": 1}, "vote=1")]
    assert len({base, *variants}) == 7


def test_cached_calls_persist_and_are_counted_as_hits(tmp_path):
    path = str(tmp_path / "sub" / "calls.sqlite")
    first, seen1 = _with_client(CallCache(path), _ok,
                                lambda c: chat(c, "m", MSG, purpose="judge:x", cache_salt=""))
    again, seen2 = _with_client(CallCache(path), _ok,  # a new process would open it like this
                                lambda c: chat(c, "m", MSG, purpose="judge:x", cache_salt=""))
    assert len(seen1) == 1 and len(seen2) == 0
    assert again.texts == first.texts == ["t=0.0"]
    assert again.record.cache_hit and again.record.attempts == 0
    assert again.record.prompt_tokens == 0  # nothing spent
    assert len(CallCache(path)) == 1


def test_bot_calls_and_failures_are_never_cached(tmp_path):
    cache = CallCache(str(tmp_path / "c.sqlite"))

    async def twice(c):
        a = await chat(c, "m", MSG, purpose="bot:x")  # no salt: a bot under test
        b = await chat(c, "m", MSG, purpose="bot:x")
        return a, b
    _, seen = _with_client(cache, _ok, twice)
    assert len(seen) == 2 and len(cache) == 0

    async def judge_twice(c):
        a = await chat(c, "m", MSG, purpose="judge:x", cache_salt="")
        b = await chat(c, "m", MSG, purpose="judge:x", cache_salt="")
        return a, b
    (a, b), seen = _with_client(cache, lambda r: httpx.Response(500), judge_twice)
    assert len(seen) == 2 and a.error and b.error and len(cache) == 0


def test_a_chat_reply_without_a_usable_answer_is_not_cached(tmp_path):
    """A judge reply of the right JSON but no answer (no choices, a null
    content, a choice without a message) was stored in the call cache: every
    re-run read the failure back without asking, however well the server
    answered by then."""
    cache = CallCache(str(tmp_path / "c.sqlite"))
    for bad in ({"choices": []}, {"choices": [{"message": {"content": None}}]},
                {"choices": [{"index": 0}]}, {"object": "chat.completion"}):
        first, seen = _with_client(cache, lambda r: httpx.Response(200, json=bad),
                                   lambda c: chat(c, "m", MSG, purpose="judge:x", cache_salt=""))
        assert first.error and len(seen) == 1 and len(cache) == 0, bad
    again, seen = _with_client(cache, _ok,
                               lambda c: chat(c, "m", MSG, purpose="judge:x", cache_salt=""))
    assert len(seen) == 1 and again.texts == ["t=0.0"] and len(cache) == 1


def test_a_deferred_reply_is_cached_only_when_the_caller_keeps_it(tmp_path):
    """chat(defer_store=True), as the judge asks: the reply is stored only once
    the caller has read a usable answer in it (client.keep)."""
    cache = CallCache(str(tmp_path / "c.sqlite"))

    async def ask(c, keep):
        reply = await chat(c, "m", MSG, purpose="judge:x", cache_salt="", defer_store=True)
        if keep:
            await c.keep(reply.unstored)
        return reply
    for keep, stored in ((False, 0), (True, 1)):
        reply, seen = _with_client(cache, _ok, lambda c: ask(c, keep))
        assert len(seen) == 1 and reply.unstored is not None and len(cache) == stored
    hit, seen = _with_client(cache, _ok, lambda c: ask(c, True))
    assert not seen and hit.record.cache_hit and hit.unstored is None


def test_identical_calls_in_flight_share_one_request_and_salts_separate_votes(tmp_path):
    cache = CallCache(str(tmp_path / "c.sqlite"))

    async def slow(c):
        return await asyncio.gather(
            *(chat(c, "m", MSG, purpose="judge:x", cache_salt="") for _ in range(5)),
            *(chat(c, "m", MSG, purpose="judge:v", temperature=0.7, cache_salt=f"vote={v}")
              for v in range(3)))
    replies, seen = _with_client(cache, _ok, slow)
    assert len(seen) == 1 + 3
    assert sum(r.record.cache_hit for r in replies[:5]) == 4
    assert all(r.texts == ["t=0.7"] for r in replies[5:])


def test_endpoint_embeddings_are_cached_per_text(tmp_path):
    with FakeOpenAI() as server:
        with fake_runtime(server, "emb", str(tmp_path / "c.sqlite")) as runtime:
            emb = EndpointEmbedder(runtime, "emb", "e", request_size=10, log=CallLog())
            a = emb.embed(["alpha", "beta"])
            b = emb.embed(["beta", "gamma", "alpha"])  # another batch: only gamma is new
        inputs = [r.json["input"] for r in server.requests]
    assert inputs == [["alpha", "beta"], ["gamma"]]
    assert (b[0] == a[1]).all() and (b[2] == a[0]).all()


def test_an_embedding_of_another_dimension_is_an_error_and_not_cached(tmp_path):
    """A replica that answers with another model's vectors (8 dimensions where the
    endpoint gave 16): each reply is consistent in itself, so it passed, was
    cached, and the batch crashed with numpy's 'could not broadcast' ValueError.
    Now its texts fail with the reason (EmbeddingError: errors/ stage
    embedding), the others keep their vectors, and nothing wrong is cached."""
    path = str(tmp_path / "c.sqlite")
    with FakeOpenAI() as server:
        with fake_runtime(server, "emb", path) as runtime:
            emb = EndpointEmbedder(runtime, "emb", "e", request_size=1, log=CallLog())
            alpha = emb.embed(["alpha"])
            server.configure(embedding_dim=8)
            with pytest.raises(EmbeddingError) as caught:
                emb.embed(["alpha", "beta"])
        assert "a vector of 8 dimensions where the endpoint's have 16" in str(caught.value)
        assert set(caught.value.reasons) == {"beta"}
        assert (caught.value.done["alpha"] == alpha[0]).all()
        assert len(CallCache(path)) == 1  # alpha's only
        server.configure(embedding_dim=16)
        before = len(server.requests)
        with fake_runtime(server, "emb", path) as runtime:  # a fresh worker: beta asked again
            emb = EndpointEmbedder(runtime, "emb", "e", request_size=1, log=CallLog())
            assert emb.embed(["alpha", "beta"]).shape == (2, 16)
        assert [r.json["input"] for r in server.requests[before:]] == [["beta"]]
