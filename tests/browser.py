"""Headless Chromium driven through the DevTools protocol over a pipe
(--remote-debugging-pipe: JSON messages ending in NUL on fds 3 and 4), so a
test can open a page as a person would, record every request the page makes,
evaluate expressions in it and take a full-page screenshot. No extra package
and no listening port.

    with Browser() as b:
        shot = b.open("file:///.../report.html")
        shot.requests, shot.evaluate("document.images.length"), shot.png

Each `with Browser()` block has a browser context of its own (as a fresh
incognito profile: its own cookies, storage and cache), closed with the block.
Inside `with shared():` (tests/conftest.py holds one per test module) the
blocks use one Chromium process per set of launch flags instead of starting
one each (a start took ~1 s of CPU, dozens of times per file).
"""
from __future__ import annotations

import base64
import contextlib
import ctypes
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator


CHROMIUM = os.environ.get("EVALBEAM_CHROMIUM", "/usr/bin/chromium")
# Without these Chromium reaches out to Google hosts on its own; the proxy is a
# closed local port, so even a request that slipped through could not leave.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio",
         "--proxy-server=127.0.0.1:9", "--remote-debugging-pipe")
# Loopback too goes to the closed proxy, unless a test serves pages on 127.0.0.1
NO_LOOPBACK = "--proxy-bypass-list=<-loopback>"


def _above(fd: int, low: int = 10) -> int:
    """The same pipe end as a descriptor >= low (the original is closed)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, low)
    os.close(fd)
    return high


try:  # looked up here: the child calls it between fork and exec, where a lookup could hang
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux
    _PRCTL = None


def available() -> bool:
    return os.access(CHROMIUM, os.X_OK)


@dataclass
class Page:
    requests: list[str] = field(default_factory=list)   # every URL the page asked for
    console: list[str] = field(default_factory=list)    # console and log entries (CSP reports)
    png: bytes = b""
    session: str = ""
    browser: "Browser | None" = None

    def evaluate(self, expression: str) -> Any:
        reply = self.browser.call("Runtime.evaluate", {"expression": expression,
                                                       "returnByValue": True}, self.session)
        return reply["result"].get("value")


class _Chromium:
    """One Chromium process and its pipe: replies by message id, events queued
    by the session (tab) they belong to."""

    def __init__(self, flags: tuple[str, ...]):
        self._next_id = 0
        self._replies: dict[int, dict] = {}
        self._events: dict[str, queue.Queue] = {}
        self._closed = False
        self._lock = threading.Lock()
        self._profile = tempfile.mkdtemp(prefix="evalbeam-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # the browser expects its pipe ends as fds 3 (commands) and 4 (replies); the
        # child's ends move above 9 first, so that the dup2s cannot overwrite each other
        to_chrome_r, from_chrome_w = _above(to_chrome_r), _above(from_chrome_w)

        def remap() -> None:  # in the child, before exec (and before other fds close)
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)
            if _PRCTL is not None:  # SIGKILL it if this process dies (PR_SET_PDEATHSIG):
                _PRCTL(1, 9)        # a shared browser outlives a test, not a killed pytest

        self._proc = subprocess.Popen(
            [CHROMIUM, *flags, f"--user-data-dir={self._profile}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=remap,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def alive(self) -> bool:
        return self._proc.poll() is None and not self._closed

    def close(self) -> None:
        try:
            self.call("Browser.close", {}, timeout_s=5)
        except Exception:  # noqa: BLE001 - killed below anyway
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        os.close(self._to_chrome)
        shutil.rmtree(self._profile, ignore_errors=True)

    def events(self, session: str) -> queue.Queue:
        """The queue of one session's events (None in it: the pipe closed)."""
        with self._lock:
            if session not in self._events:
                self._events[session] = queue.Queue()
                if self._closed:
                    self._events[session].put(None)
            return self._events[session]

    def forget(self, session: str) -> None:
        with self._lock:
            self._events.pop(session, None)

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_chrome, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._lock:
                    self._closed = True
                    for q in self._events.values():
                        q.put(None)
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._lock:
                        self._replies[msg["id"]] = msg
                else:  # a tab's event; the browser's own (no session) are not waited for
                    self.events(msg.get("sessionId", "")).put(msg)

    def call(self, method: str, params: dict, session: str | None = None,
             timeout_s: float = 60) -> dict:
        with self._lock:
            self._next_id += 1
            msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                reply = self._replies.pop(msg["id"], None)
            if reply is not None:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            time.sleep(0.01)
        raise TimeoutError(f"{method}: no reply in {timeout_s} s")


# flags -> the running process, while a shared() block is open
_shared: dict[tuple[str, ...], _Chromium] | None = None


@contextlib.contextmanager
def shared() -> Iterator[None]:
    """Browser blocks inside use one Chromium process per set of flags, started
    when first needed (again if it died) and closed at the end."""
    global _shared
    if _shared is not None:  # already inside one
        yield
        return
    _shared = {}
    try:
        yield
    finally:
        running, _shared = _shared, None
        for chromium in running.values():
            chromium.close()


class Browser:
    def __init__(self, width: int = 1280, timeout_s: float = 60, loopback: bool = False,
                 mobile: bool = False, fresh: bool = False):
        """loopback: let the pages reach 127.0.0.1 (a local server under test);
        every other address still goes to the closed proxy. mobile: lay pages out
        as a phone does (the page's viewport meta counts; a page wider than the
        screen is zoomed out, so window.innerWidth grows with it instead of the
        page scrolling sideways). fresh: a Chromium process of its own even
        inside shared(), for a test that compares two renderings box for box (a
        process's later rendering can differ from its first: a menu 10 px
        narrower, seen once in three runs)."""
        self.width, self.timeout_s, self.mobile, self.fresh = width, timeout_s, mobile, fresh
        self._flags = FLAGS if loopback else (*FLAGS, NO_LOOPBACK)
        self._sessions: list[str] = []

    def __enter__(self) -> "Browser":
        self._own = _shared is None or self.fresh
        if self._own:
            self._chromium = _Chromium(self._flags)
        else:
            chromium = _shared.get(self._flags)
            if chromium is None or not chromium.alive():
                chromium = _shared[self._flags] = _Chromium(self._flags)
            self._chromium = chromium
        try:
            self._context = self.call("Target.createBrowserContext", {})["browserContextId"]
        except BaseException:
            if self._own:
                self._chromium.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.call("Target.disposeBrowserContext", {"browserContextId": self._context},
                      timeout_s=10)
        except Exception:  # noqa: BLE001 - a dead browser has none left
            pass
        for session in self._sessions:
            self._chromium.forget(session)
        if self._own:
            self._chromium.close()

    def call(self, method: str, params: dict, session: str | None = None,
             timeout_s: float | None = None) -> dict:
        return self._chromium.call(method, params, session, timeout_s or self.timeout_s)

    def _drain(self, page: Page, until: str | None = None) -> None:
        events = self._chromium.events(page.session)
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            try:
                event = events.get(timeout=0.2)
            except queue.Empty:
                if until is None:
                    return
                continue
            if event is None:
                raise RuntimeError("the browser closed its pipe")
            method, params = event.get("method"), event.get("params", {})
            if method == "Network.requestWillBeSent":
                page.requests.append(params["request"]["url"])
            elif method == "Runtime.consoleAPICalled":
                page.console.append(" ".join(str(a.get("value")) for a in params["args"]))
            elif method == "Log.entryAdded":
                page.console.append(params["entry"]["text"])
            if until is not None and method == until:
                return
        raise TimeoutError(f"waiting for {until}")

    def open(self, url: str) -> Page:
        """Load url in a new tab, wait for it, take a full-page screenshot."""
        target = self.call("Target.createTarget", {"url": "about:blank",
                                                   "browserContextId": self._context})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target,
                                                      "flatten": True})["sessionId"]
        self._sessions.append(session)
        page = Page(session=session, browser=self)
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.call(f"{domain}.enable", {}, session)
        self.call("Emulation.setDeviceMetricsOverride", {"width": self.width, "height": 900,
                                                         "deviceScaleFactor": 1,
                                                         "mobile": self.mobile}, session)
        self.call("Page.navigate", {"url": url}, session)
        self._drain(page, until="Page.loadEventFired")
        self._drain(page)  # anything the page did right after loading
        size = self.call("Page.getLayoutMetrics", {}, session)["cssContentSize"]
        shot = self.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"],
                     "scale": 1}}, session)
        page.png = base64.b64decode(shot["data"])
        self._drain(page)
        return page
