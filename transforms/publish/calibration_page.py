"""What `evalbeam calibrate` shows people: runs/<run_id>/calibration.md and
the summary it prints, both from the calibration/ rows (plain dicts)."""
from __future__ import annotations

import json
from typing import Mapping, Sequence

import yaml

from schemas.tables import VERDICT_METRIC
from transforms.publish.html import num

CALIBRATION_PAGE = "calibration.md"
ADVICE = ("These rules are fitted to this run's labels, so the figures measured on the same "
          "labels are optimistic. Choose rules on labelled data representative of production "
          "traffic, and check them on held-out labelled data before relying on them.")
METRIC_HEADER = ("metric", "n", "missing", "AUC", "pairwise (pairs)", "threshold", "accuracy",
                 "Youden's J")
VERDICT_COLUMNS = ("PASS", "WARN", "FAIL", "ERROR")
LABEL_CATEGORIES = VERDICT_COLUMNS[:3]


def rules_yaml(rules: Sequence[Mapping]) -> str:
    """A `verdict:` block to paste into a config, one flow-style rule a line."""
    lines = ["verdict:", "  rules:"]
    lines += ["    - " + yaml.safe_dump(dict(r), default_flow_style=True, sort_keys=False,
                                        width=1000).strip() for r in rules]
    return "\n".join(lines + ["  otherwise: PASS"])


def _threshold(row: Mapping) -> str:
    if row["threshold"] is None:
        return "–"
    return f"{'>=' if row['higher_is_better'] else '<='} {row['threshold']:.4g}"


def metric_cells(row: Mapping) -> list[str]:
    pairwise = "–" if row["pairwise_accuracy"] is None else \
        f"{row['pairwise_accuracy']:.3f} ({row['pairs']})"
    name = row["metric"] + ("" if row["higher_is_better"] else " ↓")
    return [name, str(row["n"]), str(row["missing"]), num(row["auc"]), pairwise,
            _threshold(row), num(row["threshold_accuracy"]), num(row["youden_j"])]


def ranked_metrics(rows: Sequence[Mapping], bot: str) -> list[Mapping]:
    """The bot's metric rows, best AUC first (no AUC last, then by name)."""
    mine = [r for r in rows if r["bot"] == bot and r["metric"] != VERDICT_METRIC]
    return sorted(mine, key=lambda r: (r["auc"] is None, -(r["auc"] or 0), r["metric"]))


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def _verdict_rows(rows: Sequence[Mapping]) -> list[Mapping]:
    return [r for r in rows if r["metric"] == VERDICT_METRIC]


def verdict_line(row: Mapping) -> str:
    return (f"accuracy {num(row['accuracy'])}, Cohen's kappa {num(row['kappa'])}; acceptable "
            f"answers given FAIL {num(row['acceptable_failed'])}, unacceptable answers given "
            f"PASS {num(row['unacceptable_passed'])}")


def _check_line(s: Mapping) -> str:
    return (f"on the same {s['n']} labelled answers (in-sample): accuracy {num(s['accuracy'])}, "
            f"Cohen's kappa {num(s['kappa'])}, acceptable answers given FAIL "
            f"{num(s['acceptable_failed'])}, unacceptable answers given PASS "
            f"{num(s['unacceptable_passed'])}")


def why_no_rules(rows: Sequence[Mapping]) -> str:
    """Why no rule is suggested: labels of one kind only (nothing to rank), no
    metric with a value (every answer a bot error: nothing was measured), or
    no metric that ranks the labelled answers better than chance."""
    kinds = {"unacceptable" if v["acceptable"] == 0 else
             "acceptable" if v["acceptable"] == v["n"] else "both" for v in _verdict_rows(rows)}
    if len(kinds) == 1 and "both" not in kinds:
        return (f"every labelled answer is {kinds.pop()}; AUC and thresholds need both "
                "acceptable and unacceptable ones")
    if not any(r["n"] for r in rows if r["metric"] != VERDICT_METRIC):
        return ("no metric has a value for any labelled answer (every one is null: errors/ "
                "says why)")
    return "no metric ranks the labelled answers better than chance"


def _labels_line(row: Mapping) -> str:
    return (f"{row['n']} labelled answers ({row['acceptable']} acceptable, "
            f"{row['n'] - row['acceptable']} not), {row['unlabelled']} unlabelled (ignored)")


def render_calibration(run_id: str, run_date: str, rows: Sequence[Mapping],
                       suggestions: Sequence[Mapping], notes: Sequence[str]) -> str:
    lines = [f"# Calibration of run `{run_id}` ({run_date})", "",
             "Labels judge the recorded answers. An answer is *acceptable* when its label is "
             "above 0.5 (PASS, or a number above 0.5; WARN = 0.5 is not); a verdict accepts it "
             "when it is PASS. Numeric labels fall in the category PASS above 2/3, FAIL below "
             "1/3, WARN between.", ""]
    lines += [f"Note: {n}" for n in notes]
    for v in _verdict_rows(rows):
        bot = v["bot"]
        lines += ["", f"## Bot `{bot}`", "", _labels_line(v) + ".", "",
                  "### The run's verdicts against the labels", "", _sentence(verdict_line(v)), "",
                  "| label \\ verdict | " + " | ".join(VERDICT_COLUMNS) + " |",
                  "|---|" + "---:|" * len(VERDICT_COLUMNS)]
        confusion = json.loads(v["confusion"])
        for category in LABEL_CATEGORIES:
            counts = confusion.get(category, {})
            lines.append(f"| {category} | " + " | ".join(str(counts.get(c, 0))
                                                         for c in VERDICT_COLUMNS) + " |")
        lines += ["", "### Metrics, best AUC first", "",
                  "AUC: the chance that an acceptable answer scores better than an unacceptable "
                  "one (ties one half). Pairwise: the same, within the answers to one question "
                  "only. Threshold: the cut with the largest Youden's J (sensitivity + "
                  "specificity − 1), acceptable at or above it (↓ lower is better: at or "
                  "below); accuracy at that cut. n: labelled answers with a value; missing: "
                  "labelled answers whose value is null.", "",
                  "| " + " | ".join(METRIC_HEADER) + " |",
                  "|---|" + "---:|" * (len(METRIC_HEADER) - 1)]
        lines += ["| " + " | ".join(metric_cells(r)) + " |" for r in ranked_metrics(rows, bot)]
    lines += ["", "## Suggested verdict rules", ""]
    if not suggestions:
        lines.append(f"None: {why_no_rules(rows)}.")
    for s in suggestions:
        lines += [f"From bot `{s['bot']}`:", "", "```yaml", rules_yaml(s["rules"]), "```", "",
                  _sentence(_check_line(s)), ""]
    if suggestions:
        lines += [f"> {ADVICE}", ""]
    return "\n".join(lines)


def _columns(table: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return [indent + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
            for row in table]


def summary_text(run_id: str, run_date: str, rows: Sequence[Mapping],
                 suggestions: Sequence[Mapping], notes: Sequence[str], table: str,
                 page: str) -> str:
    """What the command prints: per bot the verdicts' agreement and the metrics
    ranked, then the suggested rules block and where the outputs are."""
    lines = [f"calibration of run {run_id} ({run_date})"]
    for v in _verdict_rows(rows):
        lines += [f"bot {v['bot']}: {_labels_line(v)}", f"  verdicts: {verdict_line(v)}"]
        lines += _columns([METRIC_HEADER] + [metric_cells(r) for r in ranked_metrics(rows, v["bot"])])
    for s in suggestions:
        lines += ["", f"suggested verdict rules (from bot {s['bot']}):", rules_yaml(s["rules"]),
                  _check_line(s)]
    if not suggestions:
        lines += ["", f"no suggested rules: {why_no_rules(rows)}"]
    lines += [f"note: {ADVICE}"] * bool(suggestions) + [f"note: {n}" for n in notes]
    lines += [f"table:  {table}", f"report: {page}"]
    return "\n".join(lines)
