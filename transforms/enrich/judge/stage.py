"""JudgeTurns: the judge's part of the Enrich step.

Takes batches of Turns, asks each turn's judge questions on the worker's
asyncio loop (bounded by the judge endpoint's max_concurrency and rate
limits, answered from the call cache when already asked), and emits each
Turn with the outcomes attached as features as soon as its questions are
answered. The metrics themselves are computed afterwards, one ParDo each,
from those features.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import apache_beam as beam

from schemas.records import Turn
from transforms.remote.cache import CacheSpec
from transforms.remote.calling import CallingDoFn


class JudgeTurns(CallingDoFn):
    def __init__(self, judge_cfg, endpoints: Mapping, metrics: Sequence[str],
                 scales: Mapping[str, tuple[float, float]], cache: CacheSpec | None,
                 options: Mapping[str, Mapping] | None = None, budget=None):
        self._cfg, self._endpoints = judge_cfg, dict(endpoints)
        self._metrics, self._scales = tuple(metrics), dict(scales)
        self._options = {k: dict(v) for k, v in (options or {}).items()}
        self._cache, self._budget = cache, budget
        self._failed = beam.metrics.Metrics.counter("evalbeam.judge", "failed_questions")

    def setup(self):
        from transforms.enrich.judge.ask import Judge
        from transforms.enrich.judge.prompts import load_templates
        from transforms.enrich.judge.tasks import TurnJudge
        ep = self._endpoints[self._cfg.endpoint]
        self.open_calls(self._endpoints, remote=True, cache=self._cache,
                        max_pending=2 * ep.max_concurrency, budget=self._budget)
        judge = Judge(self._runtime, self._log, self._cfg, load_templates(self._cfg.prompts))
        self._turn_judge = TurnJudge(judge, self._metrics, self._cfg.safety, self._scales,
                                     self._options)

    async def _judged(self, turn: Turn) -> Turn:
        try:
            features = await self._turn_judge.features(turn)
        except Exception as exc:  # a bug must cost the turn's judge metrics, not the row
            from transforms.enrich.judge.ask import JudgeOutcome
            from transforms.enrich.judge.tasks import JUDGE_ERROR, JUDGED
            error = f"judge failed: {type(exc).__name__}: {exc}"[:500]
            features = {JUDGED: True, JUDGE_ERROR: JudgeOutcome(None, error)}
        return turn.evolve(features={**turn.features, **features})

    def emitted(self, turn: Turn) -> Turn:
        from transforms.enrich.judge.tasks import judge_failures
        failed = len(judge_failures(turn.features))
        if failed:
            self._failed.inc(failed)
        self.count_done("judged")
        return turn

    def _sample(self, sampled) -> frozenset[str] | None:
        """The sampled case ids as a set (built once per side-input value)."""
        if sampled is None:
            return None
        if getattr(self, "_sample_of", None) is not sampled:
            self._sample_of, self._sample_set = sampled, frozenset(sampled)
        return self._sample_set

    def process(self, turns, sampled=None):
        from transforms.enrich.judge.sample import NOT_SAMPLED, OUTSIDE_SAMPLE
        from transforms.enrich.judge.tasks import JUDGE_SKIP
        sample = self._sample(sampled)
        for turn in turns if isinstance(turns, list) else [turns]:
            outside = sample is not None and turn.case.case_id not in sample
            if turn.error or turn.answer is None or turn.features.get(JUDGE_SKIP):
                # nothing to judge (or not asked): the metrics say why
                yield turn.evolve(features={**turn.features, OUTSIDE_SAMPLE: True}) \
                    if outside else turn
            elif outside:
                yield turn.evolve(features={**turn.features, JUDGE_SKIP: NOT_SAMPLED,
                                            OUTSIDE_SAMPLE: True})
            else:
                self.submit(self._judged(turn))
        yield from self.finished()
