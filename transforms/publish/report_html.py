"""runs/<run_id>/report.html: the run for a person, with charts (verdicts per
bot, metric distributions, a suite × metric heat map, trends of the headline
metrics over the last run dates) and the worst cases. Self-contained: see
html.py and charts.py."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from apache_beam.io.filesystems import FileSystems

from schemas.tables import ALL_SUITES, PASS_RATE, VERDICT_METRIC, VERDICT_ORDER
from transforms.publish import charts
from transforms.publish import head_to_head as h2h
from transforms.publish import pass_rate
from transforms.publish.html import (Raw, breakable, esc, figure, isolated, num, page,
                                    table, tag)
from transforms.publish.paired import change, metric_label
from transforms.publish.report import (FEW_BOTS, NAME_CHARS, SPEND_BY_BOT, SPEND_BY_METRIC,
                                      SPEND_TITLE, SPLIT_NOTE, WORST_HEADERS, cap_lines, clip,
                                      clip_id, finished_text, left_out_note, lost_request_lines,
                                      metric_values, no_value_note, ranked_means,
                                      sampled_cell, sampled_note, spend_tables,
                                      with_interval, worst_shown)
from transforms.publish.savings import CASCADE_TITLE, cascade_sentences
from transforms.publish.trends import TREND_DATES, load_history, undecided_nights
from transforms.score.scoring import UNSCALED
from transforms.text.wording import counted

INTERVALS_NOTE = ("Means and pass rates carry 95% confidence intervals: Student's t from "
                  "count, mean and spread; Wilson's score interval for a pass rate or a metric "
                  "whose values are all 0 or 1.")


def on_unit_scale(row: Mapping[str, Any]) -> bool:
    """A metric scored in [0, 1] (not a count or a time), every value in range."""
    return row["metric"] not in UNSCALED and row.get("hist") is not None


def heatmap_cells(summary: Iterable[Mapping[str, Any]]) -> list[dict]:
    """Per-suite means of the [0, 1] metrics and the pass rate, with goodness."""
    cells = []
    for r in summary:
        if r["suite"] == ALL_SUITES or r.get("mean") is None:
            continue
        if r["metric"] == VERDICT_METRIC:
            metric, good = PASS_RATE, r["mean"]
        elif on_unit_scale(r):
            hib = r.get("higher_is_better", True)
            metric = metric_label(r["metric"], hib)
            good = r["mean"] if hib is not False else 1 - r["mean"]
        else:
            continue
        cells.append({"bot": r["bot"], "suite": r["suite"], "metric": metric,
                      "mean": r["mean"], "good": good})
    return cells


# under the trends, when a night's pass rate is a gap
GAPS_NOTE = ("A gap in a pass_rate line, with a dashed vertical line in the bot's colour, is a "
             "run with no pass rate: no row was decided by a verdict rule, and 0 would read as "
             "every row failed. ")


def trend_points(history: Iterable[Mapping[str, Any]]) -> list[dict]:
    """Chart rows: a run's x label is its date, plus its id when a date has several runs."""
    history = list(history)
    per_date: dict[str, set[str]] = {}
    for p in history:
        per_date.setdefault(p["run_date"], set()).add(p["run_id"])
    out = []
    for p in history:
        run = p["run_date"] if len(per_date[p["run_date"]]) == 1 else \
            f"{p['run_date']} {p['run_id']}"
        out.append({**p, "run": run})
    return out


def _verdicts(overall: list[Mapping[str, Any]]) -> Raw:
    rows = [r for r in overall if r["metric"] == VERDICT_METRIC]
    bars = [{"bot": r["bot"], "verdict": v, "n": r[f"{v.lower()}_count"]}
            for r in rows for v in VERDICT_ORDER]
    chart = figure(charts.render(charts.verdict_bars(bars), "verdict counts per bot"),
                   "Verdicts per bot.")
    return Raw(chart + table(
        ["bot", "PASS", "WARN", "FAIL", "ERROR", "pass rate [95% CI]"],
        [[r["bot"], r["pass_count"], r["warn_count"], r["fail_count"], r["error_count"],
          with_interval(r)] for r in rows], numeric=range(1, 6), names=len(rows) > FEW_BOTS))


def _means(overall: list[Mapping[str, Any]]) -> Raw:
    """A column per bot up to FEW_BOTS; beyond, a row per bot ranked by pass
    rate, each mean's interval and count in its tooltip (12 bots' columns of
    means with intervals made a table 3,500 px wide, scrolled sideways)."""
    bots = sorted({r["bot"] for r in overall})
    if len(bots) > FEW_BOTS:
        ranked, labels = ranked_means(overall)
        return Raw(table(["bot", "pass rate", *labels],
                         [[b, num(rate), *map(_ranked_mean, cells)] for b, rate, cells in ranked],
                         numeric=range(1, len(labels) + 2), names=True)
                   + tag("p", "Bots ranked by pass rate (best first); each metric's mean "
                         "over the bot's rows with a value (point at a mean for its 95% "
                         "interval and count).", "muted small"))
    by = {(r["bot"], r["metric"]): r for r in overall}
    metrics = sorted({r["metric"] for r in overall if r["metric"] != VERDICT_METRIC})
    rows = []
    for m in metrics:
        first = next(by[(b, m)] for b in bots if (b, m) in by)
        cells = [metric_label(m, first.get("higher_is_better"))]
        for b in bots:
            r = by.get((b, m))
            cells.append(None if r is None else sampled_cell(r) if r.get("sampled") else
                         f"{with_interval(r)}  n={r['count']}, missing {r['missing']}")
        rows.append(cells)
    return table(["metric", *bots], rows, numeric=range(1, len(bots) + 1))


def _ranked_mean(row: Mapping[str, Any] | None) -> Raw | None:
    """A mean in the ranked table, its interval and count in the tooltip."""
    if row is None:
        return None
    missing = f" ({row['missing']} missing)" if row["missing"] else ""
    shown = f"{num(row['mean'])}{' sampled' if row.get('sampled') else missing}"
    title = (sampled_cell(row) if row.get("sampled") else
             f"{with_interval(row)}, n={row['count']}, missing {row['missing']}")
    return Raw(f'<span title="{esc(title)}">{esc(shown)}</span>')


def _metrics_cell(case: Mapping[str, Any]) -> Raw:
    """The metrics the verdict's reason names, the others folded away (twenty
    values made every worst case a screen tall)."""
    named, others = metric_values(case)
    shown = ", ".join(named or others[:2])
    rest = others if named else others[2:]
    if not rest:
        return Raw(esc(shown or None))
    return Raw(f"{esc(shown)}<details><summary>{len(rest)} more</summary>"
               f"{esc(', '.join(rest))}</details>")


def _case_id(case_id: str) -> Raw:
    """A case id cut to NAME_CHARS so that it stays told apart, whole in its tooltip."""
    shown = clip_id(case_id)
    return Raw(breakable(shown) if shown == case_id else
               f'<span title="{esc(case_id)}">{breakable(shown)}</span>')


def _worst(worst: Mapping[str, list[Mapping[str, Any]]]) -> Raw:
    """Each bot's worst cases; with many bots, each bot's first few, folded
    under a line that counts their verdicts (open one to read it)."""
    parts = []
    for bot in sorted(worst):
        shown, left_out = worst_shown(worst[bot], len(worst))
        rows = table(WORST_HEADERS,
                     [[_case_id(w["case_id"]), clip(w.get("suite"), NAME_CHARS),
                       w["verdict"], w["reason"],
                       w["question"], w.get("reference"), w["answer"] or None,
                       _metrics_cell(w)]
                      for w in shown],
                     text=range(3, 8), stack=True)
        if len(worst) <= FEW_BOTS:
            parts += [tag("h3", bot), rows]
            continue
        counts = ", ".join(f"{n} {v}" for v in VERDICT_ORDER
                           if (n := sum(w["verdict"] == v for w in worst[bot])))
        first, note = ((f" (the first {len(shown)} shown)",
                        tag("p", left_out_note(bot, left_out), "muted small"))
                       if left_out else ("", ""))
        # <bdi>: a right-to-left name does not pull the counts beside it into its run
        parts.append(Raw(f"<details><summary><strong><bdi>{esc(bot)}</bdi></strong> · "
                         f"{esc(counts or 'no case')}{first}</summary>{rows}{note}</details>"))
    return Raw("\n".join(parts))


def _head_to_head(pairs: Sequence[tuple[Sequence[str], Mapping[str, Any]]],
                  unit: set[str]) -> list[Any]:
    """Per pair of bots: the findings, a forest plot of the paired differences
    (metrics in [0, 1] and the pass rate), the metrics table and the suites.
    With many pairs, the matrix of the pass rates' differences first and the
    rest folded away (open it to read it)."""
    parts: list[Any] = [tag("h2", "Head to head")]
    points = [{"bot": h2h.pair_label(pair), "delta": r["delta"], "ci_low": r["ci_low"],
               "metric": metric_label(r["metric"], r["higher_is_better"]),
               "ci_high": r["ci_high"], "change": change(r)}
              for pair, stats in pairs for r in h2h.overall(stats)
              if (r["metric"] == PASS_RATE or r["metric"] in unit)
              and r.get("delta") is not None and r.get("ci_low") is not None]
    forest = [_forest(pairs, points)] if points else []
    sections = [part for pair, stats in pairs for part in _pair(pair, stats)]
    if len(pairs) <= h2h.FEW_PAIRS:
        return parts + forest + sections + [tag("p", h2h.METHOD, "muted small")]
    folded = [(f"Forest plot of the {len(pairs)} pairs", forest),
              (f"Each pair's findings, metrics and suites ({len(pairs)} pairs)", sections)]
    said = h2h.bot_findings(pairs)
    findings = Raw("<ul>" + "".join(
        f"<li><strong><bdi>{esc(bot)}</bdi></strong>: {esc(isolated(text, [b for b, _ in said]))}"
        "</li>" for bot, text in said) + "</ul>")
    return parts + [_grid(pairs), tag("p", h2h.grid_note(h2h.pass_rate_grid(pairs)[0]), "muted small"),
                    tag("p", h2h.BOT_FINDINGS_NOTE), findings] + [
        Raw(f"<details><summary>{esc(title)}</summary>{''.join(map(esc, body))}</details>")
        for title, body in folded if body] + [tag("p", h2h.METHOD, "muted small")]


def _pair(pair: Sequence[str], stats: Mapping[str, Any]) -> list[Any]:
    """One pair's title, findings, metrics table and suites."""
    a, b = pair
    parts: list[Any] = [tag("h3", isolated(f"{h2h.pair_label(pair)} ({stats['paired']} "
                                           "paired cases)", pair))]
    parts += [tag("p", isolated(line, pair)) for line in h2h.findings(pair, stats)]
    if not stats["paired"]:
        return parts
    parts.append(table(h2h.metric_headers(pair),
                       [h2h.metric_cells(r, pair) for r in h2h.compared(stats)],
                       numeric=range(1, 7)))
    suites = h2h.suite_lines(pair, stats)
    if suites:
        parts.append(Raw("<details><summary>Per suite</summary>" + table(
            ["suite", "cases", f"pass rate {b} − {a} [95% CI]", f"better for {b}",
             f"better for {a}"], suites, numeric=(1, 2)) + "</details>"))
    return parts


def _grid(pairs: Sequence[tuple[Sequence[str], Mapping[str, Any]]]) -> Raw:
    """Bots × bots: the row's pass rate − the column's, coloured where significant,
    its interval in the tooltip."""
    bots, cells = h2h.pass_rate_grid(pairs)

    def shown(row: str, col: str) -> Any:
        if (row, col) not in cells:
            return None
        text, side, title = cells[(row, col)]
        cls = f' class="{side}"' if side else ""
        return Raw(f'<span{cls} title="{esc(title)}">{esc(text)}</span>')
    rows, columns = h2h.grid_labels(bots)
    return table(["bot", *columns],
                 [[label, *(shown(r, c) for c in bots)] for label, r in zip(rows, bots)],
                 numeric=range(1, len(bots) + 1), names=True)


def _forest(pairs: Sequence[tuple[Sequence[str], Mapping[str, Any]]],
            points: list[dict]) -> Raw:
    """The pairs' forest plot, its axis, legend and caption naming the bots
    (`concise − app`, `concise better`); with several pairs each panel's title
    names its difference (`concise − app`) and the words say left and right of it."""
    if len(pairs) == 1:
        a, b = pairs[0][0]
        axis = caption = h2h.pair_label((a, b))
        green, red = b, a
    else:
        axis = "each panel's title: left bot − right bot"
        caption = "Each panel: the left bot of its title − the right one"
        green, red = "the left bot", "the right bot"
    labels = {"better": f"{green.removeprefix('the ')} better",
              "worse": f"{red.removeprefix('the ')} better",
              "no significant change": "no significant difference"}
    spec = charts.forest(points, x_title=f"{axis} (95% interval)", legend_labels=labels)
    return figure(charts.render(spec, "head to head of bot pairs"), isolated(
        f"{caption}, paired by case, with the 95% bootstrap interval; green: {green} is "
        f"significantly better, red: {red} (Holm-adjusted p < 0.05); ↓ lower is better.",
        [n for pair, _ in pairs for n in pair]))


def _per_suite(summary: list[Mapping[str, Any]], n_bots: int) -> list[Any]:
    """The heat map of the means per suite, one panel per bot; with many bots
    (12 bots × 5 suites: 2,000 px) a bots × suites table of pass rates instead,
    the heat map folded under it."""
    cells = heatmap_cells(summary)
    if not cells:
        return []
    heatmap = figure(charts.render(
        charts.heatmap(cells), "heat map of means per suite and metric"),
        "Mean per suite × metric (metrics scored in [0, 1], and the pass rate); colour: "
        "green is good (for ↓ metrics a low mean is green).")
    if n_bots <= FEW_BOTS:
        return [tag("h2", "Means per suite"), heatmap]
    rates = {(c["bot"], c["suite"]): c["mean"] for c in cells if c["metric"] == PASS_RATE}
    bots, suites = sorted({b for b, _ in rates}), sorted({s for _, s in rates})
    return [tag("h2", "Means per suite"), tag("p", "Pass rate per bot and suite:"),
            table(["bot", *(clip(s, NAME_CHARS) for s in suites)],
                  [[b, *(num(rates.get((b, s))) for s in suites)] for b in bots],
                  numeric=range(1, len(suites) + 1), names=True),
            Raw(f"<details><summary>Heat map of every metric's mean per suite, one panel per "
                f"bot ({n_bots} panels)</summary>{heatmap}</details>")]


def _cascade_and_spend(manifest: Mapping[str, Any]) -> list[Any]:
    """What the cascade saved and what the remote calls cost, per metric and per
    bot: the same figures and sentences as report.md's sections."""
    parts: list[Any] = []
    if manifest.get("cascade"):
        parts += [tag("h2", CASCADE_TITLE),
                  *[tag("p", s) for s in cascade_sentences(manifest["cascade"], str)]]
    tables = spend_tables(manifest.get("usage") or {})
    if tables is None:
        return parts
    intro, by_metric, by_bot = tables
    parts += [tag("h2", SPEND_TITLE), tag("p", intro)]
    if by_metric:
        parts.append(table(SPEND_BY_METRIC, by_metric, numeric=(1, 2, 3, 4)))
        if any(row[0].endswith(" *") for row in by_metric):
            parts.append(tag("p", SPLIT_NOTE, "muted small"))
    return parts + [table(SPEND_BY_BOT, by_bot, numeric=(1, 2, 3))]


def render_html_report(manifest: Mapping[str, Any], summary: Iterable[Mapping[str, Any]],
                       worst: Mapping[str, list[Mapping[str, Any]]],
                       history: Iterable[Mapping[str, Any]],
                       pairs: Sequence[tuple[Sequence[str], Mapping[str, Any]]] = ()) -> str:
    summary = list(summary)
    pairs = pass_rate.shown_head_to_head(pairs, manifest, summary)
    summary = pass_rate.shown(summary, manifest)
    overall = [r for r in summary if r["suite"] == ALL_SUITES]
    c = manifest["counts"]
    parts: list[Any] = [
        tag("h1", f"evalbeam run {manifest['run_id']}"),
        tag("p", f"{manifest['run_date']} · finished {finished_text(manifest)} · "
                 f"input {manifest['input']} · {counted(c['input_rows'], 'row')}, "
                 f"{c['valid_cases']:,} valid, {c['invalid_rows']:,} invalid, "
                 f"{counted(c['duplicate_case_ids'], 'duplicate case id')} · bots: "
                 f"{', '.join(manifest['bots'])} · bot errors: {c['bot_errors']}", "muted"),
        Raw(f"<p>Counts reconcile: <span class=\"badge "
            f"{'pass' if manifest['reconciliation']['ok'] else 'fail'}\">"
            f"{'yes' if manifest['reconciliation']['ok'] else 'NO'}</span></p>"),
        *[tag("p", f"Note: {n}", "muted") for n in manifest.get("notes", [])],
        *[tag("p", line) for line in cap_lines(manifest.get("spend_caps") or {}, False)],
        *[tag("p", line) for line in lost_request_lines(manifest.get("requests"))],
        tag("h2", "Verdicts"), _verdicts(overall),
        *[tag("p", n, "muted small") for n in [pass_rate.note(overall)] if n],
        tag("h2", "Metric means [95% CI]"), _means(overall),
        tag("p", "↓ lower is better. " + INTERVALS_NOTE, "muted small"),
    ]
    if note := no_value_note(overall):
        parts.append(tag("p", note, "muted small"))
    if any(r.get("sampled") for r in overall):
        parts.append(tag("p", sampled_note(), "muted small"))
    if pairs:
        parts += _head_to_head(pairs, {r["metric"] for r in overall if on_unit_scale(r)})
    parts += _per_suite(summary, len({r["bot"] for r in overall}))
    bins = charts.histogram_rows(r for r in summary if on_unit_scale(r))
    if bins:
        parts += [tag("h2", "Distributions"), figure(charts.render(
            charts.histograms(bins), "histograms of metric values per bot"),
            "Share of each bot's values per 0.05-wide bin (metrics scored in [0, 1]).")]
    points = trend_points(history)
    runs = {p["run_id"] for p in points}
    parts.append(tag("h2", f"Trends (last {TREND_DATES} run dates in this folder)"))
    if len(runs) > 1:
        parts.append(figure(charts.render(charts.trends(points), "trend lines of headline "
                                                                  "metrics"),
                            "Mean per run with its 95% interval, all suites."))
        if gaps := undecided_nights(points):
            parts.append(tag("p", GAPS_NOTE + pass_rate.reasons(
                (f"{bot} on {run}", why) for run, bot, why in gaps) + ".", "muted small"))
    else:
        parts.append(tag("p", "Only this run so far: the trends appear once the folder holds "
                              "runs of other dates.", "muted"))
    parts += _cascade_and_spend(manifest)
    parts += [tag("h2", "Worst cases"), _worst(worst),
              tag("p", "Tables: " + ", ".join(f"{t}/ ({counted(n, 'row')})"
                                              for t, n in manifest["tables"].items()),
                  "muted small")]
    return page(f"evalbeam run {manifest['run_id']}", parts)


def write_html_report(path: str, manifest: Mapping[str, Any],
                      summary: list[Mapping[str, Any]],
                      worst: Mapping[str, list[Mapping[str, Any]]],
                      pairs: Sequence[tuple[Sequence[str], Mapping[str, Any]]] = ()) -> None:
    """The page (staged at `path`, installed as report.html on commit), with the
    trends of the folder's completed runs."""
    history = load_history(manifest["output"], manifest["run_id"], manifest["run_date"], summary,
                           manifest=manifest)
    with FileSystems.create(path) as fh:
        fh.write(render_html_report(manifest, summary, worst, history, pairs).encode())

