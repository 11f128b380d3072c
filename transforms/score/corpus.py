"""Corpus statistics computed in a cheap second pass over the input and handed
to every worker as side inputs: document frequencies for lexical relevance's
IDF, and BERTScore's idf over the run's references.

Reading the input again (only the text columns) keeps the main stage fused: a
side input computed from the main stage's own output would force the runner
to hold every row until it is ready.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping

import apache_beam as beam

from transforms.enrich.embed import embedder_tokenizer
from transforms.answer.faq_index import load_faq
from transforms.score.metrics.relevance import IdfTable, document_terms
from transforms.score.metrics.semantic import BertIdf
from transforms.read.cases import Shard, read_case_texts, read_valid_cases


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
        self._tokenize = embedder_tokenizer(self._cfg)

    def process(self, text: str):
        yield self._tokenize(text)


def read_references(shard: Shard, columns: Mapping[str, str]) -> Iterable[str]:
    """The references of a shard's valid rows (the BERTScore idf corpus; every
    reference of a case is a document, as bert_score counts multi-reference input)."""
    for case in read_valid_cases(shard, columns):
        yield from case.all_references


class DocumentFrequencyFn(_DocumentCounts):
    """Texts -> IdfTable (document frequencies over the run's input corpus)."""

    def add_input(self, acc, text: str):
        return super().add_input(acc, document_terms(text))

    def extract_output(self, acc) -> IdfTable:
        df, n = acc
        return IdfTable.from_document_frequencies(df, n)


def corpus_texts(item: tuple[str, Any], columns: Mapping[str, str]) -> Iterable[str]:
    kind, what = item
    if kind == "shard":
        yield from read_case_texts(what, columns)
    else:  # a FAQ file: its answers are responses the faq bot can give
        yield from load_faq(what)[1]
