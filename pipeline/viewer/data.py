"""What the viewer reads: the output folder's finished runs, each through its
completion marker (transforms/publish/completed.py), and their tables
queried with DuckDB.

Opening a run loads only what every page sorts and filters on, into a
DuckDB table: each results row's position in case order (`rn`), case id,
bot, suite, verdict and reason (0.4 s of CPU for 200,000 rows). What only
some pages need is built the first time it is needed and kept: the
lower-cased text of each row for the text search (built at once in the
background after the open), one table per metric with its values (when a
page first filters on or shows that metric), two runs' rows joined (side by
side). The texts a page shows are read from the run's Parquet files for its
50 rows only. Every value from the user (a bot, a suite, a search text, a
case id) is a query parameter, never SQL text.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Sequence

from apache_beam.io.filesystems import FileSystems

from pipeline.postrun.status import RunStatus, run_status
from schemas.tables import ERRORS, RESULTS, SCORES, VERDICT_ORDER
from transforms.publish.completed import (MANIFEST, CompletedRun, CorruptManifest,
                                          NoCompletedAttempt, RunUnreadable, check_run_id,
                                          read_completed_run, unreachable)
from transforms.publish.commit import staged_report_path
from transforms.publish.lease import LEASE, Lease, read_lease

PAGE_SIZE = 50
CACHED_RUNS = 4      # runs kept loaded in memory (least recently used dropped)
LISTED_TEXT = 240    # characters of a question or answer in a list
SIDE_TEXT = 600      # characters of each answer side by side
SORTS = {"asc": "lowest first", "desc": "highest first"}  # the explorer's sort by a value
# what the runs list keeps of each run's marker: what its page shows, and what
# the check of its files reads (a whole marker is ~40 KB in memory, this ~6 KB)
LISTED = ("run_id", "run_date", "attempt", "finished_at", "bots", "metrics", "counts",
          "reconciliation", "tables", "files")
# a URL output's listing gives each file's size and time; a time to the second
# (S3's, Azure's) tells a rewrite only once that second is past: a marker whose
# listed time was not this old when it was read is read again on the next load
SETTLED_SECONDS = 2.0


class FolderGone(RunUnreadable):
    """The output folder the viewer serves is not there any more (404)."""


class BadRunId(RunUnreadable):
    """An address's run id that is not one (400: the request is wrong, where a
    run whose files are damaged is a 409)."""


def check_folder(output: str) -> None:
    """FolderGone for a local output folder deleted, moved or unmounted while
    the viewer serves it: not a folder without runs (an object store has no
    folders to check)."""
    if "://" not in output and not os.path.isdir(output):
        raise FolderGone(f"the output folder {output} is not there any more (deleted, moved "
                         "or unmounted?); its runs are shown again when it is back")


def unfinished(output: str, run_id: str) -> RunStatus | None:
    """The run id's attempt that has not committed, as `evalbeam status` says
    it: running, or failed and why (None: no such attempt)."""
    try:
        status = run_status(output, run_id)
    except RunUnreadable:
        return None
    return status if status.state in ("running", "failed") else None


def why_not_finished(output: str, run_id: str, fallback: str) -> str:
    """A run id without a completion marker: running, or failed and why
    (fallback: the id has no lease either)."""
    status = unfinished(output, run_id)
    return fallback if status is None else status.line


def newer_attempt(output: str, run_id: str, committed: str | None) -> RunStatus | None:
    """An attempt of a finished run id newer than its committed one (a re-run,
    running or failed): its pages show the earlier attempt's tables and say so.
    Only a lease of another attempt costs more than one read."""
    return attempt_after(output, run_id, committed, leased(output, run_id))


def leased(output: str, run_id: str) -> Lease | None:
    """The run id's lease (None: none, or none this version can read)."""
    try:
        return read_lease(output, run_id)
    except (OSError, ValueError):
        return None


def attempt_after(output: str, run_id: str, committed: str | None,
                  lease: Lease | None) -> RunStatus | None:
    """newer_attempt, the lease read."""
    if lease is None or lease.attempt == committed:
        return None
    return unfinished(output, run_id)


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
    sort: str | None = None       # the explorer: by the metric's value, "asc" or "desc"
    page: int = 1

    def params(self) -> dict[str, str]:
        """The filters as a query string's parameters (for links)."""
        out = {k: str(v) for k, v in (("bot", self.bot), ("suite", self.suite),
                                      ("verdict", self.verdict), ("metric", self.metric),
                                      ("min", self.low), ("max", self.high),
                                      ("q", self.text), ("sort", self.sort))
               if v not in (None, "")}
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
    """One run's tables in DuckDB (named by a serial number, not the run id):
    `{name}_r` always, `{name}_h` (search text) and `{name}_m{i}` (metric i's
    values) once built."""
    run: CompletedRun
    name: str
    bots: list[str]
    suites: list[str]
    metrics: list[str]
    built: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def metric_table(self, metric: str) -> str:
        return f"{self.name}_m{self.metrics.index(metric)}"


def _paged(cur, select: str, params: list, wanted: int, order: str = "rn"
           ) -> tuple[list[dict[str, Any]], int, int, int]:
    """One page of a query's rows in `order` (rn: case order), and how many rows
    it has: the filters are evaluated once (the total rides along as a window
    count); a page past the end is the last page."""
    query = (f"SELECT *, count(*) OVER () AS _total FROM ({select}) ORDER BY {order} "
             f"LIMIT {PAGE_SIZE} OFFSET ?")
    rows = _rows(cur.execute(query, [*params, (max(1, wanted) - 1) * PAGE_SIZE]))
    if rows:
        total = rows[0]["_total"]
        page = max(1, wanted)
    else:
        total = cur.execute(f"SELECT count(*) FROM ({select})", params).fetchone()[0]
        page = max(1, -(-total // PAGE_SIZE))
        if total and page != wanted:
            rows = _rows(cur.execute(query, [*params, (page - 1) * PAGE_SIZE]))
    for r in rows:
        r.pop("_total", None)
    return rows, total, page, max(1, -(-total // PAGE_SIZE))


def _order(f: Filters, value: str = "value") -> str:
    """The ORDER BY of a page: by the chosen metric's value when a sort is
    asked (nulls last, then case order), else case order (rn)."""
    if not (f.metric and f.sort):
        return "rn"
    return f"{value} {'DESC' if f.sort == 'desc' else 'ASC'} NULLS LAST, rn"


def _rows(cursor) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r)) for r in cursor.fetchall()]


class Catalog:
    """The folder's runs, and the ones loaded into DuckDB."""

    def __init__(self, output: str, threads: int = 2, memory_limit: str = "4GB",
                 prefetch: bool = True):
        import duckdb
        self.output = output.rstrip("/") or "/"
        self._con = duckdb.connect(config={"threads": threads, "memory_limit": memory_limit})
        self._loaded: OrderedDict[str, LoadedRun] = OrderedDict()
        self._pairs: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._lock = threading.Lock()
        # one pair table built at a time: tabs opening one comparison together
        # would each create it, and DuckDB refuses the concurrent creates
        self._pair_build = threading.Lock()
        self._active = 0     # pages (and background builds) using the tables now
        self._retired: list[LoadedRun | str] = []  # runs and pair tables put aside
        self._serial = 0
        self._prefetch = prefetch
        # run id -> (the committed state its listed files were checked in, why
        # they cannot be read or None): only the runs the last list found
        self._checked: dict[str, tuple[tuple, str | None]] = {}
        # (file, run id) -> (a stat of runs/<run id>/<file>, what was read of it):
        # the completion marker's run (its LISTED keys) or why it is corrupt, the
        # lease; only the runs the last list found
        self._kept: dict[tuple[str, str], tuple[tuple, Any]] = {}
        # a URL output's files (gs://, s3://, hdfs://) are read from copies here
        self._stage = tempfile.mkdtemp(prefix="evalbeam-view-") if "://" in self.output else ""

    def close(self) -> None:
        if self._stage:
            shutil.rmtree(self._stage, ignore_errors=True)

    def _scan(self, run: CompletedRun, table: str) -> str:
        """A read_parquet over the run's committed files of a table."""
        return _files_sql(run.local_files(table, self._stage))

    @contextlib.contextmanager
    def in_use(self):
        """Around a page: a run put aside meanwhile (more than CACHED_RUNS
        opened) keeps its tables until no page uses the catalog, so that a page
        of it being made never finds them gone."""
        with self._lock:
            self._active += 1
        try:
            yield
        finally:
            self._leave()

    def _leave(self) -> None:
        with self._lock:
            self._active -= 1
            self._drop_retired()

    def _drop_retired(self) -> None:
        """Drop what was put aside, when nothing uses the catalog (under _lock)."""
        if self._active:
            return
        for old in self._retired:
            tables = [old] if isinstance(old, str) else [f"{old.name}_r", *old.built]
            for table in tables:
                self._con.execute(f"DROP TABLE IF EXISTS {table}")
        self._retired = []

    def cursor(self):
        """A connection for one request's thread (DuckDB cursors are per thread)."""
        return self._con.cursor()

    # ------------------------------------------------------------- runs

    def runs(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Finished runs (newest first) and one line per run id that cannot be
        read (no completed attempt yet, a corrupt marker, and in a local folder a
        listed file missing or replaced since the commit: listed with a link, such
        a run only led to an error page)."""
        check_folder(self.output)
        found, problems, checked, kept = [], [], {}, {}
        listed = url_listing(self.output) if "://" in self.output else None
        for run_id in run_ids(self.output) if listed is None else sorted(listed):
            try:
                run = self._listed(run_id, kept, listed)
                if "://" not in self.output:  # listed as readable only when it is (a
                    checked[run_id] = known = self._check_files(run)  # URL output's run
                    if known[1] is not None:                          # page checks its own)
                        raise RunUnreadable(known[1])
            except RunUnreadable as exc:
                problems.append(str(exc))
                continue
            found.append(dict(run.manifest, newer_attempt=attempt_after(
                self.output, run_id, run.attempt, self._lease(run_id, kept, listed))))
        with self._lock:  # runs gone from the folder are forgotten
            self._checked, self._kept = checked, kept
        found.sort(key=lambda m: (m.get("finished_at", ""), m["run_id"]), reverse=True)
        return found, problems

    def _listed(self, run_id: str, kept: dict, listed: dict | None = None) -> CompletedRun:
        """self._completed(run_id) for the runs list, of the marker's LISTED
        keys, a run's marker read once per stat (_by_stat; a URL output's: per
        its size and time in `listed`, url_listing's): reading and parsing
        3,000 local markers took 1.7 s of CPU a load, and on an object store
        each costs 3 requests. Kept: the run, or why the marker is corrupt
        (both follow from its bytes); a marker missing or unreadable (a
        folder, no permission) is read again on every load."""
        def read() -> tuple[CompletedRun | str, bool]:
            try:
                run = self._completed(run_id)
            except CorruptManifest as exc:
                return str(exc), True
            return CompletedRun(run.output, run_id, {k: run.manifest[k] for k in LISTED
                                                     if k in run.manifest}), True

        known = self._by_stat(MANIFEST, run_id, read, kept, listed=listed)
        if isinstance(known, str):
            raise CorruptManifest(known)
        return known

    def _lease(self, run_id: str, kept: dict, listed: dict | None = None) -> Lease | None:
        """The run id's lease for the runs list, read once per stat (_by_stat;
        it is replaced whole, by a rename, at each change of state), and not at
        all when a stat, or a URL output's listing, finds none (a finished
        run's is gone): trying to open 3,000 leases took 0.3 s of CPU a load.
        A lease there but not one this version can read is read again on every
        load."""
        def read() -> tuple[Lease | None, bool]:
            lease = leased(self.output, run_id)
            return lease, lease is not None

        return self._by_stat(LEASE, run_id, read, kept, read_gone=False, listed=listed)

    def _by_stat(self, name: str, run_id: str, read, kept: dict, read_gone: bool = True,
                 listed: dict | None = None) -> Any:
        """What read() says of the file runs/<run_id>/<name>: read again only
        when its stat_key changed since (a rewrite, a replacement, a deletion
        or a restore), else what was kept of it; of a URL output, its token in
        `listed` (url_listing: its size and time; None: the time cannot tell,
        read every time). The stat (the listing) is taken before the read, so
        a change during it shows on the next load. read() returns (its value,
        whether to keep it); a file gone is not kept (and without read_gone,
        not read: None). Kept in self._kept and in `kept`, the current load's
        (which replaces it)."""
        if listed is None:
            stat = stat_key(os.path.join(self.output, "runs", run_id, name))
            there = stat is not None
        else:
            files = listed.get(run_id, {})
            stat, there = files.get(name), name in files
        if not there and not read_gone:
            return None
        with self._lock:
            known = self._kept.get((name, run_id))
        if stat is None or known is None or known[0] != stat:
            value, keep = read()
            if stat is None or not keep:
                return value
            known = (stat, value)
            with self._lock:
                self._kept[(name, run_id)] = known
        kept[(name, run_id)] = known
        return known[1]

    def _check_files(self, run: CompletedRun) -> tuple[tuple, str | None]:
        """run.check_files() of a local run, once per committed state: (that
        state, why the files cannot be read or None). Reading every listed
        file's end and footer on each load took 0.6 s of CPU for 300 runs; a
        stat of each tells whether they changed since."""
        state = committed_state(run)  # before the check: a change during it shows next time
        with self._lock:
            known = self._checked.get(run.run_id)
        if known is not None and known[0] == state:
            return known
        try:
            run.check_files()
            why = None
        except RunUnreadable as exc:
            why = str(exc)
        with self._lock:
            self._checked[run.run_id] = (state, why)
        return state, why

    def _completed(self, run_id: str, named: str = "run id") -> CompletedRun:
        """The run's completed attempt; without one, NoCompletedAttempt says
        whether it is running or failed, and why, as the runs list and
        `evalbeam status` say it (not the lease's word: a killed process's
        lease still says running). named: what a bad id is called (an
        address's part or parameter, not the command line's --run-id)."""
        try:
            check_run_id(run_id, named)
        except RunUnreadable as exc:
            raise BadRunId(str(exc)) from None
        check_folder(self.output)
        try:
            return read_completed_run(self.output, run_id)
        except NoCompletedAttempt as exc:
            raise NoCompletedAttempt(why_not_finished(self.output, run_id, str(exc))) from None

    def run(self, run_id: str, named: str = "run id") -> LoadedRun:
        """The run loaded (RunUnreadable when it has no completed attempt); a
        re-run of the id (another attempt) is loaded afresh. A local run with a
        listed file that cannot be read (of any table) is refused as the runs
        list says it, not only once a page reads that table."""
        run = self._completed(run_id, named)
        if "://" not in self.output:
            why = self._check_files(run)[1]
            if why is not None:
                raise RunUnreadable(why)
        with self._lock:
            loaded = self._loaded.get(run_id)
            if loaded is not None and loaded.run.attempt == run.attempt:
                self._loaded.move_to_end(run_id)
                return loaded
            loaded = self._load(run)
            self._loaded[run_id] = loaded
            while len(self._loaded) > CACHED_RUNS:
                _, old = self._loaded.popitem(last=False)
                self._retire(old)
            if self._prefetch:
                self._active += 1  # the build below uses the run's tables
        if self._prefetch:  # the search text, before anyone searches
            threading.Thread(target=self._prefetch_search, args=(loaded, self.cursor()),
                             name="evalbeam-view-prefetch", daemon=True).start()
        return loaded

    def _prefetch_search(self, loaded: LoadedRun, cur) -> None:
        """_ensure_search in the background; a failure is left to the page that
        needs the search (it says why), not printed on the console."""
        try:
            self._ensure_search(loaded, cur)
        except Exception:  # noqa: BLE001 - a page that searches builds it again
            pass
        finally:
            self._leave()

    def _retire(self, old: LoadedRun) -> None:
        """Put a run and its pairs aside (under _lock): dropped once unused."""
        self._retired.append(old)
        for key, table in list(self._pairs.items()):
            if old.name in table.split("_")[1:3]:
                self._retired.append(table)
                del self._pairs[key]
        self._drop_retired()

    def _load(self, run: CompletedRun) -> LoadedRun:
        self._serial += 1
        name = f"run{self._serial}"
        results = run.files(RESULTS.name)
        if results:
            self._con.execute(f"""CREATE OR REPLACE TABLE {name}_r AS
                SELECT CAST(row_number() OVER (ORDER BY case_id, bot) AS INTEGER) AS rn,
                       case_id, bot, suite, verdict, verdict_reason
                FROM {self._scan(run, RESULTS.name)} WHERE run_id = ? ORDER BY rn""", [run.run_id])
        else:  # a run that evaluated nothing (every input row invalid): no rows
            self._con.execute(f"""CREATE OR REPLACE TABLE {name}_r (rn INTEGER,
                case_id VARCHAR, bot VARCHAR, suite VARCHAR, verdict VARCHAR,
                verdict_reason VARCHAR)""")
        suites = [s for (s,) in self._con.execute(
            f"SELECT DISTINCT suite FROM {name}_r WHERE suite IS NOT NULL ORDER BY 1"
        ).fetchall()]
        return LoadedRun(run, name, list(run.bots), suites, list(run.metrics))

    def _ensure_search(self, loaded: LoadedRun, cur) -> str:
        """The run's search text per row (lower case: case id, question,
        reference, answer) and a hash of its answer (side by side), built once."""
        table = f"{loaded.name}_h"
        with loaded.lock:
            if table not in loaded.built and not loaded.run.files(RESULTS.name):
                cur.execute(f"CREATE OR REPLACE TABLE {table} (rn INTEGER, text VARCHAR, "
                            "answer_hash UBIGINT)")
                loaded.built.add(table)
            if table not in loaded.built:
                run = loaded.run
                cur.execute(f"""CREATE OR REPLACE TABLE {table} AS
                    SELECT r.rn, lower(concat_ws(chr(10), t.case_id, t.question,
                                                 t.expected_answer, t.answer)) AS text,
                           hash(coalesce(t.answer, t.error)) AS answer_hash
                    FROM {self._scan(run, RESULTS.name)} t
                    JOIN {loaded.name}_r r ON r.case_id = t.case_id AND r.bot = t.bot
                    WHERE t.run_id = ?""", [run.run_id])
                loaded.built.add(table)
        return table

    def _ensure_metric(self, loaded: LoadedRun, metric: str, cur) -> str:
        """One metric's value per row, built once (the scores of the metric only)."""
        table = loaded.metric_table(metric)
        with loaded.lock:
            if table not in loaded.built:
                run = loaded.run
                scores = run.files(SCORES.name)
                source = (f"(SELECT s.case_id, s.bot, s.value FROM {self._scan(run, SCORES.name)} s "
                          "WHERE s.run_id = ? AND s.metric = ?)" if scores else
                          "(SELECT NULL AS case_id, NULL AS bot, NULL::DOUBLE AS value "
                          "WHERE ? IS NULL AND ? IS NULL)")
                cur.execute(f"""CREATE OR REPLACE TABLE {table} AS
                    SELECT r.rn, s.value FROM {source} s
                    JOIN {loaded.name}_r r ON r.case_id = s.case_id AND r.bot = s.bot""",
                            [run.run_id, metric])
                loaded.built.add(table)
        return table

    # ------------------------------------------------------------- the explorer

    def _where(self, loaded: LoadedRun, f: Filters, cur, alias: str = "r"
               ) -> tuple[str, list]:
        conds, params = ["TRUE"], []
        for column, value in (("bot", f.bot), ("suite", f.suite), ("verdict", f.verdict)):
            if value:
                conds.append(f"{alias}.{column} = ?")
                params.append(value)
        if f.text:
            search = self._ensure_search(loaded, cur)
            conds.append(f"{alias}.rn IN (SELECT rn FROM {search} WHERE contains(text, ?))")
            params.append(f.text.lower())
        if f.metric and (f.low is not None or f.high is not None):
            values = self._ensure_metric(loaded, f.metric, cur)
            conds.append(f"{alias}.rn IN (SELECT rn FROM {values} WHERE value >= ? "
                         "AND value <= ?)")
            params += [-1e308 if f.low is None else f.low, 1e308 if f.high is None else f.high]
        return " AND ".join(conds), params

    def _texts(self, loaded: LoadedRun, rows: list[dict[str, Any]], cur,
               limit: int = LISTED_TEXT) -> None:
        """The question and answer of a page's rows, from the files: `limit`
        characters and one more, so that a page can tell a cut text (clip)."""
        if not rows:
            return
        run = loaded.run
        got = cur.execute(f"""SELECT r.rn, left(t.question, {limit + 1}) AS question,
                   left(coalesce(t.answer, t.error), {limit + 1}) AS answer
            FROM {self._scan(run, RESULTS.name)} t
            JOIN (SELECT * FROM {loaded.name}_r WHERE list_contains(?, rn)) r
              ON r.case_id = t.case_id AND r.bot = t.bot
            WHERE t.run_id = ? AND list_contains(?, t.case_id)""",
                          [[r["rn"] for r in rows], run.run_id,
                           sorted({r["case_id"] for r in rows})])
        texts = {rn: (q, a) for rn, q, a in got.fetchall()}
        for r in rows:
            r["question"], r["answer"] = texts.get(r["rn"], (None, None))

    def cases(self, loaded: LoadedRun, f: Filters, cur) -> Page:
        """A page of the run's case × bot rows matching the filters, in case order
        or by the chosen metric's value (f.sort; nulls last); with a metric
        chosen, its value on each row."""
        where, params = self._where(loaded, f, cur)
        value, join = "NULL", ""
        if f.metric:
            join = f"LEFT JOIN {self._ensure_metric(loaded, f.metric, cur)} m ON m.rn = r.rn"
            value = "m.value"
        select = f"""SELECT r.rn, r.case_id, r.bot, r.suite, r.verdict, r.verdict_reason,
                            {value} AS value
                     FROM {loaded.name}_r r {join} WHERE {where}"""
        rows, total, page, pages = _paged(cur, select, params, f.page, _order(f))
        self._texts(loaded, rows, cur)
        return Page(rows, total, page, pages)

    def verdict_counts(self, loaded: LoadedRun, cur) -> dict[str, dict[str, int]]:
        """bot -> verdict -> count (the explorer's header)."""
        out: dict[str, dict[str, int]] = {b: dict.fromkeys(VERDICT_ORDER, 0) for b in loaded.bots}
        for bot, verdict, n in cur.execute(
                f"SELECT bot, verdict, count(*) FROM {loaded.name}_r GROUP BY ALL"
        ).fetchall():
            out.setdefault(bot, dict.fromkeys(VERDICT_ORDER, 0))[verdict or "ERROR"] = n
        return out

    def errors(self, loaded: LoadedRun, cur, limit: int = PAGE_SIZE,
               case_id: str | None = None, page: int = 1) -> Page:
        """Page `page` of the run's errors/ rows, `limit` a page (by stage, case
        id, bot; of one case id when given; a page past the end is the last),
        and how many there are: what the verdict counts leave out (an invalid
        input row is in no results row)."""
        run = loaded.run
        if not run.files(ERRORS.name):
            return Page([], 0, 1, 1)
        where, params = "run_id = ?", [run.run_id]
        if case_id is not None:
            where, params = where + " AND case_id = ?", params + [case_id]
        scan = self._scan(run, ERRORS.name)
        total = cur.execute(f"SELECT count(*) FROM {scan} WHERE {where}", params).fetchone()[0]
        pages = max(1, -(-total // limit))
        page = min(max(1, page), pages)
        rows = _rows(cur.execute(f"""SELECT stage, case_id, bot, error_type, message
            FROM {scan} WHERE {where} ORDER BY stage, case_id, bot, message LIMIT ? OFFSET ?""",
                                 [*params, limit, (page - 1) * limit]))
        return Page(rows, total, page, pages)

    # ------------------------------------------------------------- one case

    def case(self, loaded: LoadedRun, case_id: str, cur) -> dict[str, Any] | None:
        """Everything of one case: the case's fields, and per bot its answer,
        verdict and every metric with its details and error (None: unknown case)."""
        run = loaded.run
        if not run.files(RESULTS.name):
            return None
        answers = _rows(cur.execute(f"""SELECT * FROM {self._scan(run, RESULTS.name)}
            WHERE run_id = ? AND case_id = ? ORDER BY bot""", [run.run_id, case_id]))
        if not answers:
            return None
        scores: list[dict[str, Any]] = []
        if run.files(SCORES.name):
            scores = _rows(cur.execute(f"""SELECT bot, metric, value, details, error
                FROM {self._scan(run, SCORES.name)}
                WHERE run_id = ? AND case_id = ? ORDER BY bot, metric""",
                                       [run.run_id, case_id]))
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

    def _pair(self, a: LoadedRun, b: LoadedRun, cur) -> str:
        """The rows both runs have (by case id and bot): b's rn, a's verdict and
        reason, and whether the answers differ; built once per pair."""
        key = (a.name, b.name)
        with self._lock:
            table = self._pairs.get(key)
        if table is not None:
            return table
        with self._pair_build:
            with self._lock:  # built by the request this one waited for
                table = self._pairs.get(key)
            if table is not None:
                return table
            table = f"pair_{a.name}_{b.name}"
            ha, hb = self._ensure_search(a, cur), self._ensure_search(b, cur)
            cur.execute(f"""CREATE OR REPLACE TABLE {table} AS
                SELECT y.rn, x.rn AS rn_a, x.verdict AS verdict_a, x.verdict_reason AS reason_a,
                       ta.answer_hash IS DISTINCT FROM tb.answer_hash AS answer_changed
                FROM {a.name}_r x JOIN {b.name}_r y ON x.case_id = y.case_id AND x.bot = y.bot
                JOIN {ha} ta ON ta.rn = x.rn JOIN {hb} tb ON tb.rn = y.rn
                ORDER BY y.rn""")
            with self._lock:
                self._pairs[key] = table
                while len(self._pairs) > CACHED_RUNS:
                    _, old = self._pairs.popitem(last=False)
                    self._retired.append(old)
                self._drop_retired()
        return table

    def side_by_side(self, a: LoadedRun, b: LoadedRun, f: Filters, cur) -> Page:
        """The cases × bots both runs answered, both answers and verdicts."""
        pair = self._pair(a, b, cur)
        where, params = self._where(b, f, cur, alias="y")
        if f.changed:
            where += (" AND (p.verdict_a IS DISTINCT FROM y.verdict OR p.answer_changed)")
        values, joins = "NULL AS value_a, NULL AS value_b", ""
        if f.metric:  # the chosen metric's value in each run (B's orders the rows)
            joins = (f"LEFT JOIN {self._ensure_metric(b, f.metric, cur)} mb ON mb.rn = y.rn")
            value_a = "NULL"
            if f.metric in a.metrics:
                joins += f" LEFT JOIN {self._ensure_metric(a, f.metric, cur)} ma ON ma.rn = p.rn_a"
                value_a = "ma.value"
            values = f"{value_a} AS value_a, mb.value AS value_b"
        select = f"""SELECT y.rn, p.rn_a, y.case_id, y.bot, y.suite, p.verdict_a, p.reason_a,
                            y.verdict AS verdict_b, y.verdict_reason AS reason_b, {values}
                     FROM {pair} p JOIN {b.name}_r y ON y.rn = p.rn {joins} WHERE {where}"""
        rows, total, page, pages = _paged(cur, select, params, f.page, _order(f, "value_b"))
        self._texts(b, rows, cur, SIDE_TEXT)
        for r in rows:
            r["answer_b"] = r.pop("answer")
        shown_a = [{"rn": r["rn_a"], "case_id": r["case_id"]} for r in rows]
        self._texts(a, shown_a, cur, SIDE_TEXT)
        for r, x in zip(rows, shown_a):
            r["answer_a"] = x["answer"]
        return Page(rows, total, page, pages)
def _json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def report_file(output: str, run_id: str, attempt: str) -> str | None:
    """The committed attempt's report.html (None when it has none): still
    staged as report.<attempt>.html when its process was killed between the
    completion marker and the rename, when report.html is an earlier attempt's."""
    check_run_id(run_id)
    for path in (staged_report_path(output, run_id, attempt, "html"),
                 FileSystems.join(output, "runs", run_id, "report.html")):
        if FileSystems.exists(path):
            return path
    return None


def stat_key(path: str) -> tuple | None:
    """What a stat says of a local file's bytes without reading them: its
    device, inode, size, mtime and ctime (None: it is gone or cannot be
    stat'ed). Writing, truncating, replacing (a rename) or restoring it
    changes one; so does os.utime, which sets the ctime to now."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def committed_state(run: CompletedRun) -> tuple:
    """What the check of a local run's listed files depends on: its attempt,
    the rows its marker counts, and each listed file's stat_key (None when it
    is gone). A re-run's commit, a file deleted, cut short, replaced or
    restored each change it; a stat is no read."""
    stats = [(path, stat_key(path)) for listed in run.manifest["files"].values()
             for path in (os.path.join(run.output, p) for p in listed)]  # run.files's, faster
    return run.attempt, tuple(sorted(run.manifest["tables"].items())), tuple(stats)


def run_ids(output: str) -> list[str]:
    """The folders under runs/ (a run id each, finished or not), sorted; a file
    there (.DS_Store, a README) is no run."""
    if "://" not in output:
        folder = os.path.join(output, "runs")
        return sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d))
                      ) if os.path.isdir(folder) else []
    return sorted(url_listing(output))


def url_listing(output: str) -> dict[str, dict[str, tuple | None]]:
    """A URL output's files runs/<run id>/<name>, from one listing: run id ->
    name -> what tells a change of the file without reading it: its size and
    time as listed; None when the time cannot (none listed, or to the second,
    as S3's and Azure's are, and less than SETTLED_SECONDS old: a rewrite
    within that second would list the same)."""
    try:  # an object store has no folders: the run ids are in its files' names
        prefix = FileSystems.join(output, "runs") + "/"
        found = FileSystems.match([prefix + "*/*"])[0].metadata_list
    except Exception as exc:  # no filesystem for the scheme, its options, credentials
        raise unreachable(output, exc) from None
    now, runs = time.time(), {}
    for m in found:
        run_id, _, name = m.path[len(prefix):].partition("/")
        if run_id:
            when = m.last_updated_in_seconds
            settled = when and (when % 1 or now - when >= SETTLED_SECONDS)
            runs.setdefault(run_id, {})[name] = (m.size_in_bytes, when) if settled else None
    return runs


