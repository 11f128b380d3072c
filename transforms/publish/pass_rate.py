"""A pass rate as the reports show it: "–" where no row could be decided by a
verdict rule. A bot whose rows are all ERROR (its endpoint down), all WARN
because no rule of the run applies to its metrics, or all WARN because every
rule it has reads a metric (its own or its `when` metric) with no value on
any of its rows or was set aside by its `unless` on every one (every rule
skipped), has PASS 0 of n, and summary/ keeps that 0 (its `mean` is the pass
rate, a stable column), but a report, a compare page or a trend that shows
0.000 reads as "every answer failed". They show "–" (a gap in a trend line)
and a note says why."""
from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Mapping, Sequence

from schemas.tables import ALL_SUITES, PASS_RATE, VERDICT_METRIC, VERDICT_ORDER

ERRORED = "every row is ERROR (the bot did not answer; errors/ holds why)"
SEE_NOTE = " (see the note above)"  # the run's notes, on its own report
NO_RULE = (f"no verdict rule applies to this run's metrics{SEE_NOTE}, so every answered row "
           "is WARN")


def no_value(metrics: Sequence[str], set_aside: Sequence[tuple[str, str]] = ()) -> str:
    """Why a bot whose rules were all skipped on every row has no pass rate:
    metrics, those its rules read that have no value on any of its rows;
    set_aside, (metric, unless) of the rules skipped on every row because their
    `unless` metric has a value on each."""
    parts = []
    if metrics:
        parts.append(f"its rules read {', '.join(metrics)}, which have no value on any of its "
                     "rows (scores/ holds why)")
    for metric, unless in set_aside:
        parts.append(f"its rule on {metric} was skipped on every row: unless {unless} held "
                     "(it has a value on each, and no rule decides on it)")
    return ("no verdict rule could be evaluated: " + "; ".join(parts)
            + ", so every answered row is WARN")


def _rules(manifest: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The run's verdict rules as its manifest's config lists them (the rules
    left after those naming no metric of the run were dropped); None when the
    manifest does not list them (an older run: its rules count as able to decide)."""
    verdict = (manifest.get("config") or {}).get("verdict")
    if not isinstance(verdict, Mapping) or not isinstance(verdict.get("rules"), list):
        return None
    return [r for r in verdict["rules"]
            if isinstance(r, Mapping) and isinstance(r.get("metric"), str)]


Unruled = Callable[[str, str], "str | None"]


def unruled(manifest: Mapping[str, Any], summary: Iterable[Mapping[str, Any]]) -> Unruled:
    """(bot, suite) -> why no rule could decide any of that bot's rows there
    (NO_RULE: the run has none; no_value(...): each of its rules reads a metric
    that has no value on any of those rows, from summary/'s `count`, or was
    set aside on every one by its `unless`: that metric has a value on every
    answered row, the verdict row's count less its ERRORs), or None where a
    rule could (a WARN may then be a rule's verdict, and a 0 stands)."""
    rules = _rules(manifest)
    counts: dict[tuple[str, str], dict[str, int]] = {}
    answered: dict[tuple[str, str], int] = {}
    for r in summary:
        key = (r["bot"], r["suite"])
        if r["metric"] == VERDICT_METRIC:
            answered[key] = (r.get("count") or 0) - (r.get("error_count") or 0)
        else:
            counts.setdefault(key, {})[r["metric"]] = r.get("count") or 0

    def why(bot: str, suite: str) -> str | None:
        if rules is None:
            return None
        if not rules:
            return NO_RULE
        valued, rows = counts.get((bot, suite), {}), answered.get((bot, suite))
        empty, set_aside = [], []
        for rule in rules:
            metric, unless, when = rule["metric"], rule.get("unless"), rule.get("when")
            read = [metric] + ([when["metric"]] if isinstance(when, Mapping)
                               and isinstance(when.get("metric"), str) else [])
            if any(not valued.get(m) for m in read):  # skipped on every row
                empty += [m for m in read if not valued.get(m)]
            elif isinstance(unless, str) and rows and valued.get(unless, 0) >= rows:
                set_aside.append((metric, unless))
            else:
                return None  # this rule could decide a row
        return no_value(tuple(dict.fromkeys(empty)), tuple(dict.fromkeys(set_aside)))
    return why


def why_undecided(counts: Mapping[str, Any], unruled_why: str | None) -> str | None:
    """Why no row of a verdict row's counts (pass_count, ...) was decided by a
    rule, or None when one may have been: none PASS or FAIL, and every row is
    ERROR or no rule could decide (unruled_why, from unruled())."""
    if counts.get("pass_count") or counts.get("fail_count"):
        return None
    return ERRORED if not counts.get("warn_count") else unruled_why


def shown(summary: Iterable[Mapping[str, Any]], manifest: Mapping[str, Any]) -> list[dict]:
    """The summary rows as the reports show them: the pass rate (mean and
    interval of each `verdict` row) null where no row was decided by a rule,
    and why in `undecided`."""
    summary = list(summary)
    why = unruled(manifest, summary)
    out = []
    for r in summary:
        r = dict(r)
        if r["metric"] == VERDICT_METRIC and r.get("count"):
            reason = why_undecided(r, why(r["bot"], r["suite"]))
            if reason:
                r.update(mean=None, ci_low=None, ci_high=None, undecided=reason)
        out.append(r)
    return out


def reasons(rows: Iterable[tuple[str, str]]) -> str:
    """(name, why) pairs -> 'a, b: why; c: other why' (names of one reason together)."""
    by_why: dict[str, list[str]] = {}
    for name, why in rows:
        by_why.setdefault(why, []).append(name)
    return "; ".join(f"{', '.join(names)}: {why}" for why, names in
                     sorted(by_why.items(), key=lambda kv: kv[0] != ERRORED))


def note(summary: Iterable[Mapping[str, Any]], name: Callable[[str], str] = str) -> str | None:
    """What the reports say under the verdicts when a bot's pass rate is "–"
    (summary: the shown rows; name: a bot's name as the report writes it);
    None when every bot has one."""
    rows = [(name(r["bot"]), r["undecided"]) for r in summary
            if r["metric"] == VERDICT_METRIC and r["suite"] == ALL_SUITES
            and r.get("count") and r.get("undecided")]
    if not rows:
        return None
    return ("Pass rate –: no row was decided by a verdict rule, and 0.000 would read as "
            "every row failed. " + reasons(rows) + ".")


def side_counts(transitions: Mapping[str, int], side: int) -> dict[str, int]:
    """One side's verdict counts (side 0: the baseline or a, 1: the candidate or
    b) from a pass_rate row's transitions {'PASS->FAIL': n, ...}."""
    out = {f"{v.lower()}_count": 0 for v in VERDICT_ORDER}
    for key, n in transitions.items():
        out[f"{key.split('->')[side].lower()}_count"] += n
    return out


def shown_pairs(rows: Iterable[Mapping[str, Any]],
                sides: Sequence[Callable[[Mapping[str, Any]], str | None]]) -> list[dict]:
    """Paired rows (compare's, a head to head's) as the pages show them: a
    pass_rate row's mean of a side null where none of that side's paired rows
    was decided by a rule (sides: for the baseline's and the candidate's, a
    row -> unruled()'s answer for that side's bot and the row's suite). The
    difference stays: it counts such rows as not passing, as compare's gate does."""
    out = []
    for r in rows:
        r = dict(r)
        moves = r.get("transitions")
        if r["metric"] == PASS_RATE and moves:
            moves = json.loads(moves) if isinstance(moves, str) else moves
            for side, key in enumerate(("baseline_mean", "candidate_mean")):
                if why_undecided(side_counts(moves, side), sides[side](r)):
                    r[key] = None
        out.append(r)
    return out


PAIRED_NOTE = ("a pass rate shown as – is a side none of whose paired rows a verdict rule "
               "decided (every row ERROR, or no rule applies to its run's metrics or could be "
               "evaluated on them); the difference counts those rows as not passing")


def paired_note(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """PAIRED_NOTE when a pass rate of the shown rows is "–" (None else)."""
    hidden = any(r["metric"] == PASS_RATE and r.get("n_pairs")
                 and (r.get("baseline_mean") is None or r.get("candidate_mean") is None)
                 for r in rows)
    return PAIRED_NOTE if hidden else None


def shown_head_to_head(pairs: Iterable[tuple[Sequence[str], Mapping[str, Any]]],
                       manifest: Mapping[str, Any], summary: Iterable[Mapping[str, Any]]
                       ) -> list[tuple[Sequence[str], dict]]:
    """A run's pairs of bots (one run: one set of rules) with shown_pairs' rows."""
    why = unruled(manifest, summary)
    out = []
    for names, stats in pairs:
        sides = [lambda r, bot=bot: why(bot, r["suite"]) for bot in names[:2]]
        out.append((names, {**stats, "rows": shown_pairs(stats["rows"], sides)}))
    return out
