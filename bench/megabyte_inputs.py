"""CPU seconds of what the tests once timed (a time limit in a test fails on a
loaded machine, so the tests check results and this measures the time).

    python bench/megabyte_inputs.py [--repeat 3]

1. `hallucination` on a megabyte of words, prices, dates, times and names
   against two contexts, and on a megabyte of figures ("0 1 2 ... 149999");
2. ROUGE (without and with the stemmer) and BLEU on a megabyte answer, ROUGE
   of a megabyte answer against a 100 kB reference, lexical_relevance of a
   megabyte answer (the inputs of tests/test_metrics_overlap.py and
   tests/test_metrics_relevance.py; they were limited to 2 s each);
3. FaqIndex.match over 10,000 FAQ rows, per question (limited to 5 ms);
4. the rate limiter in real time: 8 callers at 200 requests/s (the test held
   it within 10 %; tests/test_remote_policy.py checks it in virtual time and
   against the fake server's limit).
Each must stay linear in the text: about a second or less on a quiet machine.
"""
from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.test_metrics_overlap import _megabyte_answer  # noqa: E402
from transforms.answer.faq_index import FaqIndex  # noqa: E402
from transforms.remote.ratelimit import AdaptiveRateLimiter  # noqa: E402
from transforms.score.metrics.hallucination import hallucination  # noqa: E402
from transforms.score.metrics.overlap import bleu, rouge  # noqa: E402
from transforms.score.metrics.relevance import IdfTable, lexical_relevance  # noqa: E402

PRICING = [  # the contexts of tests/test_metrics_hallucination.py
    "Pricing: the Pro plan costs 10k per year and includes single sign-on (SSO).",
    "The Pro plan was launched on 2024-03-03. Refunds are available within 30 days of purchase.",
]


def inputs() -> dict[str, tuple[str, list[str]]]:
    rng = random.Random(5)
    words = ("the pro plan costs $10,000 per year and includes SSO . it launched on March 3, 2024 "
             "with 5% discount refunds are available within 30 days at 9am for 12k users").split()
    mixed = " ".join(rng.choice(words) for _ in range(250_000))[:1_000_000]
    figures = " ".join(str(i) for i in range(150_000))[:1_000_000]
    return {"a megabyte of words and facts": (mixed, PRICING),
            "a megabyte of figures": (figures, ["30 days, 10k per year"])}


def metric_inputs() -> dict[str, Callable[[], object]]:
    """The overlap and relevance metrics on the tests' megabyte inputs."""
    answer, long_reference = _megabyte_answer(), _megabyte_answer(2)[:100_000]
    short = "Customers can request the full refund within thirty days of purchase, running plans."
    idf = IdfTable.fit(["How do I get a refund?", "Where is my order?", "My order is late.",
                        "How do I change my plan?"])
    relevance_answer = "refund order policy days " * 50_000
    return {
        "rouge, a megabyte answer": lambda: rouge(answer, short),
        "rouge with the stemmer, a megabyte answer": lambda: rouge(answer, short,
                                                                   use_stemmer=True),
        "rouge, a megabyte answer vs a 100 kB reference": lambda: rouge(_megabyte_answer(1),
                                                                        long_reference),
        "bleu, a megabyte answer": lambda: bleu(answer, short),
        "lexical_relevance, a megabyte answer": lambda: lexical_relevance(
            "How do I get a refund for my order?", relevance_answer, idf),
    }


def faq_ms_per_question(questions: int = 2000) -> float:
    rng = np.random.default_rng(1)
    vocab = [f"w{i}" for i in range(5000)]
    faq = [" ".join(rng.choice(vocab, 10)) for _ in range(10_000)]
    index = FaqIndex(faq, faq)
    qs = [" ".join(rng.choice(vocab, 8)) for _ in range(questions)]
    t0 = time.process_time()
    for q in qs:
        index.match(q)
    return (time.process_time() - t0) / questions * 1000.0


def limiter_rate(rps: float = 200, callers: int = 8, each: int = 60) -> float:
    """Requests/s the limiter let through in steady state (the first 0.5 s left out)."""
    limiter = AdaptiveRateLimiter(rps)

    async def caller(times):
        for _ in range(each):
            await limiter.acquire()
            times.append(time.monotonic())

    async def run():
        times: list[float] = []
        await asyncio.gather(*(caller(times) for _ in range(callers)))
        return sorted(times)
    times = asyncio.run(run())
    window = [t for t in times if t >= times[0] + 0.5]
    return (len(window) - 1) / (window[-1] - window[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print("| input | CPU s per run |\n|---|---|")
    for name, (answer, contexts) in inputs().items():
        runs = []
        for _ in range(args.repeat):
            t0 = time.process_time()
            hallucination(answer, contexts)
            runs.append(time.process_time() - t0)
        print(f"| hallucination, {name} | {' / '.join(f'{r:.2f}' for r in runs)} |")
    for name, fn in metric_inputs().items():
        runs = []
        for _ in range(args.repeat):
            t0 = time.process_time()
            fn()
            runs.append(time.process_time() - t0)
        print(f"| {name} | {' / '.join(f'{r:.2f}' for r in runs)} |")
    faq = [faq_ms_per_question() for _ in range(args.repeat)]
    print(f"| FaqIndex.match, 10,000 FAQ rows (CPU ms per question) | "
          f"{' / '.join(f'{r:.2f}' for r in faq)} |")
    rates = [limiter_rate() for _ in range(args.repeat)]
    print(f"| rate limiter at 200/s, 8 callers (requests/s let through, wall clock) | "
          f"{' / '.join(f'{r:.1f}' for r in rates)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
