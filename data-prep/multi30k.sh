#!/usr/bin/env bash
# Multi30k (task 1) EN->DE to binarized text plus source dependency heads, for syntax_guided_translation.
# Options: bash data-prep/multi30k.sh --help (the recipe: fairseq_syntax/data_prep/multi30k.py).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3) || { echo "error: no Python (run scripts/setup.sh)" >&2; exit 1; }
FAIRSEQ_SYNTAX_ENTRY=multi30k.sh PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" exec "$PY" -m fairseq_syntax.data_prep multi30k "$@"
