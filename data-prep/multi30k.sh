#!/usr/bin/env bash
# Multi30k (task 1) EN->DE, from the upstream files to binarized text plus source dependency heads.
#
#   bash data-prep/multi30k.sh [--local-dir DIR] [--out DIR] [--parser auto|stanza|spacy]
#                              [--bpe-merges N] [--workers N] [--max-train N] [--max-eval N] [--wait]
#
# Without --local-dir (or $MULTI30K_DIR) the raw files are downloaded from github.com/multi30k/dataset.
# Every upstream test set that can be had (from --local-dir, else downloaded) becomes a binarized split against
# the training BPE and dictionary: test_2016_flickr -> test, then test1, test2, ... in the order of TEST_SETS
# below; $OUT/bin/testsets.tsv names them (split, upstream name, sentences). test_2016_flickr is required.
# Stages: raw -> Moses normalize-punctuation, remove-non-printing-char, tokenize -a (sacremoses)
#   -> parse English (CoNLL-U) -> joint BPE (subword-nmt)
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
WAIT=
while [ $# -gt 0 ]; do
  case $1 in
    --local-dir) need_value "$@"; LOCAL_DIR=$2; shift 2 ;;
    --out) need_value "$@"; OUT=$2; shift 2 ;;
    --parser) need_value "$@"; PARSER=$2; shift 2 ;;
    --bpe-merges) need_value "$@"; MERGES=$2; shift 2 ;;
    --workers) need_value "$@"; WORKERS=$2; shift 2 ;;
    --max-train) need_value "$@"; MAX_TRAIN=$2; shift 2 ;;
    --max-eval) need_value "$@"; MAX_EVAL=$2; shift 2 ;;
    --wait) WAIT=wait; shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
need_parser "$PARSER"
need_int --bpe-merges "$MERGES" 1
need_int --workers "$WORKERS" 1
need_int --max-train "$MAX_TRAIN"
need_int --max-eval "$MAX_EVAL"
quick_slice MAX_TRAIN 300 MAX_EVAL 30
[ -z "$LOCAL_DIR" ] || [ -d "$LOCAL_DIR" ] || die "--local-dir $LOCAL_DIR: no such folder"
BIN=$(find_venv_bin)
export PATH="$BIN:$PATH"
SRC=en; TGT=de
lock_out "$WAIT"
TEXT_DIR=tok
mkdir -p "$OUT"/{raw,tok,parse,bpe}
TEST_SETS=(test_2016_flickr test_2017_flickr test_2018_flickr test_2017_mscoco)
INDEX=$OUT/raw/testsets.tsv

# get NAME LANG: $OUT/raw/NAME.LANG.gz.tmp from --local-dir or the web; fails (status 1) if it is not there
get() {
  local name=$1 lang=$2
  if [ -n "$LOCAL_DIR" ]; then
    [ -f "$LOCAL_DIR/$name.$lang.gz" ] || return 1
    gzip -t "$LOCAL_DIR/$name.$lang.gz" 2> /dev/null || die "$LOCAL_DIR/$name.$lang.gz: not a readable gzip file (empty or damaged)"
    cat "$LOCAL_DIR/$name.$lang.gz" > "$OUT/raw/$name.$lang.gz.tmp"
  else
    log "download $URL/$name.$lang.gz"
    curl -fsSL --retry 3 -o "$OUT/raw/$name.$lang.gz.tmp" "$URL/$name.$lang.gz" \
      || { rm -f "$OUT/raw/$name.$lang.gz.tmp"; return 1; }
  fi
}

# unpack NAME SPLIT LIMIT: both sides of NAME into $OUT/raw/SPLIT.{src,tgt}
unpack() {
  local name=$1 split=$2 limit=$3 lang
  for lang in $SRC $TGT; do
    atomic "$OUT/raw/$split.$lang" gz_head "$OUT/raw/$name.$lang.gz.tmp" "$limit"
    rm -f "$OUT/raw/$name.$lang.gz.tmp"
  done
  same_lines "$OUT/raw/$split.$SRC" "$OUT/raw/$split.$TGT"
}

fetch() {
  local name split k=0
  for name in train val; do
    get "$name" $SRC && get "$name" $TGT \
      || die "$name.{$SRC,$TGT}.gz: not found${LOCAL_DIR:+ in --local-dir $LOCAL_DIR}"
  done
  unpack train train "$MAX_TRAIN"
  unpack val valid "$MAX_EVAL"
  : > "$INDEX.tmp"
  for name in "${TEST_SETS[@]}"; do
    if get "$name" $SRC && get "$name" $TGT; then
      split=test; [ $k -gt 0 ] && split=test$k
      unpack "$name" "$split" "$MAX_EVAL"
      printf '%s\t%s\t%s\n' "$split" "$name" "$(wc -l < "$OUT/raw/$split.$SRC")" >> "$INDEX.tmp"
      k=$((k + 1))
    else
      rm -f "$OUT/raw/$name".*.gz.tmp
      [ $k -gt 0 ] \
        || die "$name.{$SRC,$TGT}.gz: not found${LOCAL_DIR:+ in --local-dir $LOCAL_DIR} (it is the main test set)"
      log "no $name${LOCAL_DIR:+ in $LOCAL_DIR}: skipped"
    fi
  done
  mv -f "$INDEX.tmp" "$INDEX"
}

tokenize() {
  local split lang
  for split in "${SPLITS[@]}"; do
    for lang in $SRC $TGT; do
      fairseq-syntax-text tokenize "$OUT/raw/$split.$lang" -o "$OUT/tok/$split.$lang" -l $lang --workers "$WORKERS"
    done
    same_lines "$OUT/tok/$split.$SRC" "$OUT/tok/$split.$TGT"
    no_empty "$OUT/tok/$split.$SRC"
  done
}

stage fetch --key "max_train=$MAX_TRAIN max_eval=$MAX_EVAL source=${LOCAL_DIR:+local}${LOCAL_DIR:-$URL}" \
  --input "$LOCAL_DIR" -- fetch
# shellcheck disable=SC2207
SPLITS=(train valid $(cut -f1 "$INDEX"))
stage tokenize -- tokenize
stage parse --key "parser=$PARSER" --output parse -- parse_stage "$PARSER"
stage bpe --key "bpe_merges=$MERGES" -- bpe_stage "$MERGES"
stage align -- align_stage
stage binarize -- binarize_stage
cp "$INDEX" "$OUT/bin/testsets.tsv.tmp" && mv "$OUT/bin/testsets.tsv.tmp" "$OUT/bin/testsets.tsv"
log "ready: $OUT/bin (train $(wc -l < "$OUT/bpe/train.$SRC") pairs; heads in *.$SRC.heads.{bin,idx})"
