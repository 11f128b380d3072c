"""evalbeam.evaluate() and evalbeam.read_run(): the command line's `run`,
from Python, in this process.

evaluate() plans the run exactly as `evalbeam run` does (pipeline/plan.py:
the config, the input's columns, the output folder, every endpoint's
secrets), takes the run id's lease, runs the same Beam pipeline
(pipeline/execute.py) and returns the run read back through its completion
marker. In-memory cases (a pandas DataFrame, a pyarrow Table, a Hugging Face
datasets.Dataset, a list of dicts) are written to a temporary Parquet file
(JSON Lines when Arrow cannot type a column: such rows become errors/ rows)
first, outside the output folder, and removed afterwards.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import signal
import sys
import tempfile
from typing import Any, Callable, Mapping, Sequence

from evalbeam.result import Result
from transforms.text.wording import counted

# evaluate()'s own keyword options; any other keyword is a Beam pipeline option
RUN_OPTIONS = ("run_date", "metrics", "custom_metrics", "preset", "progress", "lease_ttl",
               "allow_empty")


class NothingEvaluated(ValueError):
    """The run finished but evaluated nothing (`evalbeam run` exits 6): none of
    its input rows was a valid case, or its bots were asked and none answered
    (every answer an ERROR): raised so that a script does not carry on as if it had
    evaluated something; `result` is the finished run (its errors() say why)."""

    def __init__(self, message: str, result: Result):
        super().__init__(message)
        self.result = result


def read_run(output: str, run_id: str, **filesystem_options: Any) -> Result:
    """A finished run, read through its completion marker
    (`<output>/runs/<run_id>/manifest.json`); raises ValueError (RunUnreadable)
    for an unknown, unfinished or corrupt run. For a run on s3:// or hdfs://,
    the command line's filesystem options as keywords (s3_region_name=,
    s3_endpoint_url=, hdfs_host=, hdfs_port=, hdfs_user=, ...); keys come from
    the environment."""
    from apache_beam.options.pipeline_options import PipelineOptions
    from pipeline.filesystems import FILESYSTEM_FLAGS, check_command_line, use_filesystems
    output = at_home(output)
    unknown = sorted(set(filesystem_options) - set(FILESYSTEM_FLAGS))
    if unknown:
        raise TypeError(f"read_run() got an unexpected keyword argument {unknown[0]!r} (the "
                        f"filesystem options are {', '.join(FILESYSTEM_FLAGS)})")
    from transforms.publish.completed import check_run_id
    check_run_id(run_id, "read_run(): run_id")
    urls = check_command_line([f"--output={output}"])  # no credential in the URL
    if filesystem_options:  # else those set before (by evaluate(), say) stay
        use_filesystems(PipelineOptions(_beam_args(filesystem_options, FILESYSTEM_FLAGS)),
                        urls)
    return Result.read(str(output), run_id)


def at_home(path: str | os.PathLike) -> str:
    """A path as a notebook user means it: '~/evals' in the home folder (as
    pandas reads and writes it), not a folder named '~' in the working one."""
    return os.path.expanduser(os.fspath(path))


def evaluate(cases: Any, config: Any = None, output: str | os.PathLike | None = None,
             run_id: str | None = None, **options: Any) -> Result:
    """Evaluate `cases` with every bot and metric of `config`; returns the Result.

    cases:   a pandas DataFrame, a pyarrow Table, a Hugging Face datasets.Dataset,
             a Ragas or DeepEval EvaluationDataset or a list of its samples or
             test cases (read with that tool's preset), a list (tuple,
             iterator) of dicts, a dict of column lists, a table with the
             Arrow stream interface (polars), or a path (Parquet, JSON Lines,
             CSV, a folder, a glob or a dataset saved with save_to_disk) - the
             columns of `evalbeam run`.
    config:  a dict (the YAML file's content), a path to the YAML file, the
             YAML text ("metrics: [rougeL]"), or None (the defaults: the
             recorded answers, every offline metric).
    output:  the folder for the tables and the report (a new temporary folder
             when omitted; it is kept).
    run_id:  the run's id (default: a UTC timestamp and a random suffix).
    options: run_date="YYYY-MM-DD" (or a datetime.date); metrics=[names or @evalbeam.metric functions]
             (as the config's `metrics:`, the functions added as custom metrics);
             preset="NAME" (a verdict preset, as `evalbeam run --preset`);
             custom_metrics=[functions] (added to the metrics that would run);
             progress=False (no progress lines on stderr); lease_ttl=seconds;
             allow_empty=True (an input with no case runs, and a run whose rows
             are all invalid returns, instead of raising);
             any Beam pipeline option (runner="FnApiRunner",
             direct_running_mode="multi_processing", direct_num_workers=2, ...).

    Raises ConfigError, InputError or UsageError (all ValueError) with the
    one-line message the command line prints, before anything is written
    (an input with no case among them); LeaseHeld (a RuntimeError) when
    another run of the run id (a process, a thread) holds its lease, before
    anything is written; NothingEvaluated (a ValueError, with
    the Result) when every input row was invalid. A run that fails after
    sending requests raises its exception with what they were at the end of its
    message (with_billed), as `evalbeam run` says them: a started run that fails
    or is stopped raises RunFailed (run id, attempt, reason, billed, output,
    signal), of its own exception's class too. No exception it raises
    quotes a configured secret (see scrub_exception). What is printed or logged
    in this process during the call is scrubbed too; sys.stdout, sys.stderr,
    the log record factory and warnings.showwarning are as they were after it.
    """
    from pipeline.stopping import raising_on_stop
    from transforms.remote.scrub import (remember_config_secrets, scrub_exception,
                                         scrubbing_during)
    # prints and logs of the call scrubbed, SIGTERM an exception (a RunFailed once the
    # run started); the process as it was after
    if isinstance(config, (str, os.PathLike)):
        config = at_home(config)
    with scrubbing_during(), raising_on_stop():
        remember_config_secrets(config)  # before anything said can quote them
        try:
            return _evaluate(cases, config, output, run_id, **options)
        except BaseException as exc:
            raise scrub_exception(exc)


def _evaluate(cases: Any, config: Any, output: str | os.PathLike | None, run_id: str | None,
              **options: Any) -> Result:
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipeline.execute import (beam_options, run_pipeline, say_before,
                                  stopped_before_start, stopped_by, take_lease)
    from pipeline.filesystems import check_command_line
    from pipeline.plan import (DEFAULT_TTL_S, UsageError, driven_from_here, make_plan,
                               workers_elsewhere)
    from pipeline.stopping import exit_code

    run_options = checked_run_options({k: options.pop(k) for k in RUN_OPTIONS if k in options})
    beam_args = _beam_args(options, PipelineOptions([]).get_all_options())
    cfg = _with_metrics(load_any_config(config), run_options.get("metrics"),
                        run_options.get("custom_metrics", ()))
    cases, listed = as_list(cases)
    cases, cfg, named = tool_dataset(cases, cfg)
    named = named or listed
    made = output is None  # a temporary folder of ours: removed if the run never starts
    output = at_home(output) if output is not None else tempfile.mkdtemp(prefix="evalbeam-")
    staging, started, leased = None, False, None
    try:
        path, label, staging = cases_path(cases, named, bool(run_options.get("allow_empty")))
        read_as = None
        if label is not None:
            cfg, read_as = read_as_tool(cfg, path)
        args = argparse.Namespace(input=path, output=output, config=None, run_id=run_id,
                                  run_date=run_options.get("run_date"), attempt=None,
                                  preset=run_options.get("preset"),
                                  allow_empty=bool(run_options.get("allow_empty")),
                                  lease_ttl=run_options.get("lease_ttl", DEFAULT_TTL_S))
        urls = check_command_line([f"--output={output}", f"--input={path}", *beam_args])
        pipeline_options = beam_options(beam_args, urls)
        if label is not None and workers_elsewhere(pipeline_options):
            raise UsageError(f"cases in memory ({label}) cannot be read by the workers of a "
                             "remote runner; write them where the workers can read them "
                             "(gs://, s3://, ...) and pass that path")
        try:
            plan = make_plan(args, pipeline_options, config=cfg)
        except ValueError as exc:  # named as the user knows them: keywords, in-memory cases
            said = as_keywords(str(exc))
            if label is not None:
                said = said.replace(path, label)
            if said == str(exc):
                raise
            raise type(exc)(said) from None
        if label is not None:  # the manifest and errors/ name what was evaluated, not a
            shown = label.rsplit(" (", 1)[0]  # temporary file ("list of dicts#3")
            notes = (read_as, *plan.info.notes) if read_as else plan.info.notes
            plan = dataclasses.replace(plan, info=dataclasses.replace(plan.info, input=label,
                                                                      notes=notes),
                                       shards=[dataclasses.replace(s, shown=shown)
                                               for s in plan.shards])
        lease = take_lease(plan.info, driven_from_here(pipeline_options), adopt=False)
        leased = plan.info
        say_before(plan)
        started = True
        run_pipeline(plan, pipeline_options, lease, watch=run_options.get("progress", True))
    except BaseException as exc:
        if made and not started:
            shutil.rmtree(output, ignore_errors=True)
        stop = None if started else stopped_by(exc)
        if stop:  # SIGTERM or Ctrl-C before the run: the lease given up, as `evalbeam run`
            print(stopped_before_start(leased, stop), file=sys.stderr)
            if stop == "SIGTERM":  # no run to fail: the script ends as the signal ends it
                raise SystemExit(exit_code(signal.SIGTERM)) from None
        if not started:
            raise
        failed = run_failed(exc, plan.info)
    else:
        failed = None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    if failed is not None:  # raised here, not in the except: not "during handling of" itself
        raise failed
    result = read_run(plan.info.output, plan.info.run_id)
    from transforms.publish.report import asking_bots, evaluated_nothing, outcome_notes
    asking = asking_bots(result.manifest.get("config"))
    if evaluated_nothing(result.counts, asking) and not run_options.get("allow_empty"):
        raise NothingEvaluated(f"run {result.run_id}: {outcome_notes(result.counts, asking)[0]}"
                               "; pass allow_empty=True to accept it", result)
    return result


def checked_run_options(run_options: dict[str, Any]) -> dict[str, Any]:
    """evaluate()'s own options as the planner takes them: a run_date given as
    a datetime.date (date.today()) as its YYYY-MM-DD; allow_empty= and
    progress= must be True or False ("no" is a true value); None is the default."""
    import datetime as dt
    from pipeline.plan import UsageError
    run_options = {k: v for k, v in run_options.items() if v is not None}  # None: the default
    for flag in ("allow_empty", "progress"):
        if not isinstance(run_options.get(flag, False), bool):
            raise UsageError(f"{flag} must be True or False, got {run_options[flag]!r}")
    day = run_options.get("run_date")
    if isinstance(day, dt.date):  # a datetime too: its day, as written
        run_options["run_date"] = (day.date() if isinstance(day, dt.datetime) else day).isoformat()
    return run_options


KEYWORDS = {"--run-id": "run_id", "--run-date": "run_date", "--preset": "preset",
            "--lease-ttl": "lease_ttl"}
"""The command line's flags that are evaluate()'s keywords."""


def as_keywords(message: str) -> str:
    """A planner's refusal that begins with a flag ("--run-id 'a b' must be
    ..."), as evaluate()'s keyword (run_id='a b' must be ...)."""
    flag, _, rest = message.partition(" ")
    return f"{KEYWORDS[flag]}={rest}" if flag in KEYWORDS and rest else message


class RunFailed(BaseException):
    """A run that started and failed or was stopped, as evaluate() raises it: an
    instance of the class the failure raised (a custom metric's exception, a
    worker's RuntimeError, KeyboardInterrupt for Ctrl-C, SystemExit(143) for
    SIGTERM) and of RunFailed, so
    that `except` clauses written for the first keep working (Ctrl-C: a
    KeyboardInterrupt, also when it interrupted a step, which Beam re-raises
    as a RuntimeError). Its message is the failure's, ending with what the run
    was billed for (with_billed).

    run_id, attempt, output: the run (`evalbeam status --output OUTPUT
    --run-id RUN_ID` says the same; a new run of the id takes over).
    reason: why, in the one line `evalbeam run` prints and the lease records.
    billed: the requests, tokens and cost it sent before it failed (a
    transforms.remote.journal.Billed: calls, requests, tokens, cost (None
    without a price), by_endpoint), in no usage/ table; None when it sent none.
    signal: "SIGINT" when Ctrl-C stopped it, "SIGTERM" when SIGTERM did (then a
    SystemExit of 143: uncaught, the script ends as the signal ends it), else
    None."""
    run_id: str
    attempt: int
    reason: str
    billed: Any
    output: str
    signal: str | None


_RUN_FAILED: dict[type, type] = {}


def run_failed(exc: BaseException, info) -> BaseException:
    """The failure of a started run as a RunFailed of its own class, its
    message ending with what it was billed for. A class that cannot be
    subclassed (or built from its args) stays itself, with the fields set."""
    from pipeline.execute import billed_text, failure_reason, run_spend, stopped_by
    from pipeline.stopping import exit_code
    reason, spent, signal_name = failure_reason(info, exc), run_spend(info), stopped_by(exc)
    fields = {"run_id": info.run_id, "attempt": info.attempt, "reason": reason,
              "billed": spent, "output": info.output, "signal": signal_name}
    # Ctrl-C is a KeyboardInterrupt, also when Beam re-raised it as a RuntimeError;
    # SIGTERM a SystemExit of 143: uncaught, the script ends as the signal ends it
    cls, args = {"SIGINT": (KeyboardInterrupt, exc.args),
                 "SIGTERM": (SystemExit, (exit_code(signal.SIGTERM),))
                 }.get(signal_name, (type(exc), exc.args))
    try:
        failed = _rebuilt(cls, args, {**vars(exc), **fields})
    except TypeError:  # a final class, or one whose __new__ wants other arguments
        failed = with_billed(exc, billed_text(info, spent))
        vars(failed).update(fields)
        return failed
    with_billed(failed, billed_text(info, spent))
    failed.__cause__, failed.__context__ = exc.__cause__, exc.__context__
    failed.__suppress_context__ = exc.__suppress_context__
    return failed.with_traceback(exc.__traceback__)


def _run_failed_class(cls: type) -> type:
    """RunFailed and `cls` (one class per failure class)."""
    if cls not in _RUN_FAILED:
        _RUN_FAILED[cls] = type("RunFailed", (RunFailed, cls), {
            "__module__": "evalbeam", "__qualname__": f"RunFailed[{cls.__qualname__}]",
            "__reduce__": lambda self: (_rebuilt, (cls, self.args, dict(vars(self))))})
    return _RUN_FAILED[cls]


def _rebuilt(cls: type, args: tuple, state: dict) -> BaseException:
    """A RunFailed of `cls` with these args and attributes (how one is unpickled)."""
    failed_class = _run_failed_class(cls)
    failed = failed_class.__new__(failed_class, *args)
    failed.args = args
    if isinstance(failed, SystemExit):  # its exit status, which __init__ sets
        failed.code = args[0] if len(args) == 1 else (args or None)
    vars(failed).update(state)
    return failed


def with_billed(exc: BaseException, billed: str) -> BaseException:
    """The exception of a run that failed after sending requests, its message
    ending with what they were ("; before it failed it sent N requests (...),
    billed and in no usage/ table"), as Beam tags a DoFn's exception with its
    step: in place, so that its class (what a caller catches) stays. No text
    argument to end: a note (shown with its traceback)."""
    if not billed:
        return exc
    if exc.args and isinstance(exc.args[0], str):
        exc.args = (exc.args[0] + billed, *exc.args[1:])
    else:
        exc.add_note(billed.removeprefix("; "))
    return exc


def _beam_args(options: Mapping[str, Any], known: Mapping[str, Any]) -> list[str]:
    """Keyword options as Beam's flags; an unknown keyword is a TypeError (a
    typo must not be ignored)."""
    args = []
    for key, value in options.items():
        if key not in known:
            raise TypeError(f"evaluate() got an unexpected keyword argument {key!r} (neither "
                            f"one of {', '.join(RUN_OPTIONS)} nor a Beam pipeline option)")
        if value is True:
            args.append(f"--{key}")
        elif value is not False and value is not None:
            args.append(f"--{key}={value}")
    return args


def load_any_config(config: Any):
    """A Config from a dict, a YAML path, YAML text, a Config, or None (the
    defaults); relative paths in a dict or a text are from the working folder."""
    from pipeline.config import Config, ConfigError, load_config, parse_config, read_yaml
    if isinstance(config, str) and is_yaml_text(config):
        config = read_yaml(config, "config text")
        if not isinstance(config, Mapping):
            raise ConfigError(f"config text must be a YAML mapping (key: value lines), got "
                              f"{type(config).__name__}")
    if config is None or isinstance(config, (str, os.PathLike)):
        return load_config(None if config is None else str(config))
    if isinstance(config, Config):
        return config
    if isinstance(config, Mapping):
        return parse_config(dict(config), os.getcwd())
    raise ConfigError(f"config must be a dict, a path to a YAML file, YAML text or None, got "
                      f"{type(config).__name__}")


def is_yaml_text(config: str) -> bool:
    """Whether a str given as config is the YAML itself, not a file's path: it
    spans lines, or it is no file and reads as a mapping ("metrics: [rougeL]")."""
    if "\n" in config:
        return True
    if os.path.exists(config):
        return False
    import yaml
    try:
        return isinstance(yaml.safe_load(config), dict)
    except yaml.YAMLError:
        return False


def _with_metrics(cfg, metrics: Sequence[Any] | None, custom: Sequence[Callable]):
    """The config with `metrics` (names; functions become custom metrics and are
    selected by name) and extra custom metric functions, which run besides the
    metrics chosen (the config's list, `metrics`) or every default."""
    if metrics is None and not custom:
        return cfg
    from pipeline.config import ConfigError
    if isinstance(metrics, str) or isinstance(custom, str) or callable(custom):
        raise ConfigError("metrics and custom_metrics must be lists")
    # one function given in both lists is one metric (two of one name still clash)
    functions = list(dict.fromkeys([m for m in (metrics or ()) if callable(m)] + list(custom)))
    own = tuple(custom_metric(fn) for fn in functions)
    names = dict.fromkeys(m.name for m in own)
    clash = [n for n in names if any(n == m.name for m in cfg.custom_metrics)]
    if clash:
        raise ConfigError(f"custom metric {clash[0]!r} is defined twice (the config and "
                          "evaluate())")
    cfg = dataclasses.replace(cfg, custom_metrics=cfg.custom_metrics + own)
    if metrics is not None:
        chosen = [m if isinstance(m, str) else custom_metric(m).name for m in metrics]
        bad = [m for m in metrics if not isinstance(m, str) and not callable(m)]
        if bad:
            raise ConfigError(f"metrics: {bad[0]!r} is neither a metric name nor a function")
        cfg = dataclasses.replace(cfg, metrics=tuple(dict.fromkeys(chosen)))
    if custom and cfg.metrics is not None:  # a list of metrics (the config's, metrics=):
        added = [custom_metric(fn).name for fn in custom]  # the functions run besides
        cfg = dataclasses.replace(cfg, metrics=tuple(dict.fromkeys((*cfg.metrics, *added))))
    return cfg


def custom_metric(fn: Callable):
    """A function (declared with @evalbeam.metric, or plain: it needs the answer)
    as the config's custom metric entry; its name is the function's."""
    from pipeline.config import ConfigError, CustomMetricConfig, check_metric_name
    from transforms.score.custom import ATTRIBUTE, DEFAULT_TIMEOUT_S, NEEDS
    spec = getattr(fn, ATTRIBUTE, {})
    name = spec.get("name") or getattr(fn, "__name__", "")
    try:
        check_metric_name(name, f"custom metric {fn!r}")
    except ConfigError as exc:  # a lambda, a functools.partial: the way to name it
        if spec.get("name"):
            raise
        raise ConfigError(f"{exc}; name it: evalbeam.metric(name=\"my_metric\")(function), "
                          "or def a function of that name") from None
    needs = tuple(spec.get("needs", ("answer",)))
    bad = sorted(set(needs) - set(NEEDS))
    if bad:
        raise ConfigError(f"custom metric {name}: unknown need {bad[0]!r} (needs: "
                          f"{', '.join(NEEDS)})")
    return CustomMetricConfig(name=name, function=fn, needs=needs,
                              direction=spec.get("direction"),
                              lower_is_better=bool(spec.get("lower_is_better", False)),
                              options=dict(spec.get("options", {})),
                              timeout_s=spec.get("timeout_s", DEFAULT_TIMEOUT_S),
                              value_range=spec.get("value_range"))


DEEPEVAL_FIELDS = ("name", "input", "turns", "scenario", "expected_outcome", "actual_output",
                   "expected_output", "retrieval_context", "tags", "metadata",
                   "additional_metadata")
"""What the `deepeval` preset reads of a DeepEval test case or golden (its other
fields, tools, costs, are not evalbeam's inputs, but those its preset lists as
unread are kept for the run's note on them; an image is refused by its
placeholder in the text)."""

TOOL_ITEMS = {"deepeval": ("LLMTestCase", "ConversationalTestCase", "Golden",
                           "ConversationalGolden"),
              "ragas": ("SingleTurnSample", "MultiTurnSample")}
"""The classes of another tool's cases that a list given to evaluate() may
hold (read as that tool's EvaluationDataset of them)."""


def as_list(cases: Any) -> tuple[Any, str | None]:
    """(cases, what they were) with the shapes pandas and DeepEval take for
    rows read as a list: a tuple, deque, generator or other iterator, a 1-D
    numpy array or a pandas Series of dicts (or of another tool's cases), a
    streamed Hugging Face datasets.IterableDataset, and a dict
    of columns (equal-length lists, as pd.DataFrame(dict) takes). One case's
    dict is refused (which fields are columns is unknowable); anything else is
    returned as it is (None: named by its own type)."""
    from collections import deque
    from collections.abc import Iterator, Mapping as MappingABC
    from collections.abc import ValuesView
    from types import GeneratorType

    from schemas.cases import InputError
    kind = _kind(cases)
    if kind == "datasets.DatasetDict":
        raise InputError(f"cases is a datasets.DatasetDict of splits ({', '.join(cases)}); "
                         "pass one split, e.g. cases[\"test\"]")
    if isinstance(cases, MappingABC):
        return _dict_of_columns(cases), "dict of columns"
    if kind == "numpy.ndarray" and getattr(cases, "ndim", 1) != 1:
        raise InputError(f"cases is a {cases.ndim}-D numpy array, which has no column names; "
                         "pass pandas.DataFrame(array, columns=[...]) or a list of dicts")
    if hasattr(cases, "__arrow_c_stream__") or not (
            isinstance(cases, (tuple, Iterator, ValuesView, deque))
            or kind in ("numpy.ndarray", "pandas.Series", "datasets.IterableDataset")):
        return cases, None  # a table (a RecordBatchReader is an iterator too)
    rows = list(cases)
    name = next((n for n, t in (("tuple", tuple), ("generator", GeneratorType),
                                ("iterator", Iterator), ("dict values", ValuesView))
                 if isinstance(cases, t)), kind)
    if rows and all(isinstance(r, MappingABC) for r in rows):
        name += " of dicts"
    return rows, name


def _dict_of_columns(columns: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A dict of columns (each a list, tuple, numpy array or Series of one
    length) as its rows."""
    from schemas.cases import InputError
    listed = {str(k): v for k, v in columns.items()
              if isinstance(v, (list, tuple)) or _kind(v) in ("numpy.ndarray", "pandas.Series")}
    if not columns:  # no rows: refused, or run with allow_empty, as an empty list
        return []
    if len(listed) < len(columns):
        one = next(str(k) for k in columns if str(k) not in listed)
        raise InputError(f"cases is a dict whose {one!r} is not a list: a dict is read as "
                         "columns ({'question': [...], 'answer': [...]}, as pandas.DataFrame "
                         "takes it); pass one case as a list of it, [case]")
    lengths = {k: len(v) for k, v in listed.items()}
    if len(set(lengths.values())) > 1:
        said = ", ".join(f"{k!r} has {n}" for k, n in lengths.items())
        raise InputError(f"cases is a dict of columns of different lengths ({said}); every "
                         "column needs one value per case")
    return [dict(zip(listed, values)) for values in zip(*(list(v) for v in listed.values()))]


def _kind(value: Any) -> str:
    """A value's type as a user knows it: pandas.DataFrame, builtins.tuple."""
    return f"{type(value).__module__.split('.')[0]}.{type(value).__name__}"


def tool_dataset(cases: Any, cfg):
    """(cases, config, what they were): another tool's dataset object becomes
    its rows as dicts in that tool's columns, read with the tool's preset unless
    the config maps the input itself. Anything else is returned as it is (None:
    named by its own type).
    - A Ragas EvaluationDataset: `to_list()` (user_input, response,
      retrieved_contexts, reference; a MultiTurnSample's messages as a list).
    - A DeepEval EvaluationDataset: its test cases (LLMTestCase or
      ConversationalTestCase), or its goldens when it has no test case (the
      bots then answer them): input or turns, actual_output, expected_output,
      retrieval_context, name.
    - A list of one tool's cases (TOOL_ITEMS: DeepEval's test cases or
      goldens, Ragas' samples): as that tool's dataset of them."""
    kind = _kind(cases)
    tools = {_tool_of(c) for c in cases} if isinstance(cases, list) and cases else set()
    if kind == "ragas.EvaluationDataset" and callable(getattr(cases, "to_list", None)):
        rows, preset = cases.to_list(), "ragas"
    elif kind == "deepeval.EvaluationDataset" and hasattr(cases, "goldens"):
        rows, preset = [_deepeval_row(c) for c in (cases.test_cases or cases.goldens)], "deepeval"
    elif len(tools) == 1 and None not in tools:  # a list of one tool's cases
        preset = tools.pop()
        rows = [(_deepeval_row if preset == "deepeval" else _ragas_row)(c) for c in cases]
        kind = "list of " + " and ".join(dict.fromkeys(
            f"{preset}.{type(c).__name__}" for c in cases))
    else:
        return cases, cfg, None
    if not cfg.input.preset and not cfg.input.columns:
        cfg = dataclasses.replace(cfg, input=dataclasses.replace(cfg.input, preset=preset))
    return rows, cfg, kind


def _tool_of(item: Any) -> str | None:
    """The tool (a TOOL_ITEMS key) whose case `item` is, or None."""
    tool = type(item).__module__.split(".")[0]
    return tool if type(item).__name__ in TOOL_ITEMS.get(tool, ()) else None


def _ragas_row(sample: Any) -> dict[str, Any]:
    """A Ragas sample as its EvaluationDataset's to_list() gives it (to_dict():
    its fields with a value)."""
    if callable(getattr(sample, "to_dict", None)):
        return sample.to_dict()
    return sample.model_dump(exclude_none=True)


def _unread(data: Any, names: Sequence[str]) -> dict[str, Any]:
    """The fields among `names` (ones the deepeval preset does not read) that
    hold a value, as the staged file can keep them (as text when JSON cannot):
    the planner's tally notes them as it does a file's; a column mapped to one
    reads it."""
    import json

    from transforms.read.presets import filled
    kept = {}
    for name in names:
        value = _field(data, name)
        if filled(value):
            try:
                json.dumps(value, default=_plain)
            except (TypeError, ValueError):
                value = str(value)
            kept[name] = value
    return kept


def _deepeval_row(case: Any) -> dict[str, Any]:
    """A DeepEval test case or golden (pydantic) as the dict its preset reads;
    a conversation's turns as {role, content, retrieval_context, metadata},
    after its chatbot_role as the system turn. Passages are read from the
    objects: model_dump() writes a RetrievedContextData as 'source: context',
    which cannot be told from a passage; save_as's text keeps both apart."""
    data = case.model_dump() if callable(getattr(case, "model_dump", None)) else vars(case)
    from transforms.read.presets import UNREAD
    unread = UNREAD["deepeval"]
    row = {**{k: data[k] for k in DEEPEVAL_FIELDS if data.get(k) is not None},
           **_unread(data, unread.fields)}
    if "retrieval_context" in row:
        row["retrieval_context"] = _passages(getattr(case, "retrieval_context", None)
                                             or row["retrieval_context"])
    if "turns" in row:
        role = data.get("chatbot_role")  # RoleAdherenceMetric's role: the system turn
        row["turns"] = [{"role": "system", "content": role}] * bool(role) + [
            {"role": _field(t, "role"), "content": _field(t, "content"),
             "retrieval_context": _passages(_field(t, "retrieval_context")),
             "metadata": _field(t, "metadata"), **_unread(t, unread.turn_fields)}
            for t in getattr(case, "turns", None) or row["turns"]]
    return row


def _field(item: Any, name: str) -> Any:
    """A field of a DeepEval object, or of its dump."""
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def _passages(items: Any) -> list[Any] | None:
    """Retrieved passages as text, a RetrievedContextData as save_as writes it
    (`deepeval_source=…,deepeval_context=…`: the preset reads its context as
    the passage and its source as a tag)."""
    return None if items is None else [_saved_passage(item) for item in items]


def _saved_passage(item: Any) -> Any:
    context, source = _field(item, "context"), _field(item, "source")
    if isinstance(item, str) or not isinstance(context, str) or not isinstance(source, str):
        return item
    return f"deepeval_source={source},deepeval_context={context}"


def cases_path(cases: Any, named: str | None = None, allow_empty: bool = False
               ) -> tuple[str, str | None, str | None]:
    """(a path the run reads, what the manifest calls the input (None: the
    path), a temporary folder to remove afterwards (None: nothing written));
    `named`: what in-memory cases were, when not their own type (a Ragas
    dataset given as its list of dicts). An empty list is refused, or with
    allow_empty an empty JSON Lines file, as the command line runs one."""
    if isinstance(cases, (str, os.PathLike)):
        return at_home(cases), None, None
    import pyarrow as pa
    import pyarrow.parquet as pq
    if isinstance(cases, list) and not cases:
        return _no_rows(named, allow_empty)
    if isinstance(cases, list):  # df.to_dict("records"): NaN, pd.NA, NaT are missing values
        cases = [{k: None if _is_missing(v) else v for k, v in row.items()}
                 if isinstance(row, Mapping) else row for row in cases]
    try:
        table, label = _as_arrow(cases, pa)
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeEncodeError) as exc:
        # a column Arrow cannot type (a question that is 5 in one row and text in
        # the next, a lone surrogate): JSON Lines, whose reader makes such rows
        # errors/ rows as it does for any file
        return _as_jsonl(cases, exc, named)
    if not (table.num_rows or isinstance(cases, list)):
        # pd.DataFrame(), or a filter that kept no row: as an empty list
        return _no_rows(named or label, allow_empty)
    # [{}] is a row without columns, which Arrow (and Parquet) count as none
    rows = len(cases) if isinstance(cases, list) else table.num_rows
    staging = tempfile.mkdtemp(prefix="evalbeam-cases-")
    path = os.path.join(staging, "cases.parquet")
    pq.write_table(table, path)
    return path, f"{named or label} ({counted(rows, 'row')}, in memory)", staging


def read_as_tool(cfg, path: str) -> tuple[Any, str | None]:
    """(config, note): in-memory cases in one tool's columns (a Ragas dataset's
    to_pandas(), DeepEval's test cases as dicts) without evalbeam's `question`
    are read with that tool's preset, as its dataset object would be: nothing
    else could read them. The note says so (a file of them is refused with the
    hint instead, so that a nightly job's config says what it reads). A config
    that sets input.preset or input.columns is left as it is."""
    if cfg.input.preset or cfg.input.columns:
        return cfg, None
    from schemas.cases import InputError, check_columns, source_columns
    from transforms.read.presets import tool_preset
    names = staged_columns(path)
    try:
        check_columns(names, source_columns({}), path)
        return cfg, None  # evalbeam's own columns: read as they are
    except InputError:
        pass
    tool = tool_preset(names)
    if tool is None:
        return cfg, None
    preset, found = tool
    note = (f"the columns {', '.join(found)} are the '{preset}' preset's and there is no "
            f"'question' column: read with input.preset: {preset} (pass config={{'input': "
            f"{{'preset': '{preset}'}}}} to say so)")
    return dataclasses.replace(cfg, input=dataclasses.replace(cfg.input, preset=preset)), note


def staged_columns(path: str) -> list[str]:
    """The column names of the file cases_path wrote (Parquet, or JSON Lines:
    every row's keys)."""
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq
        return list(pq.read_schema(path).names)
    import json
    names: dict[str, None] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            names.update(dict.fromkeys(json.loads(line)))
    return list(names)


def _no_rows(named: str | None, allow_empty: bool) -> tuple[str, str, str]:
    """An input without rows: refused as the command line refuses one, or with
    allow_empty an empty JSON Lines file."""
    if allow_empty:
        return _as_jsonl([], ValueError("no cases"), named)
    from schemas.cases import InputError
    said = f"{named} holds no cases" if named else "cases is an empty list"
    raise InputError(f"{said} (0 rows){NO_CASES_FIX}")


NO_CASES_FIX = "; to run over an empty input anyway pass allow_empty=True"
"""What a refusal of in-memory cases without rows ends with (the fix)."""


def _as_jsonl(cases: Any, why: Exception, named: str | None = None) -> tuple[str, str, str]:
    """A list of dicts or a DataFrame written as JSON Lines (missing values of a
    DataFrame, NaN among them, as null)."""
    import json
    from schemas.cases import InputError
    if isinstance(cases, list):
        rows, label = cases, "list of dicts"
    else:  # a pandas DataFrame (_as_arrow raised for nothing else)
        rows = [{k: None if _is_missing(v) else v for k, v in r.items()}
                for r in whole_ids(with_named_index(cases)).to_dict("records")]
        label = "pandas.DataFrame"
    staging = tempfile.mkdtemp(prefix="evalbeam-cases-")
    path = os.path.join(staging, "cases.jsonl")
    try:
        with open(path, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps({str(k): v for k, v in row.items()}, default=_plain) + "\n")
    except (TypeError, ValueError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise InputError(f"cases cannot be read as a table ({why}) nor as JSON ({exc})"
                         ) from None
    return path, f"{named or label} ({counted(len(rows), 'row')}, in memory)", staging


def _plain(value: Any) -> Any:
    """A numpy array or scalar as the list or number json can write: pandas
    reads Parquet list columns as arrays, so a frame's contexts are ndarrays.
    A date or time (a pandas Timestamp) as its ISO text, as a Parquet file
    would hold it in a column evalbeam does not read."""
    import datetime as dt
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _is_missing(value: Any) -> bool:
    """A missing value as pandas writes one (NaN, pd.NA, NaT), not None; pandas
    is asked only when it is loaded (a list of dicts needs no pandas)."""
    if isinstance(value, float):
        return value != value
    pandas = sys.modules.get("pandas")
    if value is None or pandas is None or isinstance(value, (str, list, dict)):
        return False
    try:
        return bool(pandas.isna(value))
    except (TypeError, ValueError):  # an array: not one value
        return False


def with_named_index(frame: Any) -> Any:
    """The frame with its named index levels as columns (df.set_index('case_id')
    keeps its ids); an unnamed index (0..n, or what a filter left) is not data.
    Two columns of one name (a join, a concat) are an InputError: which is the
    answer is unknowable, and neither Arrow nor JSON can hold both. A level
    that repeats its column (set_index('case_id', drop=False)) is that column."""
    repeated = [n for n in frame.index.names if n is not None and _repeats_column(frame, n)]
    if repeated:
        frame = frame.reset_index(level=repeated, drop=True)
    named = [n for n in frame.index.names if n is not None]
    names = [str(c) for c in [*named, *frame.columns]]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        from schemas.cases import InputError
        raise InputError(f"pandas.DataFrame ({counted(len(frame), 'row')}, in memory): the "
                         f"column name {twice!r} occurs {names.count(twice)} times; every column needs its "
                         "own name")
    return frame.reset_index(level=named) if named else frame


def whole_ids(frame: Any) -> Any:
    """The frame with a float case_id column as the ids' text, whole numbers
    without '.0': pandas makes an int column float when one value is missing,
    so ids 1, None, 3 would be read as '1.0' and '3.0', ids never written."""
    ids = frame["case_id"] if list(frame.columns).count("case_id") == 1 else None
    if ids is None or ids.dtype.kind != "f":
        return frame
    import math
    return frame.assign(case_id=[None if v != v else str(int(v) if math.isfinite(v)
                                                       and v == int(v) else v) for v in ids])


def _repeats_column(frame: Any, level: Any) -> bool:
    """Whether the index level `level` holds what the column of its name holds,
    row by row (missing values alike)."""
    if list(frame.columns).count(level) != 1 or list(frame.index.names).count(level) != 1:
        return False
    import pandas as pd
    index, column = pd.Series(frame.index.get_level_values(level)), frame[level].reset_index(
        drop=True)
    return bool(index.equals(column))


def _as_arrow(cases: Any, pa) -> tuple[Any, str]:
    """An in-memory table of cases as a pyarrow Table, and what it was."""
    kind = _kind(cases)
    if isinstance(cases, pa.Table):
        return cases, "pyarrow.Table"
    if isinstance(cases, pa.RecordBatch):
        return pa.Table.from_batches([cases]), "pyarrow.RecordBatch"
    if kind == "pandas.DataFrame":
        frame = whole_ids(with_named_index(cases))
        return pa.Table.from_pandas(frame, preserve_index=False), kind
    if kind == "datasets.Dataset":  # its rows as they are (indices of select/filter applied)
        return cases.with_format("arrow")[:], kind
    if isinstance(cases, list) and all(isinstance(r, Mapping) for r in cases):
        # every row's keys: from_pylist takes the first row's alone and drops the
        # columns that only later rows have
        keys = dict.fromkeys(k for row in cases for k in row)
        return pa.Table.from_pylist([{k: row.get(k) for k in keys} for row in cases]
                                    ), "list of dicts"
    if hasattr(cases, "__arrow_c_stream__"):  # a polars DataFrame, a DuckDB relation, ...
        return pa.table(cases), kind
    from schemas.cases import InputError
    raise InputError(f"cases must be {ACCEPTED}; got {what_it_is(cases)}")


ACCEPTED = ("a pandas or polars DataFrame, a pyarrow Table, a Hugging Face datasets.Dataset "
            "(or IterableDataset), a Ragas or DeepEval EvaluationDataset, a list (tuple, "
            "deque, iterator) of dicts or of "
            "DeepEval test cases or Ragas samples, a dict of column lists, or a path")
"""What evaluate() reads as cases, as its refusal says it."""


def what_it_is(cases: Any) -> str:
    """What a refused `cases` is, as its refusal names it: None, a
    list of str (its first item that is no case), a module's class."""
    if cases is None:
        return "None"
    if isinstance(cases, list):
        odd = next(item for item in cases if not isinstance(item, Mapping))
        return f"a list whose item {cases.index(odd)} is {_kind(odd)}"
    return _kind(cases)
