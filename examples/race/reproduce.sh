#!/usr/bin/env bash
# RACE: fine-tune the baseline, SG-Net, SLA and the controls from MiniLM-L6, score on RACE dev, summarize.
# Options: bash examples/race/reproduce.sh --help (the runner: examples/race/reproduce.py).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3) || { echo "error: no Python (run scripts/setup.sh)" >&2; exit 1; }
FAIRSEQ_SYNTAX_ENTRY=reproduce.sh exec "$PY" "$ROOT/examples/race/reproduce.py" "$@"
