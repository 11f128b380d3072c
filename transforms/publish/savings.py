"""What the cascade and the sample saved: rows a metric was not asked for,
the calls they would have cost (estimated from the rows that were asked), and
the cascade's figures for the manifest and report.md."""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

from schemas.records import Turn
from transforms.decide.cascade import DECIDED_OFFLINE
from transforms.enrich.judge.sample import NOT_SAMPLED
from transforms.text.wording import counted

REMOTE_PURPOSES = ("judge:", "classifier:")


def saved_by_skipping(error: str | None) -> bool:
    """A null that saved a call: the cascade decided the row offline, or the
    row is outside the judge's sample (not a failure, not a spend cap)."""
    return bool(error) and (error == NOT_SAMPLED or error.startswith(DECIDED_OFFLINE))


def skipped_keys(turn: Turn) -> Iterator[tuple[str, str]]:
    """(bot, metric) for each metric this row was not asked for."""
    for metric, result in turn.scores.items():
        if result.value is None and saved_by_skipping(result.error):
            yield turn.bot, metric


def with_savings(usage: list[dict], skipped: Mapping[tuple[str, str], int],
                 rows_per_bot: Mapping[str, int]) -> list[dict]:
    """usage/ rows with skipped_rows (the bot's rows its metric was not asked
    for) and saved_calls = calls / asked rows × skipped rows (null when no row
    was asked; an estimate: the rows asked are not a random sample of all)."""
    for u in usage:
        n = skipped.get((u.get("bot"), u.get("metric")), 0) if u.get("metric") else 0
        u["skipped_rows"] = n if u.get("metric") else None
        asked = rows_per_bot.get(u.get("bot"), 0) - n
        u["saved_calls"] = (u["calls"] / asked * n if asked > 0 else None) if n else (
            0.0 if u.get("metric") else None)
    return usage


def cascade_report(counts: Mapping[str, int], usage: Iterable[Mapping[str, Any]]
                   ) -> dict[str, Any]:
    """The manifest's `cascade`: rows escalated, calls made, and the calls of
    judging every row estimated at the escalated rows' rate."""
    rows = counts.get("results_rows", 0)
    answered = rows - counts.get("bot_errors", 0)
    escalated = counts.get("escalated_rows", 0)
    remote = [u for u in usage if str(u["purpose"]).startswith(REMOTE_PURPOSES)]
    asked = sum(u["calls"] + u["cache_hits"] for u in remote)
    per_row = asked / escalated if escalated else None
    return {"rows": rows, "escalated_rows": escalated,
            "escalation_failed_rows": counts.get("escalation_failed_rows", 0),
            "escalated_share": escalated / answered if answered else None,
            "decided_offline_rows": answered - escalated,
            "calls": asked, "requests": sum(u["calls"] for u in remote),
            "calls_per_1000_rows": asked / rows * 1000 if rows else None,
            "every_row_calls_per_1000_rows": per_row * 1000 if per_row is not None else None,
            "saved_calls": per_row * (answered - escalated) if per_row is not None else None}


CASCADE_TITLE = "Cascade (judge.escalate: undecided)"


def cascade_sentences(c: Mapping[str, Any], code=lambda s: f"`{s}`") -> list[str]:
    """The Cascade section's text, for report.md (`code` marks a column name) and
    report.html (plain text: code=str)."""
    def num(x, digits=1):
        return "–" if x is None else f"{x:,.{digits}f}"
    share = "–" if c["escalated_share"] is None else f"{c['escalated_share']:.1%}"
    return [f"{c['escalated_rows']:,} of {counted(c['rows'], 'row')} ({share} of the "
            f"answered ones) were undecided offline (WARN) and escalated to the judge and the classifier; "
            f"{c['decided_offline_rows']:,} were decided offline and kept their verdict "
            f"(results/ {code('decided_by')}).",
            *([f"{counted(c['escalation_failed_rows'], 'escalated row')} got no judge or "
               f"classifier metric (a failed call, a spend cap, an open breaker, not sampled) and kept "
               f"their WARN ({code('decided_by')} = escalation_failed; the reason says why)."]
              if c.get("escalation_failed_rows") else []),
            f"Judge and classifier calls: {c['calls']:,} ({counted(c['requests'], 'request')}, "
            f"the rest from the call cache), {num(c['calls_per_1000_rows'])} per 1,000 rows; judging "
            f"every row: ≈ {num(c['every_row_calls_per_1000_rows'])} per 1,000 rows (at the "
            f"escalated rows' rate); saved ≈ {num(c['saved_calls'], 0)} calls."]


def cascade_lines(c: Mapping[str, Any]) -> list[str]:
    """report.md's Cascade section."""
    return ["", f"## {CASCADE_TITLE}", "", *cascade_sentences(c)]
