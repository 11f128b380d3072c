"""The run's manifest (machine-readable) and report.md (for people)."""
from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import re
from typing import Any, Iterable, Mapping, Sequence

from schemas.tables import ALL_SUITES, CALL_ERROR_COUNTS, CALL_ERROR_STAGES, VERDICT_METRIC
from transforms.publish import head_to_head as h2h
from transforms.publish import pass_rate
from transforms.publish.html import num
from transforms.publish.paired import metric_label
from transforms.publish.rows import shortened
from transforms.text.wording import counted

_PACKAGES = ("evalbeam", "apache-beam", "pyarrow", "numpy", "scipy", "sacrebleu", "rouge-score",
             "httpx", "tenacity", "PyYAML")


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def reconcile(counts: Mapping[str, int], n_bots: int, n_metrics: int) -> dict[str, Any]:
    """The checks that prove no row was lost; each states both sides."""
    checks = {
        "input_rows == valid_cases + invalid_rows":
            (counts["input_rows"], counts["valid_cases"] + counts["invalid_rows"]),
        "results_rows == valid_cases × bots":
            (counts["results_rows"], counts["valid_cases"] * n_bots),
        "scores_rows == results_rows × metrics":
            (counts["scores_rows"], counts["results_rows"] * n_metrics),
        "errors_rows == invalid_rows + bot_errors + duplicate_case_ids + "
        + " + ".join(CALL_ERROR_COUNTS):
            (counts["errors_rows"],
             counts["invalid_rows"] + counts["bot_errors"] + counts["duplicate_case_ids"]
             + sum(counts.get(key, 0) for key in CALL_ERROR_COUNTS)),
    }
    return {"ok": all(a == b for a, b in checks.values()),
            "checks": {k: {"left": a, "right": b, "ok": a == b} for k, (a, b) in checks.items()}}


def asking_bots(config: Mapping[str, Any] | None) -> bool:
    """Whether a run's bots ask something for their answers (a chat, http or
    FAQ bot), not only read the answers recorded in the input (`precomputed`)."""
    return any(b.get("type") != "precomputed" for b in (config or {}).get("bots") or [])


def answered_nothing(counts: Mapping[str, int], asking: bool) -> bool:
    """Every case × bot answer is an ERROR and a bot was asked: the bots'
    endpoint down all night, a revoked key. (Recorded answers missing from
    every row are said by their own note: the input has no answers.)"""
    rows = counts.get("results_rows", 0)
    return asking and rows > 0 and counts.get("bot_errors", 0) >= rows


def evaluated_nothing(counts: Mapping[str, int], asking: bool) -> bool:
    """A run that completed but evaluated nothing, so that `evalbeam run` and
    `evalbeam status` exit 6 and evaluate() raises (unless --allow-empty): no
    input row was a valid case, or no bot answered any of them (a nightly job
    whose bot endpoint was down all night must not look green)."""
    return not counts.get("valid_cases") or answered_nothing(counts, asking)


def outcome_notes(counts: Mapping[str, int], asking: bool = False) -> list[str]:
    """Notes that only the finished counts can give: a run with no valid case,
    or whose bots never answered, completes (its tables exist and reconcile),
    but a nightly job that read an empty or wholly invalid file, or whose bot
    endpoint was down, should say so rather than print tables of ERRORs only.
    asking: asking_bots() of the run's config."""
    if answered_nothing(counts, asking) and counts["valid_cases"]:
        rows = counts["results_rows"]
        every = "the 1 answer is an" if rows == 1 else f"all {rows:,} answers are"
        return [f"no bot answered: {every} ERROR, so no metric was computed (the reasons "
                "are in errors/)"]
    if counts["valid_cases"]:
        return []
    if not counts["input_rows"]:
        return ["nothing was evaluated: the input has no rows"]
    return [f"nothing was evaluated: none of the input's {counted(counts['input_rows'], 'row')} "
            "is a valid case (the reasons are in errors/)"]


_SPENT = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "cost")


def _add_spend(into: dict, row: Mapping[str, Any]) -> None:
    for k in _SPENT:
        if row.get(k) is not None:
            into[k] = (into.get(k) or 0) + row[k]
        else:
            into.setdefault(k, None)


def spend_summary(usage: Iterable[Mapping[str, Any]],
                  unreported: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The manifest's `usage` block from usage/ rows: calls, cache hits, tokens
    and cost per metric (calls shared by several metrics split among them,
    `shared` says so) and per bot (answering: the bot's own calls; evaluating:
    the judge's, the classifier's and the embedder's calls for its rows).
    unreported (transforms/remote/usage.py: unreported_by_endpoint): the calls
    per endpoint whose replies had no token counts, so that their 0 tokens and
    cost in usage/ are not taken for free calls (`unreported_tokens`).
    `unpriced`: per endpoint without a price_per_million (its rows' cost is
    null), the calls sent to it: every cost here leaves them out."""
    by_metric: dict[str, dict] = {}
    by_bot: dict[str, dict] = {}
    total: dict[str, Any] = {}
    unpriced: dict[str, dict] = {}
    for row in usage:
        _add_spend(total, row)
        if row.get("cost") is None and row.get("calls"):
            unpriced.setdefault(row["endpoint"], {"calls": 0})["calls"] += row["calls"]
        if row.get("metric") is not None:
            m = by_metric.setdefault(row["metric"], {"shared": False})
            _add_spend(m, row)
            m["shared"] = m["shared"] or (row.get("split_among") or 1) > 1
        bot = row.get("bot") or "(several bots)"
        part = "answering" if str(row.get("purpose", "")).startswith("bot:") else "evaluating"
        _add_spend(by_bot.setdefault(bot, {}).setdefault(part, {}), row)
    out = {"total": total, "by_metric": dict(sorted(by_metric.items())),
           "by_bot": dict(sorted(by_bot.items()))}
    if unreported:
        out["unreported_tokens"] = {e: dict(v) for e, v in unreported.items()}
    if unpriced:
        out["unpriced"] = dict(sorted(unpriced.items()))
    return out


def unpriced_sentence(unpriced: Mapping[str, Mapping[str, Any]], total_cost: float | None
                      ) -> str:
    """What the reports say of calls to endpoints without a price: a total over
    the priced ones must not read as the run's cost."""
    names = ", ".join(f"{e} ({counted(v['calls'], 'call')})" for e, v in unpriced.items())
    if total_cost is None:
        return f"No endpoint called has a price_per_million: {names}."
    return (f"The cost covers the priced endpoints only: no price_per_million for {names}; "
            "the costs per metric and per bot leave their calls out too.")


def unreported_sentence(unreported: Mapping[str, Mapping[str, Any]]) -> str:
    """What the reports say of calls whose replies had no token counts."""
    parts = []
    for endpoint, e in unreported.items():
        estimate = (f"~{e['estimated_prompt_tokens']} prompt tokens"
                    + (f", ~{e['estimated_cost']:.4f}" if e.get("estimated_cost") is not None
                       else ""))
        parts.append(f"{counted(e['calls'], 'call')} (endpoint {endpoint}) reported no token "
                     f"counts: their cost is unknown (estimated {estimate} from prompt length)")
    priced = [e for e in unreported.values() if e.get("estimated_cost") is not None]
    which = ("tokens and cost count" if len(priced) == len(unreported) else
               "tokens count" if not priced else
               "tokens count (and, on the priced endpoints, their cost)")
    return ("; ".join(parts) + f". Their {which} as 0 here and in usage/: "
            "the tokens and costs below are lower bounds.")


def cap_report(caps: Mapping[str, float], usage: Iterable[Mapping[str, Any]],
               refused_by: Mapping[str, int],
               unreported: Mapping[str, Mapping[str, Any]] | None = None,
               unreported_judge_cost: float = 0.0) -> dict[str, Any]:
    """The manifest's `spend_caps`: per configured cap, what the run used, how
    many calls it refused (refused_by: the calls each cap refused; a call
    another cap refused first is not this one's), and whether it was reached
    (a call refused). A token ceiling's use counts the replies without token
    counts at their prompt estimate (unreported), as the ledger that enforced it
    did; judge.max_cost their cost at that estimate (unreported_judge_cost)."""
    usage = list(usage)
    out = {}
    for name, cap in sorted(caps.items()):
        if name.startswith("judge."):
            rows = [r for r in usage if str(r["purpose"]).startswith("judge:")]
            used = (sum(r["calls"] for r in rows) if name == "judge.max_calls"
                    else sum(r["cost"] or 0.0 for r in rows) + unreported_judge_cost)
        else:  # endpoints.<name>.max_tokens_per_run
            endpoint = name.split(".")[1]
            rows = [r for r in usage if r["endpoint"] == endpoint]
            used = sum(r["prompt_tokens"] + r["completion_tokens"] for r in rows) + (
                (unreported or {}).get(endpoint, {}).get("estimated_prompt_tokens", 0))
        refused = refused_by.get(name, 0)
        out[name] = {"cap": cap, "used": used, "refused_calls": refused, "reached": refused > 0}
    return out


def lost_request_lines(requests: Mapping[str, Any] | None) -> list[str]:
    """One sentence when requests were sent by a worker process lost mid-run
    (the manifest's `requests`, from the request journal): the endpoints billed
    them, and usage/ does not count them."""
    if not requests or not requests.get("journal"):
        return []
    lines = []
    lost = {e: v["lost"] for e, v in requests["by_endpoint"].items() if v["lost"]["requests"]}
    if lost:
        where = ", ".join(f"{v['requests']} to {e}" for e, v in lost.items())
        tokens = sum(v["prompt_tokens"] + v["estimated_prompt_tokens"] + v["completion_tokens"]
                     for v in lost.values())
        costs = [v["cost"] for v in lost.values() if v["cost"] is not None]
        cost = f", cost ~{sum(costs):.4f}" if costs else ""
        lines.append(f"Lost with a worker: {counted(requests['lost_requests'], 'request')} "
                     f"({where}) were sent by a worker process lost mid-run and are not in usage/ (~{tokens} "
                     f"tokens{cost}); see the manifest's requests.")
    if not requests.get("ok", True):
        lines.append("The request journal and usage/ disagree: see the manifest's requests.")
    return lines


def cap_lines(caps: Mapping[str, Any], markdown: bool = True) -> list[str]:
    """One sentence per spend cap, for report.md (markdown) and report.html
    (plain text, escaped there): a capped run's null metrics say why on both."""
    code = (lambda s: f"`{s}`") if markdown else str
    strong = (lambda s: f"**{s}**") if markdown else str
    lines = []
    for name, c in caps.items():
        used = f"{c['used']:.4f}" if isinstance(c["used"], float) else str(c["used"])
        state = (f"{strong('reached')}: {counted(c['refused_calls'], 'call')} not sent; "
                 f"their rows' metrics are null with {code('budget reached')}" if c["reached"]
                 else "not reached")
        lines.append(f"Spend cap {code(name)} = {c['cap']:g}: used {used}, {state}.")
    return lines


def _cost(x: float | None) -> str:
    return "–" if x is None else f"{x:.4f}"


SPEND_TITLE = "Remote calls and cost"
SPEND_BY_METRIC = ("metric", "requests", "cache hits", "tokens in / out", "cost")
SPEND_BY_BOT = ("bot", "answering: requests, cost", "evaluating: requests, cost", "total cost")
SPLIT_NOTE = ("* some of its calls served several metrics and are split among them "
              "(usage/ split_among).")


def spend_tables(spend: Mapping[str, Any]
                 ) -> tuple[str, list[list[str]], list[list[str]]] | None:
    """The manifest's spend summary as the reports show it: one sentence, the
    rows per metric (a shared one marked *) and per bot; None without calls."""
    total = spend.get("total") or {}
    if not (total.get("calls") or total.get("cache_hits")):
        return None
    intro = (f"{counted(total.get('calls', 0), 'request')}, "
             f"{total.get('cache_hits', 0):,} answered from the call cache; tokens {total.get('prompt_tokens', 0)} in, "
             f"{total.get('completion_tokens', 0)} out; cost {_cost(total.get('cost'))} "
             "(from price_per_million; – where no price is set).")
    if spend.get("unpriced"):
        intro += " " + unpriced_sentence(spend["unpriced"], total.get("cost"))
    if spend.get("unreported_tokens"):
        intro += " " + unreported_sentence(spend["unreported_tokens"])
    by_metric = [[f"{metric}{' *' if m['shared'] else ''}", str(m.get("calls", 0)),
                  str(m.get("cache_hits", 0)),
                  f"{m.get('prompt_tokens', 0)} / {m.get('completion_tokens', 0)}",
                  _cost(m.get("cost"))] for metric, m in (spend.get("by_metric") or {}).items()]
    by_bot = []
    for bot, parts in spend.get("by_bot", {}).items():
        a, e = parts.get("answering", {}), parts.get("evaluating", {})
        costs = [p.get("cost") for p in (a, e) if p.get("cost") is not None]
        by_bot.append([bot, f"{a.get('calls', 0)}, {_cost(a.get('cost'))}",
                       f"{e.get('calls', 0)}, {_cost(e.get('cost'))}",
                       _cost(sum(costs) if costs else None)])
    return intro, by_metric, by_bot


def _spend_lines(spend: Mapping[str, Any]) -> list[str]:
    """report.md's section on remote calls and what they cost."""
    tables = spend_tables(spend)
    if tables is None:
        return []
    intro, by_metric, by_bot = tables
    lines = ["", f"## {SPEND_TITLE}", "",
             intro.replace("price_per_million", "`price_per_million`")]
    if by_metric:
        lines += ["", *md_table(SPEND_BY_METRIC, by_metric, right=4)[:-1]]
        if any(row[0].endswith(" *") for row in by_metric):
            lines += ["", "\\" + SPLIT_NOTE.replace("split_among", "`split_among`")]
    by_bot = [[md_name(bot), *rest] for bot, *rest in by_bot]
    return lines + ["", *md_table(SPEND_BY_BOT, by_bot, right=3)[:-1]]


# C0 controls but whitespace, DEL, C1 controls; and bidirectional overrides,
# which reorder what a reader sees around them
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """Control characters as visible escapes (ESC -> \\x1b): raw ESC sequences
    from an answer must not reach a terminal or viewer that shows report.md."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)


def finished_text(manifest: Mapping[str, Any]) -> str:
    """When the run finished, for a reader: '2026-11-28 04:42:27 UTC' ('–' unknown)."""
    return str(manifest.get("finished_at") or "–").replace("T", " ").replace("Z", " UTC")


def with_interval(row: Mapping[str, Any], digits: int = 3) -> str:
    """`mean [ci_low, ci_high]`, the interval left out where there is none."""
    if row.get("ci_low") is None or row.get("ci_high") is None:
        return num(row.get("mean"), digits)
    return (f"{num(row['mean'], digits)} [{num(row['ci_low'], digits)}, "
            f"{num(row['ci_high'], digits)}]")


def sampled_cell(row: Mapping[str, Any]) -> str:
    """A sampled metric's mean (report.md and report.html): an estimate of the
    population from the sample, which the cell names."""
    return (f"{with_interval(row)} (sampled: n={row['count']} of {row['population']} rows, "
            f"missing {row['missing']})")


def sampled_note() -> str:
    """What a sampled mean is (under the means of report.md and report.html)."""
    return ("Sampled metrics (`judge.sample`) are estimates for all the bot's rows: the "
            "mean weighs each suite by its rows, the interval includes the sampling "
            "(finite population correction); rows outside the sample are null with "
            "`not sampled` and not counted as missing. A suite with fewer than two "
            "sampled values has no interval (and then neither has the bot's mean).")


def no_value_note(summary: Iterable[Mapping[str, Any]], code: str = "") -> str | None:
    """The metrics with no value on any row of any bot (their cells read '– n=0'),
    and where the reason of each null is; None when every metric has a value.
    code: the marks around a table's name (a backtick in report.md)."""
    rows = [r for r in summary if r["suite"] == ALL_SUITES and r["metric"] != VERDICT_METRIC]
    empty = sorted({r["metric"] for r in rows} - {r["metric"] for r in rows if r["count"]})
    if not empty:
        return None
    return (f"No value on any row for {', '.join(empty)}: {code}scores/{code} holds why on "
            "each row (its error column).")


def clip(text: str | None, limit: int) -> str:
    """At most `limit` characters, an ellipsis where cut; no text is '–'."""
    return shortened(text or "–", limit)


# a worst case's id and suite as shown: any length in the input (a prompt pasted as
# the suite made every row of the worst cases 4,000 px tall); whole in the manifest
NAME_CHARS = 120


def clip_id(text: str, limit: int = NAME_CHARS) -> str:
    """A case id in at most `limit` characters that tells it from the others: its
    start, '…', its end and a short hash of the whole id (ids cut to their start
    alone, `run_2026_…` twice, read as one case when they differed at the end)."""
    if len(text) <= limit:
        return text
    tag = " #" + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:6]
    tail = (limit - len(tag) - 1) // 3
    head = limit - len(tag) - 1 - tail
    return f"{text[:head]}…{text[len(text) - tail:]}{tag}"


# up to this many bots the reports show each bot's ten worst cases; beyond, the
# first WORST_OF_MANY of each (12 bots' 120 worst cases took 25,000 px of report.html)
FEW_BOTS = 3
WORST_OF_MANY = 5


# the columns of both reports' worst cases; a cell with no value (a failed bot's
# answer and metrics, a case without a suite or a reference) is "–" in both
WORST_HEADERS = ("case", "suite", "verdict", "reason", "question", "reference", "answer",
                 "metrics")


def worst_shown(cases: Sequence[Mapping[str, Any]], n_bots: int
                ) -> tuple[Sequence[Mapping[str, Any]], int]:
    """A bot's worst cases as the reports show them, and how many were left out."""
    keep = cases if n_bots <= FEW_BOTS else cases[:WORST_OF_MANY]
    return keep, len(cases) - len(keep)


def left_out_note(bot: str, n: int) -> str:
    """Where the worst cases a report leaves out are."""
    return (f"{n} more of {bot}'s worst cases are in the manifest (worst_cases); "
            "evalbeam view shows every case.")


_MD_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|"})


def md_cell(text: Any, limit: int) -> str:
    """Untrusted text (an answer, a case id, a file name) safe in markdown, in a
    table cell or in a line of prose: one line, control characters shown as
    escapes (`\\x1b[2J` must not clear a terminal on `cat`), HTML shown as text
    (`<img onerror=...>`) and `|`, which would end a table cell, escaped."""
    text = escape_controls(" ".join(str("" if text is None else text).split()))
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text.translate(_MD_ESCAPES)


# markdown's inline marks, and a `]` that would close a link's or an image's text
_MD_INLINE = re.compile(r"[\\`*_]|\](?=[(\[])")


def md_text(text: str) -> str:
    """Data (an answer, a question, a case id) as written when report.md is
    rendered: a backslash before \\ ` * _ and before the `]` of `[x](...)`, so
    `**bold**` is not bold and `[x](javascript:...)`, `![x](http://...)` are
    neither a link nor an image loaded from elsewhere (other brackets, as in
    `\\x1b[31m`, stay as they are). Then md_cell, as for any text."""
    return _MD_INLINE.sub(lambda m: "\\" + m.group(), text)


def md_name(name: str) -> str:
    """A bot name (letters, digits, - and _) as written when report.md is
    rendered: a run of '_' at a word's edge (`_beta_`, `__init__`) backslashed,
    which markdown took for emphasis; inside a word (gpt_4o_mini) it cannot be,
    and stays as it is for a reader of the file."""
    def escaped(m: re.Match) -> str:
        start, end = m.span()
        inside = (0 < start and end < len(name) and name[start - 1].isalnum()
                  and name[end].isalnum())
        return m.group() if inside else m.group().replace("_", "\\_")
    return re.sub("_+", escaped, name)


def metric_values(case: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """A worst case's metric values as 'name 0.00': those its verdict reason
    names, and the others (each in name order)."""
    values = case.get("metrics") or {}
    reason = case.get("reason") or ""
    named = [f"{m} {num(values[m], 2)}" for m in sorted(values) if m in reason]
    return named, [f"{m} {num(values[m], 2)}" for m in sorted(values) if m not in reason]


def metrics_text(case: Mapping[str, Any]) -> str:
    """A worst case's metric values, those its verdict reason names first."""
    return ", ".join(sum(metric_values(case), []))


def head_to_head_md(pairs: Sequence[tuple[Sequence[str], Mapping[str, Any]]]) -> list[str]:
    """The head-to-head section: for each pair, the findings, every metric's
    paired difference, and the per-suite deltas."""
    if not pairs:
        return []
    lines = ["## Head to head", ""]
    if len(pairs) > h2h.FEW_PAIRS:
        return lines + _pairs_in_brief(pairs)
    for names, stats in pairs:
        pair = tuple(md_name(n) for n in names)  # the pair as its texts name it
        lines += [f"### {md_cell(h2h.pair_label(pair), 200)} "
                  f"({stats['paired']} paired cases)", ""]
        lines += [md_cell(x, 2000) for x in h2h.findings(pair, stats)] + [""]
        if not stats["paired"]:
            continue
        lines += md_table(h2h.metric_headers(pair),
                          [h2h.metric_cells(r, pair) for r in h2h.compared(stats)])
        suites = h2h.suite_lines(pair, stats)
        if suites:
            a, b = pair
            lines += ["Per suite:", ""]
            lines += md_table(["suite", "cases", f"pass rate {b} − {a} [95% CI]",
                               f"better for {b}", f"better for {a}"],
                              [[md_text(suite), *rest] for suite, *rest in suites])
    return lines + [h2h.METHOD, ""]


def _pairs_in_brief(pairs: Sequence[tuple[Sequence[str], Mapping[str, Any]]]) -> list[str]:
    """Many pairs: the matrix of pass-rate differences, then a line per bot of
    the bots it differs from (each pair's tables made 12 bots' report.md 2,900
    lines; a paragraph per pair, 66 paragraphs)."""
    bots, cells = h2h.pass_rate_grid(pairs)
    rows, columns = h2h.grid_labels(bots)
    grid = [[md_name(label), *(cells.get((r, c), ("–",))[0] for c in bots)]
            for label, r in zip(rows, bots)]
    lines = [h2h.grid_note(bots), "", *md_table(["bot", *map(md_name, columns)], grid,
                                          right=len(bots)),
             h2h.BOT_FINDINGS_NOTE, ""]
    lines += [f"- **{md_cell(md_name(bot), 200)}**: {md_cell(said, 4000)}"
              for bot, said in h2h.bot_findings(_md_named(pairs))]
    return lines + ["", "Each pair's findings and every metric's paired difference, per suite: "
                    "report.html, the manifest's `head_to_head`, or `evalbeam compare`.", "",
                    h2h.METHOD, ""]


def _md_named(pairs: Sequence[tuple[Sequence[str], Mapping[str, Any]]]
              ) -> list[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """The pairs with their bots' names as report.md writes them (md_name)."""
    return [(tuple(md_name(n) for n in names), stats) for names, stats in pairs]


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], right: int = 0,
             limit: int = 300) -> list[str]:
    """A markdown table of untrusted cells (each escaped by md_cell and cut
    at `limit` characters), and a blank line; columns 1..right are aligned right."""
    out = ["| " + " | ".join(md_cell(str(h), 200) for h in headers) + " |",
           "|" + "|".join("---:" if 0 < i <= right else "---" for i in range(len(headers)))
           + "|"]
    out += ["| " + " | ".join(md_cell(str(x), limit) for x in row) + " |" for row in rows]
    return out + [""]


def _means_md(summary: Sequence[Mapping[str, Any]], bots: Sequence[str]) -> list[str]:
    """report.md's metric means: a column per bot up to FEW_BOTS, beyond them a
    row per bot, ranked (12 bots' columns made a table 3,500 px wide)."""
    if len(bots) > FEW_BOTS:
        ranked, labels = ranked_means(summary)
        return md_table(["bot", "pass rate", *labels],
                        [[md_name(b), num(rate), *(_md_mean(r) for r in cells)]
                         for b, rate, cells in ranked],
                        right=len(labels) + 1, limit=500) + [RANKED_NOTE]
    metrics = sorted({r["metric"] for r in summary if r["metric"] != VERDICT_METRIC})
    by = {(r["bot"], r["metric"]): r for r in summary}
    means = []
    for m in metrics:
        cells = []
        for b in bots:
            r = by.get((b, m))
            if r is None:
                cells.append("–")
            elif r.get("sampled"):
                cells.append(sampled_cell(r))
            else:
                cells.append(f"{with_interval(r)} (n={r['count']}, missing {r['missing']})")
        label = metric_label(m, by.get((bots[0], m), {}).get("higher_is_better", True))
        means.append([label, *cells])
    # md_table: with no bot (nothing evaluated) the header still has one cell per column
    return md_table(["metric", *map(md_name, bots)], means, right=len(bots), limit=500)


def _md_mean(row: Mapping[str, Any] | None) -> str:
    """A mean in the ranked table of report.md: its interval, and what is missing."""
    if row is None:
        return "–"
    if row.get("sampled"):
        return sampled_cell(row)
    return with_interval(row) + (f" (missing {row['missing']})" if row["missing"] else "")


def ranked_means(summary: Iterable[Mapping[str, Any]]
                 ) -> tuple[list[tuple[str, float | None, list[Mapping[str, Any] | None]]],
                            list[str]]:
    """The all-suites summary of many bots as both reports rank it: per bot, best
    pass rate first (then by name), its pass rate and its row of each metric
    (None where it has none); and the metrics' labels (↓ lower is better)."""
    summary = [r for r in summary if r["suite"] == ALL_SUITES]
    by = {(r["bot"], r["metric"]): r for r in summary}
    metrics = sorted({r["metric"] for r in summary if r["metric"] != VERDICT_METRIC})
    rates = {r["bot"]: r.get("mean") for r in summary if r["metric"] == VERDICT_METRIC}
    bots = sorted({r["bot"] for r in summary},
                  key=lambda b: (rates.get(b) is None, -(rates.get(b) or 0.0), b))
    labels = [metric_label(m, next(by[(b, m)] for b in bots if (b, m) in by)
                           .get("higher_is_better", True)) for m in metrics]
    return [(b, rates.get(b), [by.get((b, m)) for m in metrics]) for b in bots], labels


RANKED_NOTE = ("Bots ranked by pass rate (best first); each metric's mean over the bot's "
               "rows with a value, with its 95% interval.")


def render_report(manifest: Mapping[str, Any], summary: Iterable[Mapping[str, Any]],
                  worst: Mapping[str, list[Mapping[str, Any]]],
                  pairs: Sequence[tuple[Sequence[str], Mapping[str, Any]]] = ()) -> str:
    summary = list(summary)
    pairs = pass_rate.shown_head_to_head(pairs, manifest, summary)
    summary = pass_rate.shown((r for r in summary if r["suite"] == ALL_SUITES), manifest)
    bots = sorted({r["bot"] for r in summary})
    c = manifest["counts"]
    lines = [f"# evalbeam run `{manifest['run_id']}` ({manifest['run_date']})", "",
             f"Attempt `{manifest.get('attempt', '–')}`, finished {manifest.get('finished_at', '–')}.",
             "",
             f"Input: {md_cell(manifest['input'], 500)} — {counted(c['input_rows'], 'row')}, "
             f"{c['valid_cases']:,} valid, {c['invalid_rows']:,} invalid, "
             f"{counted(c['duplicate_case_ids'], 'duplicate case id')}.",
             f"Bots: {md_cell(', '.join(map(md_name, manifest['bots'])), 500)}. "
             f"Results rows: {c['results_rows']}; "
             f"bot errors: {c['bot_errors']}. Counts reconcile: "
             f"**{'yes' if manifest['reconciliation']['ok'] else 'NO'}**."]
    lines += [f"{noun[0].upper()}{noun[1:]}s: {c[key]} (see `errors/`, stage `{stage}`)."
              for stage, (key, noun) in CALL_ERROR_STAGES.items() if c.get(key)]
    lines += [f"Note: {md_cell(n, 2000)}" for n in manifest.get("notes", [])]
    lines += cap_lines(manifest.get("spend_caps") or {})
    lines += lost_request_lines(manifest.get("requests"))
    lines += ["", "## Verdicts", "", "| bot | PASS | WARN | FAIL | ERROR | pass rate [95% CI] |",
              "|---|---:|---:|---:|---:|---:|"]
    for r in summary:
        if r["metric"] == VERDICT_METRIC:
            lines.append(f"| {md_cell(md_name(r['bot']), 80)} | {r['pass_count']} | "
                         f"{r['warn_count']} | "
                         f"{r['fail_count']} | {r['error_count']} | {with_interval(r)} |")
    lines += ["", md_cell(n, 2000)] if (n := pass_rate.note(summary, md_name)) else []
    lines += ["", "## Metric means [95% CI] (null values excluded; missing = could not be "
              "computed)", ""]
    lines += _means_md(summary, bots)
    lines += ["↓ lower is better. Intervals: Student's t for a mean, Wilson for a pass rate "
              "or a 0/1 metric."]
    lines += ["", n] if (n := no_value_note(summary, "`")) else []
    if any(r.get("sampled") for r in summary):
        lines += [sampled_note()]
    if manifest.get("cascade"):
        from transforms.publish.savings import cascade_lines
        lines += cascade_lines(manifest["cascade"])
    lines += _spend_lines(manifest.get("usage") or {})
    lines += [""] + head_to_head_md(pairs)
    lines += ["## Worst cases", ""]
    for bot in sorted(worst):
        shown, left_out = worst_shown(worst[bot], len(worst))
        lines += [f"### {md_cell(md_name(bot), 80)}", ""]
        lines += md_table(WORST_HEADERS,
                          [[md_text(clip_id(w["case_id"])),
                            md_text(clip(w.get("suite"), NAME_CHARS)),
                            w["verdict"], clip(w["reason"], 160),
                            md_text(clip(w["question"], 80)),
                            md_text(clip(w.get("reference"), 120)),
                            md_text(clip(w["answer"], 120)), metrics_text(w) or "–"]
                           for w in shown],
                          limit=1000)
        if left_out:
            lines += [md_cell(md_name(left_out_note(bot, left_out)), 500), ""]
    lines += ["Tables: " + ", ".join(f"`{t}/` ({counted(n, 'row')})"
                                     for t, n in manifest["tables"].items()),
              ""]
    return "\n".join(lines)
