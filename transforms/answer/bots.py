"""Bots under test: each turns an EvalCase into a Turn (answer or error).

A bot never raises for a row: a failure becomes a Turn with `error` set, so
every case × bot reaches results/. Latency is measured with a monotonic clock.
"""
from __future__ import annotations

import time
from typing import Mapping, Protocol, Sequence

import apache_beam as beam

from schemas.cases import Source, shown_source
from schemas.records import EvalCase, Turn
from transforms.answer.faq_index import FaqIndex, load_faq
from transforms.remote.cache import CacheSpec
from transforms.remote.calling import CallingDoFn


class Bot(Protocol):
    name: str

    def answer(self, case: EvalCase) -> Turn: ...


class PrecomputedBot:
    """Answers with the case's recorded `answer` column; `column` is where the
    user's file has it (a preset's or input.columns' name, e.g. `response`)."""

    def __init__(self, name: str, column: Source = "answer"):
        self.name = name
        self.column = column

    def answer(self, case: EvalCase) -> Turn:
        if case.answer is None:
            why = f"no recorded answer in the {shown_source(self.column)} column"
            return Turn(case, self.name, None, error=why)
        details = {"source": "recorded"}
        if case.answer_from_conversation:
            details["from"] = "the conversation's assistant reply after its last user turn"
        return Turn(case, self.name, case.answer, latency_ms=None,  # nothing was timed
                    details=details)


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


def make_bot(cfg, runtime=None, log=None, answer_column: Source = "answer"):
    """A bot from its BotConfig (pipeline.config), built inside the worker;
    answer_column: the input's file column(s) mapped to `answer`."""
    if cfg.type == "precomputed":
        return PrecomputedBot(cfg.name, answer_column)
    if cfg.type == "faq_match":
        return FaqMatchBot(cfg.name, cfg.faq)
    from transforms.answer import remote_bots
    cls = {"full_context": remote_bots.FullContextBot, "chat": remote_bots.ChatBot,
           "http": remote_bots.HttpBot}[cfg.type]
    return cls(cfg, runtime, log)


class AnswerWith(CallingDoFn):
    """Every case answered by every configured bot (one Turn per case × bot).

    Takes batches (beam.BatchElements). Offline bots answer inline; remote
    bots' calls go to the worker's asyncio loop and stay in flight across
    batches (at most `max_pending` awaiting here, `max_concurrency` per
    endpoint on the wire), and their Turns are emitted as they complete, so a
    slow call never stalls a whole batch. finish_bundle waits for the rest.
    One DoFn for all bots keeps the stage fused (a Flatten of per-bot branches
    would make the runner materialise every Turn between stages).
    The DoFn's calls are tallied in a CallLog and emitted once per bundle on
    the CALLS output as ((endpoint, model, purpose), usage accumulator).
    """

    def __init__(self, bot_configs: Sequence, endpoints: Mapping | None = None,
                 cache: CacheSpec | None = None, budget=None, answer_column: Source = "answer"):
        self._configs = tuple(bot_configs)
        self._answer_column = answer_column  # named in a precomputed bot's errors
        self._endpoints = dict(endpoints or {})
        # the run's call cache: bots never use it (their calls are not
        # cached) but it makes the runtime the same as the judge's and the
        # embedder's, so an endpoint shared with them has one rate limiter
        self._cache, self._budget = cache, budget  # the run's spend caps (token ceilings)
        self._bots: list = []
        self._errors = beam.metrics.Metrics.counter("evalbeam", "bot_errors")

    def setup(self):
        self.open_calls(self._endpoints,
                        remote=any(c.type in ("full_context", "chat", "http")
                                   for c in self._configs), cache=self._cache,
                        budget=self._budget)
        self._bots = [make_bot(cfg, self._runtime, self._log, self._answer_column)
                      for cfg in self._configs]

    def emitted(self, turn: Turn) -> Turn:
        if turn.error:
            self._errors.inc()
        self.count_done("answered")
        return turn

    def process(self, cases):
        for case in cases if isinstance(cases, list) else [cases]:
            for bot in self._bots:
                if getattr(bot, "remote", False):
                    self.submit(_safe_answer(bot, case))
                else:
                    yield self.emitted(_safe_sync_answer(bot, case))
        yield from self.finished()


def _safe_sync_answer(bot, case: EvalCase) -> Turn:
    try:
        return bot.answer(case)
    except Exception as exc:  # a bot bug must not lose the row
        return Turn(case, bot.name, None, error=f"{type(exc).__name__}: {exc}")


async def _safe_answer(bot, case: EvalCase) -> Turn:
    try:
        return await bot.answer_async(case)
    except Exception as exc:  # a bot bug must not lose the row
        return Turn(case, bot.name, None, error=f"{type(exc).__name__}: {exc}"[:500])
