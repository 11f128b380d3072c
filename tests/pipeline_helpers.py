"""Run the CLI (in-process or as a subprocess), read every output table back
(hive partitioning), and reach the loopback server through an AsyncRuntime."""
from __future__ import annotations

import base64
import contextlib
import glob
import html
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import Callable
from urllib.parse import quote, quote_plus

import pyarrow.dataset as ds
import pyarrow.parquet as pq

from pipeline.cli import run
from pipeline.config import EndpointConfig
from tests.conftest import ROOT
from transforms.remote.runtime import AsyncRuntime

TABLE_NAMES = ("results", "scores", "summary", "errors", "usage")


def run_cli(*args: str) -> int:
    return run(["run", *args])


def cli_in_process(*argv: str) -> subprocess.CompletedProcess:
    """`evalbeam ARGV` in this process, as subprocess.run(capture_output=True,
    text=True) gives it (returncode, stdout, stderr): for a `status` or a re-run
    that is not about the process boundary (a `python -m pipeline` takes ~2.5 s
    of CPU to import Beam before it does anything)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(list(argv))
    return subprocess.CompletedProcess(list(argv), code, out.getvalue(), err.getvalue())


def run_sample(tmp_path, config: str, run_id: str, rows=None) -> tuple[int, str]:
    """The CLI over rows (default: SAMPLE_ROWS) with a config file's text:
    (exit code, output folder)."""
    from tests.conftest import SAMPLE_ROWS, write_cases
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS if rows is None else rows)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(config)
    out = str(tmp_path / "out")
    return run_cli("--input", cases, "--output", out, "--config", str(cfg), "--run-id",
                   run_id), out


def read_table(output: str, name: str):
    """A whole table as a pyarrow Table, partition columns included."""
    return ds.dataset(os.path.join(output, name), format="parquet",
                      partitioning="hive").to_table()


def read_rows(output: str, name: str) -> list[dict]:
    return read_table(output, name).to_pylist()


USAGE_COUNTS = ("calls", "retries", "failures", "cache_hits", "shared_cache_hits",
                "prompt_tokens", "completion_tokens")


def usage_totals(rows: list[dict], *by: str) -> dict:
    """usage/ rows summed per the columns `by` (a tuple key; one column: its value):
    a call shared by several metrics has a row per metric, whose shares add up."""
    out: dict = {}
    for u in rows:
        key = tuple(u[k] for k in by) if len(by) > 1 else u[by[0]]
        acc = out.setdefault(key, dict.fromkeys(USAGE_COUNTS, 0) | {"cost": None})
        for k in USAGE_COUNTS:
            acc[k] += u[k]
        if u["cost"] is not None:
            acc["cost"] = (acc["cost"] or 0.0) + u["cost"]
    return out


def manifest(output: str, run_id: str) -> dict:
    with open(os.path.join(output, "runs", run_id, "manifest.json"), encoding="utf-8") as fh:
        return json.load(fh)


def files_under(folder: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, f), folder)
                  for r, _, fs in os.walk(folder) for f in fs)


def run_cli_subprocess(*args: str, workers: int | None = None, env: dict | None = None,
                       timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m pipeline run ARGS` in a child process; workers: multi_processing."""
    cmd = [sys.executable, "-m", "pipeline", "run", *args]
    if workers:
        cmd += ["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def signal_when(launcher: subprocess.Popen, ready: Callable[[], bool],
                signum: int = signal.SIGTERM, wait_s: float = 180.0,
                timeout: float = 120.0) -> str:
    """Send `signum` to `launcher` (started with start_new_session, stderr
    piped) once ready() (at most wait_s), wait for its end and return its
    stderr; its process group is killed if it is still there after."""
    try:
        deadline = time.monotonic() + wait_s
        while not ready():
            assert launcher.poll() is None and time.monotonic() < deadline, launcher.communicate()
            time.sleep(0.05)
        launcher.send_signal(signum)
        return launcher.communicate(timeout=timeout)[1]
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()


def all_output_text(folder: str) -> str:
    """Every byte written under folder, Parquet decoded to text (compressed columns
    hide strings from a plain byte search)."""
    chunks = []
    for path in glob.glob(os.path.join(folder, "**", "*"), recursive=True):
        if os.path.isdir(path):
            continue
        if path.endswith(".parquet"):
            chunks.append(json.dumps(pq.read_table(path).to_pylist(), default=str))
        else:
            with open(path, "rb") as fh:
                chunks.append(fh.read().decode("utf-8", "replace"))
    return "\n".join(chunks)


def secret_forms(secret: str) -> dict[str, str]:
    """Every text encoding of a secret that must be written nowhere, by name."""
    raw = secret.encode()
    return {
        "raw": secret, "upper": secret.upper(), "lower": secret.lower(),
        "json": json.dumps(secret)[1:-1],
        "json, / escaped (PHP)": json.dumps(secret)[1:-1].replace("/", "\\/"),
        "quote": quote(secret, safe=""), "quote_plus": quote_plus(secret, safe=""),
        "every byte %XX": "".join(f"%{b:02X}" for b in raw),
        "every byte %xx": "".join(f"%{b:02x}" for b in raw),
        "every char \\uXXXX": "".join(f"\\u{ord(c):04x}" for c in secret),
        "hex": raw.hex(), "HEX": raw.hex().upper(),
        "every byte \\xNN": "".join(f"\\x{b:02x}" for b in raw),
        "html.escape": html.escape(secret),
        "every char &#NNN;": "".join(f"&#{ord(c)};" for c in secret),
        "every char &#xHH;": "".join(f"&#x{ord(c):x};" for c in secret),
        "every char &#XHH;": "".join(f"&#X{ord(c):X};" for c in secret),
        "quoted twice": quote(quote(secret, safe=""), safe=""),
        "every byte %25XX": "".join(f"%25{b:02X}" for b in raw),
    }


def base64_cores(secret: str) -> dict[str, str]:
    """The part of any base64 (and URL-safe base64) text that the secret alone
    fixes, after 0, 1 or 2 other bytes (`Basic ...`, `Bearer ...` encoded whole)."""
    out = {}
    for shift in range(3):
        for name, encode in (("base64", base64.b64encode),
                             ("urlsafe base64", base64.urlsafe_b64encode)):
            core = encode(b"\0" * shift + secret.encode()).decode()
            end = len(core.rstrip("=")) - ((shift + len(secret.encode())) % 3 and 4)
            out[f"{name} after {shift} bytes"] = core[4 if shift else 0:end]
    return out


def leaks(text: str, secret: str) -> list[str]:
    """What of the secret the text holds: every encoded form (secret_forms, the
    base64 cores), compared case-insensitively, also with every run of
    backslashes read as one (a JSON text inside another doubles the escapes:
    `\\\\u0073...`), and any run of 8 characters of it (a prefix kept by a cut).
    [] when none: `assert leaks(everything, key) == []`."""
    low = text.lower() + "\n" + re.sub(r"\\+", lambda _: "\\", text).lower()
    forms = list(secret_forms(secret).values()) + [
        c for c in base64_cores(secret).values() if len(c) >= 8]
    found = [f for f in dict.fromkeys(forms) if f.lower() in low]
    return found + [secret[i:i + 8] for i in range(len(secret) - 7)
                    if secret[i:i + 8].lower() in low]


def everything_written(folder: str, *texts: str) -> str:
    """Every channel a run writes to, as one text to grep: every file under
    folder (Parquet decoded), each table's values one by one (a JSON dump of a
    row escapes them), and the printed texts given."""
    values = [str(v) for t in TABLE_NAMES if os.path.isdir(os.path.join(folder, t))
              for row in read_rows(folder, t) for v in row.values()]
    return "\n".join([all_output_text(folder), *texts, *values])


@contextlib.contextmanager
def fake_runtime(server, name: str, cache=None, **endpoint):
    """An AsyncRuntime whose endpoint `name` is the loopback server, with fast
    retries (overridable) and the call cache `cache` (a CacheSpec or a SQLite
    path); closed on exit."""
    cfg = dict(base_url=server.openai_base_url, requests_per_second=1000,
               backoff_initial_s=0.01, backoff_max_s=0.05)
    cfg.update(endpoint)
    runtime = AsyncRuntime({name: EndpointConfig(**cfg)}, cache)
    try:
        yield runtime
    finally:
        runtime.close()


def write_marker(output: str, run_id: str, run_date: str, attempt: str = "0" * 12,
                 **fields) -> dict:
    """A completion marker for tables a test wrote by hand (files named
    part-<run_id>.<attempt>.<n>.parquet): it lists them and counts their rows,
    as Finalize would."""
    files: dict[str, list[str]] = {}
    rows: dict[str, int] = {}
    for path in sorted(glob.glob(os.path.join(output, "*", "**",
                                              f"part-{run_id}.{attempt}.*.parquet"),
                                 recursive=True)):
        rel = os.path.relpath(path, output).replace(os.sep, "/")
        table = rel.split("/", 1)[0]
        files.setdefault(table, []).append(rel)
        rows[table] = rows.get(table, 0) + pq.ParquetFile(path).metadata.num_rows
    marker = {"run_id": run_id, "run_date": run_date, "attempt": attempt, "bots": [],
              "metrics": [], "counts": {}, "tables": rows,
              "reconciliation": {"ok": True}, "files": files, **fields}
    os.makedirs(os.path.join(output, "runs", run_id), exist_ok=True)
    with open(os.path.join(output, "runs", run_id, "manifest.json"), "w") as fh:
        json.dump(marker, fh)
    return marker
