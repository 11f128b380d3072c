"""Two runs' tables compared row by row: equal apart from what measures time
(latencies) and float noise up to a tolerance (in values and inside the JSON
details), e.g. the same run on two runners."""
from __future__ import annotations

import json
import math
from typing import Any

from tests.pipeline_helpers import manifest, read_rows

TIMING = frozenset({"latency_ms", "latency_p50_ms", "latency_p95_ms"})  # columns and metrics
KEYS = {
    "results": ("bot", "case_id"),
    "scores": ("bot", "case_id", "metric"),
    "summary": ("bot", "suite", "metric"),
    "errors": ("stage", "bot", "case_id", "error_type", "message"),
    "usage": ("endpoint", "model", "purpose", "bot", "metric", "split_among"),  # one tally per metric set
}


def _last_shown_digit(a: float, b: float) -> bool:
    """Two numbers rounded for display (details round to 4 decimals) that differ
    by one unit of their last digit: values within noise either side of a
    rounding boundary (0.07705 +- 1e-7 shows as 0.0771 or 0.077)."""
    digits = max(len(repr(float(x)).partition(".")[2]) for x in (a, b))
    return digits <= 4 and abs(a - b) <= 1.000001 * 10 ** -digits


def _close(a: Any, b: Any, tol: float, where: str, out: list[str]) -> None:
    if isinstance(a, str) and isinstance(b, str) and a[:1] in "{[" and b[:1] in "{[":
        try:
            a, b = json.loads(a), json.loads(b)
        except ValueError:
            pass
    if isinstance(a, dict) and isinstance(b, dict):
        # a timing metric anywhere (a worst case's metric values) is not compared
        a, b = ({k: v for k, v in x.items() if k not in TIMING} for x in (a, b))
        if set(a) != set(b):
            out.append(f"{where}: keys {sorted(set(a) ^ set(b))} differ")
            return
        for k in a:
            _close(a[k], b[k], tol, f"{where}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} != {len(b)} items")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, tol, f"{where}[{i}]", out)
    elif isinstance(a, float) and isinstance(b, (int, float)) or isinstance(b, float) and \
            isinstance(a, (int, float)):
        if not (a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol
                or _last_shown_digit(a, b)):
            out.append(f"{where}: {a!r} != {b!r}")
    elif a != b:
        out.append(f"{where}: {str(a)[:80]!r} != {str(b)[:80]!r}")


def _rows(output: str, run_id: str, table: str) -> dict[tuple, dict]:
    rows = {}
    for row in read_rows(output, table):
        if row["run_id"] != run_id or row.get("metric") in TIMING:
            continue
        row = {k: v for k, v in row.items() if k not in TIMING and k not in ("run_id",
                                                                              "run_date")}
        key = tuple(str(row.get(k)) for k in KEYS[table])
        assert key not in rows, f"{table}: duplicate row {key}"
        rows[key] = row
    return rows


# usage/'s counts: what a run's requests added up to
USAGE_COUNTS = ("calls", "retries", "failures", "cache_hits", "shared_cache_hits",
                "prompt_tokens", "completion_tokens", "cost", "budget_refused",
                "skipped_rows", "saved_calls")


def _usage_over_bots(rows: dict[tuple, dict]) -> dict[tuple, dict]:
    """usage/ summed over bots and the metrics a set of calls served, plus each
    bot's asks (calls + cache hits) per purpose.

    Two bots that gave the same answer ask the judge the same question: it is
    sent once, for the bot whose row asked first, and the other's is a cache
    hit. Which one is first is timing, so a call can move between bots from
    one run to the next; and a tally's whole-number shares among its metrics
    (3 calls between 2 metrics: 2 and 1) follow how the runner cut bundles.
    The sums cannot move, nor what each bot asked."""
    out: dict[tuple, dict] = {}
    for (endpoint, model, purpose, bot, _metric, split_among), row in rows.items():
        total = out.setdefault(("all", endpoint, model, purpose, split_among),
                               dict.fromkeys(USAGE_COUNTS, 0))
        for col in USAGE_COUNTS:
            total[col] += row.get(col) or 0
        asks = out.setdefault(("asks", endpoint, model, purpose, bot, split_among), {"asks": 0})
        asks["asks"] += (row.get("calls") or 0) + (row.get("cache_hits") or 0)
    return out


def table_differences(out_a: str, run_a: str, out_b: str, run_b: str,
                      tol: float = 1e-6, bots_share_calls: bool = False) -> list[str]:
    """What differs between two runs' tables and manifests' counts ([] when equal).

    bots_share_calls: usage/ is compared summed over bots (_usage_over_bots), for
    runs whose bots give some equal answers and whose calls race."""
    diffs: list[str] = []
    for table in KEYS:
        a, b = _rows(out_a, run_a, table), _rows(out_b, run_b, table)
        if table == "usage" and bots_share_calls:
            a, b = _usage_over_bots(a), _usage_over_bots(b)
        for key in sorted(set(a) ^ set(b)):
            diffs.append(f"{table} {key}: only in {'a' if key in a else 'b'}")
        for key in sorted(set(a) & set(b)):
            _close(a[key], b[key], tol, f"{table} {key}", diffs)
    ma, mb = manifest(out_a, run_a), manifest(out_b, run_b)
    for field in ("counts", "tables", "reconciliation", "worst_cases"):
        _close(ma[field], mb[field], tol, f"manifest.{field}", diffs)
    return diffs
