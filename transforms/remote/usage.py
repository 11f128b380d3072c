"""usage/: CallRecords rolled up per endpoint × model (a bounded CombineFn)."""
from __future__ import annotations

from typing import Iterable, Mapping

import apache_beam as beam

from transforms.remote.client import CallRecord
from transforms.summary import MetricStats


class UsageFn(beam.CombineFn):
    """CallRecords of one (endpoint, model) -> the usage row's figures."""

    def create_accumulator(self):
        return {"calls": 0, "retries": 0, "failures": 0, "cache_hits": 0, "prompt_tokens": 0,
                "completion_tokens": 0, "latency": MetricStats()}

    def add_input(self, acc, rec: CallRecord):
        acc["calls"] += 1
        acc["retries"] += max(0, rec.attempts - 1)
        acc["failures"] += 0 if rec.ok else 1
        acc["cache_hits"] += 1 if rec.cache_hit else 0
        acc["prompt_tokens"] += rec.prompt_tokens
        acc["completion_tokens"] += rec.completion_tokens
        if rec.latency_ms is not None:
            acc["latency"].add(rec.latency_ms)
        return acc

    def merge_accumulators(self, accs):
        accs = list(accs)
        out = accs[0]
        for acc in accs[1:]:
            for k, v in acc.items():
                if k == "latency":
                    out[k].merge(v)
                else:
                    out[k] += v
        return out

    def extract_output(self, acc):
        latency = acc.pop("latency")
        p50, _ = latency.percentiles()
        return {**acc, "latency_p50_ms": p50, "latency_p95_ms": latency.percentile(95)}


def usage_rows(run_id: str, rolled: Iterable[tuple[tuple[str, str], dict]],
               prices: Mapping[str, Mapping[str, float]]) -> list[dict]:
    """Rows of usage/, with cost from each endpoint's price_per_million."""
    rows = []
    for (endpoint, model), figures in sorted(rolled):
        price = prices.get(endpoint, {})
        cost = None
        if price:
            cost = (figures["prompt_tokens"] * price.get("input", 0.0)
                    + figures["completion_tokens"] * price.get("output", 0.0)) / 1e6
        rows.append({"run_id": run_id, "endpoint": endpoint, "model": model, **figures,
                     "cost": cost})
    return rows
