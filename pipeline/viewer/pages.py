"""The viewer's pages: plain HTML with forms and links, no script.

Every text from the data (case ids, questions, answers, contexts, reasons,
details, suite and bot names) is shown through `text()`: control characters
and bidirectional overrides become visible escapes, then HTML is escaped.
Links carry user values percent-encoded (`link()`), and the server's
Content-Security-Policy forbids scripts anyway.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence
from urllib.parse import quote, urlencode

from pipeline.viewer.data import SIDE_TEXT, SORTS
from schemas.tables import VERDICT_ORDER
from transforms.decide.cascade import BY_ESCALATION, ESCALATION_FAILED, OFFLINE
from transforms.publish.html import (STACK, Raw, breakable, cell, direction, esc, page,
                                     scrolling)
from transforms.publish.report import escape_controls, finished_text
from transforms.text.wording import counted

STYLE = """
nav{margin-bottom:1rem;font-size:.9rem}nav a{margin-right:1rem}
form.filters{display:flex;flex-wrap:wrap;gap:.6rem;align-items:flex-end;margin:.8rem 0;
padding:.6rem;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px}
form.filters label{display:flex;flex-direction:column;font-size:.8rem;color:#57606a;
max-width:100%;min-width:0}
form.filters input,form.filters select{font-size:.9rem;padding:.2rem;max-width:100%}
input.num{width:5rem}input.search{width:16rem}
.pager{margin:.8rem 0}.pager a,.pager span{margin-right:.8rem}
.v-PASS{color:#1a7f37;font-weight:600}.v-WARN{color:#9a6700;font-weight:600}
.v-FAIL{color:#cf222e;font-weight:600}.v-ERROR{color:#6e7781;font-weight:600}
.answer{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.5rem;
border-radius:6px;border:1px solid #d0d7de;max-width:70rem}
pre.details{white-space:pre-wrap;word-break:break-word;font-size:.8rem;margin:0;max-width:40rem}
table.cases td:first-child,table.side td:first-child{min-width:6.5rem;overflow-wrap:anywhere}
table.cases td:nth-child(2),table.cases td:nth-child(3),table.side td:nth-child(2),
table.side td:nth-child(3){min-width:5rem;max-width:12rem;overflow-wrap:anywhere}
.empty{color:#57606a;font-style:italic}
p.note{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:.5rem}
"""


def text(value: Any) -> str:
    """Untrusted text for the page: controls made visible, HTML escaped."""
    if value is None:
        return "–"
    return esc(escape_controls(str(value)))


def cell_text(value: Any) -> str:
    """text(value) for a table cell: a long unbroken run (a URL) may wrap (breakable)."""
    return "–" if value is None else breakable(escape_controls(str(value)))


def clip(value: Any, limit: int) -> str:
    s = "" if value is None else str(value)
    return s if len(s) <= limit else s[:limit - 1] + "…"


def link(path: str, label: Any, params: Mapping[str, Any] | None = None,
         anchor: str | None = None) -> Raw:
    """A link to one of the viewer's paths (parts already quoted by url())."""
    href = path + ("?" + urlencode(params) if params else "") + (f"#{anchor}" if anchor else "")
    return Raw(f'<a href="{esc(href)}">{text(label)}</a>')


def url(*parts: str) -> str:
    """/a/b/c with each part percent-encoded (a case id may hold '/', '?', '#')."""
    return "/" + "/".join(quote(p, safe="") for p in parts)


def verdict(v: Any) -> Raw:
    cls = f"v-{v}" if v in VERDICT_ORDER else ""
    return Raw(f'<span class="{cls}">{text(v)}</span>')


def grid(headers: Sequence[str], rows: Iterable[Sequence[Any]], cls: str = "",
         stack: bool = False) -> Raw:
    """A table whose cells are Raw HTML (already escaped) or text. stack: on a
    phone, one card per row, each cell labelled with its heading."""
    head = "".join(f"<th>{text(h)}</th>" for h in headers)
    labels = [text(h) if stack else None for h in headers]
    body = "".join("<tr>" + "".join(cell(c if isinstance(c, Raw) else cell_text(c), label)
                                    for label, c in zip(labels, row, strict=True)) + "</tr>"
                   for row in rows)
    classes = " ".join(c for c in (cls, STACK if stack else "") if c)
    return scrolling(f'<table class="{esc(classes)}"><thead><tr>{head}</tr></thead>'
                     f"<tbody>{body}</tbody></table>")


def listed(headers: Sequence[str], rows: Sequence[Sequence[Any]], cls: str, f,
           nothing: str) -> Raw:
    """A page's rows as a table, or, when there are none, a sentence that says
    why (a table of headings only read as a page that failed to load)."""
    if rows:
        return grid(headers, rows, cls, stack=True)
    why = "No row matches these filters." if f.params() else f"No rows: {nothing}."
    return Raw(f'<p class="empty {esc(cls)}-none">{text(why)}</p>')


def viewer_page(title: str, parts: Sequence[Any]) -> bytes:
    nav = Raw('<nav><a href="/">All runs</a></nav>')
    html = page(f"{title} · evalbeam view", [Raw(f"<style>{STYLE}</style>"), nav, *parts])
    return html.encode("utf-8")


def _select(name: str, label: str, options: Sequence[str] | Mapping[str, str],
            chosen: str | None, empty: str = "any") -> str:
    """A menu; options: the values, or value -> what it shows."""
    shown = options if isinstance(options, Mapping) else {o: o for o in options}
    opts = [f'<option value="">{esc(empty)}</option>'] + [
        f'<option value="{esc(o)}"{" selected" if o == chosen else ""}>{text(t)}</option>'
        for o, t in shown.items()]
    return f'<label>{esc(label)}<select name="{esc(name)}">{"".join(opts)}</select></label>'


def _input(name: str, label: str, value: Any, cls: str, kind: str = "text") -> str:
    shown = "" if value is None else esc(str(value))
    step = ' step="any"' if kind == "number" else ""
    return (f'<label>{esc(label)}<input type="{kind}"{step} class="{cls}" name="{esc(name)}" '
            f'value="{shown}"></label>')


def filter_form(action: str, f, bots: Sequence[str], suites: Sequence[str],
                metrics: Sequence[str], hidden: Mapping[str, str] | None = None,
                changed: bool | None = None, sorts: Mapping[str, str] | None = None) -> Raw:
    """The explorer's filters as a GET form (bookmarkable URLs); sorts: the
    orders of the chosen metric's value the rows may be listed in."""
    fields = [f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">'
              for k, v in (hidden or {}).items()]
    fields += [_select("bot", "bot", bots, f.bot), _select("suite", "suite", suites, f.suite),
               _select("verdict", "verdict", VERDICT_ORDER, f.verdict),
               _select("metric", "metric", metrics, f.metric, "—"),
               _input("min", "value ≥", f.low, "num", "number"),
               _input("max", "value ≤", f.high, "num", "number"),
               _input("q", "text (case id, question, reference, answer)", f.text, "search")]
    if sorts:
        fields.append(_select("sort", "sort by the metric", sorts, f.sort, "case order"))
    if changed is not None:
        fields.append(f'<label>verdict or answer changed<input type="checkbox" name="changed" '
                      f'value="1"{" checked" if changed else ""}></label>')
    fields.append('<button type="submit">Filter</button>')
    fields.append(f'<a href="{esc(action)}">clear</a>')
    return Raw(f'<form class="filters" method="get" action="{esc(action)}">'
               + "".join(fields) + "</form>")


def pager(path: str, params: Mapping[str, str], page_: int, pages: int, total: int,
          size: int, key: str = "page", anchor: str | None = None) -> Raw:
    """Where a page is in its rows, with links to the pages before and after
    (key: the page's parameter; anchor: the part of the page the links go to)."""
    first = (page_ - 1) * size + 1 if total else 0
    last = min(total, page_ * size)
    parts = [f"<span>{first:,}–{last:,} of {total:,}</span>"]
    if page_ > 1:
        parts.append(link(path, "← previous", {**params, key: page_ - 1}, anchor))
    if page_ < pages:
        parts.append(link(path, "next →", {**params, key: page_ + 1}, anchor))
    parts.append(f"<span>page {page_:,} of {pages:,}</span>")
    return Raw('<div class="pager">' + "".join(parts) + "</div>")


def details_block(value: Any) -> Raw:
    """A metric's details (JSON): its start on one line, all of it indented
    in a block that opens."""
    if value in (None, {}, ""):
        return Raw("–")
    if isinstance(value, str):
        short, full = value, value
    else:
        short = json.dumps(value, ensure_ascii=False, default=str)
        full = json.dumps(value, indent=1, ensure_ascii=False, default=str)
    return Raw(f'<details><summary>{text(clip(short, 110))}</summary>'
               f'<pre class="details">{text(full)}</pre></details>')


def box(inner: str) -> Raw:
    """A text (HTML already escaped) in a box, right to left when it starts so."""
    return Raw(f'<div class="answer"{direction(inner)}>{inner}</div>')


def empty_answer(value: Any) -> bool:
    """An answer that is there but shows nothing (blank: a cell would look unfilled)."""
    return value is not None and str(value).strip() == ""


def answer_box(value: Any, limit: int | None = None) -> Raw:
    """A bot's answer in a box; an empty or missing one says so."""
    if value is None or empty_answer(value):
        label = "(no answer)" if value is None else "(empty answer)"
        return Raw(f'<div class="answer empty">{label}</div>')
    shown = clip(value, limit) if limit else value
    return box(text(shown))


def number(x: Any) -> str:
    return "–" if x is None else f"{x:.4g}" if isinstance(x, float) else str(x)


# a finished run id's newer attempt (a re-run), as the runs list says it
AGAIN = {"running": "a new attempt is running", "failed": "a later attempt failed"}


def runs_list(runs: list[dict], problems: list[str], output: str) -> bytes:
    rows = []
    for m in runs:
        c = m.get("counts", {})
        rid = m["run_id"]
        ok = (m.get("reconciliation") or {}).get("ok")
        again = m.get("newer_attempt")
        finished = finished_text(m) + ("" if again is None else f" · {AGAIN[again.state]}")
        rows.append([link(url("run", rid), rid), m.get("run_date"), finished,
                     ", ".join(m.get("bots", [])), f"{c.get('valid_cases', 0):,}",
                     f"{c.get('invalid_rows', 0):,}", f"{c.get('errors_rows', 0):,}",
                     None if ok is None else "yes" if ok else "NO", len(m.get("metrics", [])),
                     link(url("run", rid, "report.html"), "report")])
    parts: list[Any] = [Raw(f"<h1>Runs in {text(output)}</h1>")]
    if rows:
        parts.append(grid(["run", "run date", "finished", "bots", "cases", "invalid rows",
                           "errors/ rows", "counts reconcile", "metrics", "report"], rows,
                          stack=True))
        ids = [m["run_id"] for m in runs]
        options = "".join(f'<option value="{esc(i)}">{text(i)}</option>' for i in ids)
        second = "".join(f'<option value="{esc(i)}"{" selected" if n == 1 else ""}>'
                         f"{text(i)}</option>" for n, i in enumerate(ids))
        parts.append(Raw("<h2>Two runs side by side</h2>"
                         '<form class="filters" method="get" action="/compare">'
                         f'<label>run A<select name="a">{options}</select></label>'
                         f'<label>run B<select name="b">{second}</select></label>'
                         '<button type="submit">Show</button></form>'))
    else:
        parts.append(Raw("<p>No finished run in this folder yet.</p>"))
    if problems:
        parts.append(Raw("<h2>Not shown</h2><ul>" + "".join(f"<li>{text(p)}</li>"
                                                         for p in problems) + "</ul>"))
    return viewer_page("Runs", parts)


def run_counts(run) -> Raw:
    """What the run read and wrote, as the report's first lines say it: input
    rows, valid and invalid, the rows listed below, the errors/ rows, and
    whether the counts reconcile (an invalid input row is in no verdict count)."""
    c, bots = run.counts, len(run.bots)
    n = c.get("errors_rows", 0)
    errors = (f'<a href="#errors">{counted(n, "row")} in errors/</a>' if n
              else "no row in errors/")
    ok = (run.manifest.get("reconciliation") or {}).get("ok")
    badge = ("" if ok is None else f' · counts reconcile: <span class="badge '
             f'{"pass" if ok else "fail"}">{"yes" if ok else "NO"}</span>')
    return Raw(f"<p>{counted(c.get('input_rows', 0), 'input row')}: "
               f"{c.get('valid_cases', 0):,} valid, {c.get('invalid_rows', 0):,} invalid · "
               f"{counted(c.get('valid_cases', 0), 'case')} × {counted(bots, 'bot')} = "
               f"{counted(c.get('results_rows', 0), 'results row')} · "
               f"{errors}{badge}</p>")


def errors_section(rid: str, errors, params: Mapping[str, str], size: int) -> list[Any]:
    """The run's errors/ rows with their reasons, a page at a time (its own
    page number, errors_page=, beside the explorer's filters)."""
    if not errors.total:
        return []
    shown = [[r["stage"], link(url("run", rid, "case", r["case_id"]), r["case_id"])
              if r.get("bot") and r.get("case_id") is not None else r.get("case_id"),
              r.get("bot"), r.get("error_type"), r.get("message")] for r in errors.rows]
    parts = [Raw(f"<h2 id=\"errors\">errors/ ({counted(errors.total, 'row')})"
                 "</h2>"),
             grid(["stage", "case", "bot", "error type", "message"], shown, "errors", stack=True)]
    if errors.pages > 1:
        parts.insert(1, pager(url("run", rid), params, errors.page, errors.pages, errors.total,
                              size, key="errors_page", anchor="errors"))
        parts.append(pager(url("run", rid), params, errors.page, errors.pages, errors.total,
                           size, key="errors_page", anchor="errors"))
    return parts


def newer_note(run, again) -> list[Any]:
    """A re-run's state above the earlier attempt's tables that are shown
    (again: the newer attempt's status, None without one)."""
    if again is None:
        return []
    return [Raw(f'<p class="note">{text(again.line)} · shown: attempt {text(run.attempt)}, '
                f"finished {text(finished_text(run.manifest))}</p>")]


def explorer(loaded, f, result, counts: Mapping[str, Mapping[str, int]], size: int,
             errors=None, again=None) -> bytes:
    """One run's case explorer; errors: the page of its errors/ rows shown;
    again: the status of a newer attempt of the run id (a re-run)."""
    run = loaded.run
    rid = run.run_id
    path = url("run", rid)
    summary = grid(["bot", *VERDICT_ORDER], [[b, *(f"{v.get(k, 0):,}" for k in VERDICT_ORDER)]
                                             for b, v in counts.items()])
    rows = []
    for r in result.rows:
        row = [Raw(f'<span class="case">{link(url("run", rid, "case", r["case_id"]), r["case_id"])}'
                   "</span>"), r["bot"], r["suite"], verdict(r["verdict"]),
               clip(r["verdict_reason"], 160), clip(r["question"], 160),
               Raw('<span class="empty">(empty answer)</span>') if empty_answer(r["answer"])
               else clip(r["answer"], 200)]
        if f.metric:
            row.append(number(r["value"]))
        rows.append(row)
    headers = ["case", "bot", "suite", "verdict", "reason", "question", "answer"]
    if f.metric:
        headers.append(f.metric)
    parts = [Raw(f"<h1>Run {text(rid)}</h1>"), *newer_note(run, again),
             Raw(f'<p class="muted">run date {text(run.run_date)} · '
                 f'finished {text(finished_text(run.manifest))} · '
                 f'bots {text(", ".join(run.bots))} · input {text(run.manifest.get("input"))} · '
                 f'{link(url("run", rid, "report.html"), "report")}</p>'),
             run_counts(run),
             summary,
             filter_form(path, f, loaded.bots, loaded.suites, loaded.metrics, sorts=SORTS),
             pager(path, f.params(), result.page, result.pages, result.total, size),
             listed(headers, rows, "cases", f, "this run has no results rows "
                    "(nothing was evaluated: the reasons are in errors/)"),
             pager(path, f.params(), result.page, result.pages, result.total, size),
             *(errors_section(rid, errors, {**f.params(), **({"page": str(result.page)}
                                                             if result.page > 1 else {})}, size)
               if errors is not None else [])]
    return viewer_page(f"Run {rid}", parts)


def _case_inputs(case: Mapping[str, Any]) -> list[Any]:
    """The conversation before the question, the question, the references and
    the contexts of one case (or of one occurrence of a repeated case id)."""
    parts: list[Any] = []
    messages = case.get("messages")
    if isinstance(messages, str):  # a results/ row holds them as JSON text
        messages = _json_list(messages)
    if messages:
        parts.append(Raw("<h2>Conversation before the question</h2>"))
        parts.append(grid(["role", "content"], [[m.get("role"), m.get("content")]
                                                for m in messages if isinstance(m, dict)]))
    parts += [Raw("<h2>Question</h2>"), box(text(case["question"]))]
    refs = case.get("references") or ([case["expected_answer"]]
                                      if case.get("expected_answer") is not None else [])
    parts.append(Raw("<h2>Reference</h2>"))
    parts += [box(text(r)) for r in refs] or [
        Raw("<p>None given.</p>")]
    contexts = case.get("contexts") or []
    parts.append(Raw(f"<h2>Contexts ({len(contexts)})</h2>"))
    parts += [box(f"<b>[{i}]</b> {text(c)}")
              for i, c in enumerate(contexts, 1)] or [Raw("<p>None.</p>")]
    return parts


def _json_list(value: str) -> list | None:
    try:
        out = json.loads(value)
    except ValueError:
        return None
    return out if isinstance(out, list) else None


# results/ decided_by (judge.escalate: undecided): which stage of the cascade decided
DECIDED_BY = {OFFLINE: "the offline rules (the cascade's first stage)",
              BY_ESCALATION: "the escalation rules on the judge's and classifier's metrics "
                             "(the cascade's second stage)",
              ESCALATION_FAILED: "neither stage: it was escalated, but none of the judge's or "
                                 "classifier's metrics could be computed, so its offline WARN "
                                 "stands (the reason says why)"}


def decided_by(value: Any) -> str:
    """' · decided by ...' for a row of a cascade run; '' without one."""
    return "" if value is None else " · decided by " + text(DECIDED_BY.get(value, value))


_INPUT_FIELDS = ("question", "expected_answer", "references", "contexts", "messages")


def case_page(loaded, case: Mapping[str, Any]) -> bytes:
    rid = loaded.run.run_id
    parts: list[Any] = [
        Raw(f"<h1>Case {text(case['case_id'])}</h1>"),
        Raw(f'<p class="muted">run {link(url("run", rid), rid)} · suite {text(case["suite"])}'
            f'{" · tags " + text(", ".join(case["tags"])) if case.get("tags") else ""}'
            f'{" · label " + text(case["label"]) if case.get("label") else ""}</p>')]
    answers = case["answers"]
    if case["repeated"]:
        parts.append(Raw("<p><b>This case id appears more than once in the input</b>: every "
                         "occurrence is shown, each with its own inputs where they differ. "
                         "scores/ does not tell the occurrences apart, so each bot's metrics "
                         "are listed once, after its answers, for all of them together.</p>"))
    parts += _case_inputs(case)
    first = answers[0] if answers else {}
    per_bot = Counter(a["bot"] for a in answers)
    seen: Counter = Counter()
    for a in answers:
        seen[a["bot"]] += 1
        if case["repeated"] and any(a.get(k) != first.get(k) for k in _INPUT_FIELDS):
            parts.append(Raw(f"<h2>{text(a['bot'])}, occurrence {seen[a['bot']]} of "
                             f"{per_bot[a['bot']]}: its inputs</h2>"))
            parts += _case_inputs(a)
        parts.append(Raw(f"<h2>{text(a['bot'])}: {verdict(a['verdict'])}</h2>"))
        parts.append(Raw(f"<p>{text(a.get('verdict_reason'))}{decided_by(a.get('decided_by'))}"
                         "</p>"))
        if a.get("error"):
            parts.append(Raw(f"<p><b>Error:</b> {text(a['error'])}</p>"))
        parts.append(answer_box(a.get("answer")))
        bot_details = (f" · bot details: {details_block(a['details'])}" if a.get("details")
                       else "")  # all of them, in a block that opens, as a metric's
        parts.append(Raw(f'<div class="muted small">latency {number(a.get("latency_ms"))} ms'
                         f"{bot_details}</div>"))
        if seen[a["bot"]] < per_bot[a["bot"]]:
            continue  # a repeated id: the bot's metrics follow its last occurrence
        if per_bot[a["bot"]] > 1:
            parts.append(Raw(f'<p class="muted small">{text(a["bot"])}\'s metrics for the '
                             f"{per_bot[a['bot']]} occurrences together:</p>"))
        parts.append(grid(["metric", "value", "why null", "details"],
                          [[s["metric"], number(s["value"]), s.get("error"),
                            details_block(s.get("details"))] for s in a["scores"]],
                          stack=True))
    return viewer_page(f"Case {case['case_id']}", parts)


def side_answer(rid: str, case_id: str, verdict_: Any, reason: Any, answer: Any) -> Raw:
    """One run's verdict, reason and answer side by side; a cut answer or reason
    ends with "…" and links to the run's case page, where all of it is."""
    cut = any(v is not None and len(str(v)) > n for v, n in ((answer, SIDE_TEXT), (reason, 120)))
    more = link(url("run", rid, "case", case_id), f"all of it, in run {rid}") if cut else ""
    return Raw(f'{verdict(verdict_)}<br>{text(clip(reason, 120))}'
               f'{answer_box(answer, SIDE_TEXT)}{more}')


def side_by_side_page(a, b, f, result, size: int, bots: Sequence[str], suites: Sequence[str],
                      metrics: Sequence[str]) -> bytes:
    ra, rb = a.run.run_id, b.run.run_id
    params = {"a": ra, "b": rb, **f.params()}
    rows = []
    for r in result.rows:
        row = [Raw(f'{link(url("run", ra, "case", r["case_id"]), r["case_id"])}'),
               r["bot"], r["suite"], clip(r["question"], 160),
               side_answer(ra, r["case_id"], r["verdict_a"], r["reason_a"], r["answer_a"]),
               side_answer(rb, r["case_id"], r["verdict_b"], r["reason_b"], r["answer_b"])]
        if f.metric:
            row += [number(r["value_a"]), number(r["value_b"])]
        rows.append(row)
    headers = ["case", "bot", "suite", "question", f"A: {ra}", f"B: {rb}"]
    if f.metric:
        headers += [f"{f.metric} A", f"{f.metric} B"]
    parts = [Raw(f"<h1>{text(ra)} and {text(rb)} side by side</h1>"),
             Raw(f'<p class="muted">cases × bots both runs answered · A: '
                 f'{link(url("run", ra), ra)} · B: {link(url("run", rb), rb)} · the filters '
                 "(and a metric's range and order) apply to B</p>"),
             filter_form("/compare", f, bots, suites, metrics, hidden={"a": ra, "b": rb},
                         changed=f.changed, sorts=SORTS),
             pager("/compare", params, result.page, result.pages, result.total, size),
             listed(headers, rows, "side", f,
                    "the two runs have no case × bot in common"),
             pager("/compare", params, result.page, result.pages, result.total, size)]
    return viewer_page(f"{ra} and {rb}", parts)


def no_case_page(rid: str, case_id: str, found) -> bytes:
    """The 404 of a case id the run has no results row for: why, when errors/
    says it (an invalid input row), and the way back to the run."""
    parts: list[Any] = [Raw(f"<h1>404</h1><p>run {text(rid)} has no case "
                            f"{text(repr(case_id[:200]))}</p>")]
    errors, total = found.rows, found.total
    if total:
        parts.append(Raw(f"<p>errors/ has {counted(total, 'row')} for this "
                         "case id:</p>"))
        parts.append(grid(["stage", "bot", "error type", "message"],
                          [[r["stage"], r.get("bot"), r.get("error_type"), r.get("message")]
                           for r in errors], "errors", stack=True))
    parts.append(Raw(f"<p>{link(url('run', rid), f'Back to run {rid}')} · "
                     f"{link(url('run', rid), 'search the run for it', {'q': case_id[:200]})}"
                     "</p>"))
    return viewer_page("404", parts)


# what an error page's heading says: a bare "400" told a reader nothing
ERROR_HEADINGS = {400: "This page cannot be shown", 404: "Not found",
                  409: "This run cannot be read", 500: "This page failed"}


def error_page(status: int, message: str) -> bytes:
    heading = ERROR_HEADINGS.get(status, "Error")
    return viewer_page(heading, [Raw(f"<h1>{text(heading)}</h1><p>{text(message)}</p>"
                                     f'<p class="muted small">HTTP {status}</p>')])
