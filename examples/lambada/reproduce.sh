#!/usr/bin/env bash
# Train BiDAF-SA-Early with and without CorefAll supervision on the prepared LAMBADA data, same budget,
# and evaluate both on the LAMBADA dev set (the `test` split of data-prep/lambada.sh).
#
#   bash examples/lambada/reproduce.sh [--data work/lambada/bin] [--updates 1000] [--warmup 250]
#                                     [--batch-size 32] [--seeds "1"] [--runs "sa_early sa_early_corefall"]
#                                     [--jobs 2] [--out results/lambada] [--stopwords FILE]
#                                     [--converge [--valid-interval 500] [--patience 5] [--max-update 30000]]
#                                     [--fp16] [--tag NAME] [--readme FILE] [--checkpoints work/checkpoints/lambada]
#                                     [--status] [--snapshot]
#
# Runs: sa_early (no supervision), sa_early_corefall (CorefAll on head 0 of layer 3, λ = 0.3), and, if
# asked for, bidaf (the baseline), sa_early_depparse, sa_early_corefprev, sa_early_corefnext, sa_early_narrative
# (the paper's Table 5, the same head and λ). Adam lr 1e-3 with the Transformer schedule
# (inverse square root after --warmup updates), dropout 0.1, weights averaged with decay 0.9999; the
# best checkpoint by valid accuracy (chu_sample_valid, checked 10 times) is evaluated with
# fairseq-syntax-lambada-eval (accuracies in {run}_seed{s}.eval.json, one line per instance in .pred.jsonl.gz),
# and examples/lambada/summarize.py tabulates them with exact McNemar tests between runs. --jobs 2 trains
# two runs side by side, the cores split among them. A finished run (its .eval.json and .pred.jsonl.gz) is skipped,
# so the script resumes; a stopped run continues from checkpoint_last. One made with other options (its log's
# fairseq configuration, or where the stopping rule ends it) stops the script before anything trains.
# --converge trains until valid accuracy has not improved for --patience validations (one every
# --valid-interval updates; capped at --max-update), decided from the whole log by fairseq_syntax/studies/early_stopping.py,
# so an interrupted run stops where an uninterrupted one would. --tag prefixes the run names (e.g. converged).
# The summary's table also goes into examples/lambada/README.md's lambada-summary block (--readme FILE for another file; with
# --out, only if --readme is given). --fp16 (on a GPU) trains into work/checkpoints/lambada_fp16 and
# results/lambada_fp16 (no README table unless --readme), never into the fp32 runs; the summary refuses a mix.
# --status says where each run of the same options stands (finished, its dev accuracy; or its validations so far)
# and trains nothing. --snapshot trains nothing either: it scores the best checkpoint so far of each run that has
# not finished (one stopped by a time limit, say) into $RES/snapshot and summarizes them there, as fixed budgets,
# not converged; the runs resume and finish as before. Nothing needs installing: where fairseq and this package
# are only importable (a lent GPU, ../shared/tools/device-fairseq.sh), wrappers stand in for their console scripts
# (data-prep/common.sh).
# A folder or file you name is taken from where you run the script; the defaults are in the checkout.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DATA=$ROOT/work/lambada/bin
UPDATES=1000
WARMUP=250
BSZ=32
SEEDS="1"
RUNS="sa_early sa_early_corefall"
JOBS=2
RES=default
README_MD=default
CKPTS=default  # work/checkpoints/lambada, relative to the repository root: it is written into eval.json
STOPWORDS=$ROOT/../shared/data/lambada/stopwords.txt  # where it is missing, the summary goes without that reference
STOPWORDS_GIVEN=""
CONVERGE=0
INTERVAL=500
PATIENCE=5
MAX_UPDATE=30000
EXTRA=()
TAG=""
STATUS=0
SNAPSHOT=0
source "$ROOT/data-prep/common.sh"  # need_value, atomic, keep_log, require_gpu, threads_per_job, console_scripts, pool_start
while [ $# -gt 0 ]; do
  case $1 in
    --data) need_value "$@"; DATA=$(from_caller "$2"); shift 2 ;;
    --updates) need_value "$@"; UPDATES=$2; shift 2 ;;
    --warmup) need_value "$@"; WARMUP=$2; shift 2 ;;
    --batch-size) need_value "$@"; BSZ=$2; shift 2 ;;
    --seeds) need_value "$@"; SEEDS=$2; shift 2 ;;
    --runs) need_value "$@"; RUNS=$2; shift 2 ;;
    --jobs) need_value "$@"; JOBS=$2; shift 2 ;;
    --out) need_value "$@"; RES=$(from_caller "$2"); shift 2; [ "$README_MD" != default ] || README_MD="" ;;
    --readme) need_value "$@"; README_MD=$(from_caller "$2"); shift 2 ;;
    --checkpoints) need_value "$@"; CKPTS=$(from_caller "$2"); shift 2 ;;
    --stopwords) need_value "$@"; STOPWORDS=$(from_caller "$2"); STOPWORDS_GIVEN=1; shift 2 ;;
    --converge) CONVERGE=1; shift ;;
    --valid-interval) need_value "$@"; INTERVAL=$2; shift 2 ;;
    --patience) need_value "$@"; PATIENCE=$2; shift 2 ;;
    --max-update) need_value "$@"; MAX_UPDATE=$2; shift 2 ;;
    --fp16) EXTRA+=(--fp16); shift ;;
    --tag) need_value "$@"; need_name "$@"; TAG=$2_; shift 2 ;;
    --status) STATUS=1; shift ;;
    --snapshot) SNAPSHOT=1; shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ "$STATUS" = 1 ] || no_quick_study
export PATH="$ROOT/.venv/bin:$PATH" PYTHONWARNINGS=ignore
# numbers are checked as numbers before bash computes with any (an arithmetic expansion would run a $(...))
need_int --updates "$UPDATES" 10; need_int --warmup "$WARMUP"; need_int --batch-size "$BSZ" 1
need_int --jobs "$JOBS" 1; need_int --valid-interval "$INTERVAL" 1; need_int --patience "$PATIENCE"
need_int --max-update "$MAX_UPDATE" 1; need_ints --seeds "$SEEDS"
console_scripts
OMP_NUM_THREADS=$(threads_per_job "$JOBS"); export OMP_NUM_THREADS MKL_NUM_THREADS=$OMP_NUM_THREADS
if [ ${#EXTRA[@]} -gt 0 ]; then  # half-precision runs never resume, overwrite or join the fp32 ones
  [ "$RES" != default ] || { RES=$ROOT/results/lambada_fp16; [ "$README_MD" != default ] || README_MD=""; }
  [ "$CKPTS" != default ] || CKPTS=work/checkpoints/lambada_fp16
  [ "$STATUS" = 1 ] || [ "$SNAPSHOT" = 1 ] || require_gpu lambada
fi
[ "$RES" != default ] || RES=$ROOT/results/lambada
[ "$CKPTS" != default ] || CKPTS=work/checkpoints/lambada
[ "$README_MD" != default ] || README_MD=$ROOT/examples/lambada/README.md
[ -z "$README_MD" ] || need_block "$README_MD" lambada-summary
cd "$ROOT"
[ -z "$STOPWORDS_GIVEN" ] || [ -f "$STOPWORDS" ] || die "--stopwords $STOPWORDS: no such file"
finished() {  # finished NAME: its evaluation and predictions are in the results
  [ -f "$RES/$1.eval.json" ] && [ -f "$RES/$1.pred.jsonl.gz" ]
}
stopping_rule() {  # stopping_rule LOG [--describe]: "stop", the next --max-update, or where the run stands
  python -m fairseq_syntax.studies.early_stopping "$1" --metric accuracy --maximize --patience "$PATIENCE" \
    --max-update "$MAX_UPDATE" --interval "$INTERVAL" "${@:2}"
}
if [ "$STATUS" = 1 ]; then  # where each run stands, from its results or its log; trains nothing
  for seed in $SEEDS; do for run in $RUNS; do
    name=$TAG${run}_seed$seed
    log=$CKPTS/$name.train.log
    if finished "$name"; then
      state="finished; $(python -m fairseq_syntax.studies.result_files describe "$RES/$name.eval.json" \
        "LAMBADA dev accuracy {all[accuracy]}") ($RES/$name.eval.json)"
    elif [ -f "$log" ] && [ "$CONVERGE" = 1 ]; then
      state=$(stopping_rule "$log" --describe)
    elif [ -f "$log" ]; then
      state=$(python -m fairseq_syntax.studies.early_stopping "$log" --metric accuracy --maximize --patience 0 \
        --max-update "$UPDATES" --interval "$INTERVAL" --describe)
    else state="not started"; fi
    echo "$TAG$run seed $seed: $state"
  done; done
  exit 0
fi
[ -f "$DATA/dict.txt" ] || { echo "no prepared data in $DATA: run data-prep/lambada.sh first" >&2; exit 1; }
mkdir -p "$RES"
U=$(fairseq-syntax-user-dir)

run_args() {  # the arch and supervision of a named run
  case $1 in
    bidaf) echo "--arch bidaf --signals none" ;;
    sa_early) echo "--arch bidaf_sa_early --signals none" ;;
    sa_early_corefall) echo "--arch bidaf_sa_early --signals CorefAll --sup-lambda 0.3" ;;
    sa_early_narrative) echo "--arch bidaf_sa_early --signals Narrative --sup-lambda 0.3" ;;
    sa_early_depparse) echo "--arch bidaf_sa_early --signals DepParse --sup-lambda 0.3" ;;
    sa_early_corefprev) echo "--arch bidaf_sa_early --signals CorefPrev --sup-lambda 0.3" ;;
    sa_early_corefnext) echo "--arch bidaf_sa_early --signals CorefNext --sup-lambda 0.3" ;;
    *) echo "unknown run $1" >&2; return 1 ;;
  esac
}

train() {  # train RUN SEED CK [flags]: fairseq-train of one run into CK, appending to CK.train.log
  local run=$1 seed=$2 ck=$3; shift 3
  # shellcheck disable=SC2046
  fairseq-train "$DATA" --user-dir "$U" --task lambada_reader $(run_args "$run") --criterion pointer_sum \
    --optimizer adam --lr 1e-3 --lr-scheduler inverse_sqrt --warmup-updates "$WARMUP" --warmup-init-lr 1e-7 \
    --batch-size "$BSZ" --dropout 0.1 --seed "$seed" --keep-interval-updates 1 --no-epoch-checkpoints \
    --best-checkpoint-metric accuracy --maximize-best-checkpoint-metric --save-dir "$ck" \
    --log-format simple --log-interval 25 "${EXTRA[@]}" "$@" >> "$ck.train.log" 2>&1
}

train_eval() {  # train_eval RUN SEED
  local run=$1 seed=$2 name ck next
  name=$TAG${run}_seed$seed
  finished "$name" && { echo "[lambada] skip $name (done)" >&2; return 0; }
  ck=$CKPTS/$name
  mkdir -p "$ck"
  lock_run "$ck" || return 1
  if [ "$CONVERGE" = 1 ]; then
    while true; do
      next=$(stopping_rule "$ck.train.log")
      [ "$next" != stop ] || break
      echo "[lambada] $name: training to update $next" >&2
      train "$run" "$seed" "$ck" --max-update "$next" --validate-interval-updates "$INTERVAL" \
        --save-interval-updates "$INTERVAL" --validate-interval 100000 || return 1
    done
  elif [ ! -f "$ck/checkpoint_best.pt" ] || ! grep -q "done training" "$ck.train.log"; then
    echo "[lambada] $name: $UPDATES updates" >&2
    train "$run" "$seed" "$ck" --max-update "$UPDATES" --validate-interval-updates $((UPDATES / 10)) \
      --save-interval-updates $((UPDATES / 10)) || return 1
  fi
  evaluate "$name" "$ck" "$RES"
}

evaluate() {  # evaluate NAME CK DEST: score CK's best checkpoint on the test split; results and log into DEST
  local name=$1 ck=$2 dest=$3
  fairseq-syntax-lambada-eval "$DATA" --path "$ck/checkpoint_best.pt" --split test --json "$ck.eval.json" \
    --predictions "$ck.pred.jsonl" > "$ck.eval.txt" 2>> "$ck.train.log"
  local hide=("$CKPTS" "<checkpoints>" "$DATA" "<data>") expr  # --checkpoints or --data outside the checkout
  keep_log "$ck.train.log" "$dest/$name.train.log.gz" "${hide[@]}"
  atomic "$dest/$name.pred.jsonl.gz" gzip -9 -n -c "$ck.pred.jsonl"
  atomic "$dest/$name.eval.txt" cat "$ck.eval.txt"
  expr=$(hide_paths "${hide[@]}") || exit 1
  atomic "$dest/$name.eval.json" sed -e "$expr" "$ck.eval.json"  # it names the checkpoint it scored
  cat "$dest/$name.eval.txt" >&2
}

summarize() {  # summarize DIR [README]: the table and paired tests of the runs in DIR
  local sum_args=(--results "$1" --patience "$PATIENCE" --max-update "$MAX_UPDATE" --valid-interval "$INTERVAL")
  local inst
  [ -z "${2:-}" ] || sum_args+=(--readme "$2")
  inst=$(dirname "$DATA")/raw/test.inst.jsonl  # for the most-frequent-context-word reference
  if [ -f "$inst" ] && [ -f "$STOPWORDS" ]; then sum_args+=(--instances "$inst" --stopwords "$STOPWORDS"); fi
  python examples/lambada/summarize.py "${sum_args[@]}"
}

in_slots() {  # in_slots FUNC: FUNC RUN SEED for every run and seed, --jobs at a time (pool_start); POOL_FAILED=1 if
  # any failed. Called as a plain command, never in an `||` list, which would switch off set -e inside FUNC (an
  # evaluation that failed would not stop its run)
  local seed run
  for seed in $SEEDS; do for run in $RUNS; do pool_start "$JOBS" "$1" "$run" "$seed"; done; done
  pool_wait
}

snapshot() {  # snapshot RUN SEED: an unfinished run's best checkpoint so far, scored into $RES/snapshot
  local name=$TAG${1}_seed$2 ck
  ck=$CKPTS/$name
  if finished "$name" || [ ! -f "$ck/checkpoint_best.pt" ]; then return 0; fi
  mkdir -p "$RES/snapshot"
  echo "[lambada] snapshot of $name: $(stopping_rule "$ck.train.log" --describe)" >&2
  evaluate "$name" "$ck" "$RES/snapshot"
}

clear_snapshot() {  # the files an earlier snapshot wrote (evaluate, summarize.py) go; nothing else there is touched
  local d=$RES/snapshot
  [ ! -L "$d" ] || die "$d is a link; nothing is deleted through it: remove it or give another --out"
  local f
  for f in "$d"/*.eval.json "$d"/*.eval.txt "$d"/*.pred.jsonl.gz "$d"/*.train.log.gz "$d"/summary.{json,md}; do
    if [ -f "$f" ] && [ ! -L "$f" ]; then rm -f -- "$f"; fi
  done
}

run_keys() {  # run_keys RUN SEED: the fairseq options that make this run what it is (fairseq_syntax/studies/run_options.py)
  local keys=(seed="$2" batch_size="$BSZ" lr=0.001 warmup_updates="$WARMUP" dropout=0.1)
  keys+=(fp16=$([ ${#EXTRA[@]} -gt 0 ] && echo True || echo False))
  # shellcheck disable=SC2046
  mapfile -t -O ${#keys[@]} keys < <(flag_keys $(run_args "$1"))
  if [ "$CONVERGE" = 1 ]; then keys+=(validate_interval_updates="$INTERVAL")
  else keys+=(max_update="$UPDATES" validate_interval_updates=$((UPDATES / 10))); fi
  printf '%s\n' "${keys[@]}"
}
# before anything trains or is scored: every finished run was made with these options (and, converging, stopped
# where this rule stops it), and every stopped one trained with them so far; else stop, naming the log and the option
HINT="Give another --tag (or --out and --checkpoints), or remove that run's results and checkpoints to train it again"
for seed in $SEEDS; do for run in $RUNS; do
  name=$TAG${run}_seed$seed
  state=running log=$CKPTS/$name.train.log
  if finished "$name"; then state=finished log=$RES/$name.train.log.gz; fi
  mapfile -t keys < <(run_keys "$run" "$seed")
  same_run "$log" "$HINT" "${keys[@]}"
  if [ "$CONVERGE" = 1 ] && [ -f "$log" ]; then
    stopping_rule "$log" --agrees "$state" --hint "$HINT" || exit 1
  fi
done; done

if [ "$SNAPSHOT" = 1 ]; then  # the unfinished runs' best checkpoints so far, scored beside the results
  clear_snapshot  # a run that finished since the last snapshot is not shown as it stood then
  in_slots snapshot
  [ "$POOL_FAILED" = 0 ] || { echo "[lambada] a snapshot's evaluation failed (see $CKPTS/<run>.train.log)" >&2; exit 1; }
  compgen -G "$RES/snapshot/*.eval.json" > /dev/null \
    || { echo "[lambada] no unfinished run has a checkpoint to score" >&2; exit 1; }
  summarize "$RES/snapshot"
  echo "[lambada] snapshot in $RES/snapshot (fixed budgets, not converged; the runs resume as before)" >&2
  exit 0
fi

in_slots train_eval
[ "$POOL_FAILED" = 0 ] || { echo "[lambada] some runs failed or were stopped; run again to resume" >&2; exit 1; }
summarize "$RES" "$README_MD"
echo "[lambada] results in $RES (summary.json: the table and exact McNemar tests between the runs)" >&2
