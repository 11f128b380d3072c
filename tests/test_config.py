import re
import textwrap

import pytest

from pipeline.config import ConfigError, Config, load_config, parse_config, redact


def _load(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(text))
    return load_config(str(path))


def test_defaults_run_offline():
    cfg = Config()
    assert [b.type for b in cfg.bots] == ["precomputed"]
    assert [(r.metric, r.verdict) for r in cfg.verdict.rules] == [
        ("reference_coverage", "FAIL"), ("groundedness", "FAIL"),
        ("groundedness", "WARN"), ("groundedness", "WARN"), ("unsupported_facts", "WARN"),
        ("reference_coverage", "WARN")]
    assert cfg.verdict.rules[0].below == 0.25 and cfg.verdict.preset == "default"


def test_full_shape_from_architecture_parses(tmp_path):
    cfg = _load(tmp_path, """
        input:
          columns: {question: user_input, answer: response, expected_answer: reference,
                    contexts: retrieved_contexts}
        endpoints:
          llm:
            base_url: http://127.0.0.1:8000/v1
            api_key_env: OPENAI_API_KEY
            requests_per_second: 50
            tokens_per_minute: 200000
            max_concurrency: 32
            timeout_s: 60
            max_attempts: 6
            price_per_million: {input: 0.15, output: 0.60}
        bots:
          - {name: faq, type: faq_match, faq: faq.parquet}
          - {name: recorded, type: precomputed}
          - {name: assistant, type: full_context, endpoint: llm, model: gpt-4o-mini,
             knowledge: knowledge.md}
        embeddings: {provider: local}
        judge: {endpoint: llm, model: gpt-4o-mini}
        metrics: [exact_match, bleu]
        verdict:
          rules:
            - {metric: hallucination, above: 0.6, verdict: FAIL}
          otherwise: PASS
        """)
    assert cfg.input.columns["question"] == "user_input"
    assert cfg.endpoints["llm"].max_concurrency == 32
    assert cfg.bots[0].faq == str(tmp_path / "faq.parquet")  # relative to the config file
    assert cfg.verdict.rules[0].above == 0.6
    assert cfg.metrics == ("exact_match", "bleu")


@pytest.mark.parametrize("text, key", [
    ("bots:\n  - {name: a, type: precomputed, nmae: x}\n", "bots[0].nmae"),
    ("verdcit: {}\n", "verdcit"),
    ("endpoints:\n  llm: {base_url: 'http://x', retries: 3}\n", "endpoints.llm.retries"),
    ("verdict:\n  rules:\n    - {metric: m, above: 1, verdict: FAIL, if: x}\n",
     "verdict.rules[0].if"),
])
def test_unknown_keys_are_named(tmp_path, text, key):
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, text)
    assert f"'{key}'" in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("data, words", [
    ({"bots": [{"name": "a", "type": "telepathy"}]}, "type must be one of"),
    ({"bots": [{"name": "a", "type": "faq_match"}]}, "needs 'faq'"),
    ({"bots": [{"name": "a", "type": "precomputed"}, {"name": "a", "type": "precomputed"}]},
     "duplicate bot name"),
    ({"verdict": {"rules": [{"metric": "m", "verdict": "FAIL"}]}}, "exactly one of"),
    ({"verdict": {"rules": [{"metric": "m", "above": 1, "verdict": "MAYBE"}]}}, "verdict must be"),
    ({"endpoints": {"llm": {"base_url": "ftp://x"}}}, "http(s) URL"),
    ({"endpoints": {"llm": {"base_url": "http://x", "api_key_env": "sk-abc123 secret"}}},
     "environment variable's NAME"),
    ({"metrics": "bleu"}, "list of metric names"),
    ({"metrics": []}, "metrics is an empty list"),  # ran with no metric at all, exit 0
])
def test_invalid_values_are_one_line_errors(data, words):
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert words in str(err.value)


@pytest.mark.parametrize("url", [
    "http://", "http:///v1", "http://127.0.0.1 :8000/v1", "http://127.0.0.1:99999/v1",
    "http://127.0.0.1:0/v1", "http://[::1/v1", "http://alice:Passw0rdSecret@h:abc/v1?key=Q1234567"])
def test_a_base_url_without_a_usable_host_or_port_is_refused_up_front(url):
    """These passed the check (they start with http://): the run then failed
    every row ('ExceptionGroup: unhandled errors in a TaskGroup', 'Name or
    service not known') or crashed with a traceback in AnswerWith."""
    with pytest.raises(ConfigError) as err:
        parse_config({"endpoints": {"llm": {"base_url": url}}})
    assert "endpoints.llm.base_url must be an http(s) URL with a host" in str(err.value)
    assert "Passw0rdSecret" not in str(err.value) and "Q1234567" not in str(err.value)


@pytest.mark.parametrize("path", ["https://collector.example/ask?token=Q1234567", 7])
def test_an_http_bot_path_that_is_an_address_is_refused(path):
    """httpx sends a request whose path is a full URL to that URL, with the
    endpoint's key in its headers: the key went to a host other than base_url."""
    with pytest.raises(ConfigError) as err:
        parse_config({"endpoints": {"a": {"base_url": "http://x", "api_key_env": "K"}},
                      "bots": [{"name": "b", "type": "http", "endpoint": "a",
                                "options": {"path": path, "answer_path": "answer"}}]})
    assert "options.path must be a path under the endpoint's base_url" in str(err.value)
    assert "Q1234567" not in str(err.value)
    parse_config({"endpoints": {"a": {"base_url": "http://x"}},  # a path is fine
                  "bots": [{"name": "b", "type": "http", "endpoint": "a",
                            "options": {"path": "/v1/ask", "answer_path": "answer"}}]})


def test_usual_base_urls_are_accepted():
    for url in ("https://api.openai.com/v1", "http://127.0.0.1:8000/v1", "http://[::1]:8080",
                "http://alice:pw@tei-host:8080/?key=abc", "http://localhost/"):
        parse_config({"endpoints": {"llm": {"base_url": url}}})


def test_missing_and_invalid_yaml_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(str(tmp_path / "nope.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("bots: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        load_config(str(bad))


def test_redaction_keeps_env_names_and_hides_values():
    data = {"api_key_env": "OPENAI_API_KEY", "headers": {"Authorization": "Bearer sk-123"},
            "token": "abc", "model": "m"}
    out = redact(data)
    assert out["api_key_env"] == "OPENAI_API_KEY"
    assert out["headers"]["Authorization"] == "<redacted>"
    assert out["token"] == "<redacted>" and out["model"] == "m"


def test_worker_share_defaults_to_one_over_workers():
    from apache_beam.options.pipeline_options import PipelineOptions
    from pipeline.plan import share_limits, worker_count
    cfg = parse_config({"endpoints": {"a": {"base_url": "http://x"},
                                      "b": {"base_url": "http://y", "worker_share": 0.25}}})
    mp = PipelineOptions(["--direct_running_mode=multi_processing", "--direct_num_workers=4"])
    assert worker_count(mp) == 4
    assert worker_count(PipelineOptions(["--runner=DataflowRunner", "--max_num_workers=10"])) == 10
    assert worker_count(PipelineOptions([])) == 1
    shared = share_limits(cfg, worker_count(mp))
    assert shared.endpoints["a"].worker_share == 0.25  # auto: 1 / 4 workers
    assert shared.endpoints["b"].worker_share == 0.25  # explicit value kept
    with pytest.raises(ConfigError, match="worker_share must be in"):
        parse_config({"endpoints": {"a": {"base_url": "http://x", "worker_share": 2}}})


_EP = {"llm": {"base_url": "http://127.0.0.1:1/v1"}}


def test_judge_section_parses_with_defaults_and_paths(tmp_path):
    cfg = parse_config({"endpoints": _EP, "judge": {
        "endpoint": "llm", "model": "m", "keep_trace": True,
        "prompts": {"judge_relevance": "rel.txt"},
        "safety": {"votes": 5, "mode": "n"}}, "cache": {"path": "c/calls.sqlite"}},
        base_dir=str(tmp_path))
    assert cfg.judge.configured and cfg.judge.temperature == 0.0 and cfg.judge.keep_trace
    assert cfg.judge.safety.votes == 5 and cfg.judge.safety.temperature == 0.7
    assert cfg.judge.prompts["judge_relevance"] == str(tmp_path / "rel.txt")
    assert cfg.cache.path == str(tmp_path / "c" / "calls.sqlite") and cfg.cache.enabled
    assert not parse_config({}).judge.configured


@pytest.mark.parametrize("judge, words", [
    ({"endpoint": "nope", "model": "m"}, "judge.endpoint 'nope' is not a configured endpoint"),
    ({"endpoint": "llm"}, "both 'endpoint' and 'model'"),
    ({"endpoint": "llm", "model": "m", "temperature": "hot"}, "judge.temperature must be a number"),
    ({"endpoint": "llm", "model": "m", "safety": {"mode": "batch"}}, "judge.safety.mode"),
    ({"endpoint": "llm", "model": "m", "safety": {"votes": 0}}, "judge.safety.votes"),
    ({"endpoint": "llm", "model": "m", "safety": {"vote": 3}}, "unknown key 'judge.safety.vote'"),
    ({"endpoint": "llm", "model": "m", "prompts": {"relevance": "x"}},
     "unknown key 'judge.prompts.relevance'"),
    ({"endpoint": "llm", "model": "m", "rubric": 1}, "unknown key 'judge.rubric'"),
])
def test_judge_config_errors_name_the_key(judge, words):
    with pytest.raises(ConfigError, match=re.escape(words)):
        parse_config({"endpoints": _EP, "judge": judge})


def test_template_override_must_keep_the_placeholders(tmp_path):
    from pipeline.plan import check_judge
    bad = tmp_path / "rel.txt"
    bad.write_text("Rate {answer} please")
    cfg = parse_config({"endpoints": _EP, "judge": {"endpoint": "llm", "model": "m",
                                                    "prompts": {"judge_relevance": str(bad)}}})
    with pytest.raises(ConfigError, match=r"lacks the placeholder \{question\}"):
        check_judge(cfg)
    bad.write_text("Q {question} A {answer}")
    check_judge(cfg)


def test_gate_rules_parse_and_are_checked(tmp_path):
    cfg = _load(tmp_path, """
        gate:
          - {metric: faithfulness, max_drop: 0.02}
          - {metric: pass_rate, max_drop: 0, bot: assistant, suite: billing, alpha: 0.01}
        """)
    assert [(r.metric, r.max_drop, r.bot, r.suite, r.alpha) for r in cfg.gate] == [
        ("faithfulness", 0.02, None, "*", 0.05), ("pass_rate", 0.0, "assistant", "billing", 0.01)]
    assert Config().gate == ()
    for text, message in [("gate: {metric: x}", "gate must be a list"),
                          ("gate: [{max_drop: 0.1}]", "missing key 'gate[0].metric'"),
                          ("gate: [{metric: x, max_drop: -1}]", "gate[0].max_drop must be >= 0"),
                          ("gate: [{metric: x, max_drop: 0.1, alpha: 2}]", "gate[0].alpha"),
                          ("gate: [{metric: x, max_drop: 0.1, botz: a}]", "unknown key 'gate[0].botz'")]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            _load(tmp_path, text)


def test_yaml_anchors_and_merge_keys_load(tmp_path):
    # `<<: *base` is YAML's merge key: it was refused as "not valid YAML"
    cfg = _load(tmp_path, textwrap.dedent("""
        endpoints:
          base: &base {base_url: 'http://127.0.0.1:1/v1', timeout_s: 5, max_attempts: 2}
          llm: {<<: *base, timeout_s: 7}
          other:
            <<: *base
        """))
    assert cfg.endpoints["llm"].timeout_s == 7 and cfg.endpoints["llm"].max_attempts == 2
    assert cfg.endpoints["other"].timeout_s == 5
    with pytest.raises(ConfigError, match="duplicate key 'timeout_s'"):
        _load(tmp_path, "endpoints:\n  b: &b {base_url: 'http://x'}\n"
                        "  llm: {<<: *b, timeout_s: 7, timeout_s: 8}\n")


def test_a_bad_headers_error_does_not_print_the_header_values(tmp_path):
    """`headers: {Authorization: [sk-...]}` (or a string instead of a mapping)
    printed the whole value, the literal key with it, in the one-line error."""
    for headers in ("'Authorization: Bearer sk-Literal0123456'",
                    "{Authorization: [Bearer sk-Literal0123456]}"):
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"endpoints:\n  llm: {{base_url: 'http://h/v1', headers: {headers}}}\n")
        with pytest.raises(ConfigError, match="headers must be a mapping") as err:
            load_config(str(cfg))
        assert "Literal0123456" not in str(err.value), str(err.value)


def test_an_http_bot_path_with_a_query_is_refused_without_its_values():
    """options.path '/ask?api_key=...': httpx replaced the query by the endpoint's
    (so it was never sent) and manifest.json showed the key as written."""
    with pytest.raises(ConfigError, match="must not carry a query") as err:
        parse_config({"endpoints": {"a": {"base_url": "http://x"}},
                      "bots": [{"name": "b", "type": "http", "endpoint": "a",
                                "options": {"path": "/ask?api_key=PathKey12345",
                                            "answer_path": "answer"}}]})
    assert "PathKey12345" not in str(err.value)


KEY_IN_WRONG_FIELD = "sk-NUMERIC-9fK2Lq7Zr4Tn8Bv0"


@pytest.mark.parametrize("where, text", [
    ("timeout_s", "endpoints: {e: {base_url: 'http://h/v1', timeout_s: KEY}}"),
    ("requests_per_second", "endpoints: {e: {base_url: 'http://h/v1', requests_per_second: KEY}}"),
    ("max_attempts", "endpoints: {e: {base_url: 'http://h/v1', max_attempts: KEY}}"),
    ("max_concurrency", "endpoints: {e: {base_url: 'http://h/v1', max_concurrency: [KEY]}}"),
    ("tokens_per_minute", "endpoints: {e: {base_url: 'http://h/v1', tokens_per_minute: KEY}}"),
    ("price", "endpoints: {e: {base_url: 'http://h/v1', price_per_million: {input: KEY}}}"),
    ("api_version", "endpoints: {e: {base_url: 'http://h/v1', api_version: {k: KEY}}}"),
    ("below", "verdict: {rules: [{metric: exact_match, below: KEY, verdict: FAIL}]}"),
    ("or_null", "verdict: {rules: [{metric: exact_match, below: 1, verdict: FAIL, or_null: KEY}]}"),
    ("max_drop", "gate: [{metric: exact_match, max_drop: KEY}]"),
    ("bot model", "bots: [{name: b, type: chat, endpoint: e, model: [KEY]}]"),
    ("bot options", "bots: [{name: b, type: http, options: [KEY]}]"),
])
def test_a_key_pasted_into_a_numeric_or_typed_field_is_not_echoed(tmp_path, where, text):
    """Round 4: 'endpoints.e.timeout_s must be a number, got 'sk-...'' quoted the
    key someone pasted in the wrong field; the error says what kind it was."""
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, text.replace("KEY", KEY_IN_WRONG_FIELD))
    message = str(err.value)
    assert KEY_IN_WRONG_FIELD[3:11] not in message and "not shown" in message, message


def test_short_wrong_values_are_still_quoted(tmp_path):
    with pytest.raises(ConfigError, match=r"timeout_s must be a number, got '30s'"):
        _load(tmp_path, "endpoints: {e: {base_url: 'http://h/v1', timeout_s: 30s}}")


@pytest.mark.parametrize("option", [{"hallucination": {"window": KEY_IN_WRONG_FIELD}},
                                    {"politeness": {"markers": KEY_IN_WRONG_FIELD}}])
def test_a_key_in_a_metric_option_is_not_echoed(option):
    from transforms.score.scoring import select_scorers
    with pytest.raises(ValueError) as err:
        select_scorers(None, option)
    assert KEY_IN_WRONG_FIELD[3:11] not in str(err.value) and "not shown" in str(err.value)


@pytest.mark.parametrize("path", ["/key/sk-PathSeg0123456789/ask", "/ask;api_key=sk-PathSeg0123456789",
                                  "/bot12345:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/ask"])
def test_an_http_bot_path_with_a_credential_is_refused_without_it(path):
    """Round 4: options.path '/key/<key>/ask' was sent in every request line, and
    written to manifest.json as it was (base_url's path is redacted and
    scrubbed, an http bot's path was neither); a server's 404 'Unknown route
    POST /key/<key>/ask' went to errors/."""
    with pytest.raises(ConfigError, match="must not carry a credential") as err:
        parse_config({"endpoints": {"a": {"base_url": "http://x"}},
                      "bots": [{"name": "b", "type": "http", "endpoint": "a",
                                "options": {"path": path, "answer_path": "answer"}}]})
    assert "PathSeg" not in str(err.value) and "AAHdqTcv" not in str(err.value)
    assert parse_config({"endpoints": {"a": {"base_url": "http://x"}},  # a plain path is fine
                         "bots": [{"name": "b", "type": "http", "endpoint": "a", "options": {
                             "path": "/v1/assistant/ask", "answer_path": "answer"}}]})


def test_a_key_at_the_wrong_level_names_every_section_that_holds_it():
    """The hint 'it is a key of ...' came from a hand-kept list of sections that had
    drifted: a rubric's `criteria` written one
    level up named no home. The sections are now read from Config's fields."""
    with pytest.raises(ConfigError) as err:
        parse_config({"judge": {"criteria": "Is it polite?"}})
    assert "it is a key of judge.rubrics.<name>" in str(err.value)
    with pytest.raises(ConfigError) as err:
        parse_config({"judge": {"per_suite": 5}})
    assert "it is a key of judge.sample" in str(err.value)
