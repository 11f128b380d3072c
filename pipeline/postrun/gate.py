"""The regression gate: `gate:` rules of the config checked against the rows
of a comparison. A rule fails when its metric got worse by more than
`max_drop` (a rise, for lower-is-better metrics; a change either way, for a
metric with no direction such as answer_length) *and* the change is
significant after Holm's correction (p_adjusted < alpha). A drop that could
be noise does not fail a build; neither does a real but allowed one.

A gated metric that cannot be compared fails its rule, with the reason: it
is missing from one run, or null in every case of one side (or no case has
a value on both sides). A gate that cannot look must not pass.

A check that passes without having looked at everything is a warning, with
the reason, never a silent pass: a drop larger than `max_drop` that is not
significant (too few pairs to tell it from noise: with 5 pairs or fewer no
drop can be), and a check that left out cases of the baseline (only in the
baseline, a repeated case id, or null in the candidate). The exit code stays
0: the gate did not find a regression; the output says what it could not see."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pipeline.config import GateRule
from schemas.tables import ALL_SUITES
from transforms.publish.html import num
from transforms.text.wording import counted


class GateError(ValueError):
    """A rule that matches nothing compared (a typo must not pass silently)."""


@dataclass(frozen=True)
class GateCheck:
    index: int
    rule: GateRule
    row: Mapping[str, Any]
    drop: float | None     # how much worse (positive) the candidate is
    failed: bool
    missing: str | None = None  # why the metric could not be compared (the check fails)
    warning: str | None = None  # what a passed check could not see (see unseen())

    @property
    def status(self) -> str:
        """FAIL, WARN (passed without having seen everything) or pass."""
        return "FAIL" if self.failed else "WARN" if self.warning else "pass"

    def describe(self) -> str:
        return describe_rule(self.index, self.rule)

    def finding(self) -> str:
        """One line: what was compared and why it passed or failed."""
        r = self.row
        where = f"{r['bot']}" + ("" if r["suite"] == "*" else f" suite {r['suite']}")
        if self.missing:
            return f"{where} {r['metric']}: {self.missing}"
        if r.get("delta") is None:
            return f"{where} {r['metric']}: no pairs with values"
        p = r.get("p_adjusted")
        p_text = "p_holm –" if p is None else f"p_holm {p_shown(p, self.rule.alpha)}"
        moved = "drop" if r.get("higher_is_better", True) is not None else "change"
        above = self.drop > self.rule.max_drop + 1e-12
        verdict = (f"{moved} {self.drop:.3g} > {self.rule.max_drop:g}, {p_text} "
                   f"{'<' if self.failed else '≥'} {self.rule.alpha!r}" if above else
                   f"{moved} {self.drop:.3g} (max {self.rule.max_drop:g}), {p_text}")
        # a side's pass rate "–" where no rule decided its rows (compare.shown's rows)
        return (f"{where} {r['metric']} {num(r['baseline_mean'])} → {num(r['candidate_mean'])} "
                f"({verdict})" + (f"; {self.warning}" if self.warning else ""))


def p_shown(p: float, alpha: float) -> str:
    """p in two significant digits, or as many more as it takes for the
    printed p to fall on the same side of alpha as p does: a finding must not
    read 'p_holm 0.012 < 0.0117188'."""
    for digits in range(2, 17):
        text = f"{p:.{digits}g}"
        if (float(text) < alpha) == (p < alpha):
            return text
    return repr(p)


def describe_rule(index: int, rule: GateRule) -> str:
    parts = [f"metric: {rule.metric}", f"max_drop: {rule.max_drop:g}"]
    if rule.bot is not None:
        parts.append(f"bot: {rule.bot}")
    if rule.suite != "*":
        parts.append(f"suite: {rule.suite}")
    if rule.alpha != 0.05:
        parts.append(f"alpha: {rule.alpha:g}")
    return f"gate[{index}] {{{', '.join(parts)}}}"


def drop_of(row: Mapping[str, Any]) -> float | None:
    """How much worse the candidate is: -delta, or +delta for lower-is-better;
    for a metric with no direction (answer_length) a move either way, |delta|:
    its max_drop is the largest change allowed."""
    if row.get("delta") is None:
        return None
    if row["higher_is_better"] is None:
        return abs(row["delta"])
    drop = -row["delta"] if row["higher_is_better"] else row["delta"]
    return drop + 0.0  # an unchanged metric drops by 0, not -0 (how -0.0 prints)


def missing_values(row: Mapping[str, Any]) -> str | None:
    """Why a comparison row has nothing to compare (None: it has pairs)."""
    if row.get("delta") is not None:  # a delta needs pairs with values
        return None
    empty = [side for side in ("baseline", "candidate") if not row.get(f"{side}_values")]
    if empty:
        return (f"null in every case of the {' and the '.join(empty)} "
                f"({row.get('null_pairs', 0)} paired cases, none with a value on both sides)")
    return "no paired case has a value on both sides"


def unseen(row: Mapping[str, Any], rule: GateRule, drop: float) -> str | None:
    """What a passed check could not see, or None: a drop above max_drop that
    is not significant (the pairs too few, or too noisy, to tell), and the
    baseline's cases it left out (not paired, or null in the candidate)."""
    said, n = [], row.get("n_pairs", 0)
    if drop > rule.max_drop + 1e-12:
        said.append(f"not significant over {counted(n, 'paired case')} (too few, or too "
                    "noisy, to tell the drop from chance)")
    left = [(row.get("only_in_baseline", 0), "only in the baseline"),
            (row.get("duplicate_case_id", 0), "with a repeated case id"),
            (row.get("baseline_values", n) - n, "null in the candidate")]
    if any(n for n, _ in left):
        said.append("baseline cases not checked: "
                    + ", ".join(f"{n:,} {why}" for n, why in left if n))
    return "; ".join(said) or None


def compared(rows: Sequence[Mapping[str, Any]], with_suites: bool) -> str:
    """What a comparison holds, for a rule that matched none of it: the bots,
    the suites (when the rule names one: a suite may exist in one run only)
    and the metrics."""
    def names(key: str) -> str:
        return ", ".join(sorted({r[key] for r in rows if r[key] != ALL_SUITES})) or "none"
    return "; ".join(f"{label}: {names(key)}" for label, key in
                     (("bots", "bot"), ("suites", "suite"), ("metrics", "metric"))
                     if with_suites or key != "suite")


def check_gate(rules: Sequence[GateRule], rows: Sequence[Mapping[str, Any]],
               not_compared: Mapping[str, Sequence[str]] | None = None,
               unpaired_bots: Mapping[str, int] | None = None,
               new_bots: Mapping[str, int] | None = None,
               gone_suites: Mapping[tuple[str, str], int] | None = None) -> list[GateCheck]:
    """Every (rule, matching row) check. A rule whose metric only one run has,
    or that is null on a side, is a failed check, and so is one that applies
    to a baseline bot with no paired case (unpaired_bots: bot -> its cases only
    in the baseline; renamed or dropped in the candidate) or names a suite of
    the baseline the candidate lacks (gone_suites: (bot, suite) -> the
    baseline's cases); a rule matching nothing at all (a typo, or a bot only in
    the candidate: new_bots) raises GateError."""
    checks = []
    only = {metric: side for side, metrics in (not_compared or {}).items() for metric in metrics}
    for i, rule in enumerate(rules):
        lost = [b for b in sorted(unpaired_bots or {}) if rule.bot in (None, b)]
        for bot in lost:
            row = {"bot": bot, "suite": rule.suite, "metric": rule.metric}
            checks.append(GateCheck(i, rule, row, None, True, "no case paired "
                                    f"({unpaired_bots[bot]:,} only in the baseline): the "
                                    "candidate run lacks the bot or shares none of its cases"))
        matched = [r for r in rows if r["metric"] == rule.metric and r["suite"] == rule.suite
                   and (rule.bot is None or r["bot"] == rule.bot)]
        if not matched and rule.bot in lost:  # the bot it names is the one lost
            continue
        if not matched and rule.metric in only:
            absent = "candidate" if only[rule.metric] == "only_in_baseline" else "baseline"
            row = {"bot": rule.bot or "every bot", "suite": rule.suite, "metric": rule.metric}
            checks.append(GateCheck(i, rule, row, None, True,
                                    f"not computed in the {absent} run"))
            continue
        gone = [(bot, n) for (bot, suite), n in sorted((gone_suites or {}).items())
                if suite == rule.suite and rule.bot in (None, bot) and bot not in lost
                and any(r["metric"] == rule.metric for r in rows)]  # not a typo'd metric
        checks += [GateCheck(i, rule, {"bot": bot, "suite": rule.suite, "metric": rule.metric},
                             None, True, f"the candidate run has no case in the suite ({n:,} "
                             "in the baseline): renamed or dropped") for bot, n in gone]
        if not matched and gone:
            continue
        if not matched and rule.bot in (new_bots or {}):
            raise GateError(f"{describe_rule(i, rule)} names a bot only the candidate run has "
                            f"({new_bots[rule.bot]:,} cases): nothing to compare it with")
        if not matched:
            raise GateError(f"{describe_rule(i, rule)} matches nothing compared "
                            f"({compared(rows, rule.suite != ALL_SUITES)})")
        for row in matched:
            missing = missing_values(row)
            if missing:
                checks.append(GateCheck(i, rule, row, None, True, missing))
                continue
            drop = drop_of(row)
            p = row.get("p_adjusted")
            failed = (drop is not None and drop > rule.max_drop + 1e-12
                      and p is not None and p < rule.alpha)
            checks.append(GateCheck(i, rule, row, drop, failed,
                                    warning=None if failed else unseen(row, rule, drop)))
    return checks
