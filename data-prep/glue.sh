#!/usr/bin/env bash
# A GLUE task to binarized WordPieces plus aligned dependency heads, for syntax_sentence_prediction.
# Options: bash data-prep/glue.sh --help (the recipe: fairseq_syntax/data_prep/glue.py).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3) || { echo "error: no Python (run scripts/setup.sh)" >&2; exit 1; }
FAIRSEQ_SYNTAX_ENTRY=glue.sh PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" exec "$PY" -m fairseq_syntax.data_prep glue "$@"
