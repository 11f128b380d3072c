"""The shared tier of the call cache: one intact object per key, written once,
read by any worker; a corrupt or partial object is ignored and rewritten; a
run whose workers start with empty local caches makes zero calls."""
from __future__ import annotations

import asyncio
import io
import os
import tempfile

import httpx
import pytest
from apache_beam.io.filesystem import FileSystem

from pipeline.plan import call_cache
from pipeline.config import ConfigError, parse_config
from tests.fake_server import FakeOpenAI
from tests.pipeline_helpers import fake_runtime, manifest, read_rows
from tests.test_call_cache import MSG, _cfg, _ok
from tests.test_judge_pipeline import judged_runs_in_two_processes
from transforms.enrich.embeddings.endpoint import EndpointEmbedder
from transforms.remote.cache import CacheSpec, open_cache
from transforms.remote.client import EndpointClient
from transforms.remote.openai_api import chat
from transforms.remote.shared_cache import (SharedCallCache, decode_object, encode_object,
                                            object_path)
from transforms.remote.usage import CallLog

KEY = "ab" + "0" * 62
REPLY = {"choices": [{"message": {"content": "ünïcode ✓"}}], "usage": {"prompt_tokens": 3}}


def objects(root) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, f), root)
                  for r, _, fs in os.walk(root) for f in fs)


def test_an_object_decodes_only_when_whole_and_for_its_key():
    blob = encode_object(KEY, REPLY)
    assert decode_object(KEY, blob) == REPLY
    header, body = blob.split(b"\n", 1)
    flipped = blob[:-3] + bytes([blob[-3] ^ 1]) + blob[-2:]
    damaged = [b"", blob[:len(header)], blob[:-1], blob + b" ", flipped,
               header.replace(b"/1 ", b"/9 ") + b"\n" + body,
               header + b"\n" + body.replace(b"3", b"4")]  # same length, other bytes
    assert all(decode_object(KEY, d) is None for d in damaged)
    assert decode_object("cd" + KEY[2:], blob) is None  # another key's object


def test_objects_are_written_once_under_prefix_folders(tmp_path):
    root = str(tmp_path / "shared")
    cache = SharedCallCache(root)
    try:
        assert cache.get(KEY) is None
        assert cache.put(KEY, REPLY) is True
        assert cache.put(KEY, {"other": "answer"}) is False  # a valid object is never replaced
        assert cache.get(KEY) == REPLY and SharedCallCache(root).get(KEY) == REPLY
        assert objects(root) == [f"ab/{KEY}"]  # no temporary file left behind
    finally:
        cache.close()


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_a_corrupt_or_partial_object_is_ignored_and_rewritten(tmp_path, damage):
    root = str(tmp_path / "shared")
    cache = SharedCallCache(root)
    try:
        cache.put(KEY, REPLY)
        path = object_path(root, KEY)
        good = open(path, "rb").read()
        bad = {"truncate": good[:len(good) // 2], "garbage": b"\x00" * 40, "empty": b""}[damage]
        with open(path, "wb") as fh:
            fh.write(bad)
        assert cache.get(KEY) is None  # never trusted
        assert cache.put(KEY, REPLY) is True
        assert open(path, "rb").read() == good and objects(root) == [f"ab/{KEY}"]
    finally:
        cache.close()


class MemFileSystem(FileSystem):
    """An object store in a dict, scheme mem:// (what gs:// and s3:// look like
    to Beam: no folders, no hard links, whole objects replaced by rename)."""

    objects: dict[str, bytes] = {}

    @classmethod
    def scheme(cls):
        return "mem"

    def join(self, basepath, *paths):
        return "/".join([basepath.rstrip("/"), *paths])

    def create(self, path, mime_type=None, compression_type=None):
        store = self.objects

        class Upload(io.BytesIO):
            def close(self):
                store[path] = self.getvalue()  # visible once whole, as an upload
                super().close()
        return Upload()

    def open(self, path, mime_type=None, compression_type=None):
        if path not in self.objects:
            raise FileNotFoundError(path)
        return io.BytesIO(self.objects[path])

    def rename(self, source_file_names, destination_file_names):
        for src, dst in zip(source_file_names, destination_file_names):
            self.objects[dst] = self.objects.pop(src)

    def exists(self, path):
        return path in self.objects

    def delete(self, paths):
        for path in paths:
            self.objects.pop(path, None)

    def _unused(self, *args, **kwargs):
        raise NotImplementedError
    split = mkdirs = has_dirs = _list = copy = size = last_updated = checksum = metadata = \
        _unused


def test_on_an_object_store_objects_are_renamed_into_place_once(tmp_path):
    root = f"mem://bucket/{tmp_path.name}/objects"
    cache = SharedCallCache(root)
    try:
        assert cache.put(KEY, REPLY) is True and cache.put(KEY, {"x": 1}) is False
        mine = {p: b for p, b in MemFileSystem.objects.items() if p.startswith(root)}
        assert list(mine) == [f"{root}/ab/{KEY}"]  # the temporary object was renamed away
        MemFileSystem.objects[f"{root}/ab/{KEY}"] = mine[f"{root}/ab/{KEY}"][:-2]  # partial
        assert cache.get(KEY) is None and cache.put(KEY, REPLY) is True
        assert cache.get(KEY) == REPLY
    finally:
        cache.close()


def test_url_outputs_share_tier_two_under_the_output_and_keep_tier_one_per_worker(tmp_path):
    cfg = parse_config({})
    assert call_cache(cfg, "mem://bucket/evals/") == CacheSpec(
        None, "mem://bucket/evals/_cache/objects")
    assert call_cache(cfg, str(tmp_path)) == CacheSpec(
        str(tmp_path / "_cache" / "calls.sqlite"), None)
    mine = parse_config({"cache": {"path": "t1.sqlite", "shared_path": "shared"}}, str(tmp_path))
    assert call_cache(mine, "mem://bucket/evals") == CacheSpec(
        str(tmp_path / "t1.sqlite"), str(tmp_path / "shared"))  # relative to the config
    assert call_cache(parse_config({"cache": {"enabled": False}}), "mem://b/e") is None
    with pytest.raises(ConfigError, match="cache.shared_path nofs://x"):
        call_cache(parse_config({"cache": {"shared_path": "nofs://x"}}), str(tmp_path))
    with pytest.raises(ConfigError, match="cache.shared_path must be a path"):
        parse_config({"cache": {"shared_path": 3}})


def test_an_unwritable_shared_folder_costs_calls_not_the_run(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = SharedCallCache(str(blocker / "shared"))
    try:
        assert cache.put(KEY, REPLY) is False and cache.write_failures == 1
        assert cache.get(KEY) is None
    finally:
        cache.close()


def _ask(spec: CacheSpec, handler=_ok):
    """One cached judge call through a client whose cache is spec; (result, requests)."""
    seen = []
    cache = open_cache(spec)

    async def main():
        def record(request):
            seen.append(request)
            return handler(request)
        client = EndpointClient("llm", _cfg(), transport=httpx.MockTransport(record), cache=cache)
        try:
            return await chat(client, "m", MSG, purpose="judge:x", cache_salt="")
        finally:
            await client.aclose()
    try:
        return asyncio.run(main()), len(seen)
    finally:
        cache.close()


def test_a_fresh_worker_is_answered_by_the_shared_tier_then_by_its_own(tmp_path):
    shared = str(tmp_path / "shared")
    first, sent = _ask(CacheSpec(str(tmp_path / "w1.sqlite"), shared))
    assert sent == 1 and not first.record.cache_hit and len(objects(shared)) == 1
    other, sent = _ask(CacheSpec(str(tmp_path / "w2.sqlite"), shared))  # another machine
    assert sent == 0 and other.texts == first.texts
    assert other.record.cache_hit and other.record.shared_cache_hit
    again, sent = _ask(CacheSpec(str(tmp_path / "w2.sqlite"), shared))  # copied to tier 1
    assert sent == 0 and again.record.cache_hit and not again.record.shared_cache_hit


def test_a_corrupt_object_is_asked_again_and_replaced(tmp_path):
    shared = str(tmp_path / "shared")
    _ask(CacheSpec(str(tmp_path / "w1.sqlite"), shared))
    [name] = objects(shared)
    path = os.path.join(shared, name)
    good = open(path, "rb").read()
    with open(path, "wb") as fh:
        fh.write(good[:-5])  # a partial upload
    result, sent = _ask(CacheSpec(str(tmp_path / "w2.sqlite"), shared))
    assert sent == 1 and not result.record.cache_hit
    assert open(path, "rb").read() == good


def test_without_a_path_tier_one_lives_in_the_worker_temp_folder(tmp_path, monkeypatch):
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    cache = open_cache(CacheSpec(None, str(tmp_path / "shared")))
    try:
        assert cache.local.path.startswith(str(tmp_path / "tmp" / "evalbeam-cache"))
    finally:
        cache.close()


def test_endpoint_embeddings_come_from_the_shared_tier_per_text(tmp_path):
    shared = str(tmp_path / "shared")
    with FakeOpenAI() as server:
        with fake_runtime(server, "emb", CacheSpec(str(tmp_path / "a.sqlite"), shared)) as rt:
            a = EndpointEmbedder(rt, "emb", "e", request_size=10, log=CallLog()).embed(
                ["alpha", "beta"])
        log = CallLog()
        with fake_runtime(server, "emb", CacheSpec(str(tmp_path / "b.sqlite"), shared)) as rt:
            b = EndpointEmbedder(rt, "emb", "e", request_size=10, log=log).embed(
                ["beta", "alpha"])
        assert len(server.requests) == 1
    assert (b[0] == a[1]).all() and (b[1] == a[0]).all()
    [(_, usage)] = log.drain()
    assert usage["calls"] == 0 and usage["cache_hits"] == usage["shared_cache_hits"] == 2


@pytest.mark.slow
def test_two_worker_processes_share_the_cache_folder_and_a_rerun_makes_no_call(tmp_path):
    """Run 1: two worker processes fill the shared folder; run 2 starts with an
    empty local cache (as new machines would) and sends nothing."""
    shared = str(tmp_path / "shared")
    out, first = judged_runs_in_two_processes(tmp_path, 10, 10, {
        run_id: "metrics: [faithfulness, judge_relevance]\n"
                f"cache: {{path: {tmp_path / tier1}, shared_path: {shared}}}\n"
        for run_id, tier1 in (("s1", "w1.sqlite"), ("s2", "w2.sqlite"))})
    usage = {}
    for u in read_rows(out, "usage"):
        totals = usage.setdefault(u["run_id"], {"calls": 0, "cache_hits": 0,
                                                "shared_cache_hits": 0})
        for k in totals:
            totals[k] += u[k]
    stored = len(objects(shared))
    assert usage["s1"]["calls"] == first and usage["s1"]["shared_cache_hits"] == 0
    assert 0 < stored <= first  # one object per distinct request
    assert usage["s2"]["calls"] == 0
    assert usage["s2"]["cache_hits"] == first + usage["s1"]["cache_hits"]
    assert stored <= usage["s2"]["shared_cache_hits"] <= usage["s2"]["cache_hits"]
    for run_id in ("s1", "s2"):
        assert manifest(out, run_id)["reconciliation"]["ok"]
    values = {}
    for s in read_rows(out, "scores"):
        values.setdefault(s["run_id"], {})[(s["case_id"], s["metric"])] = s["value"]
    assert values["s1"] == values["s2"]


def test_put_says_false_when_another_writer_won_the_race(tmp_path, monkeypatch):
    """Issue 22 item 20: put() said True ("written") although the hard link
    found another worker's object already published between its check and its link."""
    root = str(tmp_path / "shared")
    other, mine = SharedCallCache(root), SharedCallCache(root)
    try:
        real_read = mine._read
        def read_then_lose(path):  # the check sees nothing; the other worker publishes now
            blob = real_read(path)
            assert other.put(KEY, REPLY) is True
            return blob
        monkeypatch.setattr(mine, "_read", read_then_lose)
        assert mine.put(KEY, {"late": "answer"}) is False
        assert SharedCallCache(root).get(KEY) == REPLY and objects(root) == [f"ab/{KEY}"]
    finally:
        other.close()
        mine.close()
