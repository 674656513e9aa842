#!/usr/bin/env bash
# Converged comparison on Multi30k EN->DE: the vanilla transformer, SG-Net, and SG-Net's controls, several seeds,
# each trained until validation loss stops improving, the best checkpoint scored on every prepared test set.
#
#   bash examples/multi30k/reproduce.sh [--runs "SYSTEM:SEED ..."] [--jobs N] [--patience P] [--min-delta D]
#                                      [--max-update N] [--max-len-b N] [--fp16] [--out DIR] [--readme FILE]
#                                      [--no-summary | --summary-only | --status]
#
# Systems (same small sizes, recipe and batches; only what the name says differs):
#   vanilla              transformer_small_vanilla (3+3 layers)
#   sgnet                transformer_sgnet_small (vanilla + one SDOI layer and dual aggregation)
#   sgnet_random_trees   sgnet, every source parse replaced by a random tree over the same words (seed 1)
#   vanilla_plus1        vanilla with a 4th encoder layer: the parameter-matched baseline
#   sgnet_learn_alpha    sgnet --sgnet-learn-alpha
#   sgnet_first_head     sgnet --sgnet-subword-mode first_head
# The default runs: vanilla and sgnet seeds 1-3, then each control seeds 1-2 (RUNS below).
# Validation every epoch; training stops after --patience (default 5) epochs without a validation loss lower by
# more than --min-delta (default 0.01) than the one that started the count, or at --max-update (default 8000);
# the best checkpoint by validation loss is scored. A finished run is stamped and skipped; a stopped one resumes from
# checkpoint_last.pt; one whose kept log and hypotheses are in results/ and whose checkpoints are not here (a fresh
# clone) is skipped. A run made with other options (its log's fairseq configuration, or where the stopping rule
# ends it) stops the script before anything is prepared or trains. --jobs runs that many trainings side by side
# (default 2), the cores split among them.
# --max-len-b caps each hypothesis at N tokens (fairseq-generate's option; default 200, fairseq's own). A model of a
# few updates rarely ends a sentence and decodes the whole 200; the tests give 10. Hypotheses decoded with another cap
# are never mixed with these: a folder of hypotheses records a cap other than 200 in hyp/max-len-b, and a call
# asking another stops before anything trains.
# --fp16 trains in half precision (on a GPU), into checkpoints of their own and results/multi30k_fp16 (no README
# table unless --readme): the summary records each run's precision and device, and refuses to average across them.
# Hypotheses, compressed logs and the α of learned-α runs go to results/multi30k/ (or --out); then
# examples/multi30k/summarize.py writes summary.json and summary.md there (sacreBLEU, mean ± std over seeds, paired
# bootstrap per seed) and the table into examples/multi30k/README.md's multi30k-summary block (--readme FILE for another file; with
# --out, only if --readme is given).
# --summary-only writes the summary of the runs finished so far and trains nothing; --status says where each run is.
# The data are $MULTI30K_DATA (default work/multi30k): a finished preparation there is used as it was made;
# otherwise data-prep/multi30k.sh prepares the full corpus there. The summary scores the committed hypotheses
# against that folder's references, so it must hold the full test sets, not a --max-eval slice.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS="vanilla:1 sgnet:1 vanilla:2 sgnet:2 vanilla:3 sgnet:3 sgnet_random_trees:1 vanilla_plus1:1
      sgnet_random_trees:2 vanilla_plus1:2 sgnet_learn_alpha:1 sgnet_learn_alpha:2
      sgnet_first_head:1 sgnet_first_head:2"
JOBS=2
PATIENCE=5
MIN_DELTA=0.01
MAX_UPDATE=8000
MAX_LEN_B=200
RES=default
README_MD=default
SUMMARY=1
FP16=()
source "$ROOT/data-prep/common.sh"  # need_value, atomic, keep_log, require_gpu, threads_per_job, console_scripts, pool_start
while [ $# -gt 0 ]; do
  case $1 in
    --runs) need_value "$@"; RUNS=$2; shift 2 ;;
    --jobs) need_value "$@"; JOBS=$2; shift 2 ;;
    --patience) need_value "$@"; PATIENCE=$2; shift 2 ;;
    --min-delta) need_value "$@"; MIN_DELTA=$2; shift 2 ;;
    --max-update) need_value "$@"; MAX_UPDATE=$2; shift 2 ;;
    --max-len-b) need_value "$@"; MAX_LEN_B=$2; shift 2 ;;
    --out) need_value "$@"; RES=$2; shift 2; [ "$README_MD" != default ] || README_MD="" ;;
    --readme) need_value "$@"; README_MD=$2; shift 2 ;;
    --no-summary) SUMMARY=0; shift ;;
    --summary-only) SUMMARY=only; shift ;;
    --status) SUMMARY=status; shift ;;
    --fp16) FP16=(--fp16); shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ "$SUMMARY" = status ] || no_quick_study
export PATH="$ROOT/.venv/bin:$PATH" PYTHONWARNINGS=ignore
need_int --jobs "$JOBS" 1; need_int --patience "$PATIENCE"; need_int --max-update "$MAX_UPDATE" 1; need_int --max-len-b "$MAX_LEN_B" 1
[[ $MIN_DELTA =~ ^([0-9]+([.][0-9]*)?|[.][0-9]+)$ ]] || die "--min-delta takes a validation-loss difference, got '$MIN_DELTA'"
for run in $RUNS; do
  [[ $run = ?*:* ]] || die "--runs takes SYSTEM:SEED pairs (sgnet:1 vanilla:2), got '$run'"
  need_int "--runs (the seed of $run)" "${run##*:}"
done
console_scripts
RUN_SUFFIX=""
if [ ${#FP16[@]} -gt 0 ]; then  # half-precision runs never resume, overwrite or join the fp32 ones
  [ "$RES" != default ] || { RES=$ROOT/results/multi30k_fp16; [ "$README_MD" != default ] || README_MD=""; }
  RUN_SUFFIX=_fp16
  [ "$SUMMARY" = only ] || [ "$SUMMARY" = status ] || require_gpu reproduce
fi
[ "$RES" != default ] || RES=$ROOT/results/multi30k
[ "$README_MD" != default ] || README_MD=$ROOT/examples/multi30k/README.md
[ -z "$README_MD" ] || need_block "$README_MD" multi30k-summary
: "${MULTI30K_DIR:=}"
if [ -z "$MULTI30K_DIR" ] && [ -f "$ROOT/../shared/data/multi30k/train.en.gz" ]; then
  MULTI30K_DIR=$ROOT/../shared/data/multi30k
fi
LOCAL=(); [ -n "$MULTI30K_DIR" ] && LOCAL=(--local-dir "$MULTI30K_DIR")
DATA=${MULTI30K_DATA:-$ROOT/work/multi30k}
CKPTS=${MULTI30K_CHECKPOINTS:-$ROOT/work/checkpoints}
U=$(fairseq-syntax-user-dir)

stopping_rule() {  # stopping_rule LOG [--describe]: the next epoch to train to, or stop (fairseq_syntax/studies/early_stopping.py)
  python -m fairseq_syntax.studies.early_stopping "$1" --metric loss --patience "$PATIENCE" --min-delta "$MIN_DELTA" \
    --max-update "$MAX_UPDATE" "${@:2}"
}
summarize() {  # the table of the finished runs: summary.json, summary.md and the README block
  local readme=(); [ -z "$README_MD" ] || readme=(--readme "$README_MD")
  mkdir -p "$RES"
  python "$ROOT/examples/multi30k/summarize.py" --data "$DATA" --results "$RES" --patience "$PATIENCE" \
    --min-delta "$MIN_DELTA" --max-update "$MAX_UPDATE" --planned "$RUNS" "${readme[@]}"
}
kept_in_results() {  # kept_in_results SYSTEM SEED: its kept log says it stopped, and every test set has hypotheses
  local kept=$RES/logs/${1}_seed$2.train.log.gz split
  [ -f "$kept" ] && [ "$(stopping_rule "$kept")" = stop ] || return 1
  for split in $TESTS; do [ -f "$RES/hyp/${1}_seed$2.$split.de.gz" ] || return 1; done
}

TESTS=""; [ -f "$DATA/bin/testsets.tsv" ] && TESTS=$(cut -f1 "$DATA/bin/testsets.tsv" | tr '\n' ' ')
if [ "$SUMMARY" = only ]; then summarize; exit 0; fi
if [ "$SUMMARY" = status ]; then
  for run in $RUNS; do
    log=$CKPTS/multi30k_${run%%:*}_seed${run##*:}$RUN_SUFFIX/train.log
    if [ -f "$log" ]; then state=$(stopping_rule "$log" --describe)
    elif kept_in_results "${run%%:*}" "${run##*:}"; then state="finished; its log and hypotheses are in $RES"
    else state="not started"; fi
    echo "${run%%:*} seed ${run##*:}: $state"
  done
  exit 0
fi

system_flags() {  # system_flags NAME: --task and --arch and what else the system differs in
  local sg="--task syntax_guided_translation --arch transformer_sgnet_small"
  case $1 in
    vanilla) echo "--task translation --arch transformer_small_vanilla" ;;
    vanilla_plus1) echo "--task translation --arch transformer_small_vanilla --encoder-layers 4" ;;
    sgnet) echo "$sg" ;;
    sgnet_random_trees) echo "$sg --heads-suffix randheads" ;;
    sgnet_learn_alpha) echo "$sg --sgnet-learn-alpha" ;;
    sgnet_first_head) echo "$sg --sgnet-subword-mode first_head" ;;
    *) echo "error: --runs: unknown system $1 (vanilla, vanilla_plus1, sgnet, sgnet_random_trees," \
         "sgnet_learn_alpha, sgnet_first_head)" >&2; return 1 ;;
  esac
}

# before anything is prepared or trains: every run found here (its checkpoints' log) or in the results (its kept
# log) was trained with these options and, if finished, stopped where this rule stops it; else stop, naming the log
# and what differs (fairseq_syntax/studies/run_options.py, fairseq_syntax/studies/early_stopping.py --agrees)
HINT="Give another --out and MULTI30K_CHECKPOINTS, or remove that run's log and checkpoints to train it again"
for run in $RUNS; do
  sys=${run%%:*} seed=${run##*:}
  flags=$(system_flags "$sys")
  # (not max_update: the rule holds the cap, and a run stopped by patience before it agrees with any higher one)
  keys=(seed="$seed" lr=0.001 warmup_updates=400 max_tokens=4096
        fp16=$([ ${#FP16[@]} -gt 0 ] && echo True || echo False))
  # shellcheck disable=SC2086
  mapfile -t -O ${#keys[@]} keys < <(flag_keys $flags)
  ck=$CKPTS/multi30k_${sys}_seed$seed$RUN_SUFFIX
  kept=$RES/logs/${sys}_seed$seed.train.log.gz
  for log in "$ck/train.log" "$kept"; do
    [ -f "$log" ] || continue
    same_run "$log" "$HINT" "${keys[@]}"
    state=running; { [ "$log" = "$kept" ] || [ -f "$ck/done" ]; } && state=finished
    stopping_rule "$log" --agrees "$state" --hint "$HINT" || exit 1
  done
done

# hypotheses of one cap only (--max-len-b): a folder without the record was decoded with fairseq's default
made_with=$(cat "$RES/hyp/max-len-b" 2>/dev/null || echo 200)
if [ "$made_with" != "$MAX_LEN_B" ] && compgen -G "$RES/hyp/*.de.gz" > /dev/null; then
  echo "[reproduce] the hypotheses in $RES/hyp were decoded with --max-len-b $made_with, not $MAX_LEN_B:" \
    "give that cap again, or another --out" >&2
  exit 1
fi
mkdir -p "$RES/hyp" "$RES/logs"
[ "$MAX_LEN_B" = 200 ] || atomic "$RES/hyp/max-len-b" echo "$MAX_LEN_B"
if [ -f "$DATA/.stamps/binarize" ] && [ -f "$DATA/bin/preprocessing.json" ]; then
  # a finished preparation is used as it is, with the options it was made with (data-prep would redo it with
  # the defaults below, since its stage records hold the options: a --max-train slice would become the corpus)
  echo "[reproduce] using the data prepared in $DATA ($(wc -l < "$DATA/bpe/train.en") training pairs)" >&2
else
  bash "$ROOT/data-prep/multi30k.sh" "${LOCAL[@]}" --out "$DATA" --parser spacy --workers 2
fi
TESTS=$(cut -f1 "$DATA/bin/testsets.tsv" | tr '\n' ' ')

# the random-tree control's side files, beside the real heads (same words, same subwords, seed 1)
if [ ! -f "$DATA/bin/test.en-de.en.randheads.idx" ]; then
  splits=(train valid $TESTS); heads=()
  for s in "${splits[@]}"; do heads+=("$DATA/bpe/$s.en.heads"); done
  fairseq-syntax-binarize-heads --heads "${heads[@]}" --split "${splits[@]}" --destdir "$DATA/bin" -s en -t de \
    --suffix randheads --random-trees 1
fi


task_flags() {  # the --task and --heads-suffix of a system's flags: what fairseq-generate needs besides the model
  local out=() prev=""
  for f in $1; do
    case $prev in --task|--heads-suffix) out+=("$prev" "$f") ;; esac
    prev=$f
  done
  echo "${out[@]}"
}

COMMON=(-s en -t de --share-all-embeddings --optimizer adam --adam-betas '(0.9, 0.98)' --lr 1e-3
  --lr-scheduler inverse_sqrt --warmup-updates 400 --criterion label_smoothed_cross_entropy
  --label-smoothing 0.1 --max-tokens 4096 --required-batch-size-multiple 1
  --max-update "$MAX_UPDATE" --best-checkpoint-metric loss
  --no-epoch-checkpoints --log-format simple --log-interval 50 "${FP16[@]}")

run_one() {  # run_one SYSTEM SEED: train (or resume, or skip when done), then generate every test set
  local sys=$1 seed=$2 flags ck log split hyp epoch
  flags=$(system_flags "$sys")
  ck=$CKPTS/multi30k_${sys}_seed$seed$RUN_SUFFIX
  log=$ck/train.log
  if [ ! -f "$log" ] && kept_in_results "$sys" "$seed"; then  # a fresh clone does not train the committed runs again
    echo "[reproduce] $sys seed $seed: finished and scored in $RES; skipped" \
      "(remove its log there to train it again)" >&2
    return 0
  fi
  mkdir -p "$ck"
  lock_run "$ck" || return 1
  # one epoch per call: the whole log decides when to stop, so an interrupted run stops where an
  # uninterrupted one would (fairseq's own --patience restarts its count on resume); and a process that goes on
  # into the next epoch trains it differently from one resumed there (fairseq keeps the batches it made in a
  # process's first epoch; examples/multi30k/README.md, "Why one process per epoch"), so only this makes a resume exact
  while [ ! -f "$ck/done" ]; do
    epoch=$(stopping_rule "$log")
    if [ "$epoch" = stop ]; then
      touch "$ck/done"
      echo "[reproduce] $sys seed $seed: stopped after" \
        "$(grep -c "valid on 'valid'" "$log" || true) validations" >&2
      break
    fi
    [ "$epoch" -gt 1 ] || echo "[reproduce] training $sys seed $seed" >&2
    # shellcheck disable=SC2086
    fairseq-train "$DATA/bin" --user-dir "$U" $flags "${COMMON[@]}" --seed "$seed" --save-dir "$ck" \
      --max-epoch "$epoch" >> "$log" 2>&1 \
      || { echo "[reproduce] $sys seed $seed failed or was stopped; see $log" >&2; return 1; }
  done
  keep_log "$log" "$RES/logs/${sys}_seed$seed.train.log.gz" "$CKPTS" "<checkpoints>" "$DATA" "<data>"
  for split in $TESTS; do
    hyp=$RES/hyp/${sys}_seed$seed.$split.de.gz
    [ -f "$hyp" ] && [ "$hyp" -nt "$ck/checkpoint_best.pt" ] && continue
    # shellcheck disable=SC2086
    fairseq-generate "$DATA/bin" --user-dir "$U" $(task_flags "$flags") -s en -t de --gen-subset "$split" \
      --path "$ck/checkpoint_best.pt" --beam 5 --max-len-b "$MAX_LEN_B" --batch-size 128 --required-batch-size-multiple 1 \
      --remove-bpe --tokenizer moses --moses-no-escape > "$ck/generate.$split.txt" 2> "$ck/generate.$split.log" \
      || { tail -5 "$ck/generate.$split.log" >&2; return 1; }
    [ "$(grep -c '^D-' "$ck/generate.$split.txt")" = "$(wc -l < "$DATA/raw/$split.de")" ] \
      || { echo "[reproduce] $sys seed $seed $split: hypotheses missing" >&2; return 1; }
    # the path is an argument of the inner shell, never part of its code (a clone under /home/o'brien/ works)
    atomic "$hyp" bash -c 'grep "^D-" "$1" | sed "s/^D-//" | sort -n -k1,1 | cut -f3 | gzip -9 -n' _ \
      "$ck/generate.$split.txt"
  done
  if [[ " $flags " == *" --sgnet-learn-alpha "* ]]; then  # the α it learned (checkpoints are not committed)
    mkdir -p "$RES/learned_alpha"
    atomic "$RES/learned_alpha/${sys}_seed$seed.json" python -m fairseq_syntax.studies.learned_alpha "$ck/checkpoint_best.pt"
  fi
  echo "[reproduce] $sys seed $seed scored on: $TESTS" >&2
}

OMP_NUM_THREADS=$(threads_per_job "$JOBS"); export OMP_NUM_THREADS MKL_NUM_THREADS=$OMP_NUM_THREADS
for run in $RUNS; do
  sys=${run%%:*} seed=${run##*:}
  system_flags "$sys" > /dev/null
  pool_start "$JOBS" run_one "$sys" "$seed"
done
pool_wait
[ "$POOL_FAILED" = 0 ] || { echo "[reproduce] some runs failed or were stopped; run again to resume" >&2; exit 1; }
[ "$SUMMARY" = 0 ] || summarize
