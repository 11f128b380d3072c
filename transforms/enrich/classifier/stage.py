"""ClassifyTurns: the Enrich step that reads answers against their contexts
with the grounding classifier.

Takes batches of Turns; for each bot's turns of a batch it plans the
(chunk, sentence) pairs, asks for the distinct ones (call cache first, then
batches of `classifier.batch_size` pairs, all on the worker's asyncio loop,
bounded by the endpoint's limits), and emits the batch with a
GroundingReading on each turn. A batch's requests never mix bots, so each
call is counted against one bot in usage/.
"""
from __future__ import annotations

from typing import Mapping

from schemas.records import Turn
from transforms.remote.cache import CacheSpec
from transforms.remote.calling import CallingDoFn
from transforms.remote.client import attributed

METRIC = "grounding_classifier"


class ClassifyTurns(CallingDoFn):
    def __init__(self, classifier_cfg, endpoints: Mapping, cache: CacheSpec | None,
                 budget=None):
        self._cfg, self._endpoints, self._cache = classifier_cfg, dict(endpoints), cache
        self._budget = budget

    def setup(self):
        from transforms.enrich.classifier.api import GroundingClassifier
        ep = self._endpoints[self._cfg.endpoint]
        self.open_calls(self._endpoints, remote=True, cache=self._cache,
                        max_pending=2 * ep.max_concurrency, budget=self._budget)
        self._classifier = GroundingClassifier(self._runtime.client(self._cfg.endpoint), self._cfg)

    def _record(self, rec) -> None:
        self._runtime.record(rec, self._log)

    async def _read(self, turns: list[Turn]) -> list[Turn]:
        from transforms.enrich.classifier.pairs import plan_pairs
        from transforms.enrich.classifier.reading import ERROR, GROUNDING, SKIP, GroundingReading
        cfg = self._cfg
        plans = {}
        for i, t in enumerate(turns):
            if t.error is None and t.answer is not None and t.has_contexts \
                    and not t.features.get(SKIP):
                plans[i] = plan_pairs(t.answer, list(t.effective_contexts), cfg.chunk_words,
                                      cfg.max_sentences)
        out = list(turns)
        for bot in dict.fromkeys(turns[i].bot for i in plans):
            mine = [i for i in plans if turns[i].bot == bot]
            try:
                verdicts = await attributed(self._classifier.classify(
                    [p for i in mine for p in plans[i].pairs()], self._record), bot, (METRIC,))
            except Exception as exc:  # a bug costs the rows' metric, not the job
                error = f"classifier failed: {type(exc).__name__}: {exc}"[:500]
                for i in mine:
                    out[i] = turns[i].evolve(features={**turns[i].features, ERROR: error})
                continue
            for i in mine:
                plan = plans[i]
                reading = GroundingReading(
                    plan.sentences, plan.total_sentences, tuple(c for c, _ in plan.chunks),
                    [[verdicts[(chunk, s)] for _, chunk in plan.chunks] for s in plan.sentences])
                out[i] = turns[i].evolve(features={**turns[i].features, GROUNDING: reading})
        return out

    def outputs(self, turns: list[Turn]) -> list[Turn]:
        self.count_done("classified", len(turns))
        return turns

    def process(self, turns):
        self.submit(self._read(turns if isinstance(turns, list) else [turns]))
        yield from self.finished()
