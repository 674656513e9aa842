#!/usr/bin/env bash
# CoNLL-2003 English NER to binarized WordPieces, aligned dependency heads and word-level tags,
# for --task syntax_token_labeling (one tag per word, predicted at the word's first WordPiece).
#
#   bash data-prep/conll2003.sh [--conll-dir DIR] [--out DIR] [--pretrained DIR] [--parser auto|stanza|spacy]
#                               [--workers N] [--max-train N] [--max-eval N] [--random-trees SEED] [--wait]
#
# --conll-dir (or $CONLL2003_DIR) holds train.txt, valid.txt and test.txt (the shared task's distribution,
# which needs the Reuters agreement: there is no public download). The parser parses the corpus tokens as
# they are; each token's WordPieces (BERT's own split of it) form one word of the tree.
# --random-trees SEED also writes SG-Net's and SLA's random-tree control beside the heads
# (input0/{split}.randheads: a random tree over the same words of every sentence; train with --heads-suffix randheads).
# Re-running skips finished stages (data-prep/common.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/common.sh"

DIR=${CONLL2003_DIR:-}
OUT=work/conll2003
PRETRAINED=work/minilm
PARSER=auto
WORKERS=2
MAX_TRAIN=0
MAX_EVAL=0
RANDOM_TREES=
WAIT=
while [ $# -gt 0 ]; do
  case $1 in
    --conll-dir) need_value "$@"; DIR=$2; shift 2 ;;
    --out) need_value "$@"; OUT=$2; shift 2 ;;
    --pretrained) need_value "$@"; PRETRAINED=$2; shift 2 ;;
    --parser) need_value "$@"; PARSER=$2; shift 2 ;;
    --workers) need_value "$@"; WORKERS=$2; shift 2 ;;
    --max-train) need_value "$@"; MAX_TRAIN=$2; shift 2 ;;
    --max-eval) need_value "$@"; MAX_EVAL=$2; shift 2 ;;
    --random-trees) need_value "$@"; RANDOM_TREES=$2; shift 2 ;;
    --wait) WAIT=wait; shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ -n "$DIR" ] || die "give --conll-dir (or CONLL2003_DIR) with train.txt, valid.txt, test.txt"
need_parser "$PARSER"
need_int --workers "$WORKERS" 1
need_int --max-train "$MAX_TRAIN"
need_int --max-eval "$MAX_EVAL"
[ -z "$RANDOM_TREES" ] || need_int --random-trees "$RANDOM_TREES"
quick_slice MAX_TRAIN 160 MAX_EVAL 40
lock_out "$WAIT"
BIN=$(find_venv_bin)
export PATH="$BIN:$PATH"
SPLITS=(train valid test)
mkdir -p "$OUT"/{raw,parse,wp}
ensure_pretrained

extract() {
  local split limit f
  for split in "${SPLITS[@]}"; do
    [ -f "$DIR/$split.txt" ] || die "$DIR/$split.txt: not found"
    fairseq-syntax-classification conll "$DIR/$split.txt" --out-prefix "$OUT/raw/$split" || die "reading $split"
    limit=$MAX_EVAL; [ "$split" = train ] && limit=$MAX_TRAIN
    if [ "$limit" -gt 0 ]; then
      for f in "$OUT/raw/$split.words" "$OUT/raw/$split.label"; do
        atomic "$f.cut" head -n "$limit" "$f"; mv -f "$f.cut" "$f"
      done
    fi
  done
}

parse() {
  local split
  for split in "${SPLITS[@]}"; do
    fairseq-syntax-parse "$OUT/raw/$split.words" -o "$OUT/parse/$split.conllu" --parser "$PARSER" \
      --workers "$WORKERS" || die "parsing $split failed"
  done
}

wordpiece() {
  local split
  for split in "${SPLITS[@]}"; do
    fairseq-syntax-classification wordpiece --vocab "$PRETRAINED/vocab.txt" --words "$OUT/raw/$split.words" \
      --conllu "$OUT/parse/$split.conllu" -o "$OUT/wp/$split.input0" || die "wordpiece $split failed"
  done
}

binarize() {
  fresh_dir "$OUT/bin.tmp"
  binarize_pieces input0
  binarize_labels
  # the parser and the word split, and the WordPiece vocabulary, for tagging raw text (fairseq_syntax/tagger_hub.py)
  fairseq-syntax-provenance --destdir "$OUT/bin.tmp" --parses "$OUT"/parse/{train,valid,test}.conllu -s input0 \
    --subword-style wordpiece --tokenizer bert_basic || die "recording the preprocessing failed"
  cp "$PRETRAINED/vocab.txt" "$OUT/bin.tmp/vocab.txt"
  install_dir "$OUT/bin.tmp" "$OUT/bin"
}

stage extract --key "max_train=$MAX_TRAIN max_eval=$MAX_EVAL" --input "$DIR/train.txt" --input "$DIR/valid.txt" \
  --input "$DIR/test.txt" -- extract
stage parse --key "parser=$PARSER" --output parse -- parse
stage wordpiece --input "$PRETRAINED/vocab.txt" -- wordpiece
stage binarize --input "$PRETRAINED/dict.txt" -- binarize
random_trees() {
  local split heads=() prefixes=()
  for split in "${SPLITS[@]}"; do
    heads+=("$OUT/wp/$split.input0.heads")
    prefixes+=("$OUT/bin/input0/$split")
  done
  fairseq-syntax-binarize-heads --heads "${heads[@]}" --text-prefixes "${prefixes[@]}" --suffix randheads \
    --random-trees "$RANDOM_TREES" || die "writing the random trees failed"
}
[ -z "$RANDOM_TREES" ] || stage random-trees --key "seed=$RANDOM_TREES" -- random_trees
tags=$(cut -d' ' -f1 "$OUT/bin/label/dict.txt" | tr '\n' ' ')
log "ready: $OUT/bin ($(wc -l < "$OUT/raw/train.words") train sentences; tags: $tags)"
