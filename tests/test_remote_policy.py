"""Retry-After parsing, retry classification and the adaptive rate limiter."""
from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import time

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

    def __init__(self):
        self.now = 0.0

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


def test_rate_held_within_ten_percent_in_real_time():
    limiter = AdaptiveRateLimiter(200)

    async def worker(times):
        for _ in range(60):
            await limiter.acquire()
            times.append(time.monotonic())

    async def main():
        times: list[float] = []
        await asyncio.gather(*(worker(times) for _ in range(8)))  # 8 concurrent callers
        return times
    times = sorted(asyncio.run(main()))
    window = [t for t in times if t >= times[0] + 0.5]  # steady state, burst excluded
    rate = (len(window) - 1) / (window[-1] - window[0])
    assert 180 <= rate <= 220


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
