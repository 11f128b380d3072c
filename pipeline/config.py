"""The YAML run configuration: parsing, defaults and strict validation.

Every key is optional; unknown keys are an error naming the key's full path,
because a misspelt key silently ignored is a nightly job evaluated wrongly.
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

import yaml

VERDICTS = ("PASS", "WARN", "FAIL")
BOT_TYPES = ("precomputed", "faq_match", "full_context", "chat", "http")
REMOTE_BOT_TYPES = ("full_context", "chat", "http")
EMBEDDING_PROVIDERS = ("local", "endpoint", "hashing")
MAX_CONCURRENCY = 512  # requests in flight per worker process (64 connection pools of 8)
MAX_NAME_LENGTH = 64   # bot names become Hive folder names (bot=<name>)
DEFAULT_MAX_REPLY_BYTES = 8 * 1024 * 1024


class ConfigError(ValueError):
    """The configuration is invalid; the message is one line and names the key."""


@dataclass(frozen=True)
class InputConfig:
    columns: dict[str, Any] = field(default_factory=dict)  # column -> name or [candidates]
    format: str | None = None   # parquet | jsonl | csv | hf; None: from the file extension
    preset: str | None = None   # ragas | ragas_v1 | deepeval | openai_evals | inspect


@dataclass(frozen=True)
class EndpointConfig:
    base_url: str
    api_key_env: str | None = None
    requests_per_second: float = 10.0
    tokens_per_minute: float | None = None
    max_concurrency: int = 8
    timeout_s: float = 60.0
    max_attempts: int = 6
    backoff_initial_s: float = 0.5  # first retry waits U(initial/2, initial), doubling up to max
    backoff_max_s: float = 30.0
    price_per_million: dict[str, float] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)  # values may name env vars: ${VAR}
    worker_share: float | None = None  # a worker's share of the limits; None: 1 / workers
    api_version: str | None = None  # Azure OpenAI
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES  # a bigger reply is that row's error
    circuit_failures: int = 10      # consecutive connection failures that open the breaker
    circuit_cooldown_s: float = 30.0  # how long it stays open before one probe call


@dataclass(frozen=True)
class BotConfig:
    name: str
    type: str
    faq: str | None = None              # faq_match: Parquet or CSV with question, answer
    endpoint: str | None = None         # remote bots
    model: str | None = None
    knowledge: str | None = None        # full_context: the knowledge document
    prompt_template: str | None = None  # full_context: template file
    system_prompt: str | None = None    # chat
    options: dict[str, Any] = field(default_factory=dict)  # http bot: url, body, paths...


@dataclass(frozen=True)
class EmbeddingsConfig:
    provider: str = "local"
    endpoint: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class SafetyConfig:
    votes: int = 3                # independent votes; the majority decides
    temperature: float = 0.7      # votes are sampled, so that they can differ
    mode: str = "calls"           # calls: one request per vote | n: one request, n choices
    per_category: bool = False    # one request per category (x votes) instead of all ten


@dataclass(frozen=True)
class RubricConfig:
    """A judge rubric of the config (G-Eval style): a metric of its own."""
    criteria: str
    steps: tuple[str, ...] = ()
    scale: tuple[float, float] = (1.0, 5.0)
    inputs: tuple[str, ...] = ("question", "answer")


@dataclass(frozen=True)
class CustomMetricConfig:
    """A metric computed by a Python function named in the config."""
    name: str
    function: str                       # "package.module:function"
    needs: tuple[str, ...] = ("answer",)
    lower_is_better: bool = False
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgeConfig:
    endpoint: str | None = None
    model: str | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    keep_trace: bool = False      # keep the raw reply and any reasoning trace in details
    prompts: dict[str, str] = field(default_factory=dict)  # template name -> file
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    rubrics: dict[str, RubricConfig] = field(default_factory=dict)

    @property
    def configured(self) -> bool:
        return bool(self.endpoint and self.model)


@dataclass(frozen=True)
class CacheConfig:
    """The on-disk cache of judge and embedding calls (never of bots under test)."""
    enabled: bool = True
    path: str | None = None  # tier 1 (SQLite); default: <output>/_cache/calls.sqlite, or a
    #                          file in each worker's temp folder when the output is a URL
    shared_path: str | None = None  # tier 2 (objects); default: none, or
    #                                 <output>/_cache/objects when the output is a URL


from transforms.decide.presets import PRESETS  # noqa: E402
from transforms.decide.presets import Rule as VerdictRule  # noqa: E402

DEFAULT_RULES = PRESETS["default"]


@dataclass(frozen=True)
class VerdictConfig:
    rules: tuple[VerdictRule, ...] = DEFAULT_RULES
    otherwise: str = "PASS"
    explicit: bool = False  # the rules were written in the config (not a preset's)
    preset: str = "default"  # the named rule set used when no rules are written


@dataclass(frozen=True)
class GateRule:
    """`evalbeam compare` exits 4 when `metric` got worse by more than
    `max_drop` (sign-aware: a rise for lower-is-better metrics) and the change
    is significant (Holm-adjusted p < alpha)."""
    metric: str                  # a metric name, or pass_rate
    max_drop: float
    bot: str | None = None       # default: every bot compared
    suite: str = "*"             # default: all suites together
    alpha: float = 0.05


@dataclass(frozen=True)
class Config:
    input: InputConfig = field(default_factory=InputConfig)
    endpoints: dict[str, EndpointConfig] = field(default_factory=dict)
    bots: tuple[BotConfig, ...] = (BotConfig(name="recorded", type="precomputed"),)
    embeddings: EmbeddingsConfig = field(default_factory=EmbeddingsConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    metrics: tuple[str, ...] | None = None  # None: every metric the inputs allow
    metric_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    verdict: VerdictConfig = field(default_factory=VerdictConfig)
    custom_metrics: tuple[CustomMetricConfig, ...] = ()
    gate: tuple[GateRule, ...] = ()  # rules of `evalbeam compare` (the run ignores them)
    source_path: str | None = None  # where it was loaded from (not a config key)

    def to_public_dict(self) -> dict[str, Any]:
        """The config as plain data for the manifest; secrets cannot be in it."""
        data = dataclasses.asdict(self)
        data.pop("source_path", None)
        return redact(data)


_SECRET_WORDS = ("key", "token", "secret", "password", "authorization")


def redact(value: Any, key: str = "") -> Any:
    """Replace values under secret-looking keys; `*_env` keys hold names, kept."""
    if isinstance(value, Mapping):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, key) for v in value]
    low = key.lower()
    if isinstance(value, str) and any(w in low for w in _SECRET_WORDS) and not low.endswith("_env"):
        return "<redacted>" if "${" not in value else value
    return value


# ---------------------------------------------------------------- parsing

def _check_keys(data: Any, allowed: set[str], where: str) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where or 'config'} must be a mapping, got {type(data).__name__}")
    unknown = sorted(set(map(str, data)) - allowed)
    if unknown:
        path = f"{where}.{unknown[0]}" if where else unknown[0]
        raise ConfigError(f"unknown key '{path}' (allowed here: {', '.join(sorted(allowed))})")
    return dict(data)


def _build(cls: type, data: Any, where: str, **overrides: Any) -> Any:
    """Construct a dataclass from a mapping, rejecting unknown keys."""
    names = {f.name for f in dataclasses.fields(cls)} - {"source_path"}
    values = _check_keys(data, names, where)
    values.update(overrides)
    required = [f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [n for n in required if n not in values]
    if missing:
        raise ConfigError(f"missing key '{where}.{missing[0]}'")
    try:
        return cls(**values)
    except TypeError as exc:  # pragma: no cover - guarded by the key checks
        raise ConfigError(f"{where}: {exc}") from None


def _number(value: Any, where: str, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{where} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(f"{where} must be > 0, got {value!r}")
    return float(value)


def _integer(value: Any, where: str, low: int, high: int | None = None) -> int:
    """An integer (not a bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (
            high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f">= {low}"
        raise ConfigError(f"{where} must be an integer {bound}, got {value!r}")
    return value


def _endpoint(name: str, data: Any) -> EndpointConfig:
    where = f"endpoints.{name}"
    ep = _build(EndpointConfig, data, where)
    if not isinstance(ep.base_url, str) or not ep.base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}.base_url must be an http(s) URL, got {ep.base_url!r}")
    for key in ("requests_per_second", "timeout_s", "backoff_initial_s", "backoff_max_s",
                "circuit_cooldown_s"):
        _number(getattr(ep, key), f"{where}.{key}")
    if ep.backoff_initial_s > ep.backoff_max_s:
        raise ConfigError(f"{where}.backoff_initial_s ({ep.backoff_initial_s}) must not exceed "
                          f"backoff_max_s ({ep.backoff_max_s})")
    if ep.worker_share is not None and not 0 < _number(ep.worker_share, f"{where}.worker_share") <= 1:
        raise ConfigError(f"{where}.worker_share must be in (0, 1]")
    if ep.tokens_per_minute is not None:
        _number(ep.tokens_per_minute, f"{where}.tokens_per_minute")
    _integer(ep.max_attempts, f"{where}.max_attempts", 1)
    _integer(ep.max_concurrency, f"{where}.max_concurrency", 1, MAX_CONCURRENCY)
    _integer(ep.max_reply_bytes, f"{where}.max_reply_bytes", 1024)
    _integer(ep.circuit_failures, f"{where}.circuit_failures", 0)
    if not isinstance(ep.headers, Mapping) or not all(
            isinstance(k, str) and isinstance(v, (str, int, float)) and not isinstance(v, bool)
            for k, v in ep.headers.items()):
        raise ConfigError(f"{where}.headers must be a mapping of header name to text, "
                          f"got {ep.headers!r}"[:300])
    prices = _check_keys(ep.price_per_million, {"input", "output"}, f"{where}.price_per_million")
    for k, v in prices.items():
        _number(v, f"{where}.price_per_million.{k}", positive=False)
    if ep.api_key_env is not None and not str(ep.api_key_env).replace("_", "").isalnum():
        raise ConfigError(f"{where}.api_key_env must be an environment variable's NAME, "
                          "not a key")
    return ep


def _rule(data: Any, where: str) -> VerdictRule:
    rule = _build(VerdictRule, data, where)
    if (rule.above is None) == (rule.below is None):
        raise ConfigError(f"{where} needs exactly one of 'above' or 'below'")
    _number(rule.above if rule.above is not None else rule.below, where, positive=False)
    if rule.verdict not in VERDICTS:
        raise ConfigError(f"{where}.verdict must be one of {VERDICTS}, got {rule.verdict!r}")
    if rule.unless is not None and not isinstance(rule.unless, str):
        raise ConfigError(f"{where}.unless must be a metric name, got {rule.unless!r}")
    return rule


def _resolve(path: str | None, base_dir: str) -> str | None:
    if path is None or "://" in path or os.path.isabs(path):
        return path
    return os.path.normpath(os.path.join(base_dir, path))


def parse_config(data: Any, base_dir: str = ".") -> Config:
    """Validate plain data (from YAML) into a Config; paths relative to base_dir."""
    top = _check_keys(data, {f.name for f in dataclasses.fields(Config)} - {"source_path"}, "")
    kwargs: dict[str, Any] = {}
    if "input" in top:
        kwargs["input"] = _input(top["input"])
    endpoints = _check_keys(top.get("endpoints"), set(map(str, top.get("endpoints") or {})),
                            "endpoints")
    kwargs["endpoints"] = {n: _endpoint(n, d) for n, d in endpoints.items()}
    if "bots" in top:
        bots_data = top["bots"]
        if not isinstance(bots_data, list) or not bots_data:
            raise ConfigError("bots must be a non-empty list")
        bots = []
        for i, item in enumerate(bots_data):
            bot = _build(BotConfig, item, f"bots[{i}]")
            bots.append(_validate_bot(bot, i, kwargs["endpoints"], base_dir))
        names = [b.name for b in bots]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(f"bots: duplicate bot name {dupes[0]!r}")
        kwargs["bots"] = tuple(bots)
    if "embeddings" in top:
        emb = _build(EmbeddingsConfig, top["embeddings"], "embeddings")
        if emb.provider not in EMBEDDING_PROVIDERS:
            raise ConfigError(f"embeddings.provider must be one of {EMBEDDING_PROVIDERS}")
        if emb.provider == "local":
            from transforms.enrich.embed import MINILM_MODELS, MULTILINGUAL_MODELS
            if emb.model not in MINILM_MODELS + MULTILINGUAL_MODELS:
                raise ConfigError(f"embeddings.model for the local provider must be one of "
                                  f"{[m for m in MINILM_MODELS + MULTILINGUAL_MODELS if m]}, "
                                  f"got {emb.model!r}")
        kwargs["embeddings"] = emb
    if "judge" in top:
        kwargs["judge"] = _judge(top["judge"], kwargs["endpoints"], base_dir)
    if "cache" in top:
        cache = _build(CacheConfig, top["cache"], "cache")
        if not isinstance(cache.enabled, bool):
            raise ConfigError("cache.enabled must be true or false")
        for key in ("path", "shared_path"):
            if getattr(cache, key) is not None and not isinstance(getattr(cache, key), str):
                raise ConfigError(f"cache.{key} must be a path or URL")
        kwargs["cache"] = dataclasses.replace(cache, path=_resolve(cache.path, base_dir),
                                              shared_path=_resolve(cache.shared_path, base_dir))
    if top.get("metrics") is not None:
        metrics = top["metrics"]
        if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
            raise ConfigError("metrics must be a list of metric names")
        kwargs["metrics"] = tuple(metrics)
    if "metric_options" in top:
        opts = top["metric_options"] or {}
        if not isinstance(opts, Mapping) or not all(isinstance(v, Mapping) for v in opts.values()):
            raise ConfigError("metric_options must map a metric name to a mapping of options")
        kwargs["metric_options"] = {str(k): dict(v) for k, v in opts.items()}
    if top.get("custom_metrics") is not None:
        kwargs["custom_metrics"] = _custom_metrics(top["custom_metrics"])
    if "verdict" in top:
        vd = _check_keys(top["verdict"], {"rules", "otherwise", "preset"}, "verdict")
        preset = vd.get("preset", "default")
        if preset not in PRESETS:
            raise ConfigError(f"verdict.preset must be one of {tuple(PRESETS)}, got {preset!r}")
        rules = vd.get("rules", [dataclasses.asdict(r) for r in PRESETS[preset]])
        if not isinstance(rules, list):
            raise ConfigError("verdict.rules must be a list")
        otherwise = vd.get("otherwise", "PASS")
        if otherwise not in VERDICTS:
            raise ConfigError(f"verdict.otherwise must be one of {VERDICTS}")
        kwargs["verdict"] = VerdictConfig(
            tuple(_rule(r, f"verdict.rules[{i}]") for i, r in enumerate(rules)), otherwise,
            explicit="rules" in vd, preset=preset)
    if top.get("gate") is not None:
        kwargs["gate"] = _gate(top["gate"])
    return Config(**kwargs)


def _input(data: Any) -> InputConfig:
    from transforms.read.formats import FORMATS
    from transforms.read.presets import PRESETS
    inp = _build(InputConfig, data, "input")
    if not isinstance(inp.columns, Mapping):
        raise ConfigError("input.columns must be a mapping of canonical column -> file column")
    if inp.format is not None and inp.format not in FORMATS:
        raise ConfigError(f"input.format must be one of {', '.join(FORMATS)}, got {inp.format!r}")
    if inp.preset is not None and inp.preset not in PRESETS:
        raise ConfigError(f"input.preset must be one of {', '.join(PRESETS)}, got {inp.preset!r}")
    return inp


def _gate(data: Any) -> tuple[GateRule, ...]:
    if not isinstance(data, list):
        raise ConfigError("gate must be a list of rules like {metric: faithfulness, max_drop: 0.02}")
    rules = []
    for i, item in enumerate(data):
        where = f"gate[{i}]"
        rule = _build(GateRule, item, where)
        for key in ("metric", "bot", "suite"):
            value = getattr(rule, key)
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigError(f"{where}.{key} must be a name, got {value!r}")
        _number(rule.max_drop, f"{where}.max_drop", positive=False)
        if rule.max_drop < 0:
            raise ConfigError(f"{where}.max_drop must be >= 0, got {rule.max_drop!r}")
        if not 0 < _number(rule.alpha, f"{where}.alpha") < 1:
            raise ConfigError(f"{where}.alpha must be in (0, 1)")
        rules.append(dataclasses.replace(rule, max_drop=float(rule.max_drop),
                                         alpha=float(rule.alpha)))
    return tuple(rules)


def _judge(data: Any, endpoints: Mapping[str, EndpointConfig], base_dir: str) -> JudgeConfig:
    from transforms.enrich.judge.prompts import TEMPLATE_NAMES
    raw = _check_keys(data, {f.name for f in dataclasses.fields(JudgeConfig)}, "judge")
    safety = _build(SafetyConfig, raw.get("safety"), "judge.safety")
    rubrics = _rubrics(raw.get("rubrics"))
    judge = _build(JudgeConfig, {k: v for k, v in raw.items() if k not in ("safety", "rubrics")},
                   "judge", safety=safety, rubrics=rubrics)
    if judge.endpoint is not None and judge.endpoint not in endpoints:
        raise ConfigError(f"judge.endpoint {judge.endpoint!r} is not a configured endpoint")
    if bool(judge.endpoint) != bool(judge.model):
        raise ConfigError("judge needs both 'endpoint' and 'model' (or neither)")
    _number(judge.temperature, "judge.temperature", positive=False)
    _number(safety.temperature, "judge.safety.temperature", positive=False)
    _integer(judge.max_tokens, "judge.max_tokens", 1)
    _integer(safety.votes, "judge.safety.votes", 1)
    if safety.mode not in ("calls", "n"):
        raise ConfigError(f"judge.safety.mode must be 'calls' or 'n', got {safety.mode!r}")
    for key in ("keep_trace",):
        if not isinstance(getattr(judge, key), bool):
            raise ConfigError(f"judge.{key} must be true or false")
    if not isinstance(safety.per_category, bool):
        raise ConfigError("judge.safety.per_category must be true or false")
    prompts = _check_keys(judge.prompts, set(TEMPLATE_NAMES), "judge.prompts")
    return dataclasses.replace(judge, prompts={k: _resolve(str(v), base_dir)
                                               for k, v in prompts.items()})


NAME_CHARS = "letters, digits and '_'"


def _metric_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not name or not name.replace("_", "").isalnum() \
            or not name[0].isalpha():
        raise ConfigError(f"{where} must be a metric name ({NAME_CHARS}, starting with a "
                          f"letter), got {name!r}")
    return name


def _string_tuple(value: Any, where: str, allowed: tuple[str, ...] | None = None
                  ) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    bad = [v for v in value if allowed is not None and v not in allowed]
    if bad:
        raise ConfigError(f"{where}: unknown {bad[0]!r} (one of {', '.join(allowed)})")
    return tuple(value)


def _rubrics(data: Any) -> dict[str, RubricConfig]:
    from transforms.enrich.judge.conversation import RUBRIC_INPUTS
    rubrics = _check_keys(data, set(map(str, data or {})), "judge.rubrics")
    out = {}
    for name, item in rubrics.items():
        where = f"judge.rubrics.{name}"
        _metric_name(name, where)
        r = _build(RubricConfig, item, where)
        if not isinstance(r.criteria, str) or not r.criteria.strip():
            raise ConfigError(f"{where}.criteria must be a non-empty text")
        scale = r.scale
        if (not isinstance(scale, (list, tuple)) or len(scale) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                           for v in scale) or not scale[0] < scale[1]):
            raise ConfigError(f"{where}.scale must be [low, high] with low < high")
        out[name] = dataclasses.replace(
            r, steps=_string_tuple(r.steps or [], f"{where}.steps"),
            scale=(float(scale[0]), float(scale[1])),
            inputs=_string_tuple(r.inputs, f"{where}.inputs", RUBRIC_INPUTS))
    return out


def _custom_metrics(data: Any) -> tuple[CustomMetricConfig, ...]:
    from transforms.score.custom import NEEDS
    if not isinstance(data, list):
        raise ConfigError("custom_metrics must be a list of {name, function, ...}")
    out = []
    for i, item in enumerate(data):
        where = f"custom_metrics[{i}]"
        m = _build(CustomMetricConfig, item, where)
        _metric_name(m.name, f"{where}.name")
        if not isinstance(m.function, str) or m.function.count(":") != 1:
            raise ConfigError(f"{where}.function must be 'package.module:function', "
                              f"got {m.function!r}")
        if not isinstance(m.lower_is_better, bool):
            raise ConfigError(f"{where}.lower_is_better must be true or false")
        if not isinstance(m.options, Mapping):
            raise ConfigError(f"{where}.options must be a mapping")
        out.append(dataclasses.replace(m, needs=_string_tuple(m.needs, f"{where}.needs", NEEDS),
                                       options=dict(m.options)))
    names = [m.name for m in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"custom_metrics: duplicate metric name {dupes[0]!r}")
    return tuple(out)


def _validate_bot(bot: BotConfig, i: int, endpoints: Mapping[str, EndpointConfig],
                  base_dir: str) -> BotConfig:
    where = f"bots[{i}]"
    if (not isinstance(bot.name, str) or not 0 < len(bot.name) <= MAX_NAME_LENGTH
            or not bot.name.replace("_", "").replace("-", "").isalnum()):
        raise ConfigError(f"{where}.name must be 1-{MAX_NAME_LENGTH} letters, digits, '-' or "
                          f"'_', got {str(bot.name)[:80]!r}")
    if bot.type not in BOT_TYPES:
        raise ConfigError(f"{where}.type must be one of {BOT_TYPES}, got {bot.type!r}")
    if bot.type == "faq_match" and not bot.faq:
        raise ConfigError(f"{where}: a faq_match bot needs 'faq' (a Parquet or CSV file)")
    if bot.type in REMOTE_BOT_TYPES:
        if bot.endpoint not in endpoints:
            raise ConfigError(f"{where}.endpoint {bot.endpoint!r} is not a configured endpoint")
        if bot.type != "http" and not bot.model:
            raise ConfigError(f"{where}: a {bot.type} bot needs 'model'")
        if bot.type == "full_context" and not bot.knowledge:
            raise ConfigError(f"{where}: a full_context bot needs 'knowledge' (a text file)")
        if bot.type == "http":
            from transforms.answer.remote_bots import HTTP_BOT_OPTIONS
            unknown = sorted(set(bot.options) - HTTP_BOT_OPTIONS)
            if unknown:
                raise ConfigError(f"unknown key '{where}.options.{unknown[0]}' (allowed here: "
                                  f"{', '.join(sorted(HTTP_BOT_OPTIONS))})")
            if not isinstance(bot.options.get("answer_path"), str):
                raise ConfigError(f"{where}: an http bot needs options.answer_path "
                                  "(e.g. data.answer)")
    return dataclasses.replace(bot, faq=_resolve(bot.faq, base_dir),
                               knowledge=_resolve(bot.knowledge, base_dir),
                               prompt_template=_resolve(bot.prompt_template, base_dir))


class _StrictLoader(yaml.SafeLoader):
    """safe_load that refuses a key given twice in one mapping (YAML's default
    keeps the last one silently, so half of a config would be ignored)."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise ConfigError(f"duplicate key {key!r} at line {line} "
                                      f"(first at line {seen[key]})")
                seen[key] = line
            except TypeError:  # an unhashable key: PyYAML reports it
                pass
        return super().construct_mapping(node, deep)


def load_config(path: str | None) -> Config:
    """Load and validate a YAML file; None gives the defaults."""
    if path is None:
        return Config()
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    except ConfigError as exc:
        raise ConfigError(f"config {path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"config {path} is not valid YAML{where}") from None
    cfg = parse_config(data, os.path.dirname(os.path.abspath(path)))
    return dataclasses.replace(cfg, source_path=path)
