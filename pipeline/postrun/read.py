"""Reading a finished run back, for the post-run commands: always through its
completion marker (transforms/publish/completed.py), never by globbing a
table for the run id, so a killed or running attempt's files are never read.

    run = read_completed_run(output, run_id)   # exit 2 without a completed attempt
    run.read(RESULTS, ["case_id", "verdict"], where)   # rows of the listed files
"""
from __future__ import annotations

from transforms.publish.completed import (CompletedRun, CorruptManifest, NoCompletedAttempt,
                                          RunUnreadable, check_output, check_run_id,
                                          read_completed_run, read_manifest)
from transforms.publish.write import unwritable

__all__ = ["CompletedRun", "CorruptManifest", "NoCompletedAttempt", "PostRunError",
           "RunUnreadable", "check_output", "check_run_id", "check_writable",
           "read_completed_run", "read_manifest"]


class PostRunError(RunUnreadable):
    """A run cannot be used as asked (no labels, an unknown bot): the command
    exits 2 with this one line."""


def check_writable(output: str, *folders: str) -> None:
    """Refuse (PostRunError, exit 2) before a command writes anything when a
    folder it writes in under a local --output cannot be written in (a file
    in its place, a read-only mount): not a traceback of os.makedirs halfway
    through its files. A URL output says so when it is written."""
    if "://" in output:
        return
    for folder in folders:
        why = unwritable(folder)
        if why:
            raise PostRunError(f"--output {output}: {why}")
