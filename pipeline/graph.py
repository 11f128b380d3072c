"""Builds the evaluation graph from one named PTransform per stage:

    Read -> Answer -> Enrich -> Score -> Decide -> Publish

(as TFMA composes ExtractEvaluateAndWriteResults). Everything from reading a
shard to writing its rows is one fused stage, so a worker streams its shards
through every step without the runner holding the whole collection; only
small things (file lists, combiner accumulators, counts) cross stage
boundaries.
"""
from __future__ import annotations

import typing

import apache_beam as beam
from apache_beam.pvalue import AsList, AsSingleton

from pipeline import beam_speed
from pipeline.plan import Plan, worker_cores
from schemas.tables import CALL_ERROR_STAGES, ERRORS, RESULTS, SCORES
from transforms.answer.bots import AnswerWith
from transforms.publish.finalize import Finalize
from transforms.publish.head_to_head import HeadToHead
from transforms.publish.lease import AttemptWatch
from transforms.publish.progress_objects import ProgressWriter
from transforms.score.corpus import (BertIdfFn, DocumentFrequencyFn, ReadCorpus,
                                     TokenizeReferences, corpus_sources)
from transforms.read.duplicates import FindDuplicateIds
from transforms.read.cases import ReadCases
from transforms.publish.rows import (bot_error_row, call_error_count, call_error_rows,
                                     duplicate_row, problem_row, result_row, score_rows,
                                     worst_case_row)
from transforms.score.scoring import SCORERS, ScoreAll, ScoreWith
from transforms.remote.usage import MergeUsageFn
from transforms.enrich.judge.sample import NOT_SAMPLED, OUTSIDE_SAMPLE, SampleCases
from transforms.publish.tallies import TallyAll
from transforms.publish.summary import MetricStatsFn, metric_values, summary_keys
from transforms.decide.cascade import ESCALATED, ESCALATION_FAILED, mark_undecided
from transforms.publish.savings import skipped_keys
from transforms.decide.verdict import ESCALATION, OFFLINE, SINGLE, ApplyVerdict
from transforms.publish.write import WriteRows

WORST_CASES_PER_BOT = 10


def reporting(dofn, plan: Plan):
    """A calling DoFn that writes the run's progress object from its first call
    (when the run has a lease), so a watcher sees calls and answered or judged
    turns before any shard is written, and sends nothing more once the
    attempt is stopped (its lease marked failed)."""
    info = plan.info
    if info.lease_ttl_s is not None:
        dofn.progress_key = (info.output, info.run_id, info.attempt)
        dofn.progress_writer = ProgressWriter  # given here: remote/ sits below publish/
        dofn.attempt_watch = AttemptWatch
    return dofn


class Read(beam.PTransform):
    """Shards of the input -> valid EvalCases (`cases`) and RowProblems (`problems`)."""

    def __init__(self, plan: Plan):
        super().__init__()
        self._plan = plan

    def expand(self, pbegin):
        return pbegin | "ReadCases" >> ReadCases(list(self._plan.shards), self._plan.columns)


class Answer(beam.PTransform):
    """EvalCases -> one Turn per case × bot (main output) and call tallies (`calls`)."""

    def __init__(self, plan: Plan):
        super().__init__()
        self._plan = plan

    def expand(self, cases):
        cfg = self._plan.config
        return (cases
                | "BatchCases" >> beam.BatchElements(min_batch_size=1, max_batch_size=256)
                | "AnswerWith" >> beam.ParDo(reporting(AnswerWith(
                    cfg.bots, cfg.endpoints, self._plan.cache, self._plan.budget,
                    self._plan.columns["answer"]), self._plan))
                # what Beam's bytecode inference of process() concludes (Any), said
                # up front: inferring it cost 0.07 s of a 30-row run's start
                .with_output_types(typing.Any)
                .with_outputs(AnswerWith.CALLS, main="turns"))


# the parts of Enrich
ENRICH_ALL, ENRICH_OFFLINE, ENRICH_REMOTE = "all", "offline", "remote"


class Enrich(beam.PTransform):
    """Turns -> Turns with the embeddings, judge outcomes and classifier
    readings the metrics need: `part` ENRICH_ALL, or ENRICH_OFFLINE (embeddings)
    and ENRICH_REMOTE (judge, classifier) apart for the cascade.

    Returns (turns, [call tallies]); a stage nothing needs is left out."""

    def __init__(self, plan: Plan, sampled=None, part: str = ENRICH_ALL):
        """sampled: the case ids judge.sample chose (None: every row is judged)."""
        super().__init__()
        self._plan, self._sampled, self._part = plan, sampled, part

    def expand(self, turns):
        # each stage's module is imported when the run has it (start-up: a run
        # without semantic or judge metrics imports neither)
        plan, cfg = self._plan, self._plan.config
        calls = []
        needs = frozenset(f for s, _ in plan.scorers for f in s.features)
        if needs and self._part != ENRICH_REMOTE:
            from transforms.enrich.embed import EmbedTurns
            enriched = (turns
                        | "BatchTurns" >> beam.BatchElements(min_batch_size=64, max_batch_size=64)
                        | "EmbedTurns" >> beam.ParDo(reporting(EmbedTurns(
                            cfg.embeddings, cfg.endpoints, needs, plan.cache,
                            [m for s, _ in plan.scorers if s.features for m in s.metrics],
                            plan.budget, cores=worker_cores(turns.pipeline.options)), plan))
                        .with_outputs(EmbedTurns.CALLS, main="turns"))
            turns = enriched.turns
            calls.append(enriched[EmbedTurns.CALLS])
        if self._part == ENRICH_OFFLINE:
            return turns, calls
        if plan.judge_metrics:
            from transforms.enrich.judge.stage import JudgeTurns
            asked = (turns
                     | "BatchForJudge" >> beam.BatchElements(min_batch_size=1, max_batch_size=64)
                     | "JudgeTurns" >> beam.ParDo(reporting(JudgeTurns(
                         cfg.judge, cfg.endpoints, plan.judge_metrics, plan.rubric_scales,
                         plan.cache, {s.name: o for s, o in plan.scorers if s.judge},
                         plan.budget), plan), **({} if self._sampled is None else
                                          {"sampled": AsList(self._sampled)}))
                     .with_outputs(JudgeTurns.CALLS, main="turns"))
            turns = asked.turns
            calls.append(asked[JudgeTurns.CALLS])
        if plan.classifier_metrics:
            from transforms.enrich.classifier.stage import ClassifyTurns
            read = (turns
                    | "BatchForClassifier" >> beam.BatchElements(min_batch_size=1,
                                                                 max_batch_size=64)
                    | "ClassifyTurns" >> beam.ParDo(reporting(ClassifyTurns(
                        cfg.classifier, cfg.endpoints, plan.cache, plan.budget), plan)).with_outputs(
                        ClassifyTurns.CALLS, main="turns"))
            turns = read.turns
            calls.append(read[ClassifyTurns.CALLS])
        return turns, calls


class Score(beam.PTransform):
    """Turns -> Turns with every metric: the built-in scorers in one ParDo (one
    step per row, texts tokenised once), each custom metric or rubric in its own
    `Score[name]`; the corpus statistics some metrics need are side inputs read
    from the input."""

    def __init__(self, plan: Plan, scorers=None):
        """scorers: a part of the plan's (the cascade's offline or escalated ones)."""
        super().__init__()
        self._plan = plan
        self._scorers = list(plan.scorers if scorers is None else scorers)

    def _side_inputs(self, p) -> dict:
        """The corpus statistics the scorers need, from one more read of each shard."""
        plan, cfg = self._plan, self._plan.config
        idf = any(s.uses_idf for s, _ in self._scorers)
        bert_idf = any(s.side_input == "bert_idf" and o.get("idf") for s, o in self._scorers)
        if not (idf or bert_idf):
            return {}
        sources = corpus_sources(plan.shards, [b.faq for b in cfg.bots
                                               if idf and b.type == "faq_match"])
        corpus = (p | "CorpusSources" >> beam.Create(sources, reshuffle=len(sources) > 1)
                  | "ReadCorpus" >> beam.ParDo(ReadCorpus(plan.columns, idf, bert_idf))
                  .with_outputs(ReadCorpus.REFERENCES, main="texts"))
        # as singleton views: the value of an empty corpus is the view's default
        # (computed here), not a default-injecting branch with its own stage
        sides = {}
        if idf:
            sides["idf"] = corpus.texts | "DocumentFrequencies" >> beam.CombineGlobally(
                DocumentFrequencyFn()).as_singleton_view()
        if bert_idf:
            sides["bert_idf"] = (
                corpus[ReadCorpus.REFERENCES]
                | "ReferenceTokens" >> beam.ParDo(TokenizeReferences(cfg.embeddings))
                | "BertScoreIdf" >> beam.CombineGlobally(BertIdfFn()).as_singleton_view())
        return sides

    def expand(self, turns):
        sides = self._side_inputs(turns.pipeline)
        scorers = self._scorers
        n = next((i for i, (s, _) in enumerate(scorers) if s not in SCORERS), len(scorers))
        built_in = scorers[:n]  # select_scorers puts them first
        if built_in:  # one step, `Score[name,name,...]`
            names = ",".join(s.name for s, _ in built_in)
            turns = turns | f"Score[{names}]" >> beam.ParDo(ScoreAll(built_in), **sides)
        for scorer, options in scorers[n:]:  # custom metrics, rubrics
            side = sides.get(scorer.side_input)
            kwargs = {"side": side} if side is not None else {}
            secrets = (self._plan.info.endpoints, self._plan.info.secret_texts)
            turns = turns | f"Score[{scorer.name}]" >> beam.ParDo(
                ScoreWith(scorer, options, secrets), **kwargs)
        return turns


class Decide(beam.PTransform):
    """Scored Turns -> Turns with a verdict and its reason: every rule (SINGLE),
    or the cascade's offline rules (OFFLINE) or escalation rules (ESCALATION)."""

    def __init__(self, plan: Plan, stage: str = SINGLE):
        super().__init__()
        self._plan, self._stage = plan, stage

    def expand(self, turns):
        plan, verdict = self._plan, self._plan.config.verdict
        rules = {SINGLE: verdict.rules, OFFLINE: plan.offline_rules,
                 ESCALATION: plan.escalation_rules}[self._stage]
        return turns | "ApplyVerdict" >> beam.ParDo(ApplyVerdict(rules, verdict.otherwise,
                                                                 self._stage))


class Escalate(beam.PTransform):
    """The cascade (judge.escalate: undecided): decided Turns -> the rows the
    offline verdict left undecided enriched by the judge and the classifier,
    scored and decided again; the others pass through with their verdict.
    Returns (turns, [call tallies])."""

    def __init__(self, plan: Plan, sampled=None):
        super().__init__()
        self._plan, self._sampled = plan, sampled

    def expand(self, decided):
        plan = self._plan
        marked = decided | "MarkUndecided" >> beam.Map(mark_undecided)
        turns, calls = marked | "EnrichEscalated" >> Enrich(plan, self._sampled, ENRICH_REMOTE)
        scored = turns | "ScoreEscalated" >> Score(plan, plan.escalation_scorers)
        return scored | "DecideEscalated" >> Decide(plan, ESCALATION), calls


class Publish(beam.PTransform):
    """Writes results/, scores/, errors/ per bundle, combines the summaries and
    counts, and runs Finalize once everything is written.

    Input: a dict with the `judged` Turns, the `cases` and read `problems`, and
    the `calls` tallies of every remote-calling stage (left out when the run
    calls out to no endpoint: its usage/ is empty)."""

    def __init__(self, plan: Plan):
        super().__init__()
        self._plan = plan

    def expand(self, inputs):
        plan, info = self._plan, self._plan.info
        judged, cases, problems = inputs["judged"], inputs["cases"], inputs["problems"]
        p = judged.pipeline
        out = (info.output, info.run_id, info.run_date, info.attempt, info.endpoints,
               info.lease_ttl_s, info.secret_texts)
        run_id = info.run_id
        bot_errors = judged | "BotErrors" >> beam.Filter(lambda t: t.error is not None)
        written = [
            judged | "ResultRows" >> beam.Map(result_row, run_id)
            | "WriteResults" >> WriteRows(RESULTS, *out),
            judged | "ScoreRows" >> beam.FlatMap(score_rows, run_id)
            | "WriteScores" >> WriteRows(SCORES, *out),
            bot_errors | "BotErrorRows" >> beam.Map(bot_error_row, run_id)
            | "WriteBotErrors" >> WriteRows(ERRORS, *out),
            problems | "ProblemRows" >> beam.Map(problem_row, run_id)
            | "WriteReadErrors" >> WriteRows(ERRORS, *out),
        ]
        call_errors, stages = None, plan.call_error_stages
        if stages:
            call_errors = judged | "CallErrorRows" >> beam.FlatMap(call_error_rows, run_id, stages)
            written.append(call_errors | "WriteCallErrors" >> WriteRows(ERRORS, *out))
        duplicates = cases | "FindDuplicateIds" >> FindDuplicateIds()
        written.append(duplicates
                       | "DuplicateRows" >> beam.Map(lambda kv: duplicate_row(*kv, run_id))
                       | "WriteDuplicateErrors" >> WriteRows(ERRORS, *out))

        sampled = info.sampled_metrics
        metric_stats = (
            judged | "MetricValues" >> beam.FlatMap(
                lambda t: metric_values(t.bot, t.case.suite, t.scores, sampled, NOT_SAMPLED,
                                        bool(t.features.get(OUTSIDE_SAMPLE))))
            | "MetricStats" >> beam.CombinePerKey(MetricStatsFn()))
        verdicts = (
            judged | "VerdictKeys" >> beam.FlatMap(
                lambda t: ((bot, suite, t.verdict) for bot, suite, _ in
                           summary_keys(t.bot, t.case.suite, "verdict")))
            | "CountVerdicts" >> beam.combiners.Count.PerElement())
        worst = (judged | "WorstKeys" >> beam.Map(lambda t: (t.bot, worst_case_row(t)))
                 | "WorstCases" >> beam.combiners.Top.PerKey(WORST_CASES_PER_BOT,
                                                             key=lambda w: w["severity"]))
        tallied = {"valid_cases": cases, "invalid_rows": problems, "bot_errors": bot_errors,
                   "duplicate_case_ids": duplicates}
        if plan.escalates:
            tallied["escalated_rows"] = judged | "EscalatedRows" >> beam.Filter(
                lambda t: bool(t.features.get(ESCALATED)))
            tallied["escalation_failed_rows"] = judged | "EscalationFailedRows" >> beam.Filter(
                lambda t: t.decided_by == ESCALATION_FAILED)
        counted = list(tallied)
        if call_errors is not None:  # counted per stage: judge_errors, embedding_errors, ...
            tallied["call_errors"] = call_errors
            counted += [CALL_ERROR_STAGES[stage][0] for stage in stages]
        # one keyed sum of per-bundle counts: a Count.Globally each would add
        # shuffles to every run, one element per row would sit in the runner
        counts = tallied | "Tallies" >> TallyAll({"call_errors": call_error_count})
        usage = [] if "calls" not in inputs else AsList(
            inputs["calls"] | "Usage" >> beam.CombinePerKey(MergeUsageFn()))
        sides = {}
        if plan.skips_rows:  # the cascade's or the sample's rows (else none: no shuffle)
            sides["skipped"] = AsList(judged | "SkippedKeys" >> beam.FlatMap(skipped_keys)
                                      | "CountSkipped" >> beam.combiners.Count.PerElement())
        if len(info.bots) > 1:  # the report's head to head of every pair of bots
            sides["head_to_head"] = AsList(judged | "HeadToHead" >> HeadToHead(
                info.bots, info.metrics, info.lower_is_better,
                no_direction=info.no_direction))

        return (p | "Once" >> beam.Create([None])
                | "Finalize" >> beam.ParDo(
                    Finalize(info, tuple(counted)),
                    AsList(written | "AllFiles" >> beam.Flatten()),
                    AsList(metric_stats), AsList(verdicts), AsList(counts),
                    AsList(worst), usage, **sides))


def build_pipeline(p: beam.Pipeline, plan: Plan) -> None:
    """The whole evaluation: one named stage after the other."""
    beam_speed.install()
    read = p | "Read" >> Read(plan)
    answered = read.cases | "Answer" >> Answer(plan)
    sample = plan.config.judge.sample
    sampled = (read.cases | "SampleForJudge" >> SampleCases(sample.per_suite, sample.seed)
               if sample is not None and plan.judge_metrics else None)
    if plan.escalates:  # offline first; only the undecided rows go to the judge
        turns, enrich_calls = answered.turns | "Enrich" >> Enrich(plan, sampled, ENRICH_OFFLINE)
        scored = turns | "Score" >> Score(plan, plan.offline_scorers)
        decided = scored | "Decide" >> Decide(plan, OFFLINE)
        judged, escalation_calls = decided | "Escalate" >> Escalate(plan, sampled)
        enrich_calls = enrich_calls + escalation_calls
    else:
        turns, enrich_calls = answered.turns | "Enrich" >> Enrich(plan, sampled)
        scored = turns | "Score" >> Score(plan)
        judged = scored | "Decide" >> Decide(plan)
    inputs = {"judged": judged, "cases": read.cases, "problems": read.problems}
    if plan.config.endpoints:  # only remote calls are tallied: none without an endpoint
        inputs["calls"] = ([answered[AnswerWith.CALLS], *enrich_calls]
                           | "AllCalls" >> beam.Flatten())
    _ = inputs | "Publish" >> Publish(plan)
