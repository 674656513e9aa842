# Helpers shared by the data-prep scripts (sourced, not run).
# A stage runs once: its record under $OUT/.stamps holds the options that shaped its output, a fingerprint of
# its inputs and the record of the stage before it, so a re-run with other options or inputs redoes that stage
# and every later one (and says why). Every file a stage writes goes through a temporary name, so a stopped
# run resumes at the stage it was in. One run at a time writes into an --out (lock_out).
set -o pipefail

CHECKOUT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)  # when sourced: the caller may cd after
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# need_value "$@": the option in $1 has a value in $2 (not missing, not the next option)
need_value() {
  [ $# -ge 2 ] && [ -n "$2" ] && [[ $2 != --* ]] || die "$1 needs a value; --help lists the options"
}

# from_caller PATH: a folder or file the user typed, taken from where they ran the script (the reproduce scripts
# then cd to the checkout), its ../ taken as cd takes them; one inside the checkout is written relative to its
# root, as the records keep it. Plain bash: where nothing is installed, realpath may not be either
from_caller() {
  local p=$1 root=$CHECKOUT_ROOT part parts=() kept=()
  [[ $p = /* ]] || p=$PWD/$p
  readarray -d / -t parts < <(printf '%s' "$p")
  for part in "${parts[@]}"; do
    case $part in ''|.) ;; ..) [ ${#kept[@]} -eq 0 ] || unset 'kept[-1]' ;; *) kept+=("$part") ;; esac
  done
  p=""; for part in "${kept[@]}"; do p+=/$part; done
  case ${p:-/} in "$root") p=. ;; "$root"/*) p=${p#"$root"/} ;; esac
  printf '%s\n' "${p:-/}"
}

# need_name OPTION VALUE: VALUE can start a file name (a --tag): letters, digits, '.', '_', '-', no folder
need_name() {
  [[ $2 =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "$1 takes a name of letters, digits, '.', '_' and '-', got '$2'"
}

# need_block FILE NAME: FILE has the block NAME that the summary writes its table into; asked before anything
# trains, not after the runs (fairseq_syntax/studies/readme_block.py)
need_block() {
  python -c 'import sys
from fairseq_syntax.studies.readme_block import check_block
try:
    check_block(sys.argv[1], sys.argv[2])
except ValueError as e:
    sys.exit(f"error: --readme {e}")' "$1" "$2"
}

# need_int OPTION VALUE [MIN]: VALUE is a whole number of at least MIN (default 0), written as bash and the run
# names write it: no leading zero ("01" named a second seed 1), at most 18 digits (bash's test overflows past them)
need_int() {
  [[ $2 =~ ^(0|[1-9][0-9]{0,17})$ ]] || die "$1 takes a whole number, got '$2' (digits, no leading zero, at most 18)"
  [ "$2" -ge "${3:-0}" ] || die "$1 must be at least ${3:-0}, got $2"
}

# need_ints OPTION "N N ...": each of a list of numbers (--seeds "1 2 3") is a whole number, none given twice
need_ints() {
  local v vals seen=" "
  read -r -a vals <<< "$2"  # split on blanks, never globbed
  [ ${#vals[@]} -gt 0 ] || die "$1 needs at least one number"
  for v in "${vals[@]}"; do
    need_int "$1" "$v"
    [[ $seen != *" $v "* ]] || die "$1 gives $v twice"
    seen+="$v "
  done
}

# need_parser VALUE: --parser names a parser fairseq-syntax-parse has, checked before any stage runs
need_parser() {
  case $1 in auto|stanza|spacy) ;; *) die "--parser must be auto, stanza or spacy, got '$1'" ;; esac
}

# quick_slice VAR N [VAR N ...]: with FAIRSEQ_SYNTAX_QUICK set (fairseq_syntax/quick.py), each size option left at
# 0 ("all") becomes N, so the README's commands run in minutes as written; the stage records keep the sizes
quick_slice() {
  [ -n "${FAIRSEQ_SYNTAX_QUICK:-}" ] && [ "${FAIRSEQ_SYNTAX_QUICK}" != 0 ] || return 0
  while [ $# -ge 2 ]; do
    if [ "${!1}" = 0 ]; then printf -v "$1" '%s' "$2"; log "FAIRSEQ_SYNTAX_QUICK: $1=$2"; fi
    shift 2
  done
}

# try_lock FD FILE: take the lock on FD without waiting; returns 1 only when another process holds it. flock
# missing or failing is an error of its own: read as "held", a reproduction would leave every run to a holder
# that does not exist and train nothing
try_lock() {
  local rc=0
  flock -n "$1" || rc=$?
  case $rc in
    0|1) return "$rc" ;;
    127) die "flock (util-linux) is not on PATH; it keeps two runs from writing into one folder ($2): install util-linux" ;;
    *) die "flock failed (exit $rc) on $2" ;;
  esac
}

# lock_out [wait]: this run is the only one writing into $OUT; a second one stops naming the first (or, with
# 'wait', waits for it and then resumes, its finished stages skipped: --wait, and the job-array tasks of
# wmt14.sh --shard)
lock_out() {
  mkdir -p "$OUT"
  exec 9>> "$OUT/.lock"
  if ! try_lock 9 "$OUT/.lock"; then
    local holder; holder=$(cat "$OUT/.lock" 2> /dev/null)
    [ "${1:-}" = wait ] || die "$OUT: another preparation (${holder:-a running process}) is writing there; wait for it to finish (--wait), or give another --out"
    log "$OUT: waiting for ${holder:-another preparation} to finish its stages"
    flock 9
  fi
  : > "$OUT/.lock"
  echo "pid $$, $(basename "$0"), started $(date '+%F %T')" >&9
  claim_out
  owned_or_absent "$OUT/bin"  # a bin/ of the user's stops the run before any work, not after it
  owned_or_absent "$OUT/bin.tmp"
}

# claim_out: $OUT is new, or this corpus's (its .corpus names the script and, for GLUE, the task: $CORPUS).
# A folder another corpus's script prepared, or one holding anything data-prep did not write, is refused before any
# work: its bin/ would be replaced and its files (raw/train.words ...) overwritten
claim_out() {
  local corpus=${CORPUS:-$(basename "$0")} mark=$OUT/.corpus entry
  if [ -f "$mark" ]; then
    [ "$(cat "$mark")" = "$corpus" ] || die "$OUT was prepared by $(cat "$mark"), not $corpus; one folder holds one \
corpus: give another --out"
    return 0
  fi
  [ ! -d "$OUT/.stamps" ] || die "$OUT holds stage records that do not name their corpus (an older version's): \
give another --out, or remove $OUT/.stamps to prepare $corpus there from the start"
  for entry in "$OUT"/* "$OUT"/.[!.]* "$OUT"/..?*; do  # everything but the lock this run just took
    { [ -e "$entry" ] || [ -L "$entry" ]; } && [ "$entry" != "$OUT/.lock" ] || continue
    die "$entry exists and was not written by data-prep; nothing there is deleted or overwritten: move it away \
or give another --out"
  done
  printf '%s\n' "$corpus" > "$mark"
}
unlock_out() { exec 9>&-; }

# lock_run DIR: this (sub)shell is the only one training into the run folder DIR; a second reproduction started on
# the same checkpoints leaves the run to the first (returns 1, naming it) instead of writing into its checkpoints.
# The lock lasts while this shell or any process it started (fairseq-train) lives.
lock_run() {
  local fd holder
  exec {fd}>> "$1/.lock"
  if ! try_lock "$fd" "$1/.lock"; then
    holder=$(cat "$1/.lock" 2> /dev/null)
    exec {fd}>&-
    log "$1: another process (${holder:-unknown}) is training this run; left to it"
    return 1
  fi
  : > "$1/.lock"
  echo "pid $BASHPID, $(basename "$0"), started $(date '+%F %T')" >&"$fd"
}

# fingerprint PATH...: one line per input file (a folder: every file under it, hidden ones too, as the readers
# read them), with its SHA-1, so that a changed input is seen whatever its date; symlinks are followed, to a file
# or to a folder; a FIFO, socket or device is refused by name before anything reads it (it would hang or change
# under the reader); a path that does not exist counts as absent
fingerprint() {
  local p odd
  for p in "$@"; do
    [ -n "$p" ] || continue
    if [ -d "$p" ]; then
      odd=$(find -L "$p" ! -type f ! -type d -print -quit 2> /dev/null)
      [ -z "$odd" ] || die "$odd: not a regular file (a FIFO, socket, device or broken link); inputs must be files"
      find -L "$p" -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha1sum
    elif [ -f "$p" ]; then
      printf '%s  %s\n' "$(sha1sum < "$p" | cut -d' ' -f1)" "$p"  # sha1sum's own line, the path never sed code
    elif [ -e "$p" ] || [ -L "$p" ]; then
      die "$p: not a regular file (a FIFO, socket, device or broken link); inputs must be files"
    else
      echo "absent $p"
    fi
  done | sha1sum | cut -d' ' -f1
}

# out_files: every file under $OUT that a stage may have written (the records and lock files left out: a lock
# holds who ran last, not data), one 'size mtime path' line each, to tell what a stage's command wrote
out_files() {
  (cd "$OUT" && find . \( -path ./.stamps -o -name '*.lock' -o -name .lock \) -prune -o -type f -printf '%s %T@ %p\n' \
    | LC_ALL=C sort)
}

# outputs_record BEFORE AFTER PREVIOUS [FOLDER...]: the 'output: SHA-1  PATH' lines of a stage: the files its
# command wrote (new or changed between the two out_files listings), those of its previous record still there,
# and every file under the FOLDERs it declared (--output, relative to $OUT): a command that finds its work done
# (fairseq-syntax-parse on an unchanged input) writes nothing, yet its outputs are the stage's
outputs_record() {
  local path
  { LC_ALL=C comm -13 <(printf '%s\n' "$1") <(printf '%s\n' "$2") | cut -d' ' -f3- | sed 's#^\./##'
    sed -n 's/^output: [0-9a-f]*  //p' <<< "$3"
    shift 3
    for path in "$@"; do [ ! -d "$OUT/$path" ] || (cd "$OUT" && find "$path" -type f ! -name '*.lock'); done
  } | LC_ALL=C sort -u | while IFS= read -r path; do
    if [ -n "$path" ] && [ -f "$OUT/$path" ]; then
      printf 'output: %s  %s\n' "$(sha1sum < "$OUT/$path" | cut -d' ' -f1)" "$path"
    fi
  done
}

# outputs_changed RECORD: empty if every output the record lists is there with its SHA-1; else what is not
outputs_changed() {
  local line sum path now
  while IFS= read -r line; do
    sum=${line%%  *}; path=${line#*  }
    if [ ! -f "$OUT/$path" ]; then echo "$OUT/$path is missing"; return 0; fi
    now=$(sha1sum < "$OUT/$path" | cut -d' ' -f1)
    if [ "$now" != "$sum" ]; then echo "$OUT/$path changed since it was written"; return 0; fi
  done < <(sed -n 's/^output: //p' "$1")
}

STAGE_AFTER=start
# stage NAME [--key 'OPTION=VALUE ...'] [--input PATH]... [--output FOLDER]... -- COMMAND...: run COMMAND unless
# stage NAME is complete for these options and inputs, after the same earlier stages, and every file it wrote is
# still there unchanged (its record lists each with its SHA-1); a redone stage redoes every later one. --output
# (relative to $OUT) names a folder all of whose files are the stage's, for a command that may find them done
stage() {
  local name=$1 key="" inputs=() declared=() record want have before after outputs changed previous=""
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    case $1 in
      --key) key+="${key:+ }$2"; shift 2 ;;
      --input) inputs+=("$2"); shift 2 ;;
      --output) declared+=("$2"); shift 2 ;;
      *) die "stage $name: unknown argument $1 (a bug in $(basename "$0"))" ;;
    esac
  done
  [ "${1:-}" = -- ] && shift
  mkdir -p "$OUT/.stamps"
  record=$OUT/.stamps/$name
  want=$(fingerprint "${inputs[@]}") || exit 1  # a refused input stops here, before any work
  want=$(printf 'options: %s\ninputs: %s\nafter: %s\n' "$key" "$want" "$STAGE_AFTER")
  if [ -e "$record" ]; then
    have=$(cat "$record")
    previous=$have
    if [ "$(sed -n 1,3p <<< "$have")" = "$want" ]; then
      if ! grep -q '^output: ' "$record"; then
        log "redo $name: its record lists no outputs (written by an older version)"
      elif changed=$(outputs_changed "$record") && [ -n "$changed" ]; then
        log "redo $name: $changed"
      else
        log "skip $name (done)"
        STAGE_AFTER=$(sha1sum < "$record" | cut -d' ' -f1)
        return 0
      fi
    elif [ "$(sed -n 1p <<< "$have")" != "$(sed -n 1p <<< "$want")" ]; then
      log "redo $name: its options changed (were '$(sed -n 's/^options: //p' <<< "$have")', now '$key')"
    elif [ "$(sed -n 2p <<< "$have")" != "$(sed -n 2p <<< "$want")" ]; then
      log "redo $name: its inputs changed (${inputs[*]})"
    else
      log "redo $name: a stage before it was redone"
    fi
    rm -f "$record"
  fi
  log "start $name"
  local t0=$SECONDS
  before=$(out_files)
  "$@"
  after=$(out_files)
  outputs=$(outputs_record "$before" "$after" "$previous" "${declared[@]}")
  [ -n "$outputs" ] || die "stage $name wrote no file under $OUT (a bug in $(basename "$0"))"
  printf '%s\n%s\n' "$want" "$outputs" > "$record.tmp" && mv -f "$record.tmp" "$record"
  STAGE_AFTER=$(sha1sum < "$record" | cut -d' ' -f1)
  log "done  $name ($((SECONDS - t0))s)"
}

# The folders data-prep writes whole (bin/, bin.tmp/) carry this marker: only such a folder, or one an older
# version made (in an --out that holds stage records), is ever removed or written into; anything else is the user's
OWNED=.written-by-fairseq-syntax
owned_or_absent() {
  local d=$1
  [ ! -e "$d" ] && [ ! -L "$d" ] && return 0
  [ ! -L "$d" ] && [ -d "$d" ] && { [ -f "$d/$OWNED" ] || [ -d "$OUT/.stamps" ]; } && return 0
  die "$d exists and was not written by data-prep; nothing there is deleted: move it away or give another --out"
}
# remove_owned DIR: DIR gone, if data-prep made it; anything else there stops the run (owned_or_absent)
remove_owned() { owned_or_absent "$1"; rm -rf "$1"; }
# fresh_dir DIR: an empty folder DIR, marked as data-prep's (an older one of data-prep's is removed first)
fresh_dir() { remove_owned "$1"; mkdir -p "$1" && : > "$1/$OWNED"; }
# install_dir TMP DEST: TMP (from fresh_dir) takes the place of DEST, which must be data-prep's or absent
install_dir() { remove_owned "$2"; mv "$1" "$2"; }

# atomic OUTFILE COMMAND...: COMMAND writes to stdout; OUTFILE appears only when it succeeds. The temporary goes
# with a stop too (TERM from a pool's stop, Ctrl-C): the subshell's EXIT trap runs on those signals
atomic() {
  local out=$1; shift
  ( trap 'rm -f "$out.tmp.$$"' EXIT
    "$@" > "$out.tmp.$$" && mv -f "$out.tmp.$$" "$out" ) || die "failed while writing $out"
}

# same_lines A B: both files have the same number of lines, and not none
same_lines() {
  local a b
  a=$(wc -l < "$1"); b=$(wc -l < "$2")
  [ "$a" = "$b" ] || die "$1 has $a lines but $2 has $b"
  [ "$a" -gt 0 ] || die "$1 and $2 are empty: no sentences to prepare (an empty or truncated input?)"
}

# gz_head FILE.gz N: the first N lines (all with N = 0); a damaged or empty archive fails, the SIGPIPE that
# head's early exit gives gzip does not
gz_head() {
  gzip -t "$1" 2> /dev/null || die "$1: not a readable gzip file (empty or damaged)"
  if [ "$2" -gt 0 ]; then { gzip -dc "$1" || [ $? -eq 141 ]; } | head -n "$2"; else gzip -dc "$1"; fi
}

# no_empty FILE: name the first empty line, if any
no_empty() {
  local n
  n=$(grep -n -m1 -v '[^[:space:]]' "$1" | cut -d: -f1 || true)
  [ -z "$n" ] || die "$1:$n: empty line (the parser needs one sentence per line)"
}

find_venv_bin() {
  local root=$CHECKOUT_ROOT
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
  fresh_dir "$OUT/bin.tmp"
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
  install_dir "$OUT/bin.tmp" "$OUT/bin"
}

# The stages of the BERT-style corpora (glue.sh, conll2003.sh). They read $OUT, $PRETRAINED, $WORKERS, SPLITS.

# ensure_pretrained: $PRETRAINED holds a converted model (dict.txt, vocab.txt). Absent or empty, the installed
# MiniLM is converted into it; a folder holding anything else (a Hugging Face BERT of the user's) is read-only
# here: it is refused with what to do, never written into
ensure_pretrained() {
  [ -f "$PRETRAINED/dict.txt" ] && [ -f "$PRETRAINED/vocab.txt" ] && return 0
  if [ -e "$PRETRAINED" ] && [ -n "$(ls -A "$PRETRAINED" 2> /dev/null)" ]; then
    die "--pretrained $PRETRAINED is not a converted model (it needs dict.txt and vocab.txt) and is never written into; convert a Hugging Face BERT with: fairseq-syntax-convert-bert --model-dir $PRETRAINED --out NEW_DIR, then give --pretrained NEW_DIR"
  fi
  log "no converted model in $PRETRAINED: converting the installed MiniLM (fairseq-syntax-convert-bert)"
  fairseq-syntax-convert-bert --out "$PRETRAINED" 2>&1 | grep -v tensorboardX >&2
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

# binarize_labels [TASK]: $OUT/raw/{split}.label into $OUT/bin.tmp/label, with a label dictionary of every
# split (and of TASK's classes, checked), not of the training split alone (no padding symbols in it)
binarize_labels() {
  local split prefs=() files=() task=()
  [ -z "${1:-}" ] || task=(--task "$1")
  for split in "${SPLITS[@]}"; do
    prefs+=("--${split}pref" "$OUT/raw/$split.label")
    files+=("$OUT/raw/$split.label")
  done
  fairseq-syntax-classification label-dict "${files[@]}" "${task[@]}" -o "$OUT/raw/label.dict.txt" \
    || die "the label dictionary failed"
  fairseq-preprocess --only-source "${prefs[@]}" --destdir "$OUT/bin.tmp/label" --workers "$WORKERS" \
    --srcdict "$OUT/raw/label.dict.txt" 2>&1 | grep -v tensorboardX >&2
}

# keep_log LOG OUT.gz [DIR NAME]...: LOG compressed into results/ with its machine paths hidden (hide_paths)
keep_log() {
  local src=$1 dest=$2 expr
  shift 2
  expr=$(hide_paths "$@") || exit 1
  atomic "$dest" sed_gzip "$expr" "$src"
}
# hide_paths [DIR NAME]...: the sed expression that writes each DIR (a folder outside the checkout, e.g.
# --checkpoints) as NAME, this checkout's absolute path as '.' and the home directory as '~' (the interpreter's
# path in a traceback): committed results hold no machine paths
hide_paths() {
  local root=$CHECKOUT_ROOT home=${HOME%/} expr="" dir name
  while [ $# -ge 2 ]; do
    dir=$(cd "$1" && pwd) || die "hide_paths: no folder $1"
    case $dir/ in
      "$root"/*) ;;
      *) dir=$(sed_literal "$dir") name=$(sed_literal "$2") || exit 1
         expr+="s#$dir/#$name/#g; s#$dir#$name#g; " ;;
    esac
    shift 2
  done
  root=$(sed_literal "$root") || exit 1
  expr+="s#$root/#./#g; s#$root#.#g"
  # an unset or '/' HOME would turn every '/' into '~/'
  [ -z "$home" ] || { home=$(sed_literal "$home") || exit 1; expr+="; s#$home/#~/#g"; }
  printf '%s\n' "$expr"
}
# sed_literal TEXT: TEXT escaped to match itself, and to stand for itself, in an s#...#...# command: a path
# with '#', '&', '.' or '*' is a path, never sed code
sed_literal() {
  case $1 in *$'\n'*) die "a path with a line break: $1" ;; esac
  printf '%s' "$1" | sed -e 's/[]\/$*.^[#&~]/\\&/g'
}
sed_gzip() { sed -e "$1" "$2" | gzip -9 -n; }

# same_run LOG HINT KEY=VALUE...: the run whose fairseq-train log is LOG (plain or .gz; absent: not started) was
# trained with these options, or stop naming the log, its line and the option (fairseq_syntax/studies/run_options.py): a finished
# run is never skipped, nor a stopped one resumed, under options it was not trained with
same_run() {
  local log=$1 hint=$2; shift 2
  python -m fairseq_syntax.studies.run_options "$log" --hint "$hint" "$@" || exit 1
}

# flag_keys FLAG...: fairseq-train flags as same_run's KEY=VALUE (--sup-lambda 0.3: sup_lambda=0.3; a flag without
# a value: True); --task is left out (its name is every section's _name; the arch tells the runs apart)
flag_keys() {
  local k
  while [ $# -gt 0 ]; do
    k=${1#--}; k=${k//-/_}
    if [ $# -ge 2 ] && [[ $2 != --* ]]; then
      [ "$k" = task ] || printf '%s=%s\n' "$k" "$2"; shift 2
    else
      printf '%s=True\n' "$k"; shift
    fi
  done
}

# no_quick_study [WHY]: a study's reproduce script refuses FAIRSEQ_SYNTAX_QUICK (fairseq_syntax/quick.py), whose
# trainings stop after 2 updates yet end "done training" and are scored as if of the table's budget
no_quick_study() {
  [ -z "${FAIRSEQ_SYNTAX_QUICK:-}" ] || [ "$FAIRSEQ_SYNTAX_QUICK" = 0 ] || die "FAIRSEQ_SYNTAX_QUICK is set (the \
README's quick try: 2 updates a training); a study's runs are never trained so: unset it (unset FAIRSEQ_SYNTAX_QUICK)"
}

# console_scripts: where fairseq and this package are not installed (a lent GPU with fairseq on PYTHONPATH,
# ../shared/tools/device-fairseq.sh), wrappers for their console scripts and for `python` go first on PATH
# (work/console-scripts, from scripts/console_scripts.py) and this checkout onto PYTHONPATH; a no-op elsewhere
console_scripts() {
  local root=$CHECKOUT_ROOT py
  [ "$(command -v python fairseq-train fairseq-generate fairseq-syntax-user-dir | wc -l)" -lt 4 ] || return 0
  py=$(command -v python || command -v python3) || die "neither python nor python3 on PATH"
  "$py" "$root/scripts/console_scripts.py" "$root/work/console-scripts" \
    || die "writing the console-script wrappers failed"
  export PATH="$root/work/console-scripts:$PATH" PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
}

# fine_tune_start CK PRETRAINED: fairseq-train's start options, one a line: on from CK/checkpoint_last.pt where a
# run stopped (logged, with "resuming"), else from PRETRAINED/model.pt with fresh optimizer, data loader and meters
fine_tune_start() {
  if [ -f "$1/checkpoint_last.pt" ]; then
    log "$(basename "$1"): resuming from $1/checkpoint_last.pt"
    printf '%s\n' --restore-file "$1/checkpoint_last.pt"
  else
    printf '%s\n' --restore-file "$2/model.pt" --reset-optimizer --reset-dataloader --reset-meters
  fi
}

# require_gpu WHO: stop (naming WHO) unless torch sees a GPU; the reproduce scripts' --fp16 runs need one
require_gpu() {
  python -c "import sys, torch; sys.exit(not torch.cuda.is_available())" 2> /dev/null \
    || { echo "[$1] --fp16 trains on a GPU, and torch sees none here" >&2; exit 1; }
}

# A pool of background jobs, at most N at a time (a study's --jobs): `pool_start N CMD...` starts CMD once fewer
# than N run, as soon as whichever job ends first, not the oldest, so that a long run never keeps a finished one's
# slot idle; `pool_wait` waits for the rest. POOL_FAILED is 1 once any job has returned non-zero. The pool polls its
# jobs' pids (every 0.2 s) rather than trusting `wait -n`, which misses a job that ended before it was called (a
# skipped run ends at once) and would then hold the slot until another job ends, an hour-long run perhaps.
POOL_RUNNING=0 POOL_FAILED=0 POOL_PIDS=()
pool_reap() {  # the ended jobs leave the pool, their status counted (bash keeps a background job's status for wait)
  local pid alive=() running
  running=" $(jobs -pr | tr '\n' ' ') "  # bash's own table of running jobs: no pid reused by another process
  for pid in "${POOL_PIDS[@]}"; do
    if [[ $running = *" $pid "* ]]; then alive+=("$pid"); else wait "$pid" || POOL_FAILED=1; fi
  done
  POOL_PIDS=("${alive[@]}")
  POOL_RUNNING=${#POOL_PIDS[@]}
}
pool_start() {
  local n=$1; shift
  trap 'pool_stop 130' INT; trap 'pool_stop 143' TERM
  pool_reap
  while [ "$POOL_RUNNING" -ge "$n" ]; do sleep 0.2; pool_reap; done
  "$@" &
  POOL_PIDS+=("$!")
  POOL_RUNNING=${#POOL_PIDS[@]}
}
pool_wait() { pool_reap; while [ "$POOL_RUNNING" -gt 0 ]; do sleep 0.2; pool_reap; done; }

# Ctrl-C, `timeout` or a scheduler's TERM stops the pool's jobs with the script, and the script ends only once they
# have: a background job's shell ignores SIGINT, so it went on (its next run, its evaluation) after the script ended,
# and a training stopped by SIGINT still wrote its traceback while what it had written was packed (gpu_lease.sh).
pool_stop() {  # pool_stop STATUS: TERM to every job and what it started, KILL after 10 s, then exit STATUS
  trap '' INT TERM
  local pids=() alive=() p i
  mapfile -t pids < <(process_tree ${POOL_PIDS[@]+"${POOL_PIDS[@]}"})
  kill -TERM "${pids[@]}" 2> /dev/null || true  # (the studies run under set -e) some may have ended already
  for ((i = 0; i < 50; i++)); do
    for p in "${POOL_PIDS[@]}"; do wait "$p" 2> /dev/null || true; done  # the jobs' own shells: no zombie left behind
    alive=(); for p in "${pids[@]}"; do process_alive "$p" && alive+=("$p"); done
    [ "${#alive[@]}" = 0 ] && break
    sleep 0.2
  done
  [ "${#alive[@]}" = 0 ] || kill -KILL "${alive[@]}" 2> /dev/null || true
  log "stopped (signal $((${1} - 128))); the runs' checkpoints stay, run again to resume"
  exit "$1"
}
# proc_fields FILE: PROC_FIELDS=(state ppid ...), the fields of a /proc/PID/stat after the command name, which may
# hold spaces and parentheses; returns 1 once the process is gone
proc_fields() {
  local s; { read -r s < "$1"; } 2> /dev/null || return 1
  read -r -a PROC_FIELDS <<< "${s##*) }"
}
process_tree() {  # process_tree PID...: these and all their descendants, from one read of /proc (no procps needed)
  local stat p todo=("$@")
  local -A kids=()
  for stat in /proc/[0-9]*/stat; do
    proc_fields "$stat" && kids[${PROC_FIELDS[1]}]+=" ${stat//[^0-9]/}"
  done
  while [ "${#todo[@]}" -gt 0 ]; do
    p=${todo[0]}; echo "$p"
    # shellcheck disable=SC2206
    todo=("${todo[@]:1}" ${kids[$p]:-})
  done
}
process_alive() { proc_fields "/proc/$1/stat" && [ "${PROC_FIELDS[0]}" != Z ]; }  # not a zombie awaiting its parent

# threads_per_job JOBS: the CPU threads each of JOBS side-by-side trainings gets, so that the cores are split
# among them and none is left idle when fewer jobs than cores run (one run alone on 2 cores: 2 threads)
threads_per_job() {
  need_int --jobs "$1" 1  # never an arithmetic expression: bash would run a $(...) inside one
  local cores; cores=$(nproc 2> /dev/null || echo 1)
  echo $(( cores / $1 > 0 ? cores / $1 : 1 ))
}
