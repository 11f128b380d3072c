"""Head to head: every pair of bots of a run on the cases both were asked.

The report's answer to "which bot is better": for each pair (a, b) of bots,
in the order the config lists them, the paired difference b − a of the pass
rate and of every metric with its 95% bootstrap interval, wins / ties /
losses and Holm-adjusted p-values, over all cases and per suite, plus the
verdict transitions between the two bots. The statistics are those of
`evalbeam compare` (transforms/publish/paired.py), computed on the same kind
of matrices.

In the pipeline: each Turn becomes (case_id, entry); grouped by case, a case
answered exactly once by both bots of a pair gives that pair one row; the
rows of a pair are combined into numpy matrices (a CombineFn whose
accumulator holds arrays, merged by concatenation) and the statistics run on
them once, in case order, so the intervals do not depend on the runner's order.
"""
from __future__ import annotations

import math
from itertools import combinations
from typing import Any, Iterable, Iterator, Mapping, Sequence

import apache_beam as beam
import numpy as np

from schemas.records import Turn
from schemas.tables import ALL_SUITES, PASS_RATE, VERDICT_ORDER
from transforms.publish.html import num, p_text, signed
from transforms.publish.summary import MergingCombineFn
from transforms.score.scoring import NO_DIRECTION, higher_is_better
from transforms.publish.paired import (CHANGED, MIN_DIFFERENCE, bot_seed, change, group_rows,
                                       metric_label, passed, transitions, wtl)
from transforms.text.wording import counted

_CHUNK = 4096  # rows buffered as Python lists before they become arrays


def verdict_code(verdict: str | None) -> int:
    """A verdict's index in VERDICT_ORDER, -1 when unknown."""
    return VERDICT_ORDER.index(verdict) if verdict in VERDICT_ORDER else -1


def case_entry(turn: Turn, metrics: Sequence[str]) -> tuple[str, tuple]:
    """(case_id, (bot, suite, verdict code, metric values with NaN for null))."""
    values = []
    for m in metrics:
        r = turn.scores.get(m)
        values.append(float("nan") if r is None or r.value is None else float(r.value))
    return turn.case.case_id, (turn.bot, turn.case.suite, verdict_code(turn.verdict),
                               tuple(values))


def bot_pairs(item: tuple[str, Iterable[tuple]], bots: Sequence[str]
              ) -> Iterator[tuple[tuple[str, str], tuple]]:
    """The rows of one case for each pair of bots that answered it exactly
    once (a repeated case id pairs nothing: which answer goes with which?)."""
    case_id, entries = item
    by_bot: dict[str, list[tuple]] = {}
    for entry in entries:
        by_bot.setdefault(entry[0], []).append(entry)
    for a, b in combinations(bots, 2):
        ea, eb = by_bot.get(a, []), by_bot.get(b, [])
        if len(ea) == 1 and len(eb) == 1:
            (_, suite, va, xa), (_, _, vb, xb) = ea[0], eb[0]
            yield (a, b), (case_id, suite, va, vb, xa, xb)


class _Rows:
    """A pair's rows: case ids, suites, verdict codes and value arrays."""

    __slots__ = ("ids", "suites", "va", "vb", "xa", "xb", "pending")

    def __init__(self):
        self.ids: list[str] = []
        self.suites: list[str | None] = []
        self.va: list[int] = []
        self.vb: list[int] = []
        self.xa: list[np.ndarray] = []
        self.xb: list[np.ndarray] = []
        self.pending: list[tuple] = []

    def add(self, row: tuple) -> None:
        self.pending.append(row)
        if len(self.pending) >= _CHUNK:
            self.compact()

    def compact(self) -> None:
        if not self.pending:
            return
        for case_id, suite, va, vb, xa, xb in self.pending:
            self.ids.append(case_id)
            self.suites.append(suite)
            self.va.append(va)
            self.vb.append(vb)
        self.xa.append(np.array([r[4] for r in self.pending], dtype=np.float64))
        self.xb.append(np.array([r[5] for r in self.pending], dtype=np.float64))
        self.pending = []

    def merge(self, other: "_Rows") -> None:
        other.compact()
        self.compact()
        self.ids += other.ids
        self.suites += other.suites
        self.va += other.va
        self.vb += other.vb
        self.xa += other.xa
        self.xb += other.xb


class PairRowsFn(MergingCombineFn):
    """A pair's rows -> one _Rows of arrays (its statistics are computed from
    it once, by pair_statistics, where the pair is known)."""

    accumulator = _Rows

    def compact(self, acc: _Rows) -> _Rows:
        acc.compact()
        return acc

    def extract_output(self, acc: _Rows) -> _Rows:
        acc.compact()
        return acc


def rows_statistics(pair: tuple[str, str], acc: _Rows, metrics: Sequence[str],
                    higher: Sequence[bool], min_difference: float = MIN_DIFFERENCE
                    ) -> tuple[tuple[str, str], dict]:
    """(pair, statistics) from a pair's combined rows. The bootstrap's seed is
    the one `evalbeam compare RUN:a RUN:b` uses, so both give the same figures."""
    acc.compact()
    m = len(metrics)
    xa = np.vstack(acc.xa) if acc.xa else np.empty((0, m))
    xb = np.vstack(acc.xb) if acc.xb else np.empty((0, m))
    return pair, pair_statistics(acc.ids, acc.suites, np.array(acc.va, dtype=np.int64),
                                 np.array(acc.vb, dtype=np.int64), xa, xb, metrics, higher,
                                 min_difference, bot_seed(pair[1]))


def pair_statistics(ids: Sequence[str], suites: Sequence[str | None], va: np.ndarray,
                    vb: np.ndarray, xa: np.ndarray, xb: np.ndarray, metrics: Sequence[str],
                    higher: Sequence[bool], min_difference: float = MIN_DIFFERENCE,
                    seed: Sequence[int] = (0, 2)) -> dict:
    """Statistics of b − a over the paired cases: {"paired", "rows"}, rows for
    all suites ('*') then each suite (cases without a suite only in '*'),
    pass_rate first; the pass_rate rows carry the verdict transitions a -> b."""
    n = len(ids)
    if n == 0:
        return {"paired": 0, "rows": []}
    idx = np.array(sorted(range(n), key=lambda i: (suites[i] is not None, suites[i] or "",
                                                  ids[i])), dtype=np.int64)
    ordered = [suites[i] for i in idx]
    va, vb = va[idx], vb[idx]
    base, cand = np.hstack([passed(va), xa[idx]]), np.hstack([passed(vb), xb[idx]])
    cuts = [i for i in range(1, n) if ordered[i] != ordered[i - 1]]
    parts = [(ALL_SUITES, 0, n)] + [(ordered[a], a, b)
                                    for a, b in zip([0, *cuts], [*cuts, n])]
    rows = []
    for (suite, a, b), group in zip(parts, group_rows(base, cand, [True, *higher],
                                                      [PASS_RATE, *metrics], cuts,
                                                      list(seed), min_difference)):
        if suite is None:  # cases without a suite count in the all-suites rows only
            continue
        for row in group:
            row["suite"] = suite
            if row["metric"] == PASS_RATE:
                row["transitions"] = transitions(va[a:b], vb[a:b])
        rows.extend(group)
    return {"paired": n, "rows": _plain(rows)}


def _plain(rows: list[dict]) -> list[dict]:
    """JSON-ready rows: NaN as None, numpy numbers as Python numbers."""
    out = []
    for row in rows:
        clean = {}
        for k, v in row.items():
            if isinstance(v, (np.floating, float)):
                v = None if math.isnan(v) else float(v)
            elif isinstance(v, np.integer):
                v = int(v)
            clean[k] = v
        out.append(clean)
    return out


class HeadToHead(beam.PTransform):
    """Decided Turns -> ((bot_a, bot_b), statistics) for every pair of bots."""

    def __init__(self, bots: Sequence[str], metrics: Sequence[str],
                 lower_is_better: frozenset[str], min_difference: float = MIN_DIFFERENCE,
                 no_direction: frozenset[str] = NO_DIRECTION):
        super().__init__()
        self._bots, self._metrics = tuple(bots), tuple(metrics)
        self._higher = tuple(higher_is_better(m, lower_is_better, no_direction)
                             for m in self._metrics)
        self._min_difference = min_difference

    def expand(self, turns):
        metrics, bots = self._metrics, self._bots
        return (turns
                | "CaseEntries" >> beam.Map(case_entry, metrics)
                | "ByCase" >> beam.GroupByKey()
                | "BotPairs" >> beam.FlatMap(bot_pairs, bots)
                | "PairRows" >> beam.CombinePerKey(PairRowsFn())
                | "PairStatistics" >> beam.Map(
                    lambda kv, m=metrics, h=self._higher, d=self._min_difference:
                    rows_statistics(kv[0], kv[1], m, h, d)))


def ordered_pairs(bots: Sequence[str], results: Iterable[tuple[Sequence[str], dict]]
                  ) -> list[tuple[tuple[str, str], dict]]:
    """The combined statistics in the config's order of pairs (as lists: JSON-ready)."""
    order = {pair: i for i, pair in enumerate(combinations(bots, 2))}
    got = [(tuple(pair), stats) for pair, stats in results]
    return sorted(got, key=lambda item: order.get(item[0], len(order)))


def pair_label(pair: Sequence[str]) -> str:
    """A pair (a, b) as its differences read: `b − a`, b's value minus a's."""
    return f"{pair[1]} − {pair[0]}"


def overall(stats: Mapping[str, Any]) -> list[dict]:
    """The all-suites rows of a pair."""
    return [r for r in stats["rows"] if r["suite"] == ALL_SUITES]


def compared(stats: Mapping[str, Any]) -> list[dict]:
    """The all-suites rows of the metrics both bots have values of."""
    return [r for r in overall(stats) if r["n_pairs"]]


def _names(rows: Sequence[Mapping[str, Any]], which: str) -> list[str]:
    return [r["metric"] for r in rows if r["metric"] != PASS_RATE and change(r) == which]


def findings(pair: Sequence[str], stats: Mapping[str, Any]) -> list[str]:
    """Plain sentences that answer "which bot is better" for one pair (b vs a)."""
    a, b = pair
    rows = overall(stats)
    if not stats["paired"]:
        return [f"No case was answered once by both {a} and {b}: nothing to pair."]
    lines = []
    pr = next(r for r in rows if r["metric"] == PASS_RATE)
    if pr["n_pairs"]:
        verdict = {"better": f"{b} passes significantly more cases",
                   "worse": f"{a} passes significantly more cases"}.get(
            change(pr), "the pass rates do not differ significantly")
        lines.append(f"Pass rate on the {pr['n_pairs']} paired cases: {a} "
                     f"{num(pr['baseline_mean'])}, {b} {num(pr['candidate_mean'])}; {b} − {a} = "
                     f"{signed(pr['delta'])} [{signed(pr['ci_low'])}, {signed(pr['ci_high'])}]: "
                     f"{verdict}.")
        t = pr.get("transitions") or {}
        gained = sum(n for k, n in t.items() if k.startswith(("WARN->PASS", "FAIL->PASS",
                                                               "ERROR->PASS")))
        lost = sum(n for k, n in t.items() if k.startswith("PASS->") and k != "PASS->PASS")
        lines.append(f"{b} passes {counted(gained, 'case')} that {a} does not pass, and does not "
                     f"pass {counted(lost, 'case')} that {a} passes.")
    better, worse = _names(rows, "better"), _names(rows, "worse")
    same = sum(1 for r in rows if r["metric"] != PASS_RATE and r["n_pairs"]
               and change(r) == "no significant change")
    moved = _names(rows, CHANGED)
    lines.append(f"Metrics significantly better for {b}: {', '.join(better) or 'none'}; "
                 f"better for {a}: {', '.join(worse) or 'none'}; no significant difference: "
                 f"{same}" + (f"; changed, with no better direction: {', '.join(moved)}"
                              if moved else "") + ".")
    if (better and change(pr) == "worse") or (worse and change(pr) == "better"):
        lines.append("The pass rate and the metrics disagree: the pass rate counts verdicts, "
                     "which only the verdict rules' metrics decide; the other metrics weigh "
                     "aspects the rules do not look at.")
    elif pr["n_pairs"] and change(pr) != "better" and change(pr) != "worse" and pr["delta"]:
        lines.append(f"The pass rates' difference ({signed(pr['delta'])}) could be chance: its "
                     "interval includes no difference (or it is not significant after Holm's "
                     "adjustment); the metrics' paired differences are the evidence.")
    missing = [r["metric"] for r in rows if not r["n_pairs"]]
    if missing:
        lines.append(f"Not compared (no case has a value from both): {', '.join(missing)}.")
    return lines


# up to this many pairs (three bots) the reports show each pair in full; beyond,
# a matrix of the pass rates' differences first (66 pairs of 12 bots, each with its
# forest plot, findings and tables, made report.html 92,000 px tall)
FEW_PAIRS = 3


def pass_rate_grid(pairs: Sequence[tuple[Sequence[str], Mapping[str, Any]]]
                   ) -> tuple[list[str], dict[tuple[str, str], tuple[str, str, str]]]:
    """The bots (in the pairs' order) and, per (row bot, column bot), the row's
    pass rate minus the column's on their paired cases: (text with ▲ where the
    row passes significantly more, ▼ fewer; 'better', 'worse' or '' for the row;
    the interval and the number of pairs, for a tooltip)."""
    bots: list[str] = []
    cells: dict[tuple[str, str], tuple[str, str, str]] = {}
    for (a, b), stats in pairs:
        bots += [n for n in (a, b) if n not in bots]
        pr = next((r for r in overall(stats) if r["metric"] == PASS_RATE), None)
        if pr is None or not pr.get("n_pairs") or pr.get("delta") is None:
            continue
        seen = change(pr)  # b's side: "better" when b passes significantly more
        for row, sign, side in ((b, 1, seen), (a, -1, {"better": "worse",
                                                        "worse": "better"}.get(seen, ""))):
            side = side if side in ("better", "worse") else ""
            mark = {"better": " ▲", "worse": " ▼"}.get(side, "")
            low, high = (None if pr.get(k) is None else sign * pr[k]
                         for k in (("ci_low", "ci_high") if sign > 0 else ("ci_high", "ci_low")))
            cells[(row, b if row == a else a)] = (
                f"{signed(sign * pr['delta'])}{mark}", side,
                f"95% CI [{signed(low)}, {signed(high)}], {pr['n_pairs']} paired cases")
    return bots, cells


def bot_findings(pairs: Sequence[tuple[Sequence[str], Mapping[str, Any]]]
                 ) -> list[tuple[str, str]]:
    """Per bot (in the pairs' order), one sentence: the bots it passes
    significantly more or fewer cases than, and those it is significantly
    better or worse than on some metric, naming the metrics (a paragraph per
    pair made 12 bots' head to head 66 paragraphs, 25 bots' 300)."""
    bots: list[str] = []
    found: dict[str, dict[str, list[str]]] = {}
    for (a, b), stats in pairs:
        bots += [n for n in (a, b) if n not in bots]
        if not stats["paired"]:
            continue
        rows = overall(stats)
        pr = next((r for r in rows if r["metric"] == PASS_RATE), None)
        ahead = ({"better": (b, a), "worse": (a, b)}.get(change(pr))
                 if pr is not None and pr.get("n_pairs") else None)
        if ahead:
            found.setdefault(ahead[0], {}).setdefault("more", []).append(ahead[1])
            found.setdefault(ahead[1], {}).setdefault("fewer", []).append(ahead[0])
        for winner, loser, names in ((b, a, _names(rows, "better")),
                                     (a, b, _names(rows, "worse"))):
            if names:
                said = f" ({', '.join(names)})"
                found.setdefault(winner, {}).setdefault("better", []).append(loser + said)
                found.setdefault(loser, {}).setdefault("worse", []).append(winner + said)
    words = {"more": "passes significantly more cases than",
             "fewer": "passes significantly fewer cases than",
             "better": "is significantly better on some metric than",
             "worse": "is significantly worse on some metric than"}
    out = []
    for bot in bots:
        said = [f"{words[k]} {', '.join(found[bot][k])}" for k in words
                if found.get(bot, {}).get(k)]
        out.append((bot, "; ".join(said) + "." if said else
                    "no significant difference from any other bot."))
    return out


BOT_FINDINGS_NOTE = ("Per bot, the bots it differs from significantly (Holm-adjusted, as "
                     "below); in brackets, the metrics on which it is better or worse.")


# a name longer than this heads no column of the matrix (twelve 45-character names
# made the columns wrap to six lines, each row as tall, the matrix 1,550 px wide)
GRID_NAME_CHARS = 10


def grid_labels(bots: Sequence[str]) -> tuple[list[str], list[str]]:
    """The matrix's row and column labels: the bots' names, or, when a name is
    long, the rows numbered (`2. name`) and the columns by their number."""
    if max(map(len, bots), default=0) <= GRID_NAME_CHARS:
        return list(bots), list(bots)
    return [f"{i}. {b}" for i, b in enumerate(bots, 1)], [str(i) for i in range(1, len(bots) + 1)]


GRID_NOTE = ("Each cell: the row bot's pass rate − the column bot's, on the cases both "
             "answered; ▲ the row bot passes significantly more, ▼ significantly fewer "
             "(Holm-adjusted, as below).")


def grid_note(bots: Sequence[str]) -> str:
    """GRID_NOTE, and what the columns' numbers are when they stand for names."""
    numbered = grid_labels(bots)[1] != list(bots)
    return GRID_NOTE + (" A column's number is the row bot's number." if numbered else "")


def suite_lines(pair: Sequence[str], stats: Mapping[str, Any]) -> list[list[Any]]:
    """Per suite: cases, pass-rate delta with its interval, and the metrics
    significantly better for each bot."""
    a, b = pair
    suites: dict[str, list[Mapping[str, Any]]] = {}
    for r in stats["rows"]:
        if r["suite"] != ALL_SUITES:
            suites.setdefault(r["suite"], []).append(r)
    out = []
    for suite in sorted(suites):
        rows = suites[suite]
        pr = next(r for r in rows if r["metric"] == PASS_RATE)
        delta = (f"{signed(pr['delta'])} [{signed(pr['ci_low'])}, {signed(pr['ci_high'])}]"
                 if pr["n_pairs"] else "–")
        mark = {"better": " ▲", "worse": " ▼"}.get(change(pr), "")
        out.append([suite, pr["n_pairs"], delta + mark, ", ".join(_names(rows, "better")) or "–",
                    ", ".join(_names(rows, "worse")) or "–"])
    return out


def metric_cells(row: Mapping[str, Any], pair: Sequence[str]) -> list[Any]:
    """One metric of a pair: a's mean, b's mean, b − a [CI], W/T/L (b's wins), p, who is better."""
    who = {"better": f"{pair[1]} ▲", "worse": f"{pair[0]} ▼", CHANGED: CHANGED}.get(change(row), "")
    return [metric_label(row["metric"], row["higher_is_better"]),
            row["n_pairs"], num(row.get("baseline_mean")), num(row.get("candidate_mean")),
            f"{signed(row.get('delta'))} [{signed(row.get('ci_low'))}, "
            f"{signed(row.get('ci_high'))}]",
            wtl(row),
            p_text(row.get("p_adjusted")), who]


def metric_headers(pair: Sequence[str]) -> list[str]:
    a, b = pair
    return ["metric", "pairs", a, b, f"{b} − {a} [95% CI]", f"W/T/L ({b})", "p (Holm)",
            "better"]


METHOD = ("Each pair of bots is compared on the cases both were asked (a case id repeated in "
          "the input pairs nothing; a bot error counts as not passing). Δ, as a pair's title "
          "reads (b − a), is b's value minus a's over the cases where both have a value, with a 95% percentile bootstrap interval "
          "(1,000 resamples of cases, fixed seed); p: Wilcoxon signed-rank (continuous metrics)"
          " or exact McNemar (0/1 metrics and the pass rate), Holm-adjusted across the metrics "
          "of a pair and suite. A case whose values differ by at most 0.001 is a tie; a bot is "
          "better on a metric when the adjusted p < 0.05 and the mean differs by more than "
          "that. W/T/L counts b's wins, ties and losses (a metric with no better direction, "
          "answer_length, has ties only: its change is reported, never called better or "
          "worse). The same statistics as "
          "`evalbeam compare`.")
