"""A Dask worker preload that hands freed memory back to the system every few
seconds: `dask worker ... --preload pipeline.dask_worker_trim`.

Why: a worker's memory grew through a long run although what it held did not
(BENCHMARKS.md §9): the objects of each 5,000-row bundle are freed, but the
allocator keeps the pages they were in, partly pinned by the few objects that
outlive the bundle. With the worker started under `PYTHONMALLOC=malloc` (Python's
objects in glibc's heap instead of its own arenas) and `MALLOC_TRIM_THRESHOLD_=65536`,
calling glibc's `malloc_trim(0)` every 10 s returns the free pages: the largest
worker grew 566 -> 619 MiB from 100 k to 1 M rows, against 511 -> 714 MiB
without, when measured (4de1265). Since the runner merges combines in a tree,
Python's own allocator gives 476 -> 600 MiB (1.26x), so this is for long runs
that want the last of it. On a system without glibc it does nothing.

EVALBEAM_TRIM_EVERY sets the interval in seconds (default 10; 0 turns it off).
"""
from __future__ import annotations

import ctypes
import logging
import os
import threading

_LOGGER = logging.getLogger(__name__)
DEFAULT_EVERY_S = 10.0


def _malloc_trim():
    """glibc's malloc_trim, or None where there is none."""
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def trim_every(seconds: float, trim=None,
               stop: threading.Event | None = None) -> threading.Thread | None:
    """Start a daemon thread that calls trim(0) every `seconds`; None if there is
    nothing to call or seconds <= 0."""
    trim = trim or _malloc_trim()
    if trim is None or seconds <= 0:
        return None
    stop = stop or threading.Event()

    def loop():
        while not stop.wait(seconds):
            trim(0)

    thread = threading.Thread(target=loop, name="evalbeam-malloc-trim", daemon=True)
    thread.start()
    return thread


def dask_setup(worker=None) -> None:
    """Called by dask when the worker starts (--preload)."""
    every = float(os.environ.get("EVALBEAM_TRIM_EVERY", DEFAULT_EVERY_S))
    if trim_every(every) is None:
        _LOGGER.info("evalbeam: malloc_trim not available or turned off; nothing to do")
