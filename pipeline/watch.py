"""Watching a run while it runs: the launching command (or evaluate()) prints
its progress every few seconds, from the progress objects its workers write
(transforms/progress), so the figures are the same for an in-process run,
worker processes and a remote runner, and the same `evalbeam status` shows.

On a terminal the line is a bar redrawn in place; otherwise one line per
interval (EVALBEAM_PROGRESS_S seconds, default 5; 0 turns it off), and a
line only when the figures changed.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

from transforms.publish.progress_objects import read_totals
from transforms.progress.text import Figures, figures, progress_bar, progress_line
from transforms.publish.finalize import RunInfo

DEFAULT_INTERVAL_S = 5.0
TTY_INTERVAL_S = 1.0
MAX_INTERVAL_S = 86400.0 * 365  # longer is never: no progress


def interval_from_env(tty: bool) -> float:
    """EVALBEAM_PROGRESS_S: seconds between progress lines (0: no progress).
    'inf' (or 1e400) is no progress too: as a wait it raised OverflowError in
    the watch thread, a traceback in the middle of the run's output."""
    value = os.environ.get("EVALBEAM_PROGRESS_S")
    if value is None:
        return TTY_INTERVAL_S if tty else DEFAULT_INTERVAL_S
    try:
        seconds = float(value)
    except ValueError:
        return DEFAULT_INTERVAL_S
    return seconds if 0 < seconds <= MAX_INTERVAL_S else 0.0


def run_figures(info: RunInfo, now: float | None = None) -> Figures:
    """The run's figures now, from its attempt's progress objects."""
    totals = read_totals(info.output, info.run_id, info.attempt)
    return figures(totals, info.planned_rows, len(info.bots),
                   time.time() if now is None else now, info.started)


class Watch:
    """A daemon thread printing a run's progress until stopped."""

    def __init__(self, info: RunInfo, stream: TextIO | None = None,
                 interval_s: float | None = None):
        self.info = info
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval_from_env(self.tty) if interval_s is None else interval_s
        self._stop = threading.Event()
        self._last = ""
        self._moved: tuple | None = None
        self._done = 0
        self._drawn = False
        self._thread = threading.Thread(target=self._run, name="evalbeam-watch", daemon=True)

    def start(self) -> "Watch":
        if self.interval > 0:
            self._thread.start()
        return self

    def _show(self) -> None:
        f = run_figures(self.info)
        if f.done < self._done:  # the finished run's objects are gone with its lease
            return
        self._done = f.done
        if self.tty:
            text = progress_bar(f)
            pad = max(0, len(self._last) - len(text))
            self.stream.write("\r" + text + " " * pad)
            self._drawn = True
        else:
            moved = (f.done, sorted(f.errors.items()), sorted(f.stages.items()),
                     sorted((e, c["calls"]) for e, c in f.calls.items()))
            if moved == self._moved:
                return  # nothing moved: no new line
            self._moved = moved
            text = progress_line(f)
            self.stream.write(f"evalbeam: {text}\n")
        self._last = text
        self.stream.flush()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._show()
            except Exception:  # the progress line never fails a run
                pass

    def stop(self) -> None:
        """Stop; on a terminal, draw the bar a last time and end its line."""
        if not self._thread.is_alive():
            return
        self._stop.set()
        self._thread.join(timeout=5)
        if self.tty and self._drawn:
            try:
                self._show()
            except Exception:
                pass
            self.stream.write("\n")
            self.stream.flush()
