"""Spend caps: a call is reserved before it is sent, so the caps hold under
any concurrency, across worker processes sharing the run's ledger, and in a
whole run (rows past the cap are null with "budget reached")."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest

from pipeline.config import ConfigError, EndpointConfig, parse_config
from tests.conftest import ROOT, SAMPLE_ROWS
from tests.fake_server import FakeOpenAI, ServerConfig
from tests.pipeline_helpers import manifest, read_rows, run_sample
from transforms.remote.budget import (JUDGE_CALLS, JUDGE_COST, BudgetSpec, LocalLedger,
                                      SqliteLedger, tokens_scope)
from transforms.remote.openai_api import chat
from transforms.remote.runtime import AsyncRuntime

MSG = [{"role": "user", "content": "Is the sky blue? Answer in one word."}]


def _runtime(server, caps, ledger=None, **ep):
    ep = {"requests_per_second": 10_000, "max_concurrency": 64,
          "price_per_million": {"input": 1.0, "output": 2.0}, **ep}
    endpoints = {"judge": EndpointConfig(base_url=server.openai_base_url, **ep)}
    return AsyncRuntime(endpoints, budget=BudgetSpec(tuple(caps.items()), ledger, 1.0, "run-a"))


async def _calls(client, n, purpose="judge:x", max_tokens=100):
    import asyncio
    return await asyncio.gather(*(chat(client, "m", MSG + [{"role": "user", "content": str(i)}],
                                       purpose=purpose, max_tokens=max_tokens)
                                  for i in range(n)))


@pytest.mark.parametrize("shared", [False, True])
def test_200_concurrent_calls_and_a_call_cap_that_cuts_them(tmp_path, shared):
    ledger = str(tmp_path / "budget.sqlite") if shared else None
    with FakeOpenAI(ServerConfig(latency_s=0.1)) as server:
        runtime = _runtime(server, {JUDGE_CALLS: 120}, ledger)
        try:
            replies = runtime.run(_calls(runtime.client("judge"), 200))
        finally:
            runtime.close()
        assert server.stats()["max_in_flight"] >= 10  # they really were concurrent
        assert server.stats()["total"] == 120  # exactly the cap
    refused = [r for r in replies if r.record.budget_refused]
    assert len(refused) == 80 and all(r.texts == [] for r in refused)
    assert refused[0].error == "budget reached: judge.max_calls (120 per run)"
    assert all(r.record.attempts == 0 for r in refused)


def test_a_cost_cap_holds_under_concurrency_and_stops_at_the_cap(tmp_path):
    """Each call reserves its worst case (prompt + 100 tokens out) but spends far
    less: calls refused while others are in flight wait for them to settle, so
    the run stops where what it spent leaves no room for one more worst case,
    not where the first worst cases in flight filled the cap."""
    with FakeOpenAI(ServerConfig(latency_s=0.02)) as server:
        cap = 0.002  # dollars
        runtime = _runtime(server, {JUDGE_COST: cap}, str(tmp_path / "b.sqlite"))
        try:
            replies = runtime.run(_calls(runtime.client("judge"), 200))
        finally:
            runtime.close()
        assert server.stats()["max_in_flight"] >= 5  # they really were concurrent
    sent = [r for r in replies if not r.record.budget_refused]
    spent = sum((r.record.prompt_tokens * 1.0 + r.record.completion_tokens * 2.0) / 1e6
                for r in sent)
    worst = max((r.record.prompt_tokens + 100 * 2) / 1e6 for r in sent)
    assert 0 < len(sent) < 200 and spent <= cap
    assert cap - spent < worst  # no room was left unused that one more call could have had
    assert len(sent) > 2 * int(cap / worst)  # far more than worst cases alone let through
    refused = [r for r in replies if r.record.budget_refused]
    assert refused[0].error == "budget reached: judge.max_cost (0.002 per run)"


def test_cache_hits_cost_nothing_and_the_token_ceiling_counts_real_tokens(tmp_path):
    with FakeOpenAI() as server:
        runtime = _runtime(server, {tokens_scope("judge"): 300}, None)
        try:
            client = runtime.client("judge")
            replies = runtime.run(_calls(client, 30, purpose="bot:b", max_tokens=20))
        finally:
            runtime.close()
    sent = [r for r in replies if not r.record.budget_refused]
    used = sum(r.record.prompt_tokens + r.record.completion_tokens for r in sent)
    assert used <= 300 and len(sent) < 30
    assert 300 - used < max(r.record.prompt_tokens for r in sent) + 20  # stopped at the cap
    assert replies[-1].record.budget_refused and "endpoints.judge.max_tokens_per_run" in \
        replies[-1].error


WORKER = r'''
import sys, json
sys.path.insert(0, sys.argv[1])
from tests.test_spend_caps import _runtime, _calls
from transforms.remote.budget import JUDGE_CALLS
class S:  # the server's address, from the parent
    openai_base_url = sys.argv[2]
runtime = _runtime(S, {JUDGE_CALLS: 150}, sys.argv[3])
print("ready", flush=True)
sys.stdin.readline()  # both start together (a loaded machine would stagger them)
try:
    replies = runtime.run(_calls(runtime.client("judge"), 200))
finally:
    runtime.close()
print(json.dumps(sum(1 for r in replies if not r.record.budget_refused)))
'''


def test_worker_processes_sharing_the_ledger_hold_the_cap_together(tmp_path):
    ledger = str(tmp_path / "budget.sqlite")
    with FakeOpenAI(ServerConfig(latency_s=0.02)) as server:
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, ROOT, server.openai_base_url,
                                   ledger], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, cwd=ROOT)
                 for _ in range(2)]
        assert [p.stdout.readline().strip() for p in procs] == ["ready", "ready"]
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        sent = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
        assert server.stats()["total"] == 150  # 2 x 200 calls, one cap of 150
    # Each process alone would send 150 (300 in all): one total of 150 means they read
    # one ledger. How the 150 split between them is the scheduler's business: on a
    # loaded machine one process can spend the whole cap before the other's first call
    # (CI saw [150, 0]), so the split is not asserted.
    assert sum(sent) == 150 and len(sent) == 2


HOLDER = r"""
import sys
sys.path.insert(0, sys.argv[1])
from tests.test_spend_caps import _runtime, _calls
from transforms.remote.budget import JUDGE_CALLS
class S:
    openai_base_url = sys.argv[2]
runtime = _runtime(S, {JUDGE_CALLS: 40}, sys.argv[3], max_concurrency=4)
runtime.run(_calls(runtime.client("judge"), 200))  # SIGKILLed long before it ends
"""


def test_a_killed_process_gives_back_what_it_reserved_and_did_not_send(tmp_path):
    """A worker process SIGKILLed while it holds the whole cap: 4 of its 40
    reservations sent (its slots), 36 waiting for a slot. The next process
    sharing the ledger sent nothing (the 36 stayed reserved for ever, so the
    run stopped at 4 of 40); a dead holder's unsent reservations are given
    back and its sent ones stay spent, so together they send the cap exactly;
    while it lives, nothing of it is given back."""
    ledger = str(tmp_path / "budget.sqlite")
    with FakeOpenAI(ServerConfig(latency_s=2.0)) as server:
        proc = subprocess.Popen([sys.executable, "-c", HOLDER, ROOT, server.openai_base_url,
                                 ledger], cwd=ROOT)
        runtime = _runtime(server, {JUDGE_CALLS: 40}, ledger)
        try:
            deadline = time.monotonic() + 120
            while server.stats()["total"] < 4 and proc.poll() is None:
                assert time.monotonic() < deadline, "the holder sent nothing"
                time.sleep(0.05)
            time.sleep(0.3)  # its other 36 reserved, waiting for a slot
            alive = runtime.run(_calls(runtime.client("judge"), 20))
            assert all(r.record.budget_refused for r in alive)  # a live holder keeps its own
            proc.kill()
            proc.wait(timeout=30)
            assert server.stats()["total"] == 4
            replies = runtime.run(_calls(runtime.client("judge"), 100))
        finally:
            proc.kill()
            runtime.close()
        assert server.stats()["total"] == 40  # the 4 in flight stayed spent: not 44
    assert sum(not r.record.budget_refused for r in replies) == 36


def test_a_ledger_closes_after_its_folder_is_removed(tmp_path):
    """Finalize removes the attempt's temporary folder (the ledger's) before a
    Dask worker tears its steps down: closing the ledger, on the tearing-down
    thread, raised 'unable to open database file' (and the request journal,
    closed after it, was left open)."""
    folder = tmp_path / "_tmp" / "r-1"
    ledger = SqliteLedger(str(folder / "budget.sqlite"), {JUDGE_CALLS: 5}, "r")
    reservation = ledger.reserve({JUDGE_CALLS: 1})
    ledger.sending(reservation)
    ledger.settle(reservation, {JUDGE_CALLS: 1})
    shutil.rmtree(tmp_path / "_tmp")
    closing = threading.Thread(target=ledger.close)
    errors = []
    threading.excepthook = lambda args: errors.append(args.exc_value)
    try:
        closing.start()
        closing.join()
    finally:
        threading.excepthook = threading.__excepthook__
    assert errors == [] and not folder.exists()


def test_ledgers_reserve_and_settle():
    for ledger in (LocalLedger({"a": 10.0}), LocalLedger({"a": 20.0}, share=0.5)):
        r1 = ledger.reserve({"a": 6.0, "other": 99.0})  # scopes without a cap are free
        assert r1.amounts == {"a": 6.0}
        assert isinstance(ledger.reserve({"a": 6.0}), str)
        ledger.settle(r1, {"a": 2.0})  # it used less than reserved: room again
        assert not isinstance(ledger.reserve({"a": 6.0}), str)


def test_sqlite_ledger_keeps_runs_apart(tmp_path):
    path = str(tmp_path / "l.sqlite")
    a, b = SqliteLedger(path, {JUDGE_CALLS: 1}, "run-a"), SqliteLedger(path, {JUDGE_CALLS: 1},
                                                                      "run-b")
    assert not isinstance(a.reserve({JUDGE_CALLS: 1}), str)
    assert isinstance(a.reserve({JUDGE_CALLS: 1}), str)
    assert not isinstance(b.reserve({JUDGE_CALLS: 1}), str)  # another attempt: its own tally
    assert a.used() == {JUDGE_CALLS: 1.0}


@pytest.mark.parametrize("judge, words", [
    ({"max_calls": 0}, "judge.max_calls must be an integer >= 1"),
    ({"max_cost": -1}, "judge.max_cost must be > 0"),
    ({"max_cost": 1.0}, "judge.max_cost needs a price"),
])
def test_cap_config_errors(judge, words):
    with pytest.raises(ConfigError, match=words):
        parse_config({"endpoints": {"llm": {"base_url": "http://x"}},
                      "judge": {"endpoint": "llm", "model": "m", **judge}})
    with pytest.raises(ConfigError, match="max_tokens_per_run must be an integer"):
        parse_config({"endpoints": {"llm": {"base_url": "http://x", "max_tokens_per_run": 0}}})


def _run_capped(tmp_path, config: str) -> tuple[str, int]:
    """A whole run of the sample rows (run id "cap") against a fresh fake server
    with the scripted judge; `{url}` in the config is its /v1 address:
    (output folder, requests the server received)."""
    from tests.judge_script import ScriptedJudge
    with FakeOpenAI() as server:
        server.set_chat_handler(ScriptedJudge())
        code, out = run_sample(tmp_path, config.replace("{url}", server.openai_base_url), "cap")
        assert code == 0
        return out, server.stats()["total"]


JUDGE_EP = "endpoints:\n  judge: {base_url: '{url}', requests_per_second: 500, max_concurrency: 4"


def test_a_run_past_its_call_cap_completes_and_says_so(tmp_path):
    out, requests = _run_capped(tmp_path, JUDGE_EP + "}\n"
                                "judge: {endpoint: judge, model: j, max_calls: 2}\n"
                                "metrics: [judge_relevance, bleu]\n")
    assert requests == 2
    m = manifest(out, "cap")
    assert m["reconciliation"]["ok"]
    assert m["spend_caps"] == {"judge.max_calls": {"cap": 2.0, "used": 2, "refused_calls": 1,
                                                   "reached": True}}
    rel = {s["case_id"]: s for s in read_rows(out, "scores") if s["metric"] == "judge_relevance"}
    values = [rel[c]["value"] for c in ("c1", "c2", "c3")]
    assert sum(v is not None for v in values) == 2
    (capped,) = [rel[c] for c in ("c1", "c2", "c3") if rel[c]["value"] is None]
    assert capped["error"] == "budget reached: judge.max_calls (2 per run)"
    assert not [e for e in read_rows(out, "errors") if e["stage"] == "judge"]  # not a failure
    usage = read_rows(out, "usage")
    assert sum(u["budget_refused"] for u in usage) == 1 and sum(u["calls"] for u in usage) == 2
    with open(f"{out}/runs/cap/report.md", encoding="utf-8") as fh:
        assert "Spend cap `judge.max_calls` = 2: used 2, **reached**" in fh.read()
    with open(f"{out}/runs/cap/report.html", encoding="utf-8") as fh:  # the page people open
        assert "<p>Spend cap judge.max_calls = 2: used 2, reached: 1 call not sent" in fh.read()


@pytest.mark.parametrize("mode", ["calls", "n"])
def test_safety_votes_past_the_call_cap_are_budget_reached_not_failures(tmp_path, mode):
    """A safety vote the cap refused was not sent: its row's critics say
    "budget reached" (not "no majority ... failed") and nothing goes to errors/."""
    out, requests = _run_capped(tmp_path, JUDGE_EP + "}\n"
                                f"judge: {{endpoint: judge, model: j, max_calls: 2, "
                                f"safety: {{mode: {mode}}}}}\nmetrics: [safety_harmful, bleu]\n")
    assert requests == 2
    assert manifest(out, "cap")["reconciliation"]["ok"]
    assert not [e for e in read_rows(out, "errors") if e["stage"] == "judge"]
    harmful = [s for s in read_rows(out, "scores") if s["metric"] == "safety_harmful"]
    capped = [s for s in harmful if s["value"] is None and not s["error"].startswith("bot failed")]
    assert capped  # 2 requests cannot decide the 3 answered rows
    assert {s["error"] for s in capped} == {"budget reached: judge.max_calls (2 per run)"}


def test_a_call_one_cap_refused_is_not_counted_against_the_other_caps(tmp_path):
    """spend_caps says per cap what *it* refused: with max_calls reached, a
    max_cost and a token ceiling far from their limits are not 'reached'."""
    out, requests = _run_capped(tmp_path, JUDGE_EP + ", max_tokens_per_run: 10000000, "
                                "price_per_million: {input: 1.0, output: 2.0}}\n"
                                "judge: {endpoint: judge, model: j, max_calls: 2, "
                                "max_cost: 100.0}\nmetrics: [judge_relevance, bleu]\n")
    assert requests == 2
    caps = manifest(out, "cap")["spend_caps"]
    assert caps["judge.max_calls"]["refused_calls"] == 1 and caps["judge.max_calls"]["reached"]
    for name in ("judge.max_cost", "endpoints.judge.max_tokens_per_run"):
        assert (caps[name]["refused_calls"], caps[name]["reached"]) == (0, False), name
    usage = read_rows(out, "usage")
    assert "refused_by" not in usage[0] and sum(u["budget_refused"] for u in usage) == 1
    with open(f"{out}/runs/cap/report.md", encoding="utf-8") as fh:
        report = fh.read()
    assert re.search(r"Spend cap `judge\.max_cost` = 100: used [0-9.]+, not reached", report)


def test_embedding_requests_past_a_token_ceiling_say_budget_reached(tmp_path):
    """Rows whose embeddings a token ceiling refused say the cap, as the judge's
    and the classifier's do, not 'embedding failed: EmbeddingError: ...'."""
    out, requests = _run_capped(tmp_path, "endpoints:\n  emb: {base_url: '{url}', "
                                "requests_per_second: 500, max_tokens_per_run: 1}\n"
                                "embeddings: {provider: endpoint, endpoint: emb, model: e}\n"
                                "metrics: [answer_similarity, bleu]\n")
    assert requests == 0
    sim = [s for s in read_rows(out, "scores") if s["metric"] == "answer_similarity"
           and not (s["error"] or "").startswith(("bot failed", "no expected_answer"))]
    assert sim and {s["error"] for s in sim} == {
        "budget reached: endpoints.emb.max_tokens_per_run (1 per run)"}
    assert not [e for e in read_rows(out, "errors") if e["stage"] != "bot"]  # not a failure


def test_a_token_ceiling_that_refuses_one_embeddings_request_nulls_only_its_rows(tmp_path):
    """60 rows, one Beam batch, 120 texts: two requests of 64 and 56 texts. The
    ceiling lets the first through and refuses the second: the 32 rows whose
    reference and answer the first request embedded keep answer_similarity;
    only the other 28 are null, with the cap's reason (all 60 were null)."""
    filler = " ".join(["w"] * 18)  # many words: the server counts more tokens than estimated
    rows = [{"case_id": f"e{i:02d}", "question": f"question {i}",
             "expected_answer": f"reference {i:02d} {filler}", "answer": f"answer {i:02d} {filler}"}
            for i in range(60)]
    config = ("endpoints:\n  emb: {base_url: '{url}', requests_per_second: 500, "
              "max_tokens_per_run: 1000}\n"
              "embeddings: {provider: endpoint, endpoint: emb, model: e}\n"
              "metrics: [answer_similarity]\n")
    with FakeOpenAI() as server:
        code, out = run_sample(tmp_path, config.replace("{url}", server.openai_base_url), "cap",
                               rows)
        sent = [r.json["input"] for r in server.requests if r.path == "/v1/embeddings"]
    assert code == 0 and len(sent) == 1 and len(sent[0]) == 64
    embedded = set(sent[0])
    sim = {s["case_id"]: s for s in read_rows(out, "scores") if s["metric"] == "answer_similarity"}
    assert len(sim) == 60
    for r in rows:
        s = sim[r["case_id"]]
        if {r["expected_answer"], r["answer"]} <= embedded:
            assert s["value"] is not None and s["error"] is None, s
        else:
            assert s["value"] is None, s
            assert s["error"] == "budget reached: endpoints.emb.max_tokens_per_run (1000 per run)"
    assert sum(s["value"] is not None for s in sim.values()) == 32
    usage = read_rows(out, "usage")
    assert sum(u["calls"] for u in usage) == 1 and sum(u["budget_refused"] for u in usage) == 1


def test_a_failed_call_that_reported_tokens_counts_them_against_the_caps():
    """A judge call whose attempts were all HTTP 200 without an answer (retried:
    transforms/remote/client.py `reject`) used the tokens its replies report,
    and usage/ counts them; the spend caps counted 0 tokens and 0 cost for any
    failed call, so unusable replies could spend past judge.max_cost."""
    from transforms.remote.budget import actual_use
    price = {"input": 1.0, "output": 2.0}
    used = actual_use("llm", "judge:x", False, 600, 300, 50.0, price)
    assert used[tokens_scope("llm")] == 900.0
    assert used[JUDGE_COST] == pytest.approx((600 * 1.0 + 300 * 2.0) / 1e6)
    nothing = actual_use("llm", "judge:x", False, 0, 0, 50.0, price)  # a 500: nothing used
    assert nothing[tokens_scope("llm")] == 0.0 and nothing[JUDGE_COST] == 0.0
    guessed = actual_use("llm", "judge:x", True, 0, 0, 50.0, price)  # no usage block
    assert guessed[tokens_scope("llm")] == 50.0


def test_judge_replies_without_token_counts_count_against_the_cost_cap(tmp_path):
    """A judge reply without `usage` cost 0 to judge.max_cost (the token ceiling
    counted its prompt estimate), so against such a server the cost cap was never
    reached and spend_caps said 'used 0'. It now costs its prompt estimate."""
    from transforms.remote.budget import actual_use
    guessed = actual_use("llm", "judge:x", True, 0, 0, 1000.0, {"input": 1.0, "output": 2.0})
    assert guessed[JUDGE_COST] == pytest.approx(1000 * 1.0 / 1e6)
    from tests.judge_script import ScriptedJudge
    with FakeOpenAI(ServerConfig(omit_usage=True)) as server:
        server.set_chat_handler(ScriptedJudge())
        code, out = run_sample(tmp_path, (
            JUDGE_EP + ", price_per_million: {input: 1000000.0, "
            "output: 0.0}}\njudge: {endpoint: judge, model: j, max_cost: 1000000.0}\n"
            "metrics: [judge_relevance, bleu]\n").replace("{url}", server.openai_base_url), "cap")
        assert code == 0
    m = manifest(out, "cap")
    estimated = m["usage"]["unreported_tokens"]["judge"]["estimated_prompt_tokens"]
    assert estimated > 0
    # input price 1 per token: the cap's use is the prompts' estimate, as the ledger counted
    assert m["spend_caps"]["judge.max_cost"]["used"] == pytest.approx(estimated, abs=1)


def test_a_cost_cap_below_one_call_sends_nothing_and_the_console_says_so(tmp_path, capsys):
    """judge.max_cost smaller than one call's cost: every judge call is refused
    and the run exits 0; the console said nothing about it, so a user who did
    not open report.md saw only WARN rows and thought the judge had run."""
    out, requests = _run_capped(tmp_path, JUDGE_EP + ", price_per_million: {input: 1, output: 2}}\n"
                                "judge: {endpoint: judge, model: j, max_cost: 0.0000001}\n"
                                "metrics: [judge_relevance, bleu]\n")
    assert requests == 0
    caps = manifest(out, "cap")["spend_caps"]
    assert caps["judge.max_cost"]["reached"] and caps["judge.max_cost"]["refused_calls"] == 3
    assert "budget reached: judge.max_cost (1e-07 per run)" in {
        s["error"] for s in read_rows(out, "scores") if s["metric"] == "judge_relevance"}
    err = capsys.readouterr().err
    assert "evalbeam: note: Spend cap judge.max_cost = 1e-07: used 0.0000, reached: 3 calls " \
           "not sent; their rows' metrics are null with budget reached." in err
