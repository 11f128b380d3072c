"""Where the report's Vega-Lite specs become SVG: vl-convert, in this process
or in a child process booted at the start of a run.

vl-convert starts a JavaScript runtime on its first chart (~0.9 s of CPU
here) and holds the GIL while it does, so booting it on a thread of the run's
own process stalls the pipeline as long as it saves (measured in issue 13). A
child process boots it on the other core while the pipeline runs; the report
then sends the specs there, one JSON line each way. Anything wrong with the
child (it could not start, died, answered nonsense) falls back to drawing in
this process, as before: a chart engine must never cost a run its report.
"""
from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import threading
from typing import Any, Iterator, Mapping

# The child: boot the engine at once, then one spec per line in, one answer per line out.
_CHILD = r"""
import json, sys
try:
    import vl_convert
    vl_convert.vegalite_to_svg({"data": {"values": [{"x": 0}]}, "mark": "point",
                                "encoding": {"x": {"field": "x", "type": "quantitative"}}})
except Exception as exc:
    vl_convert = None
    booted = f"{type(exc).__name__}: {exc}"
for line in sys.stdin:
    try:
        if vl_convert is None:
            raise RuntimeError(booted)
        out = {"svg": vl_convert.vegalite_to_svg(json.loads(line))}
    except Exception as exc:
        out = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""

# Case x bot rows from which a run boots the engine in a child process while its
# pipeline works. A smaller run starts no process (issue 26): it draws its
# charts here after the pipeline, the engine's start (~0.9 CPU-s) on its clock.
CHILD_FROM_ROWS = 2000

_lock = threading.Lock()
_child: subprocess.Popen | None = None


# vl-convert numbers the ids of an SVG's definitions (a colour legend's
# gradient) with a counter that lives as long as its process: the same chart
# drawn again came out as gradient_1, then gradient_2.
_NUMBERED_ID = re.compile(r'\bid="([^"]*?\d+)"')


def stable_ids(svg: str) -> str:
    """The SVG with its numbered ids renumbered from 0 in the order they appear
    (references follow), so a chart's SVG does not depend on what the process
    drew before it: a report's bytes depend on its run only."""
    names: dict[str, str] = {}
    for old in _NUMBERED_ID.findall(svg):
        names.setdefault(old, f"{old.rstrip('0123456789')}{len(names)}")
    if all(old == new for old, new in names.items()):
        return svg
    pattern = "|".join(re.escape(old) for old in sorted(names, key=len, reverse=True))
    return re.sub(rf'(?<=id=")({pattern})(?=")|(?<=url\(#)({pattern})(?=\))'
                  rf'|(?<=href="#)({pattern})(?=")',
                  lambda m: names[m.group(0)], svg)


class ChartError(Exception):
    """The engine could not draw this spec (the message says why)."""


def start() -> None:
    """Boot the engine in a child process, once per process; a no-op when the
    child cannot be started (charts are then drawn in this process)."""
    global _child
    with _lock:
        if _child is not None:
            return
        try:
            # Its stdin is our pipe: when this process ends, however it ends, the
            # child reads end-of-file and exits.
            # -u: what the child writes reaches us at once, whatever the environment
            # says (without PYTHONUNBUFFERED a child that did not flush kept its answer
            # in its buffer and the report waited on it for ever)
            _child = subprocess.Popen([sys.executable, "-u", "-c", _CHILD],
                                      stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      text=True, encoding="utf-8")
        except OSError:
            _child = None


def start_for_run(rows: int) -> None:
    """start() for a run of `rows` case x bot rows, from CHILD_FROM_ROWS on."""
    if rows >= CHILD_FROM_ROWS:
        start()


def stop() -> None:
    """End the child (end-of-file on its stdin; killed if it lingers)."""
    global _child
    with _lock:
        child, _child = _child, None
    if child is None:
        return
    try:
        child.stdin.close()
        child.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        child.kill()
        child.wait()


@contextlib.contextmanager
def drawn_apart() -> Iterator[None]:
    """Charts drawn within are drawn in a child process that ends with the
    block (one that is already running is used and left running). For a
    report drawn on a long-lived worker (a Dask worker runs Finalize):
    vl-convert and its JavaScript runtime loaded there stayed in that
    process for good, ~100 MiB on top of its peak at the end of a run."""
    with _lock:
        ours = _child is None
    if ours:
        start()
    try:
        yield
    finally:
        if ours:
            stop()


def _in_child(spec: Mapping[str, Any]) -> dict | None:
    """The child's answer, or None when there is no working child (it is then
    dropped, so the next chart does not wait on it either)."""
    global _child
    if _child is None:
        return None
    try:
        _child.stdin.write(json.dumps(spec) + "\n")
        _child.stdin.flush()
        answer = json.loads(_child.stdout.readline())
        if isinstance(answer, dict) and ("svg" in answer or "error" in answer):
            return answer
    except (OSError, ValueError):
        pass
    _child.kill()
    _child = None
    return None


def to_svg(spec: Mapping[str, Any]) -> str:
    """The spec drawn as SVG text; ChartError when vl-convert cannot draw it."""
    with _lock:
        answer = _in_child(spec)
    if answer is None:
        try:
            import vl_convert
            return stable_ids(vl_convert.vegalite_to_svg(spec))
        except Exception as exc:  # noqa: BLE001 - the caller says it on the page
            raise ChartError(f"{type(exc).__name__}: {exc}") from exc
    if "error" in answer:
        raise ChartError(str(answer["error"]))
    return stable_ids(answer["svg"])
