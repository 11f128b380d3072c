"""The report's chart engine in a child process: the same SVG as drawing in
this process, errors said, and a child that dies or garbles falls back to
drawing here instead of costing the report its charts."""
from __future__ import annotations

import os

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipeline.execute import runs_in_this_process
from transforms.publish import chart_engine, charts

BARS = charts.verdict_bars([{"bot": "a", "verdict": "PASS", "n": 3},
                            {"bot": "a", "verdict": "FAIL", "n": 1}])


@pytest.fixture(autouse=True)
def no_child():
    """Each test starts, and leaves, without a child."""
    yield
    with chart_engine._lock:
        if chart_engine._child is not None:
            chart_engine._child.kill()
            chart_engine._child = None


def in_process(spec) -> str:
    import vl_convert
    return vl_convert.vegalite_to_svg(spec)


HEAT = charts.heatmap([{"bot": "a", "suite": "s", "metric": m, "mean": v, "good": v}
                       for m, v in (("bleu", 0.2), ("rougeL", 0.7))])


def test_the_same_chart_drawn_again_is_the_same_svg():
    """vl-convert's id counter lives as long as the process (gradient_0, then
    gradient_1): the ids are renumbered per SVG, references with them."""
    first = chart_engine.to_svg(HEAT)
    assert 'id="gradient_0"' in first and 'url(#gradient_0)' in first
    assert chart_engine.to_svg(HEAT) == first
    raw = in_process(HEAT)
    assert raw != first and chart_engine.stable_ids(raw) == first
    chart_engine.start()  # the child's counter starts anew: same SVG from there
    assert chart_engine.to_svg(HEAT) == first == chart_engine.to_svg(HEAT)


def test_stable_ids_renumbers_ids_and_their_references_only():
    svg = ('<svg><defs><linearGradient id="gradient_7"/><clipPath id="clip12"/></defs>'
           '<path fill="url(#gradient_7)" clip-path="url(#clip12)"/><use href="#clip12"/>'
           '<text>gradient_7 clip12</text></svg>')
    assert chart_engine.stable_ids(svg) == (
        '<svg><defs><linearGradient id="gradient_0"/><clipPath id="clip1"/></defs>'
        '<path fill="url(#gradient_0)" clip-path="url(#clip1)"/><use href="#clip1"/>'
        '<text>gradient_7 clip12</text></svg>')
    assert chart_engine.stable_ids('<svg id="a"/>') == '<svg id="a"/>'


def test_child_draws_the_same_svg_as_this_process():
    chart_engine.start()
    child = chart_engine._child
    assert child is not None and child.poll() is None
    assert chart_engine.to_svg(BARS) == chart_engine.stable_ids(in_process(BARS))
    assert chart_engine._child is child  # the same child answers the next chart too
    assert chart_engine.to_svg(BARS) == chart_engine.stable_ids(in_process(BARS))


def test_an_invalid_spec_is_a_chart_error_from_the_child_and_the_child_stays():
    chart_engine.start()
    with pytest.raises(chart_engine.ChartError, match=r"\w+Error"):
        chart_engine.to_svg({"mark": "no-such-mark", "data": {"values": []}})
    assert chart_engine._child is not None
    uri, alt = charts.render({"mark": "no-such-mark", "data": {"values": []}}, "x")
    assert uri is None and alt  # the page says why instead of a chart


def test_a_dead_child_falls_back_to_drawing_here():
    chart_engine.start()
    chart_engine._child.kill()
    chart_engine._child.wait()
    assert chart_engine.to_svg(BARS) == chart_engine.stable_ids(in_process(BARS))
    assert chart_engine._child is None  # dropped: later charts do not wait on it


def test_a_child_that_answers_nonsense_falls_back_to_drawing_here(monkeypatch):
    monkeypatch.setattr(chart_engine, "_CHILD", "import sys\nfor l in sys.stdin: print('no')")
    chart_engine.start()
    assert chart_engine.to_svg(BARS) == chart_engine.stable_ids(in_process(BARS))
    assert chart_engine._child is None


def test_without_a_child_charts_are_drawn_here():
    assert chart_engine._child is None
    uri, alt = charts.render(BARS, "verdicts")
    assert uri.startswith("data:image/svg+xml;base64,") and alt == "verdicts"


def test_charts_drawn_apart_come_from_a_child_that_ends_with_the_block():
    with chart_engine.drawn_apart():
        child = chart_engine._child
        assert child is not None and child.poll() is None
        assert chart_engine.to_svg(BARS) == chart_engine.stable_ids(in_process(BARS))
    assert chart_engine._child is None and child.poll() == 0  # it read end-of-file


def test_drawn_apart_uses_and_leaves_a_child_that_was_already_running():
    chart_engine.start()
    child = chart_engine._child
    with chart_engine.drawn_apart():
        assert chart_engine._child is child
    assert chart_engine._child is child and child.poll() is None


def test_a_process_that_draws_apart_never_loads_the_engine():
    import subprocess
    import sys
    code = ("import sys\n"
            "from transforms.publish import chart_engine, charts\n"
            "with chart_engine.drawn_apart():\n"
            "    uri, _ = charts.render(charts.verdict_bars([{'bot': 'a', 'verdict': 'PASS', "
            "'n': 1}]), 'v')\n"
            "print(uri[:26], 'vl_convert' in sys.modules)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True, cwd=root).stdout.split()
    assert out == ["data:image/svg+xml;base64,", "False"]


@pytest.mark.parametrize("args,here", [
    ([], True), (["--direct_running_mode=in_memory"], True),
    (["--direct_running_mode=multi_processing", "--direct_num_workers=2"], False),
    (["--runner=DataflowRunner"], False)])
def test_the_engine_is_booted_only_where_the_report_is_drawn(args, here):
    assert runs_in_this_process(PipelineOptions(args)) is here
