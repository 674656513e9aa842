# Helpers shared by the data-prep scripts (sourced, not run).
# A stage runs once: its stamp under $OUT/.stamps marks it complete, and every file it
# writes goes through a temporary name, so a stopped run resumes at the stage it was in.

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# stage NAME COMMAND...: run COMMAND unless stage NAME is already complete
stage() {
  local name=$1; shift
  mkdir -p "$OUT/.stamps"
  if [ -e "$OUT/.stamps/$name" ]; then
    log "skip $name (done)"
    return 0
  fi
  log "start $name"
  local t0=$SECONDS
  "$@"
  touch "$OUT/.stamps/$name"
  log "done  $name ($((SECONDS - t0))s)"
}

# atomic OUTFILE COMMAND...: COMMAND writes to stdout; OUTFILE appears only when it succeeds
atomic() {
  local out=$1; shift
  "$@" > "$out.tmp.$$" || { rm -f "$out.tmp.$$"; die "failed while writing $out"; }
  mv -f "$out.tmp.$$" "$out"
}

# same_lines A B: both files have the same number of lines
same_lines() {
  local a b
  a=$(wc -l < "$1"); b=$(wc -l < "$2")
  [ "$a" = "$b" ] || die "$1 has $a lines but $2 has $b"
}

# no_empty FILE: name the first empty line, if any
no_empty() {
  local n
  n=$(grep -n -m1 -v '[^[:space:]]' "$1" | cut -d: -f1 || true)
  [ -z "$n" ] || die "$1:$n: empty line (the parser needs one sentence per line)"
}

find_venv_bin() {
  local root; root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  if [ -x "$root/.venv/bin/python" ]; then echo "$root/.venv/bin"; else dirname "$(command -v python3)"; fi
}

# The stages every corpus shares. They read $OUT, $SRC, $TGT, $WORKERS and the array SPLITS,
# and take the tokenized (and cleaned) text from $OUT/$TEXT_DIR/{split}.{lang}.

# parse_stage PARSER [extra fairseq-syntax-parse args...]: English CoNLL-U for every split
parse_stage() {
  local parser=$1; shift
  local split extra
  for split in "${SPLITS[@]}"; do
    extra=()
    [ "$parser" = conllu ] && extra=(--conllu "$CONLLU_DIR/$split.$SRC.conllu")
    fairseq-syntax-parse "$OUT/$TEXT_DIR/$split.$SRC" -o "$OUT/parse/$split.$SRC.conllu" --parser "$parser" \
      --workers "$WORKERS" "${extra[@]}" "$@" || die "parsing $split failed"
  done
}

# bpe_stage MERGES: learn joint BPE on the training text and apply it to every split
bpe_stage() {
  local merges=$1 split lang
  mkdir -p "$OUT/bpe"
  subword-nmt learn-joint-bpe-and-vocab --input "$OUT/$TEXT_DIR/train.$SRC" "$OUT/$TEXT_DIR/train.$TGT" \
    -s "$merges" -o "$OUT/bpe/codes.tmp" --write-vocabulary "$OUT/bpe/vocab.$SRC" "$OUT/bpe/vocab.$TGT" \
    --num-workers "$WORKERS"
  mv -f "$OUT/bpe/codes.tmp" "$OUT/bpe/codes"
  for split in "${SPLITS[@]}"; do
    for lang in $SRC $TGT; do
      atomic "$OUT/bpe/$split.$lang" subword-nmt apply-bpe -c "$OUT/bpe/codes" --vocabulary "$OUT/bpe/vocab.$lang" \
        --vocabulary-threshold 1 --num-workers "$WORKERS" --input "$OUT/$TEXT_DIR/$split.$lang"
    done
    same_lines "$OUT/bpe/$split.$SRC" "$OUT/$TEXT_DIR/$split.$SRC"
  done
}

# align_stage: subword head codes for every split (fails on any line or token mismatch, naming both files)
align_stage() {
  local split
  for split in "${SPLITS[@]}"; do
    fairseq-syntax-align --conllu "$OUT/parse/$split.$SRC.conllu" --subwords "$OUT/bpe/$split.$SRC" \
      --style bpe -o "$OUT/bpe/$split.$SRC.heads" || die "aligning $split failed"
  done
}

# binarize_stage: fairseq-preprocess (joined dictionary) and the heads side files, into $OUT/bin at once
binarize_stage() {
  local split prefs=() tests=()
  for split in "${SPLITS[@]}"; do
    case $split in
      test*) tests+=("$OUT/bpe/$split") ;;  # test, test1, test2, ...: fairseq-preprocess numbers them in order
      *) prefs+=("--${split}pref" "$OUT/bpe/$split") ;;
    esac
  done
  [ ${#tests[@]} -eq 0 ] || prefs+=(--testpref "$(IFS=,; echo "${tests[*]}")")
  rm -rf "$OUT/bin.tmp"
  fairseq-preprocess --source-lang $SRC --target-lang $TGT "${prefs[@]}" --destdir "$OUT/bin.tmp" \
    --joined-dictionary --workers "$WORKERS" 2>&1 | grep -v tensorboardX >&2
  local heads=()
  for split in "${SPLITS[@]}"; do heads+=("$OUT/bpe/$split.$SRC.heads"); done
  fairseq-syntax-binarize-heads --heads "${heads[@]}" --split "${SPLITS[@]}" --destdir "$OUT/bin.tmp" \
    -s $SRC -t $TGT || die "binarizing the heads failed"
  local parses=()
  for split in "${SPLITS[@]}"; do parses+=("$OUT/parse/$split.$SRC.conllu"); done
  fairseq-syntax-provenance --destdir "$OUT/bin.tmp" --parses "${parses[@]}" -s $SRC -t $TGT \
    --bpe-codes "$OUT/bpe/codes" --bpe-vocab "$OUT/bpe/vocab.$SRC" --bpe-vocab-threshold 1 \
    || die "recording the preprocessing failed"
  rm -rf "$OUT/bin"
  mv "$OUT/bin.tmp" "$OUT/bin"
}

# The stages of the BERT-style corpora (glue.sh, conll2003.sh). They read $OUT, $PRETRAINED, $WORKERS, SPLITS.

# ensure_pretrained: $PRETRAINED holds a converted model (dict.txt, vocab.txt); convert the installed MiniLM if not
ensure_pretrained() {
  if [ ! -f "$PRETRAINED/dict.txt" ] || [ ! -f "$PRETRAINED/vocab.txt" ]; then
    log "no converted model in $PRETRAINED: converting the installed MiniLM (fairseq-syntax-convert-bert)"
    fairseq-syntax-convert-bert --out "$PRETRAINED" 2>&1 | grep -v tensorboardX >&2
  fi
}

# binarize_pieces NAME: the WordPieces $OUT/wp/{split}.NAME (with the model's dict.txt) and their heads
# ($OUT/wp/{split}.NAME.heads) into $OUT/bin.tmp/NAME
binarize_pieces() {
  local name=$1 split prefs=() heads=() prefixes=()
  for split in "${SPLITS[@]}"; do
    prefs+=("--${split}pref" "$OUT/wp/$split.$name")
    heads+=("$OUT/wp/$split.$name.heads")
    prefixes+=("$OUT/bin.tmp/$name/$split")
  done
  fairseq-preprocess --only-source "${prefs[@]}" --destdir "$OUT/bin.tmp/$name" --workers "$WORKERS" \
    --srcdict "$PRETRAINED/dict.txt" 2>&1 | grep -v tensorboardX >&2
  fairseq-syntax-binarize-heads --heads "${heads[@]}" --text-prefixes "${prefixes[@]}" || die "binarizing heads failed"
}

# binarize_labels: $OUT/raw/{split}.label into $OUT/bin.tmp/label (no padding symbols in the label dictionary)
binarize_labels() {
  local split prefs=()
  for split in "${SPLITS[@]}"; do prefs+=("--${split}pref" "$OUT/raw/$split.label"); done
  fairseq-preprocess --only-source "${prefs[@]}" --destdir "$OUT/bin.tmp/label" --workers "$WORKERS" \
    --padding-factor 1 2>&1 | grep -v tensorboardX >&2
}

# keep_log LOG OUT.gz: LOG compressed into results/, this checkout's absolute path written as '.' and the home
# directory as '~' (the interpreter's path in a traceback): committed results hold no machine paths
keep_log() {
  local root home=${HOME%/} expr; root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  expr="s#$root/#./#g; s#$root#.#g"
  [ -z "$home" ] || expr+="; s#$home/#~/#g"  # an unset or '/' HOME would turn every '/' into '~/'
  atomic "$2" bash -c "sed -e '$expr' '$1' | gzip -9 -n"
}

# console_scripts: where fairseq and this package are not installed (a lent GPU with fairseq on PYTHONPATH,
# ../shared/tools/device-fairseq.sh), wrappers for their console scripts and for `python` go first on PATH
# (work/console-scripts, from scripts/console_scripts.py) and this checkout onto PYTHONPATH; a no-op elsewhere
console_scripts() {
  local root py
  [ "$(command -v python fairseq-train fairseq-generate fairseq-syntax-user-dir | wc -l)" -lt 4 ] || return 0
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  py=$(command -v python || command -v python3) || die "neither python nor python3 on PATH"
  "$py" "$root/scripts/console_scripts.py" "$root/work/console-scripts" \
    || die "writing the console-script wrappers failed"
  export PATH="$root/work/console-scripts:$PATH" PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
}

# require_gpu WHO: stop (naming WHO) unless torch sees a GPU; the reproduce scripts' --fp16 runs need one
require_gpu() {
  python -c "import sys, torch; sys.exit(not torch.cuda.is_available())" 2> /dev/null \
    || { echo "[$1] --fp16 trains on a GPU, and torch sees none here" >&2; exit 1; }
}

# threads_per_job JOBS: the CPU threads each of JOBS side-by-side trainings gets, so that the cores are split
# among them and none is left idle when fewer jobs than cores run (one run alone on 2 cores: 2 threads)
threads_per_job() {
  local cores; cores=$(nproc 2> /dev/null || echo 1)
  echo $(( cores / $1 > 0 ? cores / $1 : 1 ))
}
