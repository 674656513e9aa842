#!/usr/bin/env bash
# GLUE (CoLA, SST-2): fine-tune the baseline, SG-Net and SLA from MiniLM-L6, score on dev.
# Options: bash examples/encoders/reproduce_glue.sh --help (the runner: examples/encoders/reproduce_glue.py).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3) || { echo "error: no Python (run scripts/setup.sh)" >&2; exit 1; }
FAIRSEQ_SYNTAX_ENTRY=reproduce_glue.sh exec "$PY" "$ROOT/examples/encoders/reproduce_glue.py" "$@"
