"""A pass rate as the reports show it: "–" where no row could be decided by a
verdict rule. A bot whose rows are all ERROR (its endpoint down) or all WARN
because no rule of the run applies to its metrics has PASS 0 of n, and
summary/ keeps that 0 (its `mean` is the pass rate, a stable column), but a
report that shows 0.000 reads as "every answer failed". The reports, the
notebook view and compare show "–" for it and a note says why."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from schemas.tables import ALL_SUITES, VERDICT_METRIC


def run_has_rules(manifest: Mapping[str, Any]) -> bool:
    """Whether the run's verdict had a rule to apply (its manifest's config,
    the rules left after those naming no metric of the run were dropped).
    A manifest without them (an older run) counts as having rules."""
    verdict = (manifest.get("config") or {}).get("verdict")
    if not isinstance(verdict, Mapping) or "rules" not in verdict:
        return True
    return bool(verdict.get("rules"))


def undecided(counts: Mapping[str, Any], ruled: bool) -> bool:
    """No row of a verdict row's counts (pass_count, ...) could be decided by a
    rule: none PASS or FAIL, and every row is ERROR or the run had no rule
    (then its WARNs are the 'no rule applies' WARN). With rules, a WARN may be
    a rule's verdict, and its 0 pass rate stands."""
    if counts.get("pass_count") or counts.get("fail_count"):
        return False
    return not ruled or not counts.get("warn_count")


def shown(summary: Iterable[Mapping[str, Any]], ruled: bool) -> list[dict]:
    """The summary rows as the reports show them: the pass rate (mean and
    interval of each `verdict` row) null where no row was decided by a rule."""
    out = []
    for r in summary:
        r = dict(r)
        if r["metric"] == VERDICT_METRIC and r.get("count") and undecided(r, ruled):
            r.update(mean=None, ci_low=None, ci_high=None)
        out.append(r)
    return out


def note(summary: Iterable[Mapping[str, Any]], name: Callable[[str], str] = str) -> str | None:
    """What the reports say under the verdicts when a bot's pass rate is "–"
    (summary: the shown rows; name: a bot's name as the report writes it);
    None when every bot has one."""
    rows = [r for r in summary if r["metric"] == VERDICT_METRIC and r["suite"] == ALL_SUITES
            and r.get("count") and r.get("mean") is None]
    if not rows:
        return None
    failed = [name(r["bot"]) for r in rows if r["error_count"] == r["count"]]
    unruled = [name(r["bot"]) for r in rows if r["error_count"] != r["count"]]
    parts = []
    if failed:
        parts.append(f"{', '.join(failed)}: every row is ERROR (the bot did not answer; "
                     "errors/ holds why)")
    if unruled:
        parts.append(f"{', '.join(unruled)}: no verdict rule applies to this run's metrics "
                     "(see the note above), so every answered row is WARN")
    return ("Pass rate –: no row was decided by a verdict rule, and 0.000 would read as "
            "every row failed. " + "; ".join(parts) + ".")


def rate_text(mean: float | None, counts: Mapping[str, Any] | None, ruled: bool,
              digits: int = 3) -> str:
    """One side's pass rate in a line of text: "–" when undecided or unknown."""
    if mean is None or (counts is not None and undecided(counts, ruled)):
        return "–"
    return f"{mean:.{digits}f}"
