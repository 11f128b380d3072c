"""Custom metrics for evalbeam: plain functions of a sample (a dict) and options.

Named in the config as "my_metrics:<function>"; evalbeam finds this module
beside the config and ships it with the job (pickled by value), so workers
need no copy of it.
"""
from __future__ import annotations

import re


def mentions_price(sample, currency="$"):
    """1 when the answer states a price in the currency, 0 when not."""
    return float(bool(re.search(re.escape(currency) + r"\s?\d", sample["answer"])))


def reference_words(sample, min_words=1):
    """Share of the best reference's words (longer than 3 letters) found in the answer,
    with the best reference in the details; None (null) when no reference has such words."""
    answer = set(re.findall(r"\w{4,}", sample["answer"].lower()))
    best = None
    for i, ref in enumerate(sample["references"]):
        words = set(re.findall(r"\w{4,}", ref.lower()))
        if len(words) >= min_words:
            share = len(words & answer) / len(words)
            if best is None or share > best[0]:
                best = (share, {"reference": i + 1, "missing": sorted(words - answer)[:10]})
    return best  # (value, details) or None
