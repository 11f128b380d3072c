"""evalbeam's Python API: evaluate a table of cases in a notebook or a
script, read a finished run back, declare a custom metric.

    import evalbeam
    result = evalbeam.evaluate(df)            # a DataFrame, Arrow table, HF dataset or path
    result.to_pandas()                        # one row per case × bot, a column per metric
    result.summary()                          # per bot and metric: mean [95% CI], counts
    result.report_path                        # the HTML report

    run = evalbeam.read_run("out", "nightly-2024-06-01")

    @evalbeam.metric(needs=["answer", "expected_answer"])
    def same_length(sample, **options): ...

It runs the same pipeline as `evalbeam run` (same planning, tables,
completion marker), in this process; importing it is cheap, the pipeline's
modules load on the first call.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pipeline  # noqa: F401 - first: its log filter drops Beam's import-time GCP warning

__all__ = ["evaluate", "read_run", "metric", "Result", "NothingEvaluated", "RunFailed",
           "LeaseHeld"]

if TYPE_CHECKING:  # pragma: no cover
    from evalbeam.api import NothingEvaluated, RunFailed, evaluate, read_run
    from evalbeam.result import Result
    from transforms.publish.lease import LeaseHeld
    from transforms.score.custom import metric

_WHERE = {"evaluate": "evalbeam.api", "read_run": "evalbeam.api", "Result": "evalbeam.result",
          "metric": "transforms.score.custom", "NothingEvaluated": "evalbeam.api",
          "RunFailed": "evalbeam.api", "LeaseHeld": "transforms.publish.lease"}


def __getattr__(name: str) -> Any:
    """The API's names, imported on first use (Beam takes seconds to import)."""
    if name not in _WHERE:
        raise AttributeError(f"module 'evalbeam' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
