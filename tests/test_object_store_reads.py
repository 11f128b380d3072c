"""What reading a finished run costs on an object store (gs://, s3://): the
requests each listed file costs, counted by the fake object store of
tests/fake_object_store.py (a server on 127.0.0.1 and a Beam filesystem made
as Beam's S3 and GCS ones are: a size asked by HEAD at each open, each read
one ranged GET)."""
from __future__ import annotations

import json
import os
import random
import string
import time

import pyarrow.parquet as pq
import pytest

from pipeline.cli import run
from tests.conftest import write_cases
from tests.fake_object_store import ObjectStore
from tests.pipeline_helpers import manifest, run_cli
from transforms.publish.completed import TAIL_BYTES

BOTS = ("b1", "b2", "b3")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Run s (small files: each listed file at most TAIL_BYTES, as a run of
    short answers has) and run g (one answer of 100 KB of random letters: its
    results/ files are larger than TAIL_BYTES; and its first scores/ file
    rewritten with the same rows in one-row row groups: a footer larger than
    TAIL_BYTES)."""
    tmp = str(tmp_path_factory.mktemp("objstore"))
    config = os.path.join(tmp, "bots.yaml")
    with open(config, "w", encoding="utf-8") as fh:
        fh.write("bots:\n" + "".join(f"  - {{name: {b}, type: precomputed}}\n" for b in BOTS))
    out = os.path.join(tmp, "out")
    long = "".join(random.Random(3).choices(string.ascii_letters + " ", k=100_000))
    for run_id, first in (("s", "Refunds take 30 days."), ("g", long)):
        rows = [{"case_id": f"c{i}", "question": f"Question {i} about refunds?",
                 "expected_answer": "Refunds take 30 days.",
                 "answer": first if i == 0 else f"Refunds take {30 if i % 2 else i} days.",
                 "label": "PASS" if i % 2 else "FAIL"} for i in range(40)]
        cases = write_cases(os.path.join(tmp, f"{run_id}.parquet"), rows)
        assert run_cli("--input", cases, "--output", out, "--run-id", run_id,
                       "--run-date", "2026-11-27", "--config", config) == 0
    scores = os.path.join(out, manifest(out, "g")["files"]["scores"][0])
    table = pq.read_table(scores, partitioning=None)
    pq.write_table(table, scores, row_group_size=1)
    assert pq.ParquetFile(scores).metadata.serialized_size > TAIL_BYTES
    return out


def _listed(out: str, run_id: str, *tables: str) -> list[str]:
    files = manifest(out, run_id)["files"]
    return [os.path.join(out, p) for t in (tables or files) for p in files.get(t, [])]


def _most(files: list[str], scan: bool) -> int:
    """The requests reading `files` may cost: a size and one read of its end
    each (a read more for a footer larger than TAIL_BYTES); when `scan`, for a
    file larger than TAIL_BYTES, an open (a size) and one read of its data."""
    return sum(2 + (pq.ParquetFile(f).metadata.serialized_size + 8 > TAIL_BYTES)
               + 2 * (scan and os.path.getsize(f) > TAIL_BYTES) for f in files)


def _reads(store: ObjectStore, act) -> dict[str, int]:
    """The requests `act` makes, by kind."""
    store.reset()
    act()
    return {k: n for k, n in store.counts().items() if k != "bytes"}


def _requests(store: ObjectStore, read) -> int:
    return sum(_reads(store, read).values())


def test_reading_a_run_costs_a_size_and_one_read_per_listed_file(folder, capsys):
    """Before: each listed file cost a HEAD for whether it exists, an open
    (HEAD) and a read of its last 4 bytes, an open (HEAD) and a read of its
    footer, then pyarrow's dataset two HEADs for its size and an open and a
    read of its footer again: status 5 requests per listed file, and
    read_run(...).results()/.scores() 8. Each listed file's end is now read
    once (its size, one ranged read of its last TAIL_BYTES: all of a small
    file), the footer parsed from those bytes and handed with them to the
    dataset: 2 requests a file, and the manifest's 3."""
    import evalbeam
    files = _listed(folder, "s")
    assert all(os.path.getsize(f) <= TAIL_BYTES for f in files)
    with ObjectStore(folder) as store:
        assert _requests(store, lambda: run(["status", "--output", store.url, "--run-id",
                                             "s"])) <= 2 * len(files) + 4
        assert "finished" in capsys.readouterr().out

        def read():
            result = evalbeam.read_run(store.url, "s")
            got[:] = [result.results(), result.scores()]
            result.results().to_pandas(), result.scores().to_pandas()
        got: list = []
        tables = _listed(folder, "s", "results", "scores")
        assert _requests(store, read) <= 2 * len(tables) + 3
    local = evalbeam.read_run(folder, "s")
    assert got[0].equals(local.results()) and got[0].num_rows == 40 * len(BOTS)
    assert got[1].equals(local.scores())


def test_larger_files_and_footers_read_the_same_as_locally(folder, capsys):
    """A listed file larger than TAIL_BYTES is read from its end once for the
    check and its footer, then its data from the store; a footer larger than
    TAIL_BYTES is read in one read more. The rows are those read locally."""
    import evalbeam
    results = _listed(folder, "g", "results")
    assert all(os.path.getsize(f) > TAIL_BYTES for f in results)
    files = _listed(folder, "g")
    with ObjectStore(folder) as store:
        assert _requests(store, lambda: run(["status", "--output", store.url, "--run-id",
                                             "g"])) <= _most(files, False) + 4
        assert "finished" in capsys.readouterr().out
        result = evalbeam.read_run(store.url, "g")
        assert _requests(store, result.results) <= _most(results, True) + 3  # + the manifest
        assert _requests(store, result.scores) <= _most(_listed(folder, "g", "scores"), True)
        got = [result.results(), result.scores()]
    local = evalbeam.read_run(folder, "g")
    assert got[0].equals(local.results())
    assert got[1].equals(local.scores()) and got[1].num_rows > 40 * len(BOTS)


def test_calibrate_reads_each_listed_file_once(folder, capsys):
    """Before: calibrate made results/'s dataset three times (for its columns,
    its unlabelled rows, its labelled rows), each time reading every listed
    file's size and end again: 6 requests a results/ file where status makes 2
    (31 reads here, 337 requests for 83 files in bench/object_store_reads.py).
    It now makes results/'s dataset once (its two scans, the unlabelled rows'
    bots and the labelled rows, share it): a size and one read per listed file of the tables it reads, the
    manifest's 3, and 2 sizes its writes ask. Its rows are those of the same
    run read from a local folder."""
    from pipeline.postrun.calibrate import calibrate
    read = _listed(folder, "s", "results", "scores", "summary")
    with ObjectStore(folder) as store:
        got = _reads(store, lambda: run(["calibrate", "--output", store.url, "--run-id", "s"]))
        assert "calibration.md" in capsys.readouterr().out
        rows = calibrate(store.url, "s").rows
    assert got.get("HEAD", 0) + got.get("GET", 0) <= 2 * len(read) + 3 + 2, got
    assert rows == calibrate(folder, "s").rows and rows


def test_the_viewers_runs_list_reads_a_marker_on_the_store_again_only_once_it_changed(
        folder, tmp_path):
    """Before: each load of the viewer's runs list of an object store read every
    run's completion marker again (whether it exists, an open, a read: 3
    requests) and asked for its lease (1), though nothing had changed. A
    marker is now kept per its size and time in the listing the list makes
    anyway (one LIST): a second load of unchanged runs reads no marker. One
    rewritten with the same size (its time changes) is read again, and only
    it; one deleted is seen. A time to the second (S3's, Azure's) not 2 s
    old when read cannot tell a rewrite in the same second: such a marker is
    read on every load until it is."""
    import shutil
    from pipeline.viewer.data import Catalog
    out = str(tmp_path / "out")
    shutil.copytree(folder, out)
    marker = {r: os.path.join(out, "runs", r, "manifest.json") for r in ("s", "g")}
    for path in marker.values():  # committed a minute ago
        os.utime(path, (time.time() - 60.25,) * 2)

    def rewrite(run_id: str, mtime: float) -> str:
        """The marker's finished_at changed in place (same size), its time set."""
        with open(marker[run_id], "r+b") as fh:
            data = fh.read()
            finished = json.loads(data)["finished_at"]
            later = finished[:11] + ("00" if finished[11:13] != "00" else "01") + finished[13:]
            fh.seek(0)
            fh.write(data.replace(finished.encode(), later.encode()))
        os.utime(marker[run_id], (mtime, mtime))
        return later

    with ObjectStore(out) as store:
        catalog = Catalog(store.url, prefetch=False)

        def load() -> tuple[dict, list, dict]:
            store.reset()
            runs, problems = catalog.runs()
            got = {k: n for k, n in store.counts().items() if k != "bytes"}
            return {r["run_id"]: r for r in runs}, problems, got

        try:
            first, problems, got = load()
            assert sorted(first) == ["g", "s"] and problems == [] and got["GET"] == 2, got
            again, problems, got = load()
            assert got == {"LIST": 1} and again == first and problems == []

            later = rewrite("s", time.time() - 30.5)
            changed, _, got = load()
            assert got.get("GET") == 1 and changed["s"]["finished_at"] == later, got
            assert changed["g"] == first["g"]
            assert load()[2] == {"LIST": 1}

            second = float(int(time.time()) + 10)  # to the second, and not 2 s old
            os.utime(marker["s"], (second, second))
            for _ in range(2):
                assert load()[2].get("GET") == 1
            later = rewrite("s", second)  # the same size, the same second
            assert load()[0]["s"]["finished_at"] == later

            os.remove(marker["g"])
            gone, problems, _ = load()
            assert sorted(gone) == ["s"] and "run g has no completed attempt" in problems[0]
        finally:
            catalog.close()
