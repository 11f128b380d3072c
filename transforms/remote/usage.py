"""usage/: calls rolled up per endpoint × model × purpose × bot × the set of
metrics they served (a row per metric of the set), bounded in memory.

The purpose says what a call was for: `bot:<name>`, `embeddings`,
`judge:<task>` (the judge tasks and the metrics each serves are listed in
docs/guides/judges.md) or `classifier:grounding`. `calls` counts requests that went to
the endpoint (`calls` + `retries` = the attempts made); `failures` counts
calls that ended without an answer: those sent that failed after their
attempts, and those the endpoint's open circuit breaker failed before any
attempt or the judge did not send, larger than judge.max_prompt_tokens (in
`failures` only, not in `calls`). A reply served from the call
cache counts in `cache_hits` instead, with no tokens; `shared_cache_hits` is the part of those served by
tier 2 (the objects every worker shares), the rest came from the worker's
own SQLite file. `budget_refused` counts calls not sent because a spend cap
of the run was reached (transforms/remote/budget.py).

Attribution: every call is counted for the bot whose row it served (null
when it served several, e.g. an embeddings request for a batch) and for the
metrics it served. A call that served several metrics (one judge question
feeding faithfulness and answer_correctness) is split among them: the
figures of its usage rows are its share, `split_among` says among how many,
and the shares of a count add up to it exactly (largest remainder), so sums
over usage/ still count every call once.

A DoFn that makes remote calls gives its callers a CallLog; the log tallies
each CallRecord into a per-(endpoint, model, purpose, bot, metrics)
accumulator at once, and the DoFn emits the few accumulators at the end of
its bundle. They merge with MergeUsageFn, so no per-call element ever
crosses a stage boundary.
"""
from __future__ import annotations

import threading
import uuid
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import apache_beam as beam

from transforms.remote.budget import cost_of, refusing_cap

if TYPE_CHECKING:  # the HTTP client (httpx, tenacity) stays out of runs without remote calls
    from transforms.remote.client import CallRecord
from transforms.stats.accumulator import MetricStats

COUNTED = ("calls", "retries", "failures", "cache_hits", "prompt_tokens", "completion_tokens",
           "shared_cache_hits", "budget_refused")


# calls whose reply reported no token counts (counted in `calls`, with 0 tokens)
# and their prompt tokens as estimated before sending: for the manifest's usage
# block and the report, not columns of usage/
UNREPORTED = ("unreported_calls", "unreported_estimate")


def new_usage() -> dict:
    """A tally; `refused_by` (cap name -> calls it refused) says which cap refused
    what, for the manifest's spend_caps (usage/ has budget_refused only);
    `tallies`: the ids of the CallLog tallies merged into it, which Finalize
    matches against the request journal (transforms/remote/journal.py)."""
    return {**{k: 0 for k in COUNTED}, "latency": MetricStats(), "refused_by": {},
            **{k: 0 for k in UNREPORTED}, "tallies": set()}


# figures of an accumulator that are not columns of usage/
NOT_COLUMNS = ("refused_by", "tallies", *UNREPORTED)


def add_call(acc: dict, rec: CallRecord) -> dict:
    if rec.budget_refused:  # not sent: a spend cap was reached
        acc["budget_refused"] += 1
        cap = refusing_cap(rec.error) or "?"
        acc["refused_by"][cap] = acc["refused_by"].get(cap, 0) + 1
        return acc
    if rec.cache_hit:
        acc["cache_hits"] += 1
        acc["shared_cache_hits"] += rec.shared_cache_hit
        return acc
    acc["failures"] += 0 if rec.ok else 1
    if not rec.sent:  # failed at once by the endpoint's open circuit breaker: no request
        return acc
    acc["calls"] += 1
    acc["retries"] += max(0, rec.attempts - 1)
    acc["prompt_tokens"] += rec.prompt_tokens
    acc["completion_tokens"] += rec.completion_tokens
    if getattr(rec, "unreported_tokens", None) is not None:
        acc["unreported_calls"] += 1
        acc["unreported_estimate"] += rec.unreported_tokens
    if rec.latency_ms is not None:
        acc["latency"].add(rec.latency_ms)
    return acc


UsageKey = tuple[str, str, str, "str | None", tuple[str, ...]]


def usage_key(endpoint: str, model: str, purpose: str, bot: str | None = None,
              metrics: tuple[str, ...] = ()) -> UsageKey:
    """(endpoint, model, purpose, bot, metrics): what a usage accumulator counts."""
    return endpoint, model, purpose, bot, tuple(metrics)


def merge_usage(into: dict, other: dict) -> dict:
    for k in COUNTED:
        into[k] += other[k]
    for k in UNREPORTED:
        into[k] += other.get(k, 0)
    into["latency"].merge(other["latency"])
    into["tallies"] |= other.get("tallies", set())
    for cap, n in other["refused_by"].items():
        into["refused_by"][cap] = into["refused_by"].get(cap, 0) + n
    return into


class CallLog:
    """Thread-safe tally of one DoFn's calls (the calls run on the loop thread).
    Each tally (the calls between two drains) has an id of its own."""

    def __init__(self):
        self._lock = threading.Lock()
        self._accs: dict[tuple[str, str, str], dict] = {}
        self._tally = uuid.uuid4().hex

    def add(self, rec: CallRecord) -> str:
        """Count the call; the id of the tally that counts it."""
        bot = rec.bot or (rec.purpose[4:] if rec.purpose.startswith("bot:") else None)
        with self._lock:
            add_call(self._accs.setdefault(usage_key(rec.endpoint, rec.model, rec.purpose, bot,
                                                     rec.metrics), new_usage()), rec)
            return self._tally

    def drain(self) -> list[tuple[tuple[str, str, str], dict]]:
        """The tally's accumulators, each marked with its id; a new tally starts."""
        with self._lock:
            items, self._accs = list(self._accs.items()), {}
            for _, acc in items:
                acc["tallies"] = {self._tally}
            self._tally = uuid.uuid4().hex
        return items


def count_calls(items: Iterable[tuple[tuple[str, str, str], dict]], counters: Mapping) -> None:
    """Beam counters from drained tallies (called on the DoFn's thread)."""
    for _, acc in items:
        counters["calls"].inc(acc["calls"])
        counters["retries"].inc(acc["retries"])
        counters["failed_calls"].inc(acc["failures"])
        counters["cache_hits"].inc(acc["cache_hits"])
        counters["shared_cache_hits"].inc(acc["shared_cache_hits"])


def call_counters() -> dict:
    return {name: beam.metrics.Metrics.counter("evalbeam.remote", name)
            for name in ("calls", "retries", "failed_calls", "cache_hits", "shared_cache_hits")}


class MergeUsageFn(beam.CombineFn):
    """Usage accumulators of one (endpoint, model, purpose) -> the usage row's figures."""

    def create_accumulator(self) -> dict:
        return new_usage()

    def add_input(self, acc: dict, partial: dict) -> dict:
        return merge_usage(acc, partial)

    def merge_accumulators(self, accs):
        accs = iter(accs)
        out = next(accs)
        for acc in accs:
            merge_usage(out, acc)
        return out

    def extract_output(self, acc: dict) -> dict:
        latency = acc["latency"]
        return {**{k: acc[k] for k in COUNTED}, "latency_p50_ms": latency.percentile(50),
                "latency_p95_ms": latency.percentile(95), "refused_by": dict(acc["refused_by"]),
                **{k: acc[k] for k in UNREPORTED}, "tallies": frozenset(acc["tallies"])}


def refused_by_cap(rolled: Iterable[tuple[UsageKey, dict]]) -> dict[str, int]:
    """Calls each spend cap refused, over the run's rolled-up usage."""
    out: dict[str, int] = {}
    for _, figures in rolled:
        for cap, n in figures.get("refused_by", {}).items():
            out[cap] = out.get(cap, 0) + n
    return out


def unreported_by_endpoint(rolled: Iterable[tuple[UsageKey, dict]],
                           prices: Mapping[str, Mapping[str, float]]) -> dict[str, dict]:
    """Per endpoint, the calls whose replies reported no token counts (usage/
    has them with 0 tokens and cost 0), their prompt tokens as estimated from
    the prompt's length and what those would cost (None without a price)."""
    out: dict[str, dict] = {}
    for (endpoint, *_), figures in rolled:
        if figures.get("unreported_calls"):
            e = out.setdefault(endpoint, {"calls": 0, "estimated_prompt_tokens": 0.0})
            e["calls"] += figures["unreported_calls"]
            e["estimated_prompt_tokens"] += figures["unreported_estimate"]
    for endpoint, e in out.items():
        e["estimated_prompt_tokens"] = round(e["estimated_prompt_tokens"])
        e["estimated_cost"] = cost_of(e["estimated_prompt_tokens"], 0, prices.get(endpoint))
    return dict(sorted(out.items()))


def unreported_judge_cost(rolled: Iterable[tuple[UsageKey, dict]],
                          prices: Mapping[str, Mapping[str, float]]) -> float:
    """What judge calls without token counts cost at their prompt estimate, as
    judge.max_cost's ledger counted them (budget.actual_use)."""
    return sum(cost_of(figures.get("unreported_estimate", 0), 0, prices.get(endpoint)) or 0.0
               for (endpoint, _, purpose, *_), figures in rolled
               if purpose.startswith("judge:"))


def split_count(n: int, k: int) -> list[int]:
    """n split into k integer shares that add up to n (the first n mod k get one more)."""
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


def split_figures(figures: Mapping[str, Any], metrics: tuple[str, ...]
                  ) -> list[tuple[str | None, dict]]:
    """(metric, its share of the figures) for each metric a tally served; the
    counts' shares add up exactly; latency percentiles are the tally's own."""
    if not metrics:
        return [(None, dict(figures))]
    shares = {k: split_count(int(figures[k]), len(metrics)) for k in COUNTED}
    return [(m, {**figures, **{k: shares[k][i] for k in COUNTED}})
            for i, m in enumerate(metrics)]


def usage_rows(run_id: str, rolled: Iterable[tuple[UsageKey, dict]],
               prices: Mapping[str, Mapping[str, float]]) -> list[dict]:
    """Rows of usage/: a tally that served k metrics becomes k rows, each with
    its share; cost from each endpoint's price_per_million."""
    rows = []
    for (endpoint, model, purpose, bot, metrics), figures in rolled:
        figures = {k: v for k, v in figures.items() if k not in NOT_COLUMNS}
        for metric, share in split_figures(figures, metrics):
            rows.append({"run_id": run_id, "endpoint": endpoint, "model": model,
                         "purpose": purpose, **share,
                         "cost": cost_of(share["prompt_tokens"], share["completion_tokens"],
                                         prices.get(endpoint)),
                         "bot": bot, "metric": metric,
                         "split_among": len(metrics) if metrics else None})
    rows.sort(key=lambda r: tuple("" if r[k] is None else r[k]
                                  for k in ("endpoint", "model", "purpose", "bot", "metric")))
    return rows
