"""CPU seconds of `hallucination` on two megabyte answers (what the tests once
timed; a limit in a test failed on a loaded machine, so it is measured here).

    python bench/megabyte_inputs.py [--repeat 3]

1. a megabyte of words, prices, dates, times and names against two contexts;
2. a megabyte of figures ("0 1 2 ... 149999") against one short context.
Both must stay linear in the text: about a second each on a quiet machine.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transforms.score.metrics.hallucination import hallucination  # noqa: E402

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
        print(f"| {name} | {' / '.join(f'{r:.2f}' for r in runs)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
