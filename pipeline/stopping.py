"""Stopping a local run from outside: SIGTERM (a scheduler, `kill`) or SIGINT
(Ctrl-C) to the `evalbeam run` process.

Without this, SIGTERM ended the launcher at once (exit -15, nothing said, the
lease left "running" until its heartbeat went stale) and SIGINT printed a
KeyboardInterrupt traceback from Beam's internals; the Beam SDK worker
processes of a multi-process run were left to notice on their own. Now the
launcher ends its child processes (SIGTERM, then SIGKILL after a grace
period), marks the attempt failed (so `status` says so and a new run of the
id takes over at once), prints one line and exits 128 + the signal's number
(130 for SIGINT, 143 for SIGTERM), as shells do.

A signal during the commit's critical section (the completion marker's write
to the lease's release: transforms/publish/commit.critical_section) waits for
its end, at most COMMIT_WAIT_S: in this process the stop runs when the section
ends, and a worker process's section is waited for before the workers are
ended. So a stopped run is committed whole (on_stop says so) or not at all.
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from types import ModuleType
from typing import Callable, Iterator

from transforms.publish.commit import defer_stop
from transforms.remote.scrub import ScrubbedStream, release_streams

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
GRACE_S = 3.0  # how long children get to end after SIGTERM before SIGKILL
COMMIT_WAIT_S = 60.0  # the longest a signal waits for a commit's critical section


def exit_code(signum: int) -> int:
    return 128 + int(signum)


def descendants(pid: int | None = None) -> list[int]:
    """The process ids of every process below `pid` (this one by default)."""
    pid = os.getpid() if pid is None else pid
    try:
        import psutil
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except ImportError:
        pass
    except Exception:  # the process is gone
        return []
    out, todo = [], [pid]
    while todo:  # Linux without psutil: /proc/<pid>/task/<tid>/children
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children", encoding="ascii") as fh:
                    kids = [int(k) for k in fh.read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)  # reap our own children
        if done:
            return False
    except ChildProcessError:  # not our child: a grandchild
        pass
    except OSError:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie grandchild waits for its parent to reap it: it is ended
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def end_children(grace_s: float = GRACE_S) -> list[int]:
    """SIGTERM every descendant, SIGKILL those still alive after grace_s;
    returns the ids of those that had to be killed."""
    pids = descendants()
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        pids = [p for p in pids if _alive(p)] + [p for p in descendants() if p not in pids]
        if not pids:
            return []
        time.sleep(0.05)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return pids


@contextlib.contextmanager
def stop_on_signals(on_stop: Callable[[str], str],
                    wait_for_commit: Callable[[float], object] = lambda _s: None,
                    workers: bool = True, worker_log: str | None = None) -> Iterator[None]:
    """Within: SIGTERM or SIGINT ends this process's children, calls
    on_stop(signal name) (it marks the run failed, or says it was committed,
    and returns the line to print), prints that line on stderr and leaves with
    exit_code(signal). A commit's critical section in this process is let end
    first (defer_stop); wait_for_commit(seconds) waits for one in a child.
    workers=False: no Beam worker is started within (planning), so Beam's
    call that starts them is left as it is. worker_log: where the workers'
    output goes when they cannot be put in process groups of their own.
    Only in the main thread (elsewhere signals cannot be caught: a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    once = threading.Lock()  # a deferred stop and its time limit may both come

    def handler(signum, _frame):
        for s in STOP_SIGNALS:  # a second Ctrl-C does not interrupt the cleanup
            signal.signal(s, signal.SIG_IGN)
        if defer_stop(lambda: stop(signum)):
            limit = threading.Timer(COMMIT_WAIT_S, stop, (signum,))
            limit.daemon = True
            limit.start()
            return
        wait_for_commit(COMMIT_WAIT_S)
        stop(signum)

    def stop(signum: int) -> None:
        if not once.acquire(blocking=False):
            return
        # Beam's threads that talk to the workers raise as the workers end: their
        # tracebacks are not what the user needs to read
        threading.excepthook = lambda _args: None
        logging.disable(logging.CRITICAL)
        end_children()
        name = signal.Signals(signum).name
        try:
            line = on_stop(name)
        except Exception as exc:  # noqa: BLE001 - the process ends either way
            line = f"evalbeam: error: stopped by {name} ({type(exc).__name__} on the way out)"
        held = release_streams()  # what was held back first (a key's start masked)
        with contextlib.suppress(Exception):
            print("\n" * held + line, file=sys.stderr, flush=True)
        os._exit(exit_code(signum))

    saved = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        with _workers_in_their_own_group(worker_log) if workers else contextlib.nullcontext():
            yield
    finally:
        for s, previous in saved.items():
            signal.signal(s, previous)


class Terminated(BaseException):
    """SIGTERM (a job scheduler's stop, `kill`) during an evalbeam.evaluate()
    call, raised in the main thread as Ctrl-C raises KeyboardInterrupt: the
    run is marked failed and the caller is told, where the signal's default
    ended the process at once and left the lease "running". Neither an
    Exception nor a SystemExit, which a custom metric's failure would absorb
    as a row's error (transforms/score/custom.USER_CODE_FAILURES)."""


@contextlib.contextmanager
def raising_on_stop() -> Iterator[None]:
    """Within (the Python API's run; the command line has stop_on_signals):
    SIGTERM raises Terminated, SIGINT KeyboardInterrupt as it did, and Beam's
    log of the step either interrupted (a second traceback) is held back: the
    run's one line says it. Only in the main thread, where signals can be
    caught, and only over each signal's default (SIG_DFL, Python's
    default_int_handler): a handler the process set (or an ignored signal)
    stays as it is."""
    raised = {signal.SIGTERM: (signal.SIG_DFL, lambda: Terminated("SIGTERM")),
              signal.SIGINT: (signal.default_int_handler, KeyboardInterrupt)}
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    logs = logging.root.manager.disable

    def handler(signum, _frame):
        logging.disable(logging.CRITICAL)
        raise raised[signum][1]()
    saved = {s: signal.getsignal(s) for s in raised}
    for s, (default, _) in raised.items():
        if saved[s] is default:
            signal.signal(s, handler)
    try:
        yield
    finally:
        for s, previous in saved.items():
            signal.signal(s, previous)
        logging.disable(logs)


class _OwnGroupSubprocess:
    """The `subprocess` module as Beam's local job service sees it within
    _workers_in_their_own_group: Popen starts each process in a process group
    of its own."""

    def __getattr__(self, name: str):
        return getattr(subprocess, name)

    @staticmethod
    def Popen(*args, **kwargs):  # noqa: N802 - subprocess's name
        kwargs.setdefault("process_group", 0)
        return subprocess.Popen(*args, **kwargs)


def beam_worker_call_site() -> tuple[ModuleType | None, str]:
    """Beam's local_job_service when it starts its worker processes as
    _workers_in_their_own_group patches them (SubprocessSdkWorker.run calls its
    module's subprocess.Popen: Beam 2.77), else (None, what differs)."""
    try:
        from apache_beam.runners.portability import local_job_service as service
    except ImportError as exc:
        return None, f"no local_job_service ({exc})"
    run = getattr(getattr(service, "SubprocessSdkWorker", None), "run", None)
    if getattr(service, "subprocess", None) is not subprocess:
        return None, "local_job_service does not import subprocess"
    if not {"subprocess", "Popen"} <= set(getattr(getattr(run, "__code__", None),
                                                  "co_names", ())):
        return None, "SubprocessSdkWorker.run does not call subprocess.Popen"
    return service, ""


@contextlib.contextmanager
def _workers_in_their_own_group(worker_log: str | None = None) -> Iterator[None]:
    """Ctrl-C in a terminal sends SIGINT to the foreground process group: Beam's
    worker processes (started by local_job_service.SubprocessSdkWorker with
    subprocess.Popen) got it too and each printed a KeyboardInterrupt
    traceback before the launcher's line. Started in groups of their own, they
    are ended by the launcher's handler instead (a killed launcher still ends
    them: they stop when its control stream closes). A Beam that starts them
    another way is said in one line and left as it is: end_children ends every
    descendant whatever its group; their output (their tracebacks of a Ctrl-C)
    goes to worker_log, not to the terminal the line is read on."""
    service, why = beam_worker_call_site()
    if service is None:
        from apache_beam import __version__
        where = (f"what they print (a traceback of Ctrl-C) goes to {worker_log}" if worker_log
                 else "they may print tracebacks")
        print(f"evalbeam: note: apache-beam starts its worker processes in a way evalbeam "
              f"does not know (apache-beam {__version__}: {why}); Ctrl-C reaches them too "
              f"({where}); stopping the run still ends them", file=sys.stderr, flush=True)
        with _children_write_to(worker_log) if worker_log else contextlib.nullcontext():
            yield
        return
    saved = service.subprocess
    service.subprocess = _OwnGroupSubprocess()
    try:
        yield
    finally:
        service.subprocess = saved


@contextlib.contextmanager
def _children_write_to(log: str) -> Iterator[None]:
    """File descriptor 2 on `log` while the block runs, so that the processes
    started within (Beam's workers) write their output there; this process's
    sys.stderr goes on writing where it did, through a copy of the descriptor."""
    os.makedirs(os.path.dirname(log) or ".", exist_ok=True)
    saved = sys.stderr
    saved.flush()
    before = os.dup(2)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stderr = ScrubbedStream(open(before, "w", buffering=1, errors="backslashreplace",
                                     closefd=False))
    try:
        yield
    finally:
        sys.stderr.flush()
        sys.stderr = saved
        os.dup2(before, 2)
        os.close(before)
