"""A batch request the server refused, sent again smaller: TEI's batch-size
limit ("batch size N > maximum allowed batch size M": batches of M), or one
input it cannot read that fails the whole batch (halves, down to that input),
so a refusal costs the input that caused it, not its batch."""
from __future__ import annotations

import asyncio
import re
from typing import Any, Awaitable, Callable

from transforms.remote.client import CallRecord, EndpointClient

BATCH_REFUSED = (413, 422)  # TEI: a batch over --max-client-batch-size
_BATCH_LIMIT = re.compile(r"maximum allowed batch size (\d+)")


def batch_limit(error: str | None) -> int | None:
    """M from TEI's "batch size N > maximum allowed batch size M", if named."""
    m = _BATCH_LIMIT.search(error or "")
    return int(m.group(1)) if m else None


def split_batch(size: int, limit: int | None) -> list[tuple[int, int]]:
    """(start, stop) of the smaller batches a refused batch of `size` is sent as:
    batches of `limit` when the server named one below size, else two halves."""
    step = limit if limit is not None and 0 < limit < size else (size + 1) // 2
    return [(i, min(i + step, size)) for i in range(0, size, step)]


Part = tuple[list, Any, CallRecord]  # (items, answer or None, record) of one request


async def ask_in_parts(client: EndpointClient, items: list,
                       ask: Callable[[list], Awaitable[tuple[Any, CallRecord]]],
                       refused_whole: Callable[[CallRecord], bool]) -> list[Part]:
    """(items, answer, record) of each request made for items, in order;
    ask(items) -> (answer, or None when the call failed; its record). A batch
    over the endpoint's known limit is sent as batches of it. A failed batch is
    sent again smaller: as batches of the limit a TEI names (kept for the
    endpoint's later requests), or in halves when refused_whole(record) says
    one item failed the batch; the refused request stays in the list with no
    items (a call counted, whose failure is no item's)."""
    limit = client.batch_limit
    if limit is not None and len(items) > limit:
        return await _in_parts(client, items, ask, refused_whole, limit)
    answer, rec = await ask(items)
    if answer is None and len(items) > 1:
        named = batch_limit(rec.error) if rec.status in BATCH_REFUSED else None
        if named is not None:
            client.batch_limit = min(named, client.batch_limit or named)
        if named is not None or refused_whole(rec):
            return [([], None, rec)] + await _in_parts(client, items, ask, refused_whole, named)
    return [(items, answer, rec)]


async def _in_parts(client, items, ask, refused_whole, limit: int | None) -> list[Part]:
    parts = await asyncio.gather(*(ask_in_parts(client, items[a:b], ask, refused_whole)
                                   for a, b in split_batch(len(items), limit)))
    return [x for part in parts for x in part]
