#!/usr/bin/env bash
# Fine-tune roberta_baseline, roberta_sgnet and roberta_sla from the lifted MiniLM-L6 weights on CoLA (MCC)
# and SST-2 (accuracy), same budget and seeds for every model; dev scores go to results/encoders/.
#
#   bash examples/encoders/reproduce_glue.sh [--tasks "CoLA SST-2"]
#                                  [--archs "roberta_baseline_small roberta_sgnet_small roberta_sla_small"]
#                                  [--seeds "1 2 3"] [--updates-CoLA N] [--updates-SST-2 N] [--jobs 2] [--out DIR]
#                                  [--data-root DIR]
#
# Each run trains with --max-update N (polynomial decay, 6% warm-up, batch 32, lr 5e-5), keeps the best
# dev checkpoint, and evaluates it with fairseq-validate. --jobs 2 runs two fine-tunings side by side with
# one thread each. A finished run (its .score file) is skipped, so the script resumes; one made with other options
# (another --updates-CoLA) stops the script before anything trains, naming what differs.
# Then: .venv/bin/python examples/encoders/summarize_glue.py (mean and spread per task and model).
# A folder or file you name is taken from where you run the script; the defaults are in the checkout.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TASKS="CoLA SST-2"
ARCHS="roberta_baseline_small roberta_sgnet_small roberta_sla_small"
SEEDS="1 2 3"
declare -A UPDATES=([CoLA]=800 [SST-2]=1500)
JOBS=2
RES=$ROOT/results/encoders
DATA_ROOT=$ROOT/work/glue
source "$ROOT/data-prep/common.sh"  # need_value, atomic, keep_log, console_scripts, need_int
while [ $# -gt 0 ]; do
  case $1 in
    --tasks) need_value "$@"; TASKS=$2; shift 2 ;;
    --archs) need_value "$@"; ARCHS=$2; shift 2 ;;
    --seeds) need_value "$@"; SEEDS=$2; shift 2 ;;
    --updates-CoLA) need_value "$@"; UPDATES[CoLA]=$2; shift 2 ;;
    --updates-SST-2) need_value "$@"; UPDATES[SST-2]=$2; shift 2 ;;
    --jobs) need_value "$@"; JOBS=$2; shift 2 ;;
    --out) need_value "$@"; RES=$(from_caller "$2"); shift 2 ;;
    --data-root) need_value "$@"; DATA_ROOT=$(from_caller "$2"); shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
no_quick_study
export PATH="$ROOT/.venv/bin:$PATH" PYTHONWARNINGS=ignore OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
[ -z "${GLUE_DIR:-}" ] || GLUE_DIR=$(from_caller "$GLUE_DIR")  # as named from the caller's folder
cd "$ROOT"
# numbers are checked as numbers before bash computes with any (an arithmetic expansion would run a $(...))
need_int --updates-CoLA "${UPDATES[CoLA]}" 4; need_int --updates-SST-2 "${UPDATES[SST-2]}" 4
need_int --jobs "$JOBS" 1; need_ints --seeds "$SEEDS"
for t in $TASKS; do case $t in CoLA|SST-2) ;; *) die "unknown task $t (CoLA, SST-2)" ;; esac; done
for a in $ARCHS; do case $a in roberta_baseline_small|roberta_sgnet_small|roberta_sla_small) ;;
  *) die "--archs $a: the fine-tunings start from MiniLM, whose size only roberta_{baseline,sgnet,sla}_small have" ;; esac; done
console_scripts
runs=()
for task in $TASKS; do for seed in $SEEDS; do for arch in $ARCHS; do runs+=("$task $arch $seed"); done; done; done
# before anything trains: every finished run (its .score) was made with these options; else stop, naming its log
# and what differs (fairseq_syntax/studies/run_options.py)
for r in "${runs[@]}"; do
  read -r task arch seed <<< "$r"
  [ -f "$RES/${task}_${arch}_seed$seed.score" ] || continue
  same_run "$RES/${task}_${arch}_seed$seed.train.log.gz" \
    "Give another --out, or remove that run's .score and logs to train it again" \
    arch="$arch" seed="$seed" max_update="${UPDATES[$task]}" lr=5e-5 batch_size=32
done
mkdir -p "$RES"
[ -f work/minilm/model.pt ] || fairseq-syntax-convert-bert --out work/minilm
for task in $TASKS; do
  bash data-prep/glue.sh --task "$task" --glue-dir "${GLUE_DIR:-$ROOT/../shared/data/glue}" --pretrained work/minilm \
    --parser "${PARSER:-spacy}" --workers "$JOBS" --out "$DATA_ROOT/$task"
done
U=$(fairseq-syntax-user-dir)

finetune() {  # finetune TASK ARCH SEED
  local task=$1 arch=$2 seed=$3 n=${UPDATES[$1]} metric=accuracy name ck
  [ "$task" = CoLA ] && metric=mcc
  name=${task}_${arch}_seed$seed
  [ -f "$RES/$name.score" ] && { echo "[glue] skip $name (done)" >&2; return 0; }
  ck=$ROOT/work/checkpoints/glue/$name
  echo "[glue] $name: $n updates" >&2
  mkdir -p "$ck"
  lock_run "$ck" || return 1
  fairseq-train "$DATA_ROOT/$task/bin" --user-dir "$U" --task syntax_sentence_prediction --arch "$arch" \
    --restore-file "$ROOT/work/minilm/model.pt" --reset-optimizer --reset-dataloader --reset-meters \
    --init-token 0 --num-classes 2 --max-positions 512 --criterion sentence_prediction --report-mcc \
    --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-6 --weight-decay 0.01 --clip-norm 1.0 \
    --lr 5e-5 --lr-scheduler polynomial_decay --warmup-updates $((n * 6 / 100)) --total-num-update "$n" \
    --max-update "$n" --batch-size 32 --dropout 0.1 --attention-dropout 0.1 --seed "$seed" \
    --validate-interval-updates $((n / 4)) --save-interval-updates $((n / 4)) --keep-interval-updates 1 \
    --no-epoch-checkpoints --best-checkpoint-metric "$metric" --maximize-best-checkpoint-metric \
    --save-dir "$ck" --log-format simple --log-interval 50 > "$ck/train.log" 2>&1
  fairseq-validate "$DATA_ROOT/$task/bin" --user-dir "$U" --task syntax_sentence_prediction --init-token 0 \
    --num-classes 2 --max-positions 512 --criterion sentence_prediction --report-mcc \
    --path "$ck/checkpoint_best.pt" --batch-size 64 --valid-subset valid > "$ck/valid.log" 2>&1
  local line
  line=$(grep "valid on 'valid' subset" "$ck/valid.log" | tail -n 1)
  [ -n "$line" ] || { echo "[glue] $name: no validation line" >&2; return 1; }
  keep_log "$ck/train.log" "$RES/$name.train.log.gz" "$DATA_ROOT" "<data>"
  keep_log "$ck/valid.log" "$RES/$name.valid.log.gz" "$DATA_ROOT" "<data>"
  local scores  # accuracy and mcc; the options are printed as values, never pasted into sed code
  scores=$(sed -nE "s/.*accuracy ([0-9.]+).*mcc (-?[0-9.]+).*/\1 \2/p" <<< "$line")
  [ -n "$scores" ] || { echo "[glue] $name: no accuracy and mcc in the validation line" >&2; return 1; }
  # shellcheck disable=SC2086
  atomic "$RES/$name.score" printf 'task=%s arch=%s seed=%s accuracy=%s mcc=%s\n' "$task" "$arch" "$seed" $scores
  rm -f "$ck"/checkpoint_last.pt "$ck"/checkpoint_*_*.pt  # keep only the best (disk)
  cat "$RES/$name.score" >&2
}

for r in "${runs[@]}"; do
  # shellcheck disable=SC2086
  pool_start "$JOBS" finetune $r
done
pool_wait
[ "$POOL_FAILED" = 0 ] || die "some runs failed or were stopped; run again to resume"
python examples/encoders/summarize_glue.py --results "$RES"
