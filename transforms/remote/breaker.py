"""CircuitBreaker: stop calling an endpoint that cannot be reached.

Without it, a server that is down costs every call all its attempts and
backoff waits (300 cases took 254 s for 1,800 refused connections). After
`failures` consecutive connection failures (refused, connect timeout, or no
reply at all within the timeout: a wedged server whose port still accepts
connections) the breaker opens: every attempt fails at once with the reason. After
`cooldown_s` one probe attempt goes through (half-open); a response of any
status closes the breaker, another connection failure opens it again.

A 401 (the key refused) opens it for good, whatever `circuit_failures`: a
wrong key does not get better by asking again, and every row would otherwise
spend a request to be told so. A 403 does the same only while the endpoint has
accepted no request of this process, once FORBIDDEN_BEFORE_ACCEPTED of them have
come back: a key or account refused everything (OpenAI's unsupported region, a
project without the model). After one accepted reply a 403 is that request's
refusal, not the key's: a gateway or guardrail in front of a bot under test
blocking one prompt (a red-team suite), and only that row fails.

A server that asks to wait longer than a call waits (Retry-After beyond
MAX_RETRY_AFTER_S: a quota spent for the day) holds the endpoint until that
time: its calls fail unsent with the reason rather than each asking again.
Runs on the endpoint's event loop (one thread), so it needs no lock.
"""
from __future__ import annotations

import time
from typing import Callable

from transforms.text.wording import counted

FORBIDDEN_BEFORE_ACCEPTED = 5  # 403s, with no reply accepted before them, that stop the endpoint


class CircuitBreaker:
    def __init__(self, endpoint: str, failures: int, cooldown_s: float,
                 clock: Callable[[], float] = time.monotonic):
        self.endpoint, self.failures, self.cooldown_s = endpoint, failures, cooldown_s
        self._clock = clock
        self.consecutive = 0
        self.open_until: float | None = None
        self.probing = False
        self.last_error = ""
        self.credentials_refused: str | None = None  # the 401/403 that opened it for good
        self.accepted = False  # a reply got past the credentials (status < 400)
        self.forbidden = 0  # 403s before any accepted reply
        self.held_until: float | None = None  # the server asked not to be called until then
        self.held_reason = ""

    def refusal(self) -> str | None:
        """Why this attempt must not be made (None: go ahead; maybe as the probe)."""
        if self.credentials_refused is not None:
            return (f"not sent: endpoint {self.endpoint} refused the credentials earlier in "
                    f"this run ({self.credentials_refused}); fix its key and run again")
        held = self.held()
        if held is not None:
            return held
        if self.open_until is None:
            return None
        if self._clock() >= self.open_until and not self.probing:
            self.probing = True  # this attempt is the probe
            return None
        return (f"circuit open: {self.consecutive} consecutive connection failures to "
                f"endpoint {self.endpoint} (last: {self.last_error}); calls fail fast and "
                f"one probe is sent every {self.cooldown_s:g} s")

    def on_response(self) -> None:
        """The server answered (any status): it is reachable."""
        self.consecutive, self.open_until, self.probing = 0, None, False

    def on_accepted(self) -> None:
        """A reply below 400: the credentials are good, so a later 403 refuses
        its own request only."""
        self.accepted = True

    def on_credentials_refused(self, status: int, error: str) -> bool:
        """A 401, or a 403 that is the key's and not one request's: no further
        attempt. True the first time (to say so once)."""
        if status == 403:
            if self.accepted:
                return False
            self.forbidden += 1
            if self.forbidden < FORBIDDEN_BEFORE_ACCEPTED:
                return False
            error = f"{error}; {counted(self.forbidden, 'request')} refused with 403, none accepted"
        first = self.credentials_refused is None
        if first:
            self.credentials_refused = error
        return first

    def held(self) -> str | None:
        """Why no call may go out yet: the server asked to wait (None: it did not)."""
        if self.held_until is None or self._clock() >= self.held_until:
            return None
        return (f"not sent: endpoint {self.endpoint} asked to wait "
                f"{self.held_until - self._clock():.0f} s more ({self.held_reason})")

    def hold(self, seconds: float, error: str) -> bool:
        """The server asked not to be called for `seconds` (longer than a call
        waits). True the first time (to say so once)."""
        first = self.held_until is None
        until = self._clock() + seconds
        if first or until > self.held_until:
            self.held_until, self.held_reason = until, error
        return first

    def on_connection_failure(self, error: str) -> None:
        self.consecutive += 1
        self.last_error = error
        if self.failures and (self.probing or self.consecutive >= self.failures):
            self.open_until = self._clock() + self.cooldown_s
            self.probing = False

    def on_other_failure(self) -> None:
        """Neither a response nor a connection failure (e.g. a reply cut off while
        its body was read): says nothing about reachability, but a probe that ends
        so lets the next one try."""
        if self.probing:
            self.open_until = self._clock() + self.cooldown_s
            self.probing = False
