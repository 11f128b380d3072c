"""Progress: what a process counts, the objects workers write under the run
folder, the line and bar people read, `evalbeam status` on a running run,
and the line that states each endpoint's limits."""
from __future__ import annotations

import io
import json
import os
import re
import time
from types import SimpleNamespace

import pytest

from pipeline.config import parse_config
from pipeline.plan import limit_lines, share_limits
from pipeline.postrun.status import run_status
from pipeline.watch import Watch, run_figures
from transforms.progress import tally
from transforms.publish import progress_objects as objects
from transforms.progress.text import figures, progress_bar, progress_line
from transforms.publish import lease as leases
from transforms.publish.finalize import RunInfo


def _call(endpoint="llm", attempts=1, ok=True, cache_hit=False, rate_limited=0,
          budget_refused=False):
    return SimpleNamespace(endpoint=endpoint, attempts=attempts, ok=ok, cache_hit=cache_hit,
                           rate_limited=rate_limited, budget_refused=budget_refused)


def test_a_tally_counts_written_rows_errors_and_requests():
    t = tally.Tally()
    t.row("results", {"error": None})
    t.row("results", {"error": "HTTP 500"})
    t.row("errors", {"stage": "read", "error_type": "invalid_value"})
    t.row("errors", {"stage": "read", "error_type": "duplicate_case_id"})  # not an input row
    t.row("errors", {"stage": "bot", "error_type": "bot_error"})  # counted from results/
    t.row("errors", {"stage": "judge", "error_type": "judge_call_failed"})
    t.row("scores", {"metric": "bleu"})
    t.call(_call(attempts=3, rate_limited=1))
    t.call(_call(ok=False))
    t.call(_call(cache_hit=True))  # no request went out
    t.call(_call(ok=False, attempts=0, budget_refused=True))  # a spend cap: nothing sent
    snap = t.snapshot()
    assert (snap["turns"], snap["bot_errors"], snap["invalid_rows"], snap["judge_errors"]) == \
        (2, 1, 1, 1)
    assert snap["calls"] == {"llm": {"calls": 2, "retries": 2, "failures": 1,
                                     "rate_limited": 1}}


def _totals(**kw):
    base = {"workers": 2, "turns": 0, "bot_errors": 0, "invalid_rows": 0, "judge_errors": 0,
            "calls": {}, "first_turn_at": None, "started": 0.0, "at": 0.0}
    return {**base, **kw}


def test_figures_line_and_bar():
    totals = _totals(turns=2400, invalid_rows=0, bot_errors=3, first_turn_at=100.0, at=160.0,
                     calls={"llm": {"calls": 1532, "retries": 3, "failures": 2,
                                    "rate_limited": 0}})
    f = figures(totals, total=3300, bots=2, now=160.0, started=40.0)
    assert f.done == 1200 and f.rate == pytest.approx(20.0) and f.eta_s == pytest.approx(105)
    line = progress_line(f)
    assert line.startswith("1,200/3,300 cases (36%) · 20.0 cases/s · ETA 1 min 45 s · ")
    assert "errors 3 (3 bot)" in line
    assert "calls: llm 1,532 (12.8/s, 3 retries, 2 failed, 0 rate-limited)" in line
    assert progress_bar(f).startswith("[########................] 1,200/3,300")
    empty = figures(None, total=5000, bots=1, now=10.0, started=0.0)
    assert progress_line(empty) == "0/5,000 cases (0%) · starting · errors 0"
    done = figures(_totals(turns=10, invalid_rows=2, first_turn_at=1.0, at=5.0), 12, 1, 5, 0)
    assert done.done == 12 and done.eta_s == 0 and "ETA" not in progress_line(done)


def _lease(out: str, run_id: str = "r", attempt: str = "a" * 12, **kw) -> leases.Lease:
    lease, _ = leases.acquire(out, leases.new_lease(run_id, attempt, 300, True, **kw),
                              lambda: None)
    return lease


def test_workers_objects_are_summed_and_go_with_the_lease(tmp_path):
    out = str(tmp_path)
    _lease(out, planned_rows=100, bots=1)
    writer = objects.ProgressWriter.start(out, "r", "a" * 12)
    try:
        for _ in range(30):
            writer.tally.row("results", {"error": None})
        writer.tally.call(_call("judge"))
        assert writer.write()
        other = os.path.join(objects.progress_dir(out, "r"), f"{'a' * 12}.host-2-x.json")
        with open(other, "w") as fh:  # a second worker process's object
            json.dump({"turns": 12, "bot_errors": 1, "invalid_rows": 3, "judge_errors": 0,
                       "calls": {"judge": {"calls": 5, "retries": 1, "failures": 0,
                                           "rate_limited": 0}},
                       "first_turn_at": time.time() - 10, "at": time.time(),
                       "started": time.time() - 20}, fh)
        stale = os.path.join(objects.progress_dir(out, "r"), f"{'b' * 12}.host-3-y.json")
        with open(stale, "w") as fh:  # an older attempt's: not summed
            json.dump({"turns": 999}, fh)
        totals = objects.read_totals(out, "r", "a" * 12)
        assert totals["workers"] == 2 and totals["turns"] == 42
        assert totals["invalid_rows"] == 3 and totals["calls"]["judge"]["calls"] == 6
        status = run_status(out, "r")
        assert status.state == "running"
        assert status.details[0].startswith("progress: 45/100 cases (45%) · ")
        assert "calls: judge 6 (" in status.details[0]
        assert stale in leases.stale_files(out, "r", "a" * 12)
        assert other not in leases.stale_files(out, "r", "a" * 12)
    finally:
        writer.stop()
    leases.release(out, "r", "a" * 12)
    assert objects.worker_objects(out, "r", "a" * 12) == []
    assert not writer.write()  # no lease: nothing written any more
    assert objects.worker_objects(out, "r", "a" * 12) == []


def test_status_counts_one_worker_process_in_the_singular(tmp_path):
    """The FnApiRunner in memory: the launching process is the one worker."""
    out = str(tmp_path)
    _lease(out, planned_rows=10, bots=1)
    writer = objects.ProgressWriter.start(out, "r", "a" * 12)
    try:
        writer.tally.row("results", {"error": None})
        assert writer.write()
        assert run_status(out, "r").details[0].endswith(" (from 1 worker process)")
    finally:
        writer.stop()
    leases.release(out, "r", "a" * 12)


def test_status_of_a_run_no_worker_reported_yet(tmp_path):
    out = str(tmp_path)
    _lease(out, planned_rows=3300, bots=2)
    status = run_status(out, "r")
    assert status.details[0] == "progress: 0/3,300 cases (no worker has reported yet)"


def test_watch_prints_a_line_when_figures_move_and_a_bar_on_a_terminal(tmp_path):
    out = str(tmp_path)
    _lease(out)
    info = RunInfo(run_id="r", run_date="2026-01-01", output=out, input="i", planned_rows=50,
                   bots=("a",), metrics=(), lower_is_better=frozenset(), attempt="a" * 12,
                   started=time.time() - 5)
    writer = objects.ProgressWriter.start(out, "r", "a" * 12)
    stream = io.StringIO()
    watch = Watch(info, stream, interval_s=0.05)
    try:
        watch._show()  # nothing yet: a first line
        watch._show()  # nothing moved: no second line
        for _ in range(20):
            writer.tally.row("results", {"error": None})
        writer.write()
        watch._show()
    finally:
        writer.stop()
    lines = stream.getvalue().splitlines()
    assert [re.match(r"evalbeam: (\d+)/50 cases", x).group(1) for x in lines] == ["0", "20"]
    assert run_figures(info).done == 20

    class Tty(io.StringIO):
        def isatty(self):
            return True
    tty = Tty()
    bar = Watch(info, tty, interval_s=0.05)
    bar._show()
    assert tty.getvalue().startswith("\r[#########...............] 20/50 cases (40%)")


def test_one_line_per_endpoint_states_its_limits():
    cfg = parse_config({"endpoints": {
        "llm": {"base_url": "http://127.0.0.1:1/v1"},
        "judge": {"base_url": "http://127.0.0.1:2/v1", "requests_per_second": 50,
                  "tokens_per_minute": 200000, "max_concurrency": 16},
        "nli": {"base_url": "http://127.0.0.1:3", "max_tokens_per_run": 1500}}}, ".")
    assert limit_lines(cfg, 1) == (
        "endpoint judge: at most 50 requests/s, 16 at a time, 200,000 tokens/min",
        "endpoint llm: at most 10 requests/s (the default; set "
        "endpoints.llm.requests_per_second to change it), 8 at a time, no tokens/min limit",
        "endpoint nli: at most 10 requests/s (the default; set "
        "endpoints.nli.requests_per_second to change it), 8 at a time, no tokens/min limit, "
        "at most 1,500 tokens per run (max_tokens_per_run)")
    shared = limit_lines(share_limits(cfg, 4), 4)
    assert shared[0].endswith("; each of 4 worker processes keeps to 0.25 of that "
                              "(12.5 requests/s)")


def test_start_up_lines_state_only_the_endpoints_the_run_calls(tmp_path):
    """Every configured endpoint had its limits stated, also one nothing in the run
    used (examples/custom/config.yaml with its judge: block removed said 'endpoint
    llm: at most 10 requests/s ...'). Now the limits are those of the endpoints the
    run calls (bots, judge, classifier, embeddings), with one line for the others."""
    from tests.test_cli_flags import plan
    ep = "{base_url: 'http://127.0.0.1:9/v1'}"
    config = (f"endpoints: {{bots: {ep}, emb: {ep}, judging: {ep}, spare: {ep}}}\n"
              "bots: [{name: c, type: chat, endpoint: bots, model: m}]\n"
              "embeddings: {provider: endpoint, endpoint: emb, model: e}\n"
              "judge: {endpoint: judging, model: j}\n"
              "metrics: [exact_match, answer_similarity]\n")  # nothing asks the judge
    limits = plan(tmp_path, config).limits
    assert [line.split(":")[0] for line in limits] == ["endpoint bots", "endpoint emb",
                                                       "endpoints judging, spare"]
    assert limits[-1] == ("endpoints judging, spare: unused (no bot, judge, classifier or "
                          "embeddings of this run calls them)")
    asked = plan(tmp_path, config.replace("exact_match", "faithfulness")).limits
    assert [line.split(":")[0] for line in asked] == ["endpoint bots", "endpoint emb",
                                                      "endpoint judging", "endpoint spare"]
    assert asked[-1].endswith("unused (no bot, judge, classifier or embeddings of this run "
                              "calls it)")


def test_a_rate_the_config_writes_is_not_called_the_default_even_when_it_is_10():
    """migrating-ragas.md and others write `requests_per_second: 10`: the start-up line
    must not tell that user to set the key they set."""
    cfg = parse_config({"endpoints": {
        "llm": {"base_url": "http://127.0.0.1:1/v1", "requests_per_second": 10},
        "nli": {"base_url": "http://127.0.0.1:3"}}}, ".")
    assert limit_lines(cfg, 1) == (
        "endpoint llm: at most 10 requests/s, 8 at a time, no tokens/min limit",
        "endpoint nli: at most 10 requests/s (the default; set "
        "endpoints.nli.requests_per_second to change it), 8 at a time, no tokens/min limit")
    assert "requests_per_second_set" not in str(cfg.to_public_dict())  # the manifest as before


def test_calls_and_judged_turns_show_before_any_row_is_written(tmp_path):
    """On Dask a shard is written only after its stages ran: the progress line
    stayed at '0/N cases · starting' through a judge run's first minutes. A
    calling DoFn given the run's key writes the progress object from its first
    call, with the turns it answered or judged; the graph gives every one the key."""
    from pipeline.graph import reporting
    from transforms.remote.calling import CallingDoFn
    out = str(tmp_path)
    _lease(out, planned_rows=60, bots=1)
    key = (out, "r", "a" * 12)
    fn = reporting(CallingDoFn(), SimpleNamespace(info=SimpleNamespace(
        output=out, run_id="r", attempt="a" * 12, lease_ttl_s=300.0)))
    assert fn.progress_key == key
    assert reporting(CallingDoFn(), SimpleNamespace(info=SimpleNamespace(
        output=out, run_id="r", attempt="a" * 12, lease_ttl_s=None))).progress_key is None
    fn.open_calls({}, remote=False)
    try:
        for _ in range(7):
            tally.count_call(_call("judge"))
        for _ in range(3):
            fn.count_done("judged")
        assert fn._progress.write()
        info = SimpleNamespace(run_id="r", attempt="a" * 12, output=out, planned_rows=60,
                               bots=("b",), started=time.time())
        line = progress_line(run_figures(info))
        assert line.startswith("0/60 cases (0%) · starting · turns judged 3 · ")
        assert "calls: judge 7 (" in line
    finally:
        fn.teardown()
    leases.release(out, "r", "a" * 12)


def test_embedded_and_classified_turns_show_before_any_row_is_written(tmp_path):
    """A run with remote embeddings or a classifier and no judge showed no work
    between 'starting' and the first written shard on Dask: EmbedTurns and
    ClassifyTurns made calls but counted no turns through their stage."""
    from pipeline.config import EmbeddingsConfig, EndpointConfig
    from pipeline.graph import reporting
    from schemas.records import EvalCase, Turn
    from tests.fake_server import FakeOpenAI
    from transforms.enrich.classifier.stage import ClassifyTurns
    from transforms.enrich.embed import EmbedTurns
    from transforms.enrich.features import VEC_QUESTION
    out = str(tmp_path)
    _lease(out, planned_rows=60, bots=1)
    plan = SimpleNamespace(info=SimpleNamespace(output=out, run_id="r", attempt="a" * 12,
                                                lease_ttl_s=300.0))
    turns = [Turn(EvalCase(f"c{i}", f"question {i}?", f"reference {i}.",
                           contexts=(f"Refunds within {i} days.",)), "bot",
                  f"Refunds within {i} days.") for i in range(3)]
    with FakeOpenAI() as server:
        cfg = parse_config({"endpoints": {"nli": {"base_url": server.base_url,
                                                  "requests_per_second": 1000}},
                            "classifier": {"endpoint": "nli", "model": "fake-nli"}}, ".")
        emb = reporting(EmbedTurns(EmbeddingsConfig("endpoint", "emb", "e"), {
            "emb": EndpointConfig(base_url=server.openai_base_url, requests_per_second=1000)},
            frozenset({VEC_QUESTION})), plan)
        cls = reporting(ClassifyTurns(cfg.classifier, cfg.endpoints, None), plan)
        for fn in (emb, cls):
            fn.setup()
            try:
                assert len(list(fn.process(turns)) + list(fn.finish_bundle() or ())) >= 3
                assert fn._progress.write()
            finally:
                fn.teardown()
    info = SimpleNamespace(run_id="r", attempt="a" * 12, output=out, planned_rows=60,
                           bots=("b",), started=time.time())
    assert "· turns embedded 3, classified 3 · " in progress_line(run_figures(info))
    leases.release(out, "r", "a" * 12)


def test_an_endless_progress_interval_is_no_progress_not_a_traceback(tmp_path):
    """Before: EVALBEAM_PROGRESS_S=inf (or 1e400) made the watch thread wait
    forever, which raised OverflowError: 'Exception in thread evalbeam-watch'
    and its traceback in the middle of a run that went on (exit 0)."""
    from tests.conftest import SAMPLE_ROWS, write_cases
    from tests.pipeline_helpers import run_cli_subprocess
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    proc = run_cli_subprocess("--input", cases, "--output", str(tmp_path / "out"),
                              "--metrics", "bleu", env={"EVALBEAM_PROGRESS_S": "inf"})
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "cases (" not in proc.stderr, proc.stderr
