"""`evalbeam view`: the read-only viewer over two real runs whose cases hold
hostile text (HTML, script, control and bidi characters, '/', '?', '#' and
'..' in case ids), over HTTP and in headless Chromium."""
from __future__ import annotations

import contextlib
import html
import http.client
import json
import os
import re
import socket
import urllib.parse
from pathlib import Path

import duckdb
import pytest

from pipeline.viewer.data import PAGE_SIZE
from pipeline.viewer.server import start_in_thread
from tests import browser
from tests.conftest import write_cases
from tests.pipeline_helpers import run_cli, run_sample

PAYLOAD = "<script>window.__pwned = 1; document.title = 'PWNED'</script>"
HOSTILE_IDS = [f"{PAYLOAD}id", 'q"onmouseover="window.__pwned=2', "a/b?c=1#d", "../../etc/passwd",
               "ctrl\x1b[31mred", "bidi\u202egnp.exe", "日本語-ケース"]
SUITES = ("billing", "shipping", "returns")


def _rows(changed: bool) -> list[dict]:
    rows = []
    for i in range(70):
        case_id = HOSTILE_IDS[i] if i < len(HOSTILE_IDS) else f"case-{i:03d}"
        answer = f"Plan {i} costs {10 + i} dollars per month."
        if i == 3:
            answer = f"{PAYLOAD}<img src=x onerror=\"window.__pwned = 3\"> \x1b[2J cleared"
        if changed and i % 10 == 5:
            answer = "I do not know."
        rows.append({"case_id": case_id, "question": f"What does plan {i} cost? {PAYLOAD}"
                     if i == 0 else f"What does plan {i} cost?",
                     "expected_answer": f"Plan {i} costs {10 + i} dollars per month.",
                     "contexts": [f"Plan {i} costs {10 + i} dollars per month, billed monthly.",
                                  f"<b>context</b> of plan {i}"],
                     "answer": answer, "suite": SUITES[i % 3]})
    return rows


@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("viewer")
    out = str(tmp / "out")
    cfg = tmp / "c.yaml"
    cfg.write_text("metrics: [exact_match, keyword_recall, rougeL]\n")
    for run_id, changed in (("r1", False), ("r2", True)):
        cases = write_cases(str(tmp / f"{run_id}.parquet"), _rows(changed))
        assert run_cli("--input", cases, "--output", out, "--config", str(cfg), "--run-id",
                       run_id, "--run-date", "2026-11-2" + run_id[1]) == 0
    server = start_in_thread(out, 0)
    yield server, out
    server.shutdown()
    server.server_close()


def _get(server, path: str, method: str = "GET", host: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=60)
    headers = {} if host is None else {"Host": host}
    conn.request(method, path, headers=headers)
    resp = conn.getresponse()
    body = resp.read().decode("utf-8", "replace")
    conn.close()
    return resp.status, dict(resp.getheaders()), body


def _case_path(run_id: str, case_id: str) -> str:
    return f"/run/{run_id}/case/" + urllib.parse.quote(case_id, safe="")


def _need_chromium() -> None:
    """Skip without a browser; in CI, where one is installed, fail instead."""
    if not browser.available():
        if os.environ.get("CI"):
            pytest.fail(f"{browser.CHROMIUM} is missing (.ci/run installs Debian's chromium)")
        pytest.skip(f"{browser.CHROMIUM} not installed")


def _total(body: str) -> int:
    return int(re.search(r"–[0-9,]+ of ([0-9,]+)</span>", body).group(1).replace(",", ""))


def test_pages_headers_and_refusals(viewer):
    server, out = viewer
    status, headers, body = _get(server, "/")
    assert status == 200 and "script-src" not in headers["Content-Security-Policy"]
    assert headers["Content-Security-Policy"].startswith("default-src 'none'")
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert 'href="/run/r1"' in body and 'href="/run/r2"' in body
    status, _, body = _get(server, "/run/r1")
    assert status == 200 and _total(body) == 70  # one bot (recorded) × 70 cases
    assert _get(server, "/run/r1/report.html")[0] == 200
    assert _get(server, "/run/nope")[0] == 404
    assert _get(server, "/run/..%2F..%2Fetc")[0] == 400  # not a run id
    assert _get(server, _case_path("r1", "no such case"))[0] == 404
    assert _get(server, "/run/r1?min=abc")[0] == 400
    assert _get(server, "/run/r1?metric=bleu")[0] == 400  # not a metric of the run
    assert _get(server, "/run/r1?verdict=MAYBE")[0] == 400
    assert _get(server, "/", method="POST")[0] == 405
    assert _get(server, "/", host="evil.example:80")[0] == 400  # DNS rebinding
    assert _get(server, "/nothing/here")[0] == 404


def test_filters_and_paging_match_the_tables(viewer):
    server, out = viewer
    con = duckdb.connect()
    scores = (f"read_parquet('{out}/scores/**/*.parquet', hive_partitioning=true) "
              "WHERE run_id = 'r2' AND metric = 'rougeL'")
    for query, cond in (("max=0.99", "value <= 0.99"), ("min=0.99", "value >= 0.99"),
                         ("min=0&max=0.5", "value BETWEEN 0 AND 0.5")):
        want = con.execute(f"SELECT count(*) FROM {scores} AND {cond}").fetchone()[0]
        status, _, body = _get(server, f"/run/r2?metric=rougeL&{query}")
        assert status == 200 and _total(body) == want > 0, query
    results = (f"read_parquet('{out}/results/**/*.parquet', hive_partitioning=true) "
               "WHERE run_id = 'r2'")
    for verdict in ("PASS", "FAIL", "WARN"):
        n = con.execute(f"SELECT count(*) FROM {results} AND verdict = ?", [verdict]
                        ).fetchone()[0]
        status, _, body = _get(server, f"/run/r2?verdict={verdict}")
        assert _total(body) == n, verdict
    _, _, body = _get(server, "/run/r2?suite=billing&bot=recorded")
    assert _total(body) == 24  # i % 3 == 0 of 70
    _, _, body = _get(server, "/run/r2?q=" + urllib.parse.quote("DO NOT know"))
    assert _total(body) == 7  # case-insensitive, in the answers
    _, _, body = _get(server, "/run/r2?q=" + urllib.parse.quote("100%"))  # % is literal
    assert _total(body) == 0
    _, _, page2 = _get(server, "/run/r2?page=2")
    assert "51–70 of 70" in page2 and "← previous" in page2 and "next →" not in page2
    ids = re.findall(r'href="/run/r2/case/([^"]+)"', page2)
    assert len(ids) == 70 - PAGE_SIZE
    _, _, side = _get(server, "/compare?a=r1&b=r2&changed=1")
    assert _total(side) == 7 and "I do not know." in side


def test_hostile_text_is_shown_as_text(viewer):
    server, _ = viewer
    for path in ["/run/r1", "/run/r1?q=" + urllib.parse.quote("<script>"),
                 _case_path("r1", HOSTILE_IDS[0]), _case_path("r1", HOSTILE_IDS[3]),
                 "/compare?a=r1&b=r2"]:
        status, _, body = _get(server, path)
        assert status == 200, path
        assert "<script>window" not in body and "<img src=x" not in body, path
        assert "\x1b" not in body and "\u202e" not in body, path
    _, _, body = _get(server, _case_path("r1", HOSTILE_IDS[0]))
    assert "&lt;script&gt;window.__pwned = 1;" in body
    for case_id in HOSTILE_IDS[1:]:  # every hostile id reaches its own page
        status, _, body = _get(server, _case_path("r1", case_id))
        assert status == 200, case_id
    _, _, body = _get(server, _case_path("r1", "ctrl\x1b[31mred"))
    assert "ctrl\\x1b[31mred" in body  # the control character as a visible escape
    _, _, body = _get(server, _case_path("r1", HOSTILE_IDS[3]))
    assert "&lt;b&gt;context&lt;/b&gt; of plan 3" in body and "\\x1b[2J cleared" in body


def test_in_headless_chromium(viewer, tmp_path):
    """As a person sees it: the explorer filtered, a hostile case reached by its
    link, two runs side by side; nothing runs, nothing is fetched elsewhere."""
    _need_chromium()
    server, _ = viewer
    base = server.url.rstrip("/")
    with browser.Browser(loopback=True) as b:
        explorer = b.open(base + "/run/r2?bot=recorded&metric=rougeL&min=0&q="
                          + urllib.parse.quote("<script>"))
        (tmp_path / "explorer.png").write_bytes(explorer.png)
        link = explorer.evaluate("Array.from(document.querySelectorAll('a'))"
                                 ".find(a => a.textContent.startsWith('<script>')).href")
        case = b.open(link)
        (tmp_path / "case.png").write_bytes(case.png)
        side = b.open(base + "/compare?a=r1&b=r2&changed=1")
        (tmp_path / "side.png").write_bytes(side.png)
        for name, page in (("explorer", explorer), ("case", case), ("side", side)):
            elsewhere = [u for u in page.requests
                         if not u.startswith((base + "/", "data:"))]
            assert elsewhere == [], f"{name} made requests: {elsewhere}"
            assert page.evaluate("typeof window.__pwned") == "undefined", name
            assert page.evaluate("document.title") != "PWNED"
            assert page.evaluate("document.querySelectorAll('script, img[src=x]').length") == 0
            assert len(page.png) > 20_000
        # the case whose id and question hold the payload, and the one whose answer does
        assert explorer.evaluate("document.querySelectorAll('table.cases tbody tr').length") \
            == 2
        text = case.evaluate("document.body.innerText")
        assert f"Case {PAYLOAD}id" in text and "Contexts (2)" in text
        assert "keyword_recall" in text and "rougeL" in text and "Reference" in text
        assert side.evaluate("document.querySelectorAll('table.side tbody tr').length") == 7
        # laid out as a table: each heading stands above its column (a grid
        # display put the heading row and the body side by side)
        assert side.evaluate("getComputedStyle(document.querySelector('table.side')).display") \
            == "table"
        assert side.evaluate(
            "Array.from(document.querySelectorAll('table.side thead th')).every((th, i) => "
            "Math.abs(th.getBoundingClientRect().left - document.querySelector("
            "'table.side tbody tr').children[i].getBoundingClientRect().left) < 1)")


def test_view_command_refuses_what_it_cannot_serve(tmp_path, capsys):
    from pipeline.cli import run
    assert run(["view", "--output", str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert run(["view", "--output", "gs://bucket/evals"]) == 2
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert run(["view", "--output", str(tmp_path), "--port",
                    str(taken.getsockname()[1])]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[1].startswith("evalbeam: error: cannot serve on 127.0.0.1:")


def test_a_run_that_evaluated_nothing_opens_with_no_cases(tmp_path):
    """Every input row invalid: the run finished with no results/ files. Its
    pages open (no cases), its report is served, it pairs with nothing."""
    out = str(tmp_path / "out")
    good = write_cases(str(tmp_path / "good.parquet"), _rows(False)[7:10])
    bad = write_cases(str(tmp_path / "bad.parquet"), [{"case_id": "a", "question": None},
                                                      {"case_id": "b", "question": ""}])
    for run_id, cases, code in (("good", good, 0), ("bad", bad, 6)):  # 6: evaluated nothing
        assert run_cli("--input", cases, "--output", out, "--run-id", run_id) == code
    server = start_in_thread(out, 0)
    try:
        for path in ("/run/bad", "/run/bad?q=plan", "/run/bad?metric=exact_match&min=0",
                     "/run/bad/report.html", "/compare?a=good&b=bad", "/compare?a=bad&b=good"):
            status, _, body = _get(server, path)
            assert status == 200, (path, body[-300:])
            assert "has no results/ files" not in body
        status, _, body = _get(server, "/run/bad")
        assert "0 of 0" in body or "of 0<" in body, body[-800:]
        status, _, body = _get(server, "/compare?a=good&b=bad")
        assert "of 0<" in body
        assert _get(server, "/run/bad/case/a")[0] == 404
    finally:
        server.shutdown()
        server.server_close()


def test_long_bot_and_suite_names_leave_room_for_the_answer(tmp_path):
    """A bot name may be 64 characters and a suite name longer, without a space:
    the explorer and the side by side wrap them, so the answer keeps its room
    (at 1280 pixels the suite took 635 and left the answer 90, or pushed it
    off to the right behind a horizontal scroll); on a phone the filters' menus,
    as wide as their longest name, ran out of the form."""
    _need_chromium()
    out = str(tmp_path / "out")
    bot = "assistant_" + "v2-" * 18
    rows = [dict(r, suite=f"customer_support_{r['suite']}_" + "x" * 50) for r in _rows(False)[7:12]]
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"metrics: [exact_match]\nbots: [{{name: {bot}, type: precomputed}}]\n")
    cases = write_cases(str(tmp_path / "c.parquet"), rows)
    for run_id in ("r1", "r2"):
        assert run_cli("--input", cases, "--output", out, "--config", str(cfg),
                       "--run-id", run_id) == 0
    server = start_in_thread(out, 0)
    base = server.url.rstrip("/")
    try:
        with browser.Browser(loopback=True) as b:
            for path, table in (("/run/r1", "cases"), ("/compare?a=r1&b=r2", "side")):
                page = b.open(base + path)
                (tmp_path / f"{table}.png").write_bytes(page.png)
                assert page.evaluate(f"document.querySelectorAll('table.{table} tbody tr')"
                                     ".length") == 5
                widths = page.evaluate(
                    f"Array.from(document.querySelectorAll('table.{table} thead th'))"
                    ".map(th => [th.textContent, th.getBoundingClientRect().width])")
                overflow = page.evaluate(
                    f"(t => t.scrollWidth - t.parentElement.clientWidth)"
                    f"(document.querySelector('table.{table}'))")
                assert overflow <= 0, (path, overflow)
                wide = {name: w for name, w in widths if name in ("bot", "suite")}
                text = [w for name, w in widths if name == "answer"
                        or name.startswith(("A: ", "B: "))]
                assert max(wide.values()) <= 200 and min(text) >= 200, (path, widths)
        with browser.Browser(width=390, loopback=True) as b:  # a phone: the filters fit
            page = b.open(base + "/compare?a=r1&b=r2")
            (tmp_path / "phone.png").write_bytes(page.png)
            assert page.evaluate("(f => f.scrollWidth - f.clientWidth)"
                                 "(document.querySelector('form.filters'))") <= 0
    finally:
        server.shutdown()
        server.server_close()


def test_runs_not_shown_say_whether_they_are_running_or_failed(tmp_path):
    """A run id without a completion marker is listed with its state from its
    lease, as `evalbeam status` says it, not only 'no completed attempt'."""
    from transforms.publish import lease as leases
    out = str(tmp_path)
    for run_id in ("live", "dead"):
        lease, _ = leases.acquire(out, leases.new_lease(run_id, run_id[0] * 12, 300, True),
                                  lambda: None)
    leases.mark_failed(out, lease, "RuntimeError: the judge endpoint was unreachable")
    server = start_in_thread(out, 0)
    try:
        status, _, body = _get(server, "/")
    finally:
        server.shutdown()
        server.server_close()
    assert status == 200
    shown = re.search(r"<h2>Not shown</h2><ul>(.*)</ul>", body).group(1)
    assert "<li>run live: running (attempt llllllllllll by " in shown, shown
    assert "<li>run dead: failed (attempt dddddddddddd by " in shown, shown
    assert "the judge endpoint was unreachable" in shown


def test_a_repeated_case_id_shows_each_occurrence_once(tmp_path):
    """A case id given twice, with two conversations: the case page said 'every
    occurrence is shown' but showed the first one's conversation only, and
    listed both occurrences' scores under each answer (every metric twice per
    answer, one of them another conversation's). Now each occurrence shows its
    own inputs, and each bot's metrics are listed once, for the occurrences together."""
    rows = [{"case_id": "dup", "question": "What does it cost?", "answer": f"It costs ${p}.",
             "expected_answer": "It costs $10.",
             "messages": [{"role": "user", "content": f"I am on the {plan} plan."},
                          {"role": "assistant", "content": "Noted."}]}
            for plan, p in (("Plus", 10), ("Pro", 20))]
    cases = write_cases(str(tmp_path / "c.parquet"), rows)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("metrics: [exact_match]\n")
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--config", str(cfg),
                   "--run-id", "r") == 0
    server = start_in_thread(out, 0)
    try:
        status, _, body = _get(server, _case_path("r", "dup"))
    finally:
        server.shutdown()
        server.server_close()
    assert status == 200
    assert "I am on the Plus plan." in body and "I am on the Pro plan." in body
    assert "It costs $10." in body and "It costs $20." in body
    assert body.count(">exact_match</td>") == 2, body.count(">exact_match</td>")


ORDINARY_PAGES = ("/", "/run/r2", "/run/r2?metric=rougeL&min=0", "/run/r2/case/case-010",
                  "/compare?a=r1&b=r2")
SIZES = ("JSON.stringify(Array.from(document.querySelectorAll('body *')).map(e => "
         "(r => [e.tagName, r.x, r.y, r.width, r.height])(e.getBoundingClientRect())))")


def test_breaking_long_words_leaves_an_ordinary_run_as_it_was(viewer, monkeypatch):
    """Break opportunities go only into runs longer than 30 characters: at 1,280
    px the pages of a run without one are the same with and without them (the
    same HTML, every element's box, the screenshot)."""
    _need_chromium()
    from pipeline.viewer import pages
    from transforms.publish import html
    server, _ = viewer
    base = server.url.rstrip("/")

    def shots() -> list:  # each in a process of its own, as first renderings
        with browser.Browser(width=1280, loopback=True, fresh=True) as b:
            return [(path, page.evaluate("document.documentElement.outerHTML"),
                     page.evaluate(SIZES), page.png)
                    for path in ORDINARY_PAGES for page in [b.open(base + path)]]

    now = shots()
    monkeypatch.setattr(pages, "breakable", html.esc)  # as before: no <wbr>
    monkeypatch.setattr(html, "breakable", html.esc)
    before = shots()
    for (path, markup, sizes, png), (_, markup0, sizes0, png0) in zip(now, before):
        assert "<wbr>" not in markup and markup == markup0, path
        assert sizes == sizes0 and png == png0, path


def _run(tmp_path, rows: list[dict], config: str | None = None, run_id: str = "r",
         code: int = 0) -> str:
    """A real run of these rows (with a config's text) in tmp_path/out: the folder."""
    out = str(tmp_path / "out")
    args = ["--input", write_cases(str(tmp_path / f"{run_id}.parquet"), rows),
            "--output", out, "--run-id", run_id]
    if config is not None:
        (tmp_path / f"{run_id}.yaml").write_text(config)
        args += ["--config", str(tmp_path / f"{run_id}.yaml")]
    assert run_cli(*args) == code
    return out


@contextlib.contextmanager
def _serving(out: str):
    """The viewer over a folder, on a thread, for the with block."""
    server = start_in_thread(out, 0)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _shown(out: str, path: str, png, *expressions: str) -> list:
    """One page of the viewer over a folder, as Chromium shows it at 1,280 px:
    its screenshot saved to png, then what each expression evaluates to."""
    with _serving(out) as server, browser.Browser(width=1280, loopback=True) as b:
        page = b.open(server.url + path)
        png.write_bytes(page.png)
        return [page.evaluate(e) for e in expressions]


# two cases and an invalid row
WITH_AN_INVALID_ROW = [dict(r, case_id=f"c{i}") for i, r in enumerate(_rows(False)[7:9])] + [
    {"case_id": "bad", "question": None, "answer": "x"}]


def test_the_run_page_says_what_was_read_and_shows_the_errors_rows(tmp_path):
    """A run with an invalid input row and a bot that cannot be reached: its
    page showed 2 cases × 2 bots and the verdict counts only; the invalid row
    and every errors/ row, with its reason, were on no page of the viewer. Now
    the first screen says when the run finished, the input rows (valid,
    invalid), the errors/ rows (a link to them) and that the counts reconcile,
    and the errors/ rows follow the cases, each with its stage and message."""
    _need_chromium()
    out = _run(tmp_path, WITH_AN_INVALID_ROW,
               "endpoints: {down: {base_url: 'http://127.0.0.1:9/v1', max_attempts: 1}}\n"
               "bots: [{name: recorded, type: precomputed},"
               " {name: down, type: chat, endpoint: down, model: m}]\nmetrics: [exact_match]\n")
    first_screen, errors, target = _shown(
        out, "run/r", tmp_path / "run.png",
        "Array.from(document.querySelectorAll('body > :not(style)')).filter(e =>"
        " e.getBoundingClientRect().bottom <= 800).map(e => e.innerText).join('\\n')",
        "Array.from(document.querySelectorAll('table.errors tbody tr')).map(tr =>"
        " Array.from(tr.children).map(td => td.innerText))",
        "(a => a && document.querySelector(a.getAttribute('href')).textContent)"
        "(document.querySelector('a[href=\"#errors\"]'))")
    assert "finished 20" in first_screen and " UTC" in first_screen, first_screen
    assert "3 input rows: 2 valid, 1 invalid" in first_screen, first_screen
    assert "2 cases × 2 bots = 4 results rows" in first_screen, first_screen
    assert "3 rows in errors/" in first_screen and "counts reconcile: yes" in first_screen
    assert target == "errors/ (3 rows)"
    assert ["read", "bad", "–", "invalid_value", "question is null"] in errors, errors
    bot_errors = [e for e in errors if e[0] == "bot"]
    assert [(e[1], e[2], e[3]) for e in bot_errors] == [("c0", "down", "bot_error"),
                                                        ("c1", "down", "bot_error")]
    assert all("connect" in e[4].lower() for e in bot_errors), bot_errors


ARABIC = "يمكن استرداد المبلغ خلال 30 يومًا من التسليم."
# For each element matched whose text holds Arabic and a full stop: [x of the
# text's first letter's left edge, x of its final full stop's left edge, the
# element's right edge minus its text's right edge] (text nodes walked in order)
FULL_STOP = """(sel => Array.from(document.querySelectorAll(sel))
  .filter(e => /[\\u0600-\\u06ff]/.test(e.textContent) && e.textContent.includes('.'))
  .map(e => {
    const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT), nodes = [];
    for (let n = walk.nextNode(); n; n = walk.nextNode()) nodes.push(n);
    const box = (n, i) => { const r = document.createRange(); r.setStart(n, i);
                            r.setEnd(n, i + 1); return r.getBoundingClientRect(); };
    const first = nodes.find(n => /[\\u0600-\\u06ff]/.test(n.data));
    const last = nodes.filter(n => n.data.includes('.')).pop();
    const a = box(first, first.data.search(/[\\u0600-\\u06ff]/));
    const b = box(last, last.data.lastIndexOf('.'));
    const all = document.createRange(); all.selectNodeContents(e);
    return [a.left, b.left, e.getBoundingClientRect().right - all.getBoundingClientRect().right];
  }))"""


@pytest.mark.parametrize("width", [1280, 390])
def test_arabic_text_reads_right_to_left(tmp_path, width):
    """An Arabic question, reference, context and answer: shown in a
    left-to-right paragraph, the sentence's full stop stood at its right end,
    beside its first word (where an Arabic reader starts), and the case page's
    boxes were aligned left. Now a text that starts with right-to-left letters
    is laid out right to left: its full stop ends it on the left, and its box
    starts on the right. English text is laid out as before."""
    _need_chromium()
    rows = [{"case_id": "ar", "question": "ما هي مدة الاسترداد؟", "suite": "i18n",
             "expected_answer": ARABIC, "contexts": [ARABIC], "answer": ARABIC},
            {"case_id": "en", "question": "How long is the refund window?",
             "expected_answer": "Thirty days.", "answer": "Thirty days."}]
    with _serving(_run(tmp_path, rows, "metrics: [exact_match]\n")) as server:
        with browser.Browser(width=width, loopback=True, mobile=width < 640) as b:
            explorer = b.open(server.url + "run/r")
            (tmp_path / "explorer.png").write_bytes(explorer.png)
            listed = explorer.evaluate(FULL_STOP + "('table.cases td')")
            label_gap = explorer.evaluate(  # a phone's card: its heading's space beside the text
                "(td => getComputedStyle(td, '::before')[td.matches('[dir=auto]') ? 'marginLeft'"
                " : 'marginRight'])(Array.from(document.querySelectorAll('table.cases td'))"
                ".find(td => td.textContent.startsWith('ما هي')))")
            case = b.open(server.url + "run/r/case/ar")
            (tmp_path / "case.png").write_bytes(case.png)
            boxes = case.evaluate(FULL_STOP + "('div.answer')")
            english = case.evaluate("getComputedStyle(document.querySelector('h1')).direction")
            en_case = b.open(server.url + "run/r/case/en")
            en_box = en_case.evaluate("getComputedStyle(document.querySelector('div.answer'))"
                                      ".direction")
    assert len(listed) == 1 and len(boxes) == 3, (listed, boxes)  # answer; ref, context, answer
    for first, stop, _ in listed + boxes:
        assert stop < first, (listed, boxes)  # the full stop ends the sentence, on the left
    for _, _, gap in boxes:
        assert gap < 16, boxes  # the box's text starts at its right edge (its padding)
    assert english == en_box == "ltr"
    if width < 640:  # on the left of a right-to-left text, between the heading and it
        assert label_gap not in ("0px", None), label_gap


def test_a_case_of_a_cascade_run_says_which_stage_decided(tmp_path):
    """judge.escalate: undecided: a case page showed "no rule matched" for a row
    the offline rules decided (the judge never asked), as for any row of a run
    without a cascade; results/ decided_by was on no page. Now the reason says
    which stage of the cascade decided; a run without one says nothing more."""
    _need_chromium()
    from tests.fake_server import FakeOpenAI
    from tests.judge_script import ScriptedJudge
    from tests.test_cascade import ROWS, _by_digit, _config
    with FakeOpenAI() as fake:
        fake.set_chat_handler(ScriptedJudge(overrides={"judge_relevance": _by_digit}))
        code, out = run_sample(tmp_path, _config(fake), "cas", ROWS)
    assert code == 0
    plain = write_cases(str(tmp_path / "plain.parquet"), ROWS[:1])
    assert run_cli("--input", plain, "--output", out, "--run-id", "plain") == 0
    server = start_in_thread(out, 0)
    try:
        with browser.Browser(width=1280, loopback=True) as b:
            said = {}
            for path in ("cas/case/e0", "cas/case/w0", "plain/case/e0"):
                page = b.open(server.url + "run/" + path)
                (tmp_path / (path.replace("/", "-") + ".png")).write_bytes(page.png)
                said[path] = page.evaluate(
                    "Array.from(document.querySelectorAll('h2 + p')).map(p => p.innerText)")
    finally:
        server.shutdown()
        server.server_close()
    assert said["cas/case/e0"] == [
        "no rule matched · decided by the offline rules (the cascade's first stage)"]
    assert said["cas/case/w0"] == [
        "escalated: judge_relevance 0 < 0.5 · decided by the escalation rules on the judge's "
        "and classifier's metrics (the cascade's second stage)"]
    assert said["plain/case/e0"] == ["no rule matched"]


def test_an_empty_answer_says_so_in_the_list(tmp_path):
    """A bot that answered with an empty text (a FAQ bot with no match, a
    recorded ''): its row's answer cell in the explorer was blank, as if the
    page had not filled it in; the case page said "(empty answer)". The cell
    now says so too; a missing answer (a bot error) still shows the error."""
    _need_chromium()
    rows = [{"case_id": "blank", "question": "Anything?", "answer": "  "},
            {"case_id": "full", "question": "Anything?", "answer": "Yes."}]
    [cells] = _shown(_run(tmp_path, rows), "run/r", tmp_path / "run.png",
                     "Array.from(document.querySelectorAll('table.cases tbody tr'))"
                     ".map(tr => [tr.children[0].innerText, tr.children[6].innerText])")
    assert cells == [["blank", "(empty answer)"], ["full", "Yes."]], cells


def _number(shown: str) -> float | None:
    """A metric's value as a page shows it ('–': none)."""
    return None if shown == "–" else float(shown)


def _sorted_pages(b, address: str, sort: str, png_stem: Path, rows: str) -> list:
    """Pages 1 and 2 of address sorted by sort, as Chromium shows them: what
    rows evaluates to on each, in order (screenshots at png_stem-<sort>-<n>.png);
    the sort menu keeps the choice on both."""
    listed: list = []
    for page_no in (1, 2):
        page = b.open(f"{address}&sort={sort}&page={page_no}")
        png_stem.with_name(f"{png_stem.name}-{sort}-{page_no}.png").write_bytes(page.png)
        listed += page.evaluate(rows)
        assert page.evaluate("document.querySelector('select[name=sort]').value") == sort
    return listed


def test_the_cases_sort_by_a_metric(viewer):
    """The explorer listed its rows in case order only: to find the lowest
    rougeL, a person paged through all of them. With a metric chosen, "sort by
    the metric" lists them lowest or highest first (a row without a value last),
    the menu keeps the choice, and paging keeps the order; a sort without a
    metric is refused."""
    _need_chromium()
    server, out = viewer
    con = duckdb.connect()
    values = [v for (v,) in con.execute(
        f"SELECT value FROM read_parquet('{out}/scores/**/*.parquet', hive_partitioning=true) "
        "WHERE run_id = 'r2' AND metric = 'rougeL'").fetchall()]
    with browser.Browser(width=1280, loopback=True) as b:
        shown = {sort: [_number(v) for v in _sorted_pages(
            b, server.url + "run/r2?metric=rougeL", sort, Path(str(out)).parent / "sort",
            "Array.from(document.querySelectorAll('table.cases tbody tr'))"
            ".map(tr => tr.children[7].innerText)")] for sort in ("asc", "desc")}
    have = sum(v is not None for v in values)
    assert len(values) == 70
    for sort, listed in shown.items():
        assert len(listed) == 70 and None not in listed[:have], sort
        assert listed[have:] == [None] * (70 - have), sort  # no value: last
        assert listed[:have] == sorted(listed[:have], reverse=sort == "desc"), sort
    assert _get(server, "/run/r2?sort=asc")[0] == 400  # no metric to sort by
    assert _get(server, "/run/r2?metric=rougeL&sort=sideways")[0] == 400


def test_the_report_says_when_the_run_finished(viewer):
    """report.html's first lines said the run date, input and counts, not when
    the run finished (report.md says it; a re-run on the same date has the same
    run date). They say it now, as the viewer's run page does."""
    _need_chromium()
    server, out = viewer
    with open(os.path.join(out, "runs", "r1", "manifest.json"), encoding="utf-8") as fh:
        finished = json.load(fh)["finished_at"]  # 2026-11-28T04:42:27Z
    with browser.Browser(width=1280, loopback=True) as b:
        first = {}
        for path in ("run/r1/report.html", "run/r1"):
            page = b.open(server.url + path)
            first[path] = page.evaluate("document.querySelector('h1 + p').innerText")
    want = f"finished {finished[:10]} {finished[11:19]} UTC"
    assert all(want in line for line in first.values()), (want, first)


def test_a_list_with_no_rows_says_why(viewer, tmp_path):
    """A search that matches nothing, and a run that evaluated nothing, showed
    a table of headings only, which reads as a page that failed to load. The
    page now says "No row matches these filters." or, for a run without
    results rows, that its reasons are in errors/."""
    _need_chromium()
    server, _ = viewer
    said = {}
    with _serving(_run(tmp_path, [{"case_id": "a", "question": None}], run_id="none",
                       code=6)) as empty:
        with browser.Browser(width=1280, loopback=True) as b:
            for at, path in ((server, "run/r1?q=no+such+words"), (empty, "run/none"),
                             (server, "compare?a=r1&b=r2&q=no+such+words")):
                page = b.open(at.url + path)
                (tmp_path / (path.split("?")[0].replace("/", "-") + ".png")).write_bytes(page.png)
                said[path] = page.evaluate(
                    "[document.querySelectorAll('table.cases, table.side').length,"
                    " Array.from(document.querySelectorAll('p.empty')).map(p => p.innerText)]")
    assert said["run/r1?q=no+such+words"] == [0, ["No row matches these filters."]], said
    assert said["compare?a=r1&b=r2&q=no+such+words"] == [0, ["No row matches these filters."]]
    assert said["run/none"] == [0, ["No rows: this run has no results rows (nothing was "
                                    "evaluated: the reasons are in errors/)."]], said


def test_the_runs_list_says_each_runs_errors_and_whether_it_reconciles(tmp_path):
    """The first page, the folder's runs, gave each run's cases and invalid
    rows, and its finish as 2026-11-28T04:42:27Z: not how many rows are in
    errors/ (bot failures, failed judge questions) nor whether the counts
    reconcile, which the run's report leads with. Both are columns now, and the
    finish reads as on the run page."""
    _need_chromium()
    [table] = _shown(_run(tmp_path, WITH_AN_INVALID_ROW), "", tmp_path / "runs.png",
                     "Array.from(document.querySelectorAll('table tr')).map(tr =>"
                     " Array.from(tr.children).map(c => c.innerText))")
    row = dict(zip(table[0], table[1]))
    assert (row["cases"], row["invalid rows"], row["errors/ rows"], row["counts reconcile"]) \
        == ("2", "1", "1", "yes"), row
    assert re.fullmatch(r"20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC", row["finished"]), row


def test_an_unknown_case_says_why_and_leads_back_to_its_run(tmp_path):
    """/run/r/case/<id> for an id without a results row was a 404 that said
    "run r has no case 'bad'" and linked to all runs only, even when the id was
    an input row that errors/ says was invalid ("question is null"). It now
    says what errors/ has for the id, and links back to the run and to a
    search of it for the id."""
    _need_chromium()
    with _serving(_run(tmp_path, WITH_AN_INVALID_ROW)) as server:
        assert _get(server, "/run/r/case/bad")[0] == _get(server, "/run/r/case/nope")[0] == 404
        with browser.Browser(width=1280, loopback=True) as b:
            seen = {}
            for case_id in ("bad", "nope"):
                page = b.open(server.url + "run/r/case/" + case_id)
                (tmp_path / f"{case_id}.png").write_bytes(page.png)
                seen[case_id] = (page.evaluate("document.body.innerText"), page.evaluate(
                    "Array.from(document.querySelectorAll('a')).map(a =>"
                    " [a.innerText, a.getAttribute('href')])"))
    text, links = seen["bad"]
    assert "run r has no case 'bad'" in text and "errors/ has 1 row for this case id" in text
    assert "invalid_value" in text and "question is null" in text, text
    for case_id, (text, links) in seen.items():
        assert ["Back to run r", "/run/r"] in links, links
        assert ["search the run for it", f"/run/r?q={case_id}"] in links, links
    assert "errors/" not in seen["nope"][0]


def test_every_errors_row_can_be_paged_to(tmp_path):
    """A run's page showed its first 50 errors/ rows and said "all of them are
    in the errors/ table": a person with 61 invalid input rows could not see the
    other 11 in the viewer. The errors/ rows now page on their own (errors_page=,
    keeping the explorer's filters and page), each link back at the errors, and
    every row is on some page once; a page past the end is the last."""
    _need_chromium()
    rows = [dict(r, case_id=f"c{i}") for i, r in enumerate(_rows(False)[:2])] + [
        {"case_id": f"bad-{i:02d}", "question": None, "answer": "x"} for i in range(61)]
    out = _run(tmp_path, rows, "metrics: [exact_match]\n")
    expected = sorted(c for (c,) in duckdb.connect().execute(
        f"SELECT case_id FROM read_parquet('{out}/errors/**/*.parquet', hive_partitioning=true)"
    ).fetchall())
    assert len(expected) == 61
    seen, pagers = [], []
    with _serving(out) as server, browser.Browser(width=1280, loopback=True) as b:
        path = "run/r?verdict=FAIL"
        for number in (1, 2):
            page = b.open(server.url + path)
            (tmp_path / f"errors-{number}.png").write_bytes(page.png)
            seen += page.evaluate("Array.from(document.querySelectorAll('table.errors tbody tr'))"
                                  ".map(tr => tr.children[1].innerText)")
            pagers.append(page.evaluate(
                "Array.from(document.querySelectorAll('#errors ~ .pager')).map(p => p.innerText)"))
            nxt = page.evaluate("(a => a && a.getAttribute('href'))(Array.from(document"
                                ".querySelectorAll('#errors ~ .pager a')).find(a =>"
                                " a.innerText.startsWith('next')))")
            if number == 1:
                assert nxt == "/run/r?verdict=FAIL&errors_page=2#errors", nxt
                path = nxt.lstrip("/")
            else:
                assert nxt is None
    assert sorted(seen) == expected and len(seen) == len(set(seen))
    assert "1–50 of 61" in pagers[0][0] and "51–61 of 61" in pagers[1][0], pagers
    with _serving(out) as server:
        status, _, body = _get(server, "/run/r?errors_page=9")
        assert status == 200 and "51–61 of 61" in body  # past the end: the last page
        assert _get(server, "/run/r?errors_page=0")[0] == 400


def test_the_compare_page_sorts_by_a_metric_and_shows_both_runs_values(viewer):
    """/compare took sort= and listed its rows in case order anyway, with no
    sort menu and no metric values: to find where run B scores lowest a person
    paged through all of it. With a metric chosen, it now lists B's value (and
    A's beside it) lowest or highest first, a row without a value last, as the
    run page does."""
    _need_chromium()
    server, out = viewer
    con = duckdb.connect()
    value = {(run, case): v for run, case, v in con.execute(
        f"SELECT run_id, case_id, value FROM read_parquet('{out}/scores/**/*.parquet', "
        "hive_partitioning=true) WHERE metric = 'rougeL'").fetchall()}
    number = _number
    with browser.Browser(width=1280, loopback=True) as b:
        for sort in ("asc", "desc"):
            listed = _sorted_pages(
                b, server.url + "compare?a=r1&b=r2&metric=rougeL", sort,
                Path(str(out)).parent / "compare",
                "Array.from(document.querySelectorAll('table.side tbody tr'))"
                ".map(tr => [decodeURIComponent(tr.children[0].querySelector('a')"
                ".getAttribute('href').split('/').pop()), tr.children[6].innerText,"
                " tr.children[7].innerText])")
            assert len(listed) == 70
            b_values = [number(v) for _, _, v in listed]
            have = sum(v is not None for v in b_values)
            assert b_values[:have] == sorted(b_values[:have], reverse=sort == "desc"), sort
            assert b_values[have:] == [None] * (70 - have)
            for case, a_shown, b_shown in listed:
                for run, shown in (("r1", a_shown), ("r2", b_shown)):
                    want = value.get((run, case))
                    assert (number(shown) is None) == (want is None), (run, case, shown)
                    if want is not None:
                        assert abs(number(shown) - want) < 0.0051, (run, case, shown, want)
    assert _get(server, "/compare?a=r1&b=r2&sort=asc")[0] == 400  # no metric to sort by


def test_a_long_answer_side_by_side_says_it_is_cut_and_leads_to_all_of_it(tmp_path):
    """A 50,000-character answer side by side was cut at 600 characters with
    no "…" (read as the whole answer) and the only link went to run A's case:
    run B's whole answer was on no page one click away. Each cut answer now
    ends with "…" and a link to its own run's case page, which shows all of it."""
    _need_chromium()
    long = ("The refund policy says many things. " * 1400)[:50_000]
    rows = [{"case_id": "long", "question": "What is the policy?", "answer": long},
            {"case_id": "short", "question": "What is the policy?", "answer": "Refunds."}]
    out = _run(tmp_path, rows, "metrics: [exact_match]\n", run_id="a")
    _run(tmp_path, [dict(r, answer=r["answer"].replace("policy", "rule")) for r in rows],
         "metrics: [exact_match]\n", run_id="b")
    with _serving(out) as server, browser.Browser(width=1280, loopback=True) as b:
        side = b.open(server.url + "compare?a=a&b=b")
        (tmp_path / "side.png").write_bytes(side.png)
        cells = side.evaluate(
            "Array.from(document.querySelectorAll('table.side tbody tr')).map(tr =>"
            " [4, 5].map(i => [tr.children[i].querySelector('div.answer').innerText,"
            " Array.from(tr.children[i].querySelectorAll('a')).map(a => a.getAttribute('href'))"
            "]))")
        (long_a, links_a), (long_b, links_b) = cells[0]
        assert long_a.endswith("…") and long_b.endswith("…"), (long_a[-20:], long_b[-20:])
        assert links_a == ["/run/a/case/long"] and links_b == ["/run/b/case/long"], cells[0]
        assert cells[1] == [["Refunds.", []], ["Refunds.", []]], cells[1]  # not cut: no link
        case = b.open(server.url + links_b[0].lstrip("/"))
        (tmp_path / "case.png").write_bytes(case.png)
        shown = case.evaluate("Array.from(document.querySelectorAll('div.answer')).pop()"
                              ".innerText")
    assert shown == long.replace("policy", "rule"), len(shown)


def test_a_run_not_finished_says_on_its_page_what_the_list_says(tmp_path):
    """The runs list says a run id without a completion marker is running or
    failed (and why) as `evalbeam status` does, but its own page took the
    lease's word: a run whose process was killed (kill -9, a crashed machine)
    "has its lease (running, ...)" there and "failed (... its process is
    gone)" in the list, so whoever followed a link to it waited for a run that
    would never finish. The page now says what the list says."""
    _need_chromium()
    import subprocess
    from transforms.publish import lease as leases
    gone = subprocess.Popen(["true"])
    gone.wait()
    out = str(tmp_path)
    for run_id, pid in (("live", None), ("killed", gone.pid), ("dead", None)):
        lease, _ = leases.acquire(out, leases.new_lease(run_id, run_id[0] * 12, 300, True,
                                                        pid=pid), lambda: None)
    leases.mark_failed(out, lease, "RuntimeError: the judge endpoint was unreachable")
    with _serving(out) as server, browser.Browser(width=1280, loopback=True) as b:
        listed = b.open(server.url).evaluate(
            "Array.from(document.querySelectorAll('li')).map(li => li.innerText)")
        said = {}
        for run_id in ("live", "killed", "dead"):
            page = b.open(server.url + "run/" + run_id)
            (tmp_path / f"{run_id}.png").write_bytes(page.png)
            said[run_id] = page.evaluate("document.querySelector('h1 + p').innerText")
    assert said["live"].startswith("run live: running (attempt llllllllllll by "), said
    assert said["killed"].startswith("run killed: failed (attempt kkkkkkkkkkkk by "), said
    assert f"its process {gone.pid} on " in said["killed"] and "is gone" in said["killed"]
    assert said["dead"].startswith("run dead: failed (") and "unreachable" in said["dead"]
    ago = lambda line: re.sub(r"[0-9]+ s ago", "N s ago", line)  # noqa: E731
    assert sorted(map(ago, said.values())) == sorted(map(ago, listed)), (said, listed)


def test_an_output_folder_gone_while_serving_says_so_and_the_viewer_goes_on(tmp_path):
    """The output folder deleted (or moved, or its disk unmounted) while the
    viewer serves it: the runs page said "No finished run in this folder yet."
    and a run's page "run r has no completed attempt ... see evalbeam status",
    as if the runs had never been made. Each page now says the folder is not
    there any more; once it is back, the same viewer shows its runs again."""
    _need_chromium()
    import shutil
    out = _run(tmp_path, _rows(False)[7:9], "metrics: [exact_match]\n")
    away = str(tmp_path / "away")
    paths = ("", "run/r", "run/r/case/case-007", "run/r/report.html", "compare?a=r&b=r")
    with _serving(out) as server, browser.Browser(width=1280, loopback=True) as b:
        assert _get(server, "/run/r")[0] == 200  # the run loaded before its folder goes
        shutil.move(out, away)
        said = {}
        for path in paths:
            page = b.open(server.url + path)
            (tmp_path / f"gone-{path.split('?')[0].replace('/', '-') or 'runs'}.png"
             ).write_bytes(page.png)
            said[path] = page.evaluate("document.body.innerText")
            assert _get(server, "/" + path)[0] == 404, path
        shutil.move(away, out)
        back = _get(server, "/run/r")
    for path, text in said.items():
        assert f"the output folder {out} is not there any more" in text, (path, text)
        assert "Traceback" not in text and "No finished run" not in text, (path, text)
    assert back[0] == 200 and "case-007" in back[2]


def test_a_bad_run_id_in_an_address_is_not_called_a_flag(viewer):
    """/run/..%2F..%2Fetc and /compare?b=../../etc answered "--run-id
    '../../etc' must be 1-128 letters, ...": a command line flag the person
    never typed, on a web page. The 400 names what they gave: a run id (or the
    a=/b= of the side by side)."""
    server, _ = viewer
    for path, want in (("/run/..%2F..%2Fetc", "run id '../../etc' must be"),
                       ("/run/..%2F..%2Fetc/report.html", "run id '../../etc' must be"),
                       ("/run/a%20b/case/x", "run id 'a b' must be"),
                       ("/compare?a=r1&b=../../etc", "b= '../../etc' must be"),
                       ("/compare?a=%3Cb%3E&b=r1", "a= '<b>' must be")):
        status, _, body = _get(server, path)
        message = html.unescape(re.search(r"<h1>This page cannot be shown</h1><p>(.*?)</p>",
                                          body).group(1))
        assert status == 400 and want in message and "--" not in message, (path, message)


def test_a_run_run_again_says_its_new_attempt_is_running_or_failed(tmp_path):
    """A run id run again (a nightly re-run, a retry) while the viewer serves
    it: the runs list and the run page showed the earlier attempt's tables as
    the run, with nothing to say a new attempt was running (or had failed),
    which `evalbeam status` says ("running ...; the tables hold attempt A").
    Both now say it, and that what is shown is the earlier attempt."""
    _need_chromium()
    from transforms.publish import lease as leases
    out = _run(tmp_path, _rows(False)[7:9], "metrics: [exact_match]\n")
    with open(os.path.join(out, "runs", "r", "manifest.json"), encoding="utf-8") as fh:
        attempt = json.load(fh)["attempt"]
    lease, _ = leases.acquire(out, leases.new_lease("r", "a" * 12, 300, True), lambda: attempt)
    said = {}
    with _serving(out) as server, browser.Browser(width=1280, loopback=True) as b:
        for state in ("running", "failed"):
            if state == "failed":
                leases.mark_failed(out, lease, "RuntimeError: the bot endpoint was unreachable")
            listed, run = b.open(server.url), b.open(server.url + "run/r")
            (tmp_path / f"runs-{state}.png").write_bytes(listed.png)
            (tmp_path / f"run-{state}.png").write_bytes(run.png)
            said[state] = (listed.evaluate("document.querySelector('table tbody tr')"
                                           ".children[2].innerText"),
                           run.evaluate("document.querySelector('p.note').innerText"),
                           run.evaluate("document.querySelectorAll('table.cases tbody tr')"
                                        ".length"))
    running, failed = said["running"], said["failed"]
    assert "a new attempt is running" in running[0], running
    assert running[1].startswith("run r: running (attempt aaaaaaaaaaaa by "), running
    assert "a later attempt failed" in failed[0], failed
    assert failed[1].startswith("run r: failed (") and "bot endpoint was unreachable" in failed[1]
    for _, note, rows in said.values():  # the earlier attempt's tables, said to be so
        assert f"shown: attempt {attempt}, finished 20" in note and rows == 2, note


def test_a_file_beside_the_runs_is_not_listed_as_a_run(tmp_path):
    """A file under runs/ (macOS's .DS_Store, a README someone put there) was
    listed under "Not shown" as a run id that "must be 1-128 letters, digits,
    '-' or '_'", as if a run had gone wrong. Only folders are run ids; a
    folder whose name is not one is still listed."""
    _need_chromium()
    out = _run(tmp_path, _rows(False)[7:8], "metrics: [exact_match]\n")
    for name in (".DS_Store", "README.md"):
        (Path(out) / "runs" / name).write_text("not a run\n")
    (Path(out) / "runs" / "my run").mkdir()
    [listed, runs] = _shown(out, "", tmp_path / "runs.png",
                            "Array.from(document.querySelectorAll('li')).map(li => li.innerText)",
                            "Array.from(document.querySelectorAll('table a'))"
                            ".map(a => a.innerText)")
    assert runs == ["r", "report"], runs
    assert len(listed) == 1 and listed[0].startswith("run id 'my run' must be"), listed


def test_the_report_is_the_committed_attempts_after_a_kill_at_the_commit(tmp_path):
    """A run's report.html is staged as report.<attempt>.html and renamed after
    the completion marker is written; a run killed between the two (kill -9, a
    crashed machine) leaves the marker naming the new attempt and report.html
    the earlier attempt's until the id runs again. The viewer served that
    report.html beside the new attempt's tables; it now serves the committed
    attempt's report, still staged or not."""
    _need_chromium()
    out = _run(tmp_path, _rows(False)[7:9], "metrics: [exact_match]\n")
    run_dir = Path(out) / "runs" / "r"
    attempt = json.loads((run_dir / "manifest.json").read_text())["attempt"]
    (run_dir / "report.html").rename(run_dir / f"report.{attempt}.html")
    (run_dir / "report.html").write_text("<html><body><h1>evalbeam run r</h1>"
                                         "<p>an earlier attempt</p></body></html>")
    [shown] = _shown(out, "run/r/report.html", tmp_path / "report.png",
                     "document.documentElement.outerHTML")
    assert "an earlier attempt" not in shown and "results/ (2 rows)" in shown, shown[-600:]


def test_a_bots_long_details_are_all_on_its_case_page(tmp_path):
    """A case page showed a bot's details as one line cut at 600 characters,
    with no "…": a FAQ bot that matched a 2,000-character FAQ question showed a
    third of it, and nothing else on any page of the viewer showed the rest.
    They open as a metric's details do: their start on one line, all of them
    in a block that opens."""
    _need_chromium()
    long_question = "What is the refund policy for " + "an order shipped abroad " * 85 + "?"
    write_cases(str(tmp_path / "faq.parquet"), [{"question": long_question,
                                                 "answer": "Thirty days."}])
    rows = [{"case_id": "c", "question": long_question, "expected_answer": "Thirty days."}]
    out = _run(tmp_path, rows, "bots: [{name: faq, type: faq_match, faq: faq.parquet}]\n"
                               "metrics: [exact_match]\n")
    with _serving(out) as server, browser.Browser(width=1280, loopback=True) as b:
        page = b.open(server.url + "run/r/case/c")
        (tmp_path / "case.png").write_bytes(page.png)
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        shown = page.evaluate(  # what follows the bot's heading
            "(h => { let t = ''; for (let e = h.nextElementSibling; e; e = e.nextElementSibling)"
            " t += e.innerText + '\\n'; return t; })(Array.from(document.querySelectorAll('h2'))"
            ".find(h => h.innerText.startsWith('faq:')))")
    assert len(long_question) > 2000
    assert json.dumps(long_question) in shown or long_question in shown, shown[-800:]


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory) -> tuple[str, list[str]]:
    """Three more runs than the viewer keeps open, of three cases each (read
    only: each test serves them with a viewer of its own)."""
    from pipeline.viewer.data import CACHED_RUNS
    tmp = tmp_path_factory.mktemp("many")
    runs = [f"r{i}" for i in range(CACHED_RUNS + 3)]
    for run_id in runs:
        out = _run(tmp, _rows(False)[7:10], "metrics: [exact_match]\n", run_id=run_id)
    return out, runs


def test_more_runs_than_it_keeps_open_at_once_never_fail_a_page(many_runs):
    """The viewer keeps the last four runs opened; a fifth opened while a page
    of an older one was being made (browser tabs opened together, two people
    on one viewer) dropped the tables that page was reading: about a quarter
    of 300 requests over seven runs from eight threads were 500s ("Table with
    name run1_h does not exist!"). A run put aside is now dropped only once no
    page (nor the background search build) is using the catalog."""
    import concurrent.futures
    import random
    out, runs = many_runs

    def one(i: int) -> tuple[int, str, str]:
        pick = random.Random(i)
        a, b = pick.sample(runs, 2)
        path = pick.choice([f"/run/{a}", f"/run/{a}?q=plan", f"/compare?a={a}&b={b}",
                            f"/run/{a}?metric=exact_match&min=0", f"/run/{a}/case/case-008"])
        status, _, body = _get(server, path)
        return status, path, body[body.find("<h1>"):][:200]

    with _serving(out) as server, concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, range(300)))
    failed = [a for a in answers if a[0] != 200]
    assert failed == [], (len(failed), failed[:3])


def test_one_comparison_opened_in_many_tabs_at_once_builds_once(many_runs):
    """Eight requests for the same two runs' comparison arriving together each
    found the pair not built yet and all created its table at once: DuckDB
    refused all but one ("Catalog write-write conflict on create with
    pair_run1_run0"), a 500 (seen once in 300 requests of the test above)."""
    import concurrent.futures
    import threading
    out, runs = many_runs[0], many_runs[1][:4]  # a viewer of its own: no pair built yet
    pairs = [(a, b) for a in runs for b in runs if a != b][:6]
    with _serving(out) as server, concurrent.futures.ThreadPoolExecutor(8) as pool:
        for run_id in runs:  # each run opened first: only the pair is left to build
            assert _get(server, f"/run/{run_id}")[0] == 200
        for a, b in pairs:
            start = threading.Barrier(8)

            def one(_: int, a=a, b=b, start=start) -> tuple[int, str]:
                start.wait()
                status, _, body = _get(server, f"/compare?a={a}&b={b}")
                return status, body[body.find("<h1>"):][:200]

            failed = [s for s in pool.map(one, range(8)) if s[0] != 200]
            assert failed == [], (a, b, failed[:2])


def test_a_run_with_a_listed_file_gone_is_not_listed_as_readable(tmp_path):
    """A run whose results/ file was deleted after its commit (a clean-up, a
    partial copy) was listed with 'counts reconcile: yes' and a link, and the
    link led to a page headed "400" (a bad request: the request was fine). The
    runs list now names it under "Not shown" with the reason, beside the good
    run, and its page is a 409 headed "This run cannot be read"."""
    out = _run(tmp_path, _rows(False)[7:9], "metrics: [exact_match]\n")
    _run(tmp_path, _rows(False)[7:9], "metrics: [exact_match]\n", run_id="damaged")
    with open(os.path.join(out, "runs", "damaged", "manifest.json"), encoding="utf-8") as fh:
        gone = os.path.join(out, json.load(fh)["files"]["results"][0])
    os.remove(gone)
    with _serving(out) as server:
        status, _, body = _get(server, "/")
        page = _get(server, "/run/damaged")
        good = _get(server, "/run/r")
    assert status == 200
    listed = re.findall(r'<a href="/run/([^"/]+)">', body)
    assert listed == ["r"], listed
    shown = html.unescape(re.search(r"<h2>Not shown</h2><ul>(.*)</ul>", body).group(1))
    assert f"run 'damaged': its completion marker lists the results/ file {gone}, which " \
           "is missing" in shown, shown
    assert page[0] == 409 and "<h1>This run cannot be read</h1>" in page[2]
    assert "which is missing" in html.unescape(page[2]) and good[0] == 200


def test_the_runs_list_reads_a_runs_footers_again_only_once_it_changed(tmp_path, monkeypatch):
    """Every load of the runs list of a local folder read every listed file's
    end and Parquet footer again (0.6 s of CPU a load for 300 runs of a
    nightly job, 1,500 footers). Each run is now checked once per committed
    state (its attempt, and a stat of each listed file): a second load reads no
    footer, and a file deleted or cut short after the first load still shows
    its run under "Not shown" on the next one, with only the changed runs
    read again; concurrent loads say the same."""
    import concurrent.futures
    from transforms.publish import completed
    read: list[str] = []
    read_tail = completed._read_tail  # each listed file's end and footer: one read
    monkeypatch.setattr(completed, "_read_tail", lambda p: read.append(p) or read_tail(p))
    for run_id in ("a", "b", "c"):
        out = _run(tmp_path, _rows(False)[7:9], "metrics: [exact_match]\n", run_id=run_id)
    listed = {}
    for run_id in ("a", "b", "c"):
        with open(os.path.join(out, "runs", run_id, "manifest.json"), encoding="utf-8") as fh:
            listed[run_id] = {t: [os.path.join(out, p) for p in ps]
                              for t, ps in json.load(fh)["files"].items()}

    def runs_list(server) -> tuple[list[str], str]:
        status, _, body = _get(server, "/")
        assert status == 200
        shown = re.search(r"<h2>Not shown</h2><ul>(.*?)</ul>", body)
        return (re.findall(r'<a href="/run/([^"/]+)">', body),
                html.unescape(shown.group(1)) if shown else "")

    with _serving(out) as server:
        assert sorted(runs_list(server)[0]) == ["a", "b", "c"]
        every = {p for files in listed.values() for ps in files.values() for p in ps}
        assert set(read) == every  # the first load checks every listed file
        read.clear()
        assert sorted(runs_list(server)[0]) == ["a", "b", "c"]
        assert read == []  # the second reads none
        gone = listed["b"]["results"][0]
        os.remove(gone)
        cut = listed["c"]["scores"][0]
        with open(cut, "r+b") as fh:
            fh.truncate(os.path.getsize(cut) // 2)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            loads = list(pool.map(lambda _: runs_list(server), range(4)))
        assert read and not set(read) & {p for ps in listed["a"].values() for p in ps}, read
        read.clear()
        loads.append(runs_list(server))
        assert read == []  # damaged and unchanged since: not read again either
    for links, shown in loads:
        assert links == ["a"], links
        assert f"its completion marker lists the results/ file {gone}, which is missing" \
            in shown, shown
        assert f"the scores/ file {cut}, which is not a whole Parquet file" in shown, shown


def test_the_runs_list_reads_a_runs_marker_again_only_once_it_changed(tmp_path, monkeypatch):
    """Every load of the runs list of a local folder read and parsed every
    run's completion marker again (2.4 s of CPU a load for 3,000 runs, 75% of
    it the markers), though none had changed. A marker is now read once per
    stat (inode, size, mtime, ctime): a second load reads none, and a re-run's
    new marker, a marker deleted, one rewritten in place with the same size
    and its mtime put back, and a damaged one are each seen on the next load,
    with only the changed markers read; a new attempt starting is still
    seen; concurrent loads say the same."""
    import concurrent.futures
    from transforms.publish import completed
    from transforms.publish import lease as leases
    from transforms.publish.report import finished_text
    from pipeline.viewer import data
    read: list[str] = []  # the run ids whose marker was read, and "lease <id>" by the list
    read_bytes, read_lease = completed._read_manifest_bytes, data.read_lease
    monkeypatch.setattr(completed, "_read_manifest_bytes",
                        lambda output, run_id: read.append(run_id) or read_bytes(output, run_id))
    monkeypatch.setattr(data, "read_lease", lambda output, run_id: read.append(
        f"lease {run_id}") or read_lease(output, run_id))
    for run_id in ("a", "b", "c"):
        out = _run(tmp_path, _rows(False)[7:9], "metrics: [exact_match]\n", run_id=run_id)
    marker = {r: os.path.join(out, "runs", r, "manifest.json") for r in ("a", "b", "c")}
    read.clear()  # the runs' own reads

    def runs_list(server) -> tuple[dict[str, list[str]], str]:
        status, _, body = _get(server, "/")
        assert status == 200
        shown = re.search(r"<h2>Not shown</h2><ul>(.*?)</ul>", body)
        rows = {re.search(r'<a href="/run/([^"/]+)">', tr).group(1):
                [html.unescape(re.sub(r"<[^>]+>", "", td)) for td in re.findall(
                    r"<td[^>]*>(.*?)</td>", tr)]
                for tr in re.findall(r"<tr>(.*?)</tr>", body) if '<a href="/run/' in tr}
        return rows, html.unescape(shown.group(1)) if shown else ""

    with _serving(out) as server:
        first, _ = runs_list(server)
        assert sorted(first) == ["a", "b", "c"] and sorted(
            r for r in read if not r.startswith("lease")) == ["a", "b", "c"], read
        read.clear()
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            loads = list(pool.map(lambda _: runs_list(server), range(4)))
        assert read == []  # unchanged: no marker (or lease) read again, by any of the loads
        assert all(load == (first, "") for load in loads), loads

        _run(tmp_path, _rows(False)[7:10], "metrics: [exact_match]\n", run_id="a")  # a re-run
        os.remove(marker["b"])
        old = os.stat(marker["c"])
        with open(marker["c"], "r+b") as fh:  # in place, same size, its mtime put back
            data = fh.read()
            finished = json.loads(data)["finished_at"]
            later = finished[:11] + ("00" if finished[11:13] != "00" else "01") + finished[13:]
            fh.seek(0)
            fh.write(data.replace(finished.encode(), later.encode()))
        os.utime(marker["c"], ns=(old.st_atime_ns, old.st_mtime_ns))
        now = os.stat(marker["c"])
        assert (now.st_ino, now.st_size, now.st_mtime_ns) == (
            old.st_ino, old.st_size, old.st_mtime_ns) and now.st_ctime_ns != old.st_ctime_ns
        read.clear()
        changed, shown = runs_list(server)
        assert sorted(set(read)) == ["a", "b", "c"], read  # only the changed markers
        assert sorted(changed) == ["a", "c"] and changed["a"][4] == "3", changed  # 3 cases now
        assert changed["c"][2] == finished_text({"finished_at": later}), changed["c"]
        assert "run b has no completed attempt" in shown, shown
        read.clear()
        assert runs_list(server) == (changed, shown) and set(read) == {"b"}  # b: no marker

        with open(marker["c"], "r+b") as fh:  # damaged: the same size, not JSON
            fh.write(b"\x00")
        read.clear()
        damaged = runs_list(server)
        assert set(read) == {"b", "c"} and sorted(damaged[0]) == ["a"], (read, damaged)
        assert "run c: corrupt manifest" in damaged[1] and "not JSON" in damaged[1], damaged
        read.clear()
        assert runs_list(server) == damaged and set(read) == {"b"}  # c: damaged, unchanged

        with open(marker["a"], encoding="utf-8") as fh:
            attempt = json.load(fh)["attempt"]
        lease, _ = leases.acquire(out, leases.new_lease("a", "f" * 12, 300, True),
                                  lambda: attempt)
        for state, said in (("running", "a new attempt is running"),
                            ("failed", "a later attempt failed")):
            if state == "failed":
                leases.mark_failed(out, lease, "RuntimeError: the bot endpoint was unreachable")
            read.clear()
            again, _ = runs_list(server)  # the lease, once (and its status, on each load)
            assert read.count("lease a") == 1 and said in again["a"][2], (read, again)
            read.clear()
            assert runs_list(server)[0] == again and "lease a" not in read, read
