"""Embedding-based metrics: answer similarity, BERTScore-style matching,
answer relevance. Vectors in, MetricResult out; no model here (the pipeline's
Enrich step computes the vectors, batched and cached, and hands them over).

BERTScore follows bert_score's `greedy_cos_idf`: token vectors are
L2-normalised, each candidate token takes its best cosine with any reference
token (precision) and each reference token its best with any candidate token
(recall), weighted by idf (or uniformly), F1 = 2PR / (P + R). As in bert_score,
[CLS] and [SEP] are matchable but weigh 0, and best cosines are floored at 0;
tests/test_bertscore_parity.py checks the numbers against the package.
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import numpy as np

from schemas.records import MetricResult
from transforms.text.tokens import document_frequencies



def on_unit(x: float) -> float:
    """x clamped to [0, 1]: a cosine of a vector with itself can round to
    1.0000000000000002, which is off the metrics' scale (and the report's charts
    leave off a metric with a value above 1)."""
    return min(1.0, max(0.0, x))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def say_truncated(result: MetricResult, cut: Mapping[str, tuple],
                  roles: Iterable[str]) -> MetricResult:
    """`result` with details["truncated"] naming those of the texts it compared
    (`roles`) that the embedder read the start of only, e.g. "answer: 812
    tokens, read 254" or, from the multilingual model, "answer: 24312
    characters, read 20000" (cut: role -> (its tokens, the tokens read) or
    (its count, the count read, the unit)); the value is unchanged: it scores
    what was read."""
    said = [f"{role}: {_read_of(*cut[role])}" for role in roles if role in cut]
    if said and result.value is not None:
        result.details["truncated"] = "; ".join(said)
    return result


def _read_of(total: int, read: int, unit: str = "tokens") -> str:
    return f"{total} {unit}, read {read}"


def answer_similarity(expected: np.ndarray, answer: np.ndarray) -> MetricResult:
    """cos(expected, answer) with negatives clamped to 0 (a scale of [0, 1])."""
    raw = cosine(expected, answer)
    return MetricResult(on_unit(raw), {"cosine": raw})


RESTATEMENT_NOVELTY = 0.3  # below this share of new words an answer restates the question


def answer_relevance(question: np.ndarray, sentences: np.ndarray, n_sentences: int,
                     novelty: float | None = None) -> MetricResult:
    """How well the answer's sentences address the question.

    The mean of cos(sentence, question), each clamped at 0, over the better
    half of the sentences: a multi-part answer whose background sentences are
    less similar to the question is not penalised for them. An answer whose
    content is almost all the question's own words (`novelty`, the share of its
    content words not in the question, below RESTATEMENT_NOVELTY) restates the
    question rather than answering it, and is scaled down by novelty / 0.3.
    """
    if n_sentences == 0:  # says nothing, so addresses nothing (as lexical relevance)
        return MetricResult(0.0, {"sentences": 0, "note": "empty answer"})
    sims = [on_unit(cosine(question, s)) for s in sentences]
    top = sorted(sims, reverse=True)[:max(1, math.ceil(len(sims) / 2))]
    value = on_unit(float(np.mean(top)))
    details = {"sentences": n_sentences, "per_sentence": [round(x, 4) for x in sims[:20]],
               "scored": len(top)}
    if novelty is not None:
        details["novelty"] = round(novelty, 4)
        if novelty < RESTATEMENT_NOVELTY:
            value *= novelty / RESTATEMENT_NOVELTY
            details["note"] = "restates the question"
    if n_sentences > len(sentences):
        details["note"] = f"first {len(sentences)} of {n_sentences} sentences scored"
    return MetricResult(value, details)


def bertscore_idf(reference_token_sets: Iterable[Iterable[str]]) -> "BertIdf":
    """idf(w) = ln((M + 1) / (df(w) + 1)) over M references (bert_score's get_idf_dict)."""
    df, m = document_frequencies(reference_token_sets)
    return BertIdf(m, dict(df))


class BertIdf:
    """Token idf over the run's references; unseen tokens get ln(M + 1)."""

    __slots__ = ("n_docs", "df")

    def __init__(self, n_docs: int, df: dict[str, int]):
        self.n_docs, self.df = n_docs, df

    def weights(self, tokens: Sequence[str]) -> np.ndarray:
        top = self.n_docs + 1
        return np.array([math.log(top / (self.df.get(t, 0) + 1)) for t in tokens],
                        dtype=np.float64)

    def __getstate__(self):
        return self.n_docs, self.df

    def __setstate__(self, state):
        self.n_docs, self.df = state


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def greedy_match(ref: np.ndarray, cand: np.ndarray, ref_w: np.ndarray,
                 cand_w: np.ndarray) -> tuple[float, float, float]:
    """(P, R, F1) of greedy cosine matching with token weights.

    A token's best cosine is floored at 0: bert_score multiplies the similarity
    matrix by the padding mask before taking maxima, so a token with only
    negative similarities scores 0 there (in any batch with padding); flooring
    gives the same numbers without depending on batch composition.
    """
    from transforms.enrich.embeddings.blas import blas_threads  # only runs that embed
    with blas_threads(1):  # a small product: BLAS threads would cost more than it
        sim = _unit(cand) @ _unit(ref).T             # (n_cand, n_ref)
    p_scale = cand_w / cand_w.sum() if cand_w.sum() > 0 else np.zeros_like(cand_w)
    r_scale = ref_w / ref_w.sum() if ref_w.sum() > 0 else np.zeros_like(ref_w)
    precision = on_unit(float((np.maximum(sim.max(axis=1), 0.0) * p_scale).sum()))
    recall = on_unit(float((np.maximum(sim.max(axis=0), 0.0) * r_scale).sum()))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


SPECIAL_TOKENS = frozenset({"[CLS]", "[SEP]"})


def _weights(tokens: Sequence[str], idf: BertIdf | None) -> np.ndarray:
    """idf (or 1) per token; [CLS]/[SEP] weigh 0 but stay matchable, as in bert_score."""
    w = idf.weights(tokens) if idf is not None else np.ones(len(tokens))
    return np.where([t in SPECIAL_TOKENS for t in tokens], 0.0, w)


def bertscore(ref_tokens: Sequence[str], ref_vectors: np.ndarray, cand_tokens: Sequence[str],
              cand_vectors: np.ndarray, idf: BertIdf | None = None,
              ref_total: int | None = None, cand_total: int | None = None) -> MetricResult:
    """BERTScore-style F1 of a candidate against a reference (P and R in details).
    ref_total / cand_total: a text's token count when only its first tokens
    were embedded (details["truncated"] says so: the score covers that prefix)."""
    n_ref = sum(t not in SPECIAL_TOKENS for t in ref_tokens)
    n_cand = sum(t not in SPECIAL_TOKENS for t in cand_tokens)
    if n_ref == 0:
        return MetricResult.null("reference has no tokens")
    if n_cand == 0:  # nothing said covers nothing: bert_score also gives 0
        return MetricResult(0.0, {"precision": 0.0, "recall": 0.0, "note": "empty answer"})
    ref_w, cand_w = _weights(ref_tokens, idf), _weights(cand_tokens, idf)
    p, r, f = greedy_match(ref_vectors, cand_vectors, ref_w, cand_w)
    details = {"precision": p, "recall": r, "idf": idf is not None, "ref_tokens": n_ref,
               "answer_tokens": n_cand}
    cut = {role: (total, kept) for role, total, kept in (("answer", cand_total, n_cand),
                                                        ("reference", ref_total, n_ref)) if total}
    return say_truncated(MetricResult(on_unit(f), details), cut, cut)


def bertscore_multi(per_reference: list[MetricResult]) -> MetricResult:
    """Several references: P, R and F1 each the maximum over the references
    (bert_score's multi-reference score takes the elementwise maximum), so
    they may come from different references. One reference: unchanged."""
    if len(per_reference) == 1:
        return per_reference[0]
    scored = [r for r in per_reference if r.value is not None]
    if not scored:
        return per_reference[0]
    best = max(scored, key=lambda r: r.value)
    p = max(r.details.get("precision", 0.0) for r in scored)
    r_ = max(r.details.get("recall", 0.0) for r in scored)
    return MetricResult(best.value, {**best.details, "precision": p, "recall": r_,
                                     "references": len(per_reference)})
