"""Builds the evaluation graph: read -> answer -> score × metric -> verdict -> tables.

Everything from reading a shard to writing its rows is one fused stage, so a
worker streams its shards through every step without the runner holding the
whole collection; only small things (file lists, combiner accumulators,
counts) cross stage boundaries.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import apache_beam as beam
from apache_beam.pvalue import AsList, AsSingleton

from pipeline.config import Config
from schemas.tables import ERRORS, RESULTS, SCORES
from transforms.bots import AnswerWith
from transforms.faq_index import load_faq
from transforms.finalize import Finalize, RunInfo
from transforms.metrics.relevance import IdfTable, document_terms
from transforms.read import ReadCases, Shard, read_case_texts
from transforms.rows import (bot_error_row, duplicate_row, problem_row, result_row, score_rows,
                             worst_case_row)
from transforms.scoring import Scorer, ScoreWith
from transforms.remote.usage import MergeUsageFn
from transforms.summary import MetricStatsFn, summary_keys
from transforms.verdict import ApplyVerdict
from transforms.write import WriteRows

WORST_CASES_PER_BOT = 10


class DocumentFrequencyFn(beam.CombineFn):
    """Texts -> IdfTable (document frequencies over the run's input corpus)."""

    def create_accumulator(self):
        return Counter(), 0

    def add_input(self, acc, text: str):
        df, n = acc
        df.update(document_terms(text))
        return df, n + 1

    def merge_accumulators(self, accs):
        total, n = Counter(), 0
        for df, k in accs:
            total.update(df)
            n += k
        return total, n

    def extract_output(self, acc) -> IdfTable:
        df, n = acc
        return IdfTable.from_document_frequencies(df, n)


def _corpus_texts(item: tuple[str, Any], columns: Mapping[str, str]) -> Iterable[str]:
    kind, what = item
    if kind == "shard":
        yield from read_case_texts(what, columns)
    else:  # a FAQ file: its answers are responses the faq bot can give
        yield from load_faq(what)[1]


@dataclass(frozen=True)
class Plan:
    """Everything decided before the pipeline runs (validated up front)."""

    config: Config
    info: RunInfo
    shards: Sequence[Shard]
    columns: Mapping[str, str]
    scorers: Sequence[tuple[Scorer, dict]]


def build_pipeline(p: beam.Pipeline, plan: Plan) -> None:
    cfg, info = plan.config, plan.info
    out = (info.output, info.run_id, info.run_date)
    read = p | "ReadCases" >> ReadCases(list(plan.shards), plan.columns)
    cases, problems = read.cases, read.problems

    idf = None
    if any(s.uses_idf for s, _ in plan.scorers):
        sources = [("shard", s) for s in plan.shards] + [
            ("faq", b.faq) for b in cfg.bots if b.type == "faq_match"]
        idf = AsSingleton(
            p | "IdfCorpus" >> beam.Create(sources, reshuffle=len(sources) > 1)
            | "CorpusTexts" >> beam.FlatMap(_corpus_texts, dict(plan.columns))
            | "DocumentFrequencies" >> beam.CombineGlobally(DocumentFrequencyFn()))

    answered = (cases
                | "BatchCases" >> beam.BatchElements(min_batch_size=1, max_batch_size=256)
                | "AnswerWith" >> beam.ParDo(AnswerWith(cfg.bots, cfg.endpoints)).with_outputs(
                    AnswerWith.CALLS, main="turns"))
    turns = answered.turns
    for scorer, options in plan.scorers:
        side = {"idf": idf} if scorer.uses_idf else {}
        turns = turns | f"Score[{scorer.name}]" >> beam.ParDo(ScoreWith(scorer, options), **side)
    judged = turns | "ApplyVerdict" >> beam.ParDo(
        ApplyVerdict(cfg.verdict.rules, cfg.verdict.otherwise))

    run_id = info.run_id
    written = [
        judged | "ResultRows" >> beam.Map(result_row, run_id)
        | "WriteResults" >> WriteRows(RESULTS, *out),
        judged | "ScoreRows" >> beam.FlatMap(score_rows, run_id)
        | "WriteScores" >> WriteRows(SCORES, *out),
        judged | "BotErrors" >> beam.Filter(lambda t: t.error is not None)
        | "BotErrorRows" >> beam.Map(bot_error_row, run_id)
        | "WriteBotErrors" >> WriteRows(ERRORS, *out),
        problems | "ProblemRows" >> beam.Map(problem_row, run_id)
        | "WriteReadErrors" >> WriteRows(ERRORS, *out),
    ]
    duplicates = (cases | "CaseIds" >> beam.Map(lambda c: c.case_id)
                  | "CountIds" >> beam.combiners.Count.PerElement()
                  | "Duplicates" >> beam.Filter(lambda kv: kv[1] > 1))
    written.append(duplicates | "DuplicateRows" >> beam.Map(lambda kv: duplicate_row(*kv, run_id))
                   | "WriteDuplicateErrors" >> WriteRows(ERRORS, *out))

    metric_stats = (
        judged | "MetricValues" >> beam.FlatMap(
            lambda t: ((key, r.value) for m, r in t.scores.items()
                       for key in summary_keys(t.bot, t.case.suite, m)))
        | "MetricStats" >> beam.CombinePerKey(MetricStatsFn()))
    verdicts = (
        judged | "VerdictKeys" >> beam.FlatMap(
            lambda t: ((bot, suite, t.verdict) for bot, suite, _ in
                       summary_keys(t.bot, t.case.suite, "verdict")))
        | "CountVerdicts" >> beam.combiners.Count.PerElement())
    worst = (judged | "WorstKeys" >> beam.Map(lambda t: (t.bot, worst_case_row(t)))
             | "WorstCases" >> beam.combiners.Top.PerKey(WORST_CASES_PER_BOT,
                                                         key=lambda w: w["severity"]))
    counts = [
        cases | "CountValid" >> beam.combiners.Count.Globally()
        | "TagValid" >> beam.Map(lambda n: ("valid_cases", n)),
        problems | "CountInvalid" >> beam.combiners.Count.Globally()
        | "TagInvalid" >> beam.Map(lambda n: ("invalid_rows", n)),
        judged | "ErrorTurns" >> beam.Filter(lambda t: t.error is not None)
        | "CountBotErrors" >> beam.combiners.Count.Globally()
        | "TagBotErrors" >> beam.Map(lambda n: ("bot_errors", n)),
        duplicates | "CountDuplicates" >> beam.combiners.Count.Globally()
        | "TagDuplicates" >> beam.Map(lambda n: ("duplicate_case_ids", n)),
        p | "PlannedRows" >> beam.Create([("input_rows", info.planned_rows)]),
    ]
    usage = (answered[AnswerWith.CALLS]
             | "Usage" >> beam.CombinePerKey(MergeUsageFn()))

    _ = (p | "Once" >> beam.Create([None])
         | "Finalize" >> beam.ParDo(
             Finalize(info),
             AsList(written | "AllFiles" >> beam.Flatten()),
             AsList(metric_stats), AsList(verdicts),
             AsList(counts | "AllCounts" >> beam.Flatten()),
             AsList(worst), AsList(usage)))
