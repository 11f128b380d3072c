"""What the request journal costs on the remote-call path, and at commit.

    python bench/journal_cost.py [--calls 2000] [--rounds 3] [--objects 20000]

One process's AsyncRuntime sends CALLS chat calls at once (max_concurrency
32, no rate limit) to the loopback fake OpenAI server (tests/fake_server.py,
no added latency: the worst case for any per-call overhead), each counted in
a CallLog as a DoFn counts it, with the journal off, as the SQLite file (a
local or shared-disk output) and as objects (an object-store output's
ObjectJournal, here written to a local folder) in rotating order. Reported:
calls/s of each round and the medians; each journal's own time per call (its
two writes, timed alone); and what Finalize's read of an object journal costs
at commit: OBJECTS objects of one call each (the worst case: a process that
flushes every 2 s while one call is in flight), listed, read with
READ_THREADS threads and merged. A local folder has no network round trip:
an object store's reads cost that time plus its latency per object divided by
READ_THREADS (BENCHMARKS.md §14 works it out).
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from pipeline.config import EndpointConfig  # noqa: E402
from tests.fake_server import FakeOpenAI, ServerConfig  # noqa: E402
from transforms.remote.budget import BudgetSpec  # noqa: E402
from transforms.remote.journal import (READ_THREADS, ObjectJournal, RequestJournal,  # noqa: E402
                                       read_journal)
from transforms.remote.openai_api import chat  # noqa: E402
from transforms.remote.runtime import AsyncRuntime  # noqa: E402
from transforms.remote.usage import CallLog  # noqa: E402


def one_round(base_url: str, calls: int, journal: str | None) -> float:
    """calls/s of one runtime sending `calls` calls at once."""
    ep = EndpointConfig(base_url=base_url, requests_per_second=1e6, max_concurrency=32)
    runtime = AsyncRuntime({"llm": ep}, budget=BudgetSpec(journal=journal) if journal else None)
    log, client = CallLog(), runtime.client("llm")

    async def ask(i: int):
        reply = await chat(client, "m", [{"role": "user", "content": f"q{i}"}], purpose="bot:b",
                           max_tokens=20)
        runtime.record(reply.record, log)

    async def ask_all():
        await asyncio.gather(*(ask(i) for i in range(calls)))
    try:
        t0 = time.perf_counter()
        runtime.run(ask_all())
        return calls / (time.perf_counter() - t0)
    finally:
        runtime.close()


def write_cost(path: str, n: int) -> float:
    """Microseconds per call of the journal's two writes (sent, ended), alone
    (an object journal's closing flush included)."""
    journal = RequestJournal(path) if path.endswith(".sqlite") else ObjectJournal(path)
    ids = [uuid.uuid4().hex for _ in range(n)]
    t0 = time.perf_counter()
    for i in ids:
        journal.attempted(i, "llm", 1, 40.0)
        journal.ended(i, "tally", 40, 10)
    journal.close()
    return (time.perf_counter() - t0) / n * 1e6


def commit_read(base: str, objects: int) -> tuple[float, int]:
    """Seconds for Finalize's read of `objects` journal objects of one call
    each, and the rows it merged."""
    for i in range(objects):
        journal = ObjectJournal(base, flush_s=3600)
        journal.attempted(f"r{i}", "llm", 1, 40.0)
        journal.ended(f"r{i}", "tally", 40, 10)
        journal.close()
    t0 = time.perf_counter()
    rows = read_journal(base)
    return time.perf_counter() - t0, len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--objects", type=int, default=20000)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="evalbeam-journal-"))
    modes = ["off", "sqlite", "objects"]
    rates: dict[str, list[float]] = {m: [] for m in modes}
    paths = {"off": lambda r: None, "sqlite": lambda r: str(folder / f"requests-{r}.sqlite"),
             "objects": lambda r: str(folder / f"objects-{r}" / "requests")}
    with FakeOpenAI(ServerConfig(record_requests=False)) as server:
        one_round(server.openai_base_url, 200, None)  # warm up
        for r in range(args.rounds):
            for mode in modes[r % 3:] + modes[:r % 3]:  # rotate who goes first
                rates[mode].append(one_round(server.openai_base_url, args.calls, paths[mode](r)))
    for mode, rs in rates.items():
        print(f"journal {mode}: " + ", ".join(f"{x:.0f}" for x in rs)
              + f" calls/s (median {statistics.median(rs):.0f})")
    for mode in ("sqlite", "objects"):
        print(f"journal {mode} writes alone: {write_cost(paths[mode]('alone'), 5000):.1f} µs "
              "per call (sent + ended)")
    took, rows = commit_read(str(folder / "commit" / "requests"), args.objects)
    print(f"commit read of {args.objects} objects ({rows} calls, {READ_THREADS} threads): "
          f"{took:.2f} s, {took / args.objects * 1e3:.3f} ms per object")


if __name__ == "__main__":
    main()
