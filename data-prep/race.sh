#!/usr/bin/env bash
# RACE (multiple-choice reading comprehension) to binarized WordPieces plus aligned dependency heads, in the
# layout of fairseq's RoBERTa RACE recipe (input0/ = the article, input1-4/ = question with option, label/),
# for --task syntax_sentence_ranking.
#
#   bash data-prep/race.sh [--race PATH] [--out DIR] [--pretrained DIR] [--levels middle|high|both]
#                          [--parser auto|stanza|spacy] [--workers N] [--max-train N] [--max-eval N]
#                          [--random-trees SEED] [--wait]
#
# --race (or $RACE_DIR) is RACE.tar.gz or the extracted RACE/ folder; without it the official archive is
# downloaded from www.cs.cmu.edu/~glai1/data/race/ (non-commercial research use only; cite Lai et al. 2017).
# Splits: train; valid (RACE dev) and valid-middle, valid-high apart; test (RACE-M) and test1 (RACE-H) where
# the archive has its test split. One example per question. --max-train N keeps N training questions (whole
# articles in a fixed order that mixes both levels), --max-eval N the first N of each dev/test split.
# Stages: extract (BERT basic words, cased; articles cut into sentences) -> parse (each sentence its own tree,
# so no head crosses a sentence; each question-with-option too) -> binarize (WordPieces with the model's
# vocab.txt, heads aligned, fairseq's indexed datasets). Re-running skips finished stages (data-prep/common.sh).
# --random-trees SEED also writes SG-Net's random-tree control beside the heads (input*/{split}.randheads: a
# random tree over the same words of every sentence; train with --heads-suffix randheads).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/common.sh"

RACE=${RACE_DIR:-}
OUT=work/race
PRETRAINED=work/minilm
LEVELS=both
PARSER=auto
WORKERS=2
MAX_TRAIN=0
MAX_EVAL=0
RANDOM_TREES=
URL=http://www.cs.cmu.edu/~glai1/data/race/RACE.tar.gz
WAIT=
while [ $# -gt 0 ]; do
  case $1 in
    --race) need_value "$@"; RACE=$2; shift 2 ;;
    --out) need_value "$@"; OUT=$2; shift 2 ;;
    --pretrained) need_value "$@"; PRETRAINED=$2; shift 2 ;;
    --levels) need_value "$@"; LEVELS=$2; shift 2 ;;
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
case $LEVELS in middle|high|both) ;; *) die "--levels must be middle, high or both" ;; esac
need_parser "$PARSER"
need_int --workers "$WORKERS" 1
need_int --max-train "$MAX_TRAIN"
need_int --max-eval "$MAX_EVAL"
quick_slice MAX_TRAIN 24 MAX_EVAL 16
[ -z "$RANDOM_TREES" ] || need_int --random-trees "$RANDOM_TREES"
[ -z "$RACE" ] || [ -e "$RACE" ] || die "--race $RACE: no such file or folder"
BIN=$(find_venv_bin)
export PATH="$BIN:$PATH"
lock_out "$WAIT"
mkdir -p "$OUT"/{raw,parse}
ensure_pretrained

if [ -z "$RACE" ]; then
  download() {
    mkdir -p "$OUT/download"
    log "download $URL"
    curl -fSL --retry 3 -o "$OUT/download/RACE.tar.gz.tmp" "$URL" || die "download failed: $URL (give --race FILE)"
    mv "$OUT/download/RACE.tar.gz.tmp" "$OUT/download/RACE.tar.gz"
  }
  stage download --key "url=$URL" -- download
  RACE=$OUT/download/RACE.tar.gz
fi

extract() {
  fairseq-syntax-race extract --source "$RACE" --out "$OUT/raw" --levels "$LEVELS" --max-train "$MAX_TRAIN" \
    --max-eval "$MAX_EVAL" || die "reading $RACE failed"
}

parse() {
  local split part
  while read -r split; do
    for part in article options; do
      fairseq-syntax-parse "$OUT/raw/$split.$part.txt" -o "$OUT/parse/$split.$part.conllu" --parser "$PARSER" \
        --workers "$WORKERS" || die "parsing $split.$part failed"
    done
  done < "$OUT/raw/splits.txt"
}

binarize() {
  fresh_dir "$OUT/bin.tmp"
  fairseq-syntax-race binarize --raw "$OUT/raw" --parse "$OUT/parse" --pretrained "$PRETRAINED" \
    --out "$OUT/bin.tmp" || die "binarizing failed"
  install_dir "$OUT/bin.tmp" "$OUT/bin"
}

stage extract --key "levels=$LEVELS max_train=$MAX_TRAIN max_eval=$MAX_EVAL" --input "$RACE" -- extract
stage parse --key "parser=$PARSER" --output parse -- parse
stage binarize --input "$PRETRAINED/vocab.txt" --input "$PRETRAINED/dict.txt" -- binarize
random_trees() {
  fairseq-syntax-race binarize --raw "$OUT/raw" --parse "$OUT/parse" --pretrained "$PRETRAINED" --out "$OUT/bin" \
    --random-trees "$RANDOM_TREES" || die "writing the random trees failed"
}
[ -z "$RANDOM_TREES" ] || stage random-trees --key "seed=$RANDOM_TREES" -- random_trees
# ready: only what exists is named, and every split extract promised (with both levels and whole splits, RACE-M
# and RACE-H of train and valid apart) must be there, with its heads (and its random trees when asked for)
promised=$(cat "$OUT/raw/splits.txt")
[ "$LEVELS" != both ] || [ "$MAX_TRAIN" != 0 ] || promised+=$'\ntrain-middle\ntrain-high'
[ "$LEVELS" != both ] || [ "$MAX_EVAL" != 0 ] || promised+=$'\nvalid-middle\nvalid-high'
while read -r split; do
  for f in "label/$split.label" "input0/$split.bin" "input0/$split.heads.bin" \
           ${RANDOM_TREES:+"input0/$split.randheads.bin"}; do
    [ -f "$OUT/bin/$f" ] || die "$OUT/bin/$f is missing: the $split split was not prepared; delete $OUT/.stamps and run again"
  done
done <<< "$promised"
log "ready: $OUT/bin ($(wc -l < "$OUT/raw/train.label") training questions;" \
  "splits: $(ls "$OUT/bin/label" | sed -n 's/\.label$//p' | tr '\n' ' '))"
