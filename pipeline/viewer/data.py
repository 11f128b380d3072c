"""What the viewer reads: the output folder's finished runs, each through its
completion marker (transforms/publish/completed.py), and their tables
queried with DuckDB.

A run's results and scores are loaded once into DuckDB tables (only the
columns the explorer filters and lists: no contexts, no details), so that a
page of a 100k-case run is a query over memory; the case page reads the rest
of one case from the run's Parquet files. Every value from the user (a bot,
a suite, a search text, a case id) is a query parameter, never SQL text.
"""
from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

from schemas.tables import RESULTS, SCORES, VERDICT_ORDER
from transforms.publish.completed import (CompletedRun, RunUnreadable, check_run_id,
                                          read_completed_run)

PAGE_SIZE = 50
CACHED_RUNS = 4      # runs kept loaded in memory (least recently used dropped)
LISTED_TEXT = 240    # characters of a question or answer in a list


@dataclass(frozen=True)
class Filters:
    """The explorer's filters (every one optional)."""
    bot: str | None = None
    suite: str | None = None
    verdict: str | None = None
    metric: str | None = None
    low: float | None = None      # metric value at least
    high: float | None = None     # metric value at most
    text: str | None = None       # in the case id, question, reference or answer
    changed: bool = False         # side by side: only cases whose verdict or answer differs
    page: int = 1

    def params(self) -> dict[str, str]:
        """The filters as a query string's parameters (for links)."""
        out = {k: str(v) for k, v in (("bot", self.bot), ("suite", self.suite),
                                      ("verdict", self.verdict), ("metric", self.metric),
                                      ("min", self.low), ("max", self.high),
                                      ("q", self.text)) if v not in (None, "")}
        if self.changed:
            out["changed"] = "1"
        return out


@dataclass
class Page:
    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _files_sql(paths: Sequence[str]) -> str:
    """A read_parquet over exactly these files, partition columns as text."""
    listed = ", ".join(_lit(p) for p in paths)
    return (f"read_parquet([{listed}], hive_partitioning=true, hive_types_autocast=false, "
            "union_by_name=true)")


@dataclass
class LoadedRun:
    """One run's tables in DuckDB (named by a serial number, not the run id)."""
    run: CompletedRun
    name: str
    bots: list[str]
    suites: list[str]
    metrics: list[str]
    lock: threading.Lock = field(default_factory=threading.Lock)


class Catalog:
    """The folder's runs, and the ones loaded into DuckDB."""

    def __init__(self, output: str, threads: int = 2, memory_limit: str = "4GB"):
        import duckdb
        self.output = output.rstrip("/") or "/"
        self._con = duckdb.connect(config={"threads": threads, "memory_limit": memory_limit})
        self._loaded: OrderedDict[str, LoadedRun] = OrderedDict()
        self._lock = threading.Lock()
        self._serial = 0

    def cursor(self):
        """A connection for one request's thread (DuckDB cursors are per thread)."""
        return self._con.cursor()

    # ------------------------------------------------------------- runs

    def runs(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Finished runs (newest first) and one line per run id that cannot be
        read (no completed attempt yet, a corrupt marker)."""
        folder = os.path.join(self.output, "runs")
        found, problems = [], []
        for run_id in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            try:
                check_run_id(run_id)
                run = read_completed_run(self.output, run_id)
            except RunUnreadable as exc:
                problems.append(str(exc))
                continue
            found.append(dict(run.manifest))
        found.sort(key=lambda m: (m.get("finished_at", ""), m["run_id"]), reverse=True)
        return found, problems

    def run(self, run_id: str) -> LoadedRun:
        """The run loaded (RunUnreadable when it has no completed attempt); a
        re-run of the id (another attempt) is loaded afresh."""
        check_run_id(run_id)
        run = read_completed_run(self.output, run_id)
        with self._lock:
            loaded = self._loaded.get(run_id)
            if loaded is not None and loaded.run.attempt == run.attempt:
                self._loaded.move_to_end(run_id)
                return loaded
            loaded = self._load(run)
            self._loaded[run_id] = loaded
            while len(self._loaded) > CACHED_RUNS:
                _, old = self._loaded.popitem(last=False)
                self._con.execute(f"DROP TABLE IF EXISTS {old.name}_results; "
                                  f"DROP TABLE IF EXISTS {old.name}_scores")
            return loaded

    def _load(self, run: CompletedRun) -> LoadedRun:
        self._serial += 1
        name = f"run{self._serial}"
        results, scores = run.files(RESULTS.name), run.files(SCORES.name)
        if not results:
            raise RunUnreadable(f"run {run.run_id!r} has no results/ files")
        self._con.execute(f"""CREATE OR REPLACE TABLE {name}_results AS
            SELECT case_id, bot, suite, verdict, verdict_reason, error, question,
                   expected_answer, answer, latency_ms
            FROM {_files_sql(results)} WHERE run_id = ?""", [run.run_id])
        if scores:
            self._con.execute(f"""CREATE OR REPLACE TABLE {name}_scores AS
                SELECT case_id, bot, metric, value FROM {_files_sql(scores)}
                WHERE run_id = ?""", [run.run_id])
        else:
            self._con.execute(f"""CREATE OR REPLACE TABLE {name}_scores (case_id VARCHAR,
                bot VARCHAR, metric VARCHAR, value DOUBLE)""")
        suites = [s for (s,) in self._con.execute(
            f"SELECT DISTINCT suite FROM {name}_results WHERE suite IS NOT NULL ORDER BY 1"
        ).fetchall()]
        return LoadedRun(run, name, list(run.bots), suites, list(run.metrics))

    # ------------------------------------------------------------- the explorer

    def _where(self, loaded: LoadedRun, f: Filters, alias: str = "r") -> tuple[str, list]:
        conds, params = ["TRUE"], []
        for column, value in (("bot", f.bot), ("suite", f.suite), ("verdict", f.verdict)):
            if value:
                conds.append(f"{alias}.{column} = ?")
                params.append(value)
        if f.text:
            like = "%" + f.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") \
                + "%"
            conds.append(f"""({alias}.case_id ILIKE ? ESCAPE '\\' OR {alias}.question ILIKE ?
                ESCAPE '\\' OR {alias}.answer ILIKE ? ESCAPE '\\'
                OR {alias}.expected_answer ILIKE ? ESCAPE '\\')""")
            params += [like] * 4
        if f.metric and (f.low is not None or f.high is not None):
            conds.append(f"""EXISTS (SELECT 1 FROM {loaded.name}_scores s
                WHERE s.case_id = {alias}.case_id AND s.bot = {alias}.bot AND s.metric = ?
                AND s.value >= ? AND s.value <= ?)""")
            params += [f.metric, -1e308 if f.low is None else f.low,
                       1e308 if f.high is None else f.high]
        return " AND ".join(conds), params

    def cases(self, loaded: LoadedRun, f: Filters, cur) -> Page:
        """A page of the run's case × bot rows matching the filters, in case order;
        with a metric chosen, its value on each row."""
        where, params = self._where(loaded, f)
        total = cur.execute(f"SELECT count(*) FROM {loaded.name}_results r WHERE {where}",
                            params).fetchone()[0]
        pages = max(1, -(-total // PAGE_SIZE))
        page = min(max(1, f.page), pages)
        value = "NULL"
        extra: list[Any] = []
        if f.metric:
            value = (f"(SELECT s.value FROM {loaded.name}_scores s WHERE s.case_id = r.case_id "
                     "AND s.bot = r.bot AND s.metric = ? LIMIT 1)")
            extra = [f.metric]
        rows = cur.execute(f"""SELECT r.case_id, r.bot, r.suite, r.verdict, r.verdict_reason,
                   left(r.question, {LISTED_TEXT}) AS question,
                   left(coalesce(r.answer, r.error), {LISTED_TEXT}) AS answer,
                   {value} AS value
            FROM {loaded.name}_results r WHERE {where}
            ORDER BY r.case_id, r.bot LIMIT {PAGE_SIZE} OFFSET {(page - 1) * PAGE_SIZE}""",
                           extra + params)
        names = [d[0] for d in rows.description]
        return Page([dict(zip(names, r)) for r in rows.fetchall()], total, page, pages)

    def verdict_counts(self, loaded: LoadedRun, cur) -> dict[str, dict[str, int]]:
        """bot -> verdict -> count (the explorer's header)."""
        out: dict[str, dict[str, int]] = {b: dict.fromkeys(VERDICT_ORDER, 0) for b in loaded.bots}
        for bot, verdict, n in cur.execute(
                f"SELECT bot, verdict, count(*) FROM {loaded.name}_results GROUP BY ALL"
        ).fetchall():
            out.setdefault(bot, dict.fromkeys(VERDICT_ORDER, 0))[verdict or "ERROR"] = n
        return out

    # ------------------------------------------------------------- one case

    def case(self, loaded: LoadedRun, case_id: str, cur) -> dict[str, Any] | None:
        """Everything of one case: the case's fields, and per bot its answer,
        verdict and every metric with its details and error (None: unknown case)."""
        run = loaded.run
        rows = cur.execute(f"""SELECT * FROM {_files_sql(run.files(RESULTS.name))}
            WHERE run_id = ? AND case_id = ? ORDER BY bot""", [run.run_id, case_id])
        names = [d[0] for d in rows.description]
        answers = [dict(zip(names, r)) for r in rows.fetchall()]
        if not answers:
            return None
        scores: list[dict[str, Any]] = []
        if run.files(SCORES.name):
            got = cur.execute(f"""SELECT bot, metric, value, details, error
                FROM {_files_sql(run.files(SCORES.name))}
                WHERE run_id = ? AND case_id = ? ORDER BY bot, metric""",
                              [run.run_id, case_id])
            names = [d[0] for d in got.description]
            scores = [dict(zip(names, r)) for r in got.fetchall()]
        order = {m: i for i, m in enumerate(run.metrics)}
        for answer in answers:
            answer["scores"] = sorted((s for s in scores if s["bot"] == answer["bot"]),
                                      key=lambda s: order.get(s["metric"], len(order)))
            answer["details"] = _json(answer.get("bot_details"))
            for s in answer["scores"]:
                s["details"] = _json(s.get("details"))
        first = answers[0]
        return {"case_id": case_id, "suite": first.get("suite"), "question": first["question"],
                "expected_answer": first.get("expected_answer"),
                "references": first.get("references"), "contexts": first.get("contexts"),
                "messages": _json(first.get("messages")), "tags": first.get("tags"),
                "label": first.get("label"), "answers": answers,
                "repeated": len(answers) > len({a["bot"] for a in answers})}

    # ------------------------------------------------------------- two runs

    def side_by_side(self, a: LoadedRun, b: LoadedRun, f: Filters, cur) -> Page:
        """The cases × bots both runs answered, both answers and verdicts."""
        where, params = self._where(b, f, alias="y")
        if f.changed:
            where += (" AND (x.verdict IS DISTINCT FROM y.verdict"
                      " OR x.answer IS DISTINCT FROM y.answer)")
        join = (f"FROM {a.name}_results x JOIN {b.name}_results y "
                "ON x.case_id = y.case_id AND x.bot = y.bot")
        total = cur.execute(f"SELECT count(*) {join} WHERE {where}", params).fetchone()[0]
        pages = max(1, -(-total // PAGE_SIZE))
        page = min(max(1, f.page), pages)
        rows = cur.execute(f"""SELECT y.case_id, y.bot, y.suite, left(y.question, {LISTED_TEXT})
                   AS question, x.verdict AS verdict_a, x.verdict_reason AS reason_a,
                   coalesce(x.answer, x.error) AS answer_a, y.verdict AS verdict_b,
                   y.verdict_reason AS reason_b, coalesce(y.answer, y.error) AS answer_b
            {join} WHERE {where} ORDER BY y.case_id, y.bot
            LIMIT {PAGE_SIZE} OFFSET {(page - 1) * PAGE_SIZE}""", params)
        names = [d[0] for d in rows.description]
        return Page([dict(zip(names, r)) for r in rows.fetchall()], total, page, pages)


def _json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def report_file(output: str, run_id: str) -> str | None:
    """The run's report.html (None when it has none)."""
    check_run_id(run_id)
    path = os.path.join(output, "runs", run_id, "report.html")
    return path if os.path.isfile(path) else None


