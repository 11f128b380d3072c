"""BERTScore parity with the reference implementation, the `bert_score` package.

tests/fixtures/bertscore_reference.json holds bert_score 0.3.12's P, R, F1 on
all-MiniLM-L6-v2 (num_layers=6, the last hidden layer), with and without idf,
for pairs that include bert_score's own README example; it was made once by
tests/fixtures/make_bertscore_reference.py in a separate venv with torch (see
that file). Here the same pairs go through evalbeam's local numpy embedder
and its greedy matching, with no torch.
"""
from __future__ import annotations

import json
import os

import pytest

from transforms.enrich.embeddings.local_minilm import get_local_minilm
from transforms.score.metrics.semantic import bertscore, bertscore_idf

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "bertscore_reference.json")


@pytest.fixture(scope="module")
def reference():
    with open(FIXTURE, encoding="utf-8") as fh:
        return json.load(fh)


@pytest.mark.parametrize("mode", ["plain", "idf"])
def test_matches_bert_score_package(reference, mode):
    model = get_local_minilm()
    cands = [c for c, _ in reference["pairs"]]
    refs = [r for _, r in reference["pairs"]]
    cand_tv = model.embed_tokens(cands, special_tokens=True)
    ref_tv = model.embed_tokens(refs, special_tokens=True)
    idf = bertscore_idf(tv.tokens for tv in ref_tv) if mode == "idf" else None
    want = reference[mode]
    for i, (c, r) in enumerate(zip(cand_tv, ref_tv)):
        got = bertscore(r.tokens, r.vectors, c.tokens, c.vectors, idf)
        assert got.details["precision"] == pytest.approx(want["P"][i], abs=2e-4), (mode, i)
        assert got.details["recall"] == pytest.approx(want["R"][i], abs=2e-4), (mode, i)
        assert got.value == pytest.approx(want["F"][i], abs=2e-4), (mode, i)


def test_idf_changes_the_scores(reference):
    """The fixture really exercises idf (guards against a fixture made wrongly)."""
    assert any(abs(a - b) > 0.01 for a, b in zip(reference["plain"]["F"], reference["idf"]["F"]))
