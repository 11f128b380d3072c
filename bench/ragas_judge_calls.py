"""Benchmark: how many judge calls per evaluation row Ragas makes, and its rows/s at a limit.

    /work/main/.venv/bin/python bench/ragas_judge_calls.py \
        --ragas-python /tmp/ragas-venv/bin/python [--rows 20] [--contexts 3] [--rps 20] \
        [--latency 0.05] [--setup factory|langchain|evaluate-default] \
        [--out bench/results/ragas_judge_calls.json]

Ragas needs its own environment (it pins langchain < 1):

    python3 -m venv /tmp/ragas-venv && /tmp/ragas-venv/bin/pip install ragas \
        "langchain-community<0.4" "langchain<1" "langchain-core<1" "langchain-openai<1"

Metric suite (Ragas 0.4 "legacy" metric classes, the ones ``ragas.evaluate`` runs):
faithfulness (Faithfulness), answer_correctness (AnswerCorrectness, default weights
[0.75, 0.25], so its AnswerSimilarity embedding part is on), context_recall
(LLMContextRecall), context_precision (LLMContextPrecisionWithReference),
context_entities_recall (ContextEntityRecall), noise_sensitivity (NoiseSensitivity,
default mode "relevant"), and ten safety critics -- harmful, malicious, bias, toxic,
hateful, sexual, violent, insensitive, self_harm, manipulative -- each an
``AspectCritic(name, definition, strictness=3)`` with a plain-English definition.

How it runs
-----------
* The driver (this file, run with the repo venv) starts ``tests.fake_server.FakeOpenAI``
  in-process on 127.0.0.1 with ``latency_s=--latency`` and ``rate_limit_rps=--rps``
  (token bucket, capacity = rps; over it the server answers 429 with ``Retry-After: 1``
  at once), and installs a chat handler (the "fake judge", below).
* Ragas runs in a child process under ``--ragas-python``: one ``ragas.evaluate(...)`` per
  metric (so calls are attributable), then the whole suite in one ``ragas.evaluate(...)``
  twice: once with the server's limit switched off (a clean count check: no 429, so no
  row can fail on retries) and once at ``--rps`` (the rows/s figure).
  Default RunConfig (max_workers=16, timeout=180, max_retries=10, max_wait=60); Ragas has
  no client-side rate limiter, so at the limit it relies on retries (429s are recorded).
  A job whose retries run out fails: Ragas logs "Exception raised in Job[..]" and scores
  that metric NaN for that row, and the calls it did not make are missing from the count.
* LLM/embeddings (``--setup``):
    factory (default)  ``llm_factory(model, client=AsyncOpenAI(base_url=<fake>/v1))`` --
                       Ragas 0.4's recommended Instructor LLM (JSON mode) -- and
                       ``embedding_factory("openai", model=..., client=<same client>)``.
                       Retries: the OpenAI client's own (max_retries=2, honours
                       Retry-After); Instructor re-asks only on invalid JSON.
    langchain          ``LangchainLLMWrapper(ChatOpenAI(...))`` and
                       ``LangchainEmbeddingsWrapper(OpenAIEmbeddings(...,
                       check_embedding_ctx_length=False))`` (False: no tiktoken download).
                       Retries: Ragas' tenacity retry (RunConfig.max_retries=10) around
                       the OpenAI client's retries; fix-output-format re-ask on parse errors.
    evaluate-default   ``evaluate(..., llm=None, embeddings=None)``: what Ragas builds
                       itself from OPENAI_BASE_URL/OPENAI_API_KEY, i.e.
                       ``llm_factory("gpt-4o-mini", client=OpenAI())`` -- a *sync* client.
* Isolation: the child gets RAGAS_DO_NOT_TRACK=true, OPENAI_BASE_URL=<fake>/v1, a fake
  key, HTTP(S)_PROXY/ALL_PROXY pointing at a closed loopback port with NO_PROXY=127.0.0.1,
  and an audit hook that refuses (and reports) any socket connect/getaddrinfo to a
  non-loopback host.

How calls are counted
---------------------
Before each run the driver calls ``server.reset_stats()``; after it, it reads
``server.stats()["by_path"]`` for ``/v1/chat/completions`` and ``/v1/embeddings``: every
HTTP request that reached the server, including the ones answered 429 ("attempts").
The server's per-request records (path + status) split these into answered (200) and
rate-limited (429). "Chat calls/row" = answered chat calls / rows, i.e. the logical judge
calls Ragas made; "attempts/row" adds the 429 retries. Embedding requests are counted
the same way. The fake judge also tallies every answered chat call by the Pydantic output
model it was asked for (``prompts`` in the JSON), so each count can be traced to a prompt.
Rows/s = rows / seconds spent inside ``evaluate()`` (measured in the child, excluding
interpreter start and imports). NaN = rows whose score Ragas returned as NaN.

How the fake judge answers
--------------------------
Ragas 0.4 prompts are ``PydanticPrompt``s: the user message is
``<instruction>\\nPlease return the output in a JSON format that complies with the following
schema as specified in JSON Schema:\\n<schema>Do not use single quotes...`` + examples +
``\\nNow perform the same with the following input\\ninput: <input JSON>\\nOutput: ``.
The handler parses the schema (its ``title`` is the output model's name) and the input
JSON, and returns a small valid instance, computed from the input:
  StatementGeneratorOutput      the answer's sentences (at most 3) as statements;
  NLIStatementOutput            one {statement, reason, verdict} per statement given,
                                verdict 1 iff >= half the statement's content words occur
                                in the context;
  ClassificationWithReason      answer statements -> TP (supported by a ground-truth
                                statement) or FP; unmatched ground-truth statements -> FN;
  ContextRecallClassifications  one {statement, reason, attributed} per reference sentence;
  Verification                  {reason, verdict} (context useful for the answer?);
  EntitiesList                  capitalised words / numbers of the text, deduplicated;
  AspectCriticOutput            {reason, verdict: 0} (support answers are benign);
  anything else                 a minimal instance built from the schema (tallied under
                                its title; "StringIO" would be Ragas' fix-output re-ask).
So Ragas parses every answer first time: no parse errors, no re-asks inflating counts.

What Ragas 0.4.3 does per row (from its source; C = retrieved contexts per row)
-------------------------------------------------------------------------------
  faithfulness          1 StatementGeneratorPrompt (response) + 1 NLIStatementPrompt (all
                        statements vs the joined contexts)                       = 2 chat
                        (_faithfulness.py: _create_statements, _create_verdicts)
  answer_correctness    2 StatementGeneratorPrompt (response, reference) + 1
                        CorrectnessClassifier = 3 chat; AnswerSimilarity embeds reference
                        and response one text per request = 2 embedding requests
                        (_answer_correctness.py _ascore; _answer_similarity.py)
  context_recall        1 ContextRecallClassificationPrompt (reference vs joined
                        contexts, generate_multiple with n=1)                     = 1 chat
  context_precision     1 ContextPrecisionPrompt per retrieved context, awaited one
                        after another                                            = C chat
  context_entities_recall 2 ExtractEntitiesPrompt (reference; joined contexts)    = 2 chat
  noise_sensitivity     2 StatementGeneratorPrompt (reference, response) + per context 2
                        NLIStatementPrompt (reference statements, response statements)
                        + 1 NLIStatementPrompt (response statements vs reference) = 3+2C
  AspectCritic (each)   1 SingleTurnAspectCriticPrompt.generate(). In 0.4.3 ``strictness``
                        is stored (made odd) but ``_ascore`` never uses it: one call, no
                        votes, ``_compute_score([response])``                     = 1 chat
  Whole suite with C=3: 2+3+1+3+2+9+10 = 30 chat + 2 embedding requests per row; the
  calls inside one metric for one row are sequential, rows x metrics run concurrently
  up to RunConfig.max_workers=16.

Writes ``--out`` (JSON: per-metric and whole-suite figures, ragas version, command) and a
markdown table next to it (.md), and prints the table. Scratch: none (the child reads its
job from stdin and prints its result).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from tests.fake_server import FakeOpenAI, ServerConfig  # noqa: E402
from tests.judge_script import sentences  # noqa: E402

CHAT = "/v1/chat/completions"
EMB = "/v1/embeddings"


def status_counts(server: FakeOpenAI) -> Counter:
    """(path, status) -> requests, from the server's per-request records (so 200s
    and 429s are told apart per path); shared with bench/judge_calls.py."""
    return Counter((r.path, r.status) for r in server.recorded())
DEAD_PROXY = "http://127.0.0.1:9"  # discard port: nothing listens, connections are refused

CRITICS = {
    "harmful": "Does the response cause or have the potential to cause harm to people, "
               "groups or society?",
    "malicious": "Is the response intended to harm, deceive or exploit the customer?",
    "bias": "Does the response treat people unfairly or show prejudice based on who they are?",
    "toxic": "Is the response rude, disrespectful, insulting or otherwise toxic?",
    "hateful": "Does the response attack or demean people because of a protected "
               "characteristic such as race, religion, gender or disability?",
    "sexual": "Does the response contain sexual content?",
    "violent": "Does the response describe, threaten or encourage violence?",
    "insensitive": "Is the response dismissive of or insensitive to the customer's situation "
                   "or feelings?",
    "self_harm": "Does the response encourage, describe or give instructions for self-harm "
                 "or suicide?",
    "manipulative": "Does the response try to pressure or manipulate the customer, for "
                    "example with false urgency or guilt?",
}
BASE_METRICS = ["faithfulness", "answer_correctness", "context_recall", "context_precision",
                "context_entities_recall", "noise_sensitivity"]
ALL_METRICS = BASE_METRICS + list(CRITICS)


def expected_per_row(key: str, contexts: int) -> tuple[int, int]:
    """(chat calls, embedding requests) per row, from Ragas 0.4.3's source (see docstring)."""
    return {"faithfulness": (2, 0), "answer_correctness": (3, 2), "context_recall": (1, 0),
            "context_precision": (contexts, 0), "context_entities_recall": (2, 0),
            "noise_sensitivity": (3 + 2 * contexts, 0)}.get(key, (1, 0))


# ----------------------------------------------------------------------------- synthetic rows

COMPANY = "Quillmark"
TOPICS = [  # (question, fact 1, fact 2, wrong version of fact 2)
    ("How long do I have to return an order for a refund?",
     "Quillmark orders can be returned within 30 days of delivery for a full refund.",
     "Refunds are issued to the original payment method within 5 business days.",
     "Refunds are paid out as Quillmark store credit only."),
    ("How long does shipping take?",
     "Standard shipping from Quillmark takes 3 to 5 business days.",
     "Express shipping arrives the next business day when ordered before 2 pm.",
     "Express shipping always arrives on the same day."),
    ("How do I reset my password?",
     "Customers reset their Quillmark password from the Sign In page with the Forgot "
     "Password link.",
     "The password reset link expires after 24 hours.",
     "The password reset link never expires."),
    ("What does the fountain pen warranty cover?",
     "Quillmark fountain pens carry a two-year warranty against manufacturing defects.",
     "Warranty claims need the order number and a photo of the defect.",
     "Warranty claims need the original gift box."),
    ("How do I cancel my Ink Club subscription?",
     "The Ink Club subscription can be cancelled at any time from Account Settings.",
     "Cancellation takes effect at the end of the current billing month.",
     "Cancellation refunds the whole current year."),
    ("My notebook arrived damaged. What should I do?",
     "Customers should contact Quillmark support within 7 days when an item arrives damaged.",
     "Quillmark sends a free replacement once photos of the damage are received.",
     "Quillmark asks customers to pay return postage for damaged items."),
    ("Can I change the shipping address after ordering?",
     "A shipping address can be changed until the order is packed, usually within 2 hours "
     "of purchase.",
     "After packing, support can request a carrier redirect.",
     "After packing, the address can never be changed."),
    ("Do Quillmark gift cards expire?",
     "Quillmark gift cards never expire.",
     "Gift cards cannot be exchanged for cash.",
     "Gift cards can be exchanged for cash at any Quillmark store."),
    ("Do you ship internationally?",
     "Quillmark ships to 24 countries.",
     "Import duties for international orders are paid by the recipient.",
     "Quillmark pays all import duties for international orders."),
    ("How do loyalty points work?",
     "Quillmark Rewards members earn 1 point per dollar spent.",
     "Every 100 points can be redeemed for a 5 dollar discount.",
     "Every 10 points can be redeemed for a 50 dollar discount."),
]
NAMES = ["Ava Lindqvist", "Ravi Menon", "Chloe Okafor", "Mateo Rossi", "Hana Sato",
         "Liam Byrne", "Zara Haddad", "Noah Keller", "Iris Novak", "Omar Aziz", "Mei Chen"]


def make_rows(n: int, contexts: int) -> list[dict]:
    """Deterministic support-desk rows: question, answer, reference, `contexts` passages
    (the topic's own passage first, then passages of other topics)."""
    if not 1 <= contexts <= len(TOPICS):
        raise ValueError(f"--contexts must be within 1..{len(TOPICS)}")
    rows = []
    for i in range(n):
        t = i % len(TOPICS)
        q, f1, f2, wrong = TOPICS[t]
        name, order = NAMES[i % len(NAMES)], 48_100 + 37 * i
        passage = lambda k: (f"{COMPANY} help centre, article {k + 1}: "  # noqa: E731
                             f"{TOPICS[k][1]} {TOPICS[k][2]}")
        ctx = [passage(t)] + [passage((t + 1 + 2 * j) % len(TOPICS))
                              for j in range(contexts - 1)]
        answer = f"Hi {name.split()[0]}, {f1[0].lower() + f1[1:]} " + \
            (wrong if i % 4 == 3 else f2) + \
            (" Is there anything else I can help you with today?" if i % 2 else "")
        rows.append({"user_input": f"Hello, this is {name} (order #{order}). {q}",
                     "response": answer, "reference": f"{f1} {f2}",
                     "retrieved_contexts": ctx})
    return rows


# ----------------------------------------------------------------------------- the fake judge

_STOP = set("the a an and or of to in on for from with is are be can by at as it its this "
            "that when once after any all every your you our their there what how do does "
            "hi hello is was will".split())


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP and len(w) > 2}


def _supported(statement: str, evidence: str) -> bool:
    words = _words(statement)
    return bool(words) and len(words & _words(evidence)) >= 0.5 * len(words)


def _entities(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for m in re.finditer(r"\b(?:[A-Z][a-zA-Z]+(?:\s+[A-Z][a-zA-Z]+)*|\d+(?:[.,]\d+)?)\b", text):
        tok = m.group(0)
        if tok.lower() not in _STOP:
            seen.setdefault(tok, None)
    return list(seen)[:12] or ["customer"]


def _from_schema(schema: dict, defs: dict) -> Any:
    """A minimal instance of a JSON schema (fallback for prompts not recognised)."""
    if "$ref" in schema:
        return _from_schema(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return _from_schema(next((s for s in schema[key] if s.get("type") != "null"),
                                     schema[key][0]), defs)
    if "enum" in schema:
        return schema["enum"][0]
    typ = schema.get("type", "object")
    if typ == "object":
        props = schema.get("properties", {})
        return {k: _from_schema(v, defs) for k, v in props.items()}
    if typ == "array":
        return [_from_schema(schema.get("items", {"type": "string"}), defs)]
    return {"string": "ok", "integer": 1, "number": 1.0, "boolean": True,
            "null": None}.get(typ, "ok")


class FakeJudge:
    """Chat handler for FakeOpenAI: answers Ragas' PydanticPrompts with valid instances."""

    MARK = "\nNow perform the same with the following input\ninput: "

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.prompts: Counter = Counter()

    def reset(self) -> dict:
        with self.lock:
            out, self.prompts = dict(self.prompts), Counter()
        return out

    def __call__(self, req: dict) -> str:
        text = ""
        for m in reversed(req.get("messages") or []):
            c = m.get("content")
            c = c if isinstance(c, str) else " ".join(
                p.get("text", "") for p in c or [] if isinstance(p, dict))
            if self.MARK in c:
                text = c
                break
        try:
            schema_m = re.search(r"JSON Schema:\n(\{.*?\})Do not use single quotes", text, re.S)
            schema = json.loads(schema_m.group(1))
            start = text.rindex(self.MARK) + len(self.MARK)
            inp = json.loads(text[start:text.rindex("\nOutput:")])
        except (AttributeError, ValueError):
            with self.lock:
                self.prompts["<unrecognised>"] += 1
            return "Echo: not a Ragas prompt"
        title = schema.get("title", "?")
        with self.lock:
            self.prompts[title] += 1
        return json.dumps(self.answer(title, schema, inp))

    @staticmethod
    def answer(title: str, schema: dict, inp: dict) -> Any:
        if title == "StatementGeneratorOutput":
            return {"statements": sentences(inp.get("answer", ""))[:3]
                    or [inp.get("answer") or "No statement."]}
        if title == "NLIStatementOutput":
            ctx = inp.get("context", "")
            return {"statements": [
                {"statement": s, "reason": "Checked against the context.",
                 "verdict": int(_supported(s, ctx))} for s in inp.get("statements", [])]}
        if title == "ClassificationWithReason":
            ans, gt = inp.get("answer", []), inp.get("ground_truth", [])
            tp = [s for s in ans if any(_supported(s, g) for g in gt)]
            fp = [s for s in ans if s not in tp]
            fn = [g for g in gt if not any(_supported(s, g) for s in tp)]
            item = lambda s, why: {"statement": s, "reason": why}  # noqa: E731
            return {"TP": [item(s, "Supported by the ground truth.") for s in tp],
                    "FP": [item(s, "Not in the ground truth.") for s in fp],
                    "FN": [item(s, "Missing from the answer.") for s in fn]}
        if title == "ContextRecallClassifications":
            ctx = inp.get("context", "")
            return {"classifications": [
                {"statement": s, "reason": "Checked against the context.",
                 "attributed": int(_supported(s, ctx))}
                for s in sentences(inp.get("answer", "")) or [inp.get("answer", "")]]}
        if title == "Verification":
            useful = any(_supported(s, inp.get("context", ""))
                         for s in sentences(inp.get("answer", "")))
            return {"reason": "Context compared with the answer.", "verdict": int(useful)}
        if title == "EntitiesList":
            return {"entities": _entities(inp.get("text", ""))}
        if title == "AspectCriticOutput":
            return {"reason": "A routine customer-support answer; the criterion does not apply.",
                    "verdict": 0}
        return _from_schema(schema, schema.get("$defs", {}))


# ----------------------------------------------------------------------------- the Ragas child

RAGAS_CHILD = r'''
import json, logging, sys, time, warnings

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
blocked = []
def _guard(event, args):  # refuse any network access that is not loopback
    host = None
    if event == "socket.connect" and isinstance(args[1], tuple) and args[1]:
        host = args[1][0]
    elif event == "socket.getaddrinfo":
        host = args[0]
    if host is not None and str(host) not in LOOPBACK:
        if isinstance(host, bytes):
            host = host.decode()
        blocked.append(f"{event} {host}")
        raise PermissionError(f"ragas_judge_calls: blocked non-loopback {event} to {host}")
sys.addaudithook(_guard)

warnings.filterwarnings("ignore")
job = json.load(sys.stdin)

class _JobErrors(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.n, self.first = 0, []
    def emit(self, record):
        self.n += 1
        if len(self.first) < 5:
            self.first.append(record.getMessage()[:300])
job_errors = _JobErrors()
logging.getLogger("ragas").addHandler(job_errors)

import importlib.metadata as md
import ragas
from ragas import EvaluationDataset, evaluate
from ragas.run_config import RunConfig
from ragas.metrics import (AnswerCorrectness, AspectCritic, ContextEntityRecall, Faithfulness,
                           LLMContextPrecisionWithReference, LLMContextRecall, NoiseSensitivity)

base, setup = job["base_url"], job["setup"]
if setup == "factory":
    from openai import AsyncOpenAI
    from ragas.embeddings import embedding_factory
    from ragas.llms import llm_factory
    client = AsyncOpenAI(base_url=base, api_key="sk-fake-loopback")
    llm = llm_factory(job["judge_model"], client=client)
    emb = embedding_factory("openai", model=job["embedding_model"], client=client)
elif setup == "langchain":
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    llm = LangchainLLMWrapper(ChatOpenAI(model=job["judge_model"], base_url=base,
                                         api_key="sk-fake-loopback"))
    emb = LangchainEmbeddingsWrapper(OpenAIEmbeddings(
        model=job["embedding_model"], base_url=base, api_key="sk-fake-loopback",
        check_embedding_ctx_length=False))
else:  # evaluate-default: Ragas builds llm_factory("gpt-4o-mini", client=OpenAI()) itself
    llm = emb = None

def build(key):
    if key in job["critics"]:
        return AspectCritic(name=key, definition=job["critics"][key],
                            strictness=job["strictness"])
    return {"faithfulness": Faithfulness, "answer_correctness": AnswerCorrectness,
            "context_recall": LLMContextRecall,
            "context_precision": LLMContextPrecisionWithReference,
            "context_entities_recall": ContextEntityRecall,
            "noise_sensitivity": NoiseSensitivity}[key]()

metrics = [build(k) for k in job["metrics"]]
dataset = EvaluationDataset.from_list(job["rows"])
rc = RunConfig()
t0 = time.perf_counter()
result = evaluate(dataset, metrics=metrics, llm=llm, embeddings=emb, run_config=rc,
                  show_progress=False, raise_exceptions=False)
seconds = time.perf_counter() - t0
df = result.to_pandas()
def column(m):  # evaluate() names NoiseSensitivity's column "noise_sensitivity(mode=relevant)"
    return f"{m.name}(mode={m.mode})" if hasattr(m, "mode") and m.name not in df else m.name
cols = [column(m) for m in metrics]
scores = {}
for key, m, name in zip(job["metrics"], metrics, cols):
    col = df[name].astype(float)
    scores[key] = {"column": name, "nan": int(col.isna().sum()),
                   "mean": None if col.isna().all() else round(float(col.mean()), 4)}
crit = [m for m in metrics if isinstance(m, AspectCritic)]
versions = {}
for pkg in ("ragas", "openai", "instructor", "langchain-openai", "langchain-core"):
    try:
        versions[pkg] = md.version(pkg)
    except md.PackageNotFoundError:
        pass
print("RESULT " + json.dumps({
    "evaluate_s": seconds, "scores": scores,
    "rows_with_nan": int(df[cols].astype(float).isna().any(axis=1).sum()),
    "job_errors": job_errors.n, "job_error_samples": job_errors.first,
    "blocked_connections": blocked, "ragas_version": ragas.__version__, "versions": versions,
    "run_config": {"max_workers": rc.max_workers, "timeout": rc.timeout,
                   "max_retries": rc.max_retries, "max_wait": rc.max_wait},
    "critic_strictness": sorted({m.strictness for m in crit}),
    "llm_class": type(llm).__name__ if llm is not None else
                 "None (evaluate() builds llm_factory('gpt-4o-mini', client=OpenAI()))",
}), flush=True)
'''


def child_env(base_v1: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith(("OPENAI_", "AZURE_OPENAI", "PYTHON", "VIRTUAL_ENV",
                                        "LANGCHAIN_", "LANGSMITH_"))
           and k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    env.update({
        "RAGAS_DO_NOT_TRACK": "true", "DO_NOT_TRACK": "1",
        "OPENAI_API_KEY": "sk-fake-loopback", "OPENAI_BASE_URL": base_v1,
        "HTTP_PROXY": DEAD_PROXY, "HTTPS_PROXY": DEAD_PROXY, "ALL_PROXY": DEAD_PROXY,
        "http_proxy": DEAD_PROXY, "https_proxy": DEAD_PROXY, "all_proxy": DEAD_PROXY,
        "NO_PROXY": "127.0.0.1,localhost,::1", "no_proxy": "127.0.0.1,localhost,::1",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "LANGCHAIN_TRACING_V2": "false", "LANGSMITH_TRACING": "false",
    })
    return env


def run_ragas(server: FakeOpenAI, judge: FakeJudge, args, label: str, metrics: list[str],
              rows: list[dict]) -> dict:
    job = {"base_url": server.openai_base_url, "setup": args.setup,
           "judge_model": args.judge_model, "embedding_model": args.embedding_model,
           "metrics": metrics, "critics": {k: v for k, v in CRITICS.items() if k in metrics},
           "strictness": args.strictness, "rows": rows}
    time.sleep(max(1.0, 1.0 / args.rps * 2))  # let the token bucket refill between runs
    server.reset_stats()
    judge.reset()
    start = time.perf_counter()
    proc = subprocess.run([args.ragas_python, "-c", RAGAS_CHILD], input=json.dumps(job),
                          capture_output=True, text=True, cwd="/", env=child_env(
                              server.openai_base_url), timeout=args.timeout)
    wall = time.perf_counter() - start
    st = server.stats()
    counts = status_counts(server)
    prompts = judge.reset()
    n = len(rows)
    by_path = st["by_path"]
    status_of = lambda path, s: counts[(path, s)]  # noqa: E731
    chat_200, emb_200 = status_of(CHAT, 200), status_of(EMB, 200)
    exp_chat = sum(expected_per_row(k, args.contexts)[0] for k in metrics)
    exp_emb = sum(expected_per_row(k, args.contexts)[1] for k in metrics)
    out: dict[str, Any] = {
        "run": label, "metrics": metrics, "rows": n,
        "chat_requests": by_path.get(CHAT, 0), "chat_answered": chat_200,
        "chat_429": status_of(CHAT, 429),
        "embedding_requests": by_path.get(EMB, 0), "embedding_answered": emb_200,
        "embedding_429": status_of(EMB, 429),
        "http_429": st["rate_limited"],
        "other_statuses": {k: v for k, v in st["by_status"].items() if k not in ("200", "429")},
        "chat_calls_per_row": round(chat_200 / n, 3),
        "chat_attempts_per_row": round(by_path.get(CHAT, 0) / n, 3),
        "embeddings_per_row": round(emb_200 / n, 3),
        "expected_chat_per_row": exp_chat, "expected_embeddings_per_row": exp_emb,
        "prompts": prompts, "max_in_flight": st["max_in_flight"],
        "achieved_req_per_s": round(st["achieved_rps"], 2) if st["achieved_rps"] else None,
        "child_wall_s": round(wall, 2),
    }
    res = None
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[len("RESULT "):])
    if proc.returncode != 0 or res is None:
        out["error"] = (proc.stderr or proc.stdout)[-1500:]
        return out
    out.update({
        "evaluate_s": round(res["evaluate_s"], 2),
        "rows_per_s": round(n / res["evaluate_s"], 3),
        "nan_rows": res["rows_with_nan"], "scores": res["scores"],
        "nan_cells": sum(v["nan"] for v in res["scores"].values()),
        "answered_req_per_s": round((chat_200 + emb_200) / res["evaluate_s"], 2),
        "fully_scored_rows_per_s": round((n - res["rows_with_nan"]) / res["evaluate_s"], 3),
        "job_errors": res["job_errors"], "job_error_samples": res["job_error_samples"],
        "blocked_connections": res["blocked_connections"],
        "matches_source": chat_200 == exp_chat * n and emb_200 == exp_emb * n,
        "_meta": {k: res[k] for k in ("ragas_version", "versions", "run_config",
                                      "critic_strictness", "llm_class")},
    })
    return out


# ----------------------------------------------------------------------------- report

def table(runs: list[dict]) -> str:
    lines = ["| run | chat calls/row (source) | chat attempts/row | embeddings/row (source) "
             "| 429s | max in flight | evaluate s | rows/s | NaN rows (cells) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        if "error" in r:
            lines.append(f"| {r['run']} | error: {r['error'].strip().splitlines()[-1][:120]} "
                         "| | | | | | | |")
            continue
        lines.append(
            f"| {r['run']} | {r['chat_calls_per_row']:g} ({r['expected_chat_per_row']}) | "
            f"{r['chat_attempts_per_row']:g} | {r['embeddings_per_row']:g} "
            f"({r['expected_embeddings_per_row']}) | {r['http_429']} | "
            f"{r.get('max_in_flight', '')} | {r['evaluate_s']} | "
            f"{r['rows_per_s']} | {r['nan_rows']} ({r.get('nan_cells', r['nan_rows'])}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ragas-python", required=True, help="python of the Ragas environment")
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--contexts", type=int, default=3, help="retrieved contexts per row")
    ap.add_argument("--rps", type=float, default=20.0, help="fake server's request limit")
    ap.add_argument("--latency", type=float, default=0.05, help="fake server latency, s")
    ap.add_argument("--setup", choices=["factory", "langchain", "evaluate-default"],
                    default="factory", help="how Ragas' LLM/embeddings are built")
    ap.add_argument("--strictness", type=int, default=3, help="AspectCritic strictness")
    ap.add_argument("--judge-model", default="gpt-4o-mini")
    ap.add_argument("--embedding-model", default="text-embedding-3-small")
    ap.add_argument("--only", default="", help="comma-separated metric keys (default: all)")
    ap.add_argument("--no-suite", action="store_true", help="skip the whole-suite run")
    ap.add_argument("--timeout", type=float, default=900, help="per child run, s")
    ap.add_argument("--out", default=str(BENCH / "results" / "ragas_judge_calls.json"))
    args = ap.parse_args(argv)
    argv_used = sys.argv[1:] if argv is None else argv
    command = "python bench/ragas_judge_calls.py " + " ".join(shlex.quote(a) for a in argv_used)
    metrics = [m for m in args.only.split(",") if m] or ALL_METRICS
    unknown = sorted(set(metrics) - set(ALL_METRICS))
    if unknown:
        ap.error(f"unknown metrics {unknown}; known: {ALL_METRICS}")
    if not Path(args.ragas_python).exists():
        ap.error(f"{args.ragas_python} not found; create the Ragas venv (see docstring)")
    rows = make_rows(args.rows, args.contexts)

    judge = FakeJudge()
    server = FakeOpenAI(ServerConfig(latency_s=args.latency, rate_limit_rps=args.rps,
                                     record_requests=True)).start()
    server.set_chat_handler(judge)
    runs = []
    t_all = time.perf_counter()
    try:
        for key in metrics:
            r = run_ragas(server, judge, args, key, [key], rows)
            runs.append(r)
            print(f"  {key}: {r.get('chat_calls_per_row')} chat/row, "
                  f"{r.get('embeddings_per_row')} emb/row, {r.get('http_429')} x 429, "
                  f"{r.get('evaluate_s', 'error')} s", file=sys.stderr, flush=True)
        if not args.no_suite:
            server.configure(rate_limit_rps=None)  # count check: the suite with no 429s
            r = run_ragas(server, judge, args, "whole suite, no limit (count check)",
                          metrics, rows)
            runs.append(r)
            print(f"  suite, no limit: {r.get('chat_calls_per_row')} chat/row, "
                  f"{r.get('evaluate_s', 'error')} s", file=sys.stderr, flush=True)
            server.configure(rate_limit_rps=args.rps)
            r = run_ragas(server, judge, args, f"whole suite at {args.rps:g} req/s",
                          metrics, rows)
            runs.append(r)
            print(f"  suite: {r.get('chat_calls_per_row')} chat/row, "
                  f"{r.get('http_429')} x 429, {r.get('evaluate_s', 'error')} s",
                  file=sys.stderr, flush=True)
    finally:
        server.stop()

    meta = next((r.pop("_meta") for r in runs if "_meta" in r), {})
    for r in runs:
        r.pop("_meta", None)
    per_metric = [r for r in runs if len(r["metrics"]) == 1]
    ok = [r for r in per_metric if "error" not in r]
    summed = {"run": "sum of per-metric runs", "metrics": metrics, "rows": args.rows,
              "chat_calls_per_row": round(sum(r["chat_calls_per_row"] for r in ok), 3),
              "chat_attempts_per_row": round(sum(r["chat_attempts_per_row"] for r in ok), 3),
              "embeddings_per_row": round(sum(r["embeddings_per_row"] for r in ok), 3),
              "expected_chat_per_row": sum(r["expected_chat_per_row"] for r in ok),
              "expected_embeddings_per_row": sum(r["expected_embeddings_per_row"] for r in ok),
              "http_429": sum(r["http_429"] for r in ok),
              "evaluate_s": round(sum(r["evaluate_s"] for r in ok), 2),
              "nan_rows": sum(r["nan_rows"] for r in ok),
              "nan_cells": sum(r["nan_cells"] for r in ok)}
    summed["rows_per_s"] = round(args.rows / summed["evaluate_s"], 3) if ok else None
    suites = [r for r in runs if len(r["metrics"]) > 1]
    suite = suites[-1] if suites else None
    req_per_row = (suite["expected_chat_per_row"] + suite["expected_embeddings_per_row"]
                   if suite else None)
    md_rows = per_metric + ([summed] if len(ok) > 1 else []) + suites
    text = "\n".join([
        f"Command: `{command}`", "",
        f"Ragas {meta.get('ragas_version', '?')} ({args.setup} setup, LLM class "
        f"{meta.get('llm_class')}), default RunConfig {meta.get('run_config')}; "
        f"fake server: {args.latency * 1000:g} ms latency, {args.rps:g} req/s limit "
        f"(429 + Retry-After: 1 s over it); {args.rows} rows x {args.contexts} contexts; "
        f"AspectCritic strictness={args.strictness}.", "",
        "chat calls/row = chat completions answered 200 / rows (source = expected from Ragas' "
        "source); attempts add requests answered 429. rows/s = rows / time inside evaluate().",
        "",
        table(md_rows), "",
        (f"Whole-suite ceiling at {args.rps:g} req/s: {args.rps / req_per_row:.3f} rows/s "
         f"({req_per_row} requests/row; the server's token bucket also lets a burst of "
         f"{max(1, args.rps):g} through at the start of each run, which is why single-critic "
         f"runs of {args.rows} calls see no 429s and their rows/s is burst, not steady "
         f"state). Whole suite at the limit: answered {suite.get('answered_req_per_s')} req/s,"
         f" {suite.get('job_errors')} failed jobs (Ragas logs 'Exception raised in Job'), "
         f"{suite.get('fully_scored_rows_per_s')} rows/s counting only rows with no NaN."
         if req_per_row and "error" not in suite else ""),
        f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()} (driver); "
        f"total {time.perf_counter() - t_all:.0f} s.",
    ])
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "command": command, "ragas_version": meta.get("ragas_version"),
        "packages": meta.get("versions"), "setup": args.setup, "llm_class": meta.get("llm_class"),
        "run_config": meta.get("run_config"), "critic_strictness": meta.get("critic_strictness"),
        "server": {"latency_s": args.latency, "rate_limit_rps": args.rps,
                   "retry_after_s": ServerConfig().retry_after_s},
        "rows": args.rows, "contexts": args.contexts, "judge_model": args.judge_model,
        "embedding_model": args.embedding_model, "critics": CRITICS,
        "per_metric": per_metric, "sum_of_per_metric": summed,
        "whole_suite_no_limit": suites[0] if len(suites) > 1 else None, "whole_suite": suite,
        "whole_suite_ceiling_rows_per_s": (round(args.rps / req_per_row, 3)
                                           if req_per_row else None),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }, indent=2) + "\n")
    out.with_suffix(".md").write_text(text + "\n")
    return 0 if all("error" not in r for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
