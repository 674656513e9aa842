#!/usr/bin/env bash
# LAMBADA: train the reader with and without its supervision signals, score on the LAMBADA dev set, summarize.
# Options: bash examples/lambada/reproduce.sh --help (the runner: examples/lambada/reproduce.py).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3) || { echo "error: no Python (run scripts/setup.sh)" >&2; exit 1; }
FAIRSEQ_SYNTAX_ENTRY=reproduce.sh exec "$PY" "$ROOT/examples/lambada/reproduce.py" "$@"
