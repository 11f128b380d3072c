"""Output table contracts: pyarrow schemas and Hive partition columns.

Partition columns are not stored inside the files (they live in the folder
names), which is what DuckDB, Spark and Athena expect of Hive layouts.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

_S, _D, _I = pa.string(), pa.float64(), pa.int64()


@dataclass(frozen=True)
class TableSpec:
    name: str
    schema: pa.Schema            # columns stored in the files
    partitions: tuple[str, ...]  # Hive partition columns, outermost first


RESULTS = TableSpec("results", pa.schema([
    ("run_id", _S), ("case_id", _S), ("suite", _S), ("question", _S),
    ("expected_answer", _S), ("answer", _S), ("contexts", pa.list_(_S)), ("tags", pa.list_(_S)),
    ("latency_ms", _D), ("verdict", _S), ("verdict_reason", _S), ("error", _S),
    ("bot_details", _S), ("label", _S),
    ("references", pa.list_(_S)),  # every reference when the case has several
    ("messages", _S),              # the conversation's earlier turns (JSON), when any
]), ("run_date", "bot"))

SCORES = TableSpec("scores", pa.schema([
    ("run_id", _S), ("case_id", _S), ("suite", _S), ("metric", _S), ("value", _D),
    ("details", _S), ("error", _S),
]), ("run_date", "bot"))

SUMMARY = TableSpec("summary", pa.schema([
    ("run_id", _S), ("bot", _S), ("suite", _S), ("metric", _S), ("count", _I), ("missing", _I),
    ("mean", _D), ("p50", _D), ("p90", _D), ("min", _D), ("max", _D),
    ("higher_is_better", pa.bool_()),
    ("pass_count", _I), ("warn_count", _I), ("fail_count", _I), ("error_count", _I),
    ("ci_low", _D), ("ci_high", _D),  # 95% interval of `mean` (t, or Wilson for 0/1 values)
]), ("run_date",))

ERRORS = TableSpec("errors", pa.schema([
    ("run_id", _S), ("stage", _S), ("case_id", _S), ("bot", _S), ("error_type", _S),
    ("message", _S), ("source", _S),
]), ("run_date",))

USAGE = TableSpec("usage", pa.schema([
    ("run_id", _S), ("endpoint", _S), ("model", _S), ("purpose", _S), ("calls", _I),
    ("retries", _I),
    ("failures", _I), ("cache_hits", _I), ("prompt_tokens", _I), ("completion_tokens", _I),
    ("cost", _D), ("latency_p50_ms", _D), ("latency_p95_ms", _D),
    ("shared_cache_hits", _I),  # schema 2
]), ("run_date",))

TABLES = {t.name: t for t in (RESULTS, SCORES, SUMMARY, ERRORS, USAGE)}

# Written by `evalbeam calibrate` after the run (one file per run id, replaced
# by a re-run of calibrate): per bot, one row per metric and one with metric
# "verdict". Metric rows carry the ranking statistics, the verdict row the
# agreement statistics; the other columns are null.
CALIBRATION = TableSpec("calibration", pa.schema([
    ("run_id", _S), ("bot", _S), ("metric", _S),
    ("n", _I),                      # labelled answers with a value (verdict: labelled answers)
    ("missing", _I),                # labelled answers whose value is null
    ("unlabelled", _I),             # the bot's answers without a label (ignored)
    ("acceptable", _I),             # of the n, how many have a label above 0.5
    ("auc", _D), ("pairwise_accuracy", _D), ("pairs", _I),
    ("threshold", _D), ("threshold_accuracy", _D), ("youden_j", _D),
    ("higher_is_better", pa.bool_()),
    ("accuracy", _D), ("kappa", _D),
    ("confusion", _S),              # JSON: {label category: {verdict: count}}
    ("acceptable_failed", _D), ("unacceptable_passed", _D),
]), ("run_date",))
POSTRUN_TABLES = {t.name: t for t in (CALIBRATION,)}  # derived from a run's tables
# written by `evalbeam compare` (not by a run): one row per bot × suite × metric
COMPARISONS = TableSpec("comparisons", pa.schema([
    ("run_id", _S), ("baseline_run_id", _S),       # candidate and baseline runs
    ("bot", _S), ("baseline_bot", _S),             # the same bot, unless bot against bot
    ("comparison", _S),                            # page name under runs/<run_id>/compare/
    ("suite", _S), ("metric", _S), ("higher_is_better", pa.bool_()),
    ("n_pairs", _I), ("null_pairs", _I),           # pairs with both values / with a null
    ("baseline_mean", _D), ("candidate_mean", _D), ("delta", _D),
    ("ci_low", _D), ("ci_high", _D),               # 95% bootstrap interval of delta
    ("test", _S), ("p_value", _D), ("p_adjusted", _D), ("significant", pa.bool_()),
    ("wins", _I), ("ties", _I), ("losses", _I),
    ("only_in_baseline", _I), ("only_in_candidate", _I), ("duplicate_case_id", _I),
    ("transitions", _S),                           # pass_rate rows: JSON {"PASS->FAIL": n, ...}
    ("min_difference", _D),                        # changes up to it were ties (--min-difference)
]), ("run_date",))

ALL_SUITES = "*"  # the `suite` value of summary rows that roll up every suite
VERDICT_METRIC = "verdict"  # summary rows carrying verdict counts
PASS_RATE = "pass_rate"  # the pass rate's name in comparisons/ and in trends
VERDICT_ORDER = ("PASS", "WARN", "FAIL", "ERROR")  # by severity
