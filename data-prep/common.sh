# Helpers of the study runners (examples/*/reproduce*.sh, benchmarks/gpu_check.sh), sourced, not run. data-prep's
# stages, records, locks and ownership are Python: fairseq_syntax/pipeline, fairseq_syntax/data_prep.
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

# atomic OUTFILE COMMAND...: COMMAND writes to stdout; OUTFILE appears only when it succeeds. The temporary goes
# with a stop too (TERM from a pool's stop, Ctrl-C): the subshell's EXIT trap runs on those signals
atomic() {
  local out=$1; shift
  ( trap 'rm -f "$out.tmp.$$"' EXIT
    "$@" > "$out.tmp.$$" && mv -f "$out.tmp.$$" "$out" ) || die "failed while writing $out"
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
