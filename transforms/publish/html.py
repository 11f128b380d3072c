"""Self-contained HTML pages: one file, no script, nothing fetched.

Every piece of text from the data (answers, questions, reasons, case ids,
suite and bot names) goes through `esc`; only `Raw` fragments built here are
inserted as HTML. The Content-Security-Policy forbids scripts and every
request (images are data: URIs), so even a bug in escaping could not run an
answer's `<script>` or make the page call out.
"""
from __future__ import annotations

import html
import re
from typing import Any, Iterable, Sequence

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
margin:2rem auto;max-width:1200px;padding:0 1rem;color:#1f2328;line-height:1.45;
overflow-wrap:break-word}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2.2rem;border-bottom:1px solid #d0d7de;
padding-bottom:.3rem}h3{margin-top:1.4rem}.muted{color:#57606a}.small{font-size:.85rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.88rem}
th,td{border:1px solid #d0d7de;padding:.3rem .5rem;vertical-align:top;text-align:left}
td{text-align:start}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.text{max-width:28rem;min-width:7rem;white-space:pre-wrap;overflow-wrap:break-word}
td details{margin:.2rem 0 0}
.better{color:#1a7f37;font-weight:600}.worse{color:#cf222e;font-weight:600}
.badge{display:inline-block;padding:.1rem .5rem;border-radius:1rem;font-weight:600}
.pass{background:#dafbe1;color:#1a7f37}.fail{background:#ffebe9;color:#cf222e}
figure{margin:1rem 0}figcaption{font-size:.85rem;color:#57606a}img.chart{max-width:100%;height:auto}
details{margin:.5rem 0}summary{cursor:pointer}
.wide{overflow-x:auto;max-width:100%}
@media (max-width:40rem){
table.stack,table.stack tbody,table.stack tr{display:block;border:0}
table.stack thead{display:none}
table.stack tr{border:1px solid #d0d7de;border-radius:6px;margin:0 0 .6rem;padding:.3rem .5rem}
table.stack td:nth-child(n){display:block;border:0;padding:.1rem 0;min-width:0;max-width:none;
text-align:start}
table.stack td::before{content:attr(data-label);margin-inline-end:.5rem;font-size:.8rem;
font-weight:600;color:#57606a}
figure .wide img.chart{max-width:none}
td.name{min-width:11rem}
}
"""


# The names column of a table of many bots: in a table wider than a phone a column
# shrinks to its longest word, and a 59-character bot name took 7 lines in every row.
NAMES = "name"

# A table with this class is shown on a phone as one card per row, each cell
# labelled with its column's heading (the cells' data-label, see `cell`).
STACK = "stack"


class Raw(str):
    """HTML built here, inserted as is (never data)."""


def esc(value: Any) -> str:
    """Text (or HTML we built) for the page; None is an en dash."""
    if isinstance(value, Raw):
        return value
    return "–" if value is None else html.escape(str(value), quote=True)


LONG_RUN = 30  # an unbroken run of more characters gets break opportunities (<wbr>)
_LONG = re.compile(r"\S{%d,}" % (LONG_RUN + 1))
# within a long run: after a URL's or a path's separators, else every LONG_RUN characters
_SEP = r"/\\?&=#.,;:_-"  # a URL's, a path's or an id's separators (a break goes after them)
_PIECE = re.compile(r"[^{0}]{{1,{1}}}[{0}]{{0,{1}}}|[{0}]{{1,{1}}}".format(_SEP, LONG_RUN))


def breakable(value: Any) -> str:
    """esc(value) for a table cell, with a break opportunity (<wbr>, which copies
    as nothing) in every unbroken run longer than LONG_RUN characters (a URL, a
    path, an id), so a long word wraps in its column instead of widening it
    (overflow-wrap would break it too, but not narrow the column, and
    overflow-wrap: anywhere changes ordinary cells' widths). Text without such
    a run is exactly esc(value). Only for text between tags, never an attribute
    (an href, a data-label)."""
    if value is None or isinstance(value, Raw):
        return esc(value)
    text, out, at = str(value), [], 0
    for run in _LONG.finditer(text):
        out.append(html.escape(text[at:run.start()], quote=True))
        out.append("<wbr>".join(html.escape(piece, quote=True)
                                for piece in _PIECE.findall(run.group())))
        at = run.end()
    out.append(html.escape(text[at:], quote=True))
    return "".join(out)


# Letters written right to left (Hebrew, Arabic, Syriac, Thaana, N'Ko, ... and
# their presentation forms).
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")


def direction(content: str) -> str:
    """' dir="auto"' for an element whose text holds right-to-left letters (an
    Arabic answer): the browser then lays it out right to left when its first
    letter is, so its full stop ends it on the left and it starts on the right;
    in a left-to-right paragraph the stop stood beside its first word. Other
    text gets nothing (its markup stays as it was)."""
    return ' dir="auto"' if _RTL.search(content) else ""


def isolated(text: str, names: Iterable[str]) -> str:
    """The text with each right-to-left name set apart (Unicode's first-strong
    isolate ... pop isolate, invisible): without it the browser's bidi rules
    pull the numbers and commas beside an Arabic or Hebrew bot name into its
    run, and a count reads as the next bot's. Other names are left as they are."""
    for name in sorted({n for n in names if n and _RTL.search(n)}, key=len, reverse=True):
        text = text.replace(name, f"\u2068{name}\u2069")
    return text


def num(x: float | None, digits: int = 3) -> str:
    """0.292; a value that rounds to zero is 0.000, never -0.000 (float noise
    such as 0.3 - (0.1 + 0.2) read as a negative score)."""
    if x is None:
        return "–"
    return f"{x:.{digits}f}" if round(x, digits) != 0 else f"{0:.{digits}f}"


def p_text(x: float | None) -> str:
    """A p-value: two significant digits, scientific below 1e-4."""
    return "–" if x is None else f"{x:.2g}" if x >= 1e-4 else f"{x:.1e}"


def signed(x: float | None, digits: int = 3) -> str:
    """+0.012; a value that rounds to zero is +0.000 (never -0.000)."""
    if x is None:
        return "–"
    return f"{x:+.{digits}f}" if round(x, digits) != 0 else f"{0:+.{digits}f}"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]],
          numeric: Iterable[int] = (), text: Iterable[int] = (), stack: bool = False,
          names: bool = False) -> Raw:
    """A table; `numeric` and `text` are the column indexes to align right or wrap;
    stack: one card per row on a phone (STACK); names: its first column holds
    names, kept 11rem wide on a phone (NAMES)."""
    numeric, text = set(numeric), set(text)
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, value in enumerate(row):
            cls = ("num" if i in numeric else "text" if i in text else
                   NAMES if names and i == 0 else "")
            cells.append(cell(breakable(value), esc(headers[i]) if stack else None, cls))
        body.append("<tr>" + "".join(cells) + "</tr>")
    opening = f'<table class="{STACK}">' if stack else "<table>"
    return scrolling(f"{opening}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody>"
                     "</table>")


def cell(content: str, label: str | None = None, cls: str = "") -> str:
    """A <td> of HTML content; label (escaped): its column's heading, shown
    beside it when the table is stacked (STACK) on a phone."""
    attrs = (f' class="{cls}"' if cls else "") + (
        f' data-label="{label}"' if label is not None else "") + direction(content)
    return f"<td{attrs}>{content}</td>"


def scrolling(table_html: str) -> Raw:
    """A table in a box that scrolls sideways when the table is wider than the
    page (many bots, long names), so the page itself keeps the window's width."""
    return Raw(f'<div class="wide">{table_html}</div>')


def figure(image: tuple[str | None, str], caption: str) -> Raw:
    """A chart from `charts.render` (data URI or None, alt text / error)."""
    uri, alt = image
    if uri is None:
        return Raw(f'<p class="muted">Chart not drawn: {esc(alt)}</p>')
    # on a phone the chart keeps its own size and scrolls sideways in its box
    # (shrunk to the screen, its labels were 4-5 px high)
    img = f'<img class="chart" src="{uri}" alt="{esc(alt)}">'
    return Raw(f"<figure>{scrolling(img)}<figcaption>{esc(caption)}</figcaption></figure>")


def tag(name: str, content: Any, cls: str | None = None) -> Raw:
    attr = f' class="{esc(cls)}"' if cls else ""
    return Raw(f"<{name}{attr}>{esc(content)}</{name}>")


def page(title: str, parts: Iterable[Any]) -> str:
    """The whole document; parts are Raw fragments or text (escaped)."""
    body = "\n".join(esc(p) for p in parts)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="icon" href="data:,"><title>{esc(title)}</title>'
            f"<style>{_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")
