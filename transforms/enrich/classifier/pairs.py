"""Which (passage, sentence) pairs the grounding classifier reads for an answer.

Every checked sentence of the answer is paired with every chunk of every
context. A cross-encoder reads about 512 tokens of a pair and a server
truncates the rest, so a long context would lose its end silently; contexts
are therefore cut into chunks of at most `chunk_words` words at sentence ends
(a longer sentence is cut by words), as SummaC and MiniCheck do.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from transforms.text.sentences import answer_sentences

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def passage_sentences(text: str) -> list[str]:
    """A passage's sentences, text kept as written (no list markers removed)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def chunk_passage(text: str, chunk_words: int) -> list[str]:
    """The passage in chunks of at most chunk_words words, cut at sentence ends
    where a sentence fits; the whole passage when it is short enough."""
    if len(text.split()) <= chunk_words:
        return [text.strip()] if text.strip() else []
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for sentence in passage_sentences(text):
        words = sentence.split()
        while len(words) > chunk_words:  # a sentence longer than a chunk: cut by words
            if current:
                chunks.append(" ".join(current))
                current, size = [], 0
            chunks.append(" ".join(words[:chunk_words]))
            words = words[chunk_words:]
        if size + len(words) > chunk_words and current:
            chunks.append(" ".join(current))
            current, size = [], 0
        if words:
            current.append(" ".join(words))
            size += len(words)
    if current:
        chunks.append(" ".join(current))
    return chunks


@dataclass(frozen=True)
class PairPlan:
    """The sentences checked, the chunks read, and the pairs between them."""
    sentences: tuple[str, ...]                 # the first max_sentences of the answer
    total_sentences: int                       # all of the answer's sentences
    chunks: tuple[tuple[str, str], ...]        # (id "C2.1": context 2, chunk 1; text)

    def pairs(self) -> list[tuple[str, str]]:
        """(premise, hypothesis) = (chunk, sentence), sentence by sentence."""
        return [(chunk, sentence) for sentence in self.sentences for _, chunk in self.chunks]


def plan_pairs(answer: str, contexts: list[str], chunk_words: int,
               max_sentences: int) -> PairPlan:
    sentences = answer_sentences(answer)
    chunks = tuple((f"C{i}.{j}", chunk)
                   for i, context in enumerate(contexts, 1)
                   for j, chunk in enumerate(chunk_passage(context, chunk_words), 1))
    return PairPlan(tuple(sentences[:max_sentences]), len(sentences), chunks)
