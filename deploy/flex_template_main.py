"""Entry point of the Dataflow Flex Template (FLEX_TEMPLATE_PYTHON_PY_FILE).

The launcher runs `python flex_template_main.py --input=... --output=...
--run_id=... [Beam options]` with the template's parameters (see
flex_template_metadata.json); this is `evalbeam run` with them. Template
parameter names cannot hold '-', so `run_id` and `run_date` are the CLI's
`--run-id` and `--run-date`. The launcher must return once the job is
submitted, so the run is started with `--detach`: the job's own Finalize step
writes the tables, the manifest and the report and releases the run's lease;
`evalbeam status` says when it is finished. The launcher keeps the run's lease
alive (its heartbeat) until the job's workers beat themselves, so a slow
worker start-up is not taken for a dead run.

The workers run this same image, whose Beam SDK is installed, so the launcher
passes `--sdk_location=container`: nothing is staged or downloaded at launch.
"""
from __future__ import annotations

import sys

RENAMED = {"--run_id": "--run-id", "--run_date": "--run-date"}


def cli_args(argv: list[str]) -> list[str]:
    """The template's arguments as `evalbeam run` spells them."""
    out = []
    for arg in argv:
        name, eq, value = arg.partition("=")
        out.append(RENAMED.get(name, name) + eq + value)
    if "--detach" not in out:
        out.append("--detach")
    if not any(a == "--sdk_location" or a.startswith("--sdk_location=") for a in out):
        out.append("--sdk_location=container")  # the image's own SDK: nothing to stage
    return ["run", *out]


if __name__ == "__main__":
    from pipeline.cli import main
    main(cli_args(sys.argv[1:]))
