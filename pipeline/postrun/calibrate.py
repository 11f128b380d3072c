"""`evalbeam calibrate`: how well a finished run's metrics and verdicts agree
with the labels people gave its answers.

From results/ (labels, questions, verdicts), scores/ and summary/ (which way
each metric points) of one run it computes, per bot:
 - per metric: AUC, pairwise accuracy within a question (the same question
   over the same contexts: a summarisation set asks one question of many
   documents) and the threshold that separates acceptable from unacceptable
   answers best (agreement.py);
 - for the run's verdicts: accuracy, Cohen's kappa and the confusion matrix;
then writes calibration/ and runs/<run_id>/calibration.md and suggests
verdict rules. The statistics are pure functions of plain rows; only `load_*`
and `write_calibration` do I/O.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import pyarrow as pa
import pyarrow.dataset as ds
from apache_beam.io.filesystems import FileSystems

from pipeline.config import VerdictRule
from pipeline.postrun.agreement import (Threshold, VerdictAgreement, acceptable, best_threshold,
                                        pairwise_accuracy, roc_auc, verdict_agreement)
from pipeline.postrun.read import (CompletedRun, PostRunError, check_writable, corrupt,
                                   manifest_path, read_completed_run)
from schemas.records import MetricResult
from schemas.cases import is_label_error
from schemas.tables import (ALL_SUITES, CALIBRATION, ERRORS, RESULTS, SCORES, SUMMARY,
                           VERDICT_METRIC)
from transforms.decide.rules import decide
from transforms.publish.calibration_page import (CALIBRATION_PAGE, ranked_metrics,
                                                 render_calibration, summary_text)
from transforms.publish.rows import to_json
from transforms.publish.write import partition_dir, replace_text_file, write_small_table
from transforms.score.scoring import recorded_direction

PRECOMPUTED = "precomputed"  # the bot type that answers with the recorded (labelled) answer
SUGGESTED_RULES = 3          # how many metrics the suggested rules block uses at most
FEW_LABELS = 30              # fewer answers than this in a class: thresholds are unstable


@dataclass(frozen=True)
class Answer:
    """One labelled answer of one bot (a results row)."""

    case_id: str
    question: str
    label: str
    verdict: str
    contexts: tuple[str, ...] = ()  # with the question, what the answer is an answer to

    @property
    def item(self) -> tuple[str, tuple[str, ...]]:
        """What pairwise accuracy compares answers within: the question asked of
        these contexts (one question over many documents is many items)."""
        return self.question, self.contexts


@dataclass(frozen=True)
class BotLabels:
    """What calibration needs of one bot: its labelled answers and their values."""

    bot: str
    answers: tuple[Answer, ...]
    unlabelled: int
    values: Mapping[str, Mapping[str, float | None]]  # metric -> case_id -> value
    ambiguous: int = 0  # labelled answers whose case_id repeats: no metric value is theirs


@dataclass(frozen=True)
class Suggestion:
    bot: str
    rules: tuple[dict, ...]
    check: VerdictAgreement  # the block applied to the same labels (in-sample)


@dataclass
class Calibration:
    run_id: str
    run_date: str
    rows: list[dict]
    suggestions: list[Suggestion]
    notes: list[str] = field(default_factory=list)


# ---- pure statistics over plain rows ----------------------------------------

def _row(run_id: str, bot: str, metric: str, **values) -> dict:
    row = dict.fromkeys(CALIBRATION.schema.names)
    row.update(run_id=run_id, bot=bot, metric=metric, **values)
    return row


def metric_stats(answers: Sequence[Answer], values: Mapping[str, float | None],
                 higher_is_better: bool | None) -> dict:
    """Ranking statistics of one metric against the labels; answers without a
    value are counted as missing, answers absent from `values` are left out.
    A metric with no direction (higher_is_better None: answer_length) is
    oriented by the labels: the way in which acceptable answers score higher
    (AUC >= 0.5; higher when the labels cannot tell), and its row says which."""
    known = [a for a in answers if a.case_id in values]
    scored = [(a.item, values[a.case_id], acceptable(a.label)) for a in known
              if values[a.case_id] is not None]
    vals = [v for _, v, _ in scored]
    ok = [good for _, _, good in scored]
    if higher_is_better is None:
        auc = roc_auc(vals, ok)
        higher_is_better = auc is None or auc >= 0.5
    pairwise, pairs = pairwise_accuracy(scored, higher_is_better)
    cut = best_threshold(vals, ok, higher_is_better)
    return {"n": len(scored), "missing": len(known) - len(scored), "acceptable": sum(ok),
            "auc": roc_auc(vals, ok, higher_is_better), "pairwise_accuracy": pairwise,
            "pairs": pairs, "threshold": cut and cut.value,
            "threshold_accuracy": cut and cut.accuracy, "youden_j": cut and cut.youden_j,
            "higher_is_better": higher_is_better}


def verdict_stats(answers: Sequence[Answer]) -> dict:
    """The run's verdicts against the labels (ERROR rows count as not accepting)."""
    agreement = verdict_agreement((a.label, a.verdict) for a in answers)
    return {"n": agreement.n, "missing": 0,
            "acceptable": sum(1 for a in answers if acceptable(a.label)),
            "accuracy": agreement.accuracy, "kappa": agreement.kappa,
            "confusion": to_json(agreement.confusion),
            "acceptable_failed": agreement.acceptable_failed,
            "unacceptable_passed": agreement.unacceptable_passed}


def bot_rows(run_id: str, labels: BotLabels, metrics: Sequence[str],
             higher_is_better: Mapping[str, bool | None]) -> list[dict]:
    """The verdict row, then one row per metric, of one bot."""
    rows = [_row(run_id, labels.bot, VERDICT_METRIC, unlabelled=labels.unlabelled,
                 **verdict_stats(labels.answers))]
    for metric in metrics:
        rows.append(_row(run_id, labels.bot, metric, unlabelled=labels.unlabelled,
                         **metric_stats(labels.answers, labels.values.get(metric, {}),
                                        higher_is_better.get(metric, True))))
    return rows


def suggest_rules(rows: Sequence[dict], bot: str,
                  limit: int = SUGGESTED_RULES) -> tuple[dict, ...]:
    """FAIL rules at the best thresholds of the bot's metrics that rank answers
    best (AUC above chance, a threshold that separates at all)."""
    useful = [r for r in ranked_metrics(rows, bot)
              if r["auc"] is not None and r["auc"] > 0.5 and (r["youden_j"] or 0) > 0]
    return tuple(Threshold(r["threshold"], r["youden_j"], r["threshold_accuracy"],
                           r["higher_is_better"]).rule(r["metric"])
                 for r in useful[:limit])


def check_rules(rules: Sequence[dict], labels: BotLabels) -> VerdictAgreement:
    """The verdicts the rules would give these answers (first match decides, as
    ApplyVerdict does; a bot ERROR stays ERROR), against their labels."""
    verdict_rules = [VerdictRule(r["metric"], r["verdict"], above=r.get("above"),
                                 below=r.get("below")) for r in rules]
    metrics = {r["metric"] for r in rules}
    pairs = []
    for a in labels.answers:
        if any(a.case_id not in labels.values.get(m, {}) for m in metrics):
            continue  # ambiguous case id: its values are unknown
        scores = {m: MetricResult(labels.values[m][a.case_id]) for m in metrics}
        error = "bot failed" if a.verdict == "ERROR" else None
        pairs.append((a.label, decide(scores, verdict_rules, "PASS", error)[0]))
    return verdict_agreement(pairs)


def few_labels_note(labels: BotLabels) -> str | None:
    good = sum(1 for a in labels.answers if acceptable(a.label))
    bad = len(labels.answers) - good
    if min(good, bad) >= FEW_LABELS:
        return None
    return (f"bot {labels.bot}: only {good} acceptable and {bad} unacceptable labelled "
            f"answers; AUC and thresholds from fewer than {FEW_LABELS} per class are unstable")


def oriented_note(bot: str, row: Mapping) -> str:
    """What calibrate says of a metric with no direction that the labels oriented."""
    way = "higher" if row["higher_is_better"] else "lower"
    return (f"bot {bot}: {row['metric']} has no better direction; the labels oriented it "
            f"({way} values were more often acceptable), so its AUC {row['auc']:.3f} is "
            f"max(AUC, 1 − AUC) and its threshold keeps the {way} side")


def calibrate_bots(run_id: str, run_date: str, bot_labels: Sequence[BotLabels],
                   metrics: Sequence[str],
                   higher_is_better: Mapping[tuple[str, str], bool | None]) -> Calibration:
    """Every table row, rule suggestion and caveat of a run's calibration."""
    result = Calibration(run_id, run_date, [], [])
    for labels in bot_labels:
        if not labels.answers:
            result.notes.append(f"bot {labels.bot}: no labelled answers")
            continue
        direction = {m: higher_is_better.get((labels.bot, m), True) for m in metrics}
        rows = bot_rows(run_id, labels, metrics, direction)
        result.rows.extend(rows)
        result.notes.extend(oriented_note(labels.bot, r) for r in rows
                            if r["metric"] in direction and direction[r["metric"]] is None
                            and r["auc"] is not None)
        rules = suggest_rules(rows, labels.bot)
        if rules:
            result.suggestions.append(Suggestion(labels.bot, rules, check_rules(rules, labels)))
        note = few_labels_note(labels)
        if note:
            result.notes.append(note)
        if labels.ambiguous:
            result.notes.append(f"bot {labels.bot}: {labels.ambiguous} labelled answers have "
                                "a case_id that repeats in the run; their metric values "
                                "cannot be told apart, so only their verdicts are used")
    return result


def bots_to_calibrate(manifest: Mapping, requested: Sequence[str],
                      where: str = "manifest.json") -> tuple[str, ...]:
    """The bots named with --bot, else those answering with the recorded answer
    (type precomputed): a label judges that answer, not another bot's. Their
    types are in the marker's config (`where`): without it, that is the fault,
    not the run's bots."""
    bots = list(manifest.get("bots", []))
    run_id = manifest.get("run_id")
    if requested:
        unknown = [b for b in requested if b not in bots]
        if unknown:
            raise PostRunError(f"--bot {unknown[0]!r} is not a bot of run {run_id!r} "
                               f"(bots: {', '.join(bots)})")
        return tuple(dict.fromkeys(requested))
    configured = manifest.get("config", {}).get("bots")  # a config is an object (checked)
    if not isinstance(configured, list):
        raise corrupt(run_id, where, "no 'config' listing the run's bots and their types "
                      "(or name the bots to calibrate with --bot)")
    types = {b.get("name"): b.get("type") for b in configured if isinstance(b, Mapping)}
    chosen = tuple(b for b in bots if types.get(b) == PRECOMPUTED)
    if not chosen:
        raise PostRunError(f"run {run_id!r} has no bot of type {PRECOMPUTED}: labels judge the "
                           f"recorded answers; name bots to calibrate anyway with --bot "
                           f"(bots: {', '.join(bots)})")
    return chosen


# ---- reading the run --------------------------------------------------------

def _of_bots(bots: Sequence[str]) -> ds.Expression:
    return ds.field("bot").isin(list(bots))


def no_labels(run_id: str) -> str:
    return (f"run {run_id} has no labelled rows: add a `label` column (PASS, WARN, FAIL or a "
            "number in [0, 1]) to the input cases and run again")


def load_labels(run: CompletedRun, bots: Sequence[str]) -> list[BotLabels]:
    """The bots' labelled answers from results/ and their values from scores/
    (only the labelled cases' rows are read). results/'s dataset is made once
    for both reads (making one reads every listed file's end: on an object
    store a size and a read a file); the unlabelled rows are only counted, so
    their contexts are never loaded."""
    results = run.dataset(RESULTS)
    if "label" not in results.schema.names:
        raise PostRunError(no_labels(run.run_id))
    labelled = ds.field("label").is_valid()
    unlabelled = run.read(RESULTS, ["bot"], _of_bots(bots) & ~labelled, dataset=results)
    missing = Counter(unlabelled.column("bot").to_pylist())
    answers: dict[str, list[Answer]] = defaultdict(list)
    for r in run.read(RESULTS, ["bot", "case_id", "question", "contexts", "verdict", "label"],
                      _of_bots(bots) & labelled, dataset=results).to_pylist():
        answers[r["bot"]].append(Answer(r["case_id"], r["question"], r["label"],
                                        r["verdict"] or "ERROR", tuple(r["contexts"] or ())))
    case_ids = pa.array(sorted({a.case_id for bot_answers in answers.values()
                                for a in bot_answers}), pa.string())
    scores = run.read(SCORES, ["bot", "case_id", "metric", "value"],
                      _of_bots(bots) & ds.field("case_id").isin(case_ids))
    values: dict[str, dict[str, dict[str, float | None]]] = defaultdict(lambda: defaultdict(dict))
    repeated: dict[str, set[str]] = defaultdict(set)
    for bot, case_id, metric, value in zip(*(scores.column(c).to_pylist()
                                             for c in ("bot", "case_id", "metric", "value"))):
        if case_id in values[bot][metric]:
            repeated[bot].add(case_id)
        values[bot][metric][case_id] = value
    for bot, ids in repeated.items():
        for per_case in values[bot].values():
            for case_id in ids:
                per_case.pop(case_id, None)
    return [BotLabels(bot, tuple(answers.get(bot, ())), missing.get(bot, 0),
                      {m: dict(v) for m, v in values[bot].items()},
                      sum(1 for a in answers.get(bot, ()) if a.case_id in repeated[bot]))
            for bot in bots]


def unreadable_labels(run: CompletedRun) -> int:
    """Input rows dead-lettered for their label: the labels given that no bot's
    answer carries."""
    if not run.counts.get("invalid_rows"):
        return 0
    messages = run.read(ERRORS, ["message"], ds.field("stage") == "read").column("message")
    return sum(is_label_error(m) for m in messages.to_pylist())


def load_directions(run: CompletedRun) -> dict[tuple[str, str], bool | None]:
    """(bot, metric) -> higher_is_better, as the run's summary/ says: None for a
    metric with no direction (scoring.recorded_direction)."""
    summary = run.read(SUMMARY, ["bot", "metric", "higher_is_better"],
                       ds.field("suite") == ALL_SUITES)
    return {(r["bot"], r["metric"]): recorded_direction(r["metric"], r["higher_is_better"])
            for r in summary.to_pylist()}


def run_metrics(manifest: Mapping, bot_labels: Sequence[BotLabels]) -> list[str]:
    """Every metric of the run's scores/, in the run's order."""
    found = {m for labels in bot_labels for m in labels.values}
    ordered = [m for m in manifest.get("metrics", []) if m in found]
    return ordered + sorted(found - set(ordered))


def calibrate(output: str, run_id: str, bots: Sequence[str] = ()) -> Calibration:
    """Read a finished run and calibrate it (raises PostRunError: exit 2)."""
    run = read_completed_run(output, run_id)
    manifest = run.manifest
    folder = output.rstrip("/") or "/"  # where it writes, checked before the work
    check_writable(folder, partition_dir(folder, CALIBRATION.name,
                                         (("run_date", manifest["run_date"]),)),
                   FileSystems.join(folder, "runs", run_id))
    chosen = bots_to_calibrate(manifest, bots, manifest_path(output, run_id))
    bot_labels = load_labels(run, chosen)
    if not any(labels.answers for labels in bot_labels):
        raise PostRunError(no_labels(run_id))
    result = calibrate_bots(run_id, manifest["run_date"], bot_labels,
                            run_metrics(manifest, bot_labels), load_directions(run))
    lost = unreadable_labels(run)
    if lost:
        result.notes.append(f"{lost} input row{'s have' if lost != 1 else ' has'} a label that "
                            "is not PASS, WARN, FAIL or a number in [0, 1]: "
                            f"{'they were' if lost != 1 else 'it was'} not evaluated, so not "
                            "calibrated (errors/, stage read)")
    others = [b for b in manifest.get("bots", []) if b not in chosen]
    if others and not bots:
        result.notes.append(f"not calibrated: {', '.join(others)} (their answers are not the "
                            "recorded ones the labels judge; --bot NAME to include them)")
    return result


# ---- writing and the command ------------------------------------------------

def suggestion_data(s: Suggestion) -> dict:
    """A suggestion as plain data for the page and the printout."""
    return {"bot": s.bot, "rules": list(s.rules), "n": s.check.n, "accuracy": s.check.accuracy,
            "kappa": s.check.kappa, "acceptable_failed": s.check.acceptable_failed,
            "unacceptable_passed": s.check.unacceptable_passed}


def write_calibration(output: str, result: Calibration) -> tuple[str, str]:
    """calibration/ (replacing this run's earlier file) and calibration.md."""
    output = output.rstrip("/") or "/"
    table = write_small_table(output, CALIBRATION, result.run_id, result.run_date, result.rows)
    page = FileSystems.join(output, "runs", result.run_id, CALIBRATION_PAGE)
    text = render_calibration(result.run_id, result.run_date, result.rows,
                              [suggestion_data(s) for s in result.suggestions], result.notes)
    replace_text_file(output, page, text)
    return table, page


def run_calibrate(output: str, run_id: str, bots: Sequence[str] = ()) -> str:
    """The whole command; returns what it prints (raises PostRunError)."""
    result = calibrate(output, run_id, bots)
    table, page = write_calibration(output, result)
    return summary_text(result.run_id, result.run_date, result.rows,
                        [suggestion_data(s) for s in result.suggestions], result.notes,
                        table, page)
