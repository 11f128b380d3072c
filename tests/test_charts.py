"""The report's chart specs, written as plain dicts (altair's import and
validation cost every run about half a second), equal what altair's
`to_dict()` gives for the same charts: the reference builders below are
charts.py as it was with altair. Same JSON text, so the same SVG."""
from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

import pytest

from transforms.publish import chart_engine, charts
from transforms.publish.charts import CHANGE_COLOURS, VERDICT_COLOURS, VERDICTS, _FONT

alt = pytest.importorskip("altair")
ROW_HEADER = alt.Header(labelAngle=0, labelOrient="top", labelAnchor="start", labelAlign="left",
                        labelFontWeight="bold")


def _config(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    return chart.configure(font=_FONT).configure_view(stroke="#d0d7de").configure_axis(
        labelExpr=charts.LABEL)


def verdict_bars(verdicts: Sequence[Mapping[str, Any]]) -> alt.Chart:
    """Stacked PASS/WARN/FAIL/ERROR counts per bot (rows: bot, verdict, n)."""
    return alt.Chart(alt.Data(values=list(verdicts))).mark_bar().encode(
        x=alt.X("n:Q", title="cases", stack="zero", axis=alt.Axis(format=",d", tickMinStep=1)),
        y=alt.Y("bot:N", title=None),
        color=alt.Color("verdict:N", scale=alt.Scale(domain=list(VERDICTS),
                                                      range=list(VERDICT_COLOURS)),
                        legend=alt.Legend(orient="bottom", title=None)),
        order=alt.Order("order:Q"),
    ).transform_calculate(order=f"indexof({list(VERDICTS)!r}, datum.verdict)").properties(
        width=640, height=alt.Step(26))


def histograms(bins: Sequence[Mapping[str, Any]]) -> alt.FacetChart:
    """Share of a bot's values per 0.05-wide bin, one panel per metric
    (rows: metric, bot, start, share)."""
    return alt.Chart(alt.Data(values=list(bins))).mark_line(
        interpolate="step-after", strokeWidth=1.6).encode(
        x=alt.X("start:Q", title=None, scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("share:Q", title="share", axis=alt.Axis(format="%")),
        color=alt.Color("bot:N", legend=alt.Legend(orient="bottom", labelExpr=charts.LABEL)),
    ).properties(width=170, height=80).facet(
        facet=alt.Facet("metric:N", title=None), columns=4).resolve_scale(
        y="independent").resolve_axis(x="independent")


def heatmap(cells: Sequence[Mapping[str, Any]]) -> alt.FacetChart:
    """Mean per suite × metric, coloured by goodness (mean, or 1 - mean for
    lower-is-better metrics), one panel per bot (rows: bot, suite, metric, mean, good)."""
    base = alt.Chart().encode(x=alt.X("metric:N", title=None, axis=alt.Axis(labelAngle=-40)),
                              y=alt.Y("suite:N", title=None))
    rect = base.mark_rect().encode(color=alt.Color(
        "good:Q", scale=alt.Scale(domain=[0, 1], scheme="redyellowgreen"),
        legend=alt.Legend(title="goodness", orient="right")))
    text = base.mark_text(fontSize=9).encode(text=alt.Text("mean:Q", format=".2f"))
    return alt.layer(rect, text, data=alt.Data(values=list(cells))).properties(
        width=alt.Step(34), height=alt.Step(20)).facet(
        row=alt.Row("bot:N", title=None, header=ROW_HEADER))


def trends(points: Sequence[Mapping[str, Any]]) -> alt.FacetChart:
    """Mean and 95% interval per run, one panel per headline metric
    (rows: run, metric, bot, mean, ci_low, ci_high)."""
    order = sorted({p["run"] for p in points})
    x = alt.X("run:O", title=None, sort=order, axis=alt.Axis(labelAngle=-40, labelLimit=160))
    line = alt.Chart().mark_line(point=True).encode(
        x=x, y=alt.Y("mean:Q", title=None, scale=alt.Scale(zero=False)),
        color=alt.Color("bot:N", legend=alt.Legend(orient="bottom", labelExpr=charts.LABEL)))
    bars = alt.Chart().mark_rule(opacity=0.6).encode(
        x=x, y="ci_low:Q", y2="ci_high:Q", color="bot:N")
    return alt.layer(bars, line, data=alt.Data(values=list(points))).properties(
        width=260, height=140).facet(facet=alt.Facet("metric:N", title=None),
                                     columns=3).resolve_scale(y="independent").resolve_axis(
        x="independent")


def forest(deltas: Sequence[Mapping[str, Any]]) -> alt.FacetChart:
    """Candidate - baseline per metric with its 95% bootstrap interval, one
    panel per bot (rows: bot, metric, delta, ci_low, ci_high, change)."""
    colour = alt.Color("change:N", scale=alt.Scale(domain=list(CHANGE_COLOURS),
                                                    range=list(CHANGE_COLOURS.values())),
                       legend=alt.Legend(orient="bottom", title=None))
    y = alt.Y("metric:N", title=None, sort=None)
    half = charts.forest_half_width(deltas, 0.01)
    zero = alt.Chart().mark_rule(color="#57606a", strokeDash=[4, 3]).encode(x="zero:Q")
    rules = alt.Chart().mark_rule(strokeWidth=2).encode(
        y=y, x=alt.X("ci_low:Q", title="candidate − baseline (95% interval)",
                     scale=alt.Scale(domain=[-half, half])), x2="ci_high:Q",
        color=colour)
    points = alt.Chart().mark_point(filled=True, size=60).encode(y=y, x="delta:Q", color=colour)
    return alt.layer(zero, rules, points, data=alt.Data(values=list(deltas))).transform_calculate(
        zero="0").properties(width=560, height=alt.Step(18)).facet(
        row=alt.Row("bot:N", title=None, header=ROW_HEADER))


ROWS = {
    "verdict_bars": [{"bot": "a", "verdict": "PASS", "n": 3},
                     {"bot": "b", "verdict": "FAIL", "n": 0}],
    "histograms": [{"metric": "bleu", "bot": "a", "start": 0.0, "share": 0.5},
                   {"metric": "rouge1", "bot": "b", "start": 0.05, "share": 0.25}],
    "heatmap": [{"bot": "a", "suite": "s", "metric": "hallucination ↓", "mean": 0.5,
                 "good": 0.5}],
    "trends": [{"run": "2024-01-02", "metric": "bleu", "bot": "a", "mean": 0.5, "ci_low": None,
                "ci_high": 0.6, "run_id": "r2"},
               {"run": "2024-01-01", "metric": "bleu", "bot": "a", "mean": 0.4, "ci_low": 0.3,
                "ci_high": 0.5, "run_id": "r1"}],
    "forest": [{"bot": "b", "metric": "m", "delta": 0.1, "ci_low": 0.0, "ci_high": 0.2,
                "change": "better"}],
}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_spec_is_the_json_altair_writes(name):
    want = _config(globals()[name](ROWS[name])).to_dict()
    assert json.dumps(getattr(charts, name)(ROWS[name])) == json.dumps(want)


LONG_BOTS = ["customer_support_assistant_v2_with_retrieval_augmented_generatio", "recorded",
             "مساعد_الدعم_الفني_العربي", "Ünïcödé-bøt-ñame_ÆØÅ"]


def _row_titles(svg: str) -> dict[str, str]:
    """Each facet name drawn in the SVG -> the transform of its text."""
    return dict(re.findall(r"aria-label=\"Title text '([^']*)'\"[^<]*<text[^>]*?"
                           r"transform=\"([^\"]*)\"", svg))


@pytest.mark.parametrize("name", ["heatmap", "forest"])
def test_row_facet_names_are_written_across_above_their_panels(name):
    """A heat map of one suite is 20 px tall per bot and a forest plot of one metric
    18 px; their panels' names (a bot, or 'a vs b') used to be written up the side,
    centred on the panel and far longer than it, so the names were drawn over each
    other and no panel could be told from the next (seen with long bot names)."""
    if name == "heatmap":
        rows = [{"bot": b, "suite": "billing", "metric": m, "mean": 0.5, "good": 0.5}
                for b in LONG_BOTS for m in ("bleu", "hallucination ↓")]
    else:
        rows = [{"bot": f"{b} vs {LONG_BOTS[0]}", "metric": "pass_rate", "delta": 0.1,
                 "ci_low": 0.0, "ci_high": 0.2, "change": "better"} for b in LONG_BOTS[1:]]
    titles = _row_titles(chart_engine.to_svg(getattr(charts, name)(rows)))
    assert set(titles) == {r["bot"] for r in rows}
    assert not [t for t in titles.values() if "rotate" in t], titles


def test_verdict_counts_are_whole_cases_on_the_axis():
    """A run of 6 cases: the verdict bars' axis read 0.0, 0.5, 1.0, ... 6.0
    cases (report.html of a small run), as if half a case could pass. Its
    ticks are whole numbers now, a large run's with thousands separators."""
    def ticks(rows):
        svg = chart_engine.to_svg(charts.verdict_bars(rows))
        axis = svg[svg.index("X-axis"):svg.index(">cases<")]
        return re.findall(r"<text[^>]*>([^<]*)</text>", axis)
    small = ticks([{"bot": "recorded", "verdict": "PASS", "n": 2},
                   {"bot": "recorded", "verdict": "WARN", "n": 4},
                   {"bot": "down", "verdict": "ERROR", "n": 6}])
    assert small and all(t.isdigit() for t in small), small
    assert small[0] == "0" and small[-1] == "6", small
    large = ticks([{"bot": "a", "verdict": "PASS", "n": 100_000}])
    assert large[-1] == "100,000" and all(t.replace(",", "").isdigit() for t in large), large


def _lines_of_bots(name: str, n: int) -> tuple[list[str], str]:
    """The bots bot_00 ... and the SVG of a chart (histograms or trends) with a
    line each."""
    bots = [f"bot_{i:02d}" for i in range(n)]
    if name == "histograms":
        rows = [{"metric": "bleu", "bot": b, "start": s / 20, "share": (i + s) % 7 / 10}
                for i, b in enumerate(bots) for s in range(3)]
    else:
        rows = [{"run": f"2026-01-0{s + 1}", "metric": "bleu", "bot": b, "mean": i / (2 * n),
                 "ci_low": None, "ci_high": None, "run_id": f"r{s}"}
                for i, b in enumerate(bots) for s in range(2)]
    return bots, chart_engine.to_svg(getattr(charts, name)(rows))


@pytest.mark.parametrize("name", ["histograms", "trends"])
def test_each_of_twelve_bots_has_its_own_colour(name):
    """Vega's default palette has ten colours: in a 12-bot report the eleventh and
    twelfth bots' lines were drawn in the first two's colours, and the legend of the
    distributions and the trends named two bots per colour."""
    bots, svg = _lines_of_bots(name, 12)
    colour = dict(re.findall(r'aria-label="[^"]*bot: (bot_\d\d)"[^>]*?aria-roledescription='
                             r'"line mark"[^>]*?stroke="(#[0-9a-f]{6})"', svg))
    assert sorted(colour) == bots, colour
    assert len(set(colour.values())) == 12, colour


@pytest.mark.parametrize("name", ["histograms", "trends"])
def test_each_of_twenty_five_bots_is_drawn_its_own_way(name):
    """tableau20 has 20 colours: in a 25-bot report the 21st to 25th bots' lines were
    drawn as the first five's, the legend naming two bots per line. Beyond 20 bots
    each round of 20 gets its own dash pattern: no two bots share colour and dash."""
    bots, svg = _lines_of_bots(name, 25)
    drawn = {}
    for bot, attrs in re.findall(r'aria-label="[^"]*bot: (bot_\d\d)"([^>]*?'
                                 r'aria-roledescription="line mark"[^>]*)>', svg):
        dash = re.search(r'stroke-dasharray="([^"]*)"', attrs)
        drawn[bot] = (re.search(r'stroke="(#[0-9a-f]{6})"', attrs).group(1),
                      dash.group(1) if dash else "solid")
    assert sorted(drawn) == bots, drawn
    assert len(set(drawn.values())) == 25, drawn
    legends = re.findall(r"legend titled 'bot' for ([^\"]*) with 25 values", svg)
    assert len(legends) == 1 and "stroke color" in legends[0] and "strokeDash" in legends[0], \
        legends  # one legend: each bot its colour and dash
    width = float(re.search(r'<svg[^>]* width="([\d.]+)"', svg).group(1))
    assert width < 1200, width  # the legend in rows, not one row 1,540 px wide


def _labels(svg: str) -> list[str]:
    """Every text drawn in an SVG."""
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_bots_alike_at_their_start_are_told_apart_in_every_chart():
    """Two bots of 64 characters that differ at their end were drawn alike in
    report.html: an axis or legend label is cut at its right end (180 / 160
    px), so the verdict bars, the distributions' and trends' legends and the
    head to head's legend read 'customer_support_assistant_...' twice. A long
    label now keeps its start and its end, with '…' in the middle."""
    a, b = "customer_support_assistant_v2_with_retrieval_augmented_generati", \
        "customer_support_assistant_v2_with_retrieval_augmented_generatb"
    svgs = {
        "verdict_bars": charts.verdict_bars([{"bot": bot, "verdict": "PASS", "n": 3}
                                             for bot in (a, b)]),
        "histograms": charts.histograms([{"metric": "bleu", "bot": bot, "start": 0.0,
                                          "share": 0.5} for bot in (a, b)]),
        "trends": charts.trends([{"run": "2026-01-01", "metric": "bleu", "bot": bot,
                                  "mean": 0.5, "ci_low": None, "ci_high": None,
                                  "run_id": "r1"} for bot in (a, b)]),
        "forest": charts.forest([{"bot": f"{b} − {a}", "metric": "exact_match", "delta": 0.0,
                                  "ci_low": 0.0, "ci_high": 0.0, "change": "better"}],
                                legend_labels={"better": f"{b} better", "worse": f"{a} better"}),
        "metric axis": charts.forest([{"bot": "x", "metric": m, "delta": 0.0, "ci_low": 0.0,
                                       "ci_high": 0.0, "change": "better"}
                                      for m in (a + "_one", a + "_two")]),
    }
    want = {"verdict_bars": {"i", "b"}, "histograms": {"i", "b"}, "trends": {"i", "b"},
            "forest": {"b better", "i better"}, "metric axis": {"one", "two"}}
    for name, spec in svgs.items():
        cut = [t for t in _labels(chart_engine.to_svg(spec)) if "…" in t]
        assert {next(e for e in want[name] if t.endswith(e)) for t in cut
                if any(t.endswith(e) for e in want[name])} == want[name], (name, cut)


@pytest.mark.parametrize("name,columns", [("histograms", 4), ("trends", 3)])
def test_each_panel_has_its_own_x_axis_and_no_axis_sits_under_an_empty_slot(name, columns):
    """A run of five metrics: the distributions (four panels a row) were drawn
    with one x axis per column at the bottom of the grid, so three axes stood
    under empty slots of the second row and the first row's other panels had
    none (report.html of a one-bot run with bleu, exact_match and rouge)."""
    metrics = [f"m{i}" for i in range(columns + 1)]
    if name == "histograms":
        rows = [{"metric": m, "bot": "a", "start": s / 20, "share": 0.5}
                for m in metrics for s in range(2)]
    else:
        rows = [{"run": f"2026-01-0{s + 1}", "metric": m, "bot": "a", "mean": 0.5,
                 "ci_low": None, "ci_high": None, "run_id": f"r{s}"}
                for m in metrics for s in range(2)]
    svg = chart_engine.to_svg(getattr(charts, name)(rows))
    assert len(re.findall(r'aria-label="X-axis', svg)) == len(metrics)


@pytest.mark.parametrize("runs,bots", [(4, 2), (4, 3), (30, 3)])
def test_bots_undecided_on_one_run_get_marks_of_their_own(runs, bots):
    """The dashed marks of bots whose pass rate no rule decided on the same run
    were drawn at one x, the last over the others (two bots down on one night
    looked like one): each now has its own x, in its bot's colour, within the
    run's slot (30 runs: 8.7 px each) and on a whole pixel's centre."""
    dates = [f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}" for i in range(runs)]
    names = [f"bot_{i}" for i in range(bots)]
    points = [{"run": d, "metric": "pass_rate", "bot": b, "mean": None if d == dates[-1] else 0.5,
               "ci_low": None, "ci_high": None, **({"undecided": "why"} if d == dates[-1] else {})}
              for d in dates for b in names]
    svg = chart_engine.to_svg(charts.trends(points))
    marks = re.findall(r'<line aria-label="run: ([\d-]+); bot: (\w+)"[^>]*translate\(([\d.]+),0\)'
                       r'[^>]*stroke="(#\w+)"[^>]*stroke-dasharray="4,3"', svg)
    assert {(d, b) for d, b, _, _ in marks} == {(dates[-1], b) for b in names}, marks
    xs = sorted(float(x) for _, _, x, _ in marks)
    assert len(set(xs)) == bots and len({c for *_, c in marks}) == bots, marks
    assert xs[-1] - xs[0] <= 0.8 * charts.TREND_WIDTH / runs, xs
    assert all(x % 1 == 0.5 for x in xs) or runs == 30, xs  # crisp where the tick is
