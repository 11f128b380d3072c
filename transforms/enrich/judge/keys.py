"""The names the judge's answers go by on a Turn, and the ids of numbered items.

TurnJudge (tasks.py) stores each question's outcome under a feature key;
the metrics (scorers.py, conversation.py) read them back by the same key.
Both import these names from here, below both of them, so tasks and
conversation need not import each other.
"""
from __future__ import annotations

DEFAULT_SCALE = (1.0, 5.0)  # a rubric judge's score range unless the config gives one

# feature keys on the Turn
JUDGED = "judge:asked"
JUDGE_ERROR = "judge:error"  # the turn's questions could not be planned or asked at all
JUDGE_SKIP = "judge:skip"  # why the judge was not asked for this turn ("not sampled", ...)
ANSWER_STATEMENTS, REFERENCE = "judge:answer_statements", "judge:reference"
CORRECTNESS, GROUNDING = "judge:correctness", "judge:grounding"
USEFULNESS, SAFETY = "judge:context_usefulness", "judge:safety"


def rubric_feature(metric: str) -> str:
    return f"judge:{metric}"


def answer_ids(n: int) -> list[str]:
    return [f"A{i}" for i in range(1, n + 1)]


def reference_ids(n: int) -> list[str]:
    return [f"R{i}" for i in range(1, n + 1)]


def context_ids(n: int) -> list[str]:
    return [f"C{i}" for i in range(1, n + 1)]
