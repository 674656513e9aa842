#!/usr/bin/env bash
# The SLA paper's Table 1 on MiniLM-L6: baseline, WLA, SLA, SG-Net and the controls, 5 seeds, CoLA, SST-2, CoNLL-2003.
# Options: bash examples/encoders/reproduce_sla_table.sh --help (the runner: examples/encoders/reproduce_sla_table.py).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3) || { echo "error: no Python (run scripts/setup.sh)" >&2; exit 1; }
FAIRSEQ_SYNTAX_ENTRY=reproduce_sla_table.sh exec "$PY" "$ROOT/examples/encoders/reproduce_sla_table.py" "$@"
