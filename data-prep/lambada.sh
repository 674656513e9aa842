#!/usr/bin/env bash
# LAMBADA as reading comprehension (Chu et al. 2017) with parses, coreference chains and the five
# attention-supervision signals (DepParse CorefAll CorefPrev CorefNext Narrative), for --task lambada_reader.
#
#   bash data-prep/lambada.sh [--lambada-dir DIR] [--novels DIR] [--novel-passages N] [--train-sample N]
#                             [--coref neuralcoref|stanza|jsonl] [--chains-dir DIR] [--parser auto|stanza|spacy]
#                             [--workers N] [--coref-env DIR] [--coref-wheels DIR] [--max-eval N] [--out DIR] [--wait]
#
# Splits: train = the RC-style training passages (--lambada-dir/chu_sample_train.txt, or the full
# lambada-train-valid set when downloaded) plus --novel-passages passages cut from raw novels (--novels,
# one paragraph per line, .txt/.txt.gz), both filtered as Chu et al. (target in context, no stop-word
# target); valid = chu_sample_valid.txt, same filter (checkpoint selection); test = the LAMBADA dev set
# (lambada_development_plain_text.txt, all 4,869 passages, unfiltered: the number we report).
# Without --lambada-dir the data are downloaded (LAMBADA from Zenodo, Chu et al.'s RC training set from TTIC).
# --coref: neuralcoref (default; a side environment in --coref-env, installed on first use: it needs Python 3.7
# and either a package index or --coref-wheels DIR, filled by `fairseq-syntax-lambada fetch-coref-wheels --out DIR`
# where there is an index; once installed it runs offline; the script checks this before any work), stanza
# (needs its models, web), or jsonl (your chains: --chains-dir/{train,valid,test}.coref.jsonl, one record per
# passage, see fairseq_syntax/reader/chains.py).
# --max-eval N keeps the first N instances of valid and test (quick checks; 0: all).
# Every stage is cached: parses and chains of a finished split (or finished shard) are never recomputed.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/common.sh"

LAMBADA=""
NOVELS=""
NOVEL_PASSAGES=0
TRAIN_SAMPLE=0
COREF=neuralcoref
CHAINS_DIR=""
PARSER=auto
WORKERS=2
COREF_ENV=work/coref-env
COREF_WHEELS=${FAIRSEQ_SYNTAX_COREF_WHEELS:-}
MAX_EVAL=0
OUT=work/lambada
WAIT=
while [ $# -gt 0 ]; do
  case $1 in
    --lambada-dir) need_value "$@"; LAMBADA=$2; shift 2 ;;
    --novels) need_value "$@"; NOVELS=$2; shift 2 ;;
    --novel-passages) need_value "$@"; NOVEL_PASSAGES=$2; shift 2 ;;
    --train-sample) need_value "$@"; TRAIN_SAMPLE=$2; shift 2 ;;
    --coref) need_value "$@"; COREF=$2; shift 2 ;;
    --chains-dir) need_value "$@"; CHAINS_DIR=$2; shift 2 ;;
    --parser) need_value "$@"; PARSER=$2; shift 2 ;;
    --workers) need_value "$@"; WORKERS=$2; shift 2 ;;
    --coref-env) need_value "$@"; COREF_ENV=$2; shift 2 ;;
    --coref-wheels) need_value "$@"; COREF_WHEELS=$2; shift 2 ;;
    --max-eval) need_value "$@"; MAX_EVAL=$2; shift 2 ;;
    --out) need_value "$@"; OUT=$2; shift 2 ;;
    --wait) WAIT=wait; shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
case $COREF in neuralcoref|stanza|jsonl) ;; *) die "--coref must be neuralcoref, stanza or jsonl" ;; esac
need_parser "$PARSER"
need_int --novel-passages "$NOVEL_PASSAGES"
need_int --train-sample "$TRAIN_SAMPLE"
need_int --workers "$WORKERS" 1
need_int --max-eval "$MAX_EVAL"
quick_slice TRAIN_SAMPLE 150 MAX_EVAL 40
[ -z "$NOVELS" ] || [ -d "$NOVELS" ] || die "--novels $NOVELS: no such folder"
lock_out "$WAIT"
[ "$COREF" != jsonl ] || [ -n "$CHAINS_DIR" ] || die "--coref jsonl needs --chains-dir"
BIN=$(find_venv_bin)
export PATH="$BIN:$PATH" OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
if [ "$COREF" = neuralcoref ]; then  # Python 3.7 and an index or wheels, said now rather than an hour in
  fairseq-syntax-lambada check-coref --env "$COREF_ENV" ${COREF_WHEELS:+--wheels "$COREF_WHEELS"} \
    || die "neuralcoref cannot be installed here (above); --coref jsonl or --coref stanza need no side environment"
fi
mkdir -p "$OUT/raw"
RAW=$OUT/raw

download() {
  local dir=$OUT/download
  mkdir -p "$dir"
  log "download LAMBADA (Zenodo record 2630551) and Chu et al.'s RC training set"
  curl -fsSL --retry 3 -o "$dir/lambada-dataset.tar.gz.tmp" https://zenodo.org/record/2630551/files/lambada-dataset.tar.gz
  mv "$dir/lambada-dataset.tar.gz.tmp" "$dir/lambada-dataset.tar.gz"
  curl -fsSL --retry 3 -o "$dir/lambada-train-valid.tar.gz.tmp" http://ttic.uchicago.edu/~kgimpel/data/lambada-train-valid.tar.gz
  mv "$dir/lambada-train-valid.tar.gz.tmp" "$dir/lambada-train-valid.tar.gz"
  mkdir -p "$dir/lambada"
  tar -xzf "$dir/lambada-dataset.tar.gz" -C "$dir/lambada"
  tar -xzf "$dir/lambada-train-valid.tar.gz" -C "$dir/lambada"
  local d; d=$dir/lambada
  cp "$(find "$d" -name 'lambada_development_plain_text.txt' | head -1)" "$d/lambada_development_plain_text.txt"
  cp "$(find "$d" -path '*train*' -name 'train.txt' | head -1)" "$d/chu_sample_train.txt"
  cp "$(find "$d" -path '*valid*' -name 'valid.txt' | head -1)" "$d/chu_sample_valid.txt"
  [ -f "$d/stopwords.txt" ] || die "no stopwords.txt in the downloaded data; pass --lambada-dir with one"
}
if [ -z "$LAMBADA" ]; then
  stage download -- download
  LAMBADA=$OUT/download/lambada
fi
for f in chu_sample_train.txt chu_sample_valid.txt lambada_development_plain_text.txt stopwords.txt; do
  [ -f "$LAMBADA/$f" ] || die "$LAMBADA/$f: missing"
  [ -s "$LAMBADA/$f" ] || die "$LAMBADA/$f: empty"
done
STOP=$LAMBADA/stopwords.txt

novels() {
  fairseq-syntax-lambada cut-novels --novels "$NOVELS" --out "$RAW/novels.passages.txt" --stopwords "$STOP" \
    --max "$NOVEL_PASSAGES"
}
train_passages() {
  if [ "$TRAIN_SAMPLE" -gt 0 ]; then head -n "$TRAIN_SAMPLE" "$LAMBADA/chu_sample_train.txt"
  else cat "$LAMBADA/chu_sample_train.txt"; fi
  if [ -n "$NOVELS" ] && [ "$NOVEL_PASSAGES" -gt 0 ]; then cat "$RAW/novels.passages.txt"; fi
}
# instances SPLIT ARGS...: (re)cut a split's instances. Its parses and chains are then stale: the parser and the
# coreference step see that from their records (the digest of what they were made from) and make them again
instances() {
  local split=$1; shift
  fairseq-syntax-lambada instances --split "$split" --out "$RAW" "$@"
}
train_instances() {
  atomic "$RAW/train.passages.txt" train_passages
  instances train --input "$RAW/train.passages.txt" --train-filter --stopwords "$STOP"
}
if [ -n "$NOVELS" ] && [ "$NOVEL_PASSAGES" -gt 0 ]; then
  stage novels --key "novel_passages=$NOVEL_PASSAGES" --input "$NOVELS" --input "$STOP" -- novels
fi
stage instances-train --key "train_sample=$TRAIN_SAMPLE novels=${NOVELS:+$NOVEL_PASSAGES}" \
  --input "$LAMBADA/chu_sample_train.txt" --input "$STOP" -- train_instances
stage instances-valid --key "max_eval=$MAX_EVAL" --input "$LAMBADA/chu_sample_valid.txt" --input "$STOP" -- \
  instances valid --input "$LAMBADA/chu_sample_valid.txt" --train-filter --stopwords "$STOP" --max "$MAX_EVAL"
stage instances-test --key "max_eval=$MAX_EVAL" --input "$LAMBADA/lambada_development_plain_text.txt" -- \
  instances test --input "$LAMBADA/lambada_development_plain_text.txt" --max "$MAX_EVAL"

for split in valid test train; do
  # parse and coref skip a finished split themselves; their shards make a stopped run resume
  fairseq-syntax-parse "$RAW/$split.sents.txt" -o "$RAW/$split.conllu" --parser "$PARSER" --workers "$WORKERS" \
    || die "parsing $split failed"
  chains=()
  [ "$COREF" = jsonl ] && chains=(--chains "$CHAINS_DIR/$split.coref.jsonl")
  fairseq-syntax-lambada coref --dir "$RAW" --split "$split" --backend "$COREF" --env "$COREF_ENV" \
    --workers "$WORKERS" ${COREF_WHEELS:+--wheels "$COREF_WHEELS"} "${chains[@]}" || die "coreference for $split failed"
done
mkdir -p "$OUT/bin" && : > "$OUT/bin/$OWNED"  # data-prep's own folder (common.sh: owned_or_absent)
fairseq-syntax-lambada binarize --dir "$RAW" --out "$OUT/bin" --splits "train valid test"
log "done: $OUT/bin (train with --task lambada_reader, see README)"
