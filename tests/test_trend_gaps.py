"""A pass rate no verdict rule decided, across nights and runs.

Four nightly runs of one folder, for real (the CLI, Beam, a web bot served on
127.0.0.1): on 2026-11-26 the web bot's endpoint is down (a closed port:
every web row ERROR); on 2026-11-28 the cases have no expected answer, so the
only rule's metric (exact_match) has no value on any row and every rule is
skipped on every row (every row WARN). summary/ holds a pass rate of 0.0 for
both. report.html's trend chart drew them as a dip to 0 ("everything
failed"), and the last night's reports, `evalbeam compare` and its gate line
said 0.000. The trend now breaks its line there and marks the night (a
dashed line, a sentence saying why); the reports, compare and the gate say
"–" and why."""
from __future__ import annotations

import io
import os
import pathlib
import re
import socket

import pytest

from tests import browser
from tests.conftest import write_cases
from tests.fake_server import FakeOpenAI
from tests.pipeline_helpers import read_rows, run_cli

NIGHTS = ("2026-11-25", "2026-11-26", "2026-11-27", "2026-11-28")
SHOTS = pathlib.Path(os.environ.get("EVALBEAM_SHOTS", "/tmp/h-trend"))  # screenshots


def _closed_port() -> int:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


RULE = "{metric: exact_match, below: 1, verdict: FAIL}"


def _night(folder: pathlib.Path, date: str, base_url: str, references: bool,
           metrics: str = "exact_match", rule: str = RULE) -> int:
    """One night's run `n<date>`: web (http) and recorded, `metrics`, one rule
    (by default over exact_match: FAIL below 1), otherwise PASS."""
    rows = [{"case_id": f"c{i}", "question": f"How long is the refund window ({i})?",
             "answer": ["Thirty days.", "Ninety days."][i % 2],
             **({"expected_answer": "Thirty days."} if references else {})} for i in range(4)]
    cases = write_cases(str(folder / f"{date}.parquet"), rows)
    cfg = folder / f"{date}.yaml"
    cfg.write_text(f"endpoints:\n  web: {{base_url: '{base_url}', max_attempts: 1}}\n"
                   "bots:\n  - {name: web, type: http, endpoint: web, options: "
                   "{path: /assistant, body: {q: '{question}'}, answer_path: data.answer}}\n"
                   "  - {name: recorded, type: precomputed}\n"
                   f"metrics: [{metrics}]\n"
                   f"verdict:\n  rules:\n    - {rule}\n"
                   "  otherwise: PASS\n")
    return run_cli("--input", cases, "--output", str(folder / "out"), "--config", str(cfg),
                   "--run-id", "n" + date.replace("-", ""), "--run-date", date)


@pytest.fixture(scope="module")
def nights(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("nights")
    with FakeOpenAI() as server:
        server.set_assistant_handler(
            lambda req: "No idea." if "(3)" in req["q"] else "Thirty days.")
        for date in NIGHTS:
            down = date == "2026-11-26"
            url = f"http://127.0.0.1:{_closed_port()}" if down else server.base_url
            assert _night(folder, date, url, references=date != "2026-11-28") == 0, date
    return str(folder / "out")


def _report(out: str, run_id: str, ext: str) -> str:
    return open(os.path.join(out, "runs", run_id, f"report.{ext}"), encoding="utf-8").read()


def test_summary_keeps_0_where_no_rule_decided(nights):
    """The contract: summary/'s verdict `mean` stays the share of PASS rows."""
    rates = {(r["run_id"], r["bot"]): r["mean"] for r in read_rows(nights, "summary")
             if r["metric"] == "verdict" and r["suite"] == "*"}
    assert rates[("n20261126", "web")] == 0.0
    assert rates[("n20261128", "web")] == rates[("n20261128", "recorded")] == 0.0
    assert rates[("n20261125", "web")] == 0.75 and rates[("n20261127", "recorded")] == 0.5


def test_trend_breaks_its_line_where_no_rule_decided_a_night(nights):
    """The last night's report.html: its trend of the pass rate has no point at
    0 for web on 11-26 nor for either bot on 11-28 (a gap and a dashed line
    instead), and a sentence under the chart says why for each."""
    from transforms.publish.trends import load_history
    html = _report(nights, "n20261128", "html")
    said = re.search(r"A gap in a pass_rate line[^<]*", html)
    assert said, html[html.index("<h2>Trends"):][:3000]
    said = said.group(0).replace("&#x27;", "'")
    assert ("web on 2026-11-26: every row is ERROR (the bot did not answer; errors/ holds "
            "why)") in said, said
    assert ("recorded on 2026-11-28, web on 2026-11-28: no verdict rule could be evaluated: "
            "its rules read exact_match, which have no value on any of its rows") in said, said
    # what the chart is drawn from: no pass rate of 0 on those nights
    current = [r for r in read_rows(nights, "summary") if r["run_id"] == "n20261128"]
    points = load_history(nights, "n20261128", "2026-11-28", current,
                          manifest={"config": {"verdict": {"rules": [
                              {"metric": "exact_match", "below": 1, "verdict": "FAIL"}]}}})
    rates = {(p["run_date"], p["bot"]): p["mean"] for p in points if p["metric"] == "pass_rate"}
    assert rates == {("2026-11-25", "web"): 0.75, ("2026-11-25", "recorded"): 0.5,
                     ("2026-11-26", "web"): None, ("2026-11-26", "recorded"): 0.5,
                     ("2026-11-27", "web"): 0.75, ("2026-11-27", "recorded"): 0.5,
                     ("2026-11-28", "web"): None, ("2026-11-28", "recorded"): None}, rates


def test_trend_chart_as_a_person_sees_it(nights):
    """The chart in Chromium: the pass_rate panel's lines hold no point at the
    panel's 0 (the old dip), and a dashed line marks each undecided night."""
    if not browser.available():
        if os.environ.get("CI"):
            pytest.fail(f"{browser.CHROMIUM} is missing")
        pytest.skip(f"{browser.CHROMIUM} not installed")
    import base64
    html = _report(nights, "n20261128", "html")
    alt = "trend lines of headline metrics"
    uri = re.search(r'<img[^>]*src="data:image/svg\+xml;base64,([^"]+)"[^>]*alt="' + alt, html)
    assert uri, "no trend chart"
    svg = base64.b64decode(uri.group(1)).decode()
    # the panel's y axis: web's 0.75 and recorded's 0.5 with their intervals; a pass
    # rate of 0 (the old dip) took it down to a tick 0.0
    ticks = [float(t) for t in re.findall(r">(\d\.\d+)</text>", svg)]
    assert ticks and min(ticks) >= 0.1, ticks
    assert svg.count('stroke-dasharray="4,3"') == 3, svg  # the undecided nights' marks
    SHOTS.mkdir(exist_ok=True)
    with browser.Browser(width=1280, loopback=True) as b:
        shown = b.open(pathlib.Path(nights, "runs", "n20261128", "report.html").as_uri())
        (SHOTS / "trends-report.png").write_bytes(shown.png)
        assert shown.evaluate("document.images.length") >= 1
        # the trend image is drawn (not broken)
        assert shown.evaluate(f"Array.from(document.images).filter(i => i.alt === '{alt}')"
                              ".map(i => i.naturalWidth)[0]") > 200


def test_last_nights_reports_compare_and_gate_say_no_pass_rate(nights, capsys, tmp_path):
    """On 11-28 the run has a rule, but it was skipped on every row: report.md,
    report.html and the notebook view showed 0.000 [0.000, 0.490] per bot; `evalbeam compare`
    of 11-27 against it 'web: pass rate 0.750 → 0.000' and its gate 'web
    pass_rate 0.750 → 0.000'. Now "–" and why; the gate's check itself is
    unchanged (it reads comparisons/' 0.0: a row no rule decided does not pass)."""
    from pipeline.cli import run
    md, html = _report(nights, "n20261128", "md"), _report(nights, "n20261128", "html")
    why = ("recorded, web: no verdict rule could be evaluated: its rules read exact_match, "
           "which have no value on any of its rows (scores/ holds why), so every answered row "
           "is WARN.")
    assert why in md and why in html, md
    assert "| web | 0 | 4 | 0 | 0 | – |" in md and "| recorded | 0 | 4 | 0 | 0 | – |" in md, md
    assert "0.000 [0.000, 0.490]" not in md + html
    import evalbeam  # the notebook view of the run
    view = evalbeam.read_run(nights, "n20261128")._repr_html_()
    assert "0.000 [0.000, 0.490]" not in view and "<td>–</td>" in view, view
    gate = tmp_path / "gate.yaml"
    gate.write_text("gate:\n  - {metric: pass_rate, max_drop: 0.1}\n")
    run(["compare", "--output", nights, "--baseline", "n20261127", "--candidate", "n20261128",
         "--config", str(gate)])
    out = capsys.readouterr().out
    assert "web: pass rate 0.750 → – " in out and "recorded: pass rate 0.500 → – " in out, out
    assert "→ 0.000" not in out, out
    assert re.search(r"gate: .*web pass_rate 0\.750 → – \(drop 0\.75", out), out
    page = open(os.path.join(nights, "runs", "n20261128", "compare",
                             "n20261127.md"), encoding="utf-8").read()
    assert "| pass_rate | 4 | 0.750 | – |" in page, page


def _marks(svg_path: pathlib.Path, b) -> tuple[list, dict, "browser.Page"]:
    """The trend SVG opened by itself in Chromium: its dashed marks as drawn
    [(aria-label, stroke, left x px, width px)], each bot's line colour, the page."""
    shown = b.open(svg_path.as_uri())
    marks = shown.evaluate(
        "Array.from(document.querySelectorAll('line[stroke-dasharray=\"4,3\"]')).map(l => "
        "[l.getAttribute('aria-label'), l.getAttribute('stroke'), "
        "l.getBoundingClientRect().x, l.getBoundingClientRect().width])")
    lines = shown.evaluate(
        "Array.from(document.querySelectorAll('path[aria-roledescription=\"line mark\"]'))"
        ".map(p => [p.getAttribute('aria-label'), p.getAttribute('stroke')])")
    colours = {re.search(r"bot: (\w+)", label).group(1): stroke for label, stroke in lines}
    return marks, colours, shown


def _columns(png: bytes, box: dict, colour: str, tolerance: int = 40) -> list[int]:
    """x of the screenshot's columns inside box holding a vertical run of
    `colour` (a dashed mark: at least 30 px of it; a line or a point has a few)."""
    from PIL import Image
    image = Image.open(io.BytesIO(png)).convert("RGB")
    want = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    left, top = int(box["x"]), int(box["y"])
    out = []
    for x in range(left, min(left + int(box["width"]), image.width)):
        n = sum(all(abs(c - w) <= tolerance for c, w in zip(image.getpixel((x, y)), want))
                for y in range(top, min(top + int(box["height"]), image.height)))
        if n >= 30:
            out.append(x)
    return out


def test_two_bots_undecided_on_one_night_are_both_seen(nights):
    """On 11-28 neither bot's pass rate was decided: both dashed marks were
    drawn at the night's x (227.5 px in the panel), the second over the first,
    so the chart showed one mark (web's orange) and recorded's was hidden.
    They now stand side by side (6 px apart around the night's tick), each in
    its bot's line colour. Checked in Chromium: the SVG's drawn marks (DOM), and
    the pixels of report.html's screenshot as a person sees the page."""
    if not browser.available():
        if os.environ.get("CI"):
            pytest.fail(f"{browser.CHROMIUM} is missing")
        pytest.skip(f"{browser.CHROMIUM} not installed")
    import base64
    from PIL import Image
    alt = "trend lines of headline metrics"
    report = pathlib.Path(nights, "runs", "n20261128", "report.html")
    uri = re.search(r'<img[^>]*src="data:image/svg\+xml;base64,([^"]+)"[^>]*alt="' + alt,
                    report.read_text(encoding="utf-8"))
    SHOTS.mkdir(parents=True, exist_ok=True)
    svg = SHOTS / "trends.svg"
    svg.write_bytes(base64.b64decode(uri.group(1)))
    with browser.Browser(width=1280, loopback=True) as b:
        marks, colours, alone = _marks(svg, b)
        (SHOTS / "trends-chart.png").write_bytes(alone.png)
        page = b.open(report.as_uri())
        (SHOTS / "trends-page.png").write_bytes(page.png)
        box = page.evaluate(f"(() => {{ const r = Array.from(document.images).find(i => "
                            f"i.alt === '{alt}').getBoundingClientRect(); return {{x: r.x + "
                            "scrollX, y: r.y + scrollY, width: r.width, height: r.height}; })()")
    # the DOM: one mark per bot and undecided night, in the bot's line colour
    drawn = {re.search(r"run: ([\d-]+); bot: (\w+)", label).groups(): (stroke, x + w / 2)
             for label, stroke, x, w in marks}
    assert set(drawn) == {("2026-11-26", "web"), ("2026-11-28", "web"),
                          ("2026-11-28", "recorded")}, marks
    assert all(stroke == colours[bot] for (_, bot), (stroke, _) in drawn.items()), (drawn, colours)
    (web, x_web), (rec, x_rec) = drawn[("2026-11-28", "web")], drawn[("2026-11-28", "recorded")]
    assert web != rec and abs(x_web - x_rec) >= 4, drawn  # not one over the other
    assert abs(drawn[("2026-11-26", "web")][1] - x_web) > 50  # each on its own night
    # the page as a person sees it: both bots' colours make a dashed column near 11-28's
    # x, apart (drawn over each other, only the last one's colour was left)
    Image.open(io.BytesIO(page.png)).crop(
        (int(box["x"]), int(box["y"]), int(box["x"] + box["width"]),
         int(box["y"] + box["height"]))).save(SHOTS / "trends-crop.png")
    seen = {bot: _columns(page.png, box, colours[bot]) for bot in ("web", "recorded")}
    assert seen["recorded"], seen  # recorded's mark is visible at all
    assert min(abs(a - b) for a in seen["web"] for b in seen["recorded"]) >= 3, seen


# the rule of the second fixture's last night: set aside wherever reference_coverage has
# a value, which is every row, and no rule reads reference_coverage
UNLESS = "{metric: exact_match, below: 1, verdict: FAIL, unless: reference_coverage}"
SET_ASIDE = ("no verdict rule could be evaluated: its rule on exact_match was skipped on every "
             "row: unless reference_coverage held (it has a value on each, and no rule decides "
             "on it)")


@pytest.fixture(scope="module")
def set_aside(tmp_path_factory) -> str:
    """Two nights of web and recorded over exact_match and reference_coverage,
    every case with an expected answer: on 11-27 the rule over exact_match
    decides; on 11-28 it has `unless: reference_coverage`, so it is set aside
    on every row (every row WARN)."""
    folder = tmp_path_factory.mktemp("set_aside")
    with FakeOpenAI() as server:
        server.set_assistant_handler(
            lambda req: "No idea." if "(3)" in req["q"] else "Thirty days.")
        for date, rule in (("2026-11-27", RULE), ("2026-11-28", UNLESS)):
            assert _night(folder, date, server.base_url, references=True,
                          metrics="exact_match, reference_coverage", rule=rule) == 0, date
    return str(folder / "out")


def test_a_rule_set_aside_by_unless_on_every_row_is_no_pass_rate(set_aside, capsys, tmp_path):
    """A rule whose `unless` metric has a value on every row decided none
    (every row WARN, "exact_match (set aside: ...)"), yet the reports, the
    notebook view, the trend, `evalbeam compare` and its gate said 0.000 as if
    every answer had failed: only a rule whose metric had no value counted as
    unable to decide. Now "–" and why, as for that rule."""
    from pipeline.cli import run
    import evalbeam
    last = [r for r in read_rows(set_aside, "results") if r["run_id"] == "n20261128"]
    assert {(r["verdict"], r["verdict_reason"]) for r in last} == {
        ("WARN", "no verdict rule could be evaluated: exact_match (set aside: "
                 "reference_coverage has a value)")}, last
    rates = {r["bot"]: r["mean"] for r in read_rows(set_aside, "summary")
             if r["run_id"] == "n20261128" and r["metric"] == "verdict" and r["suite"] == "*"}
    assert rates == {"web": 0.0, "recorded": 0.0}  # summary/ keeps its 0
    md, html = _report(set_aside, "n20261128", "md"), _report(set_aside, "n20261128", "html")
    why = f"recorded, web: {SET_ASIDE}, so every answered row is WARN."
    assert why in md and why in html.replace("&#x27;", "'"), md
    assert "| web | 0 | 4 | 0 | 0 | – |" in md and "| recorded | 0 | 4 | 0 | 0 | – |" in md, md
    assert "0.000 [0.000, 0.490]" not in md + html
    view = evalbeam.read_run(set_aside, "n20261128")._repr_html_()
    assert "0.000 [0.000, 0.490]" not in view and "<td>–</td>" in view, view
    # the trend: a gap and a dashed mark for each bot on 11-28, and why
    said = re.search(r"A gap in a pass_rate line[^<]*", html)
    assert said and f"recorded on 2026-11-28, web on 2026-11-28: {SET_ASIDE}" in said.group(0), \
        html[html.index("<h2>Trends"):][:3000]
    # compare 11-27 -> 11-28 and its gate
    gate = tmp_path / "gate.yaml"
    gate.write_text("gate:\n  - {metric: pass_rate, max_drop: 0.1}\n")
    run(["compare", "--output", set_aside, "--baseline", "n20261127", "--candidate",
         "n20261128", "--config", str(gate)])
    out = capsys.readouterr().out
    assert "web: pass rate 0.750 → – " in out and "recorded: pass rate 0.500 → – " in out, out
    assert "→ 0.000" not in out, out
    assert re.search(r"gate: .*web pass_rate 0\.750 → – \(drop 0\.75", out), out
