"""Adaptive token-bucket rate limiting per endpoint (requests/s and tokens/min).

Acquisition is first-come first-served (an asyncio.Lock queues the callers),
so one request waits at the head of the line instead of every waiter waking on
every refill. A 429 lowers the request rate multiplicatively and, with a
Retry-After, pauses every caller of the endpoint until then; successes raise the
rate back linearly over about `recover_s` seconds (AIMD, as TCP does), so the
limiter settles just below the server's real limit instead of oscillating.
"""
from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable


_EPSILON_S = 1e-6


class TokenBucket:
    """`rate` units per second, at most `capacity` banked; may go into debt."""

    def __init__(self, rate: float, capacity: float, clock: Callable[[], float] = time.monotonic):
        if rate <= 0 or capacity <= 0:
            raise ValueError("rate and capacity must be > 0")
        self.rate, self.capacity, self._clock = float(rate), float(capacity), clock
        self.level = float(capacity)
        self._stamp = clock()

    def _refill(self) -> None:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    def wait_time(self, amount: float) -> float:
        """Seconds until `amount` is available (0 if now). Amounts above the
        capacity are treated as a full bucket, so a huge request cannot block forever."""
        self._refill()
        need = min(amount, self.capacity) - self.level
        return 0.0 if need <= 0 else need / self.rate

    def take(self, amount: float) -> None:
        self._refill()
        self.level -= amount

    def give_back(self, amount: float) -> None:
        """Correct an estimate: negative amounts take more (debt is allowed)."""
        self._refill()
        self.level = min(self.capacity, self.level + amount)

    def set_rate(self, rate: float) -> None:
        self._refill()
        self.rate = rate


class AdaptiveRateLimiter:
    """Requests/s (+ optional tokens/min) for one endpoint in one worker."""

    def __init__(self, requests_per_second: float, tokens_per_minute: float | None = None, *,
                 burst_s: float = 0.1, decrease: float = 0.7, min_fraction: float = 0.05,
                 recover_s: float = 20.0, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep):
        self.max_rps = float(requests_per_second)
        self._clock, self._sleep = clock, sleep
        self._decrease, self._min_rps = decrease, self.max_rps * min_fraction
        self._recover_per_s = self.max_rps / recover_s
        # A small burst keeps the sending smooth: the server's window never sees a clump.
        self.requests = TokenBucket(self.max_rps, max(1.0, self.max_rps * burst_s), clock)
        self.tokens = None
        if tokens_per_minute:
            per_s = tokens_per_minute / 60.0
            self.tokens = TokenBucket(per_s, max(1.0, per_s * 10), clock)  # 10 s of tokens
        self._paused_until = 0.0
        self._last_raise = clock()
        self._lock: asyncio.Lock | None = None
        self.rate_limited = 0  # 429s seen

    @property
    def rps(self) -> float:
        return self.requests.rate

    async def acquire(self, tokens: float = 0.0) -> float:
        """Wait for a slot; returns the seconds waited."""
        if self._lock is None:
            self._lock = asyncio.Lock()  # created on the loop that uses it
        start = self._clock()
        async with self._lock:
            while True:
                now = self._clock()
                wait = max(self._paused_until - now, self.requests.wait_time(1.0),
                           self.tokens.wait_time(tokens) if self.tokens and tokens else 0.0)
                if wait <= _EPSILON_S:  # float rounding must not leave us a hair short forever
                    self.requests.take(1.0)
                    if self.tokens and tokens:
                        self.tokens.take(tokens)
                    return self._clock() - start
                await self._sleep(wait)

    def correct_tokens(self, estimated: float, actual: float) -> None:
        """After the response: charge what the call really used."""
        if self.tokens:
            self.tokens.give_back(estimated - actual)

    def on_success(self) -> None:
        now = self._clock()
        if self.requests.rate < self.max_rps:
            raised = self.requests.rate + (now - self._last_raise) * self._recover_per_s
            self.requests.set_rate(min(self.max_rps, raised))
        self._last_raise = now

    def on_rate_limited(self, retry_after: float | None) -> None:
        self.rate_limited += 1
        now = self._clock()
        self.requests.set_rate(max(self._min_rps, self.requests.rate * self._decrease))
        self.requests.level = min(self.requests.level, 0.0)  # drop the banked burst
        self._last_raise = now
        if retry_after:
            self._paused_until = max(self._paused_until, now + retry_after)
