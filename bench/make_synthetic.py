"""Synthetic evaluation cases for benchmarks, derived from the bundled example.

    python bench/make_synthetic.py N OUT.parquet [--seed S]

Every synthetic row starts from one of the 258 cases of
`examples/support/cases.parquet` (chosen at random, so every quality kind and
suite keeps its share) and is mutated so that texts have realistic lengths but
are not copies of each other:

* question: phrasing varied (greetings, lead-ins, tails, case, punctuation);
* answer: sentences shuffled or dropped, numbers swapped for other numbers,
  phrasing varied (openers, closers, a few synonym swaps);
* expected answer: occasionally re-ordered or given a closer;
* contexts: order shuffled, sometimes a distractor passage of the same suite added;
* case_id unique (`syn-<seed>-<index>`), suite kept, tags + "synthetic".

Null fields of the source case (no expected answer, no contexts) stay null.
The file is written in row groups of 10,000 rows, chunk by chunk, so memory
does not grow with N. Deterministic for a given (N, seed).
"""
from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "examples" / "support" / "cases.parquet"
ROW_GROUP = 10_000

SCHEMA = pa.schema([
    ("case_id", pa.string()), ("question", pa.string()), ("expected_answer", pa.string()),
    ("contexts", pa.list_(pa.string())), ("answer", pa.string()), ("suite", pa.string()),
    ("tags", pa.list_(pa.string())),
])

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w])")

Q_LEADS = ("", "", "", "Hi, ", "Hello! ", "Quick question: ", "Hey there, ", "Sorry to bother you, ",
           "I was wondering: ", "Can you tell me: ", "Good morning. ")
Q_TAILS = ("", "", "", " Thanks!", " Thank you.", " Please advise.", " Asking for a friend.",
           " I need to know today.", " Cheers")
A_OPENERS = ("", "", "", "", "Sure! ", "Happy to help. ", "Good question. ", "Thanks for asking. ",
             "Of course. ", "Let me check that for you. ", "Sorry for the wait. ")
A_CLOSERS = ("", "", "", "", " Let me know if there is anything else I can do.",
             " Please reach out if you have more questions.", " I hope this helps!",
             " You can find more details in the app.", " We can help with anything else, too.")
SYNONYMS = (("customers", "clients"), ("receive", "get"), ("within", "in under"),
            ("purchase", "buy"), ("automatically", "on its own"), ("contact", "reach"),
            ("approximately", "about"), ("however", "but"), ("account", "profile"),
            ("device", "unit"))


def _sentences(text: str | None) -> list[str]:
    return [s for s in _SENTENCE.split(text)] if text else []


class Base:
    """One source case, pre-split so that per-row mutation is cheap."""

    __slots__ = ("question", "expected", "exp_sents", "answer", "ans_sents", "contexts",
                 "suite", "tags")

    def __init__(self, row: dict):
        self.question = row["question"]
        self.expected = row["expected_answer"]
        self.exp_sents = _sentences(self.expected)
        self.answer = row["answer"]
        self.ans_sents = _sentences(self.answer)
        self.contexts = row["contexts"]
        self.suite = row["suite"]
        self.tags = list(row["tags"] or []) + ["synthetic"]


def _swap_numbers(text: str, rng: random.Random) -> str:
    """Replace about half the numbers with nearby or different values."""
    def repl(m: re.Match) -> str:
        if rng.random() < 0.5:
            return m.group()
        s = m.group()
        if "." in s or "," in s:
            return s
        n = int(s)
        return str(max(0, n + rng.choice((-3, -2, -1, 1, 2, 5, 10)) * max(1, n // 10)))
    return _NUMBER.sub(repl, text)


def _vary_words(text: str, rng: random.Random) -> str:
    a, b = SYNONYMS[rng.randrange(len(SYNONYMS))]
    if rng.random() < 0.5:
        a, b = b, a
    return text.replace(a, b)


def _question(base: Base, rng: random.Random) -> str:
    q = base.question
    r = rng.random()
    if r < 0.15:
        q = q.lower()
    elif r < 0.25 and q.endswith("?"):
        q = q[:-1]
    elif r < 0.3:
        q = q[:1].upper() + q[1:]
    lead = rng.choice(Q_LEADS)
    if lead and q[:1].isupper() and not q.startswith("I "):
        q = q[:1].lower() + q[1:]
    return lead + q + rng.choice(Q_TAILS)


def _answer(base: Base, rng: random.Random) -> str | None:
    if base.answer is None:
        return None
    if not base.answer:
        return "" if rng.random() < 0.8 else rng.choice(A_OPENERS).strip()
    sents = base.ans_sents
    if len(sents) > 1:
        r = rng.random()
        if r < 0.3:
            sents = rng.sample(sents, len(sents))
        elif r < 0.45:
            drop = rng.randrange(len(sents))
            sents = sents[:drop] + sents[drop + 1:]
    text = " ".join(sents)
    if rng.random() < 0.3:
        text = _swap_numbers(text, rng)
    if rng.random() < 0.4:
        text = _vary_words(text, rng)
    return rng.choice(A_OPENERS) + text + rng.choice(A_CLOSERS)


def _expected(base: Base, rng: random.Random) -> str | None:
    if base.expected is None:
        return None
    r = rng.random()
    if r < 0.15 and len(base.exp_sents) > 1:
        return " ".join(rng.sample(base.exp_sents, len(base.exp_sents)))
    if r < 0.2:
        return base.expected + rng.choice(A_CLOSERS)
    return base.expected


def _contexts(base: Base, same_suite: list[Base], rng: random.Random) -> list[str] | None:
    if base.contexts is None:
        return None
    ctx = list(base.contexts)
    if len(ctx) > 1 and rng.random() < 0.5:
        rng.shuffle(ctx)
    if rng.random() < 0.25:
        other = same_suite[rng.randrange(len(same_suite))]
        if other.contexts:
            extra = other.contexts[rng.randrange(len(other.contexts))]
            if extra not in ctx:
                ctx.insert(rng.randrange(len(ctx) + 1), extra)
    return ctx


def generate(n: int, out: str, seed: int = 0) -> None:
    bases = [Base(r) for r in pq.read_table(SOURCE).to_pylist()]
    by_suite: dict[str, list[Base]] = {}
    for b in bases:
        by_suite.setdefault(b.suite, []).append(b)
    rng = random.Random(seed)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = f"{out}.tmp{os.getpid()}"
    with pq.ParquetWriter(tmp, SCHEMA, compression="snappy") as writer:
        for start in range(0, n, ROW_GROUP):
            cols: dict[str, list] = {name: [] for name in SCHEMA.names}
            for i in range(start, min(n, start + ROW_GROUP)):
                base = bases[rng.randrange(len(bases))]
                cols["case_id"].append(f"syn-{seed}-{i:08d}")
                cols["question"].append(_question(base, rng))
                cols["expected_answer"].append(_expected(base, rng))
                cols["contexts"].append(_contexts(base, by_suite[base.suite], rng))
                cols["answer"].append(_answer(base, rng))
                cols["suite"].append(base.suite)
                cols["tags"].append(base.tags)
            writer.write_table(pa.table(cols, schema=SCHEMA), row_group_size=ROW_GROUP)
    os.replace(tmp, out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int, help="number of rows")
    ap.add_argument("out", help="output Parquet file")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    generate(args.n, args.out, args.seed)
    print(f"wrote {args.n} rows to {args.out} in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
