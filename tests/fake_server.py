"""A small OpenAI-compatible HTTP server for tests and benchmarks (standard library only).

It listens on 127.0.0.1 only, and has knobs for latency, rate limits and injected
faults; it counts and records what it received.

In a test::

    with FakeOpenAI(ServerConfig(latency_s=0.05)) as server:
        httpx.post(server.base_url + "/v1/chat/completions", json={...})
        assert server.stats()["by_path"]["/v1/chat/completions"] == 1

As a subprocess (benchmarks)::

    python -m tests.fake_server --port 0 --latency 0.2 --rate-limit 50 --fault-rate 0.2

prints one line ``READY http://127.0.0.1:PORT`` on stdout once listening, then serves
until SIGTERM/SIGINT. Steer and read it over HTTP: ``GET /_admin/stats``,
``GET /_admin/config``, ``POST /_admin/config`` (JSON knob changes),
``POST /_admin/reset``, ``GET /_admin/requests?limit=N``.

Routes: ``POST /v1/chat/completions``, ``POST /v1/embeddings``, ``GET /v1/models``,
Azure ``POST /openai/deployments/{deployment}/(chat/completions|embeddings)?api-version=...``
and a plain JSON assistant ``POST /assistant``.

It also speaks Hugging Face text-embeddings-inference (TEI) for a
sequence-classification model, as documented in TEI's OpenAPI description:
``POST /predict`` ({"inputs": a pair [a, b], or a batch [[a, b], ...],
"truncate", "raw_scores"} -> one list of {"label", "score"} per input, best
first; softmax over the labels unless raw_scores, a sigmoid for a one-label
model; header x-compute-tokens), ``GET /info`` (model_type.classifier.id2label,
max_client_batch_size, max_input_length), ``GET /health``; its errors are
{"error": message, "error_type": ...}: a batch over ``tei_max_batch`` pairs is
refused with ``tei_batch_status`` (422 as the server does, 413 as its API
description says: "batch size N > maximum allowed batch size M"), a pair over
``tei_max_input_tokens`` tokens without truncate is 422, an empty batch 400,
a failing predict handler 424. And vLLM's ``POST /score`` / ``/v1/score``
({"model", "text_1", "text_2"} -> {"data": [{"index", "score"}], "usage"}).
Labels come from a predict handler (``set_predict_handler``: (premise,
hypothesis) -> one logit per label) or, by default, from word overlap.

Any route can answer with bytes of a test's choosing: ``set_raw_handler``
(route, request JSON) -> a ``RawReply`` (body, status, Content-Type, headers)
sent as it is, or None for the usual answer: a body that is not JSON or not
UTF-8, an event stream, thinking in the content, a prediction of the wrong shape.

Order of checks for a non-admin request: record it -> auth (401) -> route/validation
(404/405/400) -> rate limit (429) -> block_containing (403) -> context_window -> status_override -> fault
-> latency -> answer.
401/400/404/405/429 answers come back at once; latency applies to everything else
(status_override answers and the 500/503/drop/malformed/truncated faults included);
a "timeout" fault sleeps timeout_sleep_s instead of the latency.
"""
from __future__ import annotations

import argparse
import base64
import dataclasses
import email.utils
import hashlib
import json
import math
import random
import re
import signal
import socket
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, quote, urlsplit

HOST = "127.0.0.1"
FAULT_KINDS = ("500", "503", "timeout", "drop", "malformed", "truncated")
# Hostile 200 replies (chat; the /assistant route where they make sense):
#   lone_surrogate   content with half an emoji ("\ud83d" in the JSON)
#   numeric_content  "content": 42            null_content  "content": null
#   empty_choices    "choices": []            missing_message  a choice without "message"
#   refusal          "content": null, "refusal": "I can't help with that."
#   huge_body        content of huge_body_bytes characters
#   echo_secrets     the credentials received (Authorization, api-key, x-* headers),
#                    raw, upper-case, base64, URL-encoded, JSON-escaped and hex, in the
#                    content and in reasoning_content
HOSTILE_KINDS = ("lone_surrogate", "numeric_content", "null_content", "empty_choices",
                 "missing_message", "refusal", "huge_body", "echo_secrets")
DEFAULT_MODEL = "fake-model"
REQUEST_ID_HEADER = "x-client-request-id"

_AZURE_RE = re.compile(r"^/openai/deployments/([^/]+)/(chat/completions|embeddings)$")
_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    408: ("timeout_error", None),
    409: ("conflict_error", None),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    502: ("server_error", None),
    503: ("server_error", "overloaded"),
    504: ("server_error", None),
}


@dataclass
class ServerConfig:
    latency_s: float = 0.0            # fixed added latency per request
    latency_jitter_s: float = 0.0     # + uniform random [0, jitter]
    rate_limit_rps: float | None = None  # token bucket, capacity max(1, rps); over it -> 429
    retry_after_s: float | None = 1.0  # Retry-After on 429 (and 503); None: omit the header
    retry_after_http_date: bool = False  # send Retry-After as an HTTP-date instead of seconds
    # a rate-limited 429 also says, as OpenAI does, x-ratelimit-remaining-requests: 0 and
    # x-ratelimit-reset-requests: this many seconds as a Go duration ("1.5s"); None: not
    ratelimit_reset_s: float | None = None
    fault_rate: float = 0.0           # probability that a request gets a fault (never /_admin)
    faults: tuple[str, ...] = FAULT_KINDS  # chosen uniformly among these
    timeout_sleep_s: float = 5.0      # how long a "timeout" fault sleeps before answering
    status_override: int | None = None  # answer every request with this status + error JSON
    block_containing: str | None = None  # a request whose body has this text: 403, as a guardrail
    seed: int | None = 0
    echo_auth_in_errors: bool = False  # put the received Authorization/api-key into error bodies
    embedding_dim: int = 16
    hostile: str | None = None        # one of HOSTILE_KINDS: a hostile 200 reply
    hostile_every: int = 1            # ... to every Nth chat / assistant request (1: all)
    huge_body_bytes: int = 9 * 1024 * 1024  # size of a huge_body reply's content
    record_requests: bool = True      # keep RecordedRequest objects (switch off for long benchmarks)
    omit_usage: bool = False          # chat and embeddings replies without `usage` (vLLM, proxies)
    # a chat request whose prompt tokens (words x 1.3) + max_tokens exceed this is refused
    # as OpenAI does (code context_length_exceeded), with context_window_status: 400,
    # or 200 / 500 as gateways that wrap the upstream's error send it; so is an embeddings
    # request one of whose inputs is longer (the whole batch), as OpenAI does with 400 and
    # TEI's /v1/embeddings with 413 (422: a TEI behind a proxy), in TEI's OpenAI shape
    context_window: int | None = None
    context_window_status: int = 400
    # an embeddings request of more inputs is refused as TEI's /v1/embeddings does
    # (--max-client-batch-size): 413 "batch size N > maximum allowed batch size M"
    embedding_max_batch: int | None = None
    # TEI classifier (/predict, /info) and vLLM /score
    tei_labels: tuple[str, ...] = ("CONTRADICTION", "NEUTRAL", "ENTAILMENT")  # id2label order
    tei_max_batch: int = 32           # --max-client-batch-size
    tei_batch_status: int = 422       # status of an oversized batch (413 in TEI's API docs)
    tei_max_input_tokens: int = 512   # a longer pair without truncate: 422

    def validated(self) -> "ServerConfig":
        self.faults = tuple(str(f) for f in self.faults)
        unknown = [f for f in self.faults if f not in FAULT_KINDS]
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; known: {FAULT_KINDS}")
        if self.fault_rate > 0 and not self.faults:
            raise ValueError("fault_rate > 0 needs at least one fault kind")
        if not 0.0 <= self.fault_rate <= 1.0:
            raise ValueError("fault_rate must be within [0, 1]")
        if self.rate_limit_rps is not None and self.rate_limit_rps <= 0:
            raise ValueError("rate_limit_rps must be > 0 (or None for no limit)")
        if self.latency_s < 0 or self.latency_jitter_s < 0 or self.timeout_sleep_s < 0:
            raise ValueError("latencies must be >= 0")
        if self.embedding_dim < 1:
            raise ValueError("embedding_dim must be >= 1")
        if self.hostile is not None and self.hostile not in HOSTILE_KINDS:
            raise ValueError(f"unknown hostile kind {self.hostile!r}; known: {HOSTILE_KINDS}")
        if self.hostile_every < 1:
            raise ValueError("hostile_every must be >= 1")
        self.tei_labels = tuple(str(x) for x in self.tei_labels)
        if not self.tei_labels or self.tei_max_batch < 1 or self.tei_max_input_tokens < 1:
            raise ValueError("tei_labels, tei_max_batch and tei_max_input_tokens must be set")
        if self.tei_batch_status not in (413, 422):
            raise ValueError("tei_batch_status must be 413 or 422")
        return self


@dataclass(frozen=True)
class RawReply:
    """A reply sent byte for byte (set_raw_handler): what no well-behaved server
    sends, e.g. a body that is not JSON or not UTF-8, an event stream, a 200
    with a Retry-After."""
    body: bytes
    status: int = 200
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class RecordedRequest:
    path: str                         # without the query string
    method: str
    headers: dict[str, str]           # header names lower-cased
    json: Any                         # parsed body, or None if absent / not JSON
    raw: bytes                        # the raw body
    ts: float                         # time.time() when received
    query: str = ""
    request_id: str | None = None     # X-Client-Request-Id
    status: int | None = None         # status answered (None: connection dropped)
    fault: str | None = None          # fault applied, if any ("429" for rate limited)
    counted: bool = False             # its status is already in the stats

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["raw"] = self.raw.decode("utf-8", "replace")
        return d


# ----------------------------------------------------------------------------- helpers

def _words(text: str) -> int:
    return len(text.split())


def _tokens(text: str) -> int:
    return int(math.ceil(_words(text) * 1.3))


def _content_text(content: Any) -> str:
    """Message content as text: a string, or a list of parts ({"type": "text", "text": ...})."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return " ".join(parts)
    return str(content)


def embed_text(text: str, dim: int) -> list[float]:
    """Deterministic unit vector for a text (sha256-seeded)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    rng = random.Random(seed)
    vec = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


def echo_forms(values: list[str]) -> str:
    """Each value raw, upper-case, base64, URL-encoded (once and twice),
    JSON-escaped (every character as \\uXXXX), in hex and as HTML entities
    (&#NNN;, &#xHH;): what a hostile server does with credentials."""
    forms = []
    for v in values:
        forms += [v, v.upper(), base64.b64encode(v.encode()).decode(), quote(v, safe=""),
                  quote(quote(v, safe=""), safe=""), "".join(f"%25{b:02X}" for b in v.encode()),
                  "".join(f"\\u{ord(c):04x}" for c in v), v.encode().hex(),
                  "".join(f"&#{ord(c)};" for c in v), "".join(f"&#x{ord(c):x};" for c in v)]
    return " | ".join(forms)


def _credentials(headers: dict[str, str]) -> list[str]:
    got = []
    for name, value in headers.items():
        if name in ("authorization", "api-key") or (name.startswith("x-") and
                                                      name != REQUEST_ID_HEADER):
            got += [value] + ([value.split(" ", 1)[1]] if value.startswith("Bearer ") else [])
    return got


def _hostile(cfg: ServerConfig, route: str, payload: dict, headers: dict[str, str]) -> dict:
    """The normal answer payload, made hostile (see HOSTILE_KINDS)."""
    kind = cfg.hostile
    content: Any = {"lone_surrogate": "Thirty days \ud83d for refunds.", "numeric_content": 42,
                    "null_content": None, "refusal": None,
                    "huge_body": "x" * cfg.huge_body_bytes,
                    "echo_secrets": "You sent: " + echo_forms(_credentials(headers))}.get(kind)
    if route == "assistant":
        data = dict(payload["data"])
        if kind in ("empty_choices", "missing_message"):
            data.pop("answer", None)
        else:
            data["answer"] = content
        return {**payload, "data": data}
    payload = json.loads(json.dumps(payload))
    if kind == "empty_choices":
        payload["choices"] = []
    elif kind == "missing_message":
        for choice in payload["choices"]:
            choice.pop("message")
    else:
        for choice in payload["choices"]:
            choice["message"]["content"] = content
            if kind == "refusal":
                choice["message"]["refusal"] = "I can't help with that."
            if kind == "echo_secrets":
                choice["message"]["reasoning_content"] = content
    return payload


def _error_body(status: int, message: str, shape: str = "openai") -> dict:
    if shape == "tei":  # text-embeddings-inference's ErrorResponse
        kind = {400: "empty", 424: "backend", 429: "overloaded", 503: "unhealthy"}.get(
            status, "validation" if status in (413, 422) else "backend")
        return {"error": message, "error_type": kind}
    etype, code = _ERROR_TYPES.get(status, ("server_error" if status >= 500 else
                                            "invalid_request_error", None))
    if shape == "vllm":  # vLLM's ErrorResponse
        return {"object": "error", "message": message, "type": etype, "param": None,
                "code": status}
    return {"error": {"message": message, "type": etype, "param": None, "code": code}}


def _over_context(cfg: ServerConfig, route: str | None, data: Any) -> dict | None:
    """The error body for a chat request, or an embeddings input, longer than
    cfg.context_window, else None."""
    if route == "embeddings" and isinstance(data, dict):
        return _embedding_refused(cfg, data.get("input"))
    if cfg.context_window is None or route != "chat" or not isinstance(data, dict) \
            or not isinstance(data.get("messages"), list):
        return None
    prompt = sum(_tokens(_content_text(m.get("content"))) for m in data["messages"]
                 if isinstance(m, dict))
    completion = data.get("max_tokens") if isinstance(data.get("max_tokens"), int) else 0
    if prompt + completion <= cfg.context_window:
        return None
    return {"error": {
        "message": f"This model's maximum context length is {cfg.context_window} tokens. "
                   f"However, you requested {prompt + completion} tokens ({prompt} in the "
                   f"messages, {completion} in the completion). Please reduce the length of "
                   "the messages or completion.",
        "type": "invalid_request_error", "param": "messages",
        "code": "context_length_exceeded"}}


def _embedding_refused(cfg: ServerConfig, inputs: Any) -> dict | None:
    """A batch of more than cfg.embedding_max_batch inputs (TEI's 413), or with
    an input over cfg.context_window tokens, fails whole: OpenAI's 400, or
    TEI's 413/422 {"message", "code", "type": "validation"}."""
    texts = [inputs] if isinstance(inputs, str) else inputs if isinstance(inputs, list) else []
    if cfg.embedding_max_batch is not None and len(texts) > cfg.embedding_max_batch:
        return {"message": f"batch size {len(texts)} > maximum allowed batch size "
                           f"{cfg.embedding_max_batch}", "code": 413, "type": "validation"}
    longest = max((_tokens(t) for t in texts if isinstance(t, str)), default=0)
    if cfg.context_window is None or longest <= cfg.context_window:
        return None
    if cfg.context_window_status in (413, 422):
        return {"message": f"Input validation error: `inputs` must have less than "
                           f"{cfg.context_window} tokens. Given: {longest}",
                "code": cfg.context_window_status, "type": "validation"}
    return {"error": {
        "message": f"This model's maximum context length is {cfg.context_window} tokens, "
                   f"however you requested {longest} tokens ({longest} in your prompt; 0 for "
                   "the completion). Please reduce your prompt; or completion length.",
        "type": "invalid_request_error", "param": None, "code": None}}


_WORD = re.compile(r"[^\W_]+")


def overlap_logits(premise: str, hypothesis: str, labels: tuple[str, ...]) -> list[float]:
    """The default classifier: the share of the hypothesis' words (of 3+ letters)
    found in the premise drives entailment; a number the premise lacks drives
    contradiction. One logit per label, matched by name."""
    words = {w.lower() for w in _WORD.findall(hypothesis) if len(w) > 2 or w.isdigit()}
    known = {w.lower() for w in _WORD.findall(premise)}
    share = len(words & known) / len(words) if words else 0.0
    numbers = {w for w in words if w.isdigit()}
    contra = 3.0 if numbers - known else -3.0
    by_kind = {"entail": 6.0 * share - 3.0, "contradict": contra, "neutral": 0.0}
    if len(labels) == 1:
        return [by_kind["entail"]]
    return [next((v for k, v in by_kind.items() if k in label.lower()), 0.0) for label in labels]


def _softmax(logits: list[float]) -> list[float]:
    if len(logits) == 1:
        return [1.0 / (1.0 + math.exp(-logits[0]))]
    top = max(logits)
    exps = [math.exp(x - top) for x in logits]
    total = sum(exps)
    return [e / total for e in exps]


class _TokenBucket:
    def __init__(self, rps: float | None):
        self.rps = rps
        self.capacity = max(1.0, rps) if rps else 0.0
        self.tokens = self.capacity
        self.last = time.monotonic()

    def take(self) -> tuple[bool, int]:
        """(allowed, remaining whole tokens)."""
        if not self.rps:
            return True, -1
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rps)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True, int(self.tokens)
        return False, 0


class _Stats:
    def __init__(self) -> None:
        self.total = 0
        self.by_path: Counter = Counter()
        self.by_status: Counter = Counter()
        self.by_fault: Counter = Counter()
        self.rate_limited = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.connections = 0
        self.attempts_by_request_id: Counter = Counter()
        self.first_ts: float | None = None
        self.last_ts: float | None = None

    def as_dict(self) -> dict:
        attempts = dict(self.attempts_by_request_id)
        span = (self.last_ts - self.first_ts) if self.first_ts is not None else 0.0
        return {
            "total": self.total,
            "by_path": dict(self.by_path),
            "by_status": dict(self.by_status),
            "by_fault": dict(self.by_fault),
            "rate_limited": self.rate_limited,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "connections": self.connections,
            "attempts_by_request_id": attempts,
            "max_attempts_per_request_id": max(attempts.values(), default=0),
            "first_ts": self.first_ts,
            "last_ts": self.last_ts,
            "achieved_rps": (self.total - 1) / span if span > 0 else None,
        }


# ----------------------------------------------------------------------------- HTTP layer

class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024
    fake: "FakeOpenAI"

    def handle_error(self, request, client_address) -> None:  # quiet for client hang-ups
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
            return
        super().handle_error(request, client_address)


class _Drop(Exception):
    """Close the connection without answering."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeOpenAI/1.0"
    sys_version = ""
    timeout = 120  # idle keep-alive connections are closed after this

    server: _HTTPServer

    # -- plumbing
    def setup(self) -> None:
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        self.server.fake._conn_opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.fake._conn_closed(self.connection)

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (ConnectionError, TimeoutError, OSError):
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # silence per-request lines
        pass

    def do_GET(self) -> None:
        self.server.fake._dispatch(self)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_GET

    def read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def send_raw(self, status: int, body: bytes, headers: dict[str, str] | None = None,
                 content_type: str = "application/json",
                 content_length: int | None = None) -> None:
        """Status line, headers and body in one write (no Nagle/delayed-ACK stalls)."""
        reason = self.responses.get(status, ("",))[0]
        lines = [f"HTTP/1.1 {status} {reason}",
                 f"Server: {self.server_version}",
                 f"Date: {self.date_time_string()}",
                 f"Content-Type: {content_type}",
                 f"Content-Length: {len(body) if content_length is None else content_length}"]
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        if self.close_connection:
            lines.append("Connection: close")
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        self.wfile.flush()


# ----------------------------------------------------------------------------- the server

class FakeOpenAI:
    """OpenAI-compatible fake server on 127.0.0.1 (a ThreadingHTTPServer in a daemon thread)."""

    def __init__(self, config: ServerConfig | None = None, port: int = 0,
                 api_key: str | None = None):
        self._lock = threading.Lock()
        self._config = dataclasses.replace(config or ServerConfig()).validated()
        self._api_key = api_key
        self._rng = random.Random(self._config.seed)
        self._bucket = _TokenBucket(self._config.rate_limit_rps)
        self._stats = _Stats()
        self._answered = 0  # chat / assistant answers so far (for hostile_every)
        self._conns: set[socket.socket] = set()
        self._chat_handler: Callable[[dict], str | dict] | None = None
        self._assistant_handler: Callable[[dict], str | dict] | None = None
        self._predict_handler: Callable[[str, str], list[float]] | None = None
        self._raw_handler: Callable[[str, Any], RawReply | None] | None = None
        self._port = port
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.requests: list[RecordedRequest] = []

    # -- lifecycle
    def start(self) -> "FakeOpenAI":
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _HTTPServer((HOST, self._port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"fake-openai-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()  # wakes latency / timeout sleeps
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # unblock handler threads waiting on idle keep-alive connections
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    # -- knobs
    @property
    def config(self) -> ServerConfig:
        return self._config

    def configure(self, **changes: Any) -> None:
        """Update knobs at run time (any ServerConfig field, plus api_key)."""
        with self._lock:
            if "api_key" in changes:
                self._api_key = changes.pop("api_key")
            names = {f.name for f in dataclasses.fields(ServerConfig)}
            unknown = sorted(set(changes) - names)
            if unknown:
                raise ValueError(f"unknown config keys {unknown}")
            if "faults" in changes:
                faults = changes["faults"]
                changes["faults"] = tuple(faults.split(",")) if isinstance(faults, str) else tuple(faults)
            new = dataclasses.replace(self._config, **changes).validated()
            if "seed" in changes:
                self._rng = random.Random(new.seed)
            if "rate_limit_rps" in changes:
                self._bucket = _TokenBucket(new.rate_limit_rps)
            self._config = new

    def set_chat_handler(self, fn: Callable[[dict], str | dict] | None) -> None:
        """fn(request_json) -> assistant content str; or a dict with "choices" (the whole
        response, sent as is); or a dict of message fields (e.g. content, reasoning_content,
        tool_calls; optional "finish_reason" and "usage") merged into the default message."""
        self._chat_handler = fn

    def set_predict_handler(self, fn: Callable[[str, str], list[float]] | None) -> None:
        """For /predict and /score: fn(premise, hypothesis) -> one logit per label
        (tei_labels order); raising makes the request a 424 (TEI's backend error)."""
        self._predict_handler = fn

    def set_raw_handler(self, fn: Callable[[str, Any], "RawReply | None"] | None) -> None:
        """fn(route, request_json) -> a RawReply sent as it is, or None for the usual
        answer; route is chat, embeddings, predict, score, assistant, info, ...
        (after auth, rate limit and faults, as an answer)."""
        self._raw_handler = fn

    def set_assistant_handler(self, fn: Callable[[dict], str | dict] | None) -> None:
        """For POST /assistant: fn(request_json) -> answer str, or a dict used as "data"."""
        self._assistant_handler = fn

    # -- counts
    def stats(self) -> dict:
        with self._lock:
            return self._stats.as_dict()

    def recorded(self) -> list[RecordedRequest]:
        """A snapshot of the recorded requests, safe while requests still arrive."""
        with self._lock:
            return list(self.requests)

    def reset_stats(self) -> None:
        """Zero the counts and clear the recorded requests (the rate-limit bucket is kept)."""
        with self._lock:
            in_flight = self._stats.in_flight
            self._stats = _Stats()
            self._stats.in_flight = in_flight
            self.requests = []

    def _conn_opened(self, conn: socket.socket) -> None:
        with self._lock:
            self._conns.add(conn)
            self._stats.connections += 1

    def _conn_closed(self, conn: socket.socket) -> None:
        with self._lock:
            self._conns.discard(conn)

    # -- request handling
    def _dispatch(self, h: _Handler) -> None:
        parts = urlsplit(h.path)
        path, query = parts.path, parts.query
        body = h.read_body()
        if path.startswith("/_admin"):
            self._admin(h, path, query, body)
            return
        cfg = self._config
        started = time.time()
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = None
        headers = {k.lower(): v for k, v in h.headers.items()}
        rid = headers.get(REQUEST_ID_HEADER)
        rec = RecordedRequest(path=path, method=h.command, headers=headers, json=data, raw=body,
                              ts=started, query=query, request_id=rid)
        with self._lock:
            st = self._stats
            st.total += 1
            st.by_path[path] += 1
            if rid is not None:
                st.attempts_by_request_id[rid] += 1
            if st.first_ts is None:
                st.first_ts = started
            st.last_ts = started
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
            if cfg.record_requests:
                self.requests.append(rec)
        tag: str | None = None
        try:
            tag = self._handle(h, cfg, rec, path, query, body, data, headers, started)
        except _Drop:
            tag = "drop"
            h.close_connection = True
        except (ConnectionError, TimeoutError, OSError):
            h.close_connection = True
            raise
        finally:
            with self._lock:
                self._stats.in_flight -= 1
            if tag is None and rec.fault == "timeout":
                tag = "timeout"  # the write may have failed: the client gave up
            if tag is not None:
                if rec.counted:  # counted as a clean status, but it was a fault
                    self._uncount_status(str(rec.status), rec.status)
                self._count_status(tag, None)
            elif not rec.counted:
                self._count_status(str(rec.status), rec.status)

    def _count_status(self, key: str, status: int | None) -> None:
        with self._lock:
            self._stats.by_status[key] += 1
            if status == 429:
                self._stats.rate_limited += 1

    def _uncount_status(self, key: str, status: int | None) -> None:
        with self._lock:
            self._stats.by_status[key] -= 1
            if not self._stats.by_status[key]:
                del self._stats.by_status[key]
            if status == 429:
                self._stats.rate_limited -= 1

    def _handle(self, h: _Handler, cfg: ServerConfig, rec: RecordedRequest, path: str,
                query: str, body: bytes, data: Any, headers: dict, started: float) -> str | None:
        """Answer one non-admin request; returns a status tag for the stats, if not the code."""

        def reply(status: int, payload: Any, extra: dict | None = None) -> None:
            rec.status = status
            self._count_status(str(status), status)  # before the bytes go out: no race
            rec.counted = True
            h.send_raw(status, json.dumps(payload).encode(), extra)

        # route
        azure = _AZURE_RE.match(path)
        if azure:
            route, deployment = azure.group(2), azure.group(1)
            route = "chat" if route == "chat/completions" else "embeddings"
        else:
            deployment = None
            route = {"/v1/chat/completions": "chat", "/v1/embeddings": "embeddings",
                     "/v1/models": "models", "/assistant": "assistant", "/predict": "predict",
                     "/info": "info", "/health": "health", "/score": "score",
                     "/v1/score": "score"}.get(path)
        shape = {"predict": "tei", "info": "tei", "health": "tei", "score": "vllm"}.get(
            route or "", "openai")

        def error(status: int, message: str, extra: dict | None = None) -> None:
            if cfg.echo_auth_in_errors:
                got = [headers[k] for k in ("authorization", "api-key") if k in headers]
                message += f" (received credentials: {', '.join(got) or 'none'}; as echoed " \
                           f"by a hostile server: {echo_forms(_credentials(headers))})"
            reply(status, _error_body(status, message, shape), extra)

        # auth
        key = self._api_key
        if key is not None:
            ok = headers.get("authorization", "") == f"Bearer {key}"
            if azure and headers.get("api-key") == key:
                ok = True
            if not ok:
                error(401, "Incorrect API key provided." if ("authorization" in headers or
                                                             "api-key" in headers)
                      else "You didn't provide an API key.")
                return None

        # validation
        if route is None:
            error(404, f"Unknown route {h.command} {path}")
            return None
        want = "GET" if route in ("models", "info", "health") else "POST"
        if h.command != want:
            error(405, f"{h.command} not allowed on {path}", {"Allow": want})
            return None
        if azure and not parse_qs(query).get("api-version"):
            error(400, "Missing required query parameter 'api-version'.")
            return None

        # rate limit
        with self._lock:
            allowed, remaining = self._bucket.take()
            fault = None
            if allowed and cfg.fault_rate > 0 and self._rng.random() < cfg.fault_rate:
                fault = self._rng.choice(cfg.faults)
                self._stats.by_fault[fault] += 1  # counted when decided, not when answered
            jitter = self._rng.uniform(0, cfg.latency_jitter_s) if cfg.latency_jitter_s else 0.0
        rl_headers = {"x-ratelimit-limit-requests": str(int(max(1, cfg.rate_limit_rps))),
                      "x-ratelimit-remaining-requests": str(remaining)} if cfg.rate_limit_rps else {}
        if not allowed:
            rec.fault = "429"
            reset = ({"x-ratelimit-reset-requests": f"{cfg.ratelimit_reset_s:g}s"}
                     if cfg.ratelimit_reset_s is not None else {})
            error(429, "Rate limit reached for requests. Please retry later.",
                  {**self._retry_after(cfg), **rl_headers, **reset})
            return None

        # status override and faults
        latency = cfg.latency_s + jitter
        tag: str | None = None  # by_status tag when not the status code
        if cfg.block_containing is not None and cfg.block_containing.encode() in rec.raw:
            self._sleep(latency)
            error(403, "Request blocked by content policy.", rl_headers)
            return None
        too_long = _over_context(cfg, route, data)
        if too_long is not None:
            self._sleep(latency)
            code = too_long.get("code")  # TEI's body says its status
            reply(code if isinstance(code, int) else cfg.context_window_status, too_long,
                  rl_headers)
            return None
        if cfg.status_override is not None:
            self._sleep(latency)
            extra = self._retry_after(cfg) if cfg.status_override in (429, 503) else {}
            error(cfg.status_override, f"Injected status {cfg.status_override}.",
                  {**extra, **rl_headers})
            return None
        if fault is not None:
            rec.fault = fault
            if fault == "timeout":
                self._sleep(cfg.timeout_sleep_s)
                tag = "timeout"
            else:
                self._sleep(latency)
                if fault == "drop":
                    raise _Drop()
                if fault == "500":
                    error(500, "The server had an error while processing your request.")
                    return None
                if fault == "503":
                    error(503, "The engine is currently overloaded, please try again later.",
                          self._retry_after(cfg))
                    return None
                if fault == "malformed":
                    rec.status = 200
                    h.send_raw(200, b'{"choices": [', rl_headers)
                    return "malformed"
                if fault == "truncated":
                    rec.status = 200
                    full = json.dumps(self._answer(route, cfg, data, deployment, started)[1]).encode()
                    h.close_connection = True
                    h.send_raw(200, full[: len(full) // 2], rl_headers,
                               content_length=len(full) + 64)
                    return "truncated"
        else:
            self._sleep(latency)

        raw = self._raw_handler(route, data) if self._raw_handler is not None else None
        if raw is not None:
            rec.status = raw.status
            self._count_status(str(raw.status), raw.status)
            rec.counted = True
            h.send_raw(raw.status, raw.body, dict(raw.headers), raw.content_type)
            return tag
        status, payload, *more = self._answer(route, cfg, data, deployment, started)
        if status == 200 and route in ("chat", "assistant") and self._hostile_turn(cfg):
            payload = _hostile(cfg, route, payload, headers)
        if status != 200:
            error(status, payload)
            return tag
        reply(200, payload, {"x-request-id": f"req_{uuid.uuid4().hex[:24]}", **rl_headers,
                             **(more[0] if more else {})})
        return tag

    def _hostile_turn(self, cfg: ServerConfig) -> bool:
        if cfg.hostile is None:
            return False
        with self._lock:
            self._answered += 1
            return self._answered % cfg.hostile_every == 0

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    @staticmethod
    def _retry_after(cfg: ServerConfig) -> dict[str, str]:
        if cfg.retry_after_s is None:
            return {}
        if cfg.retry_after_http_date:
            return {"Retry-After": email.utils.formatdate(
                math.ceil(time.time() + cfg.retry_after_s), usegmt=True)}
        s = cfg.retry_after_s
        return {"Retry-After": str(int(s)) if float(s).is_integer() else f"{s:g}"}

    # -- answers: (200, payload) or (error status, message)
    def _answer(self, route: str, cfg: ServerConfig, data: Any, deployment: str | None,
                started: float) -> tuple[int, Any]:
        if route == "models":
            return 200, {"object": "list", "data": [
                {"id": DEFAULT_MODEL, "object": "model", "created": 0, "owned_by": "fake"},
                {"id": "fake-embedding", "object": "model", "created": 0, "owned_by": "fake"}]}
        if route == "assistant":
            return self._assistant(data, started)
        if route == "health":
            return 200, {}
        if route == "info":
            return 200, self._info(cfg)
        if route == "predict":
            return self._predict(cfg, data)
        if route == "score":
            return self._score(cfg, data)
        if not isinstance(data, dict):
            return 400, "We could not parse the JSON body of your request."
        model = deployment or data.get("model") or DEFAULT_MODEL
        status, reply = (self._chat(data, model) if route == "chat"
                         else self._embeddings(cfg, data, model))
        if cfg.omit_usage and status == 200 and isinstance(reply, dict):
            reply = {k: v for k, v in reply.items() if k != "usage"}
        return status, reply

    def _chat(self, data: dict, model: str) -> tuple[int, Any]:
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            return 400, "'messages' is a required property and must be a non-empty list."
        texts = [_content_text(m.get("content")) for m in messages if isinstance(m, dict)]
        user = [_content_text(m.get("content")) for m in messages
                if isinstance(m, dict) and m.get("role") == "user"]
        prompt_tokens = sum(_tokens(t) for t in texts)
        message: dict[str, Any] = {"role": "assistant",
                                   "content": "Echo: " + (user[-1][:200] if user else "")}
        finish_reason, usage = "stop", None
        handler = self._chat_handler
        if handler is not None:
            try:
                out = handler(data)
            except Exception as exc:  # a scripted handler failing -> 500
                return 500, f"chat handler failed: {exc!r}"
            if isinstance(out, dict) and "choices" in out:
                return 200, out
            if isinstance(out, dict):
                out = dict(out)
                finish_reason = out.pop("finish_reason", finish_reason)
                usage = out.pop("usage", None)
                message.update(out)
            else:
                message["content"] = "" if out is None else str(out)
        try:
            n = max(1, int(data.get("n") or 1))
        except (TypeError, ValueError):
            return 400, "'n' must be an integer."
        completion_tokens = _tokens(_content_text(message.get("content"))) * n
        return 200, {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": i, "message": dict(message), "finish_reason": finish_reason}
                        for i in range(n)],
            "usage": usage or {"prompt_tokens": prompt_tokens,
                               "completion_tokens": completion_tokens,
                               "total_tokens": prompt_tokens + completion_tokens},
        }

    def _embeddings(self, cfg: ServerConfig, data: dict, model: str) -> tuple[int, Any]:
        inp = data.get("input")
        if isinstance(inp, str):
            inputs = [inp]
        elif isinstance(inp, list) and inp and all(isinstance(x, int) for x in inp):
            inputs = [" ".join(map(str, inp))]  # one pre-tokenised input
        elif isinstance(inp, list) and inp:
            inputs = [x if isinstance(x, str) else json.dumps(x) for x in inp]
        else:
            return 400, "'input' must be a string or a non-empty list."
        dim = data.get("dimensions") or cfg.embedding_dim
        if not isinstance(dim, int) or dim < 1:
            return 400, "'dimensions' must be a positive integer."
        tokens = sum(_tokens(t) for t in inputs)
        return 200, {
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": embed_text(t, dim)}
                     for i, t in enumerate(inputs)],
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    # -- TEI /predict, /info and vLLM /score
    @staticmethod
    def _info(cfg: ServerConfig) -> dict:
        labels = cfg.tei_labels
        return {"model_id": "fake/nli-classifier", "model_sha": None, "model_dtype": "float32",
                "model_type": {"classifier": {
                    "id2label": {str(i): name for i, name in enumerate(labels)},
                    "label2id": {name: i for i, name in enumerate(labels)}}},
                "max_concurrent_requests": 512, "max_input_length": cfg.tei_max_input_tokens,
                "max_batch_tokens": 16384, "max_client_batch_size": cfg.tei_max_batch,
                "auto_truncate": False, "tokenization_workers": 1, "version": "fake"}

    def _logits(self, premise: str, hypothesis: str, labels: tuple[str, ...]) -> list[float]:
        handler = self._predict_handler
        logits = handler(premise, hypothesis) if handler else overlap_logits(premise,
                                                                             hypothesis, labels)
        if len(logits) != len(labels):
            raise ValueError(f"{len(logits)} logits for {len(labels)} labels")
        return [float(x) for x in logits]

    def _predict(self, cfg: ServerConfig, data: Any) -> tuple:
        inputs = data.get("inputs") if isinstance(data, dict) else None
        single = isinstance(inputs, str) or (isinstance(inputs, list) and bool(inputs)
                                             and all(isinstance(x, str) for x in inputs))
        batch = [inputs] if single else inputs
        if isinstance(batch, list) and not batch:
            return 400, "Batch is empty"
        if not isinstance(batch, list) or not all(
                (isinstance(x, str) and single) or (isinstance(x, list) and 1 <= len(x) <= 2
                                                    and all(isinstance(t, str) for t in x))
                for x in batch):
            return 422, ("Failed to deserialize the JSON body into the target type: inputs: "
                         "expected a string, a pair of strings [string, string] or a batch of "
                         "mixed strings and pairs [[string], [string, string], ...]")
        if len(batch) > cfg.tei_max_batch:
            return cfg.tei_batch_status, (f"batch size {len(batch)} > maximum allowed batch "
                                          f"size {cfg.tei_max_batch}")
        pairs = [[x] if isinstance(x, str) else x for x in batch]
        truncate = bool(data.get("truncate")) if isinstance(data, dict) else False
        tokens = [sum(_tokens(t) for t in p) + 1 + len(p) for p in pairs]
        if not truncate and max(tokens) > cfg.tei_max_input_tokens:
            return 422, (f"Input validation error: `inputs` must have less than "
                         f"{cfg.tei_max_input_tokens} tokens. Given: {max(tokens)}")
        labels = cfg.tei_labels
        out = []
        for p in pairs:
            try:
                logits = self._logits(p[0], p[-1] if len(p) == 2 else "", labels)
            except Exception as exc:  # noqa: BLE001 - TEI's backend error
                return 424, f"Inference failed: {exc}"
            scores = logits if data.get("raw_scores") else _softmax(logits)
            out.append(sorted(({"score": sc, "label": lb} for lb, sc in zip(labels, scores)),
                              key=lambda d: d["score"], reverse=True))
        compute = {"x-compute-tokens": str(sum(min(t, cfg.tei_max_input_tokens)
                                               for t in tokens)),
                   "x-compute-characters": str(sum(len(t) for p in pairs for t in p))}
        return 200, (out[0] if single else out), compute

    def _score(self, cfg: ServerConfig, data: Any) -> tuple[int, Any]:
        if not isinstance(data, dict):
            return 400, "We could not parse the JSON body of your request."
        one, two = data.get("text_1"), data.get("text_2")
        one = [one] if isinstance(one, str) else one
        two = [two] if isinstance(two, str) else two
        if not (isinstance(one, list) and isinstance(two, list) and one and two
                and all(isinstance(t, str) for t in one + two)):
            return 400, "text_1 and text_2 must be strings or non-empty lists of strings"
        if len(one) == 1:
            one = one * len(two)
        if len(one) != len(two):
            return 400, "text_1 and text_2 must have the same length"
        labels = cfg.tei_labels
        entail = next((i for i, lb in enumerate(labels) if "entail" in lb.lower()), 0)
        data_out, tokens = [], 0
        for i, (a, b) in enumerate(zip(one, two)):
            try:
                probs = _softmax(self._logits(a, b, labels))
            except Exception as exc:  # noqa: BLE001
                return 500, f"score handler failed: {exc}"
            data_out.append({"index": i, "object": "score", "score": probs[entail]})
            tokens += _tokens(a) + _tokens(b) + 3
        return 200, {"id": f"score-{uuid.uuid4().hex[:24]}", "object": "list",
                     "created": int(time.time()), "model": data.get("model") or DEFAULT_MODEL,
                     "data": data_out,
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens,
                               "completion_tokens": 0}}

    def _assistant(self, data: Any, started: float) -> tuple[int, Any]:
        question = ""
        if isinstance(data, dict):
            for k in ("query", "question", "message"):
                v = data.get(k)
                if v:
                    question = v if isinstance(v, str) else _content_text(
                        v.get("content") if isinstance(v, dict) else v)
                    break
        answer: Any = "Answer: " + question[:200]
        handler = self._assistant_handler
        if handler is not None:
            try:
                answer = handler(data if isinstance(data, dict) else {})
            except Exception as exc:
                return 500, f"assistant handler failed: {exc!r}"
        payload = answer if isinstance(answer, dict) else {
            "answer": str(answer),
            "sources": [{"text": "passage 1"}, {"text": "passage 2"}]}
        return 200, {"data": payload,
                     "meta": {"latency_ms": round((time.time() - started) * 1000, 3)}}

    # -- admin (never faulted, rate limited, authenticated or counted)
    def _admin(self, h: _Handler, path: str, query: str, body: bytes) -> None:
        def send(status: int, payload: Any) -> None:
            h.send_raw(status, json.dumps(payload).encode())

        try:
            if path == "/_admin/stats" and h.command == "GET":
                send(200, self.stats())
            elif path == "/_admin/config" and h.command == "GET":
                send(200, self._config_dict())
            elif path == "/_admin/config" and h.command == "POST":
                changes = json.loads(body or b"{}")
                if not isinstance(changes, dict):
                    raise ValueError("expected a JSON object of knob changes")
                self.configure(**changes)
                send(200, {"ok": True, "config": self._config_dict()})
            elif path == "/_admin/reset" and h.command == "POST":
                self.reset_stats()
                send(200, {"ok": True})
            elif path == "/_admin/requests" and h.command == "GET":
                limit = int((parse_qs(query).get("limit") or ["0"])[0])
                with self._lock:
                    recs = self.requests[-limit:] if limit > 0 else list(self.requests)
                send(200, [r.to_dict() for r in recs])
            else:
                send(404, _error_body(404, f"Unknown admin route {h.command} {path}"))
        except (ValueError, TypeError) as exc:
            send(400, _error_body(400, str(exc)))

    def _config_dict(self) -> dict:
        d = dataclasses.asdict(self._config)
        d["faults"] = list(d["faults"])
        d["api_key_set"] = self._api_key is not None
        return d


# ----------------------------------------------------------------------------- CLI

def _opt_float(s: str) -> float | None:
    return None if s.lower() in ("none", "") else float(s)


def _opt_int(s: str) -> int | None:
    return None if s.lower() in ("none", "") else int(s)


def main(argv: list[str] | None = None) -> int:
    d = ServerConfig()
    p = argparse.ArgumentParser(prog="python -m tests.fake_server",
                                description="OpenAI-compatible fake server on 127.0.0.1.")
    p.add_argument("--port", type=int, default=0, help="0: pick a free port")
    p.add_argument("--api-key", default=None)
    p.add_argument("--latency", type=float, default=d.latency_s, help="seconds per request")
    p.add_argument("--latency-jitter", "--jitter", type=float, default=d.latency_jitter_s)
    p.add_argument("--rate-limit", type=_opt_float, default=d.rate_limit_rps, help="requests/s")
    p.add_argument("--retry-after", type=_opt_float, default=d.retry_after_s,
                   help="seconds, or 'none' to omit the header")
    p.add_argument("--retry-after-http-date", action="store_true")
    p.add_argument("--fault-rate", type=float, default=d.fault_rate)
    p.add_argument("--faults", default=",".join(d.faults), help="comma-separated kinds")
    p.add_argument("--timeout-sleep", type=float, default=d.timeout_sleep_s)
    p.add_argument("--status-override", type=_opt_int, default=d.status_override)
    p.add_argument("--seed", type=_opt_int, default=d.seed)
    p.add_argument("--echo-auth-in-errors", action="store_true")
    p.add_argument("--embedding-dim", type=int, default=d.embedding_dim)
    p.add_argument("--hostile", default=None, choices=HOSTILE_KINDS)
    p.add_argument("--hostile-every", type=int, default=d.hostile_every)
    p.add_argument("--no-record", action="store_true",
                   help="don't keep per-request records (long benchmarks)")
    a = p.parse_args(argv)
    config = ServerConfig(
        latency_s=a.latency, latency_jitter_s=a.latency_jitter, rate_limit_rps=a.rate_limit,
        retry_after_s=a.retry_after, retry_after_http_date=a.retry_after_http_date,
        fault_rate=a.fault_rate, faults=tuple(f for f in a.faults.split(",") if f),
        timeout_sleep_s=a.timeout_sleep, status_override=a.status_override, seed=a.seed,
        echo_auth_in_errors=a.echo_auth_in_errors, embedding_dim=a.embedding_dim,
        hostile=a.hostile, hostile_every=a.hostile_every,
        record_requests=not a.no_record)
    server = FakeOpenAI(config, port=a.port, api_key=a.api_key).start()
    done = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"READY {server.base_url}", flush=True)
    try:
        while not done.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
