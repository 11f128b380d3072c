"""Summaries: CombineFns over metric values and verdicts, bounded in memory.

Percentiles (transforms/stats/accumulator.py) are exact (numpy's linear
interpolation) while a group holds at most EXACT_LIMIT values; beyond that
they come from a DDSketch-style
histogram of logarithmic buckets (every value within 0.5% of the true one),
whose size depends on the range of the values, not their number. (Beam's
ApproximateQuantiles sketch, sized for 10^9 elements, grew to ~1.6 MB of
Python floats per group and dominated the memory of million-row runs.)

Every mean gets a 95% confidence interval (`ci_low`, `ci_high`) from count,
mean and M2 (the sum of squared deviations, merged exactly across workers):
Student's t interval, or Wilson's when every value is 0 or 1 (and for the
pass rate); see transforms/stats/intervals.py. A 20-bin histogram over [0, 1] rides along
for the HTML report's distributions (not a table column).
"""
from __future__ import annotations

from typing import Iterable, Iterator, Mapping

import apache_beam as beam

from schemas.tables import ALL_SUITES, VERDICT_METRIC
from transforms.score.scoring import NO_DIRECTION, higher_is_better
from transforms.stats.accumulator import MetricStats
from transforms.stats.intervals import sampled_interval, stratified_mean, wilson_interval


class MergingCombineFn(beam.CombineFn):
    """A CombineFn whose accumulator (of class `accumulator`) adds an input
    with add(value) and takes another in with merge(other)."""

    accumulator: type

    def create_accumulator(self):
        return self.accumulator()

    def add_input(self, acc, value):
        acc.add(value)
        return acc

    def merge_accumulators(self, accs: Iterable):
        accs = iter(accs)
        first = next(accs)
        for acc in accs:
            first.merge(acc)
        return first


class MetricStatsFn(MergingCombineFn):
    """Values (float or None) -> summary statistics row fragment."""

    accumulator = MetricStats

    def extract_output(self, acc: MetricStats) -> dict:
        return acc.as_row()


# The stratum of the rows without a suite, for sampled metrics only: their
# statistics enter the all-suites estimate but are no summary row of their own.
NO_SUITE = "\x00no suite"


def summary_keys(bot: str, suite: str | None, metric: str,
                 sampled: bool = False) -> tuple[tuple[str, str, str], ...]:
    """Every group a value belongs to: its suite and the all-suites roll-up
    (a sampled metric's rows without a suite: also their own stratum)."""
    overall = (bot, ALL_SUITES, metric)
    if suite is None or suite == ALL_SUITES:
        return (overall, (bot, NO_SUITE, metric)) if sampled else (overall,)
    return (overall, (bot, suite, metric))


def metric_values(bot: str, suite: str | None, scores, sampled: frozenset[str] = frozenset(),
                  not_sampled: str = "", outside_sample: bool = False
                  ) -> Iterator[tuple[tuple[str, str, str], float | None]]:
    """(summary key, value) of every score of a row. A sampled metric's rows
    outside the sample are left out: they are neither values nor missing,
    whatever their reason (`not sampled`, or decided offline by the cascade)."""
    for metric, result in scores.items():
        is_sampled = metric in sampled
        if is_sampled and (outside_sample or result.error == not_sampled):
            continue
        for key in summary_keys(bot, suite, metric, is_sampled):
            yield key, result.value


def _rows_per_group(verdicts: Iterable[tuple[tuple[str, str, str], int]]
                    ) -> dict[tuple[str, str], int]:
    """Rows (case × bot) per (bot, suite), the rows without a suite under NO_SUITE."""
    rows = {key: sum(c.values()) for key, c in group_verdicts(verdicts).items()}
    for (bot, suite), n in list(rows.items()):
        if suite == ALL_SUITES:
            rest = n - sum(m for (b, s), m in rows.items() if b == bot and s != ALL_SUITES)
            rows[(bot, NO_SUITE)] = rest
    return rows


def sampled_rows(rows: list[dict], population: Mapping[tuple[str, str], int]) -> list[dict]:
    """A sampled metric's summary rows as estimates of the whole population:
    each suite's interval with the finite population correction, the
    all-suites mean and interval stratified by suite (transforms/publish/
    intervals.py); `population` says how many rows the sample was drawn from."""
    by_group: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by_group.setdefault((r["bot"], r["metric"]), []).append(r)
    out = []
    for (bot, metric), group in by_group.items():
        strata = []
        for r in group:
            r.update(sampled=True, population=population.get((bot, r["suite"]), 0))
            bounds = (0.0, 1.0) if r["count"] and 0.0 <= r["min"] and r["max"] <= 1.0 else None
            if r["suite"] != ALL_SUITES:
                r["ci_low"], r["ci_high"] = sampled_interval(
                    r["count"], r["mean"], r["m2"], r["count"] + r["missing"],
                    r["population"], r["binary"], bounds)
                strata.append((r["population"], r["count"] + r["missing"], r["count"],
                               r["mean"], r["m2"]))
        for r in group:
            if r["suite"] == ALL_SUITES:
                bounds = (0.0, 1.0) if r["count"] and 0.0 <= r["min"] and r["max"] <= 1.0 \
                    else None
                r["mean"], r["ci_low"], r["ci_high"] = stratified_mean(strata, bounds)
        out += [r for r in group if r["suite"] != NO_SUITE]
    return out


def group_verdicts(counted: Iterable[tuple[tuple[str, str, str], int]]
                   ) -> dict[tuple[str, str], dict[str, int]]:
    """((bot, suite, verdict), n) pairs -> {(bot, suite): {verdict: n}} with every verdict."""
    grouped: dict[tuple[str, str], dict[str, int]] = {}
    for (bot, suite, verdict), n in counted:
        counts = grouped.setdefault((bot, suite), {"PASS": 0, "WARN": 0, "FAIL": 0, "ERROR": 0})
        counts[verdict] = counts.get(verdict, 0) + n
    return grouped


def summary_rows(run_id: str, metric_stats: Iterable[tuple[tuple[str, str, str], dict]],
                 verdicts: Iterable[tuple[tuple[str, str, str], int]],
                 lower_is_better: frozenset[str],
                 sampled: frozenset[str] = frozenset(),
                 no_direction: frozenset[str] = NO_DIRECTION) -> list[dict]:
    """Rows of the summary table, sorted for stable output; `sampled`: the
    metrics computed on a sample (their rows are estimates, see sampled_rows);
    `no_direction`: the metrics whose higher_is_better is null."""
    verdicts = list(verdicts)
    rows, drawn = [], []
    for (bot, suite, metric), stats in metric_stats:
        row = {"run_id": run_id, "bot": bot, "suite": suite, "metric": metric, **stats,
               "higher_is_better": higher_is_better(metric, lower_is_better, no_direction),
               "sampled": False}
        (drawn if metric in sampled else rows).append(row)
    if drawn:
        rows += sampled_rows(drawn, _rows_per_group(verdicts))
    for (bot, suite), counts in group_verdicts(verdicts).items():
        n = sum(counts.values())
        ci_low, ci_high = wilson_interval(counts["PASS"], n)
        rows.append({"run_id": run_id, "bot": bot, "suite": suite, "metric": VERDICT_METRIC,
                     "count": n, "missing": 0,
                     "mean": counts["PASS"] / n if n else None,  # the pass rate
                     "ci_low": ci_low, "ci_high": ci_high,
                     "pass_count": counts["PASS"], "warn_count": counts["WARN"],
                     "fail_count": counts["FAIL"], "error_count": counts["ERROR"],
                     "sampled": False})
    rows.sort(key=lambda r: (r["bot"], r["suite"] != ALL_SUITES, r["suite"], r["metric"]))
    return rows
