#!/usr/bin/env bash
# LAMBADA as reading comprehension with parses, coreference chains and the five supervision signals.
# Options: bash data-prep/lambada.sh --help (the recipe: fairseq_syntax/data_prep/lambada.py).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3) || { echo "error: no Python (run scripts/setup.sh)" >&2; exit 1; }
FAIRSEQ_SYNTAX_ENTRY=lambada.sh PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" exec "$PY" -m fairseq_syntax.data_prep lambada "$@"
