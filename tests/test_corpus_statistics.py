"""The corpus statistics' side inputs stay bounded (issue 24): the IDF table
keeps the most frequent terms, exactly while the vocabulary is small, and the
one pass over the input gives both the IDF texts and BERTScore's references."""
from __future__ import annotations

import random
from collections import Counter

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from schemas.cases import source_columns
from tests.conftest import SAMPLE_ROWS, write_cases
from transforms.read.cases import plan_shards
from transforms.read.presets import input_columns
from transforms.score.corpus import DocumentFrequencyFn, ReadCorpus, corpus_sources, prune_counts
from transforms.score.metrics.relevance import IdfTable


def _combine(fn, texts, bundles: int):
    """As a runner would: accumulate per bundle, merge, extract."""
    accs = []
    for b in range(bundles):
        acc = fn.create_accumulator()
        for text in texts[b::bundles]:
            acc = fn.add_input(acc, text)
        accs.append(acc)
    return fn.extract_output(fn.merge_accumulators(accs))


def test_a_small_vocabulary_gives_the_exact_table():
    texts = ["the cat sat", "the dog sat", "a cat ran", "the end"]
    table = _combine(DocumentFrequencyFn(max_terms=100), texts, bundles=3)
    assert table == IdfTable.fit(texts)


def test_a_large_vocabulary_keeps_the_most_frequent_terms_within_the_bound():
    rng = random.Random(0)
    # 5 frequent terms in most documents, and thousands of rare ones
    texts = [" ".join([f"common{i}" for i in range(5) if rng.random() < 0.8 - 0.1 * i]
                      + [f"rare{rng.randrange(100_000)}" for _ in range(6)])
             for _ in range(4000)]
    exact = IdfTable.fit(texts)
    table = _combine(DocumentFrequencyFn(max_terms=50), texts, bundles=7)
    assert len(table) <= 50 and len(exact) > 10_000
    assert table.n_docs == exact.n_docs == 4000
    bound = sum(exact.df.values()) / 51  # Misra-Gries: undercount at most total / (k + 1)
    for i in range(5):
        term = f"common{i}"
        assert exact.df[term] - bound <= table.df[term] <= exact.df[term]
    assert table.idf("rare1") == table.idf("never-seen")  # beyond the bound: unseen


def test_prune_counts_changes_nothing_below_twice_the_bound():
    df = Counter({f"t{i}": i for i in range(1, 21)})  # 20 terms: exact
    assert prune_counts(df, 10) is df
    pruned = prune_counts(df + Counter({"x": 1}), 10)  # 21: minus the 11th largest (10)
    assert len(pruned) == 10 and pruned["t20"] == 10 and "t10" not in pruned


def test_one_pass_gives_the_idf_texts_and_the_references(tmp_path):
    path = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    columns = source_columns(input_columns(None, {}))
    shards = plan_shards(path, columns)
    with beam.Pipeline("FnApiRunner") as p:
        out = (p | beam.Create(corpus_sources(shards, []))
               | beam.ParDo(ReadCorpus(columns, True, True)).with_outputs(
                   ReadCorpus.REFERENCES, main="texts"))
        refs = [r["expected_answer"] for r in SAMPLE_ROWS if r["expected_answer"]]
        assert_that(out[ReadCorpus.REFERENCES], equal_to(refs), label="references")
        texts = [t for r in SAMPLE_ROWS for t in
                 [r["question"]] + ([r["expected_answer"]] if r["expected_answer"] else [])
                 + ([r["answer"]] if r["answer"] else []) + (r["contexts"] or [])]
        assert_that(out.texts, equal_to(texts), label="texts")
