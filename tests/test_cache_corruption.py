"""Issue 22 item 2: a corrupt or truncated `_cache/calls.sqlite` failed every
later run (DatabaseError: file is not a database / malformed, exit 1) until
someone deleted it. A cache must never cost a run: the file is set aside
(renamed with a timestamp, one note) and rebuilt. Item 10: a cache.path
whose parent is a file gave a FileExistsError traceback; it is checked up
front (exit 2)."""
from __future__ import annotations

import glob
import os
import sqlite3

import pytest

from pipeline.cli import run
from tests.conftest import write_cases
from tests.fake_server import FakeOpenAI
from tests.judge_script import ScriptedJudge
from transforms.remote.cache import CallCache

KEY = "sk-cache-corruption-key"


def _filled(path: str, n: int = 2000) -> None:
    cache = CallCache(path)
    for i in range(n):
        cache.put(f"k{i}", {"answer": "x" * 200, "i": i})
    cache.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _garbage(path: str) -> None:
    with open(path, "wb") as fh:
        fh.write(b"this is not a database at all " * 100)


def _truncated(path: str) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(os.path.getsize(path) // 3)


def _malformed(path: str) -> None:
    """Overwrite pages in the middle (the header stays valid)."""
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(b"\xff" * 8192)


def _as_left_by_the_last_process(path: str) -> None:
    """The WAL folded into the file and gone, as when the last connection closes
    (this test process still holds the first run's connections)."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


CORRUPTIONS = {"not a database": _garbage, "truncated": _truncated, "malformed": _malformed}


@pytest.mark.parametrize("kind", list(CORRUPTIONS))
def test_a_corrupt_cache_never_raises_and_is_set_aside_up_front(tmp_path, kind):
    from transforms.remote.cache import check_cache_file
    path = str(tmp_path / "calls.sqlite")
    _filled(path)
    CORRUPTIONS[kind](path)
    cache = CallCache(path)  # a worker opening it: no exception, ever
    for i in range(0, 2000, 7):
        cache.get(f"k{i}")
        cache.put(f"new{i}", {"ok": True})
    cache.close()
    _filled(path)
    CORRUPTIONS[kind](path)
    line = check_cache_file(path)  # the launcher, before the run
    assert line and "is corrupt" in line and "set aside as" in line
    assert not os.path.exists(path) and glob.glob(path + ".corrupt-*")
    fresh = CallCache(path)
    fresh.put("a", {"b": 1})
    assert fresh.get("a") == {"b": 1} and fresh.broken is None


def test_a_sound_cache_is_left_alone(tmp_path):
    from transforms.remote.cache import check_cache_file
    path = str(tmp_path / "calls.sqlite")
    _filled(path, 10)
    assert check_cache_file(path) is None and check_cache_file(str(tmp_path / "none")) is None
    assert CallCache(path).get("k3") == {"answer": "x" * 200, "i": 3}


def _judge_run(tmp_path, server_url: str, run_id: str, cache_line: str = "") -> tuple[int, str]:
    cases = write_cases(str(tmp_path / "cases.parquet"), [
        {"case_id": f"c{i}", "question": f"How long is the refund window {i}?",
         "contexts": ["Refunds are accepted within 30 days."],
         "answer": "Refunds are accepted within 30 days."} for i in range(4)])
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"endpoints:\n  judge: {{base_url: '{server_url}', api_key_env: CACHE_KEY, "
                   "requests_per_second: 1000}\njudge: {endpoint: judge, model: m}\n"
                   "bots:\n  - {name: recorded, type: precomputed}\n"
                   f"metrics: [faithfulness]\n{cache_line}")
    out = str(tmp_path / "out")
    return run(["run", "--input", cases, "--output", out, "--config", str(cfg),
                "--run-id", run_id]), out


@pytest.mark.parametrize("kind", ["not a database", "truncated"])
def test_a_run_over_a_corrupt_cache_rebuilds_it(tmp_path, monkeypatch, capsys, kind):
    monkeypatch.setenv("CACHE_KEY", KEY)
    with FakeOpenAI(api_key=KEY) as server:
        server.set_chat_handler(ScriptedJudge())
        assert _judge_run(tmp_path, server.openai_base_url, "one")[0] == 0
        first = len(server.requests)
        out = str(tmp_path / "out")
        path = os.path.join(out, "_cache", "calls.sqlite")
        _as_left_by_the_last_process(path)
        CORRUPTIONS[kind](path)
        capsys.readouterr()
        assert _judge_run(tmp_path, server.openai_base_url, "two")[0] == 0
        err = capsys.readouterr().err
        notes = [line for line in err.splitlines() if "call cache" in line]
        assert len(notes) == 1 and notes[0].startswith("evalbeam: note: the call cache") \
            and "is corrupt" in notes[0], err
        assert len(server.requests) == 2 * first   # asked again, once
        assert glob.glob(path + ".corrupt-*")
        assert _judge_run(tmp_path, server.openai_base_url, "three")[0] == 0
        assert len(server.requests) == 2 * first   # the rebuilt cache answers


def test_a_cache_path_under_a_file_is_refused_up_front(tmp_path, monkeypatch, capsys):
    """Item 10."""
    monkeypatch.setenv("CACHE_KEY", KEY)
    (tmp_path / "afile").write_text("x")
    for path, words in ((tmp_path / "afile" / "sub" / "calls.sqlite", "is a file, not a folder"),
                        (tmp_path, "is a folder")):
        capsys.readouterr()
        code, out = _judge_run(tmp_path, "http://127.0.0.1:9/v1", "x",
                               f"cache: {{path: '{path}'}}\n")
        err = capsys.readouterr().err.strip()
        assert code == 2 and err.startswith("evalbeam: error: cache.path") and words in err \
            and "\n" not in err, err
        assert not os.path.exists(out)
