#!/usr/bin/env bash
# Multi30k: vanilla, SG-Net and its controls, several seeds each to convergence, scored on every test set.
# Options: bash examples/multi30k/reproduce.sh --help (the runner: examples/multi30k/reproduce.py).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3) || { echo "error: no Python (run scripts/setup.sh)" >&2; exit 1; }
FAIRSEQ_SYNTAX_ENTRY=reproduce.sh exec "$PY" "$ROOT/examples/multi30k/reproduce.py" "$@"
