"""Scrubber: removes every configured secret from text that is written anywhere.

A hostile or careless server can echo a key back in many shapes: as it is, in
upper case, URL-encoded, JSON-escaped, base64-encoded, or only in part (an
error text cut after 300 characters keeps a prefix). The scrubber is built
from the secret values of the run's endpoints (API keys and `${VAR}` header
values, read from the environment where it is built, i.e. on the worker: the
values never travel inside the pipeline graph) and replaces every run of at
least MIN_RUN characters of a secret, in each of these encodings (JSON with "/"
escaped as PHP writes it, too; and in hex,
every byte as %XX or \\xXX, every character as \\uXXXX, HTML-escaped, every
character as an HTML entity &#NNN; or &#xHH;, percent-encoded twice; and each
of them inside a JSON text once or more over, its escapes doubled: a metric's
details, a reply in the call cache), compared case-insensitively (ASCII), by
`<redacted>`.

It also makes text writable: a lone surrogate (half an emoji in a JSON
escape, "\\ud83d") cannot be encoded as UTF-8 and would abort a Parquet
writer, so it becomes U+FFFD.
"""
from __future__ import annotations

import atexit
import base64
import contextlib
import functools
import html
import html.entities
import json
import logging
import os
import re
import sys
import threading
import warnings
import weakref
from typing import Any, Iterable, Iterator, Mapping
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit, urlunsplit

REDACTED = "<redacted>"
MIN_RUN = 8        # a shared run of this many characters of a secret is scrubbed
MIN_SECRET = 4     # shorter values would redact ordinary words; they are not scrubbed
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# a text where ${VAR} is read (a header's value, an http bot's body), token by token:
# `$$` a literal `$`, `${VAR}` (group 1) the variable, `$VAR` (group 2) a reference
# without braces, which the config refuses wherever it stands
ENV_TEXT = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
# a header (or config key) whose literal value is a credential: Authorization,
# Proxy-Authorization, X-Auth, X-Api-Key, Cookie, X-Signature, ... (not "session": an
# http bot's body {session: "eval-{case_id}"} is no secret)
SECRET_NAME = re.compile(r"key|token|secret|passw|auth|cookie|credential|signature",
                         re.IGNORECASE)
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _lower(text: str) -> str:
    """ASCII lower case with the same length (str.lower may change the length)."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def _base64_cores(secret: bytes) -> list[str]:
    """The parts of any base64 text that are fixed by `secret` alone, for each of
    the three alignments it can have inside a longer encoded string."""
    cores = []
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * shift + secret).decode("ascii").rstrip("=")
            start = 4 if shift else 0                         # the group mixed with the prefix
            end = len(text) - ((shift + len(secret)) % 3 and 4)  # a group mixed with what follows
            if end - start >= 4:
                cores.append(text[start:end])
    return cores


def _per_char(secret: str, encode, run: int) -> tuple[str, int]:
    """(every character of the secret encoded, the fewest characters of that
    text `run` characters of the secret take): for encodings of varying width."""
    widths = [len(encode(c)) for c in secret]
    return "".join(map(encode, secret)), min(sum(widths[i:i + run])
                                             for i in range(len(widths) - run + 1))


def encoded_forms(secret: str) -> list[tuple[str, int]]:
    """(form, shortest run that counts) for every encoding scrubbed, lower-cased."""
    raw = secret.encode("utf-8")
    run = min(MIN_RUN, len(secret))
    forms = [(secret, run), (json.dumps(secret)[1:-1], run),
             (json.dumps(secret)[1:-1].replace("/", "\\/"), run),  # PHP's json_encode: \/
             (quote(secret, safe=""), run),
             (quote_plus(secret, safe=""), run),
             _per_char(secret, lambda c: quote(quote(c, safe=""), safe=""), run),  # twice
             _per_char(secret, html.escape, run),                   # &quot; &amp; &lt; &#x27;
             _per_char(secret, lambda c: f"&#{ord(c)};", run),      # HTML entities, decimal
             _per_char(secret, lambda c: f"&#x{ord(c):x};", run),   # ... and hex
             ("".join(f"%{b:02x}" for b in raw), 3 * run),       # every byte percent-encoded
             ("".join(f"%25{b:02x}" for b in raw), 5 * run),     # ... twice
             ("".join(f"\\x{b:02x}" for b in raw), 4 * run),     # every byte \x-escaped
             (raw.hex(), 2 * run),                                 # hex (a debug dump)
             ("".join(f"\\u{ord(c):04x}" for c in secret), 6 * run)]  # every char \u-escaped
    forms += [(core, min(len(core), -(-4 * run // 3))) for core in _base64_cores(raw)]
    seen, out = set(), []
    for form, n in forms:
        form = _lower(form)
        if form not in seen:
            seen.add(form)
            out.append((form, min(n, len(form))))
    return out


class _Form:
    """One encoded form: blocks of it to search for, and where they sit in it.

    Any run of >= n characters of the form contains one of its aligned blocks
    of b = (n + 1) // 2 characters, so finding the blocks finds every run."""

    __slots__ = ("text", "n", "blocks")

    def __init__(self, text: str, n: int):
        self.text, self.n = text, n
        b = max(1, (n + 1) // 2)
        self.blocks: dict[str, list[int]] = {}
        for at in range(0, len(text) - b + 1, b):
            self.blocks.setdefault(text[at:at + b], []).append(at)

    def runs(self, low: str) -> Iterable[tuple[int, int]]:
        """(start, end) in low of every run of >= n characters shared with the form."""
        f = self.text
        for block, offsets in self.blocks.items():
            hit = low.find(block)
            while hit >= 0:
                for at in offsets:
                    left = 0
                    while left < min(hit, at) and low[hit - left - 1] == f[at - left - 1]:
                        left += 1
                    right = len(block)
                    while (hit + right < len(low) and at + right < len(f)
                           and low[hit + right] == f[at + right]):
                        right += 1
                    if left + right >= self.n:
                        yield hit - left, hit + right
                hit = low.find(block, hit + 1)


def writable(text: str) -> str:
    """Text that encodes as UTF-8: lone surrogates become U+FFFD."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


_BACKSLASHES = re.compile(r"\\{2,}")


def _collapsed(low: str) -> tuple[str, list[int]]:
    """The text with every run of backslashes as one, and where each of its
    characters (and its end) is in the text. A JSON text inside another (a
    metric's details holding a reason, a judge's reply in the call cache, a
    repr) doubles every escape at each level: `\\\\u0073...` reads `\\u0073...`
    once collapsed, a form the scrubber knows, at no cost to other texts."""
    parts, where, pos = [], [], 0
    for run in _BACKSLASHES.finditer(low):
        parts.append(low[pos:run.start() + 1])
        where.extend(range(pos, run.start() + 1))
        pos = run.end()
    parts.append(low[pos:])
    where.extend(range(pos, len(low) + 1))
    return "".join(parts), where


class Scrubber:
    """scrub(text) -> text without any configured secret; also for nested data."""

    def __init__(self, secrets: Iterable[str] = ()):
        values = sorted({s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET})
        self.secrets = tuple(values)
        self._forms = [_Form(f, n) for s in values for f, n in encoded_forms(s)]
        self._shortest = min((f.n for f in self._forms), default=0)
        self._blocks = sorted({b for f in self._forms for b in f.blocks})
        # a quick "no block anywhere" test: one regex is fastest on short texts,
        # str.__contains__ per block on long ones
        self._any = re.compile("|".join(map(re.escape, self._blocks))) if self._blocks else None
        # what may hide a secret's character: a numeric entity, a %XX escape, or a
        # named entity of one of its characters (&apos;, &sol;; not &amp; in
        # every HTML text unless a secret holds "&")
        chars = {c for v in values for c in v if not c.isalnum()}
        names = sorted(n for n, c in html.entities.html5.items() if c in chars)
        self._escaped = re.compile("|".join([r"&#", r"%[0-9a-fA-F]{2}"] + [
            "&" + re.escape(n) for n in names]))

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def scrub(self, text: str, hits: list | None = None) -> str:
        """The text with every run of a secret replaced by <redacted>, and writable;
        each text that held a secret adds an item to `hits`. A text that holds a
        secret only once its HTML entities and %XX escapes are decoded (encoded in
        part, `sk&#x2d;ab&#x2d;...`, `&apos;`, `&sol;`, or three times over) is
        given decoded, scrubbed."""
        out = self._scrub_once(text, hits)
        for _ in range(3):
            if not self._forms or not self._escaped.search(out):
                break
            decoded = html.unescape(unquote(out))
            if decoded == out:
                break
            again = self._scrub_once(decoded, hits)
            if again == decoded:  # nothing hidden: the text stays as it came
                break
            out = again
        return out

    def _scrub_once(self, text: str, hits: list | None = None) -> str:
        if not self._forms or len(text) < self._shortest:
            return writable(text)
        low = _lower(text)
        spans = self._spans(low)
        if "\\\\" in low:  # JSON inside JSON: a secret's escapes doubled, once or more
            view, where = _collapsed(low)
            spans = sorted(spans + [(where[start], where[end])
                                    for start, end in self._spans(view)])
        if not spans:
            return writable(text)
        if hits is not None:
            hits.append(len(spans))
        merged: list[list[int]] = []
        for start, end in spans:
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        out, pos = [], 0
        for start, end in merged:
            out += [text[pos:start], REDACTED]
            pos = end
        out.append(text[pos:])
        return writable("".join(out))

    def _spans(self, low: str) -> list[tuple[int, int]]:
        """(start, end) of every run of a secret's form in the lower-cased text."""
        if not (self._any.search(low) if len(low) < 256 else any(b in low for b in self._blocks)):
            return []
        return sorted(span for form in self._forms for span in form.runs(low))

    def held(self, text: str) -> int:
        """How many of the text's last characters (none before its last newline)
        may begin a secret that the next write ends: the longest tail that is a
        beginning of a secret in one of its forms (a stream holds them back)."""
        low, best = _lower(text), 0
        limit = len(low) - (low.rfind("\n") + 1)
        for form in self._forms:
            for k in range(min(limit, len(form.text) - 1), best, -1):
                if low.endswith(form.text[:k]):
                    best = k
                    break
        return best

    def last_words(self, text: str) -> str:
        """The text scrubbed as the last a stream writes (nothing follows it to
        end a secret it begins): a tail that may begin a secret (held) is
        <redacted>, as a beginning of a key too short to be a run is still one."""
        keep = len(text) - self.held(text)
        return self.scrub(text[:keep]) + (REDACTED if keep < len(text) else "")

    def scrub_value(self, value: Any, hits: list | None = None, keys: bool = False) -> Any:
        """Every string value inside dicts, lists and tuples scrubbed (keys are
        names of fields, not data: they stay, so a reply still parses; with
        `keys`, data written as JSON, they are scrubbed too); bytes
        as UTF-8 (an exception keeps a server's reply so and prints it
        decoded), changed only when they held a secret."""
        if isinstance(value, str):
            return self.scrub(value, hits)
        if isinstance(value, bytes):
            found: list = []
            clean = self.scrub(value.decode("utf-8", "replace"), found)
            if hits is not None:
                hits += found
            return clean.encode("utf-8") if found else value
        if isinstance(value, Mapping):
            return {self.scrub(k, hits) if keys and isinstance(k, str) else k:
                    self.scrub_value(v, hits, keys) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            if value and all(type(v) in (float, int) for v in value):
                return value  # a vector: no text inside
            return type(value)(self.scrub_value(v, hits, keys) for v in value)
        return value


# a path segment that names what follows it: /key/<secret>/v1, /api-token/<secret>
SECRET_SEGMENT = re.compile(r"[a-z_.-]*(key|token|secret|passw\w*|auth|credentials?|signature)s?",
                            re.IGNORECASE)


def _token_like(segment: str, named: bool) -> bool:
    """Whether a path segment holds a credential: after a segment naming one
    (/key/...), any segment that is not a short plain word (v1, chat); else
    one of >= 20 characters mixing upper case, lower case and digits
    (/bot<token>/, a webhook's /services/T0/B0/<token>; not gpt-4o-mini-2024-07-18)."""
    if named:
        return len(segment) >= MIN_SECRET and not (segment.isalpha() and segment.islower())
    return (len(segment) >= 20 and any(c.isdigit() for c in segment)
            and any(c.isupper() for c in segment) and any(c.islower() for c in segment))


_ALNUM_RUN = re.compile(r"[A-Za-z0-9]{16,}")


def token_words(value: str) -> list[str]:
    """The words of a header's value that are tokens whatever the header's name
    (X-Access: <token>): 16+ letters and digits in a row, mixing upper case, lower
    case and digits (not eu-west-1, Qwen2.5-72B-Instruct or a User-Agent)."""
    return [w for w in value.split() if _ALNUM_RUN.search(w) and any(c.isdigit() for c in w)
            and any(c.isupper() for c in w) and any(c.islower() for c in w)]


def key_like_name(name: Any) -> bool:
    """A variable's name that is a key pasted in its place: a Hugging Face token
    (hf_...) or a Stripe key (sk_live_...) is made of a name's characters, but is
    token-like (20+ characters mixing cases and digits; OPENAI_API_KEY is not).
    Such a "name" is a secret itself: scrubbed, redacted, never quoted."""
    return isinstance(name, str) and _token_like(name, named=False)


def path_secrets(path: str) -> list[str]:
    """Credentials in a URL path: a segment after one that names it, a
    token-like segment, and the value of `name=value` (or `;name=value`)
    parts whose name is a secret's."""
    found, named = [], False
    for segment in path.split("/"):
        head, *params = segment.split(";")
        for part in [head] + params:
            name, eq, value = part.partition("=")
            if eq and value and SECRET_NAME.search(name):
                found.append(value)
        if not any("=" in p for p in [head] + params) and _token_like(head, named):
            found.append(head)
        named = bool(SECRET_SEGMENT.fullmatch(head))
    return found


def _fragment_secrets(fragment: str) -> list[str]:
    """A fragment is never sent, but a config's is written: its values
    (#token=...), or all of it when it is no list of name=value."""
    if "=" not in fragment:
        return [fragment] if len(fragment) >= MIN_SECRET else []
    return [p.partition("=")[2] for p in re.split(r"[&;]", fragment) if p.partition("=")[2]]


def shown(value: Any) -> str:
    """A wrong value as an error message may quote it: a number, a boolean,
    null and a text of at most MIN_RUN characters as written; a longer text
    (a key pasted where `timeout_s` goes) or a list or mapping by its kind
    and length only, as it may hold a secret that no scrubber knows of."""
    if value is None or isinstance(value, (bool, int, float)) or (
            isinstance(value, str) and len(value) <= MIN_RUN):
        return repr(value)
    if isinstance(value, str):
        return f"a text of {len(value)} characters (not shown)"
    try:
        return f"a {type(value).__name__} of {len(value)} items (not shown)"
    except TypeError:
        return f"a {type(value).__name__} (not shown)"


def url_secrets(url: Any) -> list[str]:
    """Credentials written inside a URL: its userinfo (as written and decoded,
    `user:password`, the password alone, a user alone when it is a token), the
    HTTP Basic credential a client derives from it (base64 of user:password,
    which a server may echo), every query value (`?key=...`), the credentials
    in its path (see path_secrets) and its fragment's values."""
    if not isinstance(url, str) or "://" not in url:
        return []
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:  # not a URL after all (a bad port, brackets)
        return []
    found = []
    if user is not None or password is not None:
        userinfo = parts.netloc.rpartition("@")[0]
        found.append(userinfo)
        plain_user, plain_password = unquote(user or ""), unquote(password or "")
        if password is None:
            found.append(plain_user)  # https://TOKEN@host
        else:
            pair = f"{plain_user}:{plain_password}"
            found += [pair, plain_password, password,
                      base64.b64encode(pair.encode("utf-8")).decode("ascii")]
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        found.append(value)
    raw_values = [p.partition("=")[2] for p in parts.query.split("&")]
    found += [v for v in raw_values if v]
    for value in path_secrets(parts.path) + _fragment_secrets(parts.fragment):
        found += [value, unquote(value)]  # as written and as a server may echo it decoded
    return [f for f in dict.fromkeys(found) if f]


def url_secrets_in(value: Any) -> list[str]:
    """url_secrets of every text inside nested data (a config's)."""
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in url_secrets_in(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in url_secrets_in(v)]
    return url_secrets(value)


def redact_url(url: Any) -> Any:
    """The URL as it may be shown: userinfo, query values, the credentials in
    its path and its fragment's values replaced by <redacted> (the scheme,
    host, the rest of the path and query names stay)."""
    if not isinstance(url, str) or "://" not in url:
        return url
    try:
        parts = urlsplit(url)
        has_userinfo = "@" in parts.netloc
    except ValueError:
        return REDACTED
    netloc = (f"{REDACTED}@{parts.netloc.rpartition('@')[2]}" if has_userinfo
              else parts.netloc)
    query = "&".join(f"{p.partition('=')[0]}={REDACTED}" if "=" in p else p
                     for p in parts.query.split("&")) if parts.query else ""
    path = parts.path
    for secret in path_secrets(path):
        path = path.replace(secret, REDACTED)
    fragment = parts.fragment
    if fragment:
        fragment = ("&".join(f"{p.partition('=')[0]}={REDACTED}" if "=" in p else p
                             for p in fragment.split("&")) if "=" in fragment else REDACTED)
    return urlunsplit((parts.scheme, netloc, path, query, fragment))


def configured_secrets(endpoints: Mapping[str, Any], environ: Mapping[str, str] | None = None
                       ) -> list[str]:
    """Every secret value the endpoints use, as found in this process's environment:
    the API key, `${VAR}` values in headers, literal values of headers named
    like a secret (X-Api-Key: ...), and credentials inside the base URL."""
    env = os.environ if environ is None else environ
    found = []
    for cfg in endpoints.values():
        found += url_secrets(getattr(cfg, "base_url", None))
        if cfg.api_key_env and env.get(cfg.api_key_env):
            found.append(env[cfg.api_key_env])
        if cfg.api_key_env and key_like_name(cfg.api_key_env):
            found.append(cfg.api_key_env)
        headers = cfg.headers if isinstance(cfg.headers, Mapping) else {}
        for name, value in headers.items():
            named = SECRET_NAME.search(str(name)) or token_words(str(value))
            found += _sent_secrets(str(value), bool(named), env)
        found += resolved_secrets(getattr(cfg, "body_secrets", ()), env)  # in http bots' bodies
    return found


def resolved_secrets(texts: Iterable[str], environ: Mapping[str, str] | None = None
                     ) -> list[str]:
    """The secrets in texts found by secret_texts, from this process's environment."""
    env = os.environ if environ is None else environ
    return [s for text in texts for s in _sent_secrets(text, True, env)]


def _sent_secrets(value: str, named: bool, env: Mapping[str, str]) -> list[str]:
    """The secrets in a value sent with requests (a header's, a body's): the
    values of its ${VAR}s; without any, the value itself when its name is a
    secret's, whole (a Cookie's "a=...; b=...") and without its scheme ("Bearer abc")."""
    refs = ENV_REF.findall(value)
    if refs:
        return [env[r] for r in refs if env.get(r)] + [r for r in refs if key_like_name(r)]
    return [value, value.split(" ", 1)[-1]] if named else []


def short_variables(endpoints: Mapping[str, Any], texts: Iterable[str] = (),
                    environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables the config reads (api_key_env, ${VAR} in headers, bodies and
    `texts`) whose value is set but shorter than MIN_SECRET: no scrubber takes
    it (it would redact ordinary words), so the run says so."""
    env = os.environ if environ is None else environ
    sent = [str(v) for cfg in endpoints.values() if isinstance(cfg.headers, Mapping)
            for v in cfg.headers.values()]
    sent += [t for cfg in endpoints.values() for t in getattr(cfg, "body_secrets", ())]
    names = [cfg.api_key_env for cfg in endpoints.values() if cfg.api_key_env]
    names += [n for text in [*sent, *texts] for n in ENV_REF.findall(text)]
    return sorted({n for n in names if env.get(n) and len(env[n]) < MIN_SECRET})


def secret_texts(value: Any, key: str = "") -> list[str]:
    """The texts of config data (an http bot's body template, a metric's options)
    that carry a secret, as written: those under a key named like a secret
    (api_key, auth.token), those with a ${VAR} or a token (token_words, under
    any key), and the variable a `*_env` key names, as "${NAME}" (read from the
    environment where a scrubber is built)."""
    if isinstance(value, Mapping):
        return [s for k, v in value.items() for s in secret_texts(v, str(k))]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in secret_texts(v, key)]
    if not isinstance(value, str):
        return []
    if key.lower().endswith("_env"):
        return [f"${{{value}}}"] if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value) else []
    return [value] if SECRET_NAME.search(key) or ENV_REF.search(value) or token_words(value) \
        else []


@functools.lru_cache(maxsize=16)
def _cached(secrets: tuple[str, ...]) -> Scrubber:
    return Scrubber(secrets)


_SEEN: set[str] = set()  # every secret a scrubber_for call of this process found
_PROCESS = [Scrubber()]   # the scrubber of _SEEN, for every log record and warning


def scrubber_for(endpoints: Mapping[str, Any], texts: Iterable[str] = ()) -> Scrubber:
    """The process's scrubber for these endpoints and the config's other texts
    carrying a secret (secret_texts; built once per set of secrets); from then on
    the process's log records and warnings are scrubbed too."""
    secrets = tuple(sorted(set(configured_secrets(endpoints) + resolved_secrets(texts))))
    remember(secrets)
    return _cached(secrets)


def remember(secrets: Iterable[str]) -> None:
    """Add secrets to the process scrubber's (logs, warnings, last-resort messages)."""
    secrets = {s for s in secrets if s}
    if not _SEEN.issuperset(secrets):
        _SEEN.update(secrets)
        _PROCESS[0] = _cached(tuple(sorted(_SEEN)))
        _scrub_logs_and_warnings()


# a key naming a variable (api_key_env, a custom metric's token_env: secret_texts'
# `*_env`) and the name it holds, in YAML or JSON
_NAMED_ENV = re.compile(r"""\w*_env["']?\s*:\s*["']?([A-Za-z_][A-Za-z0-9_]*)""", re.IGNORECASE)


def remember_config_secrets(config: Any, environ: Mapping[str, str] | None = None) -> None:
    """The values of the environment variables a config names (api_key_env or
    any other `*_env` key, ${VAR}), remembered before it is even parsed: an
    error while it is read or the run planned (a custom metric's module that
    fails on import, quoting a request) is scrubbed of them. `config`: a YAML
    file's path, its YAML text (evaluate(config="...")), or a config as data
    (evaluate()'s dict); anything else names nothing."""
    env = os.environ if environ is None else environ
    if isinstance(config, Mapping):
        text = json.dumps(config, default=str)
    else:
        try:
            with open(config or "", encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except (OSError, TypeError, ValueError):
            if not isinstance(config, str):
                return
            text = config  # the YAML itself (or a path that is no file: names nothing)
    names = set(_NAMED_ENV.findall(text)) | set(ENV_REF.findall(text))
    remember([env[n] for n in names if env.get(n)] + [n for n in names if key_like_name(n)])


def scrub_exception(exc: BaseException, scrubber: Scrubber | None = None) -> BaseException:
    """The exception, changed in place, with no secret in what a caller prints or
    logs of it: the text (and bytes) arguments, notes and message attributes of it, of its
    causes and of a group's exceptions (the process scrubber by default). For a
    caller of the Python API, who gets the exception itself."""
    scrubber = scrubber or _PROCESS[0]
    pending, seen = [exc], set()
    while pending:
        e = pending.pop()
        if e is None or id(e) in seen or not scrubber:
            continue
        seen.add(id(e))
        # args, and what a __str__ may print instead: CalledProcessError's .cmd, an
        # OSError's .strerror, a custom exception's .message; notes (in __dict__)
        names = ["args", *getattr(e, "__dict__", {}), "msg", "message", "reason", "strerror",
                 "filename", "filename2"]
        for name in dict.fromkeys(names):
            value = getattr(e, name, None)
            if isinstance(value, (str, list, tuple, dict, bytes)):
                try:
                    setattr(e, name, scrubber.scrub_value(value))
                except (AttributeError, TypeError):  # read-only: the others are done
                    pass
        pending += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
    return exc


def process_scrubber() -> Scrubber:
    """A scrubber of every secret this process has built a scrubber for: what a
    last-resort message (the traceback of a run that crashed) is scrubbed with,
    where the endpoints that failed are no longer at hand."""
    return _PROCESS[0]


def _hooks_on() -> bool:
    """Whether the process's hooks scrub: for good (a worker, the command line)
    or during an evaluate() call (see scrubbing_during); left over, they pass
    through."""
    return bool(_HOOKED) or _SCOPE["depth"] > 0


def _scrubbed_record(make):
    def factory(*args, **kwargs) -> logging.LogRecord:
        record = make(*args, **kwargs)
        scrubber = _PROCESS[0]
        if not _hooks_on():
            return record
        try:
            message = record.getMessage()
        except Exception:  # a bad format: logging says so itself when it emits
            return record
        clean = scrubber.scrub(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:  # what a Formatter would print, scrubbed
            text = logging.Formatter().formatException(record.exc_info)
            clean = scrubber.scrub(text)
            if clean != text:  # (else a handler's own formatter formats it)
                record.exc_text = clean
        if record.stack_info:
            record.stack_info = scrubber.scrub(record.stack_info)
        return record
    return factory


def _scrubbed_warning(show):
    def showwarning(message, category, filename, lineno, file=None, line=None):
        if _hooks_on():
            message = _PROCESS[0].scrub(str(message))
        show(message, category, filename, lineno, file, line)
    return showwarning


_STREAMS: "weakref.WeakSet[ScrubbedStream]" = weakref.WeakSet()  # every one made


class ScrubbedStream:
    """A text stream (sys.stdout, sys.stderr) whose every write is scrubbed with
    the process scrubber as it is then: what a custom metric prints (print(),
    sys.stderr.write) reaches the console, a detached run's log file or a Dask
    worker's log scrubbed. A tail that may begin a secret (Scrubber.held) waits
    for the next write, so a secret printed in parts (print(key[:5], end=""),
    or a few characters per flush) is scrubbed whole: flush() writes all but
    it. It goes out with the next write that shows it begins no secret (a
    newline), or when nothing follows (close(); the process's end: atexit,
    os._exit, release_streams) with what may begin a secret <redacted>
    (Scrubber.last_words). What is written to the file descriptor itself
    (os.write(1, ...), .buffer, a child process) does not pass here."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self._held = ""
        self._lock = threading.RLock()
        _STREAMS.add(self)

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            self._stream.write(text)
            return len(text)
        with self._lock:
            scrubber, pending = _PROCESS[0], self._held + text
            cut = len(pending) - scrubber.held(pending)
            self._held = pending[cut:]
            if cut:
                self._stream.write(scrubber.scrub(pending[:cut]))
        return len(text)

    def writelines(self, lines) -> None:  # else __getattr__ would hand it the raw stream
        for line in lines:
            self.write(line)

    def release(self) -> bool:
        """Write out the held tail as the last words (nothing follows it: a
        possible beginning of a secret is masked), without flushing the
        stream. Whether there was one."""
        with self._lock:
            held, self._held = self._held, ""
            if held:
                self._stream.write(_PROCESS[0].last_words(held))
            return bool(held)

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        self.release()
        self._stream.close()

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def release_streams() -> bool:
    """Every ScrubbedStream's held tail written (Scrubber.last_words) and its
    stream flushed: the process is ending and nothing follows. Else a tail
    that was held (text the user should see) vanished with the process (our
    command line's os._exit, stopping's, a Dask worker's). Whether a tail
    was written (a line said next starts a line of its own)."""
    wrote = False
    for stream in list(_STREAMS):
        with contextlib.suppress(Exception):  # a closed stream: nothing to say there
            wrote = stream.release() or wrote
            stream._stream.flush()
    return wrote


def _releasing_exit(exit_now):
    """os._exit that releases the streams first (it flushes nothing itself)."""
    def _exit(code: int) -> None:
        release_streams()
        exit_now(code)
    _exit.releases = True
    return _exit


def scrub_std_streams() -> None:
    """sys.stdout and sys.stderr of this process as ScrubbedStreams, their held
    tails written when the process ends, by os._exit too (once)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, ScrubbedStream):
            setattr(sys, name, ScrubbedStream(stream))
    if not getattr(os._exit, "releases", False):
        os._exit = _releasing_exit(os._exit)
    if not _AT_EXIT:
        _AT_EXIT.append(True)
        atexit.register(release_streams)


_AT_EXIT: list[bool] = []


_HOOKED: list[bool] = []
# evaluate()'s hooks: how many calls are under way, and what was there before
_SCOPE: dict[str, Any] = {"depth": 0, "saved": None}
_SCOPE_LOCK = threading.Lock()


def _install_hooks() -> dict[str, tuple[Any, Any]]:
    """Scrub every log record, warning and print; returns, for each hook, (what
    was there, ours)."""
    before = _current_hooks()
    logging.setLogRecordFactory(_scrubbed_record(before["factory"]))
    warnings.showwarning = _scrubbed_warning(before["showwarning"])
    scrub_std_streams()
    now = _current_hooks()
    return {name: (before[name], now[name]) for name in before}


def _current_hooks() -> dict[str, Any]:
    """What the process has in place of each hook _install_hooks replaces."""
    return {"factory": logging.getLogRecordFactory(), "showwarning": warnings.showwarning,
            "stdout": sys.stdout, "stderr": sys.stderr, "_exit": os._exit}


def _remove_hooks(saved: dict[str, tuple[Any, Any]]) -> None:
    """Put back what _install_hooks replaced where ours is still in place; one
    set by someone else meanwhile (a user's sys.stdout) stays: a hook of ours
    under it passes through, a stream of ours goes on scrubbing."""
    current = _current_hooks()
    for name in ("stdout", "stderr"):
        if isinstance(saved[name][1], ScrubbedStream) and saved[name][1] is not saved[name][0]:
            saved[name][1].release()  # its held tail: what follows is not scrubbed
    restore = {name: before for name, (before, ours) in saved.items()
               if current[name] is ours and ours is not before}
    if "factory" in restore:
        logging.setLogRecordFactory(restore.pop("factory"))
    if "showwarning" in restore:
        warnings.showwarning = restore.pop("showwarning")
    if "_exit" in restore:
        os._exit = restore.pop("_exit")
    for name, before in restore.items():
        setattr(sys, name, before)


@contextlib.contextmanager
def scrubbing_during() -> Iterator[None]:
    """Every log record, warning and print of this process scrubbed while the
    block runs (evaluate()'s call), and the process left as it was found after:
    the streams, the log record factory and warnings.showwarning put back. Calls
    may nest or overlap (threads): the last one out puts them back. In a
    process that scrubs for good (the command line, a worker), nothing changes."""
    with _SCOPE_LOCK:
        _SCOPE["depth"] += 1
        if _SCOPE["depth"] == 1 and not _HOOKED:
            _SCOPE["saved"] = _install_hooks()
    try:
        yield
    finally:
        with _SCOPE_LOCK:
            _SCOPE["depth"] -= 1
            if _SCOPE["depth"] == 0 and _SCOPE["saved"] is not None:
                saved, _SCOPE["saved"] = _SCOPE["saved"], None
                _remove_hooks(saved)


def _scrub_logs_and_warnings() -> None:
    """Every log record, warning and print of this process is scrubbed of the
    secrets it knows: a Dask worker logs a failed task's exception ('Compute
    Failed ... Exception: ...') and Beam's workers theirs, quoting what the
    exception quotes, and warnings and prints go to the worker's stderr. During
    an evaluate() call its own hooks do it, and go with it."""
    with _SCOPE_LOCK:
        if not _HOOKED and not _SCOPE["depth"]:
            _HOOKED.append(True)
            _install_hooks()
