"""ScoreAll / ScoreWith: ParDos wrapping the plain metric functions (the
built-in scorers in one step, a custom one each).

A scorer declares what it needs; when a turn lacks it (or the bot failed) every
metric of the scorer is null with the reason, never 0.
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping, Sequence

import apache_beam as beam

from schemas.records import MetricResult, Turn, is_blank
from schemas.tables import PASS_RATE, VERDICT_METRIC
from transforms.text.tokens import shared_texts
from transforms.score.metrics import hallucination as hall
from transforms.enrich.features import (CUT, EMBED_ERROR, SENTENCES, TOK_ANSWER, TOK_EXPECTED,
                                        TOK_REFERENCES, VEC_ANSWER, VEC_EXPECTED, VEC_QUESTION,
                                        VEC_REFERENCES, reference_role)
from transforms.score.metrics import coverage, groundedness, lexical, overlap, relevance, semantic
from transforms.score.metrics.references import best_over, best_result
from transforms.enrich.classifier.score import score as classifier_score
from transforms.remote.scrub import scrubber_for, shown
from transforms.enrich.judge.keys import (CONVERSATION_METRICS, DEFAULT_SCALE, RUBRICS,
                                          SAFETY_CATEGORIES, SAFETY_METRICS)

Compute = Callable[[Turn, Mapping[str, Any], Any], dict[str, MetricResult]]


@dataclass(frozen=True)
class Scorer:
    name: str                      # the ParDo is labelled Score[name]
    metrics: tuple[str, ...]       # metric names it produces
    needs: tuple[str, ...]         # question | answer | expected_answer | contexts
    compute: Compute
    side_input: str | None = None  # "idf" (lexical) or "bert_idf"; given to compute
    lower_is_better: frozenset[str] = field(default_factory=frozenset)
    no_direction: frozenset[str] = field(default_factory=frozenset)  # neither (NO_DIRECTION)
    option_defaults: Mapping[str, Any] = field(default_factory=dict)
    features: tuple[str, ...] = ()  # what the Enrich step must attach (embeddings)
    judge: bool = False  # its inputs come from the judge (JudgeTurns)
    classifier: bool = False  # its inputs come from the grounding classifier (ClassifyTurns)

    @property
    def uses_idf(self) -> bool:
        return self.side_input == "idf"


def _one(name: str, fn: Callable[[Turn, Mapping[str, Any], Any], MetricResult]) -> Compute:
    return lambda turn, opts, idf: {name: fn(turn, opts, idf)}


def _hallucination(t: Turn, o) -> dict[str, MetricResult]:
    result = hall.hallucination(t.answer, t.effective_contexts, question=t.case.user_text,
                                references=t.case.all_references)
    return {"hallucination": result, "unsupported_facts": hall.unsupported_facts(result)}


def _latency(turn: Turn, opts, idf) -> MetricResult:
    if turn.latency_ms is None:
        return MetricResult.null("no latency measured (recorded answer)")
    return MetricResult(float(turn.latency_ms))


RESERVED = (VERDICT_METRIC, PASS_RATE)  # not names of metrics: see select_scorers

SCORERS: tuple[Scorer, ...] = (  # deterministic
    Scorer("exact_match", ("exact_match",), ("answer", "expected_answer"),
           _one("exact_match", lambda t, o, i: best_over(
               t.case.all_references, lambda ref: lexical.exact_match(t.answer, ref)))),
    Scorer("keyword_recall", ("keyword_recall",), ("answer", "expected_answer"),
           _one("keyword_recall", lambda t, o, i: best_over(
               t.case.all_references, lambda ref: lexical.keyword_recall(t.answer, ref)))),
    Scorer("answer_length", ("answer_length",), ("answer",),
           _one("answer_length", lambda t, o, i: lexical.answer_length(t.answer)),
           no_direction=frozenset({"answer_length"})),
    Scorer("politeness", ("politeness",), ("answer",),
           _one("politeness", lambda t, o, i: lexical.politeness(t.answer, tuple(o["markers"]))),
           option_defaults={"markers": lexical.DEFAULT_POLITENESS_MARKERS}),
    Scorer("latency_ms", ("latency_ms",), (), _one("latency_ms", _latency),
           lower_is_better=frozenset({"latency_ms"})),
    Scorer("bleu", ("bleu",), ("answer", "expected_answer"),
           _one("bleu", lambda t, o, i: overlap.bleu(t.answer, t.case.all_references))),
    Scorer("rouge", ("rouge1", "rouge2", "rougeL"), ("answer", "expected_answer"),
           lambda t, o, i: overlap.rouge_multi(t.answer, t.case.all_references,
                                               use_stemmer=bool(o["use_stemmer"])),
           option_defaults={"use_stemmer": False}),
    Scorer("lexical_relevance", ("lexical_relevance",), ("question", "answer"),
           _one("lexical_relevance",
                lambda t, o, idf: relevance.lexical_relevance(t.case.question, t.answer, idf)),
           side_input="idf"),
    Scorer("completeness", ("completeness",), ("question", "answer"),
           _one("completeness", lambda t, o, i: relevance.completeness(t.case.question, t.answer))),
    Scorer("hallucination", ("hallucination", "unsupported_facts"), ("answer", "contexts"),
           lambda t, o, i: _hallucination(t, o),
           lower_is_better=frozenset({"hallucination", "unsupported_facts"}),
           option_defaults={"window": 12}),
)

SCORERS += (
    Scorer("groundedness", ("groundedness",), ("answer", "contexts"),
           _one("groundedness", lambda t, o, i: groundedness.groundedness(
               t.case.user_text, t.effective_contexts, t.answer))),
    Scorer("reference_coverage", ("reference_coverage",), ("answer", "expected_answer"),
           _one("reference_coverage",
                lambda t, o, i: best_over(t.case.all_references,
                                          lambda ref: coverage.reference_coverage(t.answer, ref)))),
    Scorer("key_fact_recall", ("key_fact_recall",), ("question", "answer", "contexts"),
           _one("key_fact_recall",
                lambda t, o, i: coverage.key_fact_recall(t.case.question, t.answer,
                                                         t.effective_contexts))),
)


EMPTY_REFERENCE = "empty expected answer"


def _similarity(t: Turn, o, side) -> MetricResult:
    """The best over the references; a blank one is null (its embedding means
    nothing, as an empty answer's: that one says nothing, 0)."""
    texts = t.case.all_references
    if all(is_blank(r) for r in texts):
        return MetricResult.null(EMPTY_REFERENCE)
    if is_blank(t.answer):
        return MetricResult(0.0, {"note": "empty answer"})
    refs = t.features.get(VEC_REFERENCES) or [t.features[VEC_EXPECTED]]
    answer, cut = t.features[VEC_ANSWER], t.features.get(CUT, {})
    return best_result([semantic.say_truncated(
        semantic.answer_similarity(ref, answer),
        cut, ("answer", reference_role(i, len(texts))))
        if not is_blank(text) else MetricResult.null(EMPTY_REFERENCE)
        for i, (text, ref) in enumerate(zip(texts, refs), 1)])


def _bertscore(t: Turn, o, bert_idf) -> MetricResult:
    refs = t.features.get(TOK_REFERENCES) or [t.features[TOK_EXPECTED]]
    cand, idf = t.features[TOK_ANSWER], bert_idf if o["idf"] else None
    return semantic.bertscore_multi([semantic.bertscore(ref.tokens, ref.vectors, cand.tokens,
                                                        cand.vectors, idf, ref.total, cand.total)
                                     for ref in refs])


def _relevance(t: Turn, o, side) -> MetricResult:
    n_sentences, vectors = t.features[SENTENCES]
    result = semantic.answer_relevance(t.features[VEC_QUESTION], vectors, n_sentences,
                                       coverage.novelty(t.case.question, t.answer))
    cut = t.features.get(CUT)
    if not cut:
        return result
    return semantic.say_truncated(result, cut, [
        "question", *(f"sentence {i}" for i in range(1, len(vectors) + 1))])


SCORERS += (
    Scorer("answer_similarity", ("answer_similarity",), ("answer", "expected_answer"),
           _one("answer_similarity", _similarity), features=(VEC_EXPECTED, VEC_ANSWER)),
    Scorer("bertscore", ("bertscore",), ("answer", "expected_answer"),
           _one("bertscore", _bertscore), side_input="bert_idf",
           option_defaults={"idf": False}, features=(TOK_EXPECTED, TOK_ANSWER)),
    Scorer("answer_relevance", ("answer_relevance",), ("question", "answer"),
           _one("answer_relevance", _relevance), features=(VEC_QUESTION, SENTENCES)),
)

def _judged(name: str, *args: Any, module: str = "scorers") -> Callable:
    """transforms.enrich.judge.<module>.<name> (called with `args` first when it
    makes the function), imported when a row is scored: a run without judge
    metrics never imports the judge."""
    resolved: list[Callable] = []

    def compute(turn: Turn, opts: Mapping[str, Any], side: Any):
        if not resolved:
            fn = getattr(importlib.import_module(f"transforms.enrich.judge.{module}"), name)
            resolved.append(fn(*args) if args else fn)
        return resolved[0](turn, opts, side)
    return compute


def _correctness(t: Turn, o, side) -> MetricResult:
    from transforms.enrich.judge.scorers import answer_correctness
    return answer_correctness(t, o, _similarity(t, o, side))


_rubric_opts = {"scale": list(DEFAULT_SCALE)}
SCORERS += (
    Scorer("faithfulness", ("faithfulness",), ("answer", "contexts"),
           _one("faithfulness", _judged("faithfulness")), judge=True),
    Scorer("answer_correctness", ("answer_correctness",), ("answer", "expected_answer"),
           _one("answer_correctness", _correctness), features=(VEC_EXPECTED, VEC_ANSWER),
           option_defaults={"factual_weight": 0.75, "similarity_weight": 0.25}, judge=True),
    Scorer("context_recall", ("context_recall",), ("expected_answer", "contexts"),
           _one("context_recall", _judged("context_recall")), judge=True),
    Scorer("context_precision", ("context_precision",),
           ("question", "expected_answer", "contexts"),
           _one("context_precision", _judged("context_precision")), judge=True),
    Scorer("context_entities_recall", ("context_entities_recall",),
           ("expected_answer", "contexts"),
           _one("context_entities_recall", _judged("context_entities_recall"))),
    Scorer("noise_sensitivity", ("noise_sensitivity",), ("answer", "expected_answer"),
           _one("noise_sensitivity", _judged("noise_sensitivity")),
           lower_is_better=frozenset({"noise_sensitivity"}), judge=True),
) + tuple(
    Scorer(m, (m,), needs, _one(m, _judged("rubric", m)), option_defaults=_rubric_opts, judge=True)
    for m, needs in RUBRICS.items()
) + tuple(
    Scorer(m, (m,), ("answer",), _one(m, _judged("safety", c)), lower_is_better=frozenset({m}),
           judge=True)
    for c, m in zip(SAFETY_CATEGORIES, SAFETY_METRICS)
)
SCORERS += tuple(  # conversation-level judge metrics (transforms/enrich/judge/conversation.py)
    Scorer(m, (m,), ("messages", "answer"),
           _one(m, _judged("conversation_metric", m, module="conversation")), judge=True,
           option_defaults={"role": None} if m == "role_adherence" else {})
    for m in CONVERSATION_METRICS
)
SCORERS += (  # the grounding classifier endpoint (transforms/enrich/classifier/)
    Scorer("grounding_classifier", ("grounding_classifier",), ("answer", "contexts"),
           _one("grounding_classifier", classifier_score), classifier=True),
)
GROUPS: dict[str, tuple[str, ...]] = {  # names that select several metrics
    "rouge": ("rouge1", "rouge2", "rougeL"),
    "conversation": CONVERSATION_METRICS,
    "safety": SAFETY_METRICS,
    "judge_rubrics": tuple(RUBRICS),
}

METRIC_NAMES: tuple[str, ...] = tuple(m for s in SCORERS for m in s.metrics)
LOWER_IS_BETTER: frozenset[str] = frozenset().union(*(s.lower_is_better for s in SCORERS))
# metrics with no better direction: a longer answer is neither better nor worse. summary/'s
# higher_is_better is null for them, compare reports their change but never calls it better
# or worse, and the report marks no direction. (latency_ms: lower is better; politeness:
# higher; unsupported_facts: lower.)
NO_DIRECTION: frozenset[str] = frozenset().union(*(s.no_direction for s in SCORERS))
# metrics not on a [0, 1] scale: charts and rankings that put metrics side by side leave them out
UNSCALED: frozenset[str] = frozenset({"answer_length", "latency_ms", "unsupported_facts"})


def higher_is_better(metric: str, lower_is_better: Collection[str],
                     no_direction: Collection[str] = NO_DIRECTION) -> bool | None:
    """A metric's direction: True (higher is better), False (lower is), None
    (neither: the built-in NO_DIRECTION, or a run's no_direction with its
    custom metrics declared `direction: none`)."""
    return None if metric in no_direction else metric not in lower_is_better


def recorded_direction(metric: str, recorded: bool | None) -> bool | None:
    """A metric's direction as a finished run's summary/ gives it (null: none),
    for the commands that read runs: a run written before a built-in metric lost
    its direction (answer_length) said higher, so its name decides."""
    return None if recorded is None or metric in NO_DIRECTION else recorded


def option_problem(default: Any, value: Any) -> str | None:
    """Why an option value does not fit its default's kind (None: it fits). Integers
    are counts (>= 1), floats finite numbers, lists of text lists of text."""
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "must be true or false"
    if isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        return None if ok else "must be an integer >= 1"
    if isinstance(default, float):
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value))
        return None if ok else "must be a finite number"
    if isinstance(default, (list, tuple)) and all(isinstance(d, str) for d in default):
        ok = isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
        return None if ok else "must be a list of texts"
    return None


def select_scorers(metrics: tuple[str, ...] | None,
                   options: Mapping[str, Mapping[str, Any]],
                   judge_configured: bool = True,
                   extra: tuple[Scorer, ...] = (),
                   classifier_configured: bool = True) -> list[tuple[Scorer, dict]]:
    """The scorers to run with their options; unknown names raise ValueError.
    By default every metric, except the judge's when no judge is configured
    and the classifier's without a classifier (named explicitly, they run and
    are null with "no judge configured" / "no classifier configured").
    `extra`: the run's own metrics (custom functions, rubrics), after the built-ins."""
    scorers = SCORERS + tuple(extra)
    names = [s.name for s in extra]
    clash = sorted({n for n in names if names.count(n) > 1}
                   | (set(names) & (set(METRIC_NAMES) | set(GROUPS))))
    if clash:
        raise ValueError(f"metric {clash[0]!r} is defined twice (a built-in metric, a custom "
                         "metric or a rubric); choose another name")
    kept = sorted(set(names) & set(RESERVED))
    if kept:  # summary/'s verdict rows, compare's and the trends' pass rate
        raise ValueError(f"metric {kept[0]!r} is a name evalbeam keeps for the verdict counts "
                         f"and the pass rate ({', '.join(RESERVED)}); choose another name")
    known = {m for s in scorers for m in s.metrics} | {s.name for s in scorers} | set(GROUPS)
    if metrics is None:
        wanted = {s.name for s in scorers if (judge_configured or not s.judge)
                  and (classifier_configured or not s.classifier)}
    else:
        wanted = set(metrics)
    unknown = sorted(wanted - known)
    if unknown:
        raise ValueError(f"unknown metric {unknown[0]!r}; known: "
                         f"{', '.join(m for s in scorers for m in s.metrics)} "
                         f"(groups: {', '.join(GROUPS)})")
    for group in wanted & set(GROUPS):
        wanted |= set(GROUPS[group])
    for scorer in scorers:  # every metric's, run or not: a typo shows in the run that has it
        extra = sorted(set(options.get(scorer.name, {})) - set(scorer.option_defaults))
        if extra:
            raise ValueError(f"unknown option metric_options.{scorer.name}.{extra[0]}")
    chosen = []
    for scorer in scorers:
        if scorer.name in wanted or wanted & set(scorer.metrics):
            opts = dict(scorer.option_defaults)
            given = dict(options.get(scorer.name, {}))
            for key, value in given.items():
                problem = option_problem(opts[key], value)
                if problem:
                    raise ValueError(f"metric_options.{scorer.name}.{key} {problem}, "
                                     f"got {shown(value)}")
            opts.update(given)
            chosen.append((scorer, opts))
    unknown_opts = sorted(set(options) - {s.name for s in scorers})
    if unknown_opts:
        raise ValueError(f"metric_options names unknown metric {unknown_opts[0]!r}")
    return chosen


MISSING = {"answer": "no answer", "expected_answer": "no expected_answer",  # need -> why null
           "contexts": "no contexts", "messages": "no messages (not a conversation)"}
NO_EMBEDDINGS = "no embeddings for this turn"


def missing_input(turn: Turn, needs: tuple[str, ...], features: tuple[str, ...] = ()
                  ) -> str | None:
    """Why the turn cannot be scored by a scorer with these needs, or None."""
    if turn.error:
        return f"bot failed: {turn.error}"
    for need in needs:
        if not turn.has_input(need):
            return MISSING[need]
    if any(f not in turn.features for f in features):
        return turn.features.get(EMBED_ERROR, NO_EMBEDDINGS)
    return None


def score_turn(scorer: Scorer, options: Mapping[str, Any], turn: Turn,
               side=None) -> dict[str, MetricResult]:
    """Plain-Python scoring of one turn by one scorer (what the ParDo runs)."""
    reason = missing_input(turn, scorer.needs, scorer.features)
    if reason:
        return {m: MetricResult.null(reason) for m in scorer.metrics}
    try:
        return scorer.compute(turn, options, side)
    except Exception as exc:  # a metric bug is recorded on the row, not fatal
        msg = f"metric failed: {type(exc).__name__}: {exc}"[:500]
        return {m: MetricResult.null(msg) for m in scorer.metrics}


def score_all(scorers: Sequence[tuple[Scorer, Mapping[str, Any]]], turn: Turn,
              sides: Mapping[str, Any]) -> dict[str, dict[str, MetricResult]]:
    """Every scorer's metrics for one turn, per scorer name, with the row's texts
    tokenised once for all of them (`shared_texts`); each scorer's values are
    those of `score_turn` on its own."""
    with shared_texts():
        return {scorer.name: score_turn(scorer, options, turn, sides.get(scorer.side_input))
                for scorer, options in scorers}


def _null_counter(scorer: Scorer):
    """Rows where the scorer gave a null (the `{name}_null` Beam counter)."""
    return beam.metrics.Metrics.counter("evalbeam.metrics", f"{scorer.name}_null")


class ScoreAll(beam.DoFn):
    """Adds several scorers' metrics to each Turn in one step: one new Turn per
    row instead of one per scorer, one Beam step instead of many, and the texts
    tokenised once (a new Turn; inputs are not mutated). Side inputs come by
    their Scorer.side_input name."""

    def __init__(self, scorers: Sequence[tuple[Scorer, Mapping[str, Any]]],
                 secrets: tuple[Mapping[str, Any], Sequence[str]] | None = None):
        """secrets: the run's (endpoints, secret_texts), for a step that runs a
        user's code (a custom metric)."""
        self._scorers = [(scorer, dict(options)) for scorer, options in scorers]
        self._nulls = {scorer.name: _null_counter(scorer) for scorer, _ in scorers}
        self._secrets = secrets

    def setup(self):
        # a worker that runs no other step of the run (a Dask worker given only
        # this one) still scrubs what the user's code prints, logs and warns
        if self._secrets is not None:
            scrubber_for(*self._secrets)

    def process(self, turn: Turn, idf=None, bert_idf=None):
        scores = dict(turn.scores)
        for name, results in score_all(self._scorers, turn,
                                       {"idf": idf, "bert_idf": bert_idf}).items():
            if any(r.value is None for r in results.values()):
                self._nulls[name].inc()
            scores.update(results)
        yield turn.evolve(scores=scores)


class ScoreWith(ScoreAll):
    """Adds one scorer's metrics to each Turn; its side input, if any, is `side`."""

    def __init__(self, scorer: Scorer, options: Mapping[str, Any],
                 secrets: tuple[Mapping[str, Any], Sequence[str]] | None = None):
        super().__init__([(scorer, options)], secrets)
        self._side_name = scorer.side_input

    def process(self, turn: Turn, side=None):
        return super().process(turn, **({self._side_name: side} if self._side_name else {}))
