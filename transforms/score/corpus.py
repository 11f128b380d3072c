"""Corpus statistics computed in one cheap second pass over the input and
handed to every worker as side inputs: document frequencies for lexical
relevance's IDF, and BERTScore's idf over the run's references.

Reading the input again (only the text columns) keeps the main stage fused: a
side input computed from the main stage's own output would force the runner
to hold every row until it is ready. Both statistics come from the same pass
(one read of each shard), and both are bounded whatever the input's size: the
IDF table keeps the MAX_IDF_TERMS most frequent terms (a term beyond them
counts as unseen), BERTScore's idf is over the tokenizer's fixed vocabulary.
"""
from __future__ import annotations

import heapq
from collections import Counter
from typing import Any, Iterable, Mapping

import apache_beam as beam

from transforms.answer.faq_index import load_faq
from transforms.score.metrics.relevance import IdfTable, document_terms
from transforms.score.metrics.semantic import BertIdf
from transforms.read.cases import Shard, read_valid_cases

MAX_IDF_TERMS = 200_000  # terms in the IDF side input (~25 MB on each worker)


class _DocumentCounts(beam.CombineFn):
    """Terms of documents -> (documents containing each term, number of documents)."""

    def create_accumulator(self):
        return Counter(), 0

    def add_input(self, acc, terms):
        df, n = acc
        df.update(set(terms))
        return df, n + 1

    def merge_accumulators(self, accs):
        total, n = Counter(), 0
        for df, k in accs:
            total.update(df)
            n += k
        return total, n


class BertIdfFn(_DocumentCounts):
    """Reference token lists -> BertIdf (bert_score's idf over the run's references)."""

    def extract_output(self, acc) -> BertIdf:
        df, n = acc
        return BertIdf(n, dict(df))


class TokenizeReferences(beam.DoFn):
    """Reference text -> the embedder's tokens (wordpieces for the local model)."""

    def __init__(self, embeddings_cfg):
        self._cfg = embeddings_cfg

    def setup(self):
        from transforms.enrich.embed import embedder_tokenizer
        self._tokenize = embedder_tokenizer(self._cfg)

    def process(self, text: str):
        yield self._tokenize(text)


def prune_counts(df: Counter, keep: int) -> Counter:
    """Misra-Gries: with more than 2 * keep terms, subtract the (keep + 1)-th
    largest count from every count and drop what falls to zero. What is left
    is at most `keep` terms, each undercounted by at most (sum of counts) /
    (keep + 1); the pruning is mergeable, so bundles can prune on their own.
    Below 2 * keep terms nothing changes (exact counts)."""
    if len(df) <= 2 * keep:
        return df
    cut = heapq.nlargest(keep + 1, df.values())[-1]
    return Counter({t: c - cut for t, c in df.items() if c > cut})


class DocumentFrequencyFn(_DocumentCounts):
    """Texts -> IdfTable (document frequencies over the run's input corpus) of
    at most max_terms terms: exact while the vocabulary is below twice that,
    the most frequent terms (Misra-Gries counts) beyond."""

    def __init__(self, max_terms: int = MAX_IDF_TERMS):
        self._max_terms = max_terms

    def add_input(self, acc, text: str):
        df, n = super().add_input(acc, document_terms(text))
        return prune_counts(df, self._max_terms), n

    def merge_accumulators(self, accs):
        df, n = super().merge_accumulators(accs)
        return prune_counts(df, self._max_terms), n

    def extract_output(self, acc) -> IdfTable:
        df, n = acc
        if len(df) > self._max_terms:
            df = dict(heapq.nlargest(self._max_terms, df.items(), key=lambda tc: (tc[1], tc[0])))
        return IdfTable.from_document_frequencies(df, n)


class ReadCorpus(beam.DoFn):
    """One pass over the corpus sources: ("shard", Shard) -> every text of its
    valid cases (question, references, answer, passages) for the IDF, and each
    reference on the `references` output for BERTScore's idf; ("faq", path)
    -> the FAQ's answers (responses the faq bot can give)."""
    REFERENCES = "references"

    def __init__(self, columns: Mapping[str, str], texts: bool, references: bool):
        self._columns, self._texts, self._references = dict(columns), texts, references

    def process(self, item: tuple[str, Any]):
        kind, what = item
        if kind == "faq":
            if self._texts:
                yield from load_faq(what)[1]
            return
        for case in read_valid_cases(what, self._columns):
            if self._texts:
                yield case.question
                yield from case.all_references
                if case.answer:
                    yield case.answer
                yield from case.contexts or ()
            if self._references:  # every reference is a document, as bert_score counts
                for ref in case.all_references:
                    yield beam.pvalue.TaggedOutput(self.REFERENCES, ref)


def corpus_sources(shards: Iterable[Shard], faq_files: Iterable[str]) -> list[tuple[str, Any]]:
    return [("shard", s) for s in shards] + [("faq", f) for f in faq_files]
