"""Bots under test: each turns an EvalCase into a Turn (answer or error).

A bot never raises for a row: a failure becomes a Turn with `error` set, so
every case × bot reaches results/. Latency is measured with a monotonic clock.
"""
from __future__ import annotations

import time
from typing import Protocol, Sequence

import apache_beam as beam

from schemas.records import EvalCase, Turn
from transforms.faq_index import FaqIndex, load_faq


class Bot(Protocol):
    name: str

    def answer(self, case: EvalCase) -> Turn: ...


class PrecomputedBot:
    """Answers with the case's recorded `answer` column."""

    def __init__(self, name: str):
        self.name = name

    def answer(self, case: EvalCase) -> Turn:
        if case.answer is None:
            return Turn(case, self.name, None, error="no recorded answer in the 'answer' column")
        return Turn(case, self.name, case.answer, latency_ms=None,  # nothing was timed
                    details={"source": "recorded"})


class FaqMatchBot:
    """The strict semantic-match bot: the stored answer of the closest FAQ question."""

    def __init__(self, name: str, faq_path: str):
        self.name = name
        self.index = FaqIndex(*load_faq(faq_path))

    def answer(self, case: EvalCase) -> Turn:
        start = time.perf_counter()
        match = self.index.match(case.question)
        latency = (time.perf_counter() - start) * 1000.0
        if match is None:
            return Turn(case, self.name, "", latency_ms=latency,
                        details={"matched_question": None, "similarity": 0.0,
                                 "note": "no FAQ question shares a word with the question"})
        return Turn(case, self.name, match.answer, latency_ms=latency,
                    details={"matched_question": match.question, "faq_row": match.row,
                             "similarity": round(match.similarity, 6)})


def make_bot(cfg) -> Bot:
    """A bot from its BotConfig (pipeline.config), built inside the worker."""
    if cfg.type == "precomputed":
        return PrecomputedBot(cfg.name)
    if cfg.type == "faq_match":
        return FaqMatchBot(cfg.name, cfg.faq)
    raise ValueError(f"bot type {cfg.type!r} is not available in this build")


class AnswerWith(beam.DoFn):
    """Every case answered by every configured bot (one Turn per bot).

    One DoFn for all bots keeps the stage fused (a Flatten of per-bot branches
    would make the runner materialise every Turn between stages).
    """

    def __init__(self, bot_configs: Sequence):
        self._configs = tuple(bot_configs)
        self._bots: list[Bot] = []
        self._errors = beam.metrics.Metrics.counter("evalbeam", "bot_errors")

    def setup(self):
        self._bots = [make_bot(cfg) for cfg in self._configs]

    def process(self, case: EvalCase):
        for bot in self._bots:
            try:
                turn = bot.answer(case)
            except Exception as exc:  # a bot bug must not lose the row
                turn = Turn(case, bot.name, None, error=f"{type(exc).__name__}: {exc}")
            if turn.error:
                self._errors.inc()
            yield turn
