"""Verdict presets: named rule sets, chosen with `verdict.preset`.

- `seed`: seed 002's three rules exactly, the product's original verdict.
- `default`: rules chosen with `evalbeam calibrate` on the validation sets
  (validation/, see VALIDITY.md for how they agree with people), using the
  best metrics a run has: reference-based ones when there is an expected
  answer, semantic ones when embeddings are on. A rule whose metric a row
  cannot compute (no expected answer, no contexts) is skipped for that row,
  so one preset serves runs with and without references.

Rules are (metric, above | below, verdict) and the first that matches decides;
a rule with `unless: OTHER` is skipped for a row where the metric OTHER has a
value (a better metric decides there).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    metric: str
    """The metric the rule reads; a row where it is null skips the rule (and the reason
    says so)."""
    verdict: str
    """PASS, WARN or FAIL: the verdict when the rule matches."""
    above: float | None = None
    """The rule matches when the value is above this (exactly one of above / below)."""
    below: float | None = None
    """The rule matches when the value is below this."""
    unless: str | None = None
    """A metric of the run: the rule is skipped for a row where that metric has a value
    (a better metric decides there)."""


SEED_RULES: tuple[Rule, ...] = (
    Rule("hallucination", "FAIL", above=0.5),
    Rule("lexical_relevance", "FAIL", below=0.1),
    Rule("completeness", "WARN", below=0.6),
)

# Chosen on the validation sets' `dev` split (the most accurate thresholds that
# keep grounded answers failing and hallucinated ones passing at most 10% of the
# time there; figures for both splits, every language and long vs short
# answers, from bench/validity.py, in VALIDITY.md).
# FAIL what is clearly wrong; WARN what a person should look at.
DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("hallucination", "FAIL", above=0.7),        # most of what it says is not in the contexts
    Rule("reference_coverage", "FAIL", below=0.25),  # misses most of the expected answer
    # states none of the facts asked about; only without a reference: key_fact_recall
    # guesses the key facts from the contexts, reference_coverage knows them
    Rule("key_fact_recall", "FAIL", below=0.15, unless="reference_coverage"),
    Rule("unsupported_facts", "WARN", above=0.5),    # a figure, date or name no context or reference states
    Rule("reference_coverage", "WARN", below=0.7),   # misses part of the expected answer
)

PRESETS: dict[str, tuple[Rule, ...]] = {"default": DEFAULT_RULES, "seed": SEED_RULES}
