"""EmbedTurns: the Enrich step — embeddings the semantic metrics need.

Turns arrive in batches (beam.BatchElements); the texts of a batch (questions,
expected answers, answers, answer sentences) are deduplicated, embedded in
batches and cached by text hash in the worker (CachingEmbedder), so a question
shared by several bots, or a reference repeated across cases, is embedded once.
The vectors ride on the Turn as `features` until scoring; they are never
written. A failed embedding call (a request that failed, or that a spend cap
refused) leaves out the features of the rows whose texts it did not embed
and says why (EMBED_ERROR), so those metrics are null with that reason, not 0;
a row whose texts the other requests embedded keeps its features.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from schemas.records import Turn
from transforms.enrich.features import (  # noqa: F401 (the names are also read from here)
    CUT, EMBED_ERROR, MINILM_MODELS, MULTILINGUAL_MODELS, SENTENCES, TOK_ANSWER, TOK_EXPECTED,
    TOK_REFERENCES, VEC_ANSWER, VEC_EXPECTED, VEC_QUESTION, VEC_REFERENCES, reference_role)
from transforms.enrich.embeddings.base import EmbeddingError
from transforms.text.sentences import MAX_SENTENCES, answer_sentences
from transforms.remote.budget import BUDGET_REACHED
from transforms.remote.cache import CacheSpec
from transforms.remote.calling import CallingDoFn



def embedding_error(exc: Exception, text: str | None = None) -> str:
    """Why a row has no vector for `text`: a spend cap's refusal as it is ("budget
    reached: …", what the judge's and the classifier's rows say), anything else a
    failure."""
    why = exc.reason(text) if isinstance(exc, EmbeddingError) and text is not None else str(exc)
    if why.startswith(BUDGET_REACHED):
        return why[:500]
    return f"embedding failed: {type(exc).__name__}: {why}"[:500]


class NotEmbedded(Exception):
    """A text a row needs got no vector; args[0] is the row's reason."""


class Embedded(dict):
    """Texts -> their vectors (or TokenVectors) from one call; a text the call
    did not embed raises NotEmbedded with the reason. `cut`: text -> (its
    tokens, the tokens read), or (its characters, the characters read,
    "characters"), for the texts the model read only the start of."""

    def __init__(self, texts: Sequence[str], embed, *args):
        """embed(texts, *args) -> one value per text, in order, or (those values,
        cut) (CachingEmbedder.embed_counted)."""
        self.failure: Exception | None = None
        self.cut: dict[str, tuple[int, int]] = {}
        try:
            got = embed(texts, *args) if texts else ()
            if isinstance(got, tuple):
                got, self.cut = got
            super().__init__(zip(texts, got))
        except Exception as exc:  # recorded on the rows that need it, never fatal
            self.failure = exc
            super().__init__(exc.done if isinstance(exc, EmbeddingError) else {})

    def __missing__(self, text: str):
        if self.failure is None:
            raise KeyError(text)
        raise NotEmbedded(embedding_error(self.failure, text))


def make_embedder(cfg, runtime=None, log=None, metrics: Sequence[str] = ()):
    """The configured embedder, wrapped in the worker's dedupe + cache layer
    (an endpoint's calls are counted for `metrics` in usage/)."""
    from transforms.enrich.embeddings.cache import CachingEmbedder
    if cfg.provider == "hashing":
        from transforms.enrich.embeddings.hashing import HashingEmbedder
        return CachingEmbedder(HashingEmbedder())
    if cfg.provider == "endpoint":
        from transforms.enrich.embeddings.endpoint import EndpointEmbedder
        inner = EndpointEmbedder(runtime, cfg.endpoint, cfg.model, log=log, metrics=metrics)
        return CachingEmbedder(inner, batch_size=100_000)  # the endpoint batches its requests
    if cfg.model in MULTILINGUAL_MODELS:
        from transforms.enrich.embeddings.multilingual import MultilingualEmbedder
        return CachingEmbedder(MultilingualEmbedder())
    if cfg.precision == "int8":
        from transforms.enrich.embeddings.int8_minilm import get_int8_minilm
        return CachingEmbedder(get_int8_minilm())
    from transforms.enrich.embeddings.local_minilm import get_local_minilm
    return CachingEmbedder(get_local_minilm())


def embedder_tokenizer(cfg):
    """The configured embedder's tokenizer (BERTScore's idf corpus), without
    loading more than the tokenizer needs or opening any connection."""
    if cfg.provider == "hashing":
        from transforms.enrich.embeddings.hashing import HashingEmbedder
        return HashingEmbedder().tokenize
    if cfg.provider == "endpoint":
        from transforms.enrich.embeddings.endpoint import EndpointEmbedder
        return EndpointEmbedder.tokenize
    from transforms.enrich.embeddings.local_minilm import get_local_minilm
    return get_local_minilm().tokenize


class EmbedTurns(CallingDoFn):
    def __init__(self, embeddings_cfg, endpoints: Mapping, needs: frozenset[str],
                 cache: CacheSpec | None = None, metrics: Sequence[str] = (), budget=None,
                 cores: int | None = None):
        """metrics: the run's metrics that need embeddings (usage/ splits the calls);
        cores: the cores this worker process has (pipeline.plan.worker_cores), None
        to keep the process's thread defaults."""
        self._cfg, self._endpoints, self._needs = embeddings_cfg, dict(endpoints), needs
        self._cache, self._metrics, self._budget = cache, tuple(metrics), budget
        self._cores = cores
        self._embedder = None

    def setup(self):
        if self._cores is not None:
            from transforms.enrich.embeddings.local_minilm import use_cores
            use_cores(self._cores)
        self.open_calls(self._endpoints, remote=self._cfg.provider == "endpoint",
                        cache=self._cache, budget=self._budget)
        self._embedder = make_embedder(self._cfg, self._runtime, self._log, self._metrics)

    def _texts(self, turns: Sequence[Turn], sentences: dict[str, list[str]]
               ) -> tuple[list[str], list[str]]:
        """The texts to embed (and each answer's sentences, filled into `sentences`)."""
        vec, tok = {}, {}
        for t in turns:
            if t.error or t.answer is None:
                continue
            expected, answer = t.case.expected_answer, t.answer
            if VEC_QUESTION in self._needs:
                vec[t.case.question] = None
            if SENTENCES in self._needs:
                if answer not in sentences:
                    sentences[answer] = answer_sentences(answer)
                vec.update((s, None) for s in sentences[answer][:MAX_SENTENCES])
            if expected is not None:
                refs = t.case.all_references
                if VEC_EXPECTED in self._needs:
                    vec.update(dict.fromkeys(refs))
                    vec[answer] = None
                if TOK_EXPECTED in self._needs:
                    tok.update(dict.fromkeys(refs))
                    tok[answer] = None
        return list(vec), list(tok)

    def process(self, turns):
        turns = turns if isinstance(turns, list) else [turns]
        sentences: dict[str, list[str]] = {}
        vec_texts, tok_texts = self._texts(turns, sentences)
        # tokens first: the local model derives these texts' sentence vectors
        tokens = Embedded(tok_texts, self._embedder.embed_tokens, True)
        vectors = Embedded(vec_texts, self._embedder.embed_counted)
        for t in turns:
            self.count_done("embedded")
            yield t.evolve(features={**t.features,
                                     **self._features(t, vectors, tokens, sentences)})

    def _features(self, t: Turn, vectors: Embedded, tokens: Embedded, sentences: dict) -> dict:
        """The row's features, each group whole or not at all: a group whose texts
        were not all embedded is left out, and EMBED_ERROR says why (the metrics
        reading it are null with that reason; the others are computed)."""
        if t.error or t.answer is None:
            return {}
        groups = []
        if VEC_QUESTION in self._needs:
            groups.append(lambda: {VEC_QUESTION: vectors[t.case.question]})
        if SENTENCES in self._needs:
            said = sentences[t.answer]
            groups.append(lambda: {SENTENCES: (len(said),
                                               [vectors[s] for s in said[:MAX_SENTENCES]])})
        if t.case.expected_answer is not None:
            if VEC_EXPECTED in self._needs:
                groups.append(lambda: _references(t, vectors, VEC_EXPECTED, VEC_ANSWER,
                                                  VEC_REFERENCES))
            if TOK_EXPECTED in self._needs:
                groups.append(lambda: _references(t, tokens, TOK_EXPECTED, TOK_ANSWER,
                                                  TOK_REFERENCES))
        out: dict[str, Any] = {}
        for group in groups:
            try:
                out.update(group())
            except NotEmbedded as exc:
                out.setdefault(EMBED_ERROR, exc.args[0])
        if vectors.cut:  # rare: a text over the model's input length
            cut = _cut(t, vectors.cut, sentences.get(t.answer, ()))
            if cut:
                out[CUT] = cut
        return out


def _references(t: Turn, embedded: Embedded, expected: str, answer: str, references: str
                ) -> dict:
    """The reference's and the answer's vectors (and every reference's, when several)."""
    out = {expected: embedded[t.case.expected_answer], answer: embedded[t.answer]}
    if t.case.references:
        out[references] = [embedded[r] for r in t.case.references]
    return out


def _cut(t: Turn, cut: Mapping[str, tuple[int, int]], said: Sequence[str]) -> dict:
    """The CUT feature: the row's texts the embedder read the start of only, by role."""
    refs = t.case.all_references
    roles = [("question", t.case.question), ("answer", t.answer)]
    roles += [(reference_role(i, len(refs)), r) for i, r in enumerate(refs, 1)]
    roles += [(f"sentence {i}", s) for i, s in enumerate(said[:MAX_SENTENCES], 1)]
    return {role: cut[text] for role, text in roles if text in cut}
