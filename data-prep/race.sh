#!/usr/bin/env bash
# RACE to binarized WordPieces plus aligned heads, in fairseq's RoBERTa RACE layout, for syntax_sentence_ranking.
# Options: bash data-prep/race.sh --help (the recipe: fairseq_syntax/data_prep/race.py).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3) || { echo "error: no Python (run scripts/setup.sh)" >&2; exit 1; }
FAIRSEQ_SYNTAX_ENTRY=race.sh PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" exec "$PY" -m fairseq_syntax.data_prep race "$@"
