#!/usr/bin/env bash
# WMT14 EN->DE (the SG-Net paper's setting) from download to syntax-aligned binarized data.
#
#   bash data-prep/wmt14.sh [--mirror DIR] [--out DIR] [--parser stanza|spacy|conllu] [--conllu-dir DIR]
#        [--nc v9|v12] [--bpe-merges N] [--workers N] [--shard-size N] [--shard i/N] [--until STAGE]
#        [--train-prefixes "P1 P2 ..."] [--dev-prefix P] [--max-lines N] [--wait]
#
# Follows fairseq's examples/translation/prepare-wmt14en2de.sh: Europarl v7 + Common Crawl + News
# Commentary (v9 by default, as WMT14; v12 as an option) for training, newstest2013 as the dev set (as the
# paper) and newstest2014 (full) as the test set; normalize punctuation, remove non-printing characters,
# tokenize (sacremoses, -a), clean (1-250 tokens, length ratio 1.5); parse the English side; learn joint
# BPE (40k merges); align heads to subwords; binarize text and heads with a joined dictionary.
#
# --mirror DIR      a local directory holding the upstream .tgz files, or their extracted files (flat or
#                   in the archives' layout); anything missing there is downloaded
# --parser          stanza (default; GPU where there is one), spacy (offline) or conllu (parses you bring:
#                   --conllu-dir with {train,valid,test}.en.conllu, one sentence per cleaned tokenized line)
# --shard i/N       parse only shard i of N of every split (a cluster job array) and stop; run
#                   `--until clean` once before, and once more without --shard afterwards to merge and finish
# --train-prefixes  use these parallel files (PREFIX.en/.de, optionally .gz) instead of the WMT14 corpora
# --dev-prefix      use these files instead of newstest2013
# --max-lines N     keep the first N lines of each training corpus (for tests)
# Every stage writes under temporary names and is skipped when complete, so a stopped run resumes.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/common.sh"

MIRROR=${WMT14_MIRROR:-}
OUT=work/wmt14_en_de
PARSER=stanza
CONLLU_DIR=
NC=v9
MERGES=40000
WORKERS=$(nproc)
SHARD_SIZE=2000
SHARD=
UNTIL=
TRAIN_PREFIXES=
DEV_PREFIX=
MAX_LINES=0
WAIT=
while [ $# -gt 0 ]; do
  case $1 in
    --mirror) need_value "$@"; MIRROR=$2; shift 2 ;;
    --out) need_value "$@"; OUT=$2; shift 2 ;;
    --parser) need_value "$@"; PARSER=$2; shift 2 ;;
    --conllu-dir) need_value "$@"; CONLLU_DIR=$2; shift 2 ;;
    --nc) need_value "$@"; NC=$2; shift 2 ;;
    --bpe-merges) need_value "$@"; MERGES=$2; shift 2 ;;
    --workers) need_value "$@"; WORKERS=$2; shift 2 ;;
    --shard-size) need_value "$@"; SHARD_SIZE=$2; shift 2 ;;
    --shard) need_value "$@"; SHARD=$2; shift 2 ;;
    --until) need_value "$@"; UNTIL=$2; shift 2 ;;
    --train-prefixes) need_value "$@"; TRAIN_PREFIXES=$2; shift 2 ;;
    --dev-prefix) need_value "$@"; DEV_PREFIX=$2; shift 2 ;;
    --max-lines) need_value "$@"; MAX_LINES=$2; shift 2 ;;
    --wait) WAIT=wait; shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
case $PARSER in stanza|spacy|conllu) ;; *) die "--parser must be stanza, spacy or conllu" ;; esac
[ "$PARSER" != conllu ] || [ -n "$CONLLU_DIR" ] || die "--parser conllu needs --conllu-dir"
case $NC in
  v9) NC_TGZ=training-parallel-nc-v9.tgz; NC_URL=http://statmt.org/wmt14/training-parallel-nc-v9.tgz
      NC_CORPUS=training/news-commentary-v9.de-en ;;
  v12) NC_TGZ=training-parallel-nc-v12.tgz; NC_URL=http://data.statmt.org/wmt17/translation-task/training-parallel-nc-v12.tgz
      NC_CORPUS=training/news-commentary-v12.de-en ;;
  *) die "--nc must be v9 or v12" ;;
esac
need_int --bpe-merges "$MERGES" 1
need_int --workers "$WORKERS" 1
need_int --shard-size "$SHARD_SIZE" 1
need_int --max-lines "$MAX_LINES"
quick_slice MAX_LINES 300
if [ -n "$SHARD" ]; then
  [[ $SHARD =~ ^[0-9]+/[0-9]+$ ]] && [ "${SHARD%/*}" -lt "${SHARD#*/}" ] || die "--shard takes i/N with 0 <= i < N, got '$SHARD'"
fi
case $UNTIL in ""|fetch|tokenize|clean|parse|bpe|align) ;; *) die "--until must be fetch, tokenize, clean, parse, bpe or align" ;; esac
[ -z "$MIRROR" ] || [ -d "$MIRROR" ] || die "--mirror $MIRROR: no such folder"
BIN=$(find_venv_bin)
export PATH="$BIN:$PATH"
SRC=en; TGT=de
SPLITS=(train valid test)
# the tasks of a job array (--shard) wait for each other through the stages before parsing, then parse apart
if [ -n "$SHARD" ]; then lock_out wait; else lock_out "$WAIT"; fi
TEXT_DIR=clean
mkdir -p "$OUT"/{orig,raw,tok,clean,parse,bpe}

# locate REL ARCHIVE URL: the path of an upstream file, from the mirror or the archive (mirrored or downloaded)
locate() {
  local rel=$1 archive=$2 url=$3 c
  for c in "$OUT/orig/$rel" "$MIRROR/$rel" "$MIRROR/$(basename "$rel")"; do
    [ -n "$MIRROR" ] || [ "$c" = "$OUT/orig/$rel" ] || continue
    if [ -f "$c" ]; then echo "$c"; return; fi
    if [ -f "$c.gz" ]; then echo "$c.gz"; return; fi
  done
  if [ ! -f "$OUT/orig/$archive" ]; then
    if [ -n "$MIRROR" ] && [ -f "$MIRROR/$archive" ]; then
      log "extract $MIRROR/$archive"
      tar -xzf "$MIRROR/$archive" -C "$OUT/orig"
    else
      log "download $url"
      curl -fSL --retry 3 -o "$OUT/orig/$archive.tmp" "$url" || die "download failed: $url (use --mirror DIR offline)"
      mv "$OUT/orig/$archive.tmp" "$OUT/orig/$archive"
      tar -xzf "$OUT/orig/$archive" -C "$OUT/orig"
    fi
  fi
  [ -f "$OUT/orig/$rel" ] || die "$rel not found in $archive"
  echo "$OUT/orig/$rel"
}

text_of() {  # text_of FILE: print a plain or gzipped text file
  case $1 in *.gz) gzip -dc "$1" ;; *) cat "$1" ;; esac
}

fetch() {
  local prefixes=() p lang f
  if [ -n "$TRAIN_PREFIXES" ]; then
    read -r -a prefixes <<< "$TRAIN_PREFIXES"
  else
    prefixes=("$(dirname "$(locate training/europarl-v7.de-en.en training-parallel-europarl-v7.tgz http://statmt.org/wmt13/training-parallel-europarl-v7.tgz)")/europarl-v7.de-en"
              "$(dirname "$(locate commoncrawl.de-en.en training-parallel-commoncrawl.tgz http://statmt.org/wmt13/training-parallel-commoncrawl.tgz)")/commoncrawl.de-en"
              "$(dirname "$(locate $NC_CORPUS.en $NC_TGZ $NC_URL)")/$(basename $NC_CORPUS)")
  fi
  for lang in $SRC $TGT; do
    : > "$OUT/raw/train.$lang.tmp"
    for p in "${prefixes[@]}"; do
      f=$p.$lang; [ -f "$f" ] || f=$p.$lang.gz
      [ -f "$f" ] || die "training corpus $p.$lang(.gz) not found"
      # (head closes the pipe early: the reader's SIGPIPE is expected, not an error)
      if [ "$MAX_LINES" -gt 0 ]; then { text_of "$f" || [ $? -eq 141 ]; } | head -n "$MAX_LINES"; else text_of "$f"; fi \
        >> "$OUT/raw/train.$lang.tmp"
    done
    mv "$OUT/raw/train.$lang.tmp" "$OUT/raw/train.$lang"
  done
  same_lines "$OUT/raw/train.$SRC" "$OUT/raw/train.$TGT"
  local dev=$DEV_PREFIX
  [ -n "$dev" ] || dev="$(dirname "$(locate dev/newstest2013.en dev.tgz http://data.statmt.org/wmt17/translation-task/dev.tgz)")/newstest2013"
  for lang in $SRC $TGT; do
    f=$dev.$lang; [ -f "$f" ] || f=$dev.$lang.gz
    [ -f "$f" ] || die "dev set $dev.$lang(.gz) not found"
    atomic "$OUT/raw/valid.$lang" text_of "$f"
  done
  same_lines "$OUT/raw/valid.$SRC" "$OUT/raw/valid.$TGT"
  local test_tgz=test-full.tgz test_url=http://statmt.org/wmt14/test-full.tgz
  fairseq-syntax-text sgm "$(locate test-full/newstest2014-deen-src.en.sgm $test_tgz $test_url)" -o "$OUT/raw/test.$SRC"
  fairseq-syntax-text sgm "$(locate test-full/newstest2014-deen-ref.de.sgm $test_tgz $test_url)" -o "$OUT/raw/test.$TGT"
  same_lines "$OUT/raw/test.$SRC" "$OUT/raw/test.$TGT"
}

tokenize() {
  local split lang
  for split in "${SPLITS[@]}"; do
    for lang in $SRC $TGT; do
      fairseq-syntax-text tokenize "$OUT/raw/$split.$lang" -o "$OUT/tok/$split.$lang" -l $lang --workers "$WORKERS"
    done
    same_lines "$OUT/tok/$split.$SRC" "$OUT/tok/$split.$TGT"
  done
}

clean() {
  local split
  for split in train valid; do
    fairseq-syntax-text clean "$OUT/tok/$split.$SRC" "$OUT/tok/$split.$TGT" \
      "$OUT/clean/$split.$SRC" "$OUT/clean/$split.$TGT" --min 1 --max 250 --ratio 1.5
  done
  cp "$OUT/tok/test.$SRC" "$OUT/clean/test.$SRC.tmp" && mv "$OUT/clean/test.$SRC.tmp" "$OUT/clean/test.$SRC"
  cp "$OUT/tok/test.$TGT" "$OUT/clean/test.$TGT.tmp" && mv "$OUT/clean/test.$TGT.tmp" "$OUT/clean/test.$TGT"
  no_empty "$OUT/clean/test.$SRC"
}

until_here() { [ "$UNTIL" = "$1" ] && { log "stopping after $1 (--until)"; exit 0; }; return 0; }

# the corpora as given: prefix files (plain or .gz), or the mirror folder, or the upstream addresses
corpus_inputs() {
  local p lang prefixes=()
  read -r -a prefixes <<< "$TRAIN_PREFIXES"
  for p in "${prefixes[@]}" ${DEV_PREFIX:+"$DEV_PREFIX"}; do
    for lang in $SRC $TGT; do if [ -f "$p.$lang" ]; then echo "$p.$lang"; else echo "$p.$lang.gz"; fi; done
  done
  [ -z "$MIRROR" ] || echo "$MIRROR"
}
mapfile -t INPUTS < <(corpus_inputs)
INPUT_ARGS=()
for f in "${INPUTS[@]}"; do INPUT_ARGS+=(--input "$f"); done
stage fetch --key "nc=$NC max_lines=$MAX_LINES train_prefixes=$TRAIN_PREFIXES dev_prefix=$DEV_PREFIX mirror=$MIRROR" \
  "${INPUT_ARGS[@]}" -- fetch; until_here fetch
stage tokenize -- tokenize; until_here tokenize
stage clean --key "min=1 max=250 ratio=1.5" -- clean; until_here clean
if [ -n "$SHARD" ]; then
  [ "$PARSER" != conllu ] || die "--shard is for parsing with stanza or spacy"
  unlock_out
  parse_stage "$PARSER" --shard-size "$SHARD_SIZE" --shard "$SHARD"
  log "shard $SHARD parsed; run once more without --shard to merge and finish"
  exit 0
fi
stage parse --key "parser=$PARSER shard_size=$SHARD_SIZE" --input "$CONLLU_DIR" --output parse -- \
  parse_stage "$PARSER" --shard-size "$SHARD_SIZE"; until_here parse
stage bpe --key "bpe_merges=$MERGES" -- bpe_stage "$MERGES"; until_here bpe
stage align -- align_stage; until_here align
stage binarize -- binarize_stage
log "ready: $OUT/bin ($(wc -l < "$OUT/bpe/train.$SRC") training pairs; heads in *.$SRC.heads.{bin,idx})"
