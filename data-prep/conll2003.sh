#!/usr/bin/env bash
# CoNLL-2003 English NER to binarized WordPieces, aligned heads and word-level tags, for syntax_token_labeling.
# Options: bash data-prep/conll2003.sh --help (the recipe: fairseq_syntax/data_prep/conll2003.py).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3) || { echo "error: no Python (run scripts/setup.sh)" >&2; exit 1; }
FAIRSEQ_SYNTAX_ENTRY=conll2003.sh PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" exec "$PY" -m fairseq_syntax.data_prep conll2003 "$@"
