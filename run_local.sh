#!/usr/bin/env bash
# Runs the main job on the bundled example, offline, with Beam's FnApiRunner.
# Extra arguments go to `evalbeam run` (e.g. --direct_running_mode=multi_processing
# --direct_num_workers=2).
source "$(dirname "$0")/scripts/venv.sh"
cd "$ROOT"
OUT="${EVALBEAM_OUT:-out/example}"
"$PY" -m pipeline run \
  --input examples/support/cases.parquet \
  --config examples/support/config.yaml \
  --output "$OUT" --run-id example "$@"
