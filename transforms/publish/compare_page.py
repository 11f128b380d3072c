"""The pages of a comparison, runs/<candidate>/compare/<baseline>.md and
.html, from the comparison as plain data (see pipeline/postrun/compare.py):
the gate, the changes per bot with their intervals and p-values, the verdict
transitions, the most regressed cases with both answers and reasons, and the
cases only one run has."""
from __future__ import annotations

import json
import os
from typing import Any, Mapping

from schemas.tables import PASS_RATE, VERDICT_ORDER as VERDICTS
from transforms.publish import charts
from transforms.publish.html import (Raw, esc, figure, isolated, num, p_text, page, signed,
                                    table, tag)
from transforms.publish.paired import CHANGED, MIN_DIFFERENCE, change, metric_label, wtl
from transforms.publish.report import FEW_BOTS, clip, md_cell, md_table
from transforms.text.wording import counted

METHOD = ("Rows pair by (bot, case_id) (bot against bot: by case_id). Δ = candidate − baseline "
          "over the pairs where both have a value; its 95% interval is a percentile bootstrap "
          "that resamples cases (1,000 resamples, fixed seed). p: Wilcoxon signed-rank for "
          "continuous metrics, exact McNemar for 0/1 metrics and the pass rate; adjusted with "
          "Holm's method across the metrics of each bot and suite. A case whose value moved by "
          "no more than the minimum practical difference is a tie (W/T/L) and a zero in the "
          "tests; a metric is better or worse when its adjusted p < 0.05 and its mean moved "
          "by more than that difference. W/T/L: cases where the candidate is better / equal / "
          "worse. A metric with no better direction (answer_length) is never better or worse: "
          "a significant move is \"changed\", and it has no wins or losses (–).")
UNPAIRED_TITLES = {"only_in_baseline": "only in the baseline",
                   "only_in_candidate": "only in the candidate",
                   "duplicate_case_id": "case id repeated within a run (not paired)"}




def delta_text(row: Mapping[str, Any]) -> str:
    return (f"{signed(row.get('delta'))} [{signed(row.get('ci_low'))}, "
            f"{signed(row.get('ci_high'))}]")


def _metric_label(row: Mapping[str, Any]) -> str:
    return metric_label(row["metric"], row["higher_is_better"])


def change_cells(row: Mapping[str, Any]) -> list[Any]:
    """One line of the changes tables (md and html alike)."""
    mark = {"better": "▲ better", "worse": "▼ worse", CHANGED: CHANGED}.get(change(row), "")
    return [_metric_label(row), row["n_pairs"], num(row.get("baseline_mean")),
            num(row.get("candidate_mean")), delta_text(row), row.get("test") or "–",
            p_text(row.get("p_value")), p_text(row.get("p_adjusted")),
            wtl(row), mark]


CHANGE_HEADERS = ["metric", "pairs", "baseline", "candidate", "Δ [95% CI]", "test", "p",
                  "p (Holm)", "W/T/L", "change"]


def _rows(c: Mapping[str, Any], bot: str, suite: str = "*") -> list[Mapping[str, Any]]:
    return [r for r in c["rows"] if r["bot"] == bot and r["suite"] == suite]


def _compared(rows: list[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], str | None]:
    """The rows with pairs, and the sentence naming the metrics without any (a
    row of dashes and 0/0/0 per such metric, as latency_ms of two recorded runs,
    said nothing; the run report's head to head names them the same way)."""
    missing = [r["metric"] for r in rows if not r.get("n_pairs")]
    return ([r for r in rows if r.get("n_pairs")],
            f"Not compared (no case has a value from both): {', '.join(missing)}."
            if missing else None)


def _suites(c: Mapping[str, Any], bot: str) -> list[str]:
    return sorted({r["suite"] for r in c["rows"] if r["bot"] == bot and r["suite"] != "*"})


BOTS_HEADERS = ["bot", "pairs", "pass rate", "Δ pass rate [95% CI]",
                "significantly worse", "significantly better"]


def bots_at_a_glance(c: Mapping[str, Any]) -> list[list[Any]]:
    """One line per bot, the most regressed pass rate first: its pass rate's
    move and the metrics significantly worse and better (with 25 bots each
    bot's own table made the page 44,000 px tall before the first verdict)."""
    out = []
    for bot in c["bots"]:
        rows = _rows(c, bot)
        pr = next((r for r in rows if r["metric"] == PASS_RATE), {})
        named = {side: ", ".join(_metric_label(r) for r in rows
                                 if r["metric"] != PASS_RATE and change(r) == side) or "–"
                 for side in ("worse", "better")}
        mark = {"better": " ▲", "worse": " ▼"}.get(change(pr), "") if pr else ""
        out.append((pr.get("delta") if pr.get("delta") is not None else 0.0, bot, [
            bot, pr.get("n_pairs", 0),
            f"{num(pr.get('baseline_mean'))} → {num(pr.get('candidate_mean'))}",
            delta_text(pr) + mark if pr else "–", named["worse"], named["better"]]))
    return [cells for _, _, cells in sorted(out, key=lambda x: (x[0], x[1]))]


BOTS_NOTE = ("One line per bot, the largest drop of the pass rate first; each bot's "
             "metrics, transitions and most regressed cases follow, folded.")


def transition_grid(row: Mapping[str, Any]) -> list[list[Any]]:
    counts = json.loads(row.get("transitions") or "{}")
    return [[f"{a} →", *(counts.get(f"{a}->{b}", 0) for b in VERDICTS)] for a in VERDICTS]


def headline(c: Mapping[str, Any]) -> list[str]:
    """Sentences at the top of both pages."""
    pairing = "by case_id (bot against bot)" if c["baseline_side"].bot else "by (bot, case_id)"
    lines = [f"Candidate `{c['candidate']}` against baseline `{c['baseline']}`, paired "
             f"{pairing}; candidate run date {c['run_date']}."]
    paired = ", ".join(f"{b} {n}" for b, n in c["paired"].items()) or "none"
    lines.append(f"Paired cases: {paired}.")
    unpaired = []
    for bot, counts in sorted(c["unpaired"].items()):
        parts = [f"{n} {UNPAIRED_TITLES[k]}" for k, n in counts.items() if n]
        if parts:
            unpaired.append(f"{bot}: {', '.join(parts)}")
    lines.append("Not paired: " + ("; ".join(unpaired) if unpaired else "none") + ".")
    lines.append(f"Minimum practical difference: {c.get('min_difference', MIN_DIFFERENCE):g} "
                 "(per-case changes up to it are ties).")
    nc = c["not_compared"]
    for side, names in nc.items():
        if names:
            lines.append(f"Metrics {side.replace('_', ' ')} (not compared): {', '.join(names)}.")
    return lines + [f"Note: {note}." for note in c.get("notes", ())]


# ------------------------------------------------------------------ markdown

def render_compare_md(c: Mapping[str, Any]) -> str:
    lines = [f"# Comparison: `{c['candidate']}` vs `{c['baseline']}`", ""]
    lines += [md_cell(x, 2000) for x in headline(c)] + [""]
    if c.get("gate"):
        lines += ["## Gate", ""]
        lines += [f"- **{g['status']}** {md_cell(g['rule'], 300)}: "
                  f"{md_cell(g['finding'], 500)}" for g in c["gate"]] + [""]
    if len(c["bots"]) > FEW_BOTS:
        lines += ["## Bots at a glance", "", *md_table(BOTS_HEADERS, bots_at_a_glance(c),
                                                       right=3)]
    lines += ["## Changes, all suites", ""]
    for bot in c["bots"]:
        rows, missing = _compared(_rows(c, bot))
        lines += [f"### {bot}", ""] + md_table(CHANGE_HEADERS, map(change_cells, rows))
        lines += [missing, ""] if missing else []
    lines += ["## Verdict transitions (rows: baseline, columns: candidate)", ""]
    for bot in c["bots"]:
        passes = [r for r in _rows(c, bot) if r["metric"] == PASS_RATE]
        if passes:
            lines += [f"### {bot}", ""] + md_table(["", *VERDICTS],
                                                    transition_grid(passes[0]), right=4)
    lines += ["## Most regressed cases", ""]
    for bot in c["bots"]:
        lines += [f"### {bot}", ""] + (md_table(
            ["case", "suite", "verdict", "largest drops", "baseline answer", "candidate answer",
             "baseline reason", "candidate reason"], _regressed_cells(c, bot))
            if c["regressed"].get(bot) else ["No case regressed.", ""])
    lines += ["## Cases in only one run", ""]
    lines += [f"- {md_cell(line, 10_000)}" for line in unpaired_lines(c)] + [""]
    significant = [r for r in c["rows"] if r["suite"] != "*" and r.get("significant")]
    lines += ["## Per suite: significant changes", ""]
    lines += (md_table(["bot", "suite", *CHANGE_HEADERS],
                        ([r["bot"], r["suite"], *change_cells(r)] for r in significant))
              if significant else ["None.", ""])
    lines += ["## Method", "", METHOD, ""]
    return "\n".join(lines)


ANSWER_CHARS = 1000  # an answer can be megabytes; the page shows its start


def _regressed_cells(c: Mapping[str, Any], bot: str) -> list[list[Any]]:
    out = []
    for case in c["regressed"].get(bot, []):
        b, a = case["baseline"], case["candidate"]
        out.append([case["case_id"], case["suite"] or "–",
                    f"{b.get('verdict', '–')} → {a.get('verdict', '–')}",
                    "; ".join(case["metric_drops"]) or "–",
                    clip(b.get("answer") or b.get("error"), ANSWER_CHARS),
                    clip(a.get("answer") or a.get("error"), ANSWER_CHARS),
                    clip(b.get("reason"), ANSWER_CHARS), clip(a.get("reason"), ANSWER_CHARS)])
    return out


def unpaired_lines(c: Mapping[str, Any]) -> list[str]:
    """One line per bot and kind of unpaired case ids, then where all of them are."""
    listed = c.get("unpaired_listed") or {}
    if not listed:
        return ["Every case is paired."]
    lines = []
    for bot, kinds in sorted(listed.items()):
        for kind, ids in kinds.items():
            if ids:
                total = c["unpaired"].get(bot, {}).get(kind, len(ids))
                more = f" (first {len(ids)} of {total})" if total > len(ids) else ""
                lines.append(f"{bot}, {UNPAIRED_TITLES[kind]}{more}: {', '.join(ids)}")
    if c.get("unpaired_csv"):
        lines.append(f"all of them: {os.path.basename(c['unpaired_csv'])}")
    return lines


# ------------------------------------------------------------------ html

def forest_rows(c: Mapping[str, Any]) -> list[dict]:
    """Forest plot points: metrics on a [0, 1] scale and the pass rate, all suites."""
    return [{"bot": r["bot"], "metric": _metric_label(r), "delta": r["delta"],
             "ci_low": r["ci_low"], "ci_high": r["ci_high"], "change": change(r)}
            for r in c["rows"] if r["suite"] == "*" and c["unit"].get(r["metric"])
            and r.get("delta") is not None and r.get("ci_low") is not None]


def _folded(summary: str, body: Any) -> Raw:
    return Raw(f"<details><summary>{summary}</summary>{esc(body)}</details>")


def _changes_html(c: Mapping[str, Any], many: bool) -> list[Any]:
    """The forest plot, each bot's metrics, its verdict transitions and its most
    regressed cases; with many bots each folded under a line that says it."""
    parts: list[Any] = []
    points = forest_rows(c)
    parts.append(tag("h2", "Changes, all suites"))
    if points:
        # no wider than the largest possible move of a plotted metric (1)
        floor = min(max(10 * c.get("min_difference", MIN_DIFFERENCE), 0.01), 1.0)
        forest = figure(charts.render(charts.forest(points, floor), "forest plot of deltas"),
                        "Candidate − baseline with its 95% bootstrap interval (metrics "
                        "scored in [0, 1] and the pass rate); green: significantly better, "
                        "red: significantly worse (Holm-adjusted p < 0.05); ↓ lower is "
                        "better.")
        parts.append(_folded(f"Forest plot of the {len(c['bots'])} bots", forest)
                     if many else forest)
    for bot in c["bots"]:
        rows, missing = _compared(_rows(c, bot))
        changes = table(CHANGE_HEADERS, map(change_cells, rows), numeric=range(1, 9))
        if missing:
            changes = Raw(esc(changes) + esc(tag("p", missing, "muted small")))
        if many:
            worse = sum(change(r) == "worse" for r in rows)
            better = sum(change(r) == "better" for r in rows)
            parts.append(_folded(f"{tag('b', bot)}: {worse} significantly worse, {better} "
                                 "better", changes))
        else:
            parts += [tag("h3", bot), changes]
    parts.append(tag("h2", "Verdict transitions (rows: baseline, columns: candidate)"))
    for bot in c["bots"]:
        passes = [r for r in _rows(c, bot) if r["metric"] == PASS_RATE]
        if passes:
            grid = table(["", *VERDICTS], transition_grid(passes[0]), numeric=range(1, 5))
            parts += ([_folded(tag("b", bot), grid)] if many else [tag("h3", bot), grid])
    parts.append(tag("h2", "Most regressed cases"))
    for bot in c["bots"]:
        cases = c["regressed"].get(bot)
        shown = (table(["case", "suite", "verdict", "largest drops", "baseline answer",
                        "candidate answer", "baseline reason", "candidate reason"],
                       _regressed_cells(c, bot), text=range(3, 8), stack=True)
                 if cases else tag("p", "No case regressed.", "muted"))
        if not many:
            parts += [tag("h3", bot), shown]
        elif cases:
            parts.append(_folded(f"{tag('b', bot)}: {len(cases)} regressed", shown))
        else:
            parts.append(tag("p", Raw(f"{tag('b', bot)}: no case regressed."), "muted"))
    return parts


def render_compare_html(c: Mapping[str, Any]) -> str:
    parts: list[Any] = [tag("h1", f"{c['candidate']} vs {c['baseline']}")]
    parts += [tag("p", isolated(line.replace("`", ""), c["bots"]), "muted")
              for line in headline(c)]
    if c.get("gate"):
        failed = any(g["failed"] for g in c["gate"])
        warned = sum(g["status"] == "WARN" for g in c["gate"])
        outcome = "FAILED" if failed else "passed" + (f", {warned} with a warning" * bool(warned))
        parts.append(Raw(f'<h2>Gate <span class="badge {"fail" if failed else "pass"}">'
                         f'{outcome}</span></h2>'))
        parts.append(table(["", "rule", "finding"],
                           [[g["status"], g["rule"], g["finding"]] for g in c["gate"]]))
    many = len(c["bots"]) > FEW_BOTS
    if many:
        parts += [tag("h2", "Bots at a glance"),
                  table(BOTS_HEADERS, bots_at_a_glance(c), numeric=(1, 2, 3), names=True),
                  tag("p", BOTS_NOTE, "muted small")]
    parts += _changes_html(c, many)
    parts.append(tag("h2", "Cases in only one run"))
    parts += [tag("p", line) for line in unpaired_lines(c)]
    parts.append(tag("h2", "Per suite"))
    for bot in c["bots"]:
        suites, counts = [], [0, 0]
        for suite in _suites(c, bot):
            rows = _rows(c, bot, suite)
            worse = sum(change(r) == "worse" for r in rows)
            better = sum(change(r) == "better" for r in rows)
            counts = [counts[0] + worse, counts[1] + better]
            suites.append(_folded(f"{tag('b', bot)} · suite {tag('b', suite)}: {worse} "
                                  f"significantly worse, {better} better",
                                  table(CHANGE_HEADERS, map(change_cells, rows),
                                        numeric=range(1, 9))))
        # many bots: a line per bot, its suites inside (25 bots × 5 suites were 125 lines)
        n = counted(len(suites), "suite")
        parts += ([_folded(f"{tag('b', bot)}: {n}, {counts[0]} significantly worse, "
                           f"{counts[1]} better", Raw("".join(suites)))]
                  if len(c["bots"]) > FEW_BOTS and suites else suites)
    parts += [tag("h2", "Method"), tag("p", METHOD, "small")]
    return page(f"{c['candidate']} vs {c['baseline']}", parts)
