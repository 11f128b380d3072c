"""Reading a finished run back, for the post-run commands: always through its
completion marker (transforms/publish/completed.py), never by globbing a
table for the run id, so a killed or running attempt's files are never read.

    run = read_completed_run(output, run_id)   # exit 2 without a completed attempt
    run.read(RESULTS, ["case_id", "verdict"], where)   # rows of the listed files
"""
from __future__ import annotations

from transforms.publish.completed import (CompletedRun, CorruptManifest, NoCompletedAttempt,
                                          RunUnreadable, check_output, check_run_id, corrupt,
                                          manifest_path, read_completed_run, read_manifest)
from transforms.publish.write import unwritable

__all__ = ["CompletedRun", "CorruptManifest", "NoCompletedAttempt", "PostRunError",
           "RunUnreadable", "check_output", "check_run_id", "check_writable", "corrupt",
           "manifest_path", "read_completed_run", "read_manifest"]


class PostRunError(RunUnreadable):
    """A run cannot be used as asked (no labels, an unknown bot): the command
    exits 2 with this one line."""


def check_writable(output: str, *folders: str) -> None:
    """Refuse (PostRunError, exit 2) before a command writes anything when a
    folder it writes in under --output cannot be written in (a file in its
    place, a read-only mount; for a URL, a small file made and deleted there:
    a bucket without write access): not a traceback of os.makedirs or of the
    object store halfway through its files."""
    for folder in folders:
        why = url_unwritable(folder) if "://" in output else unwritable(folder)
        if why:
            raise PostRunError(f"--output {output}: {why}")


def url_unwritable(folder: str) -> str | None:
    """Why a folder of a URL output cannot be written in, or None: a probe."""
    import secrets
    from apache_beam.io.filesystems import FileSystems
    probe = FileSystems.join(folder, f".evalbeam-probe-{secrets.token_hex(4)}")
    try:
        FileSystems.create(probe).close()
        FileSystems.delete([probe])
    except Exception as exc:  # noqa: BLE001 - each filesystem raises its own
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        return f"cannot write in {folder} ({first[:200]})"
    return None
