"""validation/public/build.py: the public benchmark is rebuilt byte for byte from
repository snapshots at recorded commits, its labels are mapped as documented,
splits follow the source a row is grounded in, and overlaps are dropped."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "validation", "public"))
import build  # noqa: E402


def _git(cwd, *args) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def _snapshot(mirror, repo: str, files: dict[str, str]) -> str:
    """A bare snapshot of a one-commit repository under mirror/<owner>+<name>/repo,
    as `fetch` leaves one; returns the commit."""
    work = os.path.join(str(mirror), "work-" + repo.replace("/", "+"))
    os.makedirs(work)
    _git(work, "init", "-q")
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(work, path)) or work, exist_ok=True)
        with open(os.path.join(work, path), "w", encoding="utf-8") as fh:
            fh.write(text)
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "data")
    _git(str(mirror), "clone", "-q", "--bare", work,
         os.path.join(str(mirror), repo.replace("/", "+"), "repo"))
    return _git(work, "rev-parse", "HEAD")


def _q2_files(rows: list[tuple[str, str, str, str]]) -> dict[str, str]:
    """Q²-shaped CSVs: (file, episode, knowledge, response) rows."""
    files: dict[str, io.StringIO] = {}
    for name, episode, knowledge, response in rows:
        if name not in files:
            files[name] = io.StringIO()
            files[name].write(",episode_idx,round,topic,message,response,knowledge,gold\n")
        buf = files[name]
        i = buf.getvalue().count("\n") - 1
        buf.write(f'{i},{episode},0,t,"hi, there",{response},"{knowledge}",g\n')
    return {f"third_party/data/{k}.csv": v.getvalue() for k, v in files.items()}


@pytest.fixture()
def fake_sources(tmp_path):
    """Two Q²-shaped sets in a fake mirror; the second repeats one row of the first."""
    first = _snapshot(tmp_path, "o/first", _q2_files([
        ("dodeca_consistent", "1", "The sky is blue.", "the sky is blue"),
        ("dodeca_inconsistent", "1", "The sky is blue.", "the sky is green"),
        ("memnet_consistent", "2", "Paris is in France.", "paris is in france"),
        ("memnet_inconsistent", "3", "Rome is in Italy.", "rome is in spain"),
    ]))
    second = _snapshot(tmp_path, "o/second", _q2_files([
        ("dodeca_consistent", "7", "The sky is blue.", "The sky is BLUE!"),  # repeats first
        ("dodeca_inconsistent", "8", "Snow is white.", "snow is black"),
        ("memnet_consistent", "9", "Ice is cold.", "ice is cold"),
        ("memnet_inconsistent", "9", "Ice is cold.", "ice is hot"),
    ]))
    sources = (
        build.Source("first", "dialogue", "o/first", first, "MIT", True, build.read_q2, "t"),
        build.Source("second", "dialogue", "o/second", second, "none", False, build.read_q2,
                     "t"),
    )
    return str(tmp_path), sources


def test_rebuild_is_byte_identical_and_labels_map(fake_sources):
    mirror, sources = fake_sources
    once = build.build(mirror, ["first", "second"], sources)
    again = build.build(mirror, ["first", "second"], sources)
    assert {k: v[0] for k, v in once.items()} == {k: v[0] for k, v in again.items()}
    rows = pq.read_table(io.BytesIO(once["first"][0])).to_pylist()
    assert [(r["answer"], r["label"]) for r in rows] == [
        ("the sky is blue", "PASS"), ("the sky is green", "FAIL"),
        ("paris is in france", "PASS"), ("rome is in spain", "FAIL")]
    assert rows[0]["contexts"] == ["The sky is blue."] and rows[0]["question"] == "hi, there"
    assert rows[0]["case_id"] == "first:dodeca_consistent-0" and rows[0]["suite"] == "first"
    assert {"set:first", "task:dialogue"} <= set(rows[0]["tags"])


def test_splits_follow_the_source_and_overlaps_are_dropped(fake_sources):
    mirror, sources = fake_sources
    built = build.build(mirror, ["first", "second"], sources)
    second = pq.read_table(io.BytesIO(built["second"][0])).to_pylist()
    # "The sky is BLUE!" on the same knowledge repeats a row of `first`: dropped
    assert [r["answer"] for r in second] == ["snow is black", "ice is cold", "ice is hot"]
    assert built["second"][1]["overlap_dropped"] == 1
    tags = {r["answer"]: dict(t.split(":", 1) for t in r["tags"]) for r in second}
    # the two answers about episode 9 share a source: same group, same split
    assert tags["ice is cold"]["group"] == tags["ice is hot"]["group"]
    assert tags["ice is cold"]["split"] == tags["ice is hot"]["split"]
    assert {t["split"] for t in tags.values()} <= {"dev", "test"}


def test_a_missing_commit_or_snapshot_is_a_clear_error(fake_sources):
    mirror, sources = fake_sources
    wrong = (build.Source("first", "dialogue", "o/first", "0" * 40, "MIT", True,
                          build.read_q2, "t"),)
    with pytest.raises(SystemExit, match="o/first@0000000000"):
        build.build(mirror, ["first"], wrong)
    with pytest.raises(SystemExit, match="no snapshot of o/absent"):
        build.build(mirror, ["absent"], (build.Source(
            "absent", "dialogue", "o/absent", "0" * 40, "MIT", True, build.read_q2, "t"),))


def test_faithdial_audit_labels():
    assert build.faithdial_label("entailment") is True
    assert build.faithdial_label("entailment,uncooperative") is True
    assert build.faithdial_label("entailmentt,uncooperative") is True
    assert build.faithdial_label("entailment,hallucination") is False
    assert build.faithdial_label("Partial Hallucination") is False
    assert build.faithdial_label("generic") is None
    assert build.faithdial_label("Uncooperative") is None


def _bump_pair(i: int, article_id: int, article: str, reference: str, edited: str,
               error: str, corrected: str | None = None) -> dict:
    pair = {"id": i, "article_id": article_id, "article": article,
            "reference_summary": reference, "edited_summary": edited, "error_type": error,
            "scores": {}}
    if corrected is not None:
        pair["corrected_error_type"] = corrected
    return pair


def test_bump_reference_passes_once_and_each_edit_fails(tmp_path):
    """A reference summary is the faithful side of its pairs (one row however many
    pairs or tasks repeat it); each edit is unfaithful, its origin the error type
    (task 1's corrected one)."""
    doc = "(CNN) Keefe, 92, posed for the painting in 1943 in Arlington, Vermont."
    ref = "Keefe posed for the painting in 1943 ."
    commit = _snapshot(tmp_path, "o/bump", {
        "data/task1_dataset.json": json.dumps([
            _bump_pair(0, 7, doc, ref, "Keefe posed for the painting in 1946 .",
                       "Extrinsic Circumstance Error", "Extrinsic Circumstance Error"),
            _bump_pair(1, 7, doc, ref, "Rockwell posed for the painting in 1943 .",
                       "Intrinsic Circumstance Error", "Intrinsic Entity Error")]),
        "data/task2_dataset.json": json.dumps([
            _bump_pair(0, 7, doc, ref, "Keefe refused to pose for the painting in 1943 .",
                       "Extrinsic Predicate")]),
    })
    source = build.Source("bump", "summarisation", "o/bump", commit, "MIT", True,
                          build.read_bump, "t", fitted=False)
    rows = pq.read_table(io.BytesIO(build.build(str(tmp_path), ["bump"], (source,))["bump"][0]))
    got = {r["answer"]: (r["label"], [t for t in r["tags"] if t.startswith("origin:")][0])
           for r in rows.to_pylist()}
    assert got == {
        ref: ("PASS", "origin:task1/reference"),
        "Keefe posed for the painting in 1946 .": ("FAIL", "origin:task1/Extrinsic Circumstance"),
        "Rockwell posed for the painting in 1943 .": ("FAIL", "origin:task1/Intrinsic Entity"),
        "Keefe refused to pose for the painting in 1943 .": ("FAIL",
                                                              "origin:task2/Extrinsic Predicate"),
    }
    assert rows.num_rows == 4 and rows.column("contexts").to_pylist()[0] == [doc]


def test_a_set_kept_out_of_the_fit_goes_to_local_whatever_its_licence():
    kept_out = build.Source("x", "summarisation", "o/x", "0" * 40, "MIT", True, build.read_q2,
                            "t", fitted=False)
    assert not kept_out.committed
    assert os.path.basename(os.path.dirname(build.out_path(kept_out))) == "local"
    assert os.path.basename(os.path.dirname(build.out_path(build.BY_NAME["frank"]))) == "data"
    assert not build.BY_NAME["bump"].fitted and build.BY_NAME["bump"].redistribute


def test_passages_group_sentences():
    words = ["w " * 50] * 5
    out = build.passages(words, words=120)
    assert len(out) == 2 and out[0].count("w") == 150


def _have_snapshots(*repos: str) -> bool:
    return all(os.path.isdir(os.path.join(build.DEFAULT_MIRROR, r.replace("/", "+"), "repo"))
               for r in repos)


EARLIER = [s.repo for s in build.SOURCES[:build.SOURCES.index(build.BY_NAME["q2"]) + 1]]


@pytest.mark.skipif(not _have_snapshots(*EARLIER),
                    reason="the repository snapshots are not on this machine (fetch them)")
def test_committed_file_rebuilds_identically():
    """A committed set, rebuilt from the snapshots (and the sets before it, for
    overlaps), matches the file in the repository byte for byte (`build.py --check`
    does this for every set)."""
    out = subprocess.run([sys.executable, os.path.join(ROOT, "validation", "public", "build.py"),
                          "--check", "--only", "q2"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "q2" in out.stdout and "identical" in out.stdout


def test_committed_files_are_the_redistributable_sets():
    committed = sorted(os.listdir(os.path.join(ROOT, "validation", "public", "data")))
    assert committed == sorted(f"{s.name}.parquet" for s in build.SOURCES if s.committed)
    for name in committed:
        table = pq.read_table(os.path.join(ROOT, "validation", "public", "data", name))
        assert table.schema.equals(build.SCHEMA)
        labels = set(table.column("label").to_pylist())
        assert labels == {"PASS", "FAIL"}
    with open(os.path.join(ROOT, ".gitignore")) as fh:
        assert "validation/public/local/" in fh.read()
