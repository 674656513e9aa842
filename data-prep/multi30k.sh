#!/usr/bin/env bash
# Multi30k (task 1) EN->DE, from the upstream files to binarized text plus source dependency heads.
#
#   bash data-prep/multi30k.sh [--local-dir DIR] [--out DIR] [--parser auto|stanza|spacy]
#                              [--bpe-merges N] [--workers N] [--max-train N] [--max-eval N]
#
# Without --local-dir (or $MULTI30K_DIR) the raw files are downloaded from github.com/multi30k/dataset.
# Stages: raw -> Moses normalize-punctuation, remove-non-printing-char, tokenize -a (sacremoses) -> parse English (CoNLL-U) -> joint BPE (subword-nmt)
# -> align heads to subwords -> fairseq-preprocess (joined dictionary) -> binarize heads.
# Running it again skips finished stages; see data-prep/common.sh.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/common.sh"

LOCAL_DIR=${MULTI30K_DIR:-}
OUT=work/multi30k
PARSER=auto
MERGES=10000
WORKERS=2
MAX_TRAIN=0
MAX_EVAL=0
URL=https://raw.githubusercontent.com/multi30k/dataset/a3d2e0d/data/task1/raw
while [ $# -gt 0 ]; do
  case $1 in
    --local-dir) LOCAL_DIR=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --parser) PARSER=$2; shift 2 ;;
    --bpe-merges) MERGES=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --max-train) MAX_TRAIN=$2; shift 2 ;;
    --max-eval) MAX_EVAL=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
BIN=$(find_venv_bin)
export PATH="$BIN:$PATH"
SRC=en; TGT=de
SPLITS=(train valid test)
TEXT_DIR=tok
mkdir -p "$OUT"/{raw,tok,parse,bpe}
declare -A UPSTREAM=([train]=train [valid]=val [test]=test_2016_flickr)

fetch() {
  local split lang name src limit
  for split in train valid test; do
    name=${UPSTREAM[$split]}
    limit=$MAX_EVAL; [ "$split" = train ] && limit=$MAX_TRAIN
    for lang in $SRC $TGT; do
      if [ -n "$LOCAL_DIR" ]; then
        src="$LOCAL_DIR/$name.$lang.gz"
        [ -f "$src" ] || die "$src: not found in --local-dir $LOCAL_DIR"
        cat "$src" > "$OUT/raw/$name.$lang.gz.tmp"
      else
        log "download $URL/$name.$lang.gz"
        curl -fsSL --retry 3 -o "$OUT/raw/$name.$lang.gz.tmp" "$URL/$name.$lang.gz"
      fi
      if [ "$limit" -gt 0 ]; then
        atomic "$OUT/raw/$split.$lang" bash -c "gzip -dc '$OUT/raw/$name.$lang.gz.tmp' | head -n $limit"
      else
        atomic "$OUT/raw/$split.$lang" gzip -dc "$OUT/raw/$name.$lang.gz.tmp"
      fi
      rm -f "$OUT/raw/$name.$lang.gz.tmp"
    done
    same_lines "$OUT/raw/$split.$SRC" "$OUT/raw/$split.$TGT"
  done
}

tokenize() {
  local split lang
  for split in train valid test; do
    for lang in $SRC $TGT; do
      fairseq-syntax-text tokenize "$OUT/raw/$split.$lang" -o "$OUT/tok/$split.$lang" -l $lang --workers "$WORKERS"
    done
    same_lines "$OUT/tok/$split.$SRC" "$OUT/tok/$split.$TGT"
    no_empty "$OUT/tok/$split.$SRC"
  done
}

stage fetch fetch
stage tokenize tokenize
stage parse parse_stage "$PARSER"
stage bpe bpe_stage "$MERGES"
stage align align_stage
stage binarize binarize_stage
log "ready: $OUT/bin (train $(wc -l < "$OUT/bpe/train.$SRC") pairs; heads in *.$SRC.heads.{bin,idx})"
