"""Output table contracts: pyarrow schemas, Hive partition columns and what
every column means (the tables reference of the docs is generated from it).

Partition columns are not stored inside the files (they live in the folder
names), which is what DuckDB, Spark and Athena expect of Hive layouts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import pyarrow as pa

_S, _D, _I, _B, _L = pa.string(), pa.float64(), pa.int64(), pa.bool_(), pa.list_(pa.string())

PARTITION_DOCS = {
    "run_date": "the run's date (`--run-date`, default today, UTC): the `run_date=` folder",
    "bot": "the bot's name: the `bot=` folder",
}


@dataclass(frozen=True)
class TableSpec:
    name: str
    schema: pa.Schema            # columns stored in the files
    partitions: tuple[str, ...]  # Hive partition columns, outermost first
    doc: str = ""                # what the table holds: who writes it, one row per what
    columns: Mapping[str, str] = field(default_factory=dict)  # column -> meaning


def table(name: str, doc: str, columns: Sequence[tuple[str, pa.DataType, str]],
          partitions: tuple[str, ...]) -> TableSpec:
    """A table from (column, type, meaning) triples: the schema and its docs in one place."""
    docs = {c: meaning for c, _, meaning in columns}
    docs.update({p: PARTITION_DOCS[p] for p in partitions})
    return TableSpec(name, pa.schema([(c, typ) for c, typ, _ in columns]), partitions, doc, docs)


METRIC_NAME_RULE = "letters, digits and '_', starting with a letter"
MAX_METRIC_NAME = 64


def is_metric_name(name: object) -> bool:
    """A name that may go into scores.metric: the config's own metrics, rubrics
    and installed plugins are held to it alike."""
    return (isinstance(name, str) and 0 < len(name) <= MAX_METRIC_NAME and name[0].isalpha()
            and name.replace("_", "").isalnum() and name.isascii())


RESULTS = table("results", "Written by `evalbeam run`: one row per case × bot.", [
    ("run_id", _S, "the run id"),
    ("case_id", _S, "the case's id (from the input, or `h-` + a SHA-1 of the row's content)"),
    ("suite", _S, "the case's suite (null when the input has none)"),
    ("question", _S, "the user's input"),
    ("expected_answer", _S, "the reference answer; the first one when the case has several"),
    ("answer", _S, "the bot's answer (null when the bot failed)"),
    ("contexts", _L, "the passages the answer is checked against: the case's, or those an "
                     "`http` bot returned"),
    ("tags", _L, "the case's free labels"),
    ("latency_ms", _D, "the bot call's time on the wire, ms (null for recorded answers)"),
    ("verdict", _S, "PASS, WARN, FAIL or ERROR (the bot failed)"),
    ("verdict_reason", _S, "the rule that decided, or why none did (and the rules skipped "
                           "because their metric was null)"),
    ("error", _S, "why the bot failed (null when it answered)"),
    ("bot_details", _S, "JSON: what the bot reported (attempts, total_ms, HTTP status, tokens, "
                        "a matched FAQ question, ...; `secrets_scrubbed: true` when a "
                        "configured secret was removed from the answer, its trace or any "
                        "other text of the row)"),
    ("label", _S, "a reviewer's judgement of the recorded answer, as text (`PASS`, `0.75`), "
                  "for `evalbeam calibrate`"),
    ("references", _L, "every reference when the case has several, else null"),
    ("messages", _S, "the conversation's earlier turns (JSON), null for a single turn"),
    ("decided_by", _S, "with `judge.escalate`: `offline` when the offline rules' verdict "
                       "stands, `escalated` when the judge's and classifier's rules decided, "
                       "`escalation_failed` when the row was escalated but none of their "
                       "metrics could be computed (a failed call, a cap, an open breaker, not "
                       "sampled: its offline WARN stands); null without a cascade (schema 4)"),
], ("run_date", "bot"))

SCORES = table("scores", "Written by `evalbeam run`: one row per case × bot × metric.", [
    ("run_id", _S, "the run id"),
    ("case_id", _S, "the case's id"),
    ("suite", _S, "the case's suite"),
    ("metric", _S, "the metric's name"),
    ("value", _D, "the score; null when it cannot be computed (never 0 for that)"),
    ("details", _S, "JSON: the metric's parts (precision and recall, the facts checked, the "
                    "judge's reasons and raw score, ...; `secrets_scrubbed: true` when a "
                    "configured secret was removed from the details or the error)"),
    ("error", _S, "why value is null (`no expected_answer`, `no contexts`, `bot failed: …`)"),
], ("run_date", "bot"))

SUMMARY = table("summary", "Written by `evalbeam run`: one row per bot × suite × metric, and "
                "one row per bot × suite with metric `verdict` (the verdict counts).", [
    ("run_id", _S, "the run id"),
    ("bot", _S, "the bot's name"),
    ("suite", _S, "the suite; `*` for all suites together"),
    ("metric", _S, "the metric's name, or `verdict`"),
    ("count", _I, "rows with a value"),
    ("missing", _I, "rows whose value is null"),
    ("mean", _D, "the mean of the values; for `verdict` the pass rate"),
    ("p50", _D, "the median (exact up to 10,000 values, else within 0.5%)"),
    ("p90", _D, "the 90th percentile"),
    ("min", _D, "the smallest value"),
    ("max", _D, "the largest value"),
    ("higher_is_better", _B, "false for ↓ metrics, where lower is better; null for a metric "
                             "with no better direction (`answer_length`)"),
    ("pass_count", _I, "`verdict` rows: PASS verdicts"),
    ("warn_count", _I, "`verdict` rows: WARN verdicts"),
    ("fail_count", _I, "`verdict` rows: FAIL verdicts"),
    ("error_count", _I, "`verdict` rows: ERROR verdicts"),
    ("ci_low", _D, "lower end of the 95% interval of `mean` (Student's t; Wilson's for the "
                   "pass rate and 0/1 metrics); null with fewer than two values"),
    ("ci_high", _D, "upper end of that interval"),
    ("sampled", _B, "true for a judge metric computed on `judge.sample`'s rows: `count` and "
                    "`missing` are the sample's, `mean` and its interval estimate all "
                    "`population` rows (stratified by suite, finite population correction) "
                    "(schema 4)"),
    ("population", _I, "sampled metrics: the rows the sample was drawn from (schema 4)"),
], ("run_date",))

ERRORS = table("errors", "Written by `evalbeam run`: one row per input row that could not be "
               "evaluated, failed bot call, failed judge question, row whose embedding or "
               "classifier calls failed, or repeated case id.", [
    ("run_id", _S, "the run id"),
    ("stage", _S, "where it failed: `read`, `bot`, `judge`, `embedding` or `classifier`"),
    ("case_id", _S, "the case's id, when known"),
    ("bot", _S, "the bot, for `bot`, `judge`, `embedding` and `classifier` rows"),
    ("error_type", _S, "the kind of problem (`invalid_json`, `duplicate_case_id`, "
                       "`judge_call_failed`, ...)"),
    ("message", _S, "the reason, one line"),
    ("source", _S, "where the row came from (`file#row`)"),
], ("run_date",))

# errors/ stages of remote calls made for a row's metrics, whose failure costs the
# row those metrics (null, with the same reason): stage -> (the manifest's count,
# what one such row is called in the run's one-line summary)
CALL_ERROR_STAGES: dict[str, tuple[str, str]] = {
    "judge": ("judge_errors", "failed judge question"),
    "embedding": ("embedding_errors", "embedding failure"),
    "classifier": ("classifier_errors", "classifier failure"),
}
CALL_ERROR_COUNTS: tuple[str, ...] = tuple(key for key, _ in CALL_ERROR_STAGES.values())

USAGE = table("usage", "Written by `evalbeam run`: one row per endpoint × model × purpose × "
              "bot × metric for each set of metrics that calls served together (so a "
              "metric can have several rows, e.g. split_among 1 and 3: sum over them).", [
    ("run_id", _S, "the run id"),
    ("endpoint", _S, "the endpoint's name in the config"),
    ("model", _S, "the model asked"),
    ("purpose", _S, "what the calls were for: `bot:<name>`, `embeddings`, `judge:<task>`, "
                    "`classifier:grounding`"),
    ("calls", _I, "requests sent (calls with at least one attempt; calls + retries = the "
                  "attempts made). Not counted: cache hits, calls a spend cap refused, calls "
                  "the endpoint's open circuit breaker failed before any attempt"),
    ("retries", _I, "attempts beyond the first"),
    ("failures", _I, "calls that ended without an answer: sent and failed after their "
                     "attempts, or failed at once by the endpoint's open circuit breaker "
                     "(`circuit open: ...`; not in calls)"),
    ("cache_hits", _I, "calls answered from the call cache (either tier): no request, no tokens"),
    ("prompt_tokens", _I, "input tokens, as the endpoint reported them"),
    ("completion_tokens", _I, "output tokens"),
    ("cost", _D, "from the endpoint's `price_per_million`; null when the endpoint has "
                 "no price (0 for calls without tokens: cache hits, failures)"),
    ("latency_p50_ms", _D, "median latency of the calls, ms (empty for offline bots)"),
    ("latency_p95_ms", _D, "95th percentile latency, ms"),
    ("shared_cache_hits", _I, "the part of cache_hits served by the shared tier (schema 2)"),
    ("bot", _S, "the bot whose rows the calls served; null when they served several "
                "(an embeddings request for a batch) (schema 3)"),
    ("metric", _S, "the metric the calls served; null for a bot's own calls. A call that "
                   "served several metrics is split among them: this row holds its share "
                   "(schema 3)"),
    ("split_among", _I, "how many metrics shared these calls; the shares of a count add up "
                        "to it exactly (schema 3)"),
    ("budget_refused", _I, "calls not sent because a spend cap of the run was reached "
                           "(schema 3)"),
    ("skipped_rows", _I, "rows of the bot its metric was not asked for: decided offline by "
                         "the cascade, or not sampled (schema 4)"),
    ("saved_calls", _D, "this row's calls per asked row × skipped_rows: an estimate of the "
                        "requests the skipped rows would have cost (schema 4)"),
], ("run_date",))

TABLES = {t.name: t for t in (RESULTS, SCORES, SUMMARY, ERRORS, USAGE)}

# Written by `evalbeam calibrate` after the run (one file per run id, replaced
# by a re-run of calibrate): per bot, one row per metric and one with metric
# "verdict". Metric rows carry the ranking statistics, the verdict row the
# agreement statistics; the other columns are null.
CALIBRATION = table("calibration", "Written by `evalbeam calibrate` (file "
                    "`part-<run_id>.0.parquet`, replaced by calibrating again): one row per "
                    "bot × metric, and one per bot with metric `verdict`.", [
    ("run_id", _S, "the calibrated run"),
    ("bot", _S, "the bot"),
    ("metric", _S, "the metric, or `verdict`"),
    ("n", _I, "labelled answers with a value (verdict rows: labelled answers)"),
    ("missing", _I, "labelled answers whose value is null"),
    ("unlabelled", _I, "the bot's answers without a label (ignored)"),
    ("acceptable", _I, "of the n, how many have a label above 0.5"),
    ("auc", _D, "metric rows: the chance that an acceptable answer scores better than an "
                "unacceptable one (ties count one half)"),
    ("pairwise_accuracy", _D, "metric rows: the same within the answers to one question"),
    ("pairs", _I, "metric rows: the (acceptable, unacceptable) pairs of one question"),
    ("threshold", _D, "metric rows: the cut that separates acceptable answers best "
                      "(largest Youden's J)"),
    ("threshold_accuracy", _D, "metric rows: the accuracy of that cut"),
    ("youden_j", _D, "metric rows: sensitivity + specificity − 1 at that cut"),
    ("higher_is_better", _B, "metric rows: the direction, from the run's summary/ (a metric "
                             "with no direction: the side the labels favour)"),
    ("accuracy", _D, "verdict rows: agreement of \"the verdict is PASS\" with \"the answer "
                     "is acceptable\""),
    ("kappa", _D, "verdict rows: Cohen's kappa of the same"),
    ("confusion", _S, "verdict rows: JSON {label category: {verdict: count}}"),
    ("acceptable_failed", _D, "verdict rows: share of acceptable answers given FAIL"),
    ("unacceptable_passed", _D, "verdict rows: share of unacceptable answers given PASS"),
], ("run_date",))
POSTRUN_TABLES = {t.name: t for t in (CALIBRATION,)}  # derived from a run's tables
COMPARISONS = table("comparisons", "Written by `evalbeam compare` (not by a run): one row "
                    "per bot × suite × metric of a candidate run against a baseline.", [
    ("run_id", _S, "the candidate run"),
    ("baseline_run_id", _S, "the baseline run"),
    ("bot", _S, "the candidate's bot"),
    ("baseline_bot", _S, "the baseline's bot: the same bot, unless bot against bot"),
    ("comparison", _S, "the page name under `runs/<run_id>/compare/`"),
    ("suite", _S, "the suite; `*` for all suites together"),
    ("metric", _S, "the metric, or `pass_rate`"),
    ("higher_is_better", _B, "false for ↓ metrics; null for a metric with no better "
                             "direction (`answer_length`): never better or worse"),
    ("n_pairs", _I, "paired cases where both runs have a value"),
    ("null_pairs", _I, "paired cases where either value is null"),
    ("baseline_mean", _D, "the baseline's mean over the pairs"),
    ("candidate_mean", _D, "the candidate's mean over the pairs"),
    ("delta", _D, "candidate_mean − baseline_mean"),
    ("ci_low", _D, "lower end of the 95% bootstrap interval of delta; null with fewer than "
                   "two pairs"),
    ("ci_high", _D, "upper end of that interval"),
    ("test", _S, "the paired test: Wilcoxon's signed-rank or McNemar's"),
    ("p_value", _D, "the test's p-value"),
    ("p_adjusted", _D, "Holm-adjusted across the metrics of the bot and suite"),
    ("significant", _B, "p_adjusted < 0.05"),
    ("wins", _I, "cases where the candidate is better (null for a metric with no direction)"),
    ("ties", _I, "cases with no change beyond min_difference"),
    ("losses", _I, "cases where the candidate is worse (null for a metric with no direction)"),
    ("only_in_baseline", _I, "case ids only the baseline has (not paired)"),
    ("only_in_candidate", _I, "case ids only the candidate has (not paired)"),
    ("duplicate_case_id", _I, "case ids that repeat within a run (not paired)"),
    ("transitions", _S, "pass_rate rows: JSON {\"PASS->FAIL\": n, ...}"),
    ("min_difference", _D, "per-case changes up to this were ties (`--min-difference`)"),
], ("run_date",))
# Every table a warehouse reads: the run's, then the post-run commands'.
EVERY_TABLE = {**TABLES, **POSTRUN_TABLES, COMPARISONS.name: COMPARISONS}

ALL_SUITES = "*"  # the `suite` value of summary rows that roll up every suite
VERDICT_METRIC = "verdict"  # summary rows carrying verdict counts
PASS_RATE = "pass_rate"  # the pass rate's name in comparisons/ and in trends
VERDICT_ORDER = ("PASS", "WARN", "FAIL", "ERROR")  # by severity
# Default minimum practical difference of comparisons/: per-case changes up to
# this are ties. Float noise between identical runs is ~1e-7 (BENCHMARKS.md);
# 0.001 on a [0, 1] metric is below anything a person would call a change.
MIN_DIFFERENCE = 1e-3
