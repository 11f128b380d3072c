"""The viewer's HTTP server: the standard library's ThreadingHTTPServer on
127.0.0.1 only, GET and HEAD only, nothing written anywhere.

    /                               the folder's finished runs
    /run/<run_id>?bot=&suite=&verdict=&metric=&min=&max=&q=&sort=&page=&errors_page=
                                    the case explorer of one run
    /run/<run_id>/case/<case_id>    one case: question, contexts, reference,
                                    every bot's answer, every metric
    /run/<run_id>/report.html       the run's report
    /compare?a=<run>&b=<run>&...    two runs' answers side by side

Every response forbids scripts and any request elsewhere
(Content-Security-Policy), and a request whose Host is not this server's
loopback address is refused (a web page elsewhere cannot reach it through a
DNS name that points here).
"""
from __future__ import annotations

import math
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from pipeline.viewer import pages
from pipeline.viewer.data import (PAGE_SIZE, SORTS, BadRunId, Catalog, Filters, FolderGone,
                                  newer_attempt, report_file)
from schemas.tables import VERDICT_ORDER
from transforms.publish.completed import NoCompletedAttempt, RunUnreadable

HOST = "127.0.0.1"
DEFAULT_PORT = 8765
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; form-action 'self'; "
       "base-uri 'none'; frame-ancestors 'none'")
MAX_QUERY = 4096


class BadRequest(ValueError):
    """A query the viewer cannot answer (400 with this message)."""


def _one(query: dict[str, list[str]], key: str) -> str | None:
    values = query.get(key)
    if not values or values[0] == "":
        return None
    return values[0]


def _number(query: dict[str, list[str]], key: str) -> float | None:
    value = _one(query, key)
    if value is None:
        return None
    try:
        x = float(value)
    except ValueError:
        raise BadRequest(f"{key}={value[:40]!r} is not a number") from None
    if not math.isfinite(x):
        raise BadRequest(f"{key} must be a finite number")
    return x


def _page(query: dict[str, list[str]], key: str) -> int:
    """A page number of the query (1 when absent; a bad one is a BadRequest)."""
    page = _one(query, key) or "1"
    if not page.isdigit() or not 0 < int(page) < 10**9:
        raise BadRequest(f"{key} must be a positive whole number")
    return int(page)


def parse_filters(query: dict[str, list[str]]) -> Filters:
    """The explorer's filters from a query string (a bad value is a BadRequest)."""
    verdict = _one(query, "verdict")
    if verdict is not None and verdict not in VERDICT_ORDER:
        raise BadRequest(f"verdict must be one of {', '.join(VERDICT_ORDER)}")
    sort = _one(query, "sort")
    if sort is not None and sort not in SORTS:
        raise BadRequest(f"sort must be one of {', '.join(SORTS)}")
    if sort is not None and _one(query, "metric") is None:
        raise BadRequest("choose a metric to sort by its value")
    return Filters(bot=_one(query, "bot"), suite=_one(query, "suite"), verdict=verdict,
                   metric=_one(query, "metric"), low=_number(query, "min"),
                   high=_number(query, "max"), text=_one(query, "q"),
                   changed=_one(query, "changed") == "1", sort=sort, page=_page(query, "page"))


class Handler(BaseHTTPRequestHandler):
    """One request; the catalog is the server's."""

    server_version = "evalbeam-view"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base's name
        pass  # quiet: the page is the interface

    def _send(self, status: int, body: bytes, kind: str = "text/html; charset=utf-8") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _host_ok(self) -> bool:
        port = self.server.server_address[1]
        return (self.headers.get("Host") or "") in (f"{HOST}:{port}", f"localhost:{port}")

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if not self._host_ok():
            self._send(HTTPStatus.BAD_REQUEST, pages.error_page(400, "unknown Host header"))
            return
        try:
            with self.server.catalog.in_use():  # type: ignore[attr-defined]
                status, body, kind = self.route()
        except (BadRequest, BadRunId) as exc:
            status, body, kind = 400, pages.error_page(400, str(exc)), None
        except (NoCompletedAttempt, FolderGone) as exc:
            status, body, kind = 404, pages.error_page(404, str(exc)), None
        except RunUnreadable as exc:  # the request is fine; the run's files are not
            status, body, kind = 409, pages.error_page(409, str(exc)), None
        except Exception as exc:  # a page that fails says so; the server goes on
            status, body, kind = 500, pages.error_page(
                500, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"), None
        self._send(status, body, kind or "text/html; charset=utf-8")

    def _refuse(self) -> None:
        self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse  # read-only

    def route(self) -> tuple[int, bytes, str | None]:
        if len(self.path) > MAX_QUERY:
            raise BadRequest("the address is too long")
        split = urlsplit(self.path)
        parts = [unquote(p) for p in split.path.split("/")[1:] if p != ""]
        query = parse_qs(split.query, keep_blank_values=True)
        catalog: Catalog = self.server.catalog  # type: ignore[attr-defined]
        if not parts:
            runs, problems = catalog.runs()
            return 200, pages.runs_list(runs, problems, catalog.output), None
        if parts[0] == "run" and len(parts) == 2:
            loaded = catalog.run(parts[1])
            f = parse_filters(query)
            if f.metric is not None and f.metric not in loaded.metrics:
                raise BadRequest(f"run {parts[1]} has no metric {f.metric[:80]!r}")
            cur = catalog.cursor()
            result = catalog.cases(loaded, f, cur)
            errors = catalog.errors(loaded, cur, page=_page(query, "errors_page"))
            again = newer_attempt(catalog.output, parts[1], loaded.run.attempt)
            return 200, pages.explorer(loaded, f, result, catalog.verdict_counts(loaded, cur),
                                       PAGE_SIZE, errors, again), None
        if parts[0] == "run" and len(parts) == 4 and parts[2] == "case":
            loaded = catalog.run(parts[1])
            case = catalog.case(loaded, parts[3], catalog.cursor())
            if case is None:
                found = catalog.errors(loaded, catalog.cursor(), case_id=parts[3])
                return 404, pages.no_case_page(parts[1], parts[3], found), None
            return 200, pages.case_page(loaded, case), None
        if parts[0] == "run" and len(parts) == 3 and parts[2] == "report.html":
            loaded = catalog.run(parts[1])  # only a finished run's report
            path = report_file(catalog.output, parts[1], loaded.run.attempt)
            if path is None:
                return 404, pages.error_page(404, f"run {parts[1]} has no report.html"), None
            with FileSystems.open(path, "text/html", CompressionTypes.UNCOMPRESSED) as fh:
                return 200, fh.read(), "text/html; charset=utf-8"
        if parts == ["compare"]:
            a, b = _one(query, "a"), _one(query, "b")
            if not a or not b:
                raise BadRequest("choose two runs (a= and b=)")
            run_a, run_b = catalog.run(a, "a="), catalog.run(b, "b=")
            f = parse_filters(query)
            if f.metric is not None and f.metric not in run_b.metrics:
                raise BadRequest(f"run {b} has no metric {f.metric[:80]!r}")
            result = catalog.side_by_side(run_a, run_b, f, catalog.cursor())
            bots = sorted(set(run_a.bots) | set(run_b.bots))
            suites = sorted(set(run_a.suites) | set(run_b.suites))
            return 200, pages.side_by_side_page(run_a, run_b, f, result, PAGE_SIZE, bots,
                                                suites, run_b.metrics), None
        return 404, pages.error_page(404, "no such page"), None


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, output: str, port: int = DEFAULT_PORT):
        self.catalog = Catalog(output)
        super().__init__((HOST, port), Handler)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"


def start_in_thread(output: str, port: int = 0) -> ViewServer:
    """A server on a thread (tests, benchmarks): call .shutdown() when done."""
    server = ViewServer(output, port)
    threading.Thread(target=server.serve_forever, name="evalbeam-view", daemon=True).start()
    return server


def serve(output: str, port: int = DEFAULT_PORT) -> int:
    """`evalbeam view`: serve until interrupted (Ctrl-C)."""
    server = ViewServer(output, port)
    print(f"evalbeam view: {server.url} (read-only, this machine only; Ctrl-C stops it)",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("evalbeam view: stopped", file=sys.stderr)
    finally:
        server.server_close()
        server.catalog.close()
    return 0
