"""The progress of a run as a person reads it: one line (logs, `evalbeam
status`) or a bar that redraws itself (a terminal).

    1,200/3,300 cases (36%) · 41.2 cases/s · ETA 51 s · errors 3 (2 invalid rows, 1 bot) ·
    calls: llm 1,532 (9.9/s, 3 retries, 0 failed, 0 rate-limited)

(one line; while turns are answered, embedded, judged or classified but not
written yet, as on Dask where a shard is written only after its stages ran,
also `turns answered 120, embedded 96, judged 64`). Errors count rows: invalid input rows, bot errors, failed judge
questions; a failed call shows in its endpoint's figures (and, for a bot, as
the bot error it causes).

A case is done when every bot's answer to it is written (or it was invalid);
the rate counts from the first written answer, so start-up does not dilute it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from schemas.tables import CALL_ERROR_STAGES

# the stages turns go through, in the order the line names them
STAGE_ORDER = ("answered", "embedded", "judged", "classified")


@dataclass(frozen=True)
class Figures:
    """A run's progress figures at one moment."""
    total: int                      # input rows planned
    done: int                       # cases finished (all bots answered, or invalid)
    rate: float | None              # cases per second since the first answer
    eta_s: float | None
    errors: dict[str, int] = field(default_factory=dict)  # rows: kind -> count (non-zero only)
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # endpoint -> counts, rate
    elapsed_s: float = 0.0
    stages: dict[str, int] = field(default_factory=dict)  # turns answered, judged (not written)


def figures(totals: Mapping[str, Any] | None, total: int, bots: int, now: float,
            started: float) -> Figures:
    """The figures from the summed worker counts (None: nothing counted yet)."""
    elapsed = max(0.0, now - started)
    if not totals:
        return Figures(total, 0, None, None, elapsed_s=elapsed)
    done = min(total, totals["turns"] // max(1, bots) + totals["invalid_rows"])
    first = totals.get("first_turn_at")
    rate = None
    if first is not None and totals["turns"]:
        span = totals["at"] - first  # the counts are as of the latest write
        rate = (totals["turns"] / max(1, bots)) / span if span > 0.5 else None
    eta = (total - done) / rate if rate and done < total else (0.0 if done >= total else None)
    errors = {k: n for k, n in (("invalid rows", totals["invalid_rows"]),
                                ("bot", totals["bot_errors"]),
                                *((stage, totals.get(key, 0))
                                  for stage, (key, _) in CALL_ERROR_STAGES.items())) if n}
    calls = {endpoint: {**c, "per_s": c["calls"] / elapsed if elapsed > 0.5 else None}
             for endpoint, c in sorted(totals.get("calls", {}).items())}
    told = totals.get("stages") or {}
    stages = {k: told[k] for k in sorted(told, key=lambda k: (
        STAGE_ORDER.index(k) if k in STAGE_ORDER else len(STAGE_ORDER), k)) if told[k]}
    return Figures(total, done, rate, eta, errors, calls, elapsed, stages)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def _parts(f: Figures) -> list[str]:
    share = f"{100 * f.done // f.total}%" if f.total else "–"  # 100% only when done
    parts = [f"{f.done:,}/{f.total:,} cases ({share})"]
    if f.rate:
        parts.append(f"{f.rate:,.1f} cases/s")
    elif not f.done:
        parts.append("starting")
    if f.eta_s is not None and f.done < f.total:
        parts.append(f"ETA {_duration(f.eta_s)}")
    if f.stages and f.done < f.total:  # work done in stages before rows are written (Dask)
        parts.append("turns " + ", ".join(f"{k} {n:,}" for k, n in f.stages.items()))
    total_errors = sum(f.errors.values())
    parts.append(f"errors {total_errors:,}" + (
        f" ({', '.join(f'{n:,} {k}' for k, n in f.errors.items())})" if total_errors else ""))
    if f.calls:
        calls = []
        for endpoint, c in f.calls.items():
            rate = f"{c['per_s']:.1f}/s, " if c.get("per_s") else ""
            calls.append(f"{endpoint} {c['calls']:,} ({rate}{c['retries']:,} retries, "
                         f"{c['failures']:,} failed, {c['rate_limited']:,} rate-limited)")
        parts.append("calls: " + ", ".join(calls))
    return parts


def progress_line(f: Figures) -> str:
    """One line: done/total, rate, ETA, errors, calls per endpoint."""
    return " · ".join(_parts(f))


def progress_bar(f: Figures, width: int = 24) -> str:
    """A bar and the same figures (for a terminal; redrawn with a carriage return)."""
    filled = int(width * f.done / f.total) if f.total else 0
    return f"[{'#' * filled}{'.' * (width - filled)}] " + progress_line(f)
