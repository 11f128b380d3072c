"""A progress line every few seconds during long runs (per worker process)."""
from __future__ import annotations

import os
import sys
import threading
import time

DEFAULT_INTERVAL_S = 5.0


def interval_from_env() -> float:
    """EVALBEAM_PROGRESS_S: seconds between progress lines (0 turns them off)."""
    return float(os.environ.get("EVALBEAM_PROGRESS_S", DEFAULT_INTERVAL_S))


class Progress:
    """Counts calls, retries, errors and answered cases; a daemon thread prints them."""

    def __init__(self, interval_s: float | None = None, stream=None):
        interval_s = interval_from_env() if interval_s is None else interval_s
        self.cases = self.calls = self.retries = self.errors = self.rate_limited = 0
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._stream = stream or sys.stderr
        self._stop = threading.Event()
        self._last_printed = None
        self._thread = None
        if interval_s > 0:
            self._thread = threading.Thread(target=self._loop, args=(interval_s,),
                                            name="evalbeam-progress", daemon=True)
            self._thread.start()

    def on_call(self, rec) -> None:
        with self._lock:
            self.calls += 1
            self.retries += max(0, rec.attempts - 1)
            self.rate_limited += rec.rate_limited
            self.errors += 0 if rec.ok else 1

    def on_case(self, n: int = 1) -> None:
        with self._lock:
            self.cases += n

    def line(self) -> str:
        elapsed = max(time.monotonic() - self._start, 1e-9)
        with self._lock:
            return (f"evalbeam[{os.getpid()}] {elapsed:6.0f}s: {self.cases} answers, "
                    f"{self.calls} calls ({self.calls / elapsed:.1f}/s), {self.retries} retries, "
                    f"{self.rate_limited} rate-limited, {self.errors} failed calls")

    def _loop(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            snapshot = (self.cases, self.calls, self.errors)
            if snapshot != self._last_printed and self.calls:
                self._last_printed = snapshot
                print(self.line(), file=self._stream, flush=True)

    def stop(self) -> None:
        self._stop.set()
