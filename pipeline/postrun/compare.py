"""`evalbeam compare`: did the candidate run get better or worse than the
baseline, and is the difference real?

Reads each run through its completion marker: the files its manifest lists
(read_parquet over that list with Hive partitioning, filtered by run_id), so a
killed or running attempt is never read and a run without a completed
attempt is refused (exit 2). DuckDB does the joins: pairing two runs
of a million cases × 16 metrics is one hash join of each scores table
against the pair list (a million rows), streamed out in Arrow batches into
two numpy matrices (cases × metrics); no table is held whole in memory. The
statistics then run on those matrices (stats.py).

Pairs: rows pair by (bot, case_id); bot against bot by case_id. Case ids
that appear in only one run, or more than once in a run (ambiguous), are not
paired: they are counted in every row of their bot and suite, listed on the
pages and all written to `<page>.unpaired.csv`.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa
from apache_beam.io.filesystem import BeamIOError, CompressionTypes
from apache_beam.io.filesystems import FileSystems

from pipeline.config import is_bot_name, load_config
from pipeline.postrun.gate import check_gate
from pipeline.postrun.read import check_output, check_writable, read_completed_run
from transforms.text.wording import counted
from schemas.tables import (ALL_SUITES, COMPARISONS, PASS_RATE, VERDICT_METRIC,
                           VERDICT_ORDER as VERDICTS)
from transforms.publish import pass_rate
from transforms.publish.compare_page import delta_text, render_compare_html, render_compare_md
from transforms.publish.html import num
from transforms.publish.paired import (CHANGED, MIN_DIFFERENCE, TIE, bot_seed, change,
                                       group_rows, passed, transitions)
from transforms.publish.write import RUN_ID_PATTERN, replace_table_file, replace_text_file
from transforms.score.scoring import UNSCALED, recorded_direction

REGRESSED_CASES = 10   # most regressed cases per bot on the pages
LISTED_UNPAIRED = 50   # unpaired case ids per bot and kind on the pages (all in the CSV)
UNPAIRED_KINDS = ("only_in_baseline", "only_in_candidate", "duplicate_case_id")
_BATCH_ROWS = 1_000_000


class CompareError(ValueError):
    """A bad invocation or missing data; the message is one line."""


@dataclass(frozen=True)
class Side:
    run_id: str
    bot: str | None = None

    @property
    def label(self) -> str:
        return self.run_id if self.bot is None else f"{self.run_id}:{self.bot}"


def parse_side(spec: str, flag: str) -> Side:
    run_id, _, bot = spec.partition(":")
    if not RUN_ID_PATTERN.match(run_id) or (bot and not is_bot_name(bot)):
        raise CompareError(f"{flag} {spec!r} must be RUN_ID or RUN_ID:BOT (letters, digits, "
                           "'-', '_')")
    return Side(run_id, bot or None)


def page_stem(baseline: Side, candidate: Side) -> str:
    """Name of the comparison's pages and table file (run ids and bot names
    have no '.', so the parts stay apart)."""
    if baseline.bot is None:
        return baseline.run_id
    return f"{baseline.run_id}.{baseline.bot}.vs.{candidate.bot}"


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _scan(files: Sequence[str]) -> str:
    """A table's files (those a run's manifest lists) with Hive partitioning;
    partition values stay text (a bot named 2024 is the string '2024'), and
    older files lacking newer columns still read."""
    listed = ", ".join(_lit(f) for f in files)
    return (f"read_parquet([{listed}], hive_partitioning=true, hive_types_autocast=false, "
            "union_by_name=true)")


def _where(side: Side, alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    cond = f"{prefix}run_id = {_lit(side.run_id)}"
    return cond if side.bot is None else f"{cond} AND {prefix}bot = {_lit(side.bot)}"


def _connect(workdir: str):
    import duckdb
    con = duckdb.connect(config={"threads": 2, "memory_limit": "1GB",
                                 "temp_directory": workdir,
                                 "preserve_insertion_order": False})
    return con


class Tables:
    """The two runs' rows in DuckDB: results per side, the pair list, values.
    Each side's rows come from the files its run's manifest lists (a killed
    or running attempt's files are never read); a URL output's files are
    copied under `stage` first."""

    def __init__(self, con, output: str, baseline: Side, candidate: Side, stage: str):
        self.con, self.output, self.stage = con, output, stage
        self.baseline, self.candidate = baseline, candidate
        self.runs = {s.run_id: read_completed_run(output, s.run_id)
                     for s in (baseline, candidate)}
        # run against run pairs by (bot, case_id); bot against bot by case_id
        self.key = "bot" if baseline.bot is None else _lit(candidate.bot)
        self.run_date = ""  # the candidate's run_date partition, known after load()

    def scan(self, side: Side, table: str) -> str:
        """The side's run's committed files of a table, for a FROM clause."""
        run = self.runs[side.run_id]
        files = run.files(table)
        if not files:
            raise CompareError(run.no_files(table))
        return _scan(run.local_files(table, self.stage))

    def sql(self, query: str, params: Sequence[Any] = (), stream: bool = False):
        """Run a query (stream: an Arrow batch reader over its result)."""
        import duckdb
        try:
            if not stream:
                return self.con.execute(query, list(params))
            rel = self.con.sql(query)
            # DuckDB 2 names it to_arrow_reader, 1.x fetch_arrow_reader
            return (getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader)(_BATCH_ROWS)
        except (duckdb.IOException, duckdb.InvalidInputException) as exc:
            # a listed file gone, or there but not Parquet (cut short by a copy)
            raise CompareError(f"cannot read the tables under {self.output}: "
                               f"{str(exc).splitlines()[0]}") from None
        except duckdb.BinderException as exc:  # a file without a column evalbeam writes
            missing = re.search(r'column "([^"]+)" not found', str(exc))
            raise CompareError(
                f"cannot read the tables under {self.output}: a file lacks the column "
                f"{missing[1] if missing else '?'} that evalbeam writes (written by hand or "
                "by another tool?); see docs/reference/tables.md") from None

    def unruled(self, side: Side, rows: Sequence[Mapping[str, Any]]) -> dict:
        """(bot, suite) -> why no rule could decide the side's rows there
        (pass_rate.unruled, from its run's summary/ and rules), for the bots
        and suites of `rows`; a run whose summary/ cannot be read says nothing."""
        run = self.runs[side.run_id]
        try:
            columns = ("bot", "suite", "metric", "count", "error_count")
            summary = [dict(zip(columns, r)) for r in self.sql(
                f"SELECT {', '.join(columns)} FROM {self.scan(side, 'summary')}").fetchall()]
        except CompareError:
            return {}
        why = pass_rate.unruled(run.manifest, summary)
        keys = {(side.bot or r["bot"], r["suite"]) for r in rows}
        return {k: w for k in keys if (w := why(*k))}

    def load(self) -> None:
        for name, side in (("res_b", self.baseline), ("res_c", self.candidate)):
            self.sql(f"""CREATE TEMP TABLE {name} AS
                SELECT {self.key} AS key_bot, case_id, any_value(suite) AS suite,
                       any_value(verdict) AS verdict, count(*) AS n,
                       max(run_date) AS run_date
                FROM {self.scan(side, 'results')} WHERE {_where(side)} GROUP BY ALL""")
            if not self.sql(f"SELECT count(*) FROM {name}").fetchone()[0]:
                what = f"bot {side.bot!r} of run {side.run_id!r}" if side.bot else \
                    f"run {side.run_id!r}"
                raise CompareError(f"no results/ rows for {what} under {self.output}")
        self.sql("""CREATE TEMP TABLE pairs AS
            SELECT coalesce(c.key_bot, b.key_bot) AS key_bot,
                   coalesce(c.case_id, b.case_id) AS case_id,
                   coalesce(c.suite, b.suite) AS suite, b.verdict AS vb, c.verdict AS vc,
                   b.n AS nb, c.n AS nc
            FROM res_b b FULL OUTER JOIN res_c c
              ON b.key_bot = c.key_bot AND b.case_id = c.case_id""")
        self.sql("""CREATE TEMP TABLE paired AS
            SELECT key_bot, case_id, suite, vb, vc,
                   CAST(row_number() OVER (ORDER BY key_bot, suite NULLS FIRST, case_id) - 1
                        AS BIGINT) AS idx
            FROM pairs WHERE nb = 1 AND nc = 1""")
        self.sql("""CREATE TEMP TABLE unpaired AS
            SELECT key_bot, suite, case_id,
                   CASE WHEN nc IS NULL THEN 'only_in_baseline'
                        WHEN nb IS NULL THEN 'only_in_candidate'
                        ELSE 'duplicate_case_id' END AS kind
            FROM pairs WHERE nb IS NULL OR nc IS NULL OR nb > 1 OR nc > 1""")
        self.run_date = self.sql("SELECT max(run_date) FROM res_c").fetchone()[0]
        # (bot, suite) -> cases of a baseline suite no case of the bot has in the candidate
        self.gone_suites = {(bot, suite): n for bot, suite, n in self.sql("""
            SELECT key_bot, suite, count(*) FROM res_b b WHERE suite IS NOT NULL AND NOT EXISTS
              (SELECT 1 FROM res_c c WHERE c.key_bot = b.key_bot AND c.suite = b.suite)
            GROUP BY ALL""").fetchall()}
        self.sql("DROP TABLE pairs; DROP TABLE res_b; DROP TABLE res_c")

    def check_pairs(self) -> None:
        """Nothing paired is a bad invocation (exit 2), never an empty comparison
        that a CI job would take for a pass."""
        if self.sql("SELECT count(*) FROM paired").fetchone()[0]:
            return
        said = f"no case of {self.candidate.label} pairs with one of {self.baseline.label}: "
        apart = self.bots_apart()
        if apart:
            raise CompareError(said + apart)
        kinds = dict(self.sql("SELECT kind, count(*) FROM unpaired GROUP BY ALL").fetchall())
        raise CompareError(
            f"{said}{kinds.get('only_in_baseline', 0)} only in baseline, "
            f"{kinds.get('only_in_candidate', 0)} only in candidate, "
            f"{kinds.get('duplicate_case_id', 0)} with a repeated case id (are they the same "
            "cases? give both inputs a case_id column)")

    def bots_apart(self) -> str | None:
        """Why two runs pair nothing when it is their bots, not their cases:
        no bot in common (a renamed bot), with the RUN:BOT flags that compare
        the two; None when the runs share a bot (or bots were given)."""
        if self.baseline.bot is not None:
            return None
        bots = {kind: names for kind, names in self.sql(
            "SELECT kind, list(DISTINCT key_bot ORDER BY key_bot) FROM unpaired "
            "GROUP BY ALL").fetchall()}
        base, cand = (bots.get(k, []) for k in ("only_in_baseline", "only_in_candidate"))
        if not base or not cand or set(base) & set(cand) or "duplicate_case_id" in bots:
            return None
        b, c = (names[0] if len(names) == 1 else "BOT" for names in (base, cand))
        return (f"the runs have no bot in common (baseline: {', '.join(base)}; candidate: "
                f"{', '.join(cand)}); to compare two bots give both: --baseline "
                f"{self.baseline.run_id}:{b} --candidate {self.candidate.run_id}:{c}")

    def metrics(self, side: Side) -> dict[str, dict]:
        """metric -> {higher_is_better, lo, hi} from the side's summary/ (all suites);
        higher_is_better null: the metric has no direction (answer_length)."""
        rows = self.sql(f"""SELECT metric, bool_and(higher_is_better),
                   min("min"), max("max")
            FROM {self.scan(side, 'summary')}
            WHERE {_where(side)} AND suite = {_lit(ALL_SUITES)}
              AND metric <> {_lit(VERDICT_METRIC)} GROUP BY ALL""").fetchall()
        return {m: {"higher_is_better": hib, "lo": lo, "hi": hi} for m, hib, lo, hi in rows}

    def groups(self) -> list[tuple[str, str | None, int, int]]:
        """(bot, suite, first idx, stop idx) of the pairs, in idx order."""
        return self.sql("""SELECT key_bot, suite, min(idx), max(idx) + 1 FROM paired
                           GROUP BY ALL ORDER BY 3""").fetchall()

    def verdict_codes(self) -> tuple[np.ndarray, np.ndarray]:
        code = " ".join(f"WHEN {_lit(v)} THEN {i}" for i, v in enumerate(VERDICTS))
        got = self.sql(f"""SELECT CAST(coalesce(CASE vb {code} END, -1) AS TINYINT) AS b,
                                  CAST(coalesce(CASE vc {code} END, -1) AS TINYINT) AS c
                           FROM paired ORDER BY idx""").fetchnumpy()
        return np.asarray(got["b"]), np.asarray(got["c"])

    def values(self, side: Side, metrics: Sequence[str], n: int) -> np.ndarray:
        """(pairs × metrics) values of one side, NaN where null or absent."""
        out = np.full((n, len(metrics)), np.nan)
        self.con.register("metric_ids", pa.table({"metric": list(metrics),
                                                  "midx": list(range(len(metrics)))}))
        key = "s.bot" if self.key == "bot" else self.key
        reader = self.sql(f"""SELECT p.idx, m.midx, s.value
            FROM {self.scan(side, 'scores')} s
            JOIN paired p ON p.key_bot = {key} AND p.case_id = s.case_id
            JOIN metric_ids m ON m.metric = s.metric
            WHERE {_where(side, 's')}""", stream=True)
        for batch in reader:
            idx = batch.column(0).to_numpy()
            out[idx, batch.column(1).to_numpy()] = batch.column(2).to_numpy(zero_copy_only=False)
        self.con.unregister("metric_ids")
        return out

    def case_ids(self, idx: Sequence[int]) -> dict[int, tuple[str, str | None]]:
        rows = self.sql("SELECT idx, case_id, suite FROM paired WHERE list_contains(?, idx)",
                        [list(map(int, idx))]).fetchall()
        return {i: (c, s) for i, c, s in rows}

    def answers(self, side: Side, bot: str, case_ids: Sequence[str]) -> dict[str, dict]:
        """question, answer, verdict and reason of some cases of one side."""
        side_bot = side.bot or bot
        rows = self.sql(f"""SELECT case_id, question, answer, verdict, verdict_reason, error
            FROM {self.scan(side, 'results')}
            WHERE run_id = ? AND bot = ? AND list_contains(?, case_id)""",
                        [side.run_id, side_bot, list(case_ids)]).fetchall()
        keys = ("case_id", "question", "answer", "verdict", "reason", "error")
        return {r[0]: dict(zip(keys, r)) for r in rows}

    def unpaired_counts(self) -> dict[tuple[str, str], dict[str, int]]:
        """(bot, suite or '*') -> {kind: count}."""
        counts: dict[tuple[str, str], dict[str, int]] = {}
        for bot, suite, kind, n in self.sql(
                "SELECT key_bot, suite, kind, count(*) FROM unpaired GROUP BY ALL").fetchall():
            for key in {(bot, ALL_SUITES), (bot, suite if suite is not None else ALL_SUITES)}:
                per = counts.setdefault(key, dict.fromkeys(UNPAIRED_KINDS, 0))
                per[kind] += n
        return counts

    def unpaired_listed(self) -> dict[str, dict[str, list[str]]]:
        listed: dict[str, dict[str, list[str]]] = {}
        for bot, kind, case_id in self.sql(f"""SELECT key_bot, kind, case_id FROM (
                SELECT *, row_number() OVER (PARTITION BY key_bot, kind ORDER BY case_id) AS rn
                FROM unpaired) WHERE rn <= {LISTED_UNPAIRED} ORDER BY ALL""").fetchall():
            listed.setdefault(bot, {k: [] for k in UNPAIRED_KINDS})[kind].append(case_id)
        return listed

    def write_unpaired_csv(self, path: str) -> None:
        columns = (("key_bot", "bot"), ("kind", "kind"), ("case_id", "case_id"),
                   ("suite", "suite"))
        cells = ", ".join(f"{_csv_safe(c)} AS {name}" for c, name in columns)
        self.sql(f"""COPY (SELECT {cells} FROM unpaired ORDER BY key_bot, kind, case_id, suite)
                     TO {_lit(path)} (HEADER, DELIMITER ',')""")


# A spreadsheet runs a cell that starts with one of these as a formula
# (=HYPERLINK(...), +cmd, @SUM); OWASP's fix: a leading ' makes it text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_APOSTROPHE = _lit("'")


def _csv_safe(column: str) -> str:
    """SQL for a CSV cell that a spreadsheet cannot take for a formula."""
    starts = " OR ".join(f"starts_with({column}, {_lit(c)})" for c in FORMULA_STARTS)
    return f"CASE WHEN {starts} THEN {_APOSTROPHE} || {column} ELSE {column} END"


# ------------------------------------------------------------------ statistics

def regression_order(base: np.ndarray, cand: np.ndarray, vb: np.ndarray, vc: np.ndarray,
                     sign: np.ndarray, limit: int,
                     min_difference: float = MIN_DIFFERENCE) -> list[int]:
    """Rows that regressed most: the verdict got worse by most steps, then the
    largest summed drop of the [0, 1] metrics (sign: +1 higher is better, -1
    lower; 0 leaves a metric out). Rows that did not regress are left out: a
    metric's drop counts only beyond the minimum practical difference."""
    steps = np.where((vb >= 0) & (vc >= 0), vc.astype(int) - vb.astype(int), 0)
    drops = (base - cand) * sign
    drops = np.where(np.abs(drops) > max(min_difference, TIE), drops, 0.0)
    drop = np.nansum(drops, axis=1)
    order = np.lexsort((-drop, -steps))
    worse = (steps > 0) | ((steps == 0) & (drop > 0))
    return [int(i) for i in order if worse[i]][:limit]


@dataclass
class Pairs:
    """Everything the statistics need, in pair (idx) order."""
    metrics: list[str]            # compared metrics, then pass_rate
    higher: list[bool]
    unit: list[bool]              # metric on a [0, 1] scale (rankings, forest plot)
    base: np.ndarray
    cand: np.ndarray
    vb: np.ndarray
    vc: np.ndarray
    groups: list[tuple[str, str | None, int, int]]
    min_difference: float = MIN_DIFFERENCE


def _bots(groups) -> dict[str, tuple[int, int, list[tuple[str | None, int, int]]]]:
    bots: dict[str, list] = {}
    for bot, suite, start, stop in groups:
        entry = bots.setdefault(bot, [start, stop, []])
        entry[0], entry[1] = min(entry[0], start), max(entry[1], stop)
        entry[2].append((suite, start, stop))
    return {b: (s, e, parts) for b, (s, e, parts) in bots.items()}


def bot_rows(bot: str, pairs: Pairs) -> list[dict]:
    """Rows of the comparisons table for one bot: all suites, then each suite."""
    start, stop, parts = _bots(pairs.groups)[bot]
    base, cand = pairs.base[start:stop], pairs.cand[start:stop]
    vb, vc = pairs.vb[start:stop], pairs.vc[start:stop]
    suites = [(ALL_SUITES, 0, stop - start)] + [(suite, s - start, e - start)
                                                 for suite, s, e in parts]
    groups = group_rows(base, cand, pairs.higher, pairs.metrics,
                        [s - start for _, s, _ in parts], bot_seed(bot),
                        pairs.min_difference)
    rows = []
    for (suite, a, b), group in zip(suites, groups):
        if suite is None:  # cases without a suite count in the all-suites rows only
            continue
        for row in group:
            row.update(bot=bot, suite=suite)
            if row["metric"] == PASS_RATE:
                row["transitions"] = json.dumps(transitions(vb[a:b], vc[a:b]))
        rows.extend(group)
    return rows


# ------------------------------------------------------------------ the comparison

def in_unit_range(stats: dict) -> bool:
    """Every value of the metric (summary min and max) lies in [0, 1]."""
    return stats["lo"] is None or (0 <= stats["lo"] and stats["hi"] <= 1)


def direction(metric: str, base: dict, cand: dict) -> bool | None:
    """The compared metric's direction: None (no direction) when either side
    has none; else higher is better unless a side says lower."""
    sides = [recorded_direction(metric, s["higher_is_better"]) for s in (base, cand)]
    return None if None in sides else all(sides)


def read_pairs(tables: Tables, min_difference: float = MIN_DIFFERENCE
               ) -> tuple[Pairs, dict[str, list[str]]]:
    """The paired value matrices; and the metrics only one side has."""
    mb, mc = tables.metrics(tables.baseline), tables.metrics(tables.candidate)
    if not mb or not mc:
        raise CompareError("no summary/ rows for "
                           f"{tables.baseline.label if not mb else tables.candidate.label}")
    compared = sorted(set(mb) & set(mc))
    groups = tables.groups()
    n = groups[-1][3] if groups else 0
    base = tables.values(tables.baseline, compared, n)
    cand = tables.values(tables.candidate, compared, n)
    vb, vc = tables.verdict_codes()
    unit = [m not in UNSCALED and in_unit_range(mb[m]) and in_unit_range(mc[m])
            for m in compared]
    pairs = Pairs(metrics=[PASS_RATE, *compared],
                  higher=[True, *(direction(m, mb[m], mc[m]) for m in compared)],
                  unit=[True, *unit], base=np.hstack([passed(vb), base]),
                  cand=np.hstack([passed(vc), cand]), vb=vb, vc=vc, groups=groups,
                  min_difference=min_difference)
    only = {"only_in_baseline": sorted(set(mb) - set(mc)),
            "only_in_candidate": sorted(set(mc) - set(mb))}
    return pairs, only


def regressed_cases(tables: Tables, pairs: Pairs, bot: str) -> list[dict]:
    """The most regressed cases of a bot with both answers and both reasons."""
    start, stop, _ = _bots(pairs.groups)[bot]
    sign = np.array([0.0] + [(1.0 if h else -1.0) if u and h is not None else 0.0
                             for h, u in zip(pairs.higher[1:], pairs.unit[1:])])
    base, cand = pairs.base[start:stop], pairs.cand[start:stop]
    picked = regression_order(base, cand, pairs.vb[start:stop], pairs.vc[start:stop], sign,
                              REGRESSED_CASES, pairs.min_difference)
    if not picked:
        return []
    ids = tables.case_ids([start + i for i in picked])
    case_ids = [ids[start + i][0] for i in picked]
    before = tables.answers(tables.baseline, bot, case_ids)
    after = tables.answers(tables.candidate, bot, case_ids)
    out = []
    for i, case_id in zip(picked, case_ids):
        drops = sorted(((base[i, j] - cand[i, j]) * sign[j], pairs.metrics[j], base[i, j],
                        cand[i, j]) for j in range(len(pairs.metrics))
                       if sign[j] and not np.isnan(base[i, j] - cand[i, j]))
        top = [f"{m} {b:.2f} → {c:.2f}" for d, m, b, c in reversed(drops[-3:])
               if d > max(pairs.min_difference, TIE)]
        out.append({"case_id": case_id, "suite": ids[start + i][1],
                    "baseline": before.get(case_id, {}), "candidate": after.get(case_id, {}),
                    "metric_drops": top})
    return out


def _rules_text(verdict: dict) -> str:
    """A run's verdict rules in a few words: where they came from, how many."""
    source = "config rules" if verdict.get("explicit") else f"preset {verdict.get('preset')}"
    n = len(verdict.get("rules") or [])
    return f"{source}, {counted(n, 'rule')}, otherwise {verdict.get('otherwise')}"


def verdict_note(baseline: dict, candidate: dict) -> str | None:
    """What to say when the two manifests' verdict rules differ: a pass_rate
    change is then the rules' as much as the answers' (None: same rules, or a
    manifest without its config or its verdict's rules as a list)."""
    vb, vc = ((m.get("config") or {}).get("verdict") for m in (baseline, candidate))
    if not all(isinstance(v, dict) and isinstance(v.get("rules") or [], list) for v in (vb, vc)):
        return None  # (a tampered marker's rules: 5)
    if all(vb.get(k) == vc.get(k) for k in ("rules", "otherwise")):
        return None
    return (f"the runs' verdicts come from different rules (baseline: {_rules_text(vb)}; "
            f"candidate: {_rules_text(vc)}): a pass_rate change measures the rules, not "
            "only the answers")


def pages_dir(output: str, candidate: Side) -> str:
    return FileSystems.join(output, "runs", candidate.run_id, "compare")


def table_dir(output: str, run_date: str) -> str:
    """The comparisons/ partition a comparison's table file goes in."""
    return FileSystems.join(output, COMPARISONS.name, f"run_date={run_date}")


def _publish(local: str, path: str) -> None:
    """A file written locally, copied to `path` (a URL) through Beam's FileSystems."""
    with open(local, "rb") as src, FileSystems.create(
            path, compression_type=CompressionTypes.UNCOMPRESSED) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


def compare(output: str, baseline: Side, candidate: Side,
            min_difference: float = MIN_DIFFERENCE) -> dict[str, Any]:
    """The whole comparison as plain data (rows of the table, the pages'
    content); writes the list of unpaired cases, when there are any, as CSV."""
    if (baseline.bot is None) != (candidate.bot is None):
        raise CompareError("give a bot on both sides (RUN:BOT) or on neither")
    if baseline == candidate:
        raise CompareError(f"baseline and candidate are the same ({baseline.label})")
    output = check_output(output)
    url = "://" in output
    stem = page_stem(baseline, candidate)
    with tempfile.TemporaryDirectory(prefix="evalbeam-compare-") as workdir:
        con = _connect(workdir)
        try:
            tables = Tables(con, output, baseline, candidate, os.path.join(workdir, "tables"))
            tables.load()
            tables.check_pairs()
            check_writable(output, table_dir(output, tables.run_date),  # before the work
                           pages_dir(output, candidate))
            pairs, only = read_pairs(tables, min_difference)
            bots = list(_bots(pairs.groups))
            unpaired = tables.unpaired_counts()
            rows = []
            for bot in bots:
                for row in bot_rows(bot, pairs):
                    counts = unpaired.get((bot, row["suite"]), {})
                    row.update({k: counts.get(k, 0) for k in UNPAIRED_KINDS})
                    rows.append(row)
            overall = {bot: counts for (bot, suite), counts in unpaired.items()
                       if suite == ALL_SUITES}
            csv = None
            if any(sum(c.values()) for c in overall.values()):
                csv = FileSystems.join(pages_dir(output, candidate), f"{stem}.unpaired.csv")
                local = os.path.join(workdir, "unpaired.csv") if url else csv
                os.makedirs(os.path.dirname(local), exist_ok=True)
                tables.write_unpaired_csv(local)
                if url:
                    _publish(local, csv)
            return {
                "output": output, "baseline": baseline.label, "candidate": candidate.label,
                "baseline_side": baseline, "candidate_side": candidate, "stem": stem,
                "run_date": tables.run_date, "rows": rows, "bots": bots,
                "metrics": pairs.metrics, "unit": dict(zip(pairs.metrics, pairs.unit)),
                "paired": {b: e - s for b, (s, e, _) in _bots(pairs.groups).items()},
                "regressed": {b: regressed_cases(tables, pairs, b) for b in bots},
                "unpaired": overall, "unpaired_listed": tables.unpaired_listed(),
                "unpaired_csv": csv, "not_compared": only, "min_difference": min_difference,
                "gone_suites": tables.gone_suites,
                "notes": [n for n in [verdict_note(*(tables.runs[s.run_id].manifest
                                                     for s in (baseline, candidate)))] if n],
                "unruled": [tables.unruled(s, rows) for s in (baseline, candidate)],
                **{key: {b: n[kind] for b, n in overall.items() if b not in bots and n.get(kind)}
                   for key, kind in (("unpaired_bots", "only_in_baseline"),
                                     ("new_bots", "only_in_candidate"))},
            }
        finally:
            con.close()


# ------------------------------------------------------------------ outputs and command

def table_rows(c: dict[str, Any]) -> list[dict]:
    """Rows of comparisons/ (the contract's columns)."""
    base, cand = c["baseline_side"], c["candidate_side"]
    return [{**r, "run_id": cand.run_id, "baseline_run_id": base.run_id,
             "baseline_bot": base.bot or r["bot"], "comparison": c["stem"]} for r in c["rows"]]


def shown(c: dict[str, Any]) -> dict[str, Any]:
    """The comparison as its pages and lines show it: a side's pass rate "–"
    where no rule decided its rows (pass_rate.shown_pairs), and a note saying so.
    comparisons/ and the gate read `c` itself."""
    unruled = c.get("unruled") or ({}, {})
    bots = [getattr(c.get(f"{s}_side"), "bot", None) for s in ("baseline", "candidate")]
    rows = pass_rate.shown_pairs(c["rows"], [
        lambda r, i=i: unruled[i].get((bots[i] or r["bot"], r["suite"])) for i in range(2)])
    note = pass_rate.paired_note(rows)
    return {**c, "rows": rows, "notes": [*c.get("notes", ()), *([note] if note else [])]}


def write_comparison(c: dict[str, Any]) -> dict[str, str]:
    """comparisons/run_date=D/part-<candidate>.<stem>.parquet (an earlier file
    of the same comparison, on any date, is replaced) and the two pages."""
    output, cand, stem = c["output"], c["candidate_side"], c["stem"]
    name = f"part-{cand.run_id}.{stem}.parquet"
    try:  # through Beam's FileSystems: a local folder or a URL (gs://, s3://, hdfs://)
        found = FileSystems.match([FileSystems.join(output, COMPARISONS.name, "run_date=*",
                                                    name)])[0].metadata_list
    except BeamIOError:  # no comparisons/ yet
        found = []
    paths = {"table": FileSystems.join(table_dir(output, c["run_date"]), name)}
    replace_table_file(output, paths["table"], COMPARISONS.schema, table_rows(c))
    here = f"run_date={c['run_date']}"  # the copies of other dates (the candidate's moved)
    stale = [m.path for m in found if m.path.rstrip("/").split("/")[-2] != here]
    if stale:
        FileSystems.delete(stale)
    pages = pages_dir(output, cand)
    for ext, render in (("md", render_compare_md), ("html", render_compare_html)):
        paths[ext] = FileSystems.join(pages, f"{stem}.{ext}")
        replace_text_file(output, paths[ext], render(shown(c)))
    return paths


def summary_lines(c: dict[str, Any]) -> list[str]:
    """What the command prints: the pairing, then one line per bot."""
    unpaired = {k: sum(cnt[k] for cnt in c["unpaired"].values()) for k in UNPAIRED_KINDS}
    lines = [f"compare {c['candidate']} (candidate) vs {c['baseline']} (baseline): "
             f"{counted(sum(c['paired'].values()), 'paired case')} over "
             f"{counted(len(c['bots']), 'bot')}; "
             f"{unpaired['only_in_baseline']} only in baseline, "
             f"{unpaired['only_in_candidate']} only in candidate, "
             f"{unpaired['duplicate_case_id']} with a repeated case id"]
    for bot in c["bots"]:
        rows = [r for r in c["rows"] if r["bot"] == bot and r["suite"] == ALL_SUITES]
        worse = [r["metric"] for r in rows if change(r) == "worse"]
        better = [r["metric"] for r in rows if change(r) == "better"]
        pr = next(r for r in rows if r["metric"] == PASS_RATE)
        text = (f"  {bot}: pass rate {num(pr['baseline_mean'])} → {num(pr['candidate_mean'])} "
                f"(Δ {delta_text(pr)}, p_holm {pr['p_adjusted']:.2g})"
                if pr["n_pairs"] else f"  {bot}: no verdicts paired")
        moved = [r["metric"] for r in rows if change(r) == CHANGED]
        lines.append(f"{text} | significantly worse: {', '.join(worse) or 'none'} | "
                     f"better: {', '.join(better) or 'none'}"
                     + (f" | changed (no direction): {', '.join(moved)}" if moved else ""))
    lone = {side: [f"{bot} ({n:,} cases)" for bot, n in sorted(c[key].items())]
            for side, key in (("only_in_baseline", "unpaired_bots"),
                              ("only_in_candidate", "new_bots"))}
    only = [f"{what} {side.replace('_in_', ' in the ')}: {', '.join(names)}"
            for what, sides in (("bots", lone), ("metrics", c["not_compared"]))
            for side, names in sides.items() if names]
    if only:
        lines.append(f"not compared: {'; '.join(only)}")
    return lines + [f"note: {note}" for note in c.get("notes", ())]


LISTED_FAILURES = 10  # failed (and warned) gate checks printed (all of them are on the pages)


def _listed(checks: Sequence, label: str, noun: str) -> list[str]:
    """Up to LISTED_FAILURES checks, one line each, then how many more."""
    lines = [f"gate: {label} {g.describe()}: {g.finding()}" for g in checks[:LISTED_FAILURES]]
    if len(checks) > LISTED_FAILURES:
        lines.append(f"gate: ... and {len(checks) - LISTED_FAILURES} more {noun} "
                     "(all of them are on the pages)")
    return lines


def gate_lines(failed: Sequence, rules: int, checks: int, warned: Sequence = ()) -> list[str]:
    """The gate's outcome first: every failed check, then every check that
    passed with a warning (up to LISTED_FAILURES each), then how many failed,
    or that it passed."""
    if not checks:
        return []
    lines = (_listed(failed, "FAILED", "failed checks")
             + _listed(warned, "WARN", "checks with a warning"))
    warnings = f"; {len(warned)} with a warning" if warned else ""
    if not failed:
        return lines + [f"gate: passed ({counted(rules, 'rule')}, {counted(checks, 'check')}"
                        f"{warnings})"]
    return lines + [f"gate: {len(failed)} of {counted(checks, 'check')} failed "
                    f"({counted(rules, 'rule')}{warnings})"]


def run_compare(args) -> bool:
    """`evalbeam compare`: writes the table and pages, prints the summary;
    True when a gate rule failed. Raises CompareError, ConfigError or
    GateError (before writing anything) on a bad invocation."""
    cfg = load_config(args.config)
    baseline = parse_side(args.baseline, "--baseline")
    candidate = parse_side(args.candidate, "--candidate")
    min_difference = getattr(args, "min_difference", None)
    c = compare(args.output, baseline, candidate,
                MIN_DIFFERENCE if min_difference is None else min_difference)
    checks = sorted(check_gate(cfg.gate, c["rows"], c["not_compared"], c["unpaired_bots"],
                               c["new_bots"], c["gone_suites"]),
                    key=lambda g: ("FAIL", "WARN", "pass").index(g.status))  # failed first
    # the findings read as the pages do: a pass rate "–" where no rule decided a side
    seen = dict(zip(map(id, c["rows"]), shown(c)["rows"]))
    checks = [dataclasses.replace(g, row=seen.get(id(g.row), g.row)) for g in checks]
    c["gate"] = [{"rule": g.describe(), "finding": g.finding(), "failed": g.failed,
                  "status": g.status} for g in checks]
    paths = write_comparison(c)
    failed = [g for g in checks if g.failed]
    if args.config and not cfg.gate:  # a gate asked for and not written: never a silent pass
        print(f"gate: none (--config {args.config} has no gate: rules)")
    for line in gate_lines(failed, len(cfg.gate), len(checks),
                           [g for g in checks if g.status == "WARN"]):
        print(line)
    for line in summary_lines(shown(c)):
        print(line)
    print(f"table:   {paths['table']}")
    print(f"pages:   {paths['md']}, {paths['html']}")
    if c["unpaired_csv"]:
        print(f"unpaired: {c['unpaired_csv']}")
    return bool(failed)
