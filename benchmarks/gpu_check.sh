#!/usr/bin/env bash
# On a GPU: fp16 (or --bf16) training of every model family for a few hundred updates, then transformer-base throughput
# (SG-Net against vanilla) at --max-tokens 32768 with fairseq's default --num-workers. Prints one table.
#
#   bash benchmarks/gpu_check.sh --multi30k work/multi30k/bin [--cola work/glue/CoLA/bin] [--lambada work/lambada/bin]
#                             [--race work/race/bin]
#                             [--updates 300] [--speed-updates 150] [--speed-rounds 2] [--speed-max-tokens 32768]
#                             [--out results/benchmarks/gpu_check.md] [--logs DIR] [--cpu | --bf16] [--speed-only]
#
# Uses the fairseq-train on PATH (else a wrapper, data-prep/common.sh: console_scripts) and this checkout as
# --user-dir (no install needed). A family whose data is not given is reported as not run. Each training must end
# with a finite loss. Throughput: --speed-rounds rounds of transformer_wmt_en_de and transformer_sgnet_wmt_en_de
# on the same batches, the order alternating by round, logged every update; benchmarks/train_speed.py gives SG-Net's
# words/s over vanilla's, steady (median update after the first 20) and overall (epoch starts included), the
# median over rounds (goal >= 0.93). --out is rewritten after every run, so a call cut short keeps the rows it
# finished; --logs keeps fairseq's logs (default: a temporary folder, removed). --cpu trains in fp32 on the CPU,
# to try the script without a GPU (its words/s say nothing about one). --speed-only measures the throughput pair
# alone (the families are reported as not run), for a lease too short for both; --speed-rounds 0 leaves the pair out
# (its row says so), for a check of the families alone.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
M30K="" COLA="" LAMBADA="" RACE="" UPDATES=300 SPEED_UPDATES=150 ROUNDS=2 SPEED_TOKENS=32768 OUT="" LOGS="" PREC=(--fp16)
SPEED_ONLY=""
source "$ROOT/data-prep/common.sh"  # need_value, atomic; console_scripts: wrappers where fairseq and this package are not installed
while [ $# -gt 0 ]; do
  case $1 in
    --multi30k) need_value "$@"; M30K=$2; shift 2 ;;
    --cola) need_value "$@"; COLA=$2; shift 2 ;;
    --lambada) need_value "$@"; LAMBADA=$2; shift 2 ;;
    --race) need_value "$@"; RACE=$2; shift 2 ;;
    --updates) need_value "$@"; UPDATES=$2; shift 2 ;;
    --speed-updates) need_value "$@"; SPEED_UPDATES=$2; shift 2 ;;
    --speed-rounds) need_value "$@"; ROUNDS=$2; shift 2 ;;
    --speed-max-tokens) need_value "$@"; SPEED_TOKENS=$2; shift 2 ;;
    --out) need_value "$@"; OUT=$2; shift 2 ;;
    --logs) need_value "$@"; LOGS=$2; shift 2 ;;
    --cpu) PREC=(--cpu); shift ;;
    --bf16) PREC=(--bf16); shift ;;
    --speed-only) SPEED_ONLY=1; shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
export PYTHONWARNINGS=ignore
# numbers are checked as numbers before bash computes with any (an arithmetic expansion would run a $(...))
need_int --updates "$UPDATES" 1; need_int --speed-updates "$SPEED_UPDATES" 1; need_int --speed-rounds "$ROUNDS"
need_int --speed-max-tokens "$SPEED_TOKENS" 1
if [ -n "$SPEED_ONLY" ] && [ "$ROUNDS" -eq 0 ]; then
  echo "--speed-only with --speed-rounds 0 measures nothing" >&2; exit 1
fi
console_scripts
U=$ROOT/fairseq_syntax
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
LOGS=${LOGS:-$WORK/logs}
mkdir -p "$LOGS"
if [ "${PREC[0]}" = --cpu ]; then GPU=CPU; MODE="fp32 on the CPU (--cpu: a trial of the script, not a GPU check)"; else
  GPU=$(python -c "import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')")
  MODE=${PREC[0]#--}
fi
VERSIONS=$(python -c "import sys, torch, fairseq
print(f'Python {sys.version.split()[0]}, torch {torch.__version__}, fairseq {fairseq.__version__}')")
ROWS=()
RATIO="not measured"

table() {  # table [in progress]: the table so far, to stdout and --out
  {
    echo "GPU check on $GPU ($VERSIONS), $(date +%Y-%m-%d), $MODE${1:+ ($1)}"
    echo
    echo "| run | updates | final train loss | words/s (last epoch summary) | status |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "transformer_sgnet_wmt_en_de / transformer_wmt_en_de words/s at --max-tokens $SPEED_TOKENS," \
      "default --num-workers: $RATIO (goal >= 0.93)"
  } > "$WORK/table.md"
  [ -z "$OUT" ] || atomic "$OUT" cat "$WORK/table.md"
}

# last logged value of KEY (loss, wps, ...) on the train summary line of LOG
last() { grep -E "\| train \|" "$2" | tail -1 | sed -E "s/.*\| $1 ([0-9.]+).*/\1/"; }

train() {  # train NAME DATA TASK ARCH UPDATES [flags...]: one run; a row: name, updates, final loss, words/s
  local name=$1 data=$2 task=$3 arch=$4 n=$5; shift 5
  local log=$LOGS/$name.log loss wps status
  if fairseq-train "$data" --user-dir "$U" --task "$task" --arch "$arch" "${PREC[@]}" --max-update "$n" --seed 1 \
       --save-dir "$WORK/ck_$name" --no-save --disable-validation --log-format simple --log-interval 50 "$@" \
       > "$log" 2>&1; then
    loss=$(last loss "$log"); wps=$(last wps "$log")
    status=$(python -c "import math,sys; print('ok' if math.isfinite(float(sys.argv[1])) else 'NOT FINITE')" "$loss")
  else
    loss="-"; wps="-"; status="FAILED: $(grep -m1 -E "Error|error" "$log" | cut -c1-80)"
  fi
  ROWS+=("| $name | $n | $loss | $wps | $status |")
  echo "[gpu_check] $name: $status (loss $loss, $wps words/s)" >&2
  table "in progress"
}

NMT=(-s en -t de --share-all-embeddings --optimizer adam --adam-betas '(0.9, 0.98)' --lr 5e-4
  --lr-scheduler inverse_sqrt --warmup-updates 100 --criterion label_smoothed_cross_entropy --label-smoothing 0.1)
if [ -n "$SPEED_ONLY" ]; then
  ROWS+=("| transformer_*_small | - | - | - | not run (--speed-only) |")
elif [ -n "$M30K" ]; then
  train transformer_sgnet_small "$M30K" syntax_guided_translation transformer_sgnet_small "$UPDATES" "${NMT[@]}" \
    --max-tokens 4096
  train transformer_sgnet_small+alpha+first_head "$M30K" syntax_guided_translation transformer_sgnet_small "$UPDATES" \
    "${NMT[@]}" --max-tokens 4096 --sgnet-learn-alpha --sgnet-subword-mode first_head
  train transformer_sla_small "$M30K" syntax_guided_translation transformer_sla_small "$UPDATES" "${NMT[@]}" \
    --max-tokens 4096
fi
if [ -n "$M30K" ] && [ "$ROUNDS" -eq 0 ]; then
  ROWS+=("| speed_* (transformer-base pair) | - | - | - | not run (--speed-rounds 0) |")
  RATIO="not measured (--speed-rounds 0)"
elif [ -n "$M30K" ]; then
  # throughput: transformer-base, the same batches, every update logged; the order alternates by round
  base=() cand=()
  for r in $(seq 1 "$ROUNDS"); do
    order="vanilla sgnet"; [ $((r % 2)) = 1 ] || order="sgnet vanilla"
    for m in $order; do
      if [ $m = vanilla ]; then
        train speed_vanilla_r$r "$M30K" translation transformer_wmt_en_de "$SPEED_UPDATES" "${NMT[@]}" \
          --max-tokens "$SPEED_TOKENS" --log-interval 1
        base+=("$LOGS/speed_vanilla_r$r.log")
      else
        train speed_sgnet_r$r "$M30K" syntax_guided_translation transformer_sgnet_wmt_en_de "$SPEED_UPDATES" \
          "${NMT[@]}" --max-tokens "$SPEED_TOKENS" --log-interval 1
        cand+=("$LOGS/speed_sgnet_r$r.log")
      fi
    done
  done
  RATIO=$(python "$ROOT/benchmarks/train_speed.py" --baseline "${base[@]}" --candidate "${cand[@]}" \
    --skip $((SPEED_UPDATES < 40 ? 0 : 20)) --json "$LOGS/speed.json" --line) || RATIO="not measured (see the logs)"
  table "in progress"
else
  ROWS+=("| translation families | - | - | - | not run (no --multi30k) |")
fi
if [ -n "$SPEED_ONLY" ]; then
  ROWS+=("| roberta_*, bidaf* | - | - | - | not run (--speed-only) |")
elif [ -n "$COLA" ]; then
  for arch in roberta_baseline_small roberta_sgnet_small roberta_sla_small; do
    train "$arch" "$COLA" syntax_sentence_prediction "$arch" "$UPDATES" --criterion sentence_prediction \
      --num-classes 2 --optimizer adam --lr 1e-4 --batch-size 32 --max-positions 512
  done
else
  ROWS+=("| roberta_* | - | - | - | not run (no --cola) |")
fi
if [ -n "$SPEED_ONLY" ]; then
  :  # its row is the encoders'
elif [ -n "$RACE" ]; then  # the ranking family: four choices of <s> article </s> </s> question option </s>
  for arch in roberta_baseline_small roberta_sgnet_small roberta_sla_small; do
    train "${arch}_ranking" "$RACE" syntax_sentence_ranking "$arch" "$UPDATES" --criterion sentence_ranking \
      --num-classes 4 --init-token 0 --separator-token 2 --max-option-length 128 --max-positions 512 \
      --max-input-length 384 --shorten-method truncate --optimizer adam --lr 1e-5 --batch-size 16
  done
else
  ROWS+=("| roberta_* ranking (RACE) | - | - | - | not run (no --race) |")
fi
if [ -n "$SPEED_ONLY" ]; then
  :  # its row is the encoders'
elif [ -n "$LAMBADA" ]; then
  for arch in bidaf bidaf_sa_early bidaf_sa_late bidaf_sa_both; do
    signals=none; [ "$arch" = bidaf ] || signals=CorefAll
    train "$arch" "$LAMBADA" lambada_reader "$arch" "$UPDATES" --criterion pointer_sum --signals "$signals" \
      --optimizer adam --lr 1e-3 --max-tokens 8000
  done
else
  ROWS+=("| bidaf* | - | - | - | not run (no --lambada) |")
fi
table
cat "$WORK/table.md"
