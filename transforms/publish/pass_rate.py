"""A pass rate as the reports show it: "–" where no row could be decided by a
verdict rule. A bot whose rows are all ERROR (its endpoint down) or all WARN
because no rule of the run applies to its metrics has PASS 0 of n, and
summary/ keeps that 0 (its `mean` is the pass rate, a stable column), but a
report that shows 0.000 reads as "every answer failed". The reports, the
notebook view and compare show "–" for it and a note says why."""
from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Mapping, Sequence

from schemas.tables import ALL_SUITES, PASS_RATE, VERDICT_METRIC, VERDICT_ORDER


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


def side_counts(transitions: Mapping[str, int], side: int) -> dict[str, int]:
    """One side's verdict counts (side 0: the baseline or a, 1: the candidate or
    b) from a pass_rate row's transitions {'PASS->FAIL': n, ...}."""
    out = {f"{v.lower()}_count": 0 for v in VERDICT_ORDER}
    for key, n in transitions.items():
        out[f"{key.split('->')[side].lower()}_count"] += n
    return out


def shown_pairs(rows: Iterable[Mapping[str, Any]], ruled: Sequence[bool]) -> list[dict]:
    """Paired rows (compare's, a head to head's) as the pages show them: a
    pass_rate row's mean of a side null where none of that side's paired rows
    was decided by a rule (ruled: whether the baseline's and the candidate's
    runs have rules). The difference stays: it counts such rows as not passing,
    as compare's gate does."""
    out = []
    for r in rows:
        r = dict(r)
        moves = r.get("transitions")
        if r["metric"] == PASS_RATE and moves:
            moves = json.loads(moves) if isinstance(moves, str) else moves
            for side, key in enumerate(("baseline_mean", "candidate_mean")):
                if undecided(side_counts(moves, side), ruled[side]):
                    r[key] = None
        out.append(r)
    return out


PAIRED_NOTE = ("a pass rate shown as – is a side none of whose paired rows a verdict rule "
               "decided (every row ERROR, or no rule applies to its run's metrics); the "
               "difference counts those rows as not passing")


def paired_note(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """PAIRED_NOTE when a pass rate of the shown rows is "–" (None else)."""
    hidden = any(r["metric"] == PASS_RATE and r.get("n_pairs")
                 and (r.get("baseline_mean") is None or r.get("candidate_mean") is None)
                 for r in rows)
    return PAIRED_NOTE if hidden else None


def shown_head_to_head(pairs: Iterable[tuple[Sequence[str], Mapping[str, Any]]], ruled: bool
                       ) -> list[tuple[Sequence[str], dict]]:
    """A run's pairs of bots (one run: one set of rules) with shown_pairs' rows."""
    return [(names, {**stats, "rows": shown_pairs(stats["rows"], (ruled, ruled))})
            for names, stats in pairs]
