"""The strict semantic-match FAQ index: binary bag-of-words cosine.

Cosine of binary vectors is |A ∩ B| / sqrt(|A| |B|). The FAQ side is a sparse
CSR matrix (FAQ × vocabulary); a question's overlap with every FAQ row is one
sparse product, so 10,000 FAQ rows × 100,000 questions never loops over pairs.
"""
from __future__ import annotations

import csv
import os
from dataclasses import dataclass

import numpy as np
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from transforms.text.tokens import token_set


@dataclass(frozen=True, slots=True)
class FaqMatch:
    row: int
    question: str
    answer: str
    similarity: float


class FaqIndex:
    def __init__(self, questions: list[str], answers: list[str]):
        if len(questions) != len(answers):
            raise ValueError("FAQ questions and answers differ in length")
        if not questions:
            raise ValueError("the FAQ is empty")
        from scipy import sparse  # only runs with an FAQ bot pay for its import
        self.questions, self.answers = questions, answers
        self.vocab: dict[str, int] = {}
        rows, cols = [], []
        for i, q in enumerate(questions):
            for tok in token_set(q):
                rows.append(i)
                cols.append(self.vocab.setdefault(tok, len(self.vocab)))
        data = np.ones(len(rows), dtype=np.float32)
        self.matrix = sparse.csr_matrix((data, (rows, cols)),
                                        shape=(len(questions), max(len(self.vocab), 1)))
        self.matrix_t = self.matrix.T.tocsr()  # vocabulary × FAQ: one row per token
        self.sizes = np.asarray(self.matrix.sum(axis=1)).ravel()

    def match(self, question: str) -> FaqMatch | None:
        """Best FAQ row by binary cosine (ties: first row); None if nothing overlaps."""
        toks = token_set(question)
        ids = [self.vocab[t] for t in toks if t in self.vocab]
        if not toks or not ids:
            return None
        overlap = np.asarray(self.matrix_t[ids].sum(axis=0)).ravel()
        with np.errstate(divide="ignore", invalid="ignore"):
            sims = overlap / np.sqrt(self.sizes * len(toks))
        sims = np.nan_to_num(sims)
        best = int(np.argmax(sims))  # argmax returns the first of equal maxima
        if sims[best] <= 0:
            return None
        return FaqMatch(best, self.questions[best], self.answers[best], float(sims[best]))


def load_faq(path: str) -> tuple[list[str], list[str]]:
    """question/answer columns from Parquet or CSV; null or empty rows are skipped."""
    if path.lower().endswith(".csv"):
        with FileSystems.open(path) as fh:
            text = fh.read().decode("utf-8-sig")
        reader = csv.DictReader(text.splitlines(keepends=True) if text else [])
        if not reader.fieldnames or not {"question", "answer"} <= set(reader.fieldnames):
            raise ValueError(f"{path}: a FAQ CSV needs the header columns question, answer")
        rows = [(r["question"], r["answer"]) for r in reader]
    else:
        table = pq.read_table(FileSystems.open(path), columns=["question", "answer"])
        rows = list(zip(table.column("question").to_pylist(), table.column("answer").to_pylist()))
    pairs = [(q, a) for q, a in rows if q and q.strip() and a is not None]
    return [q for q, _ in pairs], [a for _, a in pairs]


def check_faq_file(path: str) -> None:
    """Fail fast (before the run starts) on a missing or malformed FAQ file."""
    if "://" not in path and not os.path.exists(path):
        raise ValueError(f"FAQ file not found: {path}")
    try:
        questions, _ = load_faq(path)
    except ValueError:
        raise
    except Exception as exc:
        raise ValueError(f"cannot read FAQ {path}: {exc}") from None
    if not questions:
        raise ValueError(f"FAQ {path} has no usable rows")
