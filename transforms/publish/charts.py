"""Charts of the HTML reports: Vega-Lite specs built with altair, rendered
to static SVG by vl-convert (its own bundled engine: no browser, no
JavaScript in the page, nothing fetched when the page is viewed).

Each builder takes plain rows and returns an altair chart; `render` turns it
into a data: URI for an <img>, so the SVG can never run anything either.
altair is imported by the builders, not with this module: it costs a few
tenths of a second, which only a run that draws a chart should pay.
"""
from __future__ import annotations

import base64
import threading
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from schemas.tables import VERDICT_ORDER as VERDICTS

if TYPE_CHECKING:
    import altair as alt

VERDICT_COLOURS = ("#2da44e", "#d4a72c", "#cf222e", "#8c959f")
CHANGE_COLOURS = {"better": "#1a7f37", "worse": "#cf222e", "no significant change": "#8c959f"}
_FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"


def _config(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    return chart.configure(font=_FONT).configure_view(stroke="#d0d7de")


_WARM_UP_SPEC = {"config": {"font": _FONT}, "data": {"values": [{"x": 1}]}, "mark": "bar",
                 "encoding": {"x": {"field": "x", "type": "quantitative"}}}


def _render_warm_up_spec() -> None:
    try:
        import vl_convert
        vl_convert.vegalite_to_svg(_WARM_UP_SPEC)
    except Exception:  # noqa: BLE001 - the report's own render says what failed
        pass


def warm_up() -> threading.Thread:
    """Start vl-convert's engine in the background: its first chart costs about
    half a second (JavaScript engine, Vega, fonts) and later ones a few
    hundredths. vl-convert releases the GIL, so a run started at once has it
    ready by the time the report draws its charts."""
    thread = threading.Thread(target=_render_warm_up_spec, name="vl-convert-warm-up",
                              daemon=True)
    thread.start()
    return thread


def render(chart: alt.TopLevelMixin, description: str) -> tuple[str | None, str]:
    """(data URI of the SVG, alt text), or (None, why) when it cannot be drawn;
    a chart that fails must not cost the run its report."""
    try:
        import vl_convert
        svg = vl_convert.vegalite_to_svg(_config(chart).to_dict())
    except Exception as exc:  # noqa: BLE001 - said on the page instead
        return None, f"{type(exc).__name__}: {exc}"[:300]
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode(), description


def verdict_bars(verdicts: Sequence[Mapping[str, Any]]) -> alt.Chart:
    """Stacked PASS/WARN/FAIL/ERROR counts per bot (rows: bot, verdict, n)."""
    import altair as alt
    return alt.Chart(alt.Data(values=list(verdicts))).mark_bar().encode(
        x=alt.X("n:Q", title="cases", stack="zero"),
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
    import altair as alt
    return alt.Chart(alt.Data(values=list(bins))).mark_line(
        interpolate="step-after", strokeWidth=1.6).encode(
        x=alt.X("start:Q", title=None, scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("share:Q", title="share", axis=alt.Axis(format="%")),
        color=alt.Color("bot:N", legend=alt.Legend(orient="bottom")),
    ).properties(width=170, height=80).facet(
        facet=alt.Facet("metric:N", title=None), columns=4).resolve_scale(y="independent")


def heatmap(cells: Sequence[Mapping[str, Any]]) -> alt.FacetChart:
    """Mean per suite × metric, coloured by goodness (mean, or 1 - mean for
    lower-is-better metrics), one panel per bot (rows: bot, suite, metric, mean, good)."""
    import altair as alt
    base = alt.Chart().encode(x=alt.X("metric:N", title=None, axis=alt.Axis(labelAngle=-40)),
                              y=alt.Y("suite:N", title=None))
    rect = base.mark_rect().encode(color=alt.Color(
        "good:Q", scale=alt.Scale(domain=[0, 1], scheme="redyellowgreen"),
        legend=alt.Legend(title="goodness", orient="right")))
    text = base.mark_text(fontSize=9).encode(text=alt.Text("mean:Q", format=".2f"))
    return alt.layer(rect, text, data=alt.Data(values=list(cells))).properties(
        width=alt.Step(34), height=alt.Step(20)).facet(row=alt.Row("bot:N", title=None))


def trends(points: Sequence[Mapping[str, Any]]) -> alt.FacetChart:
    """Mean and 95% interval per run, one panel per headline metric
    (rows: run, metric, bot, mean, ci_low, ci_high)."""
    import altair as alt
    order = sorted({p["run"] for p in points})
    x = alt.X("run:O", title=None, sort=order, axis=alt.Axis(labelAngle=-40, labelLimit=160))
    line = alt.Chart().mark_line(point=True).encode(
        x=x, y=alt.Y("mean:Q", title=None, scale=alt.Scale(zero=False)),
        color=alt.Color("bot:N", legend=alt.Legend(orient="bottom")))
    bars = alt.Chart().mark_rule(opacity=0.6).encode(
        x=x, y="ci_low:Q", y2="ci_high:Q", color="bot:N")
    return alt.layer(bars, line, data=alt.Data(values=list(points))).properties(
        width=260, height=140).facet(facet=alt.Facet("metric:N", title=None),
                                     columns=3).resolve_scale(y="independent")


def forest(deltas: Sequence[Mapping[str, Any]]) -> alt.FacetChart:
    """Candidate - baseline per metric with its 95% bootstrap interval, one
    panel per bot (rows: bot, metric, delta, ci_low, ci_high, change)."""
    import altair as alt
    colour = alt.Color("change:N", scale=alt.Scale(domain=list(CHANGE_COLOURS),
                                                    range=list(CHANGE_COLOURS.values())),
                       legend=alt.Legend(orient="bottom", title=None))
    y = alt.Y("metric:N", title=None, sort=None)
    zero = alt.Chart().mark_rule(color="#57606a", strokeDash=[4, 3]).encode(x="zero:Q")
    rules = alt.Chart().mark_rule(strokeWidth=2).encode(
        y=y, x=alt.X("ci_low:Q", title="candidate − baseline (95% interval)"), x2="ci_high:Q",
        color=colour)
    points = alt.Chart().mark_point(filled=True, size=60).encode(y=y, x="delta:Q", color=colour)
    return alt.layer(zero, rules, points, data=alt.Data(values=list(deltas))).transform_calculate(
        zero="0").properties(width=560, height=alt.Step(18)).facet(
        row=alt.Row("bot:N", title=None))


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
