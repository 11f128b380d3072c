"""Charts of the HTML reports: Vega-Lite specs rendered to static SVG by
vl-convert (its own bundled engine: no browser, no JavaScript in the page,
nothing fetched when the page is viewed).

Each builder takes plain rows and returns a Vega-Lite spec (a dict);
`render` turns it into a data: URI for an <img>, so the SVG can never run
anything either. The specs are written as the dicts altair's `to_dict()`
gave for the same charts (same keys, same order; a test compares them with
altair's): importing altair and validating its specs cost a run about half a
second, for five fixed chart shapes.
"""
from __future__ import annotations

import base64
import json
from typing import Any, Iterable, Mapping, Sequence

from schemas.tables import VERDICT_ORDER as VERDICTS
from transforms.publish import chart_engine

VERDICT_COLOURS = ("#2da44e", "#d4a72c", "#cf222e", "#8c959f")
CHANGE_COLOURS = {"better": "#1a7f37", "worse": "#cf222e", "no significant change": "#8c959f"}
_FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
SCHEMA = "https://vega.github.io/schema/vega-lite/v6.4.1.json"  # what altair 6.3 declares
# A label longer than an axis or legend has room for (180 / 160 px) was cut at its
# end, so bots (or metrics) alike in their first ~28 characters were drawn alike
# ('customer_support_assistant_...' twice): a long one keeps its start and its end
ELIDE_AT = 26


def elide(expr: str) -> str:
    """A Vega expression: the text `expr` cut in its middle to ELIDE_AT characters."""
    return f"truncate({expr}, {ELIDE_AT}, 'center')"


LABEL = elide("datum.label")
_CONFIG = {"view": {"continuousWidth": 300, "continuousHeight": 300, "stroke": "#d0d7de"},
           "axis": {"labelExpr": LABEL}, "font": _FONT}

Spec = dict[str, Any]


def _top_level(data: Iterable[Mapping[str, Any]], body: Spec) -> Spec:
    """A whole spec: config and inline data first, $schema last (altair's order)."""
    return {"config": _CONFIG, "data": {"values": list(data)}, **body, "$schema": SCHEMA}


def _field(name: str, kind: str | None, **props: Any) -> Spec:
    """An encoding channel, its properties in alphabetical order (as altair writes them)."""
    channel = {"field": name, **props}
    if kind is not None:
        channel["type"] = kind
    return dict(sorted(channel.items()))


def _encoding(**channels: Spec) -> Spec:
    return dict(sorted(channels.items()))


# A row facet's name written across, above its panel: written up the side (Vega-Lite's
# default) it is centred on the panel and longer than it (a heat map of one suite is 20
# px tall; a bot name or a pair 'a vs b' 100-800 px), so the names of neighbouring
# panels were drawn over each other and no panel could be told from another.
ROW_HEADER = {"labelAlign": "left", "labelAnchor": "start", "labelAngle": 0,
              "labelFontWeight": "bold", "labelOrient": "top"}


def render(spec: Spec, description: str) -> tuple[str | None, str]:
    """(data URI of the SVG, alt text), or (None, why) when it cannot be drawn;
    a chart that fails must not cost the run its report."""
    try:
        svg = chart_engine.to_svg(spec)
    except chart_engine.ChartError as exc:  # said on the page instead
        return None, str(exc)[:300]
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode(), description


# an axis of counts: whole-number ticks (a 6-case run's axis read 0.0, 0.5, ... 6.0)
WHOLE = {"format": ",d", "tickMinStep": 1}


def verdict_bars(verdicts: Sequence[Mapping[str, Any]]) -> Spec:
    """Stacked PASS/WARN/FAIL/ERROR counts per bot (rows: bot, verdict, n)."""
    colour = _field("verdict", "nominal", legend={"orient": "bottom", "title": None},
                    scale={"domain": list(VERDICTS), "range": list(VERDICT_COLOURS)})
    return _top_level(verdicts, {
        "mark": {"type": "bar"},
        "encoding": _encoding(color=colour, order=_field("order", "quantitative"),
                              x=_field("n", "quantitative", axis=WHOLE, stack="zero",
                                       title="cases"),
                              y=_field("bot", "nominal", title=None)),
        "height": {"step": 26},
        "transform": [{"calculate": f"indexof({list(VERDICTS)!r}, datum.verdict)",
                       "as": "order"}],
        "width": 640})


# Vega's default palette has ten colours: the eleventh bot took the first one's (with
# 12 bots two pairs of bots were drawn alike in the distributions and the trends, and
# the legend named both); up to 20 bots get a colour each from tableau20
PALETTE = 10


# beyond tableau20's 20 colours the 21st bot took the first one's: from then on each
# round of 20 bots is drawn with its own dash pattern (solid, dashed, dotted, ...)
WIDE_PALETTE = 20
DASHES = ([1, 0], [6, 3], [2, 2], [8, 3, 2, 3])


def _bot_lines(rows: Sequence[Mapping[str, Any]], **props: Any) -> dict[str, Spec]:
    """The channels that tell a chart's bots apart: a colour each up to 20
    bots; beyond, the colours again with another dash pattern per round of 20
    (one legend, each bot its colour and dash)."""
    if "legend" in props:
        props["legend"] = dict(sorted({**props["legend"], "labelExpr": LABEL}.items()))
    bots = sorted({r["bot"] for r in rows})
    if len(bots) <= PALETTE:
        return {"color": _field("bot", "nominal", **props)}
    if len(bots) <= WIDE_PALETTE:
        return {"color": _field("bot", "nominal", **props, scale={"scheme": "tableau20"})}
    dashes = [DASHES[min(i // WIDE_PALETTE, len(DASHES) - 1)] for i in range(len(bots))]
    if "legend" in props:  # in rows of ten: on one row 25 names made the chart 1,540 px wide
        props["legend"] = {**props["legend"], "columns": 10}
    return {"color": _field("bot", "nominal", **props,
                            scale={"scheme": "tableau20", "domain": bots}),
            "strokeDash": _field("bot", "nominal", **props,
                                 scale={"domain": bots, "range": dashes})}


# panels in rows of a few: each its own x axis (a shared one is drawn once per column,
# at the bottom of the grid: under the empty slots of a last row that is not full)
PANELS = {"axis": {"x": "independent"}, "scale": {"y": "independent"}}


def histograms(bins: Sequence[Mapping[str, Any]]) -> Spec:
    """Share of a bot's values per 0.05-wide bin, one panel per metric
    (rows: metric, bot, start, share)."""
    return _top_level(bins, {
        "facet": _field("metric", "nominal", title=None),
        "spec": {"mark": {"type": "line", "interpolate": "step-after", "strokeWidth": 1.6},
                 "encoding": _encoding(
                     **_bot_lines(bins, legend={"orient": "bottom"}),
                     x=_field("start", "quantitative", scale={"domain": [0, 1]}, title=None),
                     y=_field("share", "quantitative", axis={"format": "%"}, title="share")),
                 "height": 80, "width": 170},
        "columns": 4, "resolve": PANELS})


def heatmap(cells: Sequence[Mapping[str, Any]]) -> Spec:
    """Mean per suite × metric, coloured by goodness (mean, or 1 - mean for
    lower-is-better metrics), one panel per bot (rows: bot, suite, metric, mean, good)."""
    x = _field("metric", "nominal", axis={"labelAngle": -40}, title=None)
    y = _field("suite", "nominal", title=None)
    colour = _field("good", "quantitative", legend={"orient": "right", "title": "goodness"},
                    scale={"domain": [0, 1], "scheme": "redyellowgreen"})
    return _top_level(cells, {
        "facet": {"row": _field("bot", "nominal", header=ROW_HEADER, title=None)},
        "spec": {"layer": [
            {"mark": {"type": "rect"}, "encoding": _encoding(color=colour, x=x, y=y)},
            {"mark": {"type": "text", "fontSize": 9},
             "encoding": _encoding(text=_field("mean", "quantitative", format=".2f"),
                                   x=x, y=y)}],
            "height": {"step": 20}, "width": {"step": 34}}})


# a trend panel's size; the dashed marks of bots undecided on one run stand this far
# apart (px), less when a run's slot is narrower (many runs, many such bots). An even
# number of px keeps each mark on a pixel's centre, as the run's tick is: 5 px apart
# (offsets of +-2.5) each mark was smeared over two pixels at 3/4 of its colour
TREND_WIDTH, TREND_HEIGHT = 260, 140
GAP_SPACING = 6


def gap_offsets(points: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, str], float]:
    """(metric, run, bot) -> the x offset (px) of each undecided point's dashed
    mark: the bots undecided on one run side by side around the run's tick, in
    bot order (drawn at one x, the last bot's mark hid the others': two bots
    down on one night looked like one)."""
    runs = {p["run"] for p in points}
    together: dict[tuple[str, str], list[str]] = {}
    for p in points:
        if p.get("undecided"):
            together.setdefault((p["metric"], p["run"]), []).append(p["bot"])
    out = {}
    for (metric, run), bots in together.items():
        bots = sorted(set(bots))
        # within 80% of the run's slot of the point scale (its step: width / runs)
        room = 0.8 * TREND_WIDTH / len(runs) / len(bots)
        spacing = max(2, min(GAP_SPACING, 2 * int(room / 2)))
        for i, bot in enumerate(bots):
            out[(metric, run, bot)] = (i - (len(bots) - 1) / 2) * spacing
    return out


def trends(points: Sequence[Mapping[str, Any]]) -> Spec:
    """Mean and 95% interval per run, one panel per headline metric
    (rows: run, metric, bot, mean, ci_low, ci_high; `undecided` on a pass rate
    no rule decided: no mean, a gap and a dashed line in the bot's colour,
    those of bots undecided on one run side by side: gap_offsets)."""
    x = _field("run", "ordinal", axis={"labelAngle": -40, "labelLimit": 160},
               sort=sorted({p["run"] for p in points}), title=None)
    layers = [
        {"mark": {"type": "rule", "opacity": 0.6},
         "encoding": _encoding(**_bot_lines(points), x=x,
                               y=_field("ci_low", "quantitative"),
                               y2=_field("ci_high", None))},
        {"mark": {"type": "line", "point": True},
         "encoding": _encoding(**_bot_lines(points, legend={"orient": "bottom"}),
                               x=x, y=_field("mean", "quantitative",
                                             scale={"zero": False}, title=None))}]
    if offsets := gap_offsets(points):
        # a run whose pass rate no rule decided has no mean: its line breaks there
        # (never a dip to 0), and a dashed line across the panel marks the run
        points = [{**p, "gap_offset": offsets[(p["metric"], p["run"], p["bot"])]}
                  if p.get("undecided") else p for p in points]
        # (the offset a mark property read per datum: an xOffset channel made the
        # layer's x a band scale of its own, off the other layers' runs)
        layers.append({"mark": {"type": "rule", "strokeDash": [4, 3], "strokeWidth": 1.5,
                                "xOffset": {"expr": "datum.gap_offset"}},
                       "encoding": _encoding(**_bot_lines(points), x=x),
                       "transform": [{"filter": "datum.undecided"}]})
    return _top_level(points, {
        "facet": _field("metric", "nominal", title=None),
        "spec": {"layer": layers, "height": TREND_HEIGHT, "width": TREND_WIDTH},
        "columns": 3, "resolve": PANELS})


def forest_half_width(deltas: Sequence[Mapping[str, Any]], floor: float) -> float:
    """Half the x axis of a forest plot: the largest |delta| or interval end,
    at least `floor`, so that float noise (±1e-9) is drawn as zero on a sane
    axis rather than blown up to fill it."""
    ends = [abs(d[k]) for d in deltas for k in ("delta", "ci_low", "ci_high")
            if d.get(k) is not None]
    return max([floor, *ends]) * 1.05


def forest(deltas: Sequence[Mapping[str, Any]], floor: float = 0.01,
           x_title: str = "candidate − baseline (95% interval)",
           legend_labels: Mapping[str, str] | None = None) -> Spec:
    """Candidate - baseline per metric with its 95% bootstrap interval, one
    panel per bot (rows: bot, metric, delta, ci_low, ci_high, change); the x
    axis is symmetric around 0 and at least ±floor wide. legend_labels: the
    legend's words for the changes (`better` -> `concise better`)."""
    half = forest_half_width(deltas, floor)
    legend = {"orient": "bottom", "title": None}
    if legend_labels:
        legend["labelExpr"] = elide("".join(f"datum.label === {json.dumps(change)} ? "
                                            f"{json.dumps(label)} : "
                                            for change, label in legend_labels.items())
                                    + "datum.label")
    colour = _field("change", "nominal", legend=legend,
                    scale={"domain": list(CHANGE_COLOURS),
                           "range": list(CHANGE_COLOURS.values())})
    y = _field("metric", "nominal", sort=None, title=None)
    return _top_level(deltas, {
        "facet": {"row": _field("bot", "nominal", header=ROW_HEADER, title=None)},
        "spec": {"layer": [
            {"mark": {"type": "rule", "color": "#57606a", "strokeDash": [4, 3]},
             "encoding": _encoding(x=_field("zero", "quantitative"))},
            {"mark": {"type": "rule", "strokeWidth": 2},
             "encoding": _encoding(
                 color=colour, y=y, x2=_field("ci_high", None),
                 x=_field("ci_low", "quantitative", scale={"domain": [-half, half]},
                          title=x_title))},
            {"mark": {"type": "point", "filled": True, "size": 60},
             "encoding": _encoding(color=colour, x=_field("delta", "quantitative"), y=y)}],
            "height": {"step": 18}, "transform": [{"calculate": "0", "as": "zero"}],
            "width": 560}})


def histogram_rows(summary: Iterable[Mapping[str, Any]]) -> list[dict]:
    """Step-line points from the summaries' `hist` (suite '*'); the last bin
    is repeated at 1.0 so that the step closes."""
    out = []
    for r in summary:
        hist = r.get("hist")
        if r["suite"] != "*" or not hist or not sum(hist):
            continue
        total, width = sum(hist), 1 / len(hist)
        for i, n in enumerate(list(hist) + [hist[-1]]):
            out.append({"metric": r["metric"], "bot": r["bot"], "start": round(i * width, 4),
                        "share": n / total})
    return out
