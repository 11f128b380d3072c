#!/usr/bin/env bash
# Runs the test suite (creates or reuses ./.venv). Extra arguments go to pytest.
source "$(dirname "$0")/scripts/venv.sh"
cd "$ROOT"
exec "$PY" -m pytest -q "$@"
