"""Turn -> output table rows (plain dicts keyed by the table's columns)."""
from __future__ import annotations

import json
import math
from typing import Any, Iterator

from schemas.cases import RowProblem
from schemas.records import Turn
from schemas.tables import CALL_ERROR_STAGES


def finite(value: Any) -> Any:
    """The value with every NaN or infinity (which JSON has no word for) as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def to_json(value: Any, **options: Any) -> str | None:
    """Valid JSON text (NaN and infinities become null: `{"n": NaN}` is not JSON
    and a warehouse's JSON functions reject it); None for nothing."""
    if value is None or value == {}:
        return None
    options = {"ensure_ascii": False, "sort_keys": True, "default": str, **options}
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:  # a NaN or an infinity somewhere
        return json.dumps(finite(value), allow_nan=False, **options)


def result_row(turn: Turn, run_id: str) -> dict:
    c = turn.case
    return {"run_id": run_id, "bot": turn.bot, "case_id": c.case_id, "suite": c.suite,
            "question": c.question, "expected_answer": c.expected_answer, "answer": turn.answer,
            "contexts": turn.effective_contexts, "tags": c.tags, "latency_ms": turn.latency_ms,
            "verdict": turn.verdict, "verdict_reason": turn.verdict_reason, "error": turn.error,
            "bot_details": to_json(turn.details), "label": c.label,
            "references": c.references, "messages": to_json(c.messages),
            "decided_by": turn.decided_by}


def score_rows(turn: Turn, run_id: str) -> Iterator[dict]:
    c = turn.case
    for metric, r in turn.scores.items():
        yield {"run_id": run_id, "bot": turn.bot, "case_id": c.case_id, "suite": c.suite,
               "metric": metric, "value": r.value, "details": to_json(r.details),
               "error": r.error}


def bot_error_row(turn: Turn, run_id: str) -> dict:
    return {"run_id": run_id, "stage": "bot", "case_id": turn.case.case_id, "bot": turn.bot,
            "error_type": "bot_error", "message": turn.error, "source": turn.case.source}


def call_error_rows(turn: Turn, run_id: str, stages: tuple[str, ...]) -> list[dict]:
    """errors/ rows for the remote calls of the turn's metrics that failed, in the
    given stages (schemas.tables.CALL_ERROR_STAGES): one per failed judge
    question, one per turn whose embeddings or classifier pairs failed. A call a
    spend cap refused did not fail (the manifest says the cap was hit)."""
    def row(stage: str, error_type: str, message: str) -> dict:
        return {"run_id": run_id, "stage": stage, "case_id": turn.case.case_id,
                "bot": turn.bot, "error_type": error_type, "message": message[:1000],
                "source": turn.case.source}

    out = []
    if "judge" in stages:
        from transforms.enrich.judge.tasks import judge_failures
        out += [row("judge", judge_error_type(error), f"{task}: {error}")
                for task, error in judge_failures(turn.features)]
    if "embedding" in stages:
        from transforms.enrich.features import EMBED_ERROR
        from transforms.remote.budget import BUDGET_REACHED
        why = turn.features.get(EMBED_ERROR)
        if why and not why.startswith(BUDGET_REACHED):
            out.append(row("embedding", "embedding_failed", why))
    if "classifier" in stages:
        from transforms.enrich.classifier.reading import classifier_failure
        why = classifier_failure(turn.features)
        if why:
            out.append(row("classifier", "classifier_failed", why))
    return out


def judge_error_type(error: str) -> str:
    """errors/'s error_type of a failed judge question."""
    if error.startswith("judge call failed"):
        return "judge_call_failed"
    if error.startswith("prompt ~") and error.endswith("not sent"):  # judge.max_prompt_tokens
        return "judge_prompt_too_large"
    return "judge_reply_unusable"


def call_error_count(row: dict) -> str:
    """The manifest count an errors/ row of call_error_rows adds to."""
    return CALL_ERROR_STAGES[row["stage"]][0]


def problem_row(problem: RowProblem, run_id: str) -> dict:
    return {"run_id": run_id, "stage": "read", "case_id": problem.case_id, "bot": None,
            "error_type": problem.error_type, "message": problem.message,
            "source": problem.source}


def duplicate_row(case_id: str, count: int, run_id: str) -> dict:
    return {"run_id": run_id, "stage": "read", "case_id": case_id, "bot": None,
            "error_type": "duplicate_case_id",
            "message": f"case_id {case_id!r} appears {count} times; every occurrence is "
                       "evaluated, so its rows in results/ and scores/ repeat",
            "source": None}


def severity(turn: Turn) -> tuple:
    """Sort key for "worst cases": ERROR, FAIL, WARN, then by low relevance."""
    rank = {"ERROR": 4, "FAIL": 3, "WARN": 2, "PASS": 0}.get(turn.verdict or "", 1)
    rel = turn.scores.get("lexical_relevance")
    hall = turn.scores.get("hallucination")
    return (rank, hall.value if hall and hall.value is not None else 0.0,
            -(rel.value if rel and rel.value is not None else 1.0), turn.case.case_id)


def shortened(text: str | None, limit: int) -> str | None:
    """At most `limit` characters, an ellipsis where cut (an answer can be
    megabytes; a report shows its start)."""
    return text if text is None or len(text) <= limit else text[: limit - 1] + "…"


def worst_case_row(turn: Turn) -> dict:
    """A worst-case candidate: what the report shows of it (texts clipped),
    with every metric's value (null ones left out) and its sort key."""
    reference = turn.case.expected_answer
    return {"case_id": turn.case.case_id, "suite": turn.case.suite, "verdict": turn.verdict,
            "reason": turn.verdict_reason, "question": shortened(turn.case.question, 200),
            "answer": shortened(turn.answer or "", 200),
            "reference": shortened(reference, 200),
            "metrics": {m: round(r.value, 4) for m, r in sorted(turn.scores.items())
                        if r.value is not None},
            "severity": severity(turn)}
