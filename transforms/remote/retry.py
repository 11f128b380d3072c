"""Which failures are retried, how long to wait, and Retry-After parsing.

Retried: 429, 5xx, timeouts, connection errors, a 2xx whose body is not the
JSON it should be (truncated or malformed). Never retried: any other 4xx (a
bad request or a bad key does not get better by asking again), nor a 200 or
5xx whose error body refuses the request itself (client._refused_as_asked). A
429 without Retry-After is waited out by OpenAI's x-ratelimit-reset-* headers
when it has them: asking again before then is a request spent on another 429.
"""
from __future__ import annotations

import datetime as dt
import email.utils
import random
import re
from typing import Callable

import httpx
from tenacity import RetryCallState

MAX_RETRY_AFTER_S = 300.0


class RemoteCallError(Exception):
    """A failed attempt. `retryable` decides whether another attempt is made."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool,
                 retry_after: float | None = None):
        super().__init__(message)
        self.status, self.retryable, self.retry_after = status, retryable, retry_after


def parse_retry_after(value: str | None, now: dt.datetime | None = None,
                      cap: float | None = MAX_RETRY_AFTER_S) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP-date.

    None when absent or unparsable; never negative; capped at `cap` (5 minutes)
    so a misbehaving server cannot park a nightly job (None: as asked).
    """
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        now = now or dt.datetime.now(dt.timezone.utc)
        seconds = (when - now).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(seconds, 0.0) if cap is None else min(max(seconds, 0.0), cap)


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|ns|h|m|s)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_reset_duration(value: str | None) -> float | None:
    """Seconds from an x-ratelimit-reset-* value, a Go duration as OpenAI sends
    it ("1s", "6m0s", "20ms", "1h2m3.5s"); None otherwise (a bare number may be
    an epoch time elsewhere: not guessed at)."""
    text = (value or "").strip()
    parts = list(_DURATION_PART.finditer(text))
    if not parts or "".join(p.group(0) for p in parts) != text:
        return None
    return sum(float(p.group(1)) * _UNIT_S[p.group(2)] for p in parts)


def ratelimit_reset(headers: httpx.Headers, cap: float | None = MAX_RETRY_AFTER_S
                    ) -> float | None:
    """Seconds until OpenAI's x-ratelimit-reset-requests / -tokens say the limit
    that was hit resets: the longest of those whose x-ratelimit-remaining-* is 0,
    else (none says which) the soonest of them; capped as Retry-After."""
    resets = {kind: parse_reset_duration(headers.get(f"x-ratelimit-reset-{kind}"))
              for kind in ("requests", "tokens")}
    resets = {k: v for k, v in resets.items() if v is not None}
    spent = [v for k, v in resets.items()
             if headers.get(f"x-ratelimit-remaining-{k}", "").strip() == "0"]
    wait = max(spent) if spent else min(resets.values(), default=None)
    if wait is None:
        return None
    return wait if cap is None else min(wait, cap)


# 4xx worth asking again: a request timeout, a conflict (OpenAI: another request
# holds the resource), too early, too many requests; as OpenAI's own client retries
TRANSIENT_4XX = frozenset({408, 409, 425, 429})


def error_for_status(response: httpx.Response, detail: str) -> RemoteCallError:
    """The attempt's error. A wait longer than MAX_RETRY_AFTER_S (Retry-After:
    86400, a daily quota's reset) is not waited: the call fails now, with
    `retry_after` the whole wait asked (the caller stops its endpoint until then),
    rather than parking the run 5 minutes an attempt to hear it again."""
    status = response.status_code
    retryable = status in TRANSIENT_4XX or status >= 500
    retry_after = parse_retry_after(response.headers.get("retry-after"), cap=None) \
        if retryable else None
    if retry_after is None and status == 429:
        retry_after = ratelimit_reset(response.headers, cap=None)
    if retry_after is not None and retry_after > MAX_RETRY_AFTER_S:
        return RemoteCallError(
            f"HTTP {status}: {detail} (the server asks to wait {retry_after:.0f} s, longer "
            f"than a call waits ({MAX_RETRY_AFTER_S:.0f} s): not retried)",
            status=status, retryable=False, retry_after=retry_after)
    return RemoteCallError(f"HTTP {status}: {detail}", status=status, retryable=retryable,
                           retry_after=retry_after)


def error_for_exception(exc: Exception, scrub: Callable[[str], str] = str) -> RemoteCallError:
    """Transport failures: timeouts and broken connections are worth retrying.
    The text is scrubbed (of secrets) before it is shortened."""
    if isinstance(exc, httpx.TimeoutException):
        return RemoteCallError(f"timeout ({type(exc).__name__})", retryable=True)
    if isinstance(exc, (httpx.TransportError, httpx.StreamError)):
        return RemoteCallError(scrub(f"connection error ({type(exc).__name__}: {exc})")[:300],
                               retryable=True)
    return RemoteCallError(scrub(f"{type(exc).__name__}: {exc}")[:300], retryable=False)


def is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, RemoteCallError) and exc.retryable


class BackoffWait:
    """Exponential backoff with full jitter, but never shorter than Retry-After."""

    def __init__(self, initial_s: float = 0.5, max_s: float = 30.0, rng: random.Random | None = None):
        self.initial_s, self.max_s = initial_s, max_s
        self._rng = rng or random.Random()

    def __call__(self, state: RetryCallState) -> float:
        ceiling = min(self.max_s, self.initial_s * 2 ** (state.attempt_number - 1))
        wait = self._rng.uniform(self.initial_s / 2, ceiling)
        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        return max(wait, retry_after) if retry_after is not None else wait
