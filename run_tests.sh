#!/usr/bin/env bash
# Runs the test suite (creates or reuses ./.venv). Extra arguments go to pytest.
source "$(dirname "$0")/scripts/venv.sh"
cd "$ROOT"
# Two test processes (pytest-xdist), one per core of the 2-core CI machine: a
# serial run took 37-40 min there, mostly Beam and Dask pipelines that wait on
# their workers. Whole files go to one process (--dist loadfile), so a file's
# module fixtures (a Dask cluster, a built docs site) start once.
# EVALBEAM_TEST_WORKERS=0 runs every test in this one process.
exec "$PY" -m pytest -q -n "${EVALBEAM_TEST_WORKERS:-2}" --dist loadfile "$@"
