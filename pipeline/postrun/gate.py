"""The regression gate: `gate:` rules of the config checked against the rows
of a comparison. A rule fails when its metric got worse by more than
`max_drop` (a rise, for lower-is-better metrics) *and* the change is
significant after Holm's correction (p_adjusted < alpha). A drop that could
be noise does not fail a build; neither does a real but allowed one."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pipeline.config import GateRule


class GateError(ValueError):
    """A rule that matches nothing compared (a typo must not pass silently)."""


@dataclass(frozen=True)
class GateCheck:
    index: int
    rule: GateRule
    row: Mapping[str, Any]
    drop: float | None     # how much worse (positive) the candidate is
    failed: bool

    def describe(self) -> str:
        return describe_rule(self.index, self.rule)

    def finding(self) -> str:
        """One line: what was compared and why it passed or failed."""
        r = self.row
        where = f"{r['bot']}" + ("" if r["suite"] == "*" else f" suite {r['suite']}")
        if r.get("delta") is None:
            return f"{where} {r['metric']}: no pairs with values"
        p = r.get("p_adjusted")
        p_text = "p_holm –" if p is None else f"p_holm {p:.2g}"
        verdict = (f"drop {self.drop:.3g} > {self.rule.max_drop:g}, {p_text} < {self.rule.alpha:g}"
                   if self.failed else
                   f"drop {self.drop:.3g} (max {self.rule.max_drop:g}), {p_text}")
        return (f"{where} {r['metric']} {r['baseline_mean']:.3f} → {r['candidate_mean']:.3f} "
                f"({verdict})")


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
    """How much worse the candidate is: -delta, or +delta for lower-is-better."""
    if row.get("delta") is None:
        return None
    return -row["delta"] if row["higher_is_better"] else row["delta"]


def check_gate(rules: Sequence[GateRule], rows: Sequence[Mapping[str, Any]]) -> list[GateCheck]:
    """Every (rule, matching row) check; raises GateError for a rule matching no row."""
    checks = []
    for i, rule in enumerate(rules):
        matched = [r for r in rows if r["metric"] == rule.metric and r["suite"] == rule.suite
                   and (rule.bot is None or r["bot"] == rule.bot)]
        if not matched:
            metrics = sorted({r["metric"] for r in rows})
            raise GateError(f"{describe_rule(i, rule)} matches nothing compared (bots: "
                            f"{', '.join(sorted({r['bot'] for r in rows})) or 'none'}; "
                            f"metrics: {', '.join(metrics) or 'none'})")
        for row in matched:
            drop = drop_of(row)
            p = row.get("p_adjusted")
            failed = (drop is not None and drop > rule.max_drop + 1e-12
                      and p is not None and p < rule.alpha)
            checks.append(GateCheck(i, rule, row, drop, failed))
    return checks
