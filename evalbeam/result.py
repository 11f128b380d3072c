"""A finished run as a notebook user reads it: its tables as Arrow tables or
pandas DataFrames, its summary, its report. Everything is read through the
run's completion marker (runs/<run_id>/manifest.json, checked by
transforms/publish/completed.py): the files it lists, never a glob, so
another attempt's or run's files are never mixed in."""
from __future__ import annotations

import html
import warnings
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from apache_beam.io.filesystems import FileSystems

from transforms.text.wording import counted
from schemas.tables import ALL_SUITES, TABLES, VERDICT_METRIC, TableSpec
from transforms.publish import pass_rate
from transforms.publish.completed import CompletedRun, RunUnreadable, read_completed_run

HEADLINE = ("hallucination", "completeness", "answer_relevance", "rougeL", "faithfulness",
            "answer_correctness")


def _pandas():
    try:
        import pandas
    except ImportError:
        raise ImportError("to_pandas() needs pandas: pip install pandas (everything else of "
                          "evalbeam's API works without it)") from None
    return pandas


def _empty(spec: TableSpec) -> pa.Table:
    """A table of a run that evaluated nothing (every input row invalid, or
    none): no rows, with the columns a reader filters on, as its files would
    have had (partition columns as text)."""
    extra = [pa.field(p, pa.string()) for p in spec.partitions if p not in spec.schema.names]
    return pa.schema([*spec.schema, *extra]).empty_table()


class Result:
    """One finished run: `evalbeam.evaluate()` returns it, `evalbeam.read_run()` reads it."""

    def __init__(self, run: CompletedRun):
        self._run = run
        self.output = run.output
        self.manifest = dict(run.manifest)
        self._tables: dict[str, pa.Table] = {}

    @classmethod
    def read(cls, output: str, run_id: str) -> "Result":
        """The run through its completion marker (RunUnreadable, a ValueError,
        when it has no completed attempt or a corrupt marker)."""
        return cls(read_completed_run(output, run_id))

    # ----------------------------------------------------------- facts

    @property
    def run_id(self) -> str:
        return self._run.run_id

    @property
    def run_date(self) -> str:
        return self._run.run_date

    @property
    def bots(self) -> list[str]:
        return self._run.bots

    @property
    def metrics(self) -> list[str]:
        return self._run.metrics

    @property
    def counts(self) -> dict[str, int]:
        """Input rows, valid cases, invalid rows, bot errors, rows per table."""
        return self._run.counts

    @property
    def notes(self) -> list[str]:
        return list(self.manifest.get("notes", []))

    @property
    def report_path(self) -> str:
        """The HTML report (report.md lies beside it)."""
        return FileSystems.join(self.output, "runs", self.run_id, "report.html")

    @property
    def report_md_path(self) -> str:
        return FileSystems.join(self.output, "runs", self.run_id, "report.md")

    def head_to_head(self) -> list[dict]:
        """Each pair of bots on the cases both answered (all suites): the
        report's head-to-head rows, as plain data."""
        return [dict(p) for p in self.manifest.get("head_to_head", [])]

    # ----------------------------------------------------------- tables

    def table(self, name: str) -> pa.Table:
        """A table of the run (results, scores, summary, errors, usage) as Arrow,
        partition columns (run_date, bot) included."""
        if name not in TABLES:
            raise ValueError(f"unknown table {name!r}; tables: {', '.join(TABLES)}")
        if name not in self._tables:
            spec = TABLES[name]
            # no file because no row: nothing evaluated, or no metric chosen (metrics=[])
            nothing = not self._run.files(name) and 0 in (self.counts.get("valid_cases"),
                                                          self.counts.get(f"{name}_rows"))
            self._tables[name] = _empty(spec) if nothing else self._read(spec)
        return self._tables[name]

    def _read(self, spec: TableSpec) -> pa.Table:
        """The table's files; when they are gone because the run id was run
        again since (a notebook cell re-run), an error that says so."""
        try:
            return self._run.read(spec)
        except RunUnreadable:
            try:
                now = read_completed_run(self.output, self.run_id).attempt
            except RunUnreadable:
                now = self._run.attempt
            if now == self._run.attempt:
                raise
            raise RunUnreadable(
                f"run {self.run_id!r} was run again after this Result was read (attempt "
                f"{self._run.attempt} replaced by {now}): read it again with "
                f"evalbeam.read_run({self.output!r}, {self.run_id!r})") from None

    def results(self) -> pa.Table:
        """One row per case × bot: question, answer, verdict, reason, ..."""
        return self.table("results")

    def scores(self) -> pa.Table:
        """One row per case × bot × metric: value (null when not computable),
        details (JSON) and the error that made it null."""
        return self.table("scores")

    def errors(self) -> pa.Table:
        return self.table("errors")

    def usage(self) -> pa.Table:
        return self.table("usage")

    def summary(self, suite: str | None = ALL_SUITES) -> pa.Table:
        """Per bot and metric: count, missing, mean with its 95% interval,
        percentiles; the row with metric 'verdict' counts PASS/WARN/FAIL/ERROR
        and its mean is the pass rate. suite='*' (default) all suites
        together, a suite's name for that suite (a ValueError naming the
        run's suites when it has no such suite), None every row."""
        table = self.table("summary")
        if suite is not None:
            suites = sorted(set(table["suite"].to_pylist()) - {None})
            if suites and suite not in suites:  # a typo, not a suite without rows
                raise ValueError(f"run {self.run_id} has no suite {suite!r}; its suites: "
                                 f"{', '.join(map(repr, suites))} ({ALL_SUITES!r}: all "
                                 "together, None: every row)")
            table = table.filter(pc.equal(table["suite"], suite))
        keep = ["bot", "suite", "metric", "count", "missing", "mean", "ci_low", "ci_high",
                "p50", "p90", "min", "max", "higher_is_better", "pass_count", "warn_count",
                "fail_count", "error_count"]
        table = table.select([c for c in keep if c in table.column_names])
        return table.sort_by([("bot", "ascending"), ("suite", "ascending"),
                              ("metric", "ascending")])

    def to_pandas(self, table: str = "results"):
        """A pandas DataFrame. 'results' (default): one row per case × bot
        with one column per metric (its value; null where it could not be
        computed), as Ragas' result.to_pandas(); a metric named like a column
        of results/ (latency_ms) is `<name>_metric`. Any other table as it is."""
        _pandas()  # a clear error when it is not installed
        if table != "results":
            return (self.summary(None) if table == "summary" else self.table(table)).to_pandas()
        frame = self.results().to_pandas()
        scores = self.scores().select(["case_id", "bot", "metric", "value"]).to_pandas()
        if len(scores):
            wide = scores.pivot_table(index=["case_id", "bot"], columns="metric",
                                      values="value", aggfunc="first", dropna=False)
            wide = wide.reindex(columns=[m for m in self.metrics if m in wide.columns])
            wide.columns.name = None
            # a metric named like a column of results/ (latency_ms, a custom "label")
            wide = wide.rename(columns={m: f"{m}_metric" for m in wide.columns
                                        if m in frame.columns})
            twice = frame.duplicated(["case_id", "bot"], keep=False).to_numpy()
            frame = frame.merge(wide.reset_index(), on=["case_id", "bot"], how="left")
            if twice.any():  # scores carry no more than the case id: whose is whose is unknown
                frame.loc[twice, list(wide.columns)] = float("nan")
                ids = sorted(set(frame.loc[twice, "case_id"]))
                first = frame.loc[twice].iloc[0]
                count = int(((frame["case_id"] == first["case_id"])
                             & (frame["bot"] == first["bot"])).sum())
                warnings.warn(f"case id {first['case_id']} occurs {count} times"
                              f"{f' ({len(ids)} such ids)' if len(ids) > 1 else ''}: the "
                              "metric columns of such rows are left empty, as their scores "
                              "cannot be told apart; scores() has them all", stacklevel=2)
        return frame

    def __getitem__(self, key: Any):
        """Ragas' result["faithfulness"] (a metric's scores): refused with where
        they are, as a run has a value per case and bot, not per sample. A bot's
        name or an unknown key is told so (pointing a bot's name at a column
        that does not exist sent the reader to a KeyError)."""
        if key in self.bots and key not in self.metrics:
            raise TypeError(f"a Result is not indexed by bot: {key!r} is a bot of this run; "
                            f"its rows are result.to_pandas() where bot == {key!r}, its means "
                            f"result.summary() where bot == {key!r}")
        if key not in self.metrics:
            raise TypeError(f"a Result is not indexed, and this run has no metric {key!r}: "
                            f"its metrics are {', '.join(self.metrics) or 'none'}; its bots "
                            f"{', '.join(self.bots)}")
        raise TypeError(f"a Result is not indexed by metric as Ragas' result is: "
                        f"result.to_pandas()[{key!r}] has the metric's value per case and "
                        "bot, result.summary() its mean per bot")

    __iter__ = None  # not a sequence: iter() must not call __getitem__(0)

    # ----------------------------------------------------------- display

    def _bot_rows(self) -> list[tuple[str, dict, dict]]:
        # the pass rate "–" where no rule decided a row, as in the reports
        rows = pass_rate.shown(self.summary().to_pylist(), self.manifest)
        out = []
        for bot in self.bots:
            mine = {r["metric"]: r for r in rows if r["bot"] == bot}
            out.append((bot, mine.get(VERDICT_METRIC, {}), mine))
        return out

    def _headline(self) -> list[str]:
        """The means the views show: the headline metrics the run has; a run
        with none of them shows its first ones, not verdict counts alone."""
        present = set(self.metrics)
        return [m for m in HEADLINE if m in present][:4] or list(self.metrics[:4])

    def _sizes(self) -> str:
        """'N cases × M bots, K invalid rows': the text and the notebook view
        say the same (a run whose rows were all invalid is not just '0 cases')."""
        c, bots = self.counts, len(self.bots)
        return (f"{counted(c.get('valid_cases', 0), 'case')} × {counted(bots, 'bot')}, "
                f"{counted(c.get('invalid_rows', 0), 'invalid row')}")

    def __repr__(self) -> str:
        lines = [f"<evalbeam run {self.run_id} ({self.run_date}): {self._sizes()}; "
                 f"report {self.report_path}>"]
        try:
            for bot, v, mine in self._bot_rows():
                parts = [f"PASS {v.get('pass_count', 0)} WARN {v.get('warn_count', 0)} "
                         f"FAIL {v.get('fail_count', 0)} ERROR {v.get('error_count', 0)}"]
                parts += [f"{m} {mine[m]['mean']:.3f}" for m in self._headline()
                          if m in mine and mine[m]["mean"] is not None]
                lines.append(f"  {bot}: " + " | ".join(parts))
        except Exception as exc:  # a repr never raises
            lines.append(f"  (summary unreadable: {exc})")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """A notebook's view: verdicts and headline means per bot (escaped).
        It never raises (a notebook would show the traceback, then the text):
        an unreadable summary is said in a line, as the text view says it."""
        esc = html.escape
        head = self._headline()
        cells = ["bot", "PASS", "WARN", "FAIL", "ERROR", "pass rate", *head]
        out = [f"<p><b>evalbeam run {esc(self.run_id)}</b> ({esc(self.run_date)}): "
               f"{esc(self._sizes())}. "
               f"Report: <code>{esc(self.report_path)}</code></p>"]
        try:
            rows = self._bot_rows()
        except Exception as exc:
            return "\n".join(out + [f"<p>(summary unreadable: {esc(str(exc))})</p>"])
        out.append("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in cells) + "</tr>")
        for bot, v, mine in rows:
            values = [v.get("pass_count", 0), v.get("warn_count", 0), v.get("fail_count", 0),
                      v.get("error_count", 0), _mean(v)] + [_mean(mine.get(m, {})) for m in head]
            out.append(f"<tr><td>{esc(bot)}</td>" + "".join(f"<td>{esc(str(x))}</td>"
                                                            for x in values) + "</tr>")
        return "\n".join(out + ["</table>"])


def _mean(row: dict[str, Any]) -> str:
    if row.get("mean") is None:
        return "–"
    if row.get("ci_low") is None:
        return f"{row['mean']:.3f}"
    return f"{row['mean']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
