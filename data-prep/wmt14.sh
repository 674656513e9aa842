#!/usr/bin/env bash
# WMT14 EN->DE (the SG-Net paper's setting), from download to syntax-aligned binarized data.
# Options: bash data-prep/wmt14.sh --help (the recipe: fairseq_syntax/data_prep/wmt14.py).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3) || { echo "error: no Python (run scripts/setup.sh)" >&2; exit 1; }
FAIRSEQ_SYNTAX_ENTRY=wmt14.sh PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" exec "$PY" -m fairseq_syntax.data_prep wmt14 "$@"
