"""What the request journal costs on the remote-call path.

    python bench/journal_cost.py [--calls 2000] [--rounds 3]

One process's AsyncRuntime sends CALLS chat calls at once (max_concurrency
32, no rate limit) to the loopback fake OpenAI server (tests/fake_server.py,
no added latency: the worst case for any per-call overhead), each counted in
a CallLog as a DoFn counts it, with the journal off and on in alternating
rounds. Reported: calls/s of each round and the medians, and the journal's
own time per call (its two writes, timed alone on the same file).
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
from transforms.remote.journal import RequestJournal  # noqa: E402
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
    """Microseconds per call of the journal's two writes (sent, ended), alone."""
    journal = RequestJournal(path)
    ids = [uuid.uuid4().hex for _ in range(n)]
    t0 = time.perf_counter()
    for i in ids:
        journal.attempted(i, "llm", 1, 40.0)
        journal.ended(i, "tally", 40, 10)
    took = time.perf_counter() - t0
    journal.close()
    return took / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="evalbeam-journal-"))
    rates: dict[str, list[float]] = {"off": [], "on": []}
    with FakeOpenAI(ServerConfig(record_requests=False)) as server:
        one_round(server.openai_base_url, 200, None)  # warm up
        for r in range(args.rounds):
            for mode in (("off", "on") if r % 2 == 0 else ("on", "off")):
                path = str(folder / f"requests-{r}.sqlite") if mode == "on" else None
                rates[mode].append(one_round(server.openai_base_url, args.calls, path))
    for mode, rs in rates.items():
        print(f"journal {mode}: " + ", ".join(f"{x:.0f}" for x in rs)
              + f" calls/s (median {statistics.median(rs):.0f})")
    print(f"journal writes alone: {write_cost(str(folder / 'alone.sqlite'), 5000):.1f} µs "
          "per call (sent + ended)")


if __name__ == "__main__":
    main()
