"""Verdict presets: named rule sets, chosen with `verdict.preset`.

- `seed`: seed 002's three rules exactly, the product's original verdict.
- `default`: a verdict that abstains. Grounding is decided by `groundedness`
  against two cut-offs fitted on the public benchmark's dev splits
  (bench/fit_groundedness.py, stored in transforms/data/groundedness.json):
  FAIL below the lower one (the contexts do not support the answer), WARN
  between (word overlap cannot tell), and only from the upper one up may the
  row PASS; an answer longer than the fit's edge (answer_length, characters)
  PASSes only from a third, higher one (a copied summary's wrong join keeps
  every bigram of its source). A figure, date or name no context or reference states
  (unsupported_facts) keeps a row from PASS too (WARN). With an expected
  answer, reference_coverage FAILs an answer that misses most of it and WARNs
  one that misses part. No rule fails an answer for its length, so a short
  correct answer ("yes", "Arthur's Magazine") is judged on its support like
  any other (an empty one: reference_coverage 0 FAILs it; without a reference
  groundedness cannot tell, WARN). A rule whose metric a row cannot compute
  (no contexts, no expected answer) is skipped for that row: a row without
  contexts gets no grounding decision and is decided by the reference rules
  (WARN when it has no reference either: no rule could be evaluated).

Rules are (metric, above | below, verdict) and the first that matches decides;
a rule with `unless: OTHER` is skipped for a row where the metric OTHER has a
value (a better metric decides there); a rule with `or_null: true` also matches
a row that has the metric's inputs but got null (the metric could not tell); a
rule with `when: {metric: OTHER, above: X}` (or below) applies only to a row where
OTHER has a value above X, and leaves the others to the next rules.
"""
from __future__ import annotations

from dataclasses import dataclass

from typing import Mapping

from transforms.score.metrics.groundedness import fitted_cuts


@dataclass(frozen=True)
class When:
    """A rule's condition on another metric: the rule applies only to a row where
    `metric` has a value above (or below) the bound."""
    metric: str
    """A metric of the run (e.g. `answer_length`, in characters)."""
    above: float | None = None
    """The rule applies where the metric's value is above this (exactly one of above /
    below)."""
    below: float | None = None
    """The rule applies where the metric's value is below this."""


@dataclass(frozen=True)
class Rule:
    metric: str
    """The metric the rule reads; a row where it is null skips the rule (and the reason
    says so)."""
    verdict: str
    """PASS, WARN or FAIL: the verdict when the rule matches."""
    above: float | None = None
    """The rule matches when the value is above this (exactly one of above / below; for a
    built-in metric scored in [0, 1], a threshold outside it is a config error)."""
    below: float | None = None
    """The rule matches when the value is below this."""
    unless: str | None = None
    """A metric of the run: the rule is skipped for a row where that metric has a value
    (a better metric decides there)."""
    or_null: bool = False
    """The rule also matches a row where the metric is null although the row has its
    inputs (the metric could not tell, e.g. groundedness of a bare "yes"); a row
    without the inputs (no contexts, no expected answer) still skips it."""
    when: When | None = None
    """`{metric: OTHER, above: X}` (or below): the rule applies only to rows where OTHER
    has a value that is above / below X; the row is otherwise left to the next rules. A
    row where OTHER is null (or not computed) skips the rule, and the reason says so."""


SEED_RULES: tuple[Rule, ...] = (
    Rule("hallucination", "FAIL", above=0.5),
    Rule("lexical_relevance", "FAIL", below=0.1),
    Rule("completeness", "WARN", below=0.6),
)


def default_rules(fail_below: float, pass_from: float,
                  long_answers: tuple[float, float] | None = None) -> tuple[Rule, ...]:
    """The default preset with its two groundedness cut-offs (bench/validity.py
    rebuilds it with cut-offs fitted without a set, to measure it held out).
    FAIL what the evidence contradicts or does not hold; PASS only what it
    supports; WARN what a person (or a judge) should look at. long_answers,
    (min_chars, pass_from_long): an answer longer than min_chars characters
    PASSes only from groundedness pass_from_long up."""
    long_rule = () if long_answers is None else (
        # long answers: more places for an error word overlap cannot see
        Rule("groundedness", "WARN", below=long_answers[1],
             when=When("answer_length", above=long_answers[0])),)
    return (
        Rule("reference_coverage", "FAIL", below=0.25),    # misses most of the expected answer
        Rule("groundedness", "FAIL", below=fail_below),    # the contexts do not support it
        Rule("groundedness", "WARN", below=pass_from,      # word overlap cannot tell, or
             or_null=True),                                # nothing to look for ("yes")
        *long_rule,
        Rule("unsupported_facts", "WARN", above=0.5),      # a figure, date or name no context
                                                           # or reference states
        Rule("reference_coverage", "WARN", below=0.7),     # misses part of the expected answer
    )


def fitted_rules(cuts: Mapping) -> tuple[Rule, ...]:
    """The default preset with a fit's cut-offs as bench/fit_groundedness.py gives
    them ({fail_below, pass_from, long_answers: {above_chars, pass_from} | None})."""
    long = cuts.get("long_answers")
    return default_rules(cuts["fail_below"], cuts["pass_from"],
                         (long["above_chars"], long["pass_from"]) if long else None)


DEFAULT_RULES: tuple[Rule, ...] = fitted_rules(fitted_cuts())

PRESETS: dict[str, tuple[Rule, ...]] = {"default": DEFAULT_RULES, "seed": SEED_RULES}
