"""EndpointClient: one configured endpoint, as every remote caller sees it.

A call = up to `max_attempts` attempts, each waiting for the rate limiter and
holding one of `max_concurrency` slots only while on the wire. Every call ends
as a CallRecord (success or failure) that rolls up into usage/; a failure is
returned as data, never raised into the pipeline.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import os
import re
import time
import uuid
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Mapping
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from transforms.remote.breaker import CircuitBreaker
from transforms.remote.budget import actual_use, settling_may_free, worst_case
from transforms.remote.cache import (ONLY, REFRESH, SHARED, USE, CallCache, TieredCache,
                                     cache_key)
from transforms.remote.ratelimit import AdaptiveRateLimiter
from transforms.remote.retry import (TRANSIENT_4XX, BackoffWait, RemoteCallError,
                                     error_for_exception, error_for_status, is_retryable)
from transforms.remote.scrub import ENV_TEXT, Scrubber, configured_secrets, redact_url

REQUEST_ID_HEADER = "X-Client-Request-Id"
# Whom a call is for, (bot, metrics): set by the caller around its calls with
# `attributed` (a context variable follows each asyncio task), read when the
# call's CallRecord is made, so usage/ can say what each metric and bot cost.
CALL_FOR: ContextVar[tuple[str | None, tuple[str, ...]]] = ContextVar(
    "evalbeam_call_for", default=(None, ()))
POOL_CONNECTIONS = 8  # connections per httpx pool (see EndpointClient.__init__)
STOP_CHECK_S = 0.25  # how often a retry's wait looks whether the run was stopped
_log = logging.getLogger(__name__)


class _RedactURLs(logging.Filter):
    """httpx logs each request's full URL at INFO ('HTTP Request: POST
    http://user:password@host/v1/...?key=...'), and Beam's workers log at INFO:
    the URLs of its records lose their userinfo and query values."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact_url(str(a)) if isinstance(a, httpx.URL) else redact_url(a)
                                for a in record.args)
        return True


logging.getLogger("httpx").addFilter(_RedactURLs())


class MissingSecret(ValueError):
    """An environment variable named in the config is not set, or holds what
    cannot be sent in an HTTP header. Its message says it all: a run it ends
    fails in one line, without a traceback."""

    one_line = True


@dataclass(slots=True)
class CallRecord:
    endpoint: str
    model: str
    purpose: str            # e.g. "bot:assistant", "embeddings", "judge:faithfulness"
    ok: bool
    status: int | None      # HTTP status of the last attempt (None: no response)
    attempts: int
    latency_ms: float | None  # the successful attempt's time on the wire
    total_ms: float         # from the first attempt to the end, retries and waits included
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rate_limited: int = 0   # 429 answers among the attempts
    error: str | None = None
    cache_hit: bool = False         # answered from the call cache (either tier): no request
    shared_cache_hit: bool = False  # ... from tier 2, the objects every worker shares
    scrubbed: bool = False  # a configured secret was removed from the reply
    bot: str | None = None          # the bot whose row(s) the call served, when one
    metrics: tuple[str, ...] = ()   # the metrics the call served (usage/ splits it among them)
    budget_refused: bool = False    # not sent: a spend cap of the run was reached
    # a reply without token counts (no `usage`, no x-compute-tokens: vLLM without
    # usage, some proxies): its prompt tokens as estimated before sending, else None
    # (a GET, TEI's /info, uses no tokens)
    unreported_tokens: float | None = None
    # the call's id (X-Client-Request-Id of its attempts) once a request went out:
    # its row in the run's request journal (transforms/remote/journal.py)
    request_id: str | None = None

    @property
    def sent(self) -> bool:
        """A request went out (one attempt or more). Not for a cache hit, a call a
        spend cap refused, or one the endpoint's open circuit breaker failed at once."""
        return self.attempts > 0


@dataclass(slots=True)
class CallResult:
    data: Any | None        # the parsed JSON body, None on failure
    record: CallRecord | None  # None: nothing in the cache for cache_mode ONLY (no call)
    # (cache key, reply, replace) of a fresh reply not stored yet (post_json's
    # defer_store): the caller stores it with EndpointClient.keep once it knows the
    # reply is usable
    unstored: tuple[str, Any, bool] | None = None


async def attributed(coro: Awaitable[Any], bot: str | None, metrics: Iterable[str] = ()) -> Any:
    """Await coro with its calls counted for `bot` and shared by `metrics`."""
    token = CALL_FOR.set((bot, tuple(sorted(set(metrics)))))
    try:
        return await coro
    finally:
        CALL_FOR.reset(token)


def _for_whom(rec: CallRecord) -> CallRecord:
    rec.bot, rec.metrics = CALL_FOR.get()
    return rec


def env_secret(name: str, where: str) -> str:
    """The value of a variable the config names; unset or empty is refused before the
    run (an empty key or header was sent as it is: every call refused, 401)."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        said = "is not set" if value is None else "is empty"
        raise MissingSecret(f"environment variable {name} ({where}) {said}")
    return value


def resolve_env_refs(value: str, where: str) -> str:
    """Replace ${VAR} by the environment variable's value (secrets stay out of
    configs) and `$$` by `$` (how a literal `$` before a name is written)."""
    def sub(m: re.Match) -> str:
        return env_secret(m.group(1), where) if m.group(1) else m.group(0).replace("$$", "$")
    return ENV_TEXT.sub(sub, value)


def split_query(base_url: str) -> tuple[str, dict[str, str]]:
    """(the URL without its query, the query's parameters): httpx would glue
    the paths of requests after a base_url's query."""
    parts = urlsplit(base_url)
    if not parts.query:
        return base_url, {}
    return (urlunsplit(parts._replace(query="", fragment="")),
            dict(parse_qsl(parts.query, keep_blank_values=True)))


def endpoint_secrets(name: str, cfg) -> tuple[dict[str, str], list[str]]:
    """(auth/extra headers, secret values to scrub) for an endpoint config."""
    headers: dict[str, str] = {}
    if cfg.api_key_env:
        key = env_secret(cfg.api_key_env, f"endpoints.{name}.api_key_env")
        if cfg.api_version:  # Azure OpenAI
            headers["api-key"] = key
        else:
            headers["Authorization"] = f"Bearer {key}"
    for header, value in cfg.headers.items():
        headers[header] = resolve_env_refs(str(value), f"endpoints.{name}.headers.{header}")
    for header, value in headers.items():
        if not value.isascii() or any(c in value for c in "\r\n\0"):
            # httpx would fail every call (a line break) or crash the run with a
            # traceback (non-ASCII): said before the run, without the value
            source = (f"environment variable {cfg.api_key_env} (endpoints.{name}.api_key_env)"
                      if header in ("Authorization", "api-key") and cfg.api_key_env
                      else f"endpoints.{name}.headers.{header}")
            raise MissingSecret(f"{source} holds a character an HTTP header cannot carry "
                                "(a line break, or one outside ASCII)")
    return headers, configured_secrets({name: cfg})


def _usage_tokens(data: Any, header_tokens: str | None = None) -> tuple[int, int]:
    """(prompt, completion) tokens from the body's `usage` (OpenAI, vLLM), else
    from TEI's `x-compute-tokens` header (its bodies have no usage)."""
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return (int(header_tokens), 0) if header_tokens and header_tokens.isdigit() else (0, 0)
    return (_token_count(usage.get("prompt_tokens"), usage.get("input_tokens")),
            _token_count(usage.get("completion_tokens"), usage.get("output_tokens")))


def _reports_tokens(data: Any, header_tokens: str | None = None) -> bool:
    """The reply says how many tokens it used (a `usage` block with a count in
    it, or TEI's header): `usage: {}` or counts that are words say nothing, and
    their calls are not taken for free."""
    usage = data.get("usage") if isinstance(data, dict) else None
    return (isinstance(usage, dict) and any(
        _count(usage.get(k)) is not None for k in ("prompt_tokens", "input_tokens",
                                                   "completion_tokens", "output_tokens"))
    ) or bool(header_tokens and header_tokens.isdigit())


def _token_count(*values: Any) -> int:
    """The first of a server's token counts that is a whole number >= 0 (a
    number, or digits in a string); 0 when none is: a word, null, a negative
    or infinite number in `usage` must neither fail the call nor make a cost
    negative."""
    return next((n for n in map(_count, values) if n is not None), 0)


def _count(value: Any) -> int | None:
    """A token count read from a server: a number >= 0 or digits; None otherwise."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value) and value >= 0:
        return round(value)
    return None


class ReplyTooLarge(Exception):
    """The reply's body is bigger than the endpoint's max_reply_bytes."""


async def read_capped(response: httpx.Response, limit: int) -> bytes:
    """The (decoded) body of a streamed response, refusing more than `limit`
    bytes: a 50 MB reply must not be read into memory, let alone scored."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ReplyTooLarge(f"reply of {int(declared)} bytes: larger than max_reply_bytes "
                            f"({limit} bytes)")
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise ReplyTooLarge(f"reply larger than max_reply_bytes ({limit} bytes)")
    return bytes(body)


_CONNECTION_FAILURES = (httpx.ConnectError, httpx.ConnectTimeout)
# no reply at all within timeout_s: a wedged server whose port still accepts
# connections (the kernel's backlog) is as unreachable as one that refuses them
_NO_REPLY = (httpx.ReadTimeout, httpx.WriteTimeout)


class EndpointClient:
    def __init__(self, name: str, cfg, transport: httpx.AsyncBaseTransport | None = None,
                 backoff: BackoffWait | None = None,
                 cache: CallCache | TieredCache | None = None,
                 scrubber: Scrubber | None = None, ledger=None, journal=None,
                 stopped: Callable[[], str | None] | None = None):
        self.name, self.cfg, self.cache = name, cfg, cache
        # why the run was stopped (None: it runs), checked before each request and
        # during each retry's wait: a stopped run's calls go on unsent
        self.stopped = stopped or (lambda: None)
        self.ledger = ledger  # the run's spend caps (transforms/remote/budget.py), if any
        self.journal = journal  # the run's request journal (transforms/remote/journal.py), if any
        self._inflight: dict[str, asyncio.Future] = {}  # cache key -> the call answering it
        headers, secrets = endpoint_secrets(name, cfg)
        # the run's scrubber knows every endpoint's secrets; alone, this one's
        self.scrubber = scrubber if scrubber is not None else Scrubber(secrets)
        self.breaker = CircuitBreaker(name, cfg.circuit_failures, cfg.circuit_cooldown_s)
        share = cfg.worker_share if cfg.worker_share is not None else 1.0
        self.limiter = AdaptiveRateLimiter(
            cfg.requests_per_second * share,
            cfg.tokens_per_minute * share if cfg.tokens_per_minute else None)
        self._slots = asyncio.Semaphore(cfg.max_concurrency)
        self._backoff = backoff or BackoffWait(cfg.backoff_initial_s, cfg.backoff_max_s)
        # httpx's pool slows down sharply beyond a few dozen connections
        # (encode/httpx#3215: 64 connections gave 72 req/s here, 8 pools of 8
        # gave 411), so the connections are spread over small pools.
        sizes = [min(POOL_CONNECTIONS, cfg.max_concurrency - i)
                 for i in range(0, cfg.max_concurrency, POOL_CONNECTIONS)]
        base_url, query = split_query(cfg.base_url)
        self._pools = [httpx.AsyncClient(
            base_url=base_url, headers=headers, transport=transport,
            timeout=httpx.Timeout(cfg.timeout_s, connect=min(10.0, cfg.timeout_s)),
            limits=httpx.Limits(max_connections=n, max_keepalive_connections=n))
            for n in sizes]
        self._next_pool = itertools.cycle(self._pools)
        # a query in base_url (?key=...) goes with every request, as api-version does
        self.params = {**query, **({"api-version": cfg.api_version} if cfg.api_version else {})}
        # the largest batch a server said it accepts (TEI's 413/422 name it): callers
        # that batch inputs send no more than this from then on
        self.batch_limit: int | None = None

    def scrub(self, text: str) -> str:
        """Remove every secret value (in any of its encodings) from text that may
        reach a table or a log; done before any truncation."""
        return self.scrubber.scrub(text)

    async def post_json(self, path: str, body: Mapping[str, Any], *, model: str, purpose: str,
                        estimated_tokens: float = 0.0, cache_salt: str | None = None,
                        cache_body: Mapping[str, Any] | None = None,
                        completion_cap: float = 0.0,
                        cache_if: Callable[[Any], bool] | None = None,
                        defer_store: bool = False, cache_mode: str = USE,
                        reject: Callable[[Any], str | None] | None = None) -> CallResult:
        """POST JSON with retries; always returns (never raises for HTTP/network trouble).

        With a cache and a cache_salt (judge and embedding calls; never a bot
        under test), an answer already in the cache is returned without a
        request, and identical requests in flight at once share one call. The key
        is computed from `cache_body` when given (the body without what changes
        from run to run). `estimated_tokens` includes `completion_cap`, the
        most the reply can use (max_tokens), which the spend caps reserve.
        `cache_if(data)` says whether a reply is an answer worth keeping: one
        that is not (a chat reply without choices) is neither stored nor read
        back from the cache. With `defer_store` a fresh reply is not stored but
        handed back in `unstored`: the caller keeps it (`keep`) only once it
        knows the reply was usable (a judge reply that gave a verdict).

        cache_mode ONLY answers from the cache or not at all (record None, no
        request); REFRESH makes the request without looking (the cached reply
        was unusable: an older version kept a judge reply without a verdict)
        and its reply replaces the cached one in every tier.

        `reject(data)` says why an HTTP 200 reply cannot be used (None: it can):
        such a reply (a judge's `content: null`, no choices, a refusal) is
        retried like a 5xx within max_attempts (usage/ counts the retries, and
        the tokens every attempt used); when every attempt was unusable the call
        failed with that reason. It is never cached."""
        if cache_mode == ONLY and (self.cache is None or cache_salt is None):
            return CallResult(None, None)
        if self.cache is None or cache_salt is None:
            return await self._post(path, body, model, purpose, estimated_tokens,
                                    completion_cap=completion_cap, reject=reject)
        key = cache_key(self.cfg.base_url, path, self.params, model,
                        body if cache_body is None else cache_body, cache_salt)
        if cache_mode == REFRESH:
            return await self._post_and_store(key, path, body, model, purpose, estimated_tokens,
                                              completion_cap, cache_if, defer_store, replace=True,
                                              reject=reject)
        if cache_mode == ONLY:
            data, tier = await self.cache.lookup(key)
            if data is not None and (cache_if is None or cache_if(data)):
                return CallResult(data, self.hit_record(model, purpose, tier))
            return CallResult(None, None)
        flight = self._inflight.get(key)
        if flight is not None:  # an identical call is under way: share its answer
            data = await asyncio.shield(flight)
            if data is not None:
                return CallResult(data, self.hit_record(model, purpose, tier=None))
            # the shared call failed: this caller tries on its own
            return await self._post_and_store(key, path, body, model, purpose, estimated_tokens,
                                              completion_cap, cache_if, defer_store,
                                              reject=reject)
        waiting = self._inflight[key] = asyncio.get_running_loop().create_future()
        data = None
        try:
            data, tier = await self.cache.lookup(key)
            if data is not None and (cache_if is None or cache_if(data)):
                return CallResult(data, self.hit_record(model, purpose, tier))
            result = await self._post_and_store(key, path, body, model, purpose,
                                                estimated_tokens, completion_cap, cache_if,
                                                defer_store, reject=reject)
            data = result.data
            return result
        finally:
            del self._inflight[key]
            waiting.set_result(data)

    async def get_json(self, path: str, *, model: str, purpose: str) -> CallResult:
        """GET with the same retries, limits and accounting as post_json (never cached)."""
        return await self._post(path, None, model, purpose, 0.0, method="GET")

    def hit_record(self, model: str, purpose: str, tier: str | None) -> CallRecord:
        """The record of a call answered without a request (tier: the cache's, if any)."""
        return _for_whom(CallRecord(self.name, model, purpose, ok=True, status=None,
                                    attempts=0, latency_ms=None, total_ms=0.0, cache_hit=True,
                                    shared_cache_hit=tier == SHARED))

    async def _post_and_store(self, key: str, path: str, body: Mapping[str, Any], model: str,
                              purpose: str, estimated_tokens: float,
                              completion_cap: float = 0.0,
                              cache_if: Callable[[Any], bool] | None = None,
                              defer_store: bool = False, replace: bool = False,
                              reject: Callable[[Any], str | None] | None = None) -> CallResult:
        result = await self._post(path, body, model, purpose, estimated_tokens,
                                  completion_cap=completion_cap, reject=reject)
        if result.data is not None and (cache_if is None or cache_if(result.data)):
            if defer_store:
                result.unstored = (key, result.data, replace)
            else:
                await self.cache.store(key, result.data, replace)
        return result

    async def keep(self, unstored: tuple[str, Any, bool] | None) -> None:
        """Store a reply post_json(defer_store=True) handed back (None: nothing to keep)."""
        if unstored is not None and self.cache is not None:
            await self.cache.store(*unstored)

    def _reserve(self, purpose: str, estimated_tokens: float, completion_cap: float):
        """The call's reservation under the run's spend caps (None: no cap), or
        the refusal's text."""
        if self.ledger is None:
            return None
        return self.ledger.reserve(worst_case(
            self.name, purpose, max(0.0, estimated_tokens - completion_cap), completion_cap,
            self.cfg.price_per_million))

    async def _reserve_when_room(self, purpose: str, estimated_tokens: float,
                                 completion_cap: float):
        """_reserve, but a refusal waits while this process's calls in flight may
        still settle for less than they reserved (transforms/remote/budget.py)."""
        while True:
            open_now, settled = self.ledger.in_flight.snapshot() if self.ledger else (0, 0)
            reservation = self._reserve(purpose, estimated_tokens, completion_cap)
            if (not isinstance(reservation, str) or not open_now
                    or not settling_may_free(reservation)):
                return reservation
            await self.ledger.in_flight.settled_since(settled)

    def refused(self, model: str, purpose: str, reason: str, budget: bool = True) -> CallResult:
        """A call that was not sent: a spend cap was reached (budget), or its caller
        refused it up front (a judge prompt larger than judge.max_prompt_tokens,
        counted in usage/ as a failure without a call)."""
        return CallResult(None, _for_whom(CallRecord(
            self.name, model, purpose, ok=False, status=None, attempts=0, latency_ms=None,
            total_ms=0.0, error=reason, budget_refused=budget)))

    async def _post(self, path: str, body: Mapping[str, Any] | None, model: str, purpose: str,
                    estimated_tokens: float, method: str = "POST",
                    completion_cap: float = 0.0,
                    reject: Callable[[Any], str | None] | None = None) -> CallResult:
        reservation = await self._reserve_when_room(purpose, estimated_tokens, completion_cap)
        if isinstance(reservation, str):
            return self.refused(model, purpose, reservation)
        try:
            result = await self._send(path, body, model, purpose, estimated_tokens, method,
                                      reject, completion_cap, reservation)
        except BaseException:  # cancelled: nothing was used that we know of
            if reservation is not None:
                self.ledger.settle(reservation, {})
            raise
        if reservation is not None:
            rec = result.record
            self.ledger.settle(reservation, actual_use(
                self.name, purpose, rec.ok, rec.prompt_tokens, rec.completion_tokens,
                estimated_tokens, self.cfg.price_per_million, sent=rec.sent))
        return result

    async def _send(self, path: str, body: Mapping[str, Any] | None, model: str, purpose: str,
                    estimated_tokens: float, method: str,
                    reject: Callable[[Any], str | None] | None = None,
                    completion_cap: float = 0.0, reservation=None) -> CallResult:
        request_id = uuid.uuid4().hex
        payload = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        state = {"attempts": 0, "rate_limited": 0, "status": None, "latency": None,
                 "method": method, "compute_tokens": None, "reject": reject,
                 "unusable_tokens": (0, 0), "purpose": purpose, "reservation": reservation,
                 "prompt_estimate": max(0.0, estimated_tokens - completion_cap)}
        start = time.perf_counter()
        data, error, scrubbed = None, None, False
        try:
            async for attempt in AsyncRetrying(
                    stop=stop_after_attempt(self.cfg.max_attempts), wait=self._backoff,
                    retry=retry_if_exception(is_retryable), reraise=True,
                    sleep=self._wait_unless_stopped):
                with attempt:
                    data = await self._attempt(path, payload, request_id, estimated_tokens, state)
        except RemoteCallError as exc:
            error = self.scrub(str(exc))
        except Exception as exc:  # noqa: BLE001 - anything else is recorded, not raised
            error = self.scrub(f"{type(exc).__name__}: {exc}")[:500]
        if data is not None and self.scrubber:
            hits: list = []
            data = self.scrubber.scrub_value(data, hits)
            scrubbed = bool(hits)
        prompt, completion = _usage_tokens(data, state["compute_tokens"])
        # the unusable replies before it were billed too
        prompt += state["unusable_tokens"][0]
        completion += state["unusable_tokens"][1]
        if data is not None and self.limiter.tokens:
            self.limiter.correct_tokens(estimated_tokens, prompt + completion or estimated_tokens)
        record = CallRecord(self.name, model, purpose, ok=error is None, status=state["status"],
                            attempts=state["attempts"], latency_ms=state["latency"],
                            total_ms=(time.perf_counter() - start) * 1000.0,
                            prompt_tokens=prompt, completion_tokens=completion,
                            rate_limited=state["rate_limited"], error=error, scrubbed=scrubbed,
                            request_id=request_id if state["attempts"] else None)
        if data is not None and not prompt + completion and method != "GET" \
                and not _reports_tokens(data, state["compute_tokens"]):  # as actual_use
            record.unreported_tokens = float(estimated_tokens)
        return CallResult(data if error is None else None, _for_whom(record))

    async def _wait_unless_stopped(self, seconds: float) -> None:
        """A retry's wait, cut short when the run is stopped (its next attempt
        then ends the call unsent)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0 and self.stopped() is None:
            await asyncio.sleep(min(left, STOP_CHECK_S))

    def _refuse_if_stopped(self) -> None:
        why = self.stopped()
        if why is not None:
            raise RemoteCallError(f"not sent: the run was stopped ({why})", retryable=False)

    async def _attempt(self, path: str, payload: bytes | None, request_id: str, tokens: float,
                       state: dict) -> Any:
        self._refuse_if_stopped()
        refusal = self.breaker.refusal()
        if refusal:  # the endpoint is unreachable: fail at once, with the reason
            raise RemoteCallError(refusal, retryable=False)
        await self.limiter.acquire(tokens)
        async with self._slots:
            self._refuse_if_stopped()  # ... or stopped while this one queued
            if self.breaker.credentials_refused is not None:  # refused while this one queued
                raise RemoteCallError(self.breaker.refusal(), retryable=False)
            held = self.breaker.held()  # ... or told to wait while this one queued
            if held is not None:
                raise RemoteCallError(held, retryable=False)
            if not state["attempts"] and state["reservation"] is not None:
                self.ledger.sending(state["reservation"])  # a lost process keeps it spent
            state["attempts"] += 1
            if self.journal is not None:  # before it is on the wire: a lost process sent it
                self.journal.attempted(request_id, self.name, state["attempts"],
                                       state["prompt_estimate"], state["purpose"])
            t0 = time.perf_counter()
            replied = False
            try:
                headers = {REQUEST_ID_HEADER: request_id}
                if payload is not None:
                    headers["Content-Type"] = "application/json"
                async with next(self._next_pool).stream(
                        state["method"], path, content=payload, params=self.params,
                        headers=headers) as response:
                    replied = True
                    state["status"] = response.status_code
                    state["compute_tokens"] = response.headers.get("x-compute-tokens")
                    body = await read_capped(response, self.cfg.max_reply_bytes)
            except ReplyTooLarge as exc:
                self.breaker.on_response()
                raise RemoteCallError(str(exc), status=state["status"], retryable=False) from None
            except Exception as exc:
                state["status"] = None
                failure = error_for_exception(exc, self.scrub)
                if isinstance(exc, _CONNECTION_FAILURES) or (
                        isinstance(exc, _NO_REPLY) and not replied):
                    self.breaker.on_connection_failure(str(failure))
                else:
                    self.breaker.on_other_failure()
                raise failure from None
            elapsed = (time.perf_counter() - t0) * 1000.0
        self.breaker.on_response()
        state["status"] = response.status_code
        if response.status_code == 429:
            state["rate_limited"] += 1
        if 300 <= response.status_code < 400:  # httpx does not follow it, nor do we
            location = self.scrub(redact_url(response.headers.get("location", "")))[:300]
            raise RemoteCallError(
                f"HTTP {response.status_code}: a redirect to {location or '(no Location)'}, not "
                "followed (credentials go only to base_url: set it to the final address)",
                status=response.status_code, retryable=False)
        if response.status_code >= 400:
            err = error_for_status(response, self.scrub(_error_detail(body))[:300])
            if err.retryable and response.status_code != 429 and _refused_as_asked(body):
                err.retryable = False  # a gateway's 5xx for a prompt the model cannot take
            if not err.retryable and err.retry_after:  # longer than a call waits
                if self.breaker.hold(err.retry_after, str(err)):
                    _log.warning("evalbeam: endpoint %s asked to wait %.0f s: its calls in "
                                 "this process fail unsent until then", self.name,
                                 err.retry_after)
            elif response.status_code == 429:
                self.limiter.on_rate_limited(err.retry_after)
            if response.status_code in (401, 403) and self.breaker.on_credentials_refused(
                    response.status_code, str(err)):
                _log.warning("evalbeam: endpoint %s refused the credentials (%s): its other "
                             "calls in this process fail without being sent", self.name, err)
            raise err
        self.breaker.on_accepted()
        try:
            data = json.loads(body)
        except UnicodeDecodeError as exc:
            data = _json_in_charset(response, body, exc, self.scrub)
        except ValueError:
            raise _not_json(response, body, self.scrub) from None
        if data is None:  # no API answers `null`; and data None means a failed call
            raise RemoteCallError(f"HTTP {response.status_code} with a JSON null body",
                                  status=response.status_code, retryable=True)
        if _error_body(data):  # a gateway's upstream failure wrapped as a 200: retried as
            # one, unless it refuses the request itself (asked again, refused again)
            detail = self.scrub(_error_detail(body))[:300]
            raise RemoteCallError(f"HTTP {response.status_code} with an error body: {detail}",
                                  status=response.status_code,
                                  retryable=not _refused_as_asked(body))
        problem = state["reject"](data) if state["reject"] is not None else None
        if problem is not None:  # a 200 without an answer: retried, its tokens counted
            used = _usage_tokens(data, state["compute_tokens"])
            state["unusable_tokens"] = tuple(a + b for a, b in zip(state["unusable_tokens"], used))
            raise RemoteCallError(problem, status=response.status_code, retryable=True)
        self.limiter.on_success()
        state["latency"] = elapsed
        return data

    async def aclose(self) -> None:
        for pool in self._pools:
            await pool.aclose()


_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>|<h1[^>]*>(.*?)</h1>", re.I | re.S)


def _not_json(response: httpx.Response, body: bytes, scrub) -> RemoteCallError:
    """The failed attempt of a reply whose body is not JSON. An event stream
    (`stream: true` reached the server, or a gateway that always streams) is
    not retried: every attempt would be a paid completion streamed again. An
    HTML page (a proxy's error page sent with 200) is named by its title and
    retried, as anything else that may be transient."""
    status = response.status_code
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    start = body.lstrip()[:512]
    if kind == "text/event-stream" or start.startswith((b"data:", b"event:")):
        return RemoteCallError(
            f"HTTP {status} with an event stream (text/event-stream), not one JSON body: "
            "streamed replies are not read; leave `stream` out of the request options",
            status=status, retryable=False)
    if kind in ("text/html", "application/xhtml+xml") or start.lower().startswith(
            (b"<!doctype html", b"<html")):
        found = _TITLE.search(body[:65536])
        title = b" ".join((found.group(1) or found.group(2)).split()) if found else b""
        title = scrub(title.decode("utf-8", "replace"))[:120]
        return RemoteCallError(f"HTTP {status} with an HTML page, not JSON ({title!r}, "
                               f"{len(body)} bytes: a proxy's error page?)",
                               status=status, retryable=True)
    return RemoteCallError(f"HTTP {status} with a body that is not JSON ({len(body)} bytes)",
                           status=status, retryable=True)


def _json_in_charset(response: httpx.Response, body: bytes, exc: UnicodeDecodeError,
                     scrub) -> Any:
    """The JSON of a body that is not UTF-8: read in the charset its Content-Type
    names (`application/json; charset=iso-8859-1`), else refused without a retry
    (the server sends the same bytes again, each attempt a paid completion). A
    body cut inside a character is a cut body, retried as one."""
    charset = response.charset_encoding
    if charset and charset.replace("_", "-").lower() not in ("utf-8", "utf8"):
        try:
            return json.loads(body.decode(charset))
        except (LookupError, ValueError):
            pass
    if exc.reason == "unexpected end of data":
        raise _not_json(response, body, scrub) from None
    raise RemoteCallError(
        f"HTTP {response.status_code} with a body that is not UTF-8 (byte "
        f"0x{body[exc.start]:02X} at offset {exc.start}) and no other charset in its "
        "Content-Type: not read, not retried", status=response.status_code,
        retryable=False) from None


_ERROR_FIELDS = {"error", "error_type", "code", "message", "status", "object", "type", "param",
                 "id", "created", "model"}


def _error_body(data: Any) -> bool:
    """A JSON object that is an error and nothing else (`{"error": {...}}` or
    `{"error": "..."}`, or vLLM's `{"object": "error", "message": "..."}`; any
    `choices`, `data` or other answer field empty: `{"error": ..., "choices": []}`
    is the server's error, not a reply without choices)."""
    return (isinstance(data, dict)
            and (bool(data.get("error")) or (data.get("object") == "error"
                                             and isinstance(data.get("message"), str)))
            and all(k in _ERROR_FIELDS or v in (None, [], {}, "") for k, v in data.items()))


# what servers say of a prompt longer than the model reads (OpenAI, Azure, vLLM,
# LiteLLM, TGI, Anthropic through gateways; TEI: "`inputs` must have less than 512
# tokens"; llama.cpp: "input is too large to process")
_TOO_LONG = re.compile(r"context[ _-]?length|context[ _-]?window|maximum context|"
                       r"prompt is too long|too many (input )?tokens|input is too (long|large)|"
                       r"must have less than \d+ tokens", re.I)
# error types and codes that blame the request: the same request gets the same answer
_REQUEST_ERRORS = {"invalid_request_error", "badrequesterror", "context_length_exceeded",
                   "authentication_error", "permission_error", "not_found_error"}


def _refused_as_asked(body: bytes) -> bool:
    """An error body that refuses the request as it is (a prompt over the model's
    context, a request error by type, or a 4xx code other than 408, 409, 425 and
    429), which a gateway may send with 200 or a 5xx: asking again is another
    request refused, the whole prompt sent each time."""
    try:
        data = json.loads(body)
    except ValueError:
        return bool(_TOO_LONG.search(body[:4096].decode("utf-8", "replace")))
    error = data.get("error") if isinstance(data, dict) else None
    fields = error if isinstance(error, dict) else data if isinstance(data, dict) else {}
    kinds = {str(fields.get(k, "")).lower() for k in ("type", "code", "error_type")}
    codes = [fields.get(k) for k in ("code", "status")]
    client_code = any(type(c) is int and 400 <= c < 500 and c not in TRANSIENT_4XX
                      for c in codes)
    return bool(kinds & _REQUEST_ERRORS) or client_code or bool(
        _TOO_LONG.search(_error_detail(body)))


def refused_as_too_long(rec: CallRecord) -> bool:
    """A sent call the server refused because an input is longer than the model
    reads (never retried: the same input is refused again). For a batch of
    inputs (embeddings), only a smaller batch without that input can succeed."""
    return (not rec.ok and rec.sent and not rec.budget_refused
            and bool(_TOO_LONG.search(rec.error or "")))


def _error_detail(body: bytes) -> str:
    """The server's error message (OpenAI shape or plain text), whole: it is
    scrubbed before it is shortened, so no prefix of a secret survives a cut."""
    try:
        data = json.loads(body)
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            return str(data["error"].get("message", ""))
        if isinstance(data, dict) and isinstance(data.get("error"), str):  # TEI
            return data["error"]
        if isinstance(data, dict) and isinstance(data.get("message"), str):  # vLLM
            return data["message"]
        return json.dumps(data, ensure_ascii=False)
    except ValueError:
        return body.decode("utf-8", "replace")
