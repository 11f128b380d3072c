"""Metrics of the user's own: Python functions named in the config
(`custom_metrics:`) or published by a package under the entry-point group
`evalbeam.metrics`, and judge rubrics written in the config (`judge.rubrics:`).

Each becomes a Scorer like the built-in ones, so it runs as its own ParDo
`Score[name]` with the same contract: a value, or null with the reason. A
function is called as `fn(sample, **options)` with `sample` a plain dict of
the turn (question, answer, expected_answer, references, contexts, messages,
case_id, suite, tags, bot, latency_ms) and returns a number, None, a
(value, details) pair, a {"value", "details", "error"} dict or a
MetricResult. An exception in it makes that row's value null with the error,
and so does a call past its time limit (`timeout_s`, see TimedCalls); the run
goes on.

Shipping: a function from a module outside any installed package (e.g. a
file next to the config) is pickled *by value* with the job (Beam's
cloudpickle), so workers need no copy of the file; a function of an installed
package is pickled by reference, so the package must be installed on the
workers (Dataflow: --setup_file, --extra_package or --requirements_file).
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import logging
import math
import os
import queue
import sys
import sysconfig
import threading
from concurrent.futures import Future, TimeoutError as CallTimedOut
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable, Mapping

from schemas.records import MetricResult, Turn
from schemas.tables import MAX_METRIC_NAME, METRIC_NAME_RULE, is_metric_name
from transforms.remote.scrub import writable
from transforms.score.scoring import Scorer, _judged, _one

NEEDS = ("question", "answer", "expected_answer", "contexts", "messages")
ENTRY_POINT_GROUP = "evalbeam.metrics"
ATTRIBUTE = "evalbeam_metric"  # set by @metric: {needs, direction, options, name}
DIRECTIONS = ("higher", "lower", "none")  # a custom metric's `direction:` (none: neither)
_log = logging.getLogger(__name__)
DEFAULT_TIMEOUT_S = 60.0  # a custom metric's time limit per call (`timeout_s:`), as an endpoint's
MAX_OVERDUE = 4  # calls of one metric still running past the limit before its rows are skipped
MAX_ERROR_CHARS = 500  # a custom metric's error in scores/ (its exception's, or its own)
MAX_DETAILS_CHARS = 100_000  # its details as JSON in scores/; more are left out, the value kept


# What a user's code may raise without costing the run: every Exception, and
# SystemExit too (a plugin's `sys.exit()` or `exit()` must not end evalbeam).
# KeyboardInterrupt still stops the run.
USER_CODE_FAILURES = (Exception, SystemExit)


class CustomMetricError(ValueError):
    """A custom metric cannot be used; the message is one line."""


def described(exc: BaseException) -> str:
    """`Type: message` of an exception of a user's code, whose own str() may
    fail (a __str__ reading an attribute never set): that failure named the
    wrong thing, or, outside a row's scoring, ended the run with a traceback."""
    try:
        text = str(exc)
    except USER_CODE_FAILURES as inner:
        text = f"(its message cannot be shown: {type(inner).__name__})"
    return f"{type(exc).__name__}: {text}"


def direction_problem(direction: Any, lower_is_better: Any) -> str | None:
    """Why a declared direction is wrong (None: it is right): `direction` is
    higher, lower or none (None: not given), and lower_is_better, the older
    way to say lower, must not contradict it."""
    if direction is not None and direction not in DIRECTIONS:
        return f"direction must be {', '.join(DIRECTIONS[:-1])} or none, got {direction!r}"
    if not isinstance(lower_is_better, bool):
        return "lower_is_better must be true or false"
    if lower_is_better and direction not in (None, "lower"):
        return f"lower_is_better: true contradicts direction: {direction}"
    return None


def direction_of(direction: str | None, lower_is_better: bool) -> str:
    """The direction a (checked) declaration means: lower_is_better stands for
    direction: lower; neither given, higher."""
    return direction or ("lower" if lower_is_better else "higher")


def timeout_problem(timeout_s: Any) -> str | None:
    """Why a declared time limit is wrong (None: it is a number of seconds > 0)."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not (
            math.isfinite(timeout_s) and timeout_s > 0):
        return f"timeout_s must be a number of seconds > 0, got {timeout_s!r}"[:200]
    return None


def range_problem(value_range: Any) -> str | None:
    """Why a declared value range is wrong (None: it is absent, or [low, high]
    of finite numbers, either of them null for an open side, low < high)."""
    if value_range is None:
        return None
    ok = isinstance(value_range, (list, tuple)) and len(value_range) == 2 and all(
        v is None or not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
        for v in value_range)
    if ok and None not in value_range and not value_range[0] < value_range[1]:
        ok = False
    if not ok:
        return (f"value_range must be [low, high] (numbers, low < high; null for an open "
                f"side), got {value_range!r}")[:200]
    return None


def value_range_of(value_range: Any) -> tuple[float | None, float | None] | None:
    """A checked value range as (low, high) floats."""
    if value_range is None:
        return None
    return tuple(None if v is None else float(v) for v in value_range)  # type: ignore[return-value]


def outside(value: float, value_range: tuple[float | None, float | None] | None) -> str | None:
    """Why a metric's value cannot be right (None: it is inside its range)."""
    if value_range is None:
        return None
    low, high = value_range
    if (low is None or value >= low) and (high is None or value <= high):
        return None
    shown = ", ".join("null" if v is None else f"{v:g}" for v in value_range)
    return f"returned {value:g}, outside its value_range [{shown}]"


def metric(needs=("answer",), lower_is_better: bool = False, options=None,
           name: str | None = None, direction: str | None = None,
           timeout_s: float = DEFAULT_TIMEOUT_S, value_range=None):
    """Declare what a metric function needs (`evalbeam.metric`; for functions
    given to evalbeam.evaluate() or published as entry points; a config's
    `needs:` etc. override it):

        @evalbeam.metric(needs=["answer", "expected_answer"])
        def my_metric(sample, **options): ...

    name: the metric's name (default: the function's, for evaluate()).
    direction: "higher" (the default), "lower" (as lower_is_better=True) or
    "none": neither is better, so compare reports a change, never better or worse.
    timeout_s: the time limit of one call (a row past it is null, the run goes on).
    value_range: (low, high) the values can take, e.g. (0, 1); a value outside
    it is null with the reason instead of skewing the summary and the verdicts.
    Bare `@evalbeam.metric` (no parentheses) declares the defaults; needs="answer"
    is one need (not its letters).
    """
    if callable(needs):  # @metric without (): `needs` is the function itself
        return metric()(needs)
    if isinstance(needs, str):
        needs = (needs,)
    problem = direction_problem(direction, bool(lower_is_better)) or timeout_problem(
        timeout_s) or range_problem(value_range)
    if problem:
        raise CustomMetricError(f"@metric: {problem}")

    def mark(fn):
        setattr(fn, ATTRIBUTE, {"needs": tuple(needs),
                                "direction": direction_of(direction, bool(lower_is_better)),
                                "options": dict(options or {}), "name": name,
                                "timeout_s": float(timeout_s),
                                "value_range": value_range_of(value_range)})
        return fn
    return mark


def _installed(module) -> bool:
    """Is the module part of an installed distribution (site-packages)?"""
    path = os.path.realpath(getattr(module, "__file__", "") or "")
    roots = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}
    return any(path.startswith(root + os.sep) for root in roots)


def ship_by_value(fn: Callable) -> None:
    """Pickle the function's module by value with the job unless it is installed."""
    module = sys.modules.get(getattr(fn, "__module__", ""))
    if module is None or _installed(module) or module.__name__ in ("__main__", "builtins"):
        return
    from apache_beam.internal.cloudpickle import cloudpickle
    try:
        cloudpickle.register_pickle_by_value(module)
    except ValueError:  # already registered, or a module cloudpickle cannot ship
        pass


def load_beside(module_name: str, search_dir: str | None):
    """A module file beside the config (`search_dir/<name>.py`), read afresh each
    time a run is planned, or None to import as usual. Python's import would hand
    out the first `my_metrics` this process imported: in a notebook calling
    evalbeam.evaluate() twice, a second config's own my_metrics.py, or the file
    edited since, would be ignored without a word. A name that is a package, an
    installed or a standard module keeps the import's meaning."""
    if not search_dir or "." in module_name or module_name in sys.stdlib_module_names:
        return None
    path = os.path.join(search_dir, module_name + ".py")
    cached = sys.modules.get(module_name)
    if not os.path.isfile(path) or cached is not None and (
            _installed(cached) or hasattr(cached, "__path__")
            or not getattr(cached, "__file__", None)):
        return None
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # pickling by value and the module's own code look here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if cached is None:
            del sys.modules[module_name]
        else:
            sys.modules[module_name] = cached
        raise
    return module


def check_ships(fn: Callable) -> None:
    """The function can be pickled with the job (Beam's pickler, as the run will):
    else the run failed as it was built, with a traceback of Beam's, after
    creating the output folder. CustomMetricError in one line naming what cannot."""
    from apache_beam.internal import pickler
    try:
        pickler.dumps(fn)
    except Exception as exc:  # noqa: BLE001 - any pickling failure, told in one line
        why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise CustomMetricError(f"cannot be shipped to the workers: {why}; make such an "
                                "object (a connection, a lock, a client) inside the function, "
                                "on its first call, not outside it") from None


def resolve(reference: str, search_dir: str | None = None) -> Callable:
    """'package.module:function' -> the function; CustomMetricError in one line.
    The config file's folder is searched too, so a module beside it works (and
    is read from that folder, see load_beside)."""
    module_name, _, attr = reference.partition(":")
    if search_dir and search_dir not in sys.path:
        sys.path.insert(0, search_dir)
    try:
        module = load_beside(module_name, search_dir) or importlib.import_module(module_name)
    except ImportError as exc:
        raise CustomMetricError(f"cannot import module {module_name!r}: {exc}") from None
    except USER_CODE_FAILURES as exc:  # the module itself raised while importing
        raise CustomMetricError(f"importing module {module_name!r} failed: "
                                f"{described(exc)}") from None
    fn = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise CustomMetricError(f"module {module_name!r} has no function {attr!r}")
    if not callable(fn):
        raise CustomMetricError(f"{reference!r} is not callable")
    return fn


def sample(turn: Turn) -> dict[str, Any]:
    """What a custom metric sees of a turn (plain data, copies)."""
    c = turn.case
    return {"question": c.question, "answer": turn.answer, "expected_answer": c.expected_answer,
            "references": list(c.all_references), "contexts": list(turn.effective_contexts or []),
            "messages": [dict(m) for m in c.messages or []], "case_id": c.case_id,
            "suite": c.suite, "tags": list(c.tags), "bot": turn.bot,
            "latency_ms": turn.latency_ms}


def _number(value: Any) -> MetricResult | float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) or hasattr(value, "__float__") and not isinstance(
            value, str):
        try:  # an array of several values, an int beyond a float's range
            number = float(value)
        except (TypeError, ValueError, OverflowError) as exc:
            return _not_a_number(value, f" ({exc})")
        if not math.isfinite(number):
            return MetricResult.null(f"custom metric returned {number}")
        return number
    return _not_a_number(value)


def _not_a_number(value: Any, why: str = "") -> MetricResult:
    return MetricResult.null(f"custom metric returned {type(value).__name__}{why}, expected a "
                             "number, None, (value, details) or a dict with 'value'")


def to_result(out: Any) -> MetricResult:
    """A function's return value as a MetricResult (never 0 for "could not")."""
    if isinstance(out, MetricResult):
        return out
    details: Any = {}
    error = None
    if isinstance(out, tuple) and len(out) == 2:
        out, details = out
    elif isinstance(out, Mapping):
        if "value" not in out and "error" not in out:  # {"score": 0.8}: not "no value"
            keys = ", ".join(sorted(map(str, out))[:5]) or "none"
            return _not_a_number(out, f" without 'value' (keys: {keys})")
        out, details, error = out.get("value"), out.get("details") or {}, out.get("error")
    if not isinstance(details, Mapping):
        return MetricResult.null(f"custom metric returned details of type "
                                 f"{type(details).__name__}, expected a dict")
    details = dict(details)
    if out is None:
        return MetricResult.null(str(error) if error else "custom metric returned no value",
                                 **details)
    number = _number(out)
    if isinstance(number, MetricResult):
        return number
    return MetricResult(number, details)


def _writable(value: Any) -> Any:
    """A user's result as plain JSON data, which the run can pass between its
    steps and write: text (keys too) with lone surrogates as U+FFFD (a half
    emoji cut from a string cannot be written), any other object as its text
    (scores.details held it so already; a generator or a lambda cannot be
    pickled between steps), keys as JSON writes them (mixed int and text keys
    cannot be sorted). Each of these failed the whole run."""
    if isinstance(value, str):
        return writable(value)
    if isinstance(value, Mapping):
        return {_key(k): _writable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_writable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return writable(str(value))


def _key(key: Any) -> str:
    """A details key as the text JSON makes of it (1 -> "1", None -> "null")."""
    if isinstance(key, str):
        return writable(key)
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    return writable(str(key))


def writable_result(result: MetricResult) -> MetricResult:
    """A user's result as the run carries and writes it: plain JSON data
    (_writable), its error cut at MAX_ERROR_CHARS and its details left out past
    MAX_DETAILS_CHARS of JSON, value kept (a metric returning a document per
    row wrote it into every scores/ row, 20 MB each)."""
    details, error = _writable(result.details), _writable(result.error)
    size = len(json.dumps(details, ensure_ascii=False))
    if size > MAX_DETAILS_CHARS:
        details = {"details_left_out": f"{size} characters of JSON, over the "
                                       f"{MAX_DETAILS_CHARS} a row keeps"}
    return MetricResult(result.value, details, error if error is None else error[:MAX_ERROR_CHARS])


class Overdue(Exception):
    """A call was given up on: past its time limit, or not started because too
    many earlier calls are still running past theirs. `first`: the first call
    of this step in this worker to time out."""

    def __init__(self, message: str, first: bool = False):
        super().__init__(message)
        self.first = first


def _serve(inbox: "queue.SimpleQueue") -> None:
    """A caller thread: runs the calls put in its inbox one after another until
    it is handed None (it was given up on, or the step is done)."""
    while (item := inbox.get()) is not None:
        future, fn, args, kwargs = item
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: B036 - handed to the caller, who decides
                future.set_exception(exc)


class TimedCalls:
    """Calls a user's function on a thread of its own, one call at a time for
    each thread that calls (a worker's threads never wait on each other's
    calls), so that a call can be given up on after its time limit. Python
    cannot stop a thread: a call given up on runs on in its (daemon) thread
    until it returns or the process exits, and the next call gets a new
    thread. Once MAX_OVERDUE such calls are still running, further calls are
    refused at once instead of piling up threads (a service that never
    answers). The threads end with the step (its DoFn dropped), so a notebook
    or a long-lived worker running many runs keeps none. Not pickled: each
    worker makes its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inboxes: dict[int, queue.SimpleQueue] = {}  # per calling thread
        self.overdue = 0
        self.timed_out = 0  # calls given up on, ever

    def __reduce__(self):
        return TimedCalls, ()

    def __del__(self) -> None:
        for inbox in self._inboxes.values():
            inbox.put(None)

    def call(self, timeout_s: float, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs), or Overdue when it has not returned in timeout_s."""
        caller = threading.get_ident()
        with self._lock:
            if self.overdue >= MAX_OVERDUE:
                raise Overdue(f"not called: {self.overdue} earlier calls are still running "
                              f"past its {_seconds(timeout_s)} limit in this worker")
            inbox = self._inboxes.get(caller)
            if inbox is None:
                inbox = self._inboxes[caller] = queue.SimpleQueue()
                threading.Thread(target=_serve, args=(inbox,), daemon=True,
                                 name="evalbeam-custom-metric").start()
        future: Future = Future()
        inbox.put((future, fn, args, kwargs))
        try:
            return future.result(timeout_s)
        except CallTimedOut:
            with self._lock:  # its thread is busy: the next call gets another, and this
                del self._inboxes[caller]  # one ends when the late call returns
                inbox.put(None)
                self.overdue += 1
                self.timed_out += 1
                first = self.timed_out == 1
            future.add_done_callback(self._returned)
            raise Overdue(f"timed out after {_seconds(timeout_s)}", first) from None

    def _returned(self, _future: Future) -> None:
        with self._lock:
            self.overdue -= 1


def _seconds(limit: float) -> str:
    return f"{limit:g} s"


@dataclass(frozen=True)
class CustomCompute:
    """A Scorer's compute for a user function (pickled with the job). Each call
    has a time limit, `timeout_s`: a row whose call is not back by then is null
    with the reason and the run goes on (see TimedCalls)."""

    name: str
    fn: Callable
    timeout_s: float = DEFAULT_TIMEOUT_S
    value_range: tuple[float | None, float | None] | None = None
    calls: TimedCalls = field(default_factory=TimedCalls, compare=False, repr=False)

    def __call__(self, turn: Turn, options: Mapping[str, Any], side: Any = None
                 ) -> dict[str, MetricResult]:
        try:
            out = self.calls.call(self.timeout_s, self.fn, sample(turn), **options)
        except Overdue as exc:
            msg = f"custom metric {self.name} {exc} (timeout_s)"
            if exc.first:  # a sign in the run's log of which case, while the run goes on
                _log.warning("evalbeam: %s on case %s (bot %s); the call goes on in the "
                             "background, and the next rows past the limit are null in "
                             "scores/ without a line here", msg, writable(turn.case.case_id),
                             writable(turn.bot))
            return {self.name: MetricResult.null(msg)}
        except USER_CODE_FAILURES as exc:  # the user's bug costs this row's value, not the run
            msg = f"custom metric {self.name} failed: {described(exc)}"
            return {self.name: writable_result(MetricResult.null(msg))}
        try:
            result = to_result(out)
            wrong = result.value is not None and outside(result.value, self.value_range)
            if wrong:  # 7.3 from a 0..1 metric: null, not a mean and a verdict skewed by it
                result = MetricResult.null(f"custom metric {self.name} {wrong}",
                                           **result.details)
            return {self.name: writable_result(result)}
        except USER_CODE_FAILURES as exc:  # the value's own code: a __float__, a cycle
            msg = (f"custom metric {self.name} returned a value that cannot be read: "
                   f"{described(exc)}")
            return {self.name: writable_result(MetricResult.null(msg))}


def _scorer(name: str, fn: Callable, needs, direction: str, options,
            timeout_s: float = DEFAULT_TIMEOUT_S, value_range=None) -> Scorer:
    return Scorer(name, (name,), tuple(needs),
                  CustomCompute(name, fn, float(timeout_s), value_range_of(value_range)),
                  lower_is_better=frozenset({name} if direction == "lower" else ()),
                  no_direction=frozenset({name} if direction == "none" else ()),
                  option_defaults=dict(options))


def _check_call(fn: Callable, options: Mapping[str, Any]) -> None:
    """fn(sample, **options) can be called: an option the function does not take (or a
    parameter it needs and is not given) would otherwise make every row null."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C function: nothing to check
        return
    try:
        signature.bind(None, **options)
    except TypeError as exc:
        name = getattr(fn, "__name__", "the function")
        raise CustomMetricError(f"{name}(sample, **options) cannot be called with "
                                f"options {sorted(options)}: {exc}") from None


def config_scorers(custom_metrics, search_dir: str | None) -> list[Scorer]:
    """The config's custom_metrics, each resolved now (a bad reference stops the
    run before it starts, naming the entry)."""
    out = []
    for i, m in enumerate(custom_metrics):
        try:
            fn = m.function if callable(m.function) else resolve(m.function, search_dir)
            _check_call(fn, m.options)
            ship_by_value(fn)
            check_ships(fn)
        except CustomMetricError as exc:
            raise CustomMetricError(f"custom_metrics[{i}] ({m.name}): {exc}") from None
        out.append(_scorer(m.name, fn, m.needs, direction_of(m.direction, m.lower_is_better),
                           m.options, m.timeout_s, m.value_range))
    return out


def entry_point_scorers(taken: set[str]) -> list[Scorer]:
    """Metrics published by installed packages under `evalbeam.metrics`."""
    out = []
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if not is_metric_name(ep.name):
            raise CustomMetricError(f"entry point {ep.value!r} ({ENTRY_POINT_GROUP}) names "
                                    f"metric {ep.name[:80]!r}, which is not a metric name "
                                    f"({METRIC_NAME_RULE}, at most {MAX_METRIC_NAME})")
        if ep.name in taken:
            raise CustomMetricError(f"entry point {ep.value!r} ({ENTRY_POINT_GROUP}) names "
                                    f"metric {ep.name!r}, which already exists")
        try:
            fn = ep.load()
        except USER_CODE_FAILURES as exc:
            raise CustomMetricError(f"entry point {ep.name} = {ep.value} ({ENTRY_POINT_GROUP}) "
                                    f"cannot be loaded: {described(exc)}") from None
        spec = getattr(fn, ATTRIBUTE, {})
        bad = sorted(set(spec.get("needs", ())) - set(NEEDS))
        if bad:
            raise CustomMetricError(f"entry point metric {ep.name}: unknown need {bad[0]!r}")
        out.append(_scorer(ep.name, fn, spec.get("needs", ("answer",)),
                           direction_of(spec.get("direction"),
                                        bool(spec.get("lower_is_better", False))),
                           spec.get("options", {}), spec.get("timeout_s", DEFAULT_TIMEOUT_S),
                           spec.get("value_range")))
    return out


def rubric_scorers(rubrics: Mapping[str, Any]) -> list[Scorer]:
    """judge.rubrics: one judge metric each, normalised from its scale."""
    if not rubrics:  # the judge's modules are imported by runs that have a judge metric
        return []
    from transforms.enrich.judge.conversation import rubric_scale
    return [Scorer(name, (name,), tuple(r.inputs), _one(name, _judged("rubric", name)),
                   option_defaults={"scale": list(rubric_scale(r))}, judge=True)
            for name, r in rubrics.items()]
