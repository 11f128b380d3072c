"""The YAML run configuration: parsing, defaults and strict validation.

Every key is optional; unknown keys are an error naming the key's full path,
because a misspelt key silently ignored is a nightly job evaluated wrongly.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping
from urllib.parse import urlsplit

import yaml

VERDICTS = ("PASS", "WARN", "FAIL")
BOT_TYPES = ("precomputed", "faq_match", "full_context", "chat", "http")
REMOTE_BOT_TYPES = ("full_context", "chat", "http")
EMBEDDING_PROVIDERS = ("local", "endpoint", "hashing")
EMBEDDING_PRECISIONS = ("float32", "int8")
SAFETY_MODES = ("calls", "n")  # one request per vote | one request with n choices
MAX_CONCURRENCY = 512  # requests in flight per worker process (64 connection pools of 8)
# a call's attempts and a critic's safety votes: beyond these a down endpoint is
# retried for ever, or a row's billion vote requests are built before one is sent
MAX_ATTEMPTS = MAX_VOTES = 100
MAX_NAME_LENGTH = 64   # bot names become Hive folder names (bot=<name>)
DEFAULT_MAX_REPLY_BYTES = 8 * 1024 * 1024


class ConfigError(ValueError):
    """The configuration is invalid; the message is one line and names the key."""


# Every config key is a field of the dataclasses below, and the string under a
# field says what the key means: the docs' configuration reference is made from
# them (pipeline/reference.py), with the type and the default from the field.
NOT_A_KEY = {"config_key": False}  # field metadata: state, not a key of the YAML


@dataclass(frozen=True)
class InputConfig:
    columns: dict[str, Any] = field(default_factory=dict)
    """Your file's column for each input column (`question: user_input`), or a list of
    candidates of which the first non-null one in a row is used. Entries override the
    preset's. Names are text: quote one YAML would read as a number or a boolean
    (`question: '3'`; unquoted, it is refused, saying so). Default: the input
    columns' own names."""
    format: str | None = None
    """The format of every input file. Default (unset): from each file's extension
    (`.parquet`, `.jsonl`, `.ndjson`, `.csv`, `.json`, `.yaml`, `.yml`, each also `.gz`
    where it can be; a folder with `state.json` is a Hugging Face dataset)."""
    preset: str | None = None
    """Another tool's column names, so its files load as they are (see Input cases,
    Presets)."""


@dataclass(frozen=True)
class EndpointConfig:
    base_url: str
    """The service's URL: `https://api.openai.com/v1`, vLLM or LiteLLM
    `http://host:8000/v1`, Ollama `http://host:11434/v1`, an Azure resource URL, or any
    JSON HTTP service for an `http` bot. No variable is read in it (a `${VAR}` stops
    the run): a key goes in `api_key_env` or a header."""
    api_key_env: str | None = None
    """The NAME of the environment variable that holds the key (`OPENAI_API_KEY`, not
    `${OPENAI_API_KEY}`: refused, saying so), sent as
    `Authorization: Bearer` (`api-key` on Azure); never the key itself. A missing
    or empty variable stops the run before it starts. A token-like name (20+ characters mixing
    cases and digits, as `hf_...` or `sk_live_...` keys are) is taken for a key pasted
    in its place: it is scrubbed and redacted like one, never quoted (also in `${VAR}`)."""
    requests_per_second: float = 10.0
    """The request rate of the whole run (all workers together; each worker takes its
    `worker_share`). A 429 lowers it by itself and it recovers slowly."""
    tokens_per_minute: float | None = None
    """The token budget of the whole run, estimated before a call (about 4 characters a
    token plus `max_tokens`) and corrected from the reply's `usage`. Unset: no limit."""
    max_concurrency: int = 8
    """Requests in flight per worker process, at most 512 (run more worker processes
    for more)."""
    timeout_s: float = 60.0
    """Read, write and pool timeout of one attempt, seconds (connect: min(10,
    timeout_s))."""
    max_attempts: int = 6
    """Attempts per call, retries included, at most 100; then the row carries the
    error."""
    backoff_initial_s: float = 0.5
    """Retry waits are uniform in [initial/2, initial·2^(n-1)], capped at
    `backoff_max_s`, never shorter than a Retry-After; initial ≤ max."""
    backoff_max_s: float = 30.0
    """The longest wait between two attempts, seconds."""
    price_per_million: dict[str, float] = field(default_factory=dict)
    """`{input, output}`: prices per million tokens (≥ 0), for the `cost` column of
    usage/."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra HTTP headers, name to text; `${VAR}` in a value is read from the environment
    (unset or empty: the run stops before it starts; `$VAR` without braces, which
    would be sent as it is, is refused wherever it stands, saying to write `${VAR}`;
    `$$` is a literal `$`) and scrubbed from everything
    written, as are literal values of headers named like a secret and tokens in any
    header (16+ letters and digits mixing cases)."""
    worker_share: float | None = None
    """A worker's share of both limits, in (0, 1]. Default (unset): 1 /
    `direct_num_workers` in multi-processing mode, 1 / `max_num_workers` or
    `num_workers` on a cluster, else 1."""
    api_version: str | None = None
    """Set for Azure OpenAI: adds `?api-version=` and calls
    `/openai/deployments/<model>/…`."""
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES
    """A reply body larger than this (at least 1024) is not read further: that row's
    call fails (not retried) with the reason."""
    circuit_failures: int = 10
    """After this many consecutive connection failures (refused, connect timeout, no
    reply at all within `timeout_s`), every call to the endpoint fails at once with
    the reason; 0 turns the breaker off. A 401 (the key refused) stops the
    endpoint's calls whatever this is, as do 5 403s before any accepted reply; a 403
    after one is that request's refusal only (a gateway blocking one prompt)."""
    circuit_cooldown_s: float = 30.0
    """While the breaker is open, one probe call goes through every this many seconds;
    any response closes it again."""
    max_tokens_per_run: int | None = None
    """Tokens (prompt + completion) this endpoint may use per run, for every purpose
    (bots, judge, embeddings, classifier): a call whose worst case does not fit is not
    sent (see Spend caps). Unset: no ceiling."""
    requests_per_second_set: bool = field(default=False, metadata=NOT_A_KEY)  # written in the config
    # the texts http bots send it in their bodies that carry a secret (as written:
    # literal, or with ${VAR}): its scrubbers scrub them (see scrub.secret_texts)
    body_secrets: tuple[str, ...] = field(default=(), metadata=NOT_A_KEY)


@dataclass(frozen=True)
class BotConfig:
    name: str
    """1-64 letters, digits, `-`, `_`, unique: the `bot=` folder of results/ and scores/."""
    type: str
    """How the bot answers (see Connect your bot)."""
    faq: str | None = None
    """`faq_match`: a Parquet or CSV file with `question` and `answer` columns."""
    endpoint: str | None = None
    """`chat`, `full_context`, `http`: the name of an endpoint in `endpoints`."""
    model: str | None = None
    """`chat`, `full_context`: the model (the deployment on Azure)."""
    knowledge: str | None = None
    """`full_context`: the knowledge document put into every prompt."""
    prompt_template: str | None = None
    """`full_context`: a template file with `{knowledge}` and `{question}` (default: the
    packaged one; other braces are left alone)."""
    system_prompt: str | None = None
    """`chat`, `full_context`: an optional system message."""
    max_prompt_tokens: int | None = None
    """`chat`, `full_context`, `http`: the largest request to send, in estimated tokens
    (as `judge.max_prompt_tokens`: the messages' text, or the http body's JSON). A case
    whose request is larger is an ERROR row, "not sent", with no request: a pasted log
    of megabytes costs nothing. None: no limit (a server refuses what its model cannot
    take, and such a 400 is not retried)."""
    options: dict[str, Any] = field(default_factory=dict)
    """`http`: `path` (no variable is read in it), `body` (JSON with `{question}`,
    `{case_id}`, a value `"{messages}"` for a conversation's earlier turns, and
    `${VAR}` read from the environment and scrubbed, as in headers, where `$VAR`
    without braces is refused and `$$` is a literal `$`), `answer_path` (required: a dot path such as `data.answer`),
    `contexts_path`, `context_field`; `chat` and `full_context`: `temperature`
    (0), `max_tokens`."""


@dataclass(frozen=True)
class EmbeddingsConfig:
    provider: str = "local"
    """Who computes the vectors of the semantic metrics: `local` (all-MiniLM-L6-v2 in
    numpy), `endpoint` (an OpenAI-compatible embeddings API) or `hashing` (fast,
    dependency-free, no semantics: for tests)."""
    endpoint: str | None = None
    """`endpoint` provider: the name of an endpoint in `endpoints`."""
    model: str | None = None
    """`endpoint` provider: the model. `local` provider: `all-MiniLM-L6-v2` (default,
    English) or `multilingual` (Universal Sentence Encoder Multilingual v3 for sentence
    vectors; bertscore keeps MiniLM's token vectors)."""
    precision: str = "float32"
    """`local` provider with all-MiniLM-L6-v2: `float32` (default, exact) or `int8`
    (opt-in, faster, approximate: int8 dense layers on onnxruntime, needs
    `pip install '.[int8]'` in evalbeam's clone; semantic scores move by up to ~0.01, see
    BENCHMARKS.md section 12)."""


@dataclass(frozen=True)
class SampleConfig:
    """Judge a stratified random sample: per_suite cases of every suite (all of
    a smaller suite), chosen by a seeded hash of the case id, so a re-run with
    the same seed judges the same rows."""
    per_suite: int
    """Cases judged in every suite (an integer ≥ 1); all of a smaller suite. The rows
    without a suite are a stratum of their own."""
    seed: int = 0
    """Seeds the hash that orders the cases (an integer ≥ 0); the same seed and inputs
    judge the same rows, another seed draws another sample."""


@dataclass(frozen=True)
class SafetyConfig:
    votes: int = 3
    """Independent votes per critic, at most 100; the majority (⌊votes/2⌋+1) decides."""
    temperature: float = 0.7
    """Votes are sampled, so that they can differ (≥ 0)."""
    mode: str = "calls"
    """`calls`: one request per vote; `n`: one request asking for `votes` choices (where
    the server supports `n`)."""
    per_category: bool = False
    """One request per category (× votes) instead of one request returning all ten
    verdicts."""


@dataclass(frozen=True)
class RubricConfig:
    """A judge rubric of the config (G-Eval style): a metric of its own."""
    criteria: str
    """What the judge assesses, in a sentence or two."""
    steps: tuple[str, ...] = ()
    """Evaluation steps the judge follows, in order."""
    scale: tuple[float, float] = (1.0, 5.0)
    """[low, high] of the judge's score; the value is (score − low) / (high − low)."""
    inputs: tuple[str, ...] = ("question", "answer")
    """What the judge sees, at least one, each once; a row lacking one is null with the
    reason (`messages`: a single-turn row lacks it)."""


@dataclass(frozen=True)
class CustomMetricConfig:
    """A metric computed by a Python function named in the config."""
    name: str
    """The metric's name: ASCII letters, digits, `_`, starting with a letter, at most 64
    characters (entry-point metrics are held to the same rule); not a built-in metric's
    or group's name."""
    function: str
    """`package.module:function`, looked up on the Python path and in the config file's
    folder (evalbeam.evaluate() may give the function itself)."""
    needs: tuple[str, ...] = ("answer",)
    """The inputs the function reads; a row lacking one is null with the reason."""
    lower_is_better: bool = False
    """`true`: lower values are better (the same as `direction: lower`)."""
    direction: str | None = None
    """The metric's direction: `higher` (the default), `lower` or `none` (neither is
    better, as for `answer_length`: summary/'s `higher_is_better` is null, compare
    reports a change, never better or worse, a gate bounds a change either way,
    calibrate orients it by the labels)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of the function (`metric_options.<name>` overrides them)."""
    timeout_s: float = 60.0
    """The time limit of one call, in seconds: a row whose call is not back by then is
    null with `custom metric <name> timed out after 60 s (timeout_s)` and the run goes
    on (the call itself cannot be stopped: it runs on in the background)."""
    value_range: tuple[float | None, float | None] | None = None
    """`[low, high]` the values can take (`[0, 1]`; null for an open side): a value
    outside it is null with `custom metric <name> returned 7.3, outside its
    value_range [0, 1]`, not a mean and verdicts skewed by it. Unset: any number."""


@dataclass(frozen=True)
class JudgeConfig:
    endpoint: str | None = None
    """The judge's endpoint (a name in `endpoints`); both `endpoint` and `model`, or
    neither. Without a judge the judge metrics are off (named in `metrics`, they are
    null with `no judge configured`)."""
    model: str | None = None
    """The judge model."""
    temperature: float = 0.0
    """Temperature of every judge question except the safety votes (≥ 0)."""
    max_tokens: int = 1024
    """Completion limit per judge call."""
    max_prompt_tokens: int | None = None
    """The largest prompt a judge request may carry, in tokens as estimated without a
    tokenizer (~4 ASCII characters a token, ~1 Chinese, Japanese or Korean character,
    ~2 of other scripts; the template included): the model's context window less
    `max_tokens`, with a margin. A larger request is not sent: its metrics are null
    with `prompt ~N tokens over the judge's limit M`, an errors/ row
    (`judge_prompt_too_large`) and a failure in usage/. Unset: no check (a server's
    own 400 for a prompt too long is never retried)."""
    keep_trace: bool = False
    """Keep the raw reply (and a `reasoning_content` / `reasoning` trace if the server
    returns one) in each judge metric's details."""
    prompts: dict[str, str] = field(default_factory=dict)
    """Packaged template name → a file replacing it; the file must keep the packaged
    template's placeholders."""
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    """How the ten safety critics vote."""
    rubrics: dict[str, RubricConfig] = field(default_factory=dict)
    """Judge metrics of your own, by name (see Judges and rubrics)."""
    max_calls: int | None = None
    """Judge requests the run may send (an integer ≥ 1); past it, judge metrics are null
    with `budget reached` (see Spend caps). Cache hits are free."""
    max_cost: float | None = None
    """What the judge's requests may cost per run, priced from its endpoint's
    `price_per_million` (which must be set)."""
    sample: SampleConfig | None = None
    """Judge only a stratified random sample: `{per_suite: N, seed: S}` (see Judge a
    sample). The other rows' judge metrics are null with `not sampled`."""
    escalate: str | None = None
    """`undecided`: the cascade. The judge and the classifier run only for the rows the
    offline rules leave undecided (WARN), and the verdict rules on their metrics decide
    those rows (at least one such rule is required); see The cascade."""

    @property
    def configured(self) -> bool:
        return bool(self.endpoint and self.model)


CLASSIFIER_APIS = ("tei", "vllm_score")


@dataclass(frozen=True)
class ClassifierConfig:
    """The grounding classifier: a sequence-classification (NLI / fact-checking)
    model behind an HTTP endpoint, read by the `grounding_classifier` metric."""
    endpoint: str | None = None
    """The name of an endpoint in `endpoints` serving the model (TEI: its address,
    without /v1). Both `endpoint` and `model`, or neither; without them the metric is
    left out of the default metrics, and named in `metrics` it is null with "no
    classifier configured"."""
    model: str | None = None
    """The model's name: in usage/ and the call cache's key, and vLLM's `model`."""
    api: str = "tei"
    """`tei`: text-embeddings-inference's `POST /predict` (pairs in, every label's
    probability out); `vllm_score`: vLLM's `POST /score` for a one-output
    cross-encoder whose score is P(supported) (no contradiction label then)."""
    labels: dict[str, Any] = field(default_factory=lambda: {"supported": "entailment"})
    """`supported` (required for TEI) and optional `contradicted`: the label meaning the
    passage supports (contradicts) the sentence, as the model names it (compared without
    case: `ENTAILMENT`) or its index (resolved once through TEI's `GET /info`)."""
    batch_size: int = 32
    """Pairs per request (TEI's `--max-client-batch-size`, 32 by default). A batch the
    server refuses as too large (413/422 naming its limit) is sent again in batches of
    that limit, which the endpoint keeps from then on."""
    truncate: bool = True
    """Ask the server to cut a pair longer than the model reads; false: such a pair is
    the server's 422, and that pair alone fails (its row's metric is null with the
    reason)."""
    chunk_words: int = 300
    """Contexts are read in chunks of at most this many words (at least 16), cut at
    sentence ends: what a server truncates is never read."""
    max_sentences: int = 64
    """The first this many sentences of an answer are checked (details say how many
    were not)."""

    @property
    def configured(self) -> bool:
        return bool(self.endpoint and self.model)


@dataclass(frozen=True)
class CacheConfig:
    """The on-disk cache of judge, classifier and embedding calls (never of bots under
    test)."""
    enabled: bool = True
    """Cache judge, classifier and embedding calls: a re-run over unchanged inputs sends
    no request."""
    path: str | None = None
    """Tier 1, a SQLite file on the worker's own disk (never on a network filesystem).
    Default (unset): `<output>/_cache/calls.sqlite`, or a file in each worker's temp
    folder when `--output` is a URL."""
    shared_path: str | None = None
    """Tier 2, a folder every worker reaches through Beam's FileSystems (gs://, s3://,
    hdfs://, local or mounted), one object per call. Default (unset): none, or
    `<output>/_cache/objects` when `--output` is a URL."""


from transforms.decide.presets import PRESETS  # noqa: E402
from transforms.remote.scrub import (ENV_TEXT, SECRET_NAME, key_like_name,  # noqa: E402
                                     path_secrets, redact_url, secret_texts, shown,
                                     token_words, url_secrets_in)
from schemas.tables import MAX_METRIC_NAME, METRIC_NAME_RULE, is_metric_name  # noqa: E402
from transforms.decide.presets import Rule as VerdictRule  # noqa: E402
from transforms.decide.presets import When  # noqa: E402

DEFAULT_RULES = PRESETS["default"]


@dataclass(frozen=True)
class VerdictConfig:
    rules: tuple[VerdictRule, ...] = DEFAULT_RULES
    """Ordered rules; the first that matches decides. Written rules override the
    preset; each must name a metric of the run. Default: the preset's rules."""
    otherwise: str = "PASS"
    """The verdict when no rule matches."""
    explicit: bool = field(default=False, metadata=NOT_A_KEY)  # rules written in the config
    preset: str = "default"
    """The named rule set used when no `rules` are written (see Verdicts, Presets)."""


@dataclass(frozen=True)
class GateRule:
    """`evalbeam compare` exits 4 when `metric` got worse by more than
    `max_drop` (sign-aware: a rise for lower-is-better metrics) and the change
    is significant (Holm-adjusted p < alpha)."""
    metric: str
    """A metric of the compared runs, or `pass_rate`."""
    max_drop: float
    """The largest drop allowed (≥ 0, in the metric's units; for ↓ metrics a rise is the
    drop; for a metric with no direction, `answer_length`, a change either way)."""
    bot: str | None = None
    """The bot it checks. Default (unset): every compared bot."""
    suite: str = "*"
    """The suite it checks; `*`: all suites together."""
    alpha: float = 0.05
    """The significance level of the Holm-adjusted p-value, in (0, 1)."""


@dataclass(frozen=True)
class Config:
    input: InputConfig = field(default_factory=InputConfig)
    """How the input files are read."""
    endpoints: dict[str, EndpointConfig] = field(default_factory=dict)
    """Named OpenAI-compatible (or plain JSON HTTP) services that bots, the embedder and
    the judge call, with their rate limits, retries and prices."""
    bots: tuple[BotConfig, ...] = (BotConfig(name="recorded", type="precomputed"),)
    """Every case is answered by every bot."""
    embeddings: EmbeddingsConfig = field(default_factory=EmbeddingsConfig)
    """The embedder of the semantic metrics."""
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    """The LLM judge of the judge metrics."""
    classifier: ClassifierConfig = field(default_factory=ClassifierConfig)
    """The grounding classifier endpoint of the `grounding_classifier` metric."""
    cache: CacheConfig = field(default_factory=CacheConfig)
    """The call cache of judge, classifier and embedding calls."""
    metrics: tuple[str, ...] | None = None
    """Metric names or groups to compute; your own metrics and rubrics by name; an unknown
    name, or an empty list, is an error. Default (unset): every metric the inputs allow,
    except the judge's without a judge and the semantic ones without the local model (the
    run says so)."""
    metric_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per-metric options, by the metric's (or its group's) name: see the metrics
    reference. An unknown option (also of a metric the run leaves out), or a value of the
    wrong kind, is an error."""
    verdict: VerdictConfig = field(default_factory=VerdictConfig)
    """How rows get PASS, WARN or FAIL."""
    custom_metrics: tuple[CustomMetricConfig, ...] = ()
    """Metrics computed by your own Python functions (see Custom metrics)."""
    gate: tuple[GateRule, ...] = ()
    """Regression rules of `evalbeam compare --config` (a run ignores them). A rule that
    matches nothing compared is an error, so a typo cannot pass silently."""
    source_path: str | None = field(default=None, metadata=NOT_A_KEY)  # where it was loaded from

    def to_public_dict(self) -> dict[str, Any]:
        """The config as plain data for the manifest; secrets cannot be in it."""
        data = dataclasses.asdict(self)
        data.pop("source_path", None)
        for ep in data.get("endpoints", {}).values():
            ep.pop("requests_per_second_set", None)
            ep.pop("body_secrets", None)
            ep["headers"] = {k: "<redacted>" if token_words(str(v)) and "${" not in str(v) else v
                             for k, v in ep.get("headers", {}).items()}  # X-Access: <token>
        for m in data.get("custom_metrics", ()):  # evaluate()'s functions by their name
            if callable(m["function"]):
                fn = m["function"]
                m["function"] = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', fn)}"
        return redact(data)


def nested(t: Any) -> tuple[type | None, str]:
    """The dataclass a key holds (directly, per name, or per list item; unset
    allowed) and the path suffix of its keys."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        return nested(inner[0]) if len(inner) == 1 else (None, "")
    if dataclasses.is_dataclass(t):
        return t, "."
    if origin is dict and dataclasses.is_dataclass(args[1]):
        return args[1], ".<name>."
    if origin is tuple and args and dataclasses.is_dataclass(args[0]):
        return args[0], "[]."
    return None, ""


def config_sections(cls: type, prefix: str = "") -> dict[str, type]:
    """Every section of the YAML under cls, by where its keys are written
    (`judge.rubrics.<name>`, `bots[]`), read from the fields so it cannot drift."""
    out: dict[str, type] = {}
    hints = typing.get_type_hints(cls)
    for f in key_fields(cls):
        inner, suffix = nested(hints[f.name])
        if inner is not None:
            path = prefix + f.name + suffix.rstrip(".")
            out[path] = inner
            out.update(config_sections(inner, path + "."))
    return out


def redact(value: Any, key: str = "") -> Any:
    """Replace values under secret-looking keys (`*_env` keys hold names, kept)
    and the credentials inside URLs."""
    if isinstance(value, Mapping):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, key) for v in value]
    if isinstance(value, str) and key.lower().endswith("_env"):  # a name, unless a key
        return "<redacted>" if key_like_name(value) else value   # was pasted in its place
    if isinstance(value, str) and SECRET_NAME.search(key):
        return "<redacted>" if "${" not in value else value
    return redact_url(value)  # a URL's userinfo and query values


# ---------------------------------------------------------------- parsing

def _check_keys(data: Any, allowed: set[str], where: str) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where or 'config'} must be a mapping, got {type(data).__name__}")
    unknown = sorted(set(map(str, data)) - allowed)
    if unknown:
        path = f"{where}.{unknown[0]}" if where else unknown[0]
        raise ConfigError(f"unknown key '{path}'{key_hint(unknown[0], allowed, where)} "
                          f"(allowed here: {', '.join(sorted(allowed))})")
    return dict(data)


def key_hint(key: str, allowed: set[str], where: str) -> str:
    """'; did you mean ...?' for a misspelt key, or the section a key written at
    the wrong level belongs to: the list of allowed keys alone leaves the reader
    to spot `max_cals` among twelve."""
    close = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.75)
    if close:
        return f"; did you mean '{close[0]}'?"
    homes = [name for name, cls in config_sections(Config).items()
             if key in _keys(cls) and name != where]
    return f"; it is a key of {' / '.join(homes)}" if homes and len(homes) <= 3 else ""


def key_fields(cls: type) -> list[dataclasses.Field]:
    """The fields of a config dataclass that are keys of the YAML."""
    return [f for f in dataclasses.fields(cls) if f.metadata.get("config_key", True)]


def _keys(cls: type) -> set[str]:
    return {f.name for f in key_fields(cls)}


def _build(cls: type, data: Any, where: str, **overrides: Any) -> Any:
    """Construct a dataclass from a mapping, rejecting unknown keys."""
    values = _check_keys(data, _keys(cls), where)
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


def _number(value: Any, where: str, positive: bool = True, negative: bool = False) -> float:
    """A finite number: > 0 (positive), else >= 0, or any (negative: a bound of a rule)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where} must be a number, got {shown(value)}")
    if not math.isfinite(value):
        raise ConfigError(f"{where} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(f"{where} must be > 0, got {value!r}")
    if not negative and value < 0:
        raise ConfigError(f"{where} must be >= 0, got {value!r}")
    return float(value)


def _integer(value: Any, where: str, low: int, high: int | None = None) -> int:
    """An integer (not a bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (
            high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f">= {low}"
        raise ConfigError(f"{where} must be an integer {bound}, got {shown(value)}")
    return value


def _endpoint(name: str, data: Any) -> EndpointConfig:
    where = f"endpoints.{name}"
    ep = _build(EndpointConfig, data, where, requests_per_second_set=isinstance(
        data, Mapping) and "requests_per_second" in data)
    if not isinstance(ep.base_url, str) or not ep.base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}.base_url must be an http(s) URL, got "
                          f"{redact_url(ep.base_url)!r}")
    try:  # a host, no blank in it, a port in range: else every call of the run fails
        parts = urlsplit(ep.base_url)
        usable = bool(parts.hostname) and not any(c.isspace() for c in parts.hostname) and (
            parts.port is None or 1 <= parts.port <= 65535)
    except ValueError:  # a bad port or brackets
        usable = False
    if not usable:
        raise ConfigError(f"{where}.base_url must be an http(s) URL with a host (and a port "
                          f"from 1 to 65535), got {redact_url(ep.base_url)!r}")
    _no_reference_in_url(ep.base_url, f"{where}.base_url")
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
    _integer(ep.max_attempts, f"{where}.max_attempts", 1, MAX_ATTEMPTS)
    _integer(ep.max_concurrency, f"{where}.max_concurrency", 1, MAX_CONCURRENCY)
    _integer(ep.max_reply_bytes, f"{where}.max_reply_bytes", 1024)
    _integer(ep.circuit_failures, f"{where}.circuit_failures", 0)
    if ep.max_tokens_per_run is not None:
        _integer(ep.max_tokens_per_run, f"{where}.max_tokens_per_run", 1)
    # the message names what is wrong but never shows a value: headers hold credentials
    if not isinstance(ep.headers, Mapping):
        raise ConfigError(f"{where}.headers must be a mapping of header name to text, "
                          f"got {type(ep.headers).__name__}")
    for k, v in ep.headers.items():
        if not isinstance(k, str) or not isinstance(v, (str, int, float)) or isinstance(v, bool):
            raise ConfigError(f"{where}.headers must be a mapping of header name to text: "
                              f"{str(k)[:60]!r} has a {type(v).__name__} value")
        _no_bare_reference(str(v), f"{where}.headers.{k}")
    prices = _check_keys(ep.price_per_million, {"input", "output"}, f"{where}.price_per_million")
    for k, v in prices.items():
        _number(v, f"{where}.price_per_million.{k}", positive=False)
    if ep.api_version is not None and not isinstance(ep.api_version, str):
        raise ConfigError(f"{where}.api_version must be a text, got {shown(ep.api_version)}")
    if ep.api_key_env is not None and (not isinstance(ep.api_key_env, str)
                                       or not ep.api_key_env.replace("_", "").isalnum()):
        ref = isinstance(ep.api_key_env, str) and re.fullmatch(  # `${OPENAI_API_KEY}`, as in
            r"\$\{?\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}?", ep.api_key_env)  # headers
        if ref and not key_like_name(ref.group(1)):
            raise ConfigError(f"{where}.api_key_env takes the variable's name alone: write "
                              f"api_key_env: {ref.group(1)} (without $ or ${{}})")
        raise ConfigError(f"{where}.api_key_env must be an environment variable's NAME, "
                          "not a key")
    return ep


def _no_bare_reference(value: str, where: str) -> None:
    """A header's or an http bot body's `$VAR`, wherever it stands (`Bearer $KEY`,
    `Bearer$KEY`, `?key=$KEY`), would be sent as it is, and every call refused:
    both read `${VAR}`, and `$$` is a literal `$`. The name is quoted only when it
    cannot be a key pasted in its place."""
    ref = next((m for m in ENV_TEXT.finditer(value) if m.group(2)), None)
    if ref:
        name = ref.group(2)
        said = ("a $ and a name as they are: write ${NAME} to read the variable, or $$ "
                "for a literal $" if key_like_name(name)
                else f"${name} as it is: write ${{{name}}} to read the variable, or "
                     f"$${name} for the text ${name}")
        raise ConfigError(f"{where} sends {said}")


def _no_reference_in_url(url: str, where: str) -> None:
    """A `${VAR}` or `$VAR` in base_url or an http bot's path is not read from the
    environment (the URL is sent, logged and written as it is): said, naming the
    variable only."""
    ref = next((m for m in ENV_TEXT.finditer(url) if m.group(1) or m.group(2)), None)
    if ref:
        name = ref.group(1) or ref.group(2)
        shown_ref = "a $ and a name" if key_like_name(name) else ref.group(0)
        raise ConfigError(f"{where} holds a variable ({shown_ref}), which is not read from "
                          "the environment in a URL: give the key by api_key_env or a "
                          "header with ${VAR} (a literal $ in a URL is %24)")


def _texts_at(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every text of a template (an http bot's body) with where it is, as the
    config's errors name it (`bots[0].options.body.auth[1]`)."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _texts_at(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _texts_at(v, f"{where}[{i}]")


def _bound(item: Any, where: str) -> None:
    """A rule's or a `when`'s bound: exactly one of above / below, a number."""
    if (item.above is None) == (item.below is None):
        raise ConfigError(f"{where} needs exactly one of 'above' or 'below'")
    bound = "above" if item.above is not None else "below"
    _number(getattr(item, bound), f"{where}.{bound}", positive=False, negative=True)


def _when(data: Any, where: str) -> When:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must be a mapping like {{metric: answer_length, above: 140}}"
                          f", got {shown(data)}")
    when = _build(When, data, where)
    if not isinstance(when.metric, str):
        raise ConfigError(f"{where}.metric must be a metric name, got {shown(when.metric)}")
    _bound(when, where)
    return when


def _rule(data: Any, where: str) -> VerdictRule:
    when = data.get("when") if isinstance(data, Mapping) else None
    rule = _build(VerdictRule, data, where, **(
        {"when": _when(when, f"{where}.when")} if when is not None else {}))
    _bound(rule, where)
    if rule.verdict not in VERDICTS:
        raise ConfigError(f"{where}.verdict must be one of {VERDICTS}, got {rule.verdict!r}")
    if rule.unless is not None and not isinstance(rule.unless, str):
        raise ConfigError(f"{where}.unless must be a metric name, got {rule.unless!r}")
    if not isinstance(rule.or_null, bool):
        raise ConfigError(f"{where}.or_null must be true or false, got {shown(rule.or_null)}")
    return rule


def _resolve(path: str | None, base_dir: str) -> str | None:
    if path is None or "://" in path or os.path.isabs(path):
        return path
    return os.path.normpath(os.path.join(base_dir, path))


def parse_config(data: Any, base_dir: str = ".") -> Config:
    """Validate plain data (from YAML) into a Config; paths relative to base_dir."""
    top = _check_keys(data, _keys(Config), "")
    kwargs: dict[str, Any] = {}
    if "input" in top:
        kwargs["input"] = _input(top["input"])
    endpoints = _check_keys(top.get("endpoints"), set(map(str, top.get("endpoints") or {})),
                            "endpoints")
    for name in endpoints:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"endpoints: an endpoint's name must be a non-empty text, "
                              f"got {name!r}")
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
        kwargs["endpoints"] = with_body_secrets(kwargs["endpoints"], bots)
    if "embeddings" in top:
        emb = _build(EmbeddingsConfig, top["embeddings"], "embeddings")
        if emb.provider not in EMBEDDING_PROVIDERS:
            raise ConfigError(f"embeddings.provider must be one of {EMBEDDING_PROVIDERS}")
        if emb.provider == "local":
            from transforms.enrich.features import MINILM_MODELS, MULTILINGUAL_MODELS
            if emb.model not in MINILM_MODELS + MULTILINGUAL_MODELS:
                raise ConfigError(f"embeddings.model for the local provider must be one of "
                                  f"{[m for m in MINILM_MODELS + MULTILINGUAL_MODELS if m]}, "
                                  f"got {emb.model!r}")
        if emb.precision not in EMBEDDING_PRECISIONS:
            raise ConfigError(f"embeddings.precision must be one of {EMBEDDING_PRECISIONS}, "
                              f"got {emb.precision!r}")
        minilm = emb.provider == "local" and emb.model not in MULTILINGUAL_MODELS
        if emb.precision == "int8" and not minilm:
            raise ConfigError("embeddings.precision int8 applies to the local provider's "
                              "all-MiniLM-L6-v2 model only")
        kwargs["embeddings"] = emb
    if "judge" in top:
        kwargs["judge"] = _judge(top["judge"], kwargs["endpoints"], base_dir)
    if "classifier" in top:
        kwargs["classifier"] = _classifier(top["classifier"], kwargs["endpoints"])
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
        if not metrics:  # as `--metrics ""` is: a run that scores nothing is a mistake
            raise ConfigError("metrics is an empty list: name the metrics, or leave the key "
                              "out for every metric the inputs allow")
        kwargs["metrics"] = tuple(metrics)
    if "metric_options" in top:
        opts = top["metric_options"] or {}
        if not isinstance(opts, Mapping) or not all(isinstance(v, Mapping) for v in opts.values()):
            raise ConfigError("metric_options must map a metric name to a mapping of options")
        kwargs["metric_options"] = {str(k): dict(v) for k, v in opts.items()}
    if top.get("custom_metrics") is not None:
        kwargs["custom_metrics"] = _custom_metrics(top["custom_metrics"])
    if "verdict" in top:
        vd = _check_keys(top["verdict"], _keys(VerdictConfig), "verdict")
        preset = vd.get("preset", "default")
        if not isinstance(preset, str) or preset not in PRESETS:
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
    for col, src in inp.columns.items():
        names = src if isinstance(src, (list, tuple)) and src else [src]
        for i, name in enumerate(names):
            if not isinstance(name, str) or not name:
                at = f"[{i}]" if names is src else ""
                raise ConfigError(f"input.columns.{col}{at} must be a column name (text), "
                                  f"got {shown(name if at else src)}{_yaml_text_hint(name)}")
    if inp.format is not None and inp.format not in FORMATS:
        raise ConfigError(f"input.format must be one of {', '.join(FORMATS)}, got {inp.format!r}")
    if inp.preset is not None and (not isinstance(inp.preset, str) or inp.preset not in PRESETS):
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
        if not 0 < _number(rule.alpha, f"{where}.alpha") < 1:
            raise ConfigError(f"{where}.alpha must be in (0, 1)")
        rules.append(dataclasses.replace(rule, max_drop=float(rule.max_drop),
                                         alpha=float(rule.alpha)))
    return tuple(rules)


def _judge(data: Any, endpoints: Mapping[str, EndpointConfig], base_dir: str) -> JudgeConfig:
    from transforms.enrich.judge.prompts import TEMPLATE_NAMES
    raw = _check_keys(data, _keys(JudgeConfig), "judge")
    safety = _build(SafetyConfig, raw.get("safety"), "judge.safety")
    rubrics = _rubrics(raw.get("rubrics"))
    sample = None
    if raw.get("sample") is not None:
        sample = _build(SampleConfig, raw["sample"], "judge.sample")
        _integer(sample.per_suite, "judge.sample.per_suite", 1)
        _integer(sample.seed, "judge.sample.seed", 0)
    judge = _build(JudgeConfig, {k: v for k, v in raw.items()
                                 if k not in ("safety", "rubrics", "sample")},
                   "judge", safety=safety, rubrics=rubrics, sample=sample)
    if judge.endpoint is not None and judge.endpoint not in endpoints:
        raise ConfigError(f"judge.endpoint {judge.endpoint!r} is not a configured endpoint")
    if bool(judge.endpoint) != bool(judge.model):
        raise ConfigError("judge needs both 'endpoint' and 'model' (or neither)")
    for where, value in (("judge.temperature", judge.temperature),
                         ("judge.safety.temperature", safety.temperature)):
        _number(value, where, positive=False)  # < 0: every judge call refused, a 400
    _integer(judge.max_tokens, "judge.max_tokens", 1)
    if judge.max_prompt_tokens is not None:
        _integer(judge.max_prompt_tokens, "judge.max_prompt_tokens", 1)
    _integer(safety.votes, "judge.safety.votes", 1, MAX_VOTES)
    if safety.mode not in SAFETY_MODES:
        raise ConfigError(f"judge.safety.mode must be one of {SAFETY_MODES}, got {safety.mode!r}")
    for key in ("keep_trace",):
        if not isinstance(getattr(judge, key), bool):
            raise ConfigError(f"judge.{key} must be true or false")
    if judge.escalate not in (None, "undecided"):
        raise ConfigError(f"judge.escalate must be 'undecided' (or absent), got {judge.escalate!r}")
    if judge.max_calls is not None:
        _integer(judge.max_calls, "judge.max_calls", 1)
    if judge.max_cost is not None:
        _number(judge.max_cost, "judge.max_cost")
        if judge.endpoint and not endpoints[judge.endpoint].price_per_million:
            raise ConfigError(f"judge.max_cost needs a price: set endpoints.{judge.endpoint}."
                              "price_per_million {input, output}")
    if not isinstance(safety.per_category, bool):
        raise ConfigError("judge.safety.per_category must be true or false")
    prompts = _check_keys(judge.prompts, set(TEMPLATE_NAMES), "judge.prompts")
    return dataclasses.replace(judge, prompts={k: _resolve(str(v), base_dir)
                                               for k, v in prompts.items()})


def _classifier(data: Any, endpoints: Mapping[str, EndpointConfig]) -> ClassifierConfig:
    c = _build(ClassifierConfig, data, "classifier")
    if c.endpoint is not None and c.endpoint not in endpoints:
        raise ConfigError(f"classifier.endpoint {c.endpoint!r} is not a configured endpoint")
    if bool(c.endpoint) != bool(c.model) or not isinstance(c.model, (str, type(None))):
        raise ConfigError("classifier needs both 'endpoint' and 'model' (the model's name)")
    if c.api not in CLASSIFIER_APIS:
        raise ConfigError(f"classifier.api must be one of {', '.join(CLASSIFIER_APIS)}, "
                          f"got {c.api!r}")
    labels = _check_keys(c.labels, {"supported", "contradicted"}, "classifier.labels")
    if "supported" not in labels and c.api == "tei":
        raise ConfigError("missing key 'classifier.labels.supported' (the label or index "
                          "that means the passage supports the sentence)")
    for key, value in labels.items():
        ok = (isinstance(value, str) and value.strip()) or (
            isinstance(value, int) and not isinstance(value, bool) and value >= 0)
        if not ok:
            raise ConfigError(f"classifier.labels.{key} must be a label name or an index "
                              f">= 0, got {shown(value)}")
    if labels.get("supported") is not None and labels.get("supported") == labels.get(
            "contradicted"):
        raise ConfigError("classifier.labels.supported and .contradicted name the same label")
    _integer(c.batch_size, "classifier.batch_size", 1, 4096)
    _integer(c.chunk_words, "classifier.chunk_words", 16)
    _integer(c.max_sentences, "classifier.max_sentences", 1)
    if not isinstance(c.truncate, bool):
        raise ConfigError("classifier.truncate must be true or false")
    return dataclasses.replace(c, labels=labels)


def check_metric_name(name: Any, where: str) -> str:
    if not is_metric_name(name):
        raise ConfigError(f"{where} must be a metric name ({METRIC_NAME_RULE}, at most "
                          f"{MAX_METRIC_NAME}), got {str(name)[:80]!r}")
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
    from transforms.enrich.judge.keys import RUBRIC_INPUTS
    rubrics = _check_keys(data, set(map(str, data or {})), "judge.rubrics")
    out = {}
    for name, item in rubrics.items():
        where = f"judge.rubrics.{name}"
        check_metric_name(name, where)
        r = _build(RubricConfig, item, where)
        if not isinstance(r.criteria, str) or not r.criteria.strip():
            raise ConfigError(f"{where}.criteria must be a non-empty text")
        scale = r.scale
        if (not isinstance(scale, (list, tuple)) or len(scale) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                           and math.isfinite(v) for v in scale) or not scale[0] < scale[1]):
            raise ConfigError(f"{where}.scale must be [low, high], finite numbers with low < high")
        inputs = _string_tuple(r.inputs, f"{where}.inputs", RUBRIC_INPUTS)
        if not inputs:  # the judge would score its criteria against nothing, on every row
            raise ConfigError(f"{where}.inputs must name at least one of "
                              f"{', '.join(RUBRIC_INPUTS)}")
        twice = sorted({i for i in inputs if inputs.count(i) > 1})
        if twice:
            raise ConfigError(f"{where}.inputs names {', '.join(twice)} twice")
        out[name] = dataclasses.replace(
            r, steps=_string_tuple(r.steps or [], f"{where}.steps"),
            scale=(float(scale[0]), float(scale[1])), inputs=inputs)
    return out


def _custom_metrics(data: Any) -> tuple[CustomMetricConfig, ...]:
    from transforms.score.custom import (NEEDS, direction_problem, range_problem,
                                         timeout_problem, value_range_of)
    if not isinstance(data, list):
        raise ConfigError("custom_metrics must be a list of {name, function, ...}")
    out = []
    for i, item in enumerate(data):
        where = f"custom_metrics[{i}]"
        m = _build(CustomMetricConfig, item, where)
        check_metric_name(m.name, f"{where}.name")
        if "direction" in item and item["direction"] is None:  # YAML null, ~ or nothing
            raise ConfigError(f"{where}.direction is null: write higher, lower or none "
                              "(neither is better)")
        if not isinstance(m.function, str) or m.function.count(":") != 1:
            raise ConfigError(f"{where}.function must be 'package.module:function', "
                              f"got {m.function!r}")
        problem = direction_problem(m.direction, m.lower_is_better) or timeout_problem(
            m.timeout_s) or range_problem(m.value_range)
        if problem:
            raise ConfigError(f"{where}.{problem}")
        if not isinstance(m.options, Mapping):
            raise ConfigError(f"{where}.options must be a mapping")
        out.append(dataclasses.replace(m, needs=_string_tuple(m.needs, f"{where}.needs", NEEDS),
                                       options=dict(m.options), timeout_s=float(m.timeout_s),
                                       value_range=value_range_of(m.value_range)))
    names = [m.name for m in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"custom_metrics: duplicate metric name {dupes[0]!r}")
    return tuple(out)


def is_bot_name(name: Any) -> bool:
    """1-64 letters (of any script), digits, '-' or '_': a bot name is a Hive
    folder (bot=<name>) and a part of comparison file names (no '.', no '/')."""
    return (isinstance(name, str) and 0 < len(name) <= MAX_NAME_LENGTH
            and name.replace("_", "").replace("-", "").isalnum())


def _yaml_text_hint(value: Any) -> str:
    """Why a name came out as a number or a boolean (YAML reads `3`, `1.5`, `yes`
    unquoted so), with the quoted name to write."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f" (YAML reads an unquoted number as a number: quote the name, '{value}')"
    return yaml_bool_hint(value)


def yaml_bool_hint(value: Any) -> str:
    """Why a text came out as a boolean: YAML 1.1 reads unquoted yes/no/on/off
    (a bot named `no`, Norwegian's code) as true/false."""
    return (" (YAML reads an unquoted yes/no/on/off/true/false as a boolean: quote the text)"
            if isinstance(value, bool) else "")


def _validate_bot(bot: BotConfig, i: int, endpoints: Mapping[str, EndpointConfig],
                  base_dir: str) -> BotConfig:
    where = f"bots[{i}]"
    if not is_bot_name(bot.name):
        raise ConfigError(f"{where}.name must be 1-{MAX_NAME_LENGTH} letters, digits, '-' or "
                          f"'_', got {str(bot.name)[:80]!r}{yaml_bool_hint(bot.name)}")
    if not isinstance(bot.type, str) or bot.type not in BOT_TYPES:
        raise ConfigError(f"{where}.type must be one of {BOT_TYPES}, got {bot.type!r}")
    for key in ("faq", "endpoint", "model", "knowledge", "prompt_template", "system_prompt"):
        if getattr(bot, key) is not None and not isinstance(getattr(bot, key), str):
            raise ConfigError(f"{where}.{key} must be a text, got {shown(getattr(bot, key))}"
                              f"{yaml_bool_hint(getattr(bot, key))}")
    if not isinstance(bot.options, Mapping):
        raise ConfigError(f"{where}.options must be a mapping, got {shown(bot.options)}")
    if bot.max_prompt_tokens is not None:
        _integer(bot.max_prompt_tokens, f"{where}.max_prompt_tokens", 1)
        if bot.type not in REMOTE_BOT_TYPES:
            raise ConfigError(f"{where}.max_prompt_tokens applies to the bots that send a "
                              f"request ({', '.join(REMOTE_BOT_TYPES)}), not to a "
                              f"{bot.type} bot")
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
            for at, text in _texts_at(bot.options.get("body"), f"{where}.options.body"):
                _no_bare_reference(text, at)  # read as a header's is: `${VAR}` only
            path = bot.options.get("path", "")
            if not isinstance(path, str) or "://" in path:  # httpx would send it, and the
                # endpoint's credentials, to that address instead of base_url
                raise ConfigError(f"{where}.options.path must be a path under the endpoint's "
                                  f"base_url (e.g. /v1/ask), got {redact_url(path)!r}; put the "
                                  "address in endpoints.<name>.base_url")
            if "?" in path:  # httpx sends the endpoint's query (params) instead: it was
                # dropped, and its values (?api_key=...) were written to the manifest
                raise ConfigError(f"{where}.options.path must not carry a query (it is not "
                                  "sent); put query parameters in endpoints.<name>.base_url, "
                                  "whose values go with every request and are scrubbed")
            _no_reference_in_url(path, f"{where}.options.path")
            if path_secrets(path):  # sent in every request line, echoed in a 404
                raise ConfigError(f"{where}.options.path must not carry a credential (a "
                                  "segment after /key/ or /token/, a long token, ;api_key=): "
                                  "give the key by api_key_env or a header with ${VAR} in "
                                  "endpoints.<name>")
    return dataclasses.replace(bot, faq=_resolve(bot.faq, base_dir),
                               knowledge=_resolve(bot.knowledge, base_dir),
                               prompt_template=_resolve(bot.prompt_template, base_dir))


def with_body_secrets(endpoints: dict[str, EndpointConfig], bots) -> dict[str, EndpointConfig]:
    """The endpoints, each knowing the secrets the http bots calling it put in
    their bodies: every scrubber is built from the endpoints, so a server's echo
    of a body (in an error, in any encoding) is scrubbed as a header's is."""
    sent: dict[str, list[str]] = {}
    for bot in bots:
        if bot.type == "http" and bot.endpoint in endpoints:
            sent.setdefault(bot.endpoint, []).extend(secret_texts(bot.options.get("body")))
    return {name: dataclasses.replace(ep, body_secrets=tuple(dict.fromkeys(sent[name])))
            if sent.get(name) else ep for name, ep in endpoints.items()}


def other_secrets(cfg: Config) -> tuple[str, ...]:
    """The config's texts carrying a secret outside its endpoints (whose
    configured_secrets are known anyway), for every scrubber of the run: the
    metrics' options' (secret_texts: a custom metric's own key, options:
    {api_key_env: NAME} or {token: ...}) and the credentials of any URL it names
    (a signed FAQ, knowledge or prompt file: what the manifest redacts)."""
    data = dataclasses.asdict(dataclasses.replace(cfg, endpoints={}))
    return tuple(dict.fromkeys(
        secret_texts([m.options for m in cfg.custom_metrics]) + secret_texts(cfg.metric_options)
        + url_secrets_in(data)))


class _StrictLoader(yaml.SafeLoader):
    """safe_load that refuses a key given twice in one mapping (YAML's default
    keeps the last one silently, so half of a config would be ignored)."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base`: keys it brings in
                continue  # may be overridden here (super() flattens them in)
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


# YAML 1.1 (PyYAML) reads `2e5` and `1.5e6` as text: a float needs a dot and a
# signed exponent (`2.0e+5`), so `tokens_per_minute: 2e5` was "must be a number,
# got '2e5'". YAML 1.2 and JSON read them as numbers; so does this loader.
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def yaml_problem(exc: yaml.YAMLError) -> str:
    """' at line L, column C: what the parser found', the line alone leaving the
    reader to guess (a tab, an unclosed bracket). PyYAML's problem quotes one
    character or token, never a value."""
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return ""
    problem = " ".join(str(getattr(exc, "problem", "") or "").split())[:120]
    tab = " (indent with spaces)" if "'\\t'" in problem else ""
    return f" at line {mark.line + 1}, column {mark.column + 1}" + (
        f": {problem}{tab}" if problem else "")


def load_config(path: str | None) -> Config:
    """Load and validate a YAML file; None gives the defaults."""
    if path is None:
        return Config()
    try:
        with open(path, encoding="utf-8") as fh:
            data = read_yaml(fh, f"config {path}")
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:  # a file saved as Latin-1 or UTF-16 by an editor
        with open(path, "rb") as fh:
            line = fh.read(exc.start).count(b"\n") + 1
        raise ConfigError(f"config {path} is not UTF-8 text: byte 0x{exc.object[exc.start]:02x} "
                          f"at line {line}; save it as UTF-8") from None
    cfg = parse_config(data, os.path.dirname(os.path.abspath(path)))
    return dataclasses.replace(cfg, source_path=path)


def read_yaml(source: Any, named: str) -> Any:
    """A config's YAML (a file or a text) read strictly (a key given twice is
    an error); its problems as one ConfigError that begins with `named`."""
    try:
        return yaml.load(source, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader
    except ConfigError as exc:
        raise ConfigError(f"{named}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{named} is not valid YAML{yaml_problem(exc)}") from None
