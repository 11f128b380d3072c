"""The scrubber (transforms/remote/scrub.py) on its own, with random secrets.

Issue 22, "tests that let deliberate bugs through": with the fragment rule
`>= n` changed to `> n`, or the every-byte `%XX` form dropped, no test failed.
These tests use random secrets holding `/ + = " \\` and spaces, every encoded
form the scrubber handles, and fragments of exactly 8 (scrubbed) and 7 (kept)
characters. Issue 22 item 3: credentials inside a URL."""
from __future__ import annotations

import base64
import os
import html
import json
import random
import string
from urllib.parse import quote, quote_plus

import pytest

from pipeline.config import EndpointConfig, load_config
from tests.pipeline_helpers import base64_cores, leaks, secret_forms
from transforms.remote.scrub import (MIN_RUN, REDACTED, Scrubber, configured_secrets,
                                     redact_url, url_secrets)

ALPHABET = string.ascii_letters + string.digits + '/+=" \\'
SEEDS = range(40)


def random_secret(rng: random.Random, length: int | None = None) -> str:
    """A secret with at least one of each awkward character, never starting or
    ending in a space (a key is not padded)."""
    length = length or rng.randint(16, 40)
    chars = [rng.choice(ALPHABET) for _ in range(length - 6)] + list('/+=" \\')
    rng.shuffle(chars)
    text = "".join(chars)
    return "k" + text[1:-1] + "z"


def base64_texts(secret: str) -> dict[str, tuple[str, str]]:
    """(encoded text, the part of it fixed by the secret) for base64 and URL-safe
    base64 of the secret after 0, 1 or 2 other bytes (e.g. inside `Basic ...` or
    `Bearer ...` encoded whole) and before more bytes."""
    out = {}
    for name, core in base64_cores(secret).items():
        shift = int(name.split(" after ")[1][0])
        encode = base64.urlsafe_b64encode if name.startswith("urlsafe") else base64.b64encode
        out[name] = (encode(b"P" * shift + secret.encode() + b"tail").decode(), core)
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_every_encoded_form_of_a_random_secret_is_scrubbed_whole(seed):
    rng = random.Random(seed)
    secret = random_secret(rng)
    scrubber = Scrubber([secret])
    for name, form in secret_forms(secret).items():
        text = f"before «{form}» after"
        assert scrubber.scrub(text) == f"before «{REDACTED}» after", (name, secret, form)


@pytest.mark.parametrize("seed", SEEDS)
def test_base64_of_a_random_secret_at_every_alignment_is_scrubbed(seed):
    secret = random_secret(random.Random(seed))
    scrubber = Scrubber([secret])
    for name, (text, core) in base64_texts(secret).items():
        out = scrubber.scrub(f"Authorization: {text}")
        assert REDACTED in out and core not in out, (name, secret)
        kept = out.replace(REDACTED, " ")
        # what stays of the encoded text are the (at most 4-character) groups mixed
        # with other bytes at either end: no 8 characters of the core survive
        assert not any(core[i:i + MIN_RUN] in kept for i in range(len(core) - MIN_RUN + 1)), \
            (name, secret, out)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_fragment_of_exactly_8_characters_is_scrubbed_and_of_7_is_kept(seed):
    """The rule is `a shared run of >= 8 characters`: 8 must go (an error text cut
    after 300 characters keeps a prefix), 7 must stay (or ordinary words would)."""
    rng = random.Random(seed)
    secret = random_secret(rng, 24)
    scrubber = Scrubber([secret])
    for start in range(len(secret) - MIN_RUN + 1):
        eight = secret[start:start + MIN_RUN]
        seven = eight[:-1]
        # framed by characters the secret cannot continue with
        assert scrubber.scrub(f"«{eight}»") == f"«{REDACTED}»", (secret, eight)
        assert scrubber.scrub(f"«{seven}»") == f"«{seven}»", (secret, seven)


@pytest.mark.parametrize("seed", SEEDS[:10])
def test_fragments_of_encoded_forms_count_in_characters_of_the_secret(seed):
    """A fragment of 8 characters of the secret in an encoded form is scrubbed: for
    the every-byte %XX form that is 24 characters, for \\uXXXX 48, in hex 16 (a
    server's debug dump of the request headers, as bytes.hex(), leaked whole)."""
    secret = "".join(random.Random(seed).choice(string.ascii_letters) for _ in range(24))
    scrubber = Scrubber([secret])
    for unit, encode in ((3, lambda s: "".join(f"%{b:02X}" for b in s.encode())),
                         (6, lambda s: "".join(f"\\u{ord(c):04x}" for c in s)),
                         (2, lambda s: s.encode().hex()),
                         (4, lambda s: "".join(f"\\x{b:02x}" for b in s.encode())),
                         (5, lambda s: "".join(f"%25{b:02X}" for b in s.encode())),
                         (6, lambda s: "".join(f"&#x{ord(c):x};" for c in s))):
        for start in range(0, len(secret) - MIN_RUN + 1, 5):
            eight = encode(secret[start:start + MIN_RUN])
            seven = encode(secret[start:start + MIN_RUN - 1])
            assert scrubber.scrub(f"«{eight}»") == f"«{REDACTED}»", (unit, eight)
            assert scrubber.scrub(f"«{seven}»") == f"«{seven}»", (unit, seven)


def test_a_secret_shorter_than_a_run_is_scrubbed_whole_only():
    scrubber = Scrubber(["ab/+= c"])  # 7 characters
    assert scrubber.scrub("x ab/+= c y") == f"x {REDACTED} y"
    assert scrubber.scrub("x ab/+= y") == "x ab/+= y"


# ---- credentials inside a URL (item 3) --------------------------------------

URL = "http://alice:UrlPassw0rdSecret@host.example:8443/v1?key=QueryKeySecret42&region=eu-west-1"
BASIC = base64.b64encode(b"alice:UrlPassw0rdSecret").decode()


def test_url_secrets_are_the_userinfo_the_basic_credential_and_query_values():
    found = url_secrets(URL)
    for value in ("alice:UrlPassw0rdSecret", "UrlPassw0rdSecret", BASIC, "QueryKeySecret42",
                  "eu-west-1"):
        assert value in found
    assert "alice" not in found  # a user name alone is not a secret (the pair is)
    assert url_secrets("https://tok3n-only-user@host/v1") == ["tok3n-only-user"]
    encoded = url_secrets("http://bob:p%40ss%2Fw0rd@h/")
    assert "p@ss/w0rd" in encoded and "bob:p@ss/w0rd" in encoded and "bob:p%40ss%2Fw0rd" in encoded
    assert url_secrets("http://host/v1") == [] and url_secrets(None) == []


def test_redact_url_keeps_the_address_and_drops_the_credentials():
    assert redact_url(URL) == ("http://<redacted>@host.example:8443/v1?key=<redacted>"
                               "&region=<redacted>")
    assert redact_url("https://api.example/v1") == "https://api.example/v1"
    assert redact_url("not a url") == "not a url"


def test_configured_secrets_include_the_base_url_credentials():
    secrets = configured_secrets({"llm": EndpointConfig(base_url=URL)}, environ={})
    scrubber = Scrubber(secrets)
    echoed = (f"Basic {BASIC} | {BASIC.upper()} | {base64.b64encode(('Basic ' + BASIC).encode()).decode()}"
              f" | {quote(URL, safe='')} | {URL}")
    out = scrubber.scrub(echoed)
    for secret in ("UrlPassw0rdSecret", "QueryKeySecret42", BASIC, BASIC.upper()):
        assert secret not in out, out


def test_the_config_written_to_the_manifest_has_no_url_credentials(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"endpoints:\n  llm: {{base_url: '{URL}'}}\n"
                   "bots:\n  - {name: gpt, type: chat, endpoint: llm, model: m}\n")
    public = json.dumps(load_config(str(cfg)).to_public_dict())
    assert "UrlPassw0rdSecret" not in public and "QueryKeySecret42" not in public
    assert "http://<redacted>@host.example:8443/v1?key=<redacted>" in public


def test_a_bad_base_url_error_does_not_print_its_credentials(tmp_path):
    from pipeline.config import ConfigError
    cfg = tmp_path / "c.yaml"
    cfg.write_text("endpoints:\n  llm: {base_url: 'ftp://alice:UrlPassw0rdSecret@h/?key=Q1234567'}\n")
    with pytest.raises(ConfigError) as err:
        load_config(str(cfg))
    assert "UrlPassw0rdSecret" not in str(err.value) and "Q1234567" not in str(err.value)


def test_literal_credentials_in_headers_named_like_one_are_scrubbed_and_redacted(tmp_path):
    """A literal X-Custom-Auth token (or a Cookie) in the config was written to
    manifest.json as it was, and its echo by the server to results/: only
    names holding key, token, secret, password or authorization counted."""
    token, cookie = "hdrTok-55aa66bb77cc", "sid=SessAbc123456; theme=dark"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("endpoints:\n  llm: {base_url: 'http://h/v1', headers: "
                   f"{{X-Custom-Auth: '{token}', Cookie: '{cookie}', X-Region: eu-west-1}}}}\n")
    config = load_config(str(cfg))
    public = json.dumps(config.to_public_dict())
    assert token not in public and "SessAbc123456" not in public and "eu-west-1" in public
    scrubber = Scrubber(configured_secrets(config.endpoints, environ={}))
    out = scrubber.scrub(f"you sent {token} and {cookie.upper()} from eu-west-1")
    assert out == f"you sent {REDACTED} and {REDACTED} from eu-west-1", out


def test_the_traceback_of_a_crashed_run_has_no_secret(tmp_path):
    """A run that crashes (exit 1) prints its traceback as Python would, but
    scrubbed: a worker's exception can quote a request's credentials."""
    import os
    import subprocess
    import sys

    from tests.conftest import write_cases
    key = "sk-crash-" + "q7Zr2Lm9Xw4Tn8Bv"
    cases = write_cases(str(tmp_path / "cases.parquet"), [
        {"case_id": "c1", "question": "Q?", "contexts": ["C."], "answer": "A."}])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("endpoints:\n  judge: {base_url: 'http://127.0.0.1:9/v1', "
                   "api_key_env: CRASH_KEY}\njudge: {endpoint: judge, model: m}\n"
                   "bots:\n  - {name: recorded, type: precomputed}\nmetrics: [faithfulness]\n")
    script = ("import os, sys, pipeline.execute as ex\n"
              "def boom(p, plan):\n"
              "    raise RuntimeError('POST http://127.0.0.1:9/v1 failed: Authorization: Bearer '"
              " + os.environ['CRASH_KEY'])\n"
              "ex.build_pipeline = boom\n"
              "from pipeline.cli import main\n"
              "main(sys.argv[1:])\n")
    proc = subprocess.run(
        [sys.executable, "-c", script, "run", "--input", cases, "--output",
         str(tmp_path / "out"), "--config", str(cfg), "--run-id", "crash"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "CRASH_KEY": key},
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "RuntimeError" in proc.stderr
    assert REDACTED in proc.stderr
    for text in (proc.stdout, proc.stderr):
        assert key not in text and key[9:] not in text


def test_credentials_in_a_url_path_or_fragment_are_secrets_and_redacted():
    """Round 4: a key written in base_url's path (/key/<key>/v1, /bot<token>/,
    ;api_key=...) or fragment (#token=...) was neither scrubbed nor redacted:
    the manifest kept the URL as written and a server's 404 'Unknown route
    POST /key/<key>/v1/chat/completions' went to results/, errors/ and the report."""
    key, frag = "sk-pathKEY-7Hq2Wm9Zr4Tn8Bv0", "fragTok-Zq81Lm22Xc93"
    url = f"http://h:1/key/{key}/v1#token={frag}"
    assert set(url_secrets(url)) == {key, frag}
    assert redact_url(url) == "http://h:1/key/<redacted>/v1#token=<redacted>"
    bot = "bot123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
    assert redact_url(f"https://h/{bot}/send") == "https://h/<redacted>/send"
    assert redact_url("http://h/v1;api_key=abc12345/x") == "http://h/v1;api_key=<redacted>/x"
    assert redact_url("http://h/v1#abcdef") == "http://h/v1#<redacted>"
    assert url_secrets("http://h/key/sk%2Dab%2F12345/v1")[-1] == "sk-ab/12345"  # decoded too
    for plain in ("http://h/auth/v1", "http://h/oauth/chat/completions",
                  "https://h/openai/deployments/gpt-4o-mini-2024-07-18"):
        assert url_secrets(plain) == [] and redact_url(plain) == plain
    out = Scrubber(configured_secrets({"e": EndpointConfig(base_url=url)}, environ={})).scrub(
        f"HTTP 404: Unknown route POST /key/{key}/v1/chat/completions (#token={frag.upper()})")
    assert key not in out and frag.upper() not in out and out.count(REDACTED) == 2, out


def test_an_error_while_planning_does_not_quote_a_configured_key(tmp_path, monkeypatch, capsys):
    """Round 4: a custom metric's module that fails on import, quoting a request it
    made with the endpoint's key, was printed in the one-line error as it came:
    no scrubber is built before the pipeline runs."""
    from tests.conftest import write_cases
    from tests.pipeline_helpers import run_cli
    key, password = "sk-plan-" + "Hq2Wm9Zr4Tn8Bv0x", "cliPlanPassw0rd55"  # round 5: a URL's too
    monkeypatch.setenv("PLAN_KEY", key)
    (tmp_path / "plan_metrics.py").write_text(
        "import os\nraise RuntimeError('GET https://api.example/v1/models?key=' + "
        "os.environ['PLAN_KEY'] + ' as alice:" + password + " failed: 401')\n"
        "def m(sample):\n    return 1.0\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"endpoints:\n  llm: {{base_url: 'http://alice:{password}@127.0.0.1:9/v1', "
                   "api_key_env: PLAN_KEY}\n"
                   "bots:\n  - {name: b, type: chat, endpoint: llm, model: m}\n"
                   "metrics: [exact_match, m]\n"
                   "custom_metrics:\n  - {name: m, function: 'plan_metrics:m'}\n")
    cases = write_cases(str(tmp_path / "cases.parquet"), [{"question": "Q?"}])
    assert run_cli("--input", cases, "--output", str(tmp_path / "out"), "--config", str(cfg)) == 2
    err = capsys.readouterr().err
    assert "importing module 'plan_metrics' failed" in err and REDACTED in err, err
    assert key not in err and key[8:] not in err and password not in err


def test_log_records_and_warnings_of_a_process_with_secrets_are_scrubbed():
    """The hooks scrubber_for installs (see the Dask test in
    test_dask_cluster_e2e.py): a record's message, its exception text and a
    warning lose the secret; a clean exception is left to the handler's formatter."""
    import io
    import logging
    import warnings
    from transforms.remote import scrub
    secret = "sk-LOGtest-0123456789abc"
    scrub.remember([secret])
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    log = logging.getLogger("evalbeam.test.scrub")
    log.addHandler(handler)
    try:
        for text in (f"boom {secret}", "clean"):
            try:
                raise RuntimeError(text)
            except RuntimeError:
                log.exception("failed with %s", secret)
    finally:
        log.removeHandler(handler)
    assert secret not in buf.getvalue() and "RuntimeError: boom <redacted>" in buf.getvalue()
    assert "RuntimeError: clean" in buf.getvalue()
    shown_warnings = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        show = warnings.showwarning
        warnings.showwarning = scrub._scrubbed_warning(
            lambda m, c, f, n, file=None, line=None: shown_warnings.write(str(m)))
        try:
            warnings.warn(f"retrying with {secret}")
        finally:
            warnings.showwarning = show
    assert shown_warnings.getvalue() == "retrying with <redacted>"


@pytest.mark.parametrize("seed", SEEDS[:10])
def test_a_secret_encoded_in_part_or_three_times_over_is_scrubbed(seed):
    """Round 4: a server (or an HTML encoder) that escapes only a secret's
    punctuation (`ab&#x2d;cd&#x2d;...`, `&apos;`, `&sol;`), or a proxy that
    percent-encodes three times, left no run of 8 characters in any one form:
    the text went out as it came."""
    rng = random.Random(seed)
    secret = "-".join("".join(rng.choice(string.ascii_letters) for _ in range(5))
                      for _ in range(5)) + "/'="   # punctuation every 5 characters
    scrubber = Scrubber([secret])
    named = {"-": "&#x2d;", "/": "&sol;", "'": "&apos;", "=": "&#61;"}
    texts = ["".join(named.get(c, c) for c in secret),
             "".join(f"&#{ord(c)};" if not c.isalnum() else c for c in secret),
             quote(quote(quote(secret, safe=""), safe=""), safe="")]
    for text in texts:
        out = scrubber.scrub(f"error: «{text}» end")
        assert REDACTED in out and out.replace(REDACTED, "") == "error: «» end", (text, out)
    plain = "30% off &amp; R&amp;D, a%20b"  # nothing hidden: the text stays as it came
    assert scrubber.scrub(plain) == plain


def _raised_text(excinfo) -> str:
    """What a caller of the API sees of an exception: its message and the
    traceback Python prints (the chain of causes included)."""
    import traceback
    return "".join(traceback.format_exception(excinfo.value))


def test_evaluate_planning_errors_do_not_quote_a_key(tmp_path, monkeypatch):
    """Round 5: evaluate() (the Python API) raised a planning error as it came:
    a custom metric's module failing on import with a request that quotes the
    endpoint's key (from the environment, named in a config dict), or a base_url's
    literal credentials, was in the ConfigError's message. `evalbeam run` scrubs it."""
    import evalbeam
    from tests.pipeline_helpers import leaks
    key, password = "sk-apiPlan-" + "Zr4Tn8Bv0xHq2Wm9", "apiPlanPassw0rd77"
    monkeypatch.setenv("API_PLAN_KEY", key)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "api_plan_metrics.py").write_text(
        "import os\nraise RuntimeError('GET https://api.example/v1/models?key=' + "
        "os.environ['API_PLAN_KEY'] + ' as alice:" + password + " failed: 401')\n")
    config = {"endpoints": {"llm": {"base_url": f"http://alice:{password}@127.0.0.1:9/v1",
                                    "api_key_env": "API_PLAN_KEY"}},
              "bots": [{"name": "b", "type": "chat", "endpoint": "llm", "model": "m"}],
              "metrics": ["exact_match", "m"],
              "custom_metrics": [{"name": "m", "function": "api_plan_metrics:m"}]}
    with pytest.raises(ValueError) as err:
        evalbeam.evaluate([{"question": "Q?"}], config=config, output=tmp_path / "out",
                          runner="FnApiRunner", progress=False)
    text = _raised_text(err)
    assert "importing module 'api_plan_metrics' failed" in text and REDACTED in text, text
    assert leaks(text, key) == [] and leaks(text, password) == [], text


def test_evaluate_run_failures_do_not_quote_a_key(tmp_path, monkeypatch):
    """Round 5: a run that failed inside evaluate() raised the worker's exception as
    it came (the command line prints it scrubbed): its message quoted the key."""
    import evalbeam
    import pipeline.execute as ex
    from tests.pipeline_helpers import leaks
    key = "sk-apiRun-" + "Lm9Xw4Tn8Bv2q7Zr"
    monkeypatch.setenv("API_RUN_KEY", key)

    def boom(p, plan):
        raise RuntimeError("POST http://127.0.0.1:9/v1 failed: Authorization: Bearer "
                           + os.environ["API_RUN_KEY"])
    monkeypatch.setattr(ex, "build_pipeline", boom)
    config = {"endpoints": {"judge": {"base_url": "http://127.0.0.1:9/v1",
                                      "api_key_env": "API_RUN_KEY"}},
              "judge": {"endpoint": "judge", "model": "m"},
              "bots": [{"name": "recorded", "type": "precomputed"}],
              "metrics": ["faithfulness"]}
    with pytest.raises(RuntimeError) as err:
        evalbeam.evaluate([{"question": "Q?", "contexts": ["C."], "answer": "A."}],
                          config=config, output=tmp_path / "out", runner="FnApiRunner",
                          progress=False)
    text = _raised_text(err)
    assert "Bearer <redacted>" in text and leaks(text, key) == [], text


def test_a_custom_metric_s_secrets_are_written_nowhere(tmp_path, monkeypatch, capsys):
    """Round 5: a custom metric configured with its own key (options: {api_key_env:
    METRIC_KEY, token: <literal>}) whose details or error quote them: the writers'
    scrubbers knew only the endpoints' secrets, so scores/ (details, error), errors/
    and the report had both (the manifest redacts the literal by its key's name)."""
    from tests.conftest import write_cases
    from tests.pipeline_helpers import everything_written, leaks, read_rows, run_cli
    key, token = "sk-metricKEY-" + "Hq2Wm9Zr4Tn8", "metricTok-" + "Lm9Xw4Tn8Bv2q7"
    monkeypatch.setenv("METRIC_KEY", key)
    (tmp_path / "keyed_metrics.py").write_text(
        "import os\n"
        "def echo(sample, api_key_env, token):\n"
        "    if sample['question'].startswith('Q1'):\n"
        "        raise RuntimeError(f'401 for {os.environ[api_key_env]} / {token}')\n"
        "    return 0.5, {'sent': os.environ[api_key_env], 'token': token}\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n  - {name: recorded, type: precomputed}\nmetrics: [echo]\n"
                   "custom_metrics:\n  - {name: echo, function: 'keyed_metrics:echo', "
                   "needs: [answer, question], options: {api_key_env: METRIC_KEY, "
                   f"token: '{token}'}}}}\n")
    cases = write_cases(str(tmp_path / "cases.parquet"), [
        {"case_id": f"c{i}", "question": f"Q{i}?", "answer": "A."} for i in range(3)])
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--config", str(cfg), "--run-id", "m") == 0
    scores = read_rows(out, "scores")
    assert len(scores) == 3 and sum(s["error"] is not None for s in scores) == 1
    everything = everything_written(out, *capsys.readouterr())
    assert leaks(everything, key) == [] and leaks(everything, token) == []
    assert "METRIC_KEY" in everything  # the variable's name is no secret


def _escaped(secret: str) -> str:
    """Every character as \\uXXXX: JSON-escaped, as a server or a metric may write it."""
    return "".join(f"\\u{ord(c):04x}" for c in secret)


def test_a_secret_json_escaped_inside_details_is_scrubbed(tmp_path, monkeypatch, capfd):
    """QA round (secret routes): a key escaped as \\uXXXX in a judge's reason or in a
    custom metric's details was written: details is JSON text, which escapes the
    backslashes again (`\\\\u0073...`), a form the scrubber did not know, so
    scores.details held the key for any reader that parses it (and the call cache
    the judge's reply, doubled once more)."""
    from tests.conftest import SAMPLE_ROWS, write_cases
    from tests.fake_server import FakeOpenAI
    from tests.judge_script import ScriptedJudge
    from tests.pipeline_helpers import everything_written, read_rows, run_cli
    judge_key, metric_key = "sk-judgeKEY-" + "Pq7Rs2Tu9Vw4Xy", "mk-" + "Zr4Tn8Bv0xHq2Wm9Aa"
    monkeypatch.setenv("JUDGE_KEY", judge_key)
    monkeypatch.setenv("METRIC_KEY", metric_key)
    (tmp_path / "escaping_metrics.py").write_text(
        "import os\n"
        "def echo(sample, api_key_env):\n"
        "    key = os.environ[api_key_env]\n"
        "    return 0.5, {'sent': ''.join(f'\\\\u{ord(c):04x}' for c in key)}\n")
    judge = ScriptedJudge(overrides={"judge_relevance": lambda request, rule: json.dumps(
        {**rule, "reason": "you sent " + _escaped(judge_key)})})
    with FakeOpenAI() as server:
        server.set_chat_handler(judge)
        cfg = tmp_path / "c.yaml"
        cfg.write_text(
            f"endpoints:\n  judge: {{base_url: '{server.openai_base_url}', "
            "api_key_env: JUDGE_KEY}\n"
            "bots:\n  - {name: recorded, type: precomputed}\n"
            "judge: {endpoint: judge, model: j}\nmetrics: [judge_relevance, echo]\n"
            "custom_metrics:\n  - {name: echo, function: 'escaping_metrics:echo', "
            "options: {api_key_env: METRIC_KEY}}\n")
        cases = write_cases(str(tmp_path / "cases.parquet"), SAMPLE_ROWS[:2])
        out = str(tmp_path / "out")
        assert run_cli("--input", cases, "--output", out, "--config", str(cfg),
                       "--run-id", "j") == 0
    details = {r["metric"]: json.loads(r["details"]) for r in read_rows(out, "scores")}
    assert details["judge_relevance"]["reason"] == "you sent <redacted>"
    assert details["judge_relevance"]["secrets_scrubbed"] is True  # scrubbed as it arrived
    assert details["echo"]["sent"] == "<redacted>"
    everything = everything_written(out, *capfd.readouterr())
    assert leaks(everything, judge_key) == [] and leaks(everything, metric_key) == []


def test_a_scrubbed_details_stays_json_and_says_so(tmp_path, monkeypatch, capfd):
    """QA round (secret routes): details is JSON text, scrubbed as one text; a key
    hidden behind entities (`sk&#x2d;...`) is scrubbed in the text decoded, so a
    `%22` or `&quot;` elsewhere in it became a quote and scores.details was no
    longer JSON (a warehouse's JSON functions reject it). Now it is scrubbed
    value by value, keys too, and a row that held a secret says so in details."""
    from tests.conftest import write_cases
    from tests.pipeline_helpers import everything_written, read_rows, run_cli
    key = "mk-" + "Zr4Tn8B-v0xHq2W-m9Aa7Q"  # no 8 characters without a "-"
    monkeypatch.setenv("METRIC_KEY", key)
    (tmp_path / "hiding_metrics.py").write_text(
        "import os\n"
        "def hide(sample, api_key_env):\n"
        "    key = os.environ[api_key_env]\n"
        "    if sample['case_id'] == 'c0':\n"
        "        return 0.5, {'reason': key.replace('-', '&#x2d;'), key: 'as a key',\n"
        "                     'asked': 'say %22hi%22 or &quot;hi&quot;'}\n"
        "    if sample['case_id'] == 'c1':\n"
        "        raise RuntimeError('refused ' + key)\n"
        "    return 1.0, {'reason': 'nothing to hide'}\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n  - {name: recorded, type: precomputed}\nmetrics: [hide]\n"
                   "custom_metrics:\n  - {name: hide, function: 'hiding_metrics:hide', "
                   "options: {api_key_env: METRIC_KEY}}\n")
    cases = write_cases(str(tmp_path / "cases.parquet"), [
        {"case_id": f"c{i}", "question": "Q?", "answer": "A."} for i in range(3)])
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--config", str(cfg), "--run-id", "h") == 0
    rows = {r["case_id"]: r for r in read_rows(out, "scores")}
    details = {case: json.loads(r["details"]) for case, r in rows.items()}
    assert details["c0"] == {"<redacted>": "as a key", "asked": "say %22hi%22 or &quot;hi&quot;",
                             "reason": "<redacted>", "secrets_scrubbed": True}
    assert rows["c0"]["value"] == 0.5
    assert details["c1"] == {"secrets_scrubbed": True} and rows["c1"]["value"] is None
    assert "<redacted>" in rows["c1"]["error"]
    assert details["c2"] == {"reason": "nothing to hide"}
    assert leaks(everything_written(out, *capfd.readouterr()), key) == []


HF_TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQr1234567890stUv"  # a name by its characters: [A-Za-z0-9_]


@pytest.mark.parametrize("where", [
    "endpoints:\n  llm: {base_url: 'http://127.0.0.1:9/v1', api_key_env: NAME}\n",
    "endpoints:\n  llm: {base_url: 'http://127.0.0.1:9/v1', headers: {X-Id: 'Bearer ${NAME}'}}\n"])
def test_a_token_pasted_where_a_variable_s_name_goes_is_not_printed(tmp_path, capsys, where):
    """Round 5: a Hugging Face token (or a Stripe sk_live_ key) is made of the
    characters of a variable's name, so `api_key_env: hf_...` or `${hf_...}` in a
    header passed the NAME check, and the run stopped with 'environment variable
    hf_... (endpoints.llm.api_key_env) is not set': the token on stderr."""
    from tests.conftest import write_cases
    from tests.pipeline_helpers import leaks, run_cli
    cfg = tmp_path / "c.yaml"
    cfg.write_text(where.replace("NAME", HF_TOKEN) +
                   "bots:\n  - {name: b, type: chat, endpoint: llm, model: m}\n")
    cases = write_cases(str(tmp_path / "cases.parquet"), [{"question": "Q?"}])
    assert run_cli("--input", cases, "--output", str(tmp_path / "out"), "--config", str(cfg)) == 2
    err = capsys.readouterr().err
    assert "is not set" in err and leaks(err, HF_TOKEN) == [], err


def test_a_token_in_a_metric_option_named_like_a_variable_is_not_in_the_manifest(tmp_path):
    """Round 5: the manifest keeps the values of `*_env` keys (names, not keys); a
    token pasted as a custom metric's options.api_key_env was written as it was."""
    from tests.conftest import write_cases
    from tests.pipeline_helpers import everything_written, leaks, run_cli
    (tmp_path / "named_metrics.py").write_text(
        "def m(sample, api_key_env):\n    return 1.0\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n  - {name: recorded, type: precomputed}\nmetrics: [m]\n"
                   "custom_metrics:\n  - {name: m, function: 'named_metrics:m', "
                   f"options: {{api_key_env: {HF_TOKEN}}}}}\n")
    cases = write_cases(str(tmp_path / "cases.parquet"), [{"question": "Q?", "answer": "A."}])
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--config", str(cfg), "--run-id", "n") == 0
    assert leaks(everything_written(out), HF_TOKEN) == []


def test_an_exception_that_prints_its_attributes_is_scrubbed_too():
    """Round 5: scrub_exception scrubbed an exception's args, but one whose text is
    made from its attributes (CalledProcessError prints .cmd, an HTTP error its
    .request) kept them: evaluate() raised it with the key in its message."""
    import subprocess
    from transforms.remote import scrub
    key = "sk-attrKEY-" + "Zr4Tn8Bv0xHq2Wm9"
    scrub.remember([key])
    exc = subprocess.CalledProcessError(7, ["curl", "-H", f"Authorization: Bearer {key}"],
                                        output=f"echo {key}")
    scrub.scrub_exception(exc)
    assert key not in str(exc) and key not in str(exc.output) and "Bearer <redacted>" in str(exc)


SIG, FILE_PASSWORD = "SigSecret" + "0123456789abc", "KnowPassw0rd" + "99"


@pytest.mark.parametrize("config", [
    "bots:\n  - {name: f, type: faq_match, faq: 'gs://bkt/faq.parquet?X-Goog-Signature=SIG'}\n",
    "endpoints:\n  llm: {base_url: 'http://127.0.0.1:9/v1'}\nbots:\n  - {name: g, type: "
    "full_context, endpoint: llm, model: m, knowledge: 'https://alice:PASSWORD@h/k.md?sig=SIG'}\n",
    "endpoints:\n  llm: {base_url: 'http://127.0.0.1:9/v1'}\nbots:\n  - {name: r, type: "
    "precomputed}\njudge: {endpoint: llm, model: m, prompts: {judge_relevance: "
    "'https://h/p.txt?token=SIG'}}\n"])
def test_a_file_url_s_credentials_are_not_printed(tmp_path, capsys, config):
    """Round 5: a FAQ, knowledge or prompt file given as a URL with credentials (a
    signed URL's signature, userinfo) was quoted whole in the one-line error when
    it could not be read ('cannot read knowledge https://alice:<password>@...');
    the manifest already redacted it, the scrubber knew only base_url's."""
    from tests.conftest import write_cases
    from tests.pipeline_helpers import leaks, run_cli
    cfg = tmp_path / "c.yaml"
    cfg.write_text(config.replace("SIG", SIG).replace("PASSWORD", FILE_PASSWORD))
    cases = write_cases(str(tmp_path / "cases.parquet"), [{"question": "Q?", "answer": "A."}])
    assert run_cli("--input", cases, "--output", str(tmp_path / "out"), "--config", str(cfg)) == 2
    err = capsys.readouterr().err
    assert REDACTED in err and leaks(err, SIG) == [] and leaks(err, FILE_PASSWORD) == [], err


def test_what_a_metric_prints_is_scrubbed_on_the_console_and_in_a_detached_run_s_log(tmp_path):
    """Round 5: a custom metric that prints its key (print(), sys.stderr.write) put
    it on the console as it was, and a --detach run wrote it to
    runs/<id>/log.<attempt>.txt: only log records and warnings were scrubbed."""
    import glob
    import time
    from tests.conftest import write_cases
    from tests.pipeline_helpers import everything_written, leaks, run_cli_subprocess
    key = "sk-printKEY-" + "Lm9Xw4Tn8Bv2q7Zr"
    (tmp_path / "loud_metrics.py").write_text(
        "import os, sys\n"
        "def loud(sample, api_key_env):\n"
        "    print('using key', os.environ[api_key_env])\n"
        "    sys.stderr.write('raw ' + os.environ[api_key_env] + '\\n')\n"
        "    return 1.0\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n  - {name: r, type: precomputed}\nmetrics: [loud]\ncustom_metrics:\n"
                   "  - {name: loud, function: 'loud_metrics:loud', options: {api_key_env: LOUD}}\n")
    cases = write_cases(str(tmp_path / "cases.parquet"), [{"question": "Q?", "answer": "A."}])
    env = {"LOUD": key}
    fg = run_cli_subprocess("--input", cases, "--output", str(tmp_path / "fg"), "--config",
                            str(cfg), "--run-id", "fg", env=env)
    assert fg.returncode == 0 and "using key <redacted>" in fg.stdout + fg.stderr
    assert leaks(fg.stdout + fg.stderr, key) == []
    bg = run_cli_subprocess("--input", cases, "--output", str(tmp_path / "bg"), "--config",
                            str(cfg), "--run-id", "bg", "--detach", env=env)
    assert bg.returncode == 0
    for _ in range(300):
        if os.path.exists(tmp_path / "bg" / "runs" / "bg" / "manifest.json"):
            break
        time.sleep(0.5)
    time.sleep(1)  # the child's last lines
    log = "".join(open(p).read() for p in glob.glob(str(tmp_path / "bg" / "runs" / "bg" / "log.*")))
    assert "using key <redacted>" in log, log[-2000:]
    assert leaks(everything_written(str(tmp_path / "bg"), bg.stdout, bg.stderr), key) == []


def test_a_scrubbed_stream_scrubs_writelines_too():
    """writelines went through __getattr__ to the raw stream: a list of lines
    holding the key reached the console as it was."""
    import io
    from transforms.remote.scrub import ScrubbedStream, remember
    key = "sk-linesKEY-" + "Qx7Lm2Wv9Tb4Rn8Z"
    remember([key])
    out = io.StringIO()
    stream = ScrubbedStream(out)
    stream.writelines([f"a {key}\n", "b\n"])
    stream.write(f"c {key}\n")
    assert key not in out.getvalue() and out.getvalue().count("<redacted>") == 2


def test_a_secret_written_in_parts_is_scrubbed_whole():
    """A stream scrubbed each write on its own: print(key[:5], end="") then
    print(key[5:]) showed the first five characters (too few to be a run of
    the key) and a key cut into 8 + 9 characters of its hex form. A tail that
    may begin a secret now waits for the next write; ordinary text still goes
    out at once."""
    import io
    from transforms.remote.scrub import ScrubbedStream, remember
    key = "sk-partKEY-Qx7Lm2"
    remember([key])
    out = io.StringIO()
    stream = ScrubbedStream(out)
    print(key[:5], end="", file=stream)
    print(key[5:], file=stream)
    hexed = key.encode().hex()
    stream.write("dump " + hexed[:7])
    stream.write(hexed[7:] + "\n")
    stream.write("header: " + key[:3])
    stream.write(key[3:9])
    stream.write(key[9:] + "\n")
    assert leaks(out.getvalue(), key) == [] and key[:5] not in out.getvalue(), out.getvalue()
    assert out.getvalue().count("<redacted>") == 3, out.getvalue()
    stream.write("total: 3 rows\n")
    assert out.getvalue().endswith("total: 3 rows\n")
    stream.write("row Qx7.")  # no beginning of a secret: not held
    assert out.getvalue().endswith("row Qx7.")
    stream.write("progress sk-p")  # may begin the key: held, flush() too
    stream.flush()
    assert out.getvalue().endswith("row Qx7.progress ")
    stream.write("ress: 40%\n")  # ... until what follows shows it is no key
    assert out.getvalue().endswith("progress sk-press: 40%\n")


def test_a_key_any_env_option_names_is_known_before_the_config_is_read(tmp_path):
    """Before a config is parsed (remember_config_secrets: what an error while
    it is read or planned may quote) only api_key_env's and ${VAR}s' values
    were known, not those of another `*_env` option the config's scrubbers
    take (a custom metric's token_env), in a YAML file or evaluate()'s dict."""
    from transforms.remote.scrub import process_scrubber, remember_config_secrets
    env = {"EB_YAML_TOKEN": "ty-" + "Pq71Zs", "EB_DICT_TOKEN": "td-" + "Wm52Kv"}
    (tmp_path / "c.yaml").write_text(
        "custom_metrics:\n  - {name: m, function: 'x:y', options: {token_env: EB_YAML_TOKEN}}\n")
    remember_config_secrets(str(tmp_path / "c.yaml"), env)
    remember_config_secrets({"custom_metrics": [{"name": "m", "function": "x:y",
                                                 "options": {"Auth_Env": "EB_DICT_TOKEN"}}]}, env)
    said = process_scrubber().scrub(f"login with {env['EB_YAML_TOKEN']} or {env['EB_DICT_TOKEN']}")
    assert said == "login with <redacted> or <redacted>"


def test_a_variable_too_short_to_scrub_is_named_in_a_note(tmp_path, monkeypatch):
    """A value read from the environment shorter than MIN_SECRET was dropped by
    the scrubber without a word. It still is (a 3-letter value would redact
    ordinary words), but the run names the variable in a note (stderr and the
    manifest); a longer value under any option name is scrubbed."""
    from pipeline.cli import _parser
    from pipeline.plan import make_plan
    from tests.conftest import write_cases
    monkeypatch.setenv("EB_SHORT_KEY", "ab1")
    monkeypatch.setenv("EB_PLAIN_VALUE", "Zx91qa")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "c.yaml").write_text(
        "endpoints:\n  llm: {base_url: 'http://127.0.0.1:9', api_key_env: EB_SHORT_KEY}\n"
        "metrics: [exact_match, m]\ncustom_metrics:\n  - {name: m, function: 'plain_metric:score',"
        " options: {region: '${EB_PLAIN_VALUE}'}}\n")
    (tmp_path / "plain_metric.py").write_text("def score(sample, region):\n    return 1.0\n")
    cases = write_cases(str(tmp_path / "c.parquet"), [{"case_id": "a", "question": "q?"}])
    plan = make_plan(_parser().parse_args(["run", "--input", cases, "--output",
                                           str(tmp_path / "out"), "--config",
                                           str(tmp_path / "c.yaml")]))
    notes = [n for n in plan.info.notes if "EB_SHORT_KEY" in n]
    assert notes and "not scrubbed" in notes[0] and "ab1" not in notes[0], plan.info.notes
    assert not any("EB_PLAIN_VALUE" in n for n in plan.info.notes)
    from transforms.remote.scrub import process_scrubber
    assert process_scrubber().scrub("a Zx91qa b") == "a <redacted> b"


def test_only_a_tail_that_may_begin_a_secret_is_held():
    """A stream held back any tail found inside a secret, so text ending in a
    letter of a key waited for the next newline; only a beginning waits."""
    from transforms.remote.scrub import Scrubber
    scrubber = Scrubber(["sk-partKEY-Qx7Lm2"])
    assert scrubber.held("row Qx") == 0  # inside the key, not its beginning
    assert scrubber.held("header: sk-pa") == len("sk-pa")
    assert scrubber.held("dump " + "sk-partKEY".encode().hex()[:6]) == 6  # its hex form's
    assert scrubber.held("sk-pa\nrow") == 0  # nothing before the last newline


_EXITING_CHILD = """
import multiprocessing, os, sys
from transforms.remote.scrub import remember
remember([os.environ["EB_TAIL_KEY"]])  # a process that scrubs for good (a worker's)

def work():
    sys.stdout.write("rows done")  # ordinary text, no newline: the user must see it
    sys.stdout.flush()
    sys.stdout.write(" | key " + os.environ["EB_TAIL_KEY"][:5])  # a key's beginning: held
    sys.stderr.write("note " + os.environ["EB_TAIL_KEY"][:6])

if sys.argv[1] == "multiprocessing":  # as a Dask nanny's worker: flushed, then os._exit
    child = multiprocessing.get_context("fork").Process(target=work)
    child.start()
    child.join()
    os._exit(3)
work()
if sys.argv[1] == "os._exit":
    os._exit(3)
sys.exit(3)
"""


@pytest.mark.parametrize("how", ["os._exit", "sys.exit", "multiprocessing"])
def test_a_held_tail_is_written_masked_when_the_process_ends(tmp_path, how):
    """A ScrubbedStream's held tail (it may begin a key) was lost when the
    process left through os._exit (our command line and stopping's exits, a
    Dask worker's) with the text before it, and written as it was when Python
    flushed at a normal exit or multiprocessing flushed a worker process's
    streams before its os._exit: the key's first characters. Now the tail is
    written with what may begin a key <redacted>, before any exit."""
    import subprocess
    import sys
    from tests.conftest import ROOT
    key = "sk-tailKEY-" + "Zq8Wm3Lx7Vb2"
    proc = subprocess.run([sys.executable, "-c", _EXITING_CHILD, how], cwd=ROOT, text=True,
                          capture_output=True, env={**os.environ, "EB_TAIL_KEY": key},
                          timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "rows done | key <redacted>", proc.stdout
    assert proc.stderr == "note <redacted>", proc.stderr


def test_a_key_printed_a_few_characters_per_flush_is_cut_at_its_8th():
    """flush() wrote a held tail (a key's first 7 characters: too few to be a
    run of it) as it was, and the next write began afresh: a key printed 7
    characters at a time, flushed after each (print(part, end="", flush=True)),
    reached the console whole. flush() now writes all but the held tail
    (it stays held until the key is whole): <redacted>."""
    import io
    from transforms.remote.scrub import ScrubbedStream, remember
    key = "sk-flushKEY-" + "Rt5Wn8Qz3Lv6Hc1"
    remember([key])
    out = io.StringIO()
    stream = ScrubbedStream(out)
    stream.write("key: ")
    for i in range(0, len(key), 7):
        print(key[i:i + 7], end="", file=stream, flush=True)
    print(" done", file=stream)
    assert leaks(out.getvalue(), key) == [] and out.getvalue().endswith("key: <redacted> done\n"), \
        out.getvalue()
    print("row 1", end="", file=stream, flush=True)  # ordinary text still goes out at flush()
    assert out.getvalue().endswith("row 1")


@pytest.mark.parametrize("seed", range(20))
def test_a_key_written_in_random_parts_and_flushes_never_shows_a_run(seed):
    """The same, for random cuts and flushes: never a run of 8 characters of
    the key, and the text after it always written."""
    import io
    from transforms.remote.scrub import ScrubbedStream, remember
    key = "sk-fuzzKEY-" + "Rt5Wn8Qz3Lv6Hc1"
    remember([key])
    rng = random.Random(seed)
    for _ in range(50):
        text = rng.choice(["a ", "sk-", ""]) + key + rng.choice([" done\n", "", " sk-fu"]) + "end\n"
        out = io.StringIO()
        stream = ScrubbedStream(out)
        at = 0
        while at < len(text):
            step = rng.randint(1, 9)
            stream.write(text[at:at + step])
            at += step
            if rng.random() < 0.5:
                stream.flush()
        assert leaks(out.getvalue(), key) == [] and out.getvalue().endswith("end\n"), \
            (text, out.getvalue())


def test_an_exception_that_keeps_a_reply_as_bytes_is_scrubbed_too(tmp_path, monkeypatch):
    """A custom metric's client error that keeps the server's reply as bytes
    (as HTTP clients keep a response's content) and prints it in __str__:
    evaluate()'s exception said <redacted>, but the traceback a caller prints
    (its chain of causes) decoded the bytes and showed the key: scrub_exception
    scrubbed text attributes only."""
    import evalbeam
    key = "sk-bytesKEY-" + "Jd7Wq2Nx5Rb8Tc4"
    monkeypatch.setenv("EB_BYTES_KEY", key)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "bytes_metric.py").write_text(
        "import os\n"
        "class ReplyError(BaseException):\n"
        "    def __init__(self, content):\n"
        "        super().__init__()\n"
        "        self.content = content\n"
        "    def __str__(self):\n"
        "        return 'server said ' + self.content.decode()\n"
        "def score(sample, api_key_env):\n"
        "    reply = b'{\"error\": \"bad key ' + os.environ[api_key_env].encode() + b'\"}'\n"
        "    raise ReplyError(reply) from ValueError(reply)\n")
    config = {"bots": [{"name": "recorded", "type": "precomputed"}], "metrics": ["m"],
              "custom_metrics": [{"name": "m", "function": "bytes_metric:score",
                                  "options": {"api_key_env": "EB_BYTES_KEY"}}]}
    with pytest.raises(BaseException) as err:
        evalbeam.evaluate([{"question": "Q?", "answer": "A."}], config=config,
                          output=tmp_path / "out", runner="FnApiRunner", progress=False)
    text = _raised_text(err)
    assert "bad key <redacted>" in text and leaks(text, key) == [], text
