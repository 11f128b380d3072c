"""Stopping a local multi-process run: SIGTERM or SIGINT to the launcher (or
Ctrl-C, to its whole process group) stops its Beam worker processes, exits
with one line and the documented code, no traceback (a worker's either), and
leaves the run id to the next run (its lease is marked failed)."""
from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.conftest import write_cases
from tests.fake_server import FakeOpenAI, ServerConfig
from pipeline.stopping import exit_code
from schemas.tables import RESULTS
from tests.pipeline_helpers import ROOT, cli_in_process, manifest, read_rows, signal_when

N = 24


def _argv(cmd: list[str]) -> list[str]:
    """The CLI's arguments in a command `python -m pipeline run ...` (or `python -c
    CODE [ARG] run ...`): from `run` on. The status and the re-run after a stop run
    in this process (cli_in_process): they are not about the process boundary."""
    return cmd[cmd.index("run"):]


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


# Beam as if its local job service had changed `import subprocess` for `from
# subprocess import Popen`: stopping.py's patch of its `subprocess` no longer
# reaches the call that starts the workers.
CHANGED_BEAM = """
import inspect, subprocess, sys, textwrap
from apache_beam.runners.portability import local_job_service as ljs
source = textwrap.dedent(inspect.getsource(ljs.SubprocessSdkWorker.run))
ljs.Popen = subprocess.Popen
del ljs.subprocess
exec(compile(source.replace("subprocess.Popen(", "Popen("), ljs.__file__, "exec"), ljs.__dict__)
ljs.SubprocessSdkWorker.run = ljs.__dict__.pop("run")
from pipeline.cli import main
main()
"""


def _workers(procs: list[psutil.Process]) -> list[psutil.Process]:
    """Beam's SDK worker processes (and the shells that start them)."""
    return [p for p in _alive(procs) if "sdk_worker_main" in " ".join(p.cmdline())]


def test_the_installed_beam_starts_its_workers_where_stopping_expects():
    """stopping.py puts Beam's worker processes in their own process groups by
    patching the `subprocess` of local_job_service, whose SubprocessSdkWorker.run
    calls subprocess.Popen (apache-beam 2.77). An upgrade that moves that call
    fails here, by name, before a Ctrl-C shows it (the run then says so in one
    line and still ends its workers: the "changed" case below)."""
    import apache_beam

    from pipeline.stopping import beam_worker_call_site
    service, why = beam_worker_call_site()
    assert service is not None, f"apache-beam {apache_beam.__version__}: {why}"


@pytest.mark.parametrize("signum, code, group, beam", [
    (signal.SIGTERM, 143, False, "installed"),  # kill PID, a scheduler
    (signal.SIGINT, 130, False, "installed"),
    (signal.SIGINT, 130, True, "installed"),    # Ctrl-C in a terminal: the whole group
    (signal.SIGINT, 130, True, "changed"),      # ... with a Beam stopping.py does not know
])
def test_a_signal_stops_the_workers_and_the_run_id_can_run_again(tmp_path, signum, code,
                                                                  group, beam):
    rows = [{"case_id": f"s{i}", "question": f"How long is the refund window {i}?",
             "expected_answer": "Thirty days."} for i in range(N)]
    cases = write_cases(str(tmp_path / "cases.parquet"), rows)
    out = str(tmp_path / "out")
    with FakeOpenAI(ServerConfig(latency_s=1.0)) as server:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"endpoints:\n  llm: {{base_url: '{server.openai_base_url}', "
                       "max_concurrency: 1, requests_per_second: 100}\n"
                       "bots:\n  - {name: slow, type: chat, endpoint: llm, model: m}\n"
                       "metrics: [exact_match]\n")
        python = [sys.executable] + (["-m", "pipeline"] if beam == "installed"
                                     else ["-c", CHANGED_BEAM])
        cmd = python + ["run", "--input", cases, "--output", out,
                        "--config", str(cfg), "--run-id", "sig", "--runner=FnApiRunner",
                        "--direct_running_mode=multi_processing", "--direct_num_workers=2"]
        launcher = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
        me = psutil.Process(launcher.pid)
        try:
            deadline = time.monotonic() + 120
            while server.stats()["total"] < 2:  # the workers are calling the bot
                assert launcher.poll() is None, launcher.communicate()
                assert time.monotonic() < deadline, "the run never called the bot"
                time.sleep(0.2)
            children = me.children(recursive=True)
            assert len(_alive(children)) >= 2, children
            # the assumption stopping.py's Ctrl-C fix rests on, pinned against the
            # installed apache-beam: its workers are started by the Popen it patches,
            # so they are in process groups of their own
            own_group = {os.getpgid(p.pid) != os.getpgid(launcher.pid)
                         for p in _workers(children)}
            assert own_group == {beam == "installed"}, [p.cmdline() for p in children]
            if group:
                os.killpg(launcher.pid, signum)
            else:
                launcher.send_signal(signum)
            _, err = launcher.communicate(timeout=60)
        finally:
            if launcher.poll() is None:
                os.killpg(launcher.pid, signal.SIGKILL)
                launcher.wait()
        gone_by = time.monotonic() + 10  # the last child may take a moment to go
        while _alive(children) and time.monotonic() < gone_by:
            time.sleep(0.2)
        assert not _alive(children), [p.cmdline()[:4] for p in _alive(children)]
        assert launcher.returncode == code, err
        lines = err.strip().splitlines()
        unknown = "evalbeam: note: apache-beam starts its worker processes in a way"
        assert "Traceback" not in err, err[-3000:]
        if beam == "installed":
            assert unknown not in err, err[-3000:]
        else:  # said before the run; Ctrl-C reached the workers too, and they were ended:
            # their tracebacks are in the run's log, which the one line names
            said = [line for line in lines if line.startswith(unknown)]
            assert len(said) == 1, err[-3000:]
            attempt = lines[-2].split("(attempt ", 1)[1].split(")", 1)[0]  # the stop's line
            log = os.path.join(out, "runs", "sig", f"log.{attempt}.txt")
            assert "Ctrl-C reaches them" in said[0] and "still ends them" in said[0], said
            assert f"goes to {log})" in said[0], said
            assert "KeyboardInterrupt" in open(log, encoding="utf-8").read()
        assert lines[-2].startswith("evalbeam: error: run sig (attempt "), err
        assert f"stopped by {signal.Signals(signum).name};" in lines[-2]
        assert "a new run of the id takes over" in lines[-2]
        # what it was billed for, from its request journal (tests/test_request_journal.py)
        assert lines[-1].startswith("evalbeam: error: run sig; before it failed it sent "), err
        status = cli_in_process("status", "--output", out, "--run-id", "sig")
        assert status.returncode == 1 and "failed" in status.stdout, status
        server.configure(latency_s=0.0)
        again = cli_in_process(*_argv(cmd[:-2]))
    assert again.returncode == 0, again.stderr
    assert manifest(out, "sig")["reconciliation"]["ok"]
    assert len([r for r in read_rows(out, "results") if r["run_id"] == "sig"]) == N


def _signal_when_paused(cmd: list[str], out: str, pause: str, signum: int,
                        check=lambda: None) -> tuple[int, str, float]:
    """Run `cmd` (run id f) paused at a step (EVALBEAM_TEST_PAUSE_AT=pause), run
    check() there, signal it: (exit code, stderr, seconds from the signal to its end)."""
    from transforms.publish.commit import PAUSE_ENV
    step = pause.split(":")[0]
    launcher = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True,
                                env={**os.environ, PAUSE_ENV: pause})
    try:
        deadline = time.monotonic() + 180
        while not glob.glob(os.path.join(out, "_tmp", "f-*", f"paused.{step}")):
            assert launcher.poll() is None, launcher.communicate()
            assert time.monotonic() < deadline, f"the run never reached {step}"
            time.sleep(0.05)
        check()
        signalled = time.monotonic()
        launcher.send_signal(signum)
        _, err = launcher.communicate(timeout=120)
        return launcher.returncode, err, time.monotonic() - signalled
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()


# A signal while Finalize commits (tests/test_publish_protocol.py pauses it at a
# named step with EVALBEAM_TEST_PAUSE_AT=step:seconds). Before the marker the
# attempt ends not committed; from the marker to the lease's release (the
# critical section) the signal waits for the section's end, so the attempt
# ends committed and says so. Either way exactly one state, told apart by the
# launcher's last line, `evalbeam status` and the next run. After the pipeline:
# `counters` (added to the committed manifest), `outcome` (the run's last lines).
STEPS = [("publish", False), ("commit", False), ("supersede", True), ("release", True),
         ("counters", True), ("outcome", True)]
MULTI = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]


@pytest.mark.parametrize("step, committed, mode, signum", [
    *[(step, done, "in_memory", signal.SIGTERM) for step, done in STEPS],
    ("supersede", True, "in_memory", signal.SIGINT),
    ("commit", False, "multi_processing", signal.SIGTERM),
    ("supersede", True, "multi_processing", signal.SIGTERM),
])
def test_a_signal_during_the_commit_ends_committed_or_not_never_between(
        tmp_path, step, committed, mode, signum):
    from transforms.publish.completed import NoCompletedAttempt, read_completed_run
    from transforms.publish.lease import lease_path
    rows = [{"case_id": f"c{i}", "question": f"Question {i} about refunds?",
             "expected_answer": "Refunds take 30 days.", "answer": f"Refunds take {i} days."}
            for i in range(8)]
    cases = write_cases(str(tmp_path / "cases.parquet"), rows)
    out = str(tmp_path / "out")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n  - {name: recorded, type: precomputed}\n"
                   "metrics: [exact_match]\n")
    cmd = [sys.executable, "-m", "pipeline", "run", "--input", cases, "--output", out,
           "--config", str(cfg), "--run-id", "f", "--runner=FnApiRunner"]
    extra = MULTI if mode == "multi_processing" else []
    pause = 2.0
    returncode, err, took = _signal_when_paused(cmd + extra, out, f"{step}:{pause}", signum)
    name = signal.Signals(signum).name
    last = err.strip().splitlines()[-1]
    assert returncode == exit_code(signum), err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    status = cli_in_process("status", "--output", out, "--run-id", "f")
    if committed:  # the section ran to its end before the signal took effect
        assert (took >= pause - 0.5) == (step in ("supersede", "release")), took
        assert last.startswith("evalbeam: run f (attempt ") and \
            f"stopped by {name} after its commit" in last, last
        run = read_completed_run(out, "f")
        run.check_files()
        assert run.manifest["reconciliation"]["ok"] and run.manifest["tables"]["results"] == 8
        assert run.read(RESULTS).num_rows == 8
        assert not os.path.exists(lease_path(out, "f"))  # released, not left "failed"
        assert status.returncode == 0, status
        assert status.stdout.startswith("run f: finished (attempt ") and \
            "still being released" not in status.stdout, status.stdout
        assert os.listdir(os.path.join(out, "_tmp")) == []
    else:
        assert took < pause, took  # not held up: nothing is committed yet
        assert last.startswith("evalbeam: error: run f (attempt ") and \
            f"stopped by {name};" in last, last
        with pytest.raises(NoCompletedAttempt):
            read_completed_run(out, "f")
        assert status.returncode == 1, status
        assert status.stdout.startswith("run f: failed (") and f"stopped by {name}" in \
            status.stdout, status.stdout
    again = cli_in_process(*_argv(cmd))
    assert again.returncode == 0, again.stderr[-3000:]
    assert ("took over run id 'f'" in again.stderr) == (not committed), again.stderr
    run = read_completed_run(out, "f")
    assert run.manifest["reconciliation"]["ok"]
    listed = {os.path.join(out, p) for p in run.manifest["files"]["results"]}
    assert set(glob.glob(os.path.join(out, "results", "**", "part-f.*"), recursive=True)) \
        == listed
    assert os.listdir(os.path.join(out, "_tmp")) == []
    assert sorted(os.listdir(os.path.join(out, "runs", "f"))) == [
        "manifest.json", "report.html", "report.md"]


def _small_run(tmp_path) -> tuple[str, list[str]]:
    """(output, the command) of a 4-case run id f, in this process (FnApiRunner)."""
    cases = write_cases(str(tmp_path / "cases.parquet"), [
        {"case_id": f"c{i}", "question": f"Question {i}?", "expected_answer": "Yes.",
         "answer": "Yes."} for i in range(4)])
    out = str(tmp_path / "out")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n  - {name: recorded, type: precomputed}\nmetrics: [exact_match]\n")
    return out, [sys.executable, "-m", "pipeline", "run", "--input", cases, "--output", out,
                 "--config", str(cfg), "--run-id", "f", "--runner=FnApiRunner"]


@pytest.mark.parametrize("step, signum", [("planned", signal.SIGTERM), ("leased", signal.SIGTERM),
                                          ("leased", signal.SIGINT)])
def test_a_signal_before_the_pipeline_gives_the_run_id_up_at_once(tmp_path, step, signum):
    """Before: a stop while `evalbeam run` planned or took its lease ended it
    with exit -15 and nothing said (SIGTERM) or a KeyboardInterrupt traceback
    (Ctrl-C), and the lease it had taken stayed `running` until its TTL: status
    said running and a re-run was refused. Now one line, exit 143/130, the
    lease given up: a re-run of the id starts at once, taking over nothing."""
    from transforms.publish.lease import lease_path
    out, cmd = _small_run(tmp_path)

    def leased_when_paused():  # the lease is taken at `leased`, not yet at `planned`
        assert os.path.exists(lease_path(out, "f")) == (step == "leased")
    returncode, err, _ = _signal_when_paused(cmd, out, step, signum, leased_when_paused)
    assert returncode == exit_code(signum), err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    said = [line for line in err.splitlines() if line.startswith("evalbeam: error:")]
    name = signal.Signals(signum).name
    assert said == err.strip().splitlines()[-1:], err[-3000:]  # one line, the last
    assert said[0].startswith("evalbeam: error: run f (attempt ") and \
        f"stopped by {name} before its pipeline started" in said[0], said
    assert not os.path.exists(lease_path(out, "f"))
    status = cli_in_process("status", "--output", out, "--run-id", "f")
    assert "running" not in status.stdout, status.stdout
    again = cli_in_process(*_argv(cmd))
    assert again.returncode == 0 and "took over" not in again.stderr, again.stderr[-3000:]
    assert os.listdir(os.path.join(out, "_tmp")) == []


def test_a_signal_while_the_run_starts_marks_it_stopped_and_a_rerun_takes_over(tmp_path):
    """Between the lease and the pipeline (the report's chart engine and the
    local model load: seconds) no handler was installed: SIGTERM ended `evalbeam
    run` with exit -15 and nothing said, its lease `running` until its TTL. Now
    the run's own handling covers it: one line, exit 143, the lease marked
    failed, and a re-run of the id takes over at once."""
    from transforms.publish.lease import read_lease
    out, cmd = _small_run(tmp_path)
    returncode, err, _ = _signal_when_paused(cmd, out, "starting", signal.SIGTERM)
    assert returncode == exit_code(signal.SIGTERM), err[-3000:]
    said = [line for line in err.splitlines() if line.startswith("evalbeam: error:")]
    assert len(said) == 1 and "stopped by SIGTERM;" in said[0], err[-3000:]
    assert read_lease(out, "f").state == "failed"
    status = cli_in_process("status", "--output", out, "--run-id", "f")
    assert "running" not in status.stdout, status.stdout
    again = cli_in_process(*_argv(cmd))
    assert again.returncode == 0, again.stderr[-3000:]


# `python -m pipeline` with the commit's wait limit (pipeline.stopping.COMMIT_WAIT_S,
# 60 s) set to argv[1] seconds
SHORT_WAIT = ("import sys; import pipeline.stopping as stopping; "
              "stopping.COMMIT_WAIT_S = float(sys.argv.pop(1)); "
              "from pipeline.cli import main; main()")


@pytest.mark.parametrize("mode", ["in_memory", "multi_processing"])
def test_a_signal_during_a_commit_that_never_ends_stops_the_run_at_the_limit(tmp_path, mode):
    """A stop during the commit's critical section waits for its end at most
    COMMIT_WAIT_S (60 s; a few seconds here): a section that hangs (paused at
    `supersede`, after the marker, until killed) does not keep the run from
    stopping. In this process (in_memory) the deferred stop's timer ends it;
    with worker processes the launcher stops waiting for the worker's section
    and ends it. Either way the marker is in place: the line says the run is
    complete, status says finished and a re-run takes nothing over."""
    from transforms.publish.completed import read_completed_run
    from transforms.publish.lease import lease_path
    limit = 3.0
    out, cmd = _small_run(tmp_path)
    cmd = [sys.executable, "-c", SHORT_WAIT, str(limit), *cmd[3:]]  # in place of -m pipeline
    returncode, err, took = _signal_when_paused(
        cmd + (MULTI if mode == "multi_processing" else []), out, "supersede", signal.SIGTERM)
    assert returncode == exit_code(signal.SIGTERM), err[-3000:]
    assert limit - 0.5 <= took < limit + 30, took  # waited for the section, then not forever
    assert "Traceback" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("evalbeam: run f (attempt ") and \
        "stopped by SIGTERM after its commit: it is complete" in last, last
    read_completed_run(out, "f").check_files()
    assert not os.path.exists(lease_path(out, "f"))
    status = cli_in_process("status", "--output", out, "--run-id", "f")
    assert status.returncode == 0 and status.stdout.startswith("run f: finished"), status
    again = cli_in_process(*_argv(cmd))
    assert again.returncode == 0 and "took over" not in again.stderr, again.stderr[-3000:]


def test_a_signal_writes_what_a_metric_left_unfinished_with_a_key_s_start_masked(tmp_path):
    """A custom metric that wrote a key's first characters without a newline
    (its stream holds such a tail back, to scrub the key whole when the rest
    comes), then a SIGTERM: the stop's line was printed after the tail,
    which went out as it was ("... sk-sig evalbeam: error: ..."). Now the
    tail is written with the possible key <redacted>, and the line on its own."""
    key = "sk-sigKEY-" + "Vb7Qx2Lm9Wt4"
    out, cmd = _small_run(tmp_path)
    (tmp_path / "slow_metrics.py").write_text(
        "import os, sys, time\n"
        "def slow(sample, api_key_env, flag):\n"
        "    sys.stderr.write('metric uses ' + os.environ[api_key_env][:6])\n"
        "    open(flag, 'w').close()\n"
        "    time.sleep(120)\n"
        "    return 1.0\n")
    flag = tmp_path / "started"
    cfg = cmd[cmd.index("--config") + 1]
    with open(cfg, "w") as fh:
        fh.write("bots:\n  - {name: recorded, type: precomputed}\nmetrics: [slow]\n"
                 "custom_metrics:\n  - {name: slow, function: 'slow_metrics:slow', options: "
                 f"{{api_key_env: EB_SIG_KEY, flag: '{flag}'}}}}\n")
    launcher = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True,
                                env={**os.environ, "EB_SIG_KEY": key,
                                     "PYTHONPATH": f"{tmp_path}:{ROOT}"})
    err = signal_when(launcher, flag.exists)
    assert launcher.returncode == exit_code(signal.SIGTERM), err[-3000:]
    assert "metric uses <redacted>\n" in err and key[:6] not in err, err[-3000:]
    assert err.strip().splitlines()[-1].startswith("evalbeam: error: run f"), err[-3000:]
