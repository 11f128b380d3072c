"""A run's completion marker (runs/<run_id>/manifest.json) as bytes -> object.

Pure, so that every reader words a damaged marker the same way: the commands
that read a run through it (transforms/publish/completed.py) and the warehouse
DDL that leaves its run out of the views (schemas/ddl.py). What the object
must hold is each reader's own check.
"""
from __future__ import annotations

import json
import re

from schemas.messages import json_kind

ATTEMPT = re.compile(r"[0-9a-f]{12}")
"""An attempt id, as a manifest names it and its files carry it; fullmatch it
(a "$" would let a last newline through), or read it in DuckDB as a pattern."""


def parse_manifest_bytes(data: bytes) -> tuple[dict | None, str | None]:
    """The marker's JSON object and None, or None and why it is not one (one
    line: "empty", "not UTF-8 text", "not JSON (...)", "nested too deeply",
    "a JSON array, not an object": JSON's names, not Python's NoneType or str)."""
    if not data.strip():  # a write cut off at its start (a full disk, a crash)
        return None, "empty"
    try:
        manifest = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:
        return None, f"not JSON ({(str(exc).splitlines() or [type(exc).__name__])[0][:120]})"
    if not isinstance(manifest, dict):
        return None, f"a JSON {json_kind(manifest)}, not an object"
    return manifest, None


def other_run(manifest: dict, run_id: str) -> str | None:
    """Why a marker is not `run_id`'s: the run it names, cut short (a tampered
    marker's run_id of 100,000 characters made a line as long); None: it is."""
    named = manifest.get("run_id")
    if named == run_id:
        return None
    return f"it names run {repr(named[:130]) if isinstance(named, str) else repr(named)[:130]}"
