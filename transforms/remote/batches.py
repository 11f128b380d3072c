"""A batch request the server refused, sent again smaller: TEI's batch-size
limit ("batch size N > maximum allowed batch size M": batches of M), or one
input it cannot read that fails the whole batch (halves, down to that input),
so a refusal costs the input that caused it, not its batch."""
from __future__ import annotations

import re

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
