"""Issue 9 items 3 and 4, issue 12 item 3: a run id is published atomically
(the manifest, written last, is the completion marker and lists the files),
one attempt at a time (the lease), and a detached run is followed with
`evalbeam status`."""
from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time

import duckdb
import pytest

from tests.conftest import ROOT, write_cases
from tests.pipeline_helpers import manifest, run_cli
from transforms.publish import lease as leases
from transforms.publish.commit import PAUSE_ENV

CFG = "bots:\n  - {name: recorded, type: precomputed}\n  - {name: echo, type: precomputed}\n" \
      "metrics: [exact_match, bleu]\n"


def _cases(tmp_path, n: int, name: str) -> str:
    rows = [{"case_id": f"{name}{i}", "question": f"Question {i} about refunds?",
             "expected_answer": "Refunds take 30 days.", "answer": f"Refunds take {i} days."}
            for i in range(n)]
    return write_cases(str(tmp_path / f"{name}.parquet"), rows)


@pytest.fixture
def setup(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CFG)
    return str(cfg), str(tmp_path / "out")


def _args(cases: str, out: str, cfg: str, run_id: str, *extra: str) -> list[str]:
    return ["--input", cases, "--output", out, "--config", cfg, "--run-id", run_id,
            "--run-date", "2026-11-21", *extra]


def _start(args: list[str], pause: str | None = None, command: str = "run"
           ) -> subprocess.Popen:
    env = {**os.environ, **({PAUSE_ENV: pause} if pause else {})}
    return subprocess.Popen([sys.executable, "-m", "pipeline", command, *args], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _wait_for(predicate, timeout: float = 120.0, what: str = ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _paused(out: str, run_id: str, step: str, proc: subprocess.Popen) -> str:
    def found():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (exit {proc.returncode}): "
                                 f"{proc.stderr.read()[-3000:]}")
        return glob.glob(os.path.join(out, "_tmp", f"{run_id}-*", f"paused.{step}"))
    return _wait_for(found, what=f"the pause at {step}")[0]


def _kill(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def committed_count(out: str, run_id: str, table: str = "results") -> tuple[int, str]:
    """What a reader that follows the protocol sees: the manifest, then the files
    it lists (read with DuckDB, hive partitions), rows of the run id."""
    m = manifest(out, run_id)
    files = [os.path.join(out, p) for p in m["files"][table]]
    con = duckdb.connect()
    n = con.execute("select count(*) from read_parquet(?, hive_partitioning=true) "
                    "where run_id = ?", [files, run_id]).fetchone()[0]
    assert n == m["tables"][table]
    return n, m["attempt"]


def glob_count(out: str, run_id: str) -> int:
    con = duckdb.connect()
    return con.execute(f"select count(*) from read_parquet('{out}/results/**/*.parquet', "
                       "hive_partitioning=true) where run_id = ?", [run_id]).fetchone()[0]


def _status(out: str, run_id: str, capsys) -> tuple[int, str]:
    capsys.readouterr()  # what earlier commands printed
    code = run_cli_status(out, run_id)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def run_cli_status(out: str, run_id: str) -> int:
    from pipeline.cli import run
    return run(["status", "--output", out, "--run-id", run_id])


def test_sigkill_during_finalize_leaves_a_complete_readable_run(tmp_path, setup, capsys):
    """Killed at `commit` (the new files are moved in, the marker is not written
    yet), then at `supersede` (the moment the old files start to change, after
    the marker): each time the id reads whole through its marker, and the next
    run of the id takes over at once and leaves nothing of the killed attempt."""
    cfg, out = setup
    assert run_cli(*_args(_cases(tmp_path, 10, "a"), out, cfg, "k")) == 0
    before, old_attempt = committed_count(out, "k")
    assert before == 20
    proc = _start(_args(_cases(tmp_path, 15, "b"), out, cfg, "k"), pause="commit")
    _paused(out, "k", "commit", proc)
    _kill(proc)
    assert committed_count(out, "k") == (20, old_attempt)  # the killed attempt is invisible
    code, said = _status(out, "k", capsys)
    assert code == 1 and said.startswith("run k: failed") and "is gone" in said, said

    proc = _start(_args(_cases(tmp_path, 15, "b"), out, cfg, "k"), pause="supersede")
    _paused(out, "k", "supersede", proc)
    _kill(proc)
    count, attempt = committed_count(out, "k")
    assert count == 30 and attempt != old_attempt  # committed just before the kill
    code, said = _status(out, "k", capsys)
    assert code == 0 and said.startswith("run k: finished"), said

    assert run_cli(*_args(_cases(tmp_path, 12, "c"), out, cfg, "k")) == 0
    assert committed_count(out, "k")[0] == 24 == glob_count(out, "k")
    assert os.listdir(os.path.join(out, "_tmp")) == []
    listed = {os.path.join(out, p) for p in manifest(out, "k")["files"]["results"]}
    assert set(glob.glob(os.path.join(out, "results", "**", "part-k.*"), recursive=True)) \
        == listed
    assert sorted(os.listdir(os.path.join(out, "runs", "k"))) == ["manifest.json", "report.html", "report.md"]


def test_reader_polling_during_a_rerun_never_sees_a_wrong_count(tmp_path, setup,
                                                                 monkeypatch):
    cfg, out = setup
    assert run_cli(*_args(_cases(tmp_path, 10, "a"), out, cfg, "p")) == 0
    seen, glob_seen, retries, failures = [], [], [0], []
    done = threading.Event()

    def reader():
        while not done.is_set():
            try:
                seen.append(committed_count(out, "p"))  # asserts the count is the marker's
                glob_seen.append(glob_count(out, "p"))
            except duckdb.Error:
                retries[0] += 1  # a listed file was superseded while being read: read again
            except BaseException as exc:  # a wrong count: the test fails below
                failures.append(exc)
                return
    thread = threading.Thread(target=reader)
    thread.start()
    try:
        monkeypatch.setenv(PAUSE_ENV, "supersede:1.5")  # widen the window both attempts exist
        assert run_cli(*_args(_cases(tmp_path, 15, "b"), out, cfg, "p")) == 0
        time.sleep(0.3)
    finally:
        done.set()
        thread.join()
    assert not failures, failures
    counts = [n for n, _ in seen]
    assert set(counts) == {20, 30}, set(counts)  # only whole attempts, both were observed
    assert counts.index(30) > 0 and 20 not in counts[counts.index(30):]  # no going back
    assert len(seen) > 10
    assert min(glob_seen) >= 20  # a glob reader never sees a gap (it may see both attempts)


def test_two_runs_of_one_id_at_once_and_ids_side_by_side(tmp_path, setup, capsys):
    cfg, out = setup
    cases = _cases(tmp_path, 5, "a")
    proc = _start(_args(cases, out, cfg, "L"), pause="publish")
    try:
        _paused(out, "L", "publish", proc)
        capsys.readouterr()
        assert run_cli(*_args(cases, out, cfg, "L")) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("evalbeam: error: run id 'L' is being run by ") and "\n" not in err
        assert f"pid {proc.pid}" in err
        assert run_cli(*_args(cases, out, cfg, "L-other")) == 0  # another id: side by side
        code, said = _status(out, "L", capsys)
        assert code == 5 and said.startswith("run L: running (attempt ")
    finally:
        _kill(proc)
    code, said = _status(out, "L", capsys)
    assert code == 1 and "failed" in said and "is gone" in said
    assert run_cli(*_args(cases, out, cfg, "L")) == 0
    assert "took over run id 'L'" in capsys.readouterr().err
    code, said = _status(out, "L", capsys)
    assert code == 0 and said.startswith("run L: finished")
    assert committed_count(out, "L")[0] == 10 == glob_count(out, "L")
    assert _status(out, "nope", capsys)[0] == 2


def test_stale_heartbeat_frees_the_lease(tmp_path):
    out = str(tmp_path / "out")
    lease = leases.new_lease("s", "a" * 12, ttl_s=1.0, runner_local=False)
    assert leases.acquire(out, lease, lambda: None)[1] is None
    newcomer = leases.new_lease("s", "b" * 12, ttl_s=1.0, runner_local=False)
    with pytest.raises(leases.LeaseHeld, match="being run by"):
        leases.acquire(out, newcomer, lambda: None)
    beat = leases.Heartbeat.start(out, "s", "a" * 12, 1.0)
    time.sleep(1.3)  # the heartbeat keeps it held past its ttl
    with pytest.raises(leases.LeaseHeld):
        leases.acquire(out, newcomer, lambda: None)
    beat.stop()
    time.sleep(1.3)
    assert "no heartbeat for" in leases.acquire(out, newcomer, lambda: None)[1]
    assert leases.read_lease(out, "s").attempt == "b" * 12
    late = leases.new_lease("s", "c" * 12, ttl_s=1.0, runner_local=False)
    with pytest.raises(leases.LeaseHeld):  # one takeover per stale attempt
        leases.acquire(out, late, lambda: None)


def test_a_taker_killed_mid_takeover_does_not_lock_the_run_id_for_good(tmp_path):
    """A run killed between creating takeover.<attempt> and writing the lease
    left the marker behind, and every later run of the id exited 2 ("another
    run is taking over the stale lease ... right now") while `status` said a new
    run takes over. A marker whose taker is gone (or older than its ttl) is
    passed over; a live taker's marker still makes a newcomer step back."""
    out = str(tmp_path / "out")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    crashed = leases.new_lease("k", "a" * 12, ttl_s=300.0, runner_local=True, pid=dead.pid)
    assert leases.acquire(out, crashed, lambda: None)[1] is None
    taker = leases.new_lease("k", "b" * 12, ttl_s=300.0, runner_local=True, pid=dead.pid)
    marker = os.path.join(out, "runs", "k", "takeover." + "a" * 12)
    with open(marker, "wb") as fh:  # the taker died before it wrote the lease
        fh.write(leases._encode(taker))
    live = leases.new_lease("k", "c" * 12, ttl_s=300.0, runner_local=True)
    got, why = leases.acquire(out, live, lambda: None)
    assert "is gone" in why and leases.read_lease(out, "k").attempt == "c" * 12
    # a taker that is alive right now (this process) still wins its takeover
    os.remove(leases.lease_path(out, "k"))
    assert leases.acquire(out, crashed, lambda: None)[1] is None
    for name in os.listdir(os.path.dirname(marker)):
        if name.startswith("takeover."):
            os.remove(os.path.join(os.path.dirname(marker), name))
    with open(marker, "wb") as fh:
        fh.write(leases._encode(live))
    with pytest.raises(leases.LeaseHeld, match="taking over the stale lease"):
        leases.acquire(out, leases.new_lease("k", "d" * 12, 300.0, True), lambda: None)


def test_detached_run_returns_at_once_and_status_follows_it(tmp_path, setup, capsys,
                                                            monkeypatch):
    cfg, out = setup
    monkeypatch.setenv(PAUSE_ENV, "commit:2")  # for the detached process
    assert run_cli(*_args(_cases(tmp_path, 8, "d"), out, cfg, "d", "--detach")) == 0
    stdout = capsys.readouterr().out
    assert "run d: started (attempt " in stdout
    assert f"evalbeam status --output {out} --run-id d" in stdout
    code, said = _status(out, "d", capsys)
    assert code == 5 and said.startswith("run d: running")  # the launcher did not wait

    def finished():
        code, said = _status(out, "d", capsys)
        assert code in (0, 5), said
        return code == 0 and said
    said = _wait_for(finished, what="the detached run to finish")
    m = manifest(out, "d")
    assert m["reconciliation"]["ok"] and committed_count(out, "d")[0] == 16
    assert "counts reconcile" in said
    # the lease is released just after the completion marker is written
    _wait_for(lambda: not os.path.exists(leases.lease_path(out, "d")), 30, "the lease's release")
    log = os.path.join(out, "runs", "d", f"log.{m['attempt']}.txt")
    _wait_for(lambda: "run d: 8 input rows" in open(log).read(), 30, "the log's last lines")


def test_the_status_command_a_detached_run_prints_can_be_pasted(capsys):
    """An output folder with a space (or a quote) is quoted for the shell."""
    import shlex

    from pipeline.execute import print_submitted
    from transforms.publish.finalize import RunInfo
    out = "/tmp/my evals/it's ü"
    info = RunInfo("d", "2026-11-25", out, "cases.parquet", 8, ("recorded",), (), frozenset())
    print_submitted(info, "pid 1, log x")
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith("check it with: ")
    assert shlex.split(line[len("check it with: "):]) == [
        "evalbeam", "status", "--output", out, "--run-id", "d"]


def test_a_lease_file_left_empty_by_a_kill_is_taken_over(tmp_path, capsys):
    """Before, status said "no run 'e' under OUT (no lease, no manifest)" of a
    folder whose lease file is there but unreadable, which a re-run takes over."""
    out = str(tmp_path / "out")
    os.makedirs(os.path.join(out, "runs", "e"))
    open(leases.lease_path(out, "e"), "w").close()  # killed between create and write
    code, said = _status(out, "e", capsys)
    assert code == 2 and said.strip() == (
        f"evalbeam: error: run e: its lease {leases.lease_path(out, 'e')} is unreadable (cut "
        "short, or not written by this evalbeam) and it has no completion marker: no attempt "
        "can be followed; a new run of the id takes over"), said
    lease, taken = leases.acquire(out, leases.new_lease("e", "a" * 12, 300, True), lambda: None)
    assert "the lease file is unreadable" in taken
    assert leases.read_lease(out, "e") == lease


def test_comparison_files_are_those_the_run_took_part_in(tmp_path):
    """comparisons/ files and compare pages of run 'a' as candidate or baseline,
    told apart from a bot named 'a' and from a run id that starts with 'a'."""
    from transforms.publish.commit import comparison_files
    out = str(tmp_path)
    made = ["comparisons/run_date=2024-01-01/part-b.a.parquet",         # b vs a
            "comparisons/run_date=2024-01-02/part-a.c.parquet",         # a vs c
            "comparisons/run_date=2024-01-01/part-a.a.x.vs.y.parquet",  # bots of a
            "comparisons/run_date=2024-01-01/part-c.b.y.vs.a.parquet",  # bot named a
            "comparisons/run_date=2024-01-01/part-ab.c.parquet",        # run ab
            "runs/b/compare/a.md", "runs/b/compare/a.html", "runs/a/compare/c.md",
            "runs/c/compare/b.y.vs.a.md", "runs/ab/compare/c.html", "runs/c/compare/ab.md"]
    for name in made:
        os.makedirs(os.path.dirname(os.path.join(out, name)), exist_ok=True)
        open(os.path.join(out, name), "w").close()
    found = sorted(os.path.relpath(p, out) for p in comparison_files(out, "a"))
    assert found == sorted(made[:3] + made[5:8])
    assert comparison_files(str(tmp_path / "nothing"), "a") == []


def test_a_workers_failure_is_said_by_the_exception_that_ended_it():
    """A worker's failure arrives as its whole traceback; the one-line error
    (300 characters) showed only its outermost frames, never the cause."""
    from pipeline.execute import failure_text
    frames = "".join(f'  File "apache_beam/runners/worker/mod{i}.py", line {i}, in f\n'
                     f"    call_{i}()\n" for i in range(20))
    exc = RuntimeError("Traceback (most recent call last):\n" + frames +
                       "ModuleNotFoundError: No module named 'mymetrics' "
                       "[while running 'Score/ScoreAll']\n")
    said = failure_text(exc)
    assert said.startswith("ModuleNotFoundError: No module named 'mymetrics' "
                           "[while running 'Score/ScoreAll']")
    assert len(" ".join(said.split())[:300]) <= 300 and "mymetrics" in said[:300]
    assert failure_text(ValueError("plain")) == "ValueError: plain"


def test_a_failure_is_said_by_its_raising_line_whatever_its_class_is_called():
    """Before: only a class named ...Error/Exception/Exit/Interrupt/Failure was
    found, so a custom metric's `class Boom(Exception)` showed the top of the
    worker's traceback. The raising line is now the first at the margin after
    the last frame, as Python formats it (a real traceback here, tagged as
    Beam tags a DoFn's exception, with a message of two lines)."""
    import traceback

    from pipeline.execute import failure_text

    class Boom(Exception):
        pass

    def metric():
        raise Boom("the metric broke\nsecond line [while running 'Score/ScoreAll']")
    try:
        metric()
    except Boom as exc:
        worker = "".join(traceback.format_exception(exc))
    said = failure_text(RuntimeError(worker))
    assert said.endswith("Boom: the metric broke (from: RuntimeError: Traceback (most recent "
                         "call last):)"), said
    assert failure_text(RuntimeError("Traceback (most recent call last):\n  File \"x.py\", "
                                     "line 1, in f\n    f()\nCrash: gone\n")).startswith(
        "Crash: gone (from:")


def test_readers_of_a_killed_run_say_it_failed_as_status_does(tmp_path, setup, capsys):
    """compare, calibrate and read_run() of a run id whose only attempt was
    killed (SIGKILL, no marker) said '... attempt A has its lease (running,
    user@host pid N) ...', while `evalbeam status` of the same id said
    'failed (...: its process N on HOST is gone)': a CI log read the run as
    still going. They now say why it failed, as status does."""
    import evalbeam
    from pipeline.cli import run
    cfg, out = setup
    cases = _cases(tmp_path, 5, "a")
    assert run_cli(*_args(cases, out, cfg, "base")) == 0
    proc = _start(_args(cases, out, cfg, "gone"), pause="publish")
    _paused(out, "gone", "publish", proc)
    _kill(proc)
    code, said = _status(out, "gone", capsys)
    assert code == 1 and f"its process {proc.pid} on " in said, said
    why = said.split(" by ")[0].replace("run gone: failed (", "")  # 'attempt A'
    for argv in (["compare", "--output", out, "--baseline", "base", "--candidate", "gone"],
                 ["calibrate", "--output", out, "--run-id", "gone"]):
        assert run(argv) == 2
        err = capsys.readouterr().err
        assert f"; {why} failed: its process {proc.pid} on " in err and "running" not in err, err
    with pytest.raises(ValueError, match=f"; {why} failed: its process {proc.pid} on .* is "
                                         "gone; see evalbeam status"):
        evalbeam.read_run(out, "gone")
