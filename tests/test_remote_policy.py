"""Retry-After parsing, retry classification and the adaptive rate limiter."""
from __future__ import annotations

import asyncio
import datetime as dt
import email.utils

import httpx
import pytest

from transforms.remote.ratelimit import AdaptiveRateLimiter, TokenBucket
from transforms.remote.retry import (MAX_RETRY_AFTER_S, BackoffWait, error_for_exception,
                                     error_for_status, parse_retry_after)

NOW = dt.datetime(2026, 11, 21, 12, 0, 0, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize("value, expected", [
    ("3", 3.0), (" 0.5 ", 0.5), ("0", 0.0), ("-4", 0.0), ("100000", MAX_RETRY_AFTER_S),
    (email.utils.format_datetime(NOW + dt.timedelta(seconds=7), usegmt=True), 7.0),
    ("Sat, 21 Nov 2026 11:59:00 GMT", 0.0),  # a date in the past: go now
    ("soon", None), ("", None), (None, None), ("nan", None),
])
def test_parse_retry_after_seconds_and_http_dates(value, expected):
    assert parse_retry_after(value, now=NOW) == expected


def _response(status: int, headers: dict | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers or {}, request=httpx.Request("POST", "http://x"))


@pytest.mark.parametrize("status, retryable", [
    (429, True), (500, True), (502, True), (503, True), (504, True),
    # a request timeout, a conflict (OpenAI's "another request holds the lock"),
    # too early: transient, retried as OpenAI's own client retries them; they
    # failed the row at once
    (408, True), (409, True), (425, True),
    (400, False), (401, False), (403, False), (404, False), (422, False)])
def test_which_statuses_are_retried(status, retryable):
    err = error_for_status(_response(status, {"retry-after": "2"}), "detail")
    assert err.retryable is retryable and err.status == status
    assert err.retry_after == (2.0 if retryable else None)


def test_transport_failures_are_retried():
    req = httpx.Request("POST", "http://x")
    assert error_for_exception(httpx.ReadTimeout("t", request=req)).retryable
    assert error_for_exception(httpx.RemoteProtocolError("closed", request=req)).retryable
    assert error_for_exception(httpx.ConnectError("refused", request=req)).retryable
    assert not error_for_exception(ValueError("bug")).retryable


def test_backoff_grows_and_respects_retry_after():
    class State:
        def __init__(self, n, exc=None):
            self.attempt_number = n
            self.outcome = type("O", (), {"exception": lambda self_: exc})()
    wait = BackoffWait(initial_s=0.5, max_s=30)
    early = [wait(State(1)) for _ in range(200)]
    late = [wait(State(6)) for _ in range(200)]
    assert max(early) <= 0.5 and min(early) >= 0.25
    assert max(late) <= 16 and sum(late) / len(late) > 4 * sum(early) / len(early)
    retry_after = error_for_status(_response(429, {"retry-after": "9"}), "x")
    assert wait(State(1, retry_after)) == 9.0


class FakeClock:
    """Virtual time: sleeping advances the clock instantly."""

    def __init__(self, start: float = 0.0):
        self.now = start

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def test_token_bucket_refills_and_allows_debt():
    clock = FakeClock()
    bucket = TokenBucket(rate=10, capacity=5, clock=clock)
    assert bucket.wait_time(5) == 0
    bucket.take(5)
    assert bucket.wait_time(1) == pytest.approx(0.1)
    clock.now += 0.3
    assert bucket.wait_time(3) == 0
    bucket.give_back(-10)  # the call used more tokens than estimated
    assert bucket.wait_time(1) == pytest.approx((1 - (3 - 10)) / 10)
    assert bucket.wait_time(1000) == pytest.approx((5 - bucket.level) / 10)  # capped


def _run_requests(limiter, n, clock):
    async def go():
        for _ in range(n):
            await limiter.acquire()
    asyncio.run(go())
    return clock.now


def test_rate_held_exactly_in_virtual_time():
    clock = FakeClock()
    limiter = AdaptiveRateLimiter(50, clock=clock, sleep=clock.sleep)
    elapsed = _run_requests(limiter, 500, clock)
    assert 500 / elapsed == pytest.approx(50, rel=0.02)


def test_tokens_per_minute_paces_big_requests():
    clock = FakeClock()
    limiter = AdaptiveRateLimiter(1000, tokens_per_minute=60_000, clock=clock, sleep=clock.sleep)

    async def go():
        for _ in range(40):
            await limiter.acquire(tokens=1000)
    asyncio.run(go())
    # 40k tokens at 1k tokens/s with a 10 s (10k token) burst: about 30 s
    assert 28 <= clock.now <= 32


def test_429_lowers_rate_pauses_and_recovers_slowly():
    clock = FakeClock()
    limiter = AdaptiveRateLimiter(100, clock=clock, sleep=clock.sleep, recover_s=100)
    limiter.on_rate_limited(retry_after=2.0)
    assert limiter.rps == pytest.approx(70)
    limiter.on_rate_limited(retry_after=None)
    assert limiter.rps == pytest.approx(49)

    async def one():
        return await limiter.acquire()
    waited = asyncio.run(one())
    assert waited >= 2.0  # Retry-After pauses everyone
    limiter.on_success()
    start = limiter.rps
    assert 49 < start < 55  # grew only for the ~2 s of the pause
    for _ in range(10):  # success raises the rate a little at a time: 1 rps per second here
        clock.now += 1.0
        limiter.on_success()
    assert limiter.rps == pytest.approx(start + 10, rel=1e-6)
    clock.now += 100
    limiter.on_success()
    assert limiter.rps == 100  # never above the configured rate
    many = AdaptiveRateLimiter(100, clock=clock, sleep=clock.sleep)
    for _ in range(100):
        many.on_rate_limited(None)
    assert many.rps == pytest.approx(5)  # floor: 5% of the configured rate


FAR = 1_000_000.0  # a monotonic clock is hours or days from 0 on a real machine


def test_a_bucket_idle_for_long_banks_no_more_than_its_capacity():
    """Issue 22: _refill without its capacity cap passed every test."""
    clock = FakeClock(FAR)
    bucket = TokenBucket(rate=10, capacity=5, clock=clock)
    clock.now += 3600  # idle for an hour
    assert bucket.wait_time(1) == 0 and bucket.level == 5
    bucket.take(5)
    assert bucket.wait_time(1) == pytest.approx(0.1)
    bucket.give_back(1000)  # an over-estimate given back: still at most the capacity
    assert bucket.level == 5


def test_idle_then_burst_is_paced_after_the_small_burst():
    """After a long idle time a burst of 100 requests at 50/s: the first 5 (0.1 s
    of burst) at once, then one every 20 ms, so about 1.9 s, not 0."""
    clock = FakeClock(FAR)
    limiter = AdaptiveRateLimiter(50, clock=clock, sleep=clock.sleep)
    _run_requests(limiter, 10, clock)
    clock.now += 600  # idle
    start = clock.now
    elapsed = _run_requests(limiter, 100, clock) - start
    assert elapsed == pytest.approx(95 / 50, rel=0.01)


def test_retry_after_pauses_from_now_with_a_clock_far_from_zero():
    """Issue 22: on_rate_limited pausing until `retry_after` rather than `now +
    retry_after` passed every test, because the simulated clock started at 0."""
    clock = FakeClock(FAR)
    limiter = AdaptiveRateLimiter(100, clock=clock, sleep=clock.sleep)
    limiter.on_rate_limited(retry_after=2.0)

    async def one():
        return await limiter.acquire()
    assert asyncio.run(one()) == pytest.approx(2.0, abs=0.02)
    assert clock.now == pytest.approx(FAR + 2.0, abs=0.02)
    limiter.on_rate_limited(retry_after=None)  # no Retry-After: no pause, a lower rate
    assert limiter.rps == pytest.approx(49)


def test_against_the_fake_servers_rate_limit_every_call_lands_and_429s_are_counted():
    """End to end over HTTP on 127.0.0.1: the fake server allows 8 requests/s
    (banking 1 s of them) and answers 429 with Retry-After beyond.
    - Our limit at the server's rate: a burst of 16 after 2.5 s idle is paced by
      our bucket (one that banked the idle time sends all 16 at once and the
      server refuses several), and every call lands.
    - Our limit at twice the server's: 429s happen, each is retried, the client
      counts as many as the server sent, and the limiter lowers its rate.
    The server enforces its own rate, so the throughput it measured is within it."""
    from pipeline.config import EndpointConfig
    from tests.fake_server import FakeOpenAI, ServerConfig
    from transforms.remote.client import EndpointClient
    from transforms.remote.openai_api import chat

    async def calls(client, n):
        replies = await asyncio.gather(*(chat(client, "m", [{"role": "user", "content": f"q{i}"}],
                                              purpose="bot:x") for i in range(n)))
        return [r.record for r in replies]

    async def main(server, rps, phases):
        cfg = EndpointConfig(base_url=server.openai_base_url, requests_per_second=rps,
                             max_concurrency=16, max_attempts=10, timeout_s=10,
                             backoff_initial_s=0.05, backoff_max_s=0.5)
        client = EndpointClient("llm", cfg)
        try:
            records = []
            for n, idle_s in phases:
                await asyncio.sleep(idle_s)
                records += await calls(client, n)
            return records, client.limiter
        finally:
            await client.aclose()

    with FakeOpenAI(ServerConfig(rate_limit_rps=8, retry_after_s=0.25)) as server:
        records, limiter = asyncio.run(main(server, 8, [(1, 0), (16, 2.5)]))
        stats = server.stats()
        assert all(r.ok for r in records) and len(records) == 17
        assert stats["by_status"].get("200") == 17
        # paced: at most a stray 429 from scheduling jitter
        assert stats["rate_limited"] <= 1, stats
        assert sum(r.attempts - 1 for r in records) == stats["rate_limited"]
        assert stats["achieved_rps"] <= 8 * 1.25

    with FakeOpenAI(ServerConfig(rate_limit_rps=4, retry_after_s=0.25)) as server:
        records, limiter = asyncio.run(main(server, 8, [(10, 0)]))
        stats = server.stats()
        assert all(r.ok for r in records) and stats["by_status"].get("200") == 10
        assert stats["rate_limited"] >= 1
        assert sum(r.attempts - 1 for r in records) == stats["rate_limited"] \
            == limiter.rate_limited == stats["by_status"]["429"]
        assert stats["total"] == 10 + stats["rate_limited"]
        assert limiter.rps < 8  # lowered by the 429s
