#!/usr/bin/env bash
# On a GPU: fp16 (or --bf16) training of every model family for a few hundred updates, then transformer-base
# throughput, SG-Net against vanilla. Options: bash benchmarks/gpu_check.sh --help (benchmarks/gpu_check.py).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3) || { echo "error: no Python (run scripts/setup.sh)" >&2; exit 1; }
FAIRSEQ_SYNTAX_ENTRY=gpu_check.sh exec "$PY" "$ROOT/benchmarks/gpu_check.py" "$@"
