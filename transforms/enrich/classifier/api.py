"""Asking the classifier endpoint: TEI's /predict or vLLM's /score, through
the remote-call layer (rate limits, retries, breaker, call cache, usage).

TEI (text-embeddings-inference), `POST /predict`:
    {"inputs": [[premise, hypothesis], ...], "truncate": true, "raw_scores": false}
 -> [[{"label": "ENTAILMENT", "score": 0.97}, ...], ...]   one list per pair, best first
A batch larger than the server's --max-client-batch-size (32 by default) is
refused: 422 (validation) from the server, 413 in TEI's API description, with
the message "batch size N > maximum allowed batch size M". Such a batch is
sent again as batches of M (halves when M is not named), and M is kept for the
endpoint's later requests. A pair the server cannot read (422 tokenizer or
validation error for one pair) fails alone: a 413/422 batch that names no
limit is sent again in halves down to single pairs, so one bad pair costs its
own sentence, not the batch. Other failures (424 backend error, 5xx after the
retries) are the whole batch's.

vLLM, `POST /score` (a cross-encoder with one output, e.g. a reranker-style
fact checker): {"model": m, "text_1": [premises], "text_2": [hypotheses]}
 -> {"data": [{"index": i, "score": s}, ...], "usage": {...}}; the score is
P(supported) and there is no contradiction label.

Each pair's answer is cached under its own content address (endpoint, path,
model, api, the pair, truncate): Beam batches differ from run to run, a
pair does not, so a re-run sends no request.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from transforms.enrich.classifier.labels import (LabelError, id2label_of, label_name,
                                                 probability, read_prediction)
from transforms.remote.batches import (  # noqa: F401 (batch_limit, split_batch also read here)
    BATCH_REFUSED, ask_in_parts, batch_limit, split_batch)
from transforms.remote.cache import cache_key
from transforms.remote.client import CallRecord, EndpointClient
from transforms.remote.openai_api import by_index, estimate_tokens

TEI_PREDICT, TEI_INFO, VLLM_SCORE = "/predict", "/info", "/score"


@dataclass(frozen=True, slots=True)
class PairVerdict:
    """One pair's reading: P(supported), P(contradicted), or why there is none."""
    support: float | None
    contradiction: float | None = None
    error: str | None = None


Record = Callable[[CallRecord], None]


class GroundingClassifier:
    """The configured classifier on one endpoint; the `record` given to each
    method counts that method's calls (usage/)."""

    PURPOSE = "classifier:grounding"

    def __init__(self, client: EndpointClient, cfg):
        self.client, self.cfg = client, cfg
        self._names: tuple[str, str | None] | None = None
        self._names_lock: asyncio.Lock | None = None

    # ------------------------------------------------------------------ labels
    async def label_names(self, record: Record) -> tuple[str, str | None]:
        """(supported, contradicted) label names; indices are resolved once
        through TEI's /info. Raises LabelError."""
        if self._names is not None:
            return self._names
        if self.cfg.api == "vllm_score":  # one score: P(supported), no labels to read
            self._names = ("", None)
            return self._names
        if self._names_lock is None:
            self._names_lock = asyncio.Lock()
        async with self._names_lock:
            if self._names is None:
                labels = self.cfg.labels
                wanted = (labels.get("supported"), labels.get("contradicted"))
                id2label = None
                if any(isinstance(v, int) for v in wanted):
                    result = await self.client.get_json(TEI_INFO, model=self.cfg.model,
                                                        purpose=self.PURPOSE)
                    record(result.record)
                    if result.data is None:
                        raise LabelError(f"cannot read the model's labels from {TEI_INFO}: "
                                         f"{result.record.error}")
                    id2label = id2label_of(result.data)
                self._names = (label_name(wanted[0], id2label),
                               None if wanted[1] is None else label_name(wanted[1], id2label))
        return self._names

    # ------------------------------------------------------------------ requests
    def _request(self, pairs: Sequence[tuple[str, str]]) -> tuple[str, dict]:
        if self.cfg.api == "vllm_score":
            return VLLM_SCORE, {"model": self.cfg.model, "text_1": [p for p, _ in pairs],
                                "text_2": [h for _, h in pairs]}
        return TEI_PREDICT, {"inputs": [list(p) for p in pairs],
                             "truncate": self.cfg.truncate, "raw_scores": False}

    def _key(self, pair: tuple[str, str]) -> str:
        c = self.client
        path = VLLM_SCORE if self.cfg.api == "vllm_score" else TEI_PREDICT
        return cache_key(c.cfg.base_url, path, c.params, self.cfg.model,
                         {"api": self.cfg.api, "pair": list(pair),
                          "truncate": self.cfg.truncate})

    def _answers(self, data: Any, n: int) -> list[Any]:
        """One raw answer per pair of a successful reply; ValueError if the shape is off."""
        if self.cfg.api == "vllm_score":
            rows = data.get("data") if isinstance(data, dict) else None
            if not isinstance(rows, list):
                raise ValueError("missing 'data'")
            answers = [{"score": float(r["score"])} for r in by_index(rows, n, "pair")]
        else:
            if not isinstance(data, list) or not all(isinstance(p, list) for p in data):
                raise ValueError("expected one list of predictions per pair")
            answers = data
        if len(answers) != n:
            raise ValueError(f"{len(answers)} predictions for {n} pairs")
        return answers

    async def _send(self, pairs: list[tuple[str, str]], record: Record
                    ) -> list[Any | PairVerdict]:
        """Raw answers for the pairs, or a PairVerdict error per pair that failed:
        a 413/422 batch is sent again smaller (ask_in_parts), so a pair the
        server cannot read fails alone."""
        async def ask(part: list[tuple[str, str]]) -> tuple[Any, CallRecord]:
            path, body = self._request(part)
            est = sum(estimate_tokens(p) + estimate_tokens(h) for p, h in part)
            result = await self.client.post_json(path, body, model=self.cfg.model,
                                                 purpose=self.PURPOSE, estimated_tokens=est)
            record(result.record)
            if result.data is None:
                return None, result.record
            try:
                return self._answers(result.data, len(part)), result.record
            except (KeyError, TypeError, ValueError) as exc:
                return ([PairVerdict(None, None, f"classifier reply unusable: {exc}")]
                        * len(part), result.record)

        out: list[Any | PairVerdict] = []
        for part, answers, rec in await ask_in_parts(self.client, pairs, ask,
                                                     lambda r: r.status in BATCH_REFUSED):
            reason = rec.error if rec.budget_refused else f"classifier call failed: {rec.error}"
            out += [PairVerdict(None, None, reason)] * len(part) if answers is None else answers
        return out

    async def classify(self, pairs: Sequence[tuple[str, str]], record: Record
                       ) -> dict[tuple[str, str], PairVerdict]:
        """Every distinct pair's verdict: from the call cache, else asked in
        batches of at most batch_size pairs, all batches concurrently."""
        unique = list(dict.fromkeys(pairs))
        if not unique:
            return {}
        try:
            names = await self.label_names(record)
        except LabelError as exc:
            return {p: PairVerdict(None, None, f"classifier labels: {exc}") for p in unique}
        raw: dict[tuple[str, str], Any] = {}
        cache = self.client.cache
        if cache is not None:
            looked = await asyncio.gather(*(cache.lookup(self._key(p)) for p in unique))
            for pair, (answer, tier) in zip(unique, looked):
                if answer is not None and self._verdict(answer, names).error is None:
                    raw[pair] = answer
                    record(self.client.hit_record(self.cfg.model, self.PURPOSE, tier))
        todo = [p for p in unique if p not in raw]
        size = self.cfg.batch_size
        batches = [todo[i:i + size] for i in range(0, len(todo), size)]
        sent = await asyncio.gather(*(self._send(b, record) for b in batches))
        stores = []
        for batch, answers in zip(batches, sent):
            for pair, answer in zip(batch, answers):
                raw[pair] = answer
                if cache is not None and self._verdict(answer, names).error is None:
                    stores.append(cache.store(self._key(pair), answer))
        await asyncio.gather(*stores)
        return {p: self._verdict(raw[p], names) for p in unique}

    def _verdict(self, answer: Any, names: tuple[str, str | None]) -> PairVerdict:
        if isinstance(answer, PairVerdict):
            return answer
        try:
            if self.cfg.api == "vllm_score":
                return PairVerdict(probability(answer["score"]), None)
            support, contradiction = read_prediction(answer, *names)
        except (LabelError, KeyError, TypeError, ValueError) as exc:
            return PairVerdict(None, None, f"classifier reply unusable: {exc}")
        return PairVerdict(support, contradiction)
