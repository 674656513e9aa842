#!/usr/bin/env bash
# Fine-tune roberta_baseline, roberta_sgnet and roberta_sla (and SG-Net's controls) from the lifted MiniLM-L6
# weights on RACE, same budget and seeds for every system; score the last checkpoint on RACE dev (RACE-M,
# RACE-H and RACE) with per-question predictions, and summarize with paired tests (examples/race/summarize.py).
#
#   bash examples/race/reproduce.sh [--recipe cpu|gpu] [--systems "baseline sgnet sla"] [--seeds "1"]
#                                  [--train-subset train|train-middle|train-high] [--updates N] [--epochs E]
#                                  [--batch-size B] [--lr LR] [--max-length P] [--eval-split valid]
#                                  [--data work/race/bin] [--out results/race] [--tag NAME] [--jobs N]
#                                  [--readme FILE] [--checkpoints work/checkpoints/race] [--max-hours H]
#                                  [--pretrained work/minilm]
#
# Systems: baseline (roberta_baseline_small), sgnet (roberta_sgnet_small, dual aggregation, alpha 0.5), sla
# (roberta_sla_small), and SG-Net's components as rows of their own: sgnet_alone (the syntax-guided layer
# alone, alpha 0: H-bar = H'), sgnet_nomask (the same extra layer attending to every token: the
# parameter-matched control), sgnet_random_trees (random trees over the same words; needs data-prep/race.sh
# --random-trees). With one SDOI layer the ranking head's <s> sees no parse, so sgnet, sgnet_nomask and
# sgnet_random_trees are the same model (docs/methods.md); sgnet_2layers (--sgnet-layers 2, beyond the paper)
# lets the parse reach <s>, and sgnet_2layers_nomask is its control.
# --recipe gpu is the paper's: --fp16, inputs cut to 384 WordPieces (--max-length; the model keeps MiniLM's 512
# position embeddings), lr 1e-5, batch 16, 3 epochs of --train-subset (updates
# from its size), scored on valid. --recipe cpu (default) is a budget that fits 2 cores: RACE-M only
# (train-middle, scored on valid-middle), inputs cut to 128, lr 1e-4, batch 16, --updates 400 (6,400 questions
# drawn at random from the 25,421, about 45 minutes a run on one core); at lr 1e-5 (the paper's) MiniLM-L6 stays
# at chance for 800 updates. A small budget decides nothing about SG-Net.
# Adam (0.9, 0.98), eps 1e-6, weight decay 0.01, 6% warm-up then linear decay, no validation during training:
# the last checkpoint is scored, so dev is never used to choose. A finished run (its .eval.json) is skipped;
# a stopped one resumes from its checkpoint_last.pt (saved every 50 updates); one made with other options (or
# scored on another split) stops the script before anything trains. --jobs N trains N runs side by
# side, the cores split among them. Results go to results/race, the summary's table into examples/race/README.md's
# race-summary block (results/race_gpu and race-gpu-summary for --recipe gpu; with --out, into a README only
# if --readme is given). --max-hours H stops each training after H hours (fairseq's --stop-time-hours: a
# lease's limit); the summary then reports the updates reached, read from the training log.
# A folder or file you name is taken from where you run the script; the defaults are in the checkout.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RECIPE=cpu
SYSTEMS="baseline sgnet sla"
SEEDS="1"
TRAIN_SUBSET=""
UPDATES=""
EPOCHS=""
BSZ=""
LR=""
MAXPOS=""
EVAL_SPLIT=""
DATA=$ROOT/work/race/bin
PRETRAINED=$ROOT/work/minilm
RES=default
README_MD=default
CKPTS=work/checkpoints/race
TAG=""
JOBS=1
MAX_HOURS=0
source "$ROOT/data-prep/common.sh"  # atomic, keep_log, hide_paths, require_gpu, threads_per_job, need_value, console_scripts
while [ $# -gt 0 ]; do
  case $1 in
    --recipe) need_value "$@"; RECIPE=$2; shift 2 ;;
    --systems) need_value "$@"; SYSTEMS=$2; shift 2 ;;
    --seeds) need_value "$@"; SEEDS=$2; shift 2 ;;
    --train-subset) need_value "$@"; TRAIN_SUBSET=$2; shift 2 ;;
    --updates) need_value "$@"; UPDATES=$2; shift 2 ;;
    --epochs) need_value "$@"; EPOCHS=$2; shift 2 ;;
    --batch-size) need_value "$@"; BSZ=$2; shift 2 ;;
    --lr) need_value "$@"; LR=$2; shift 2 ;;
    --max-length) need_value "$@"; MAXPOS=$2; shift 2 ;;
    --eval-split) need_value "$@"; EVAL_SPLIT=$2; shift 2 ;;
    --data) need_value "$@"; DATA=$(from_caller "$2"); shift 2 ;;
    --out) need_value "$@"; RES=$(from_caller "$2"); shift 2; [ "$README_MD" != default ] || README_MD="" ;;
    --readme) need_value "$@"; README_MD=$(from_caller "$2"); shift 2 ;;
    --checkpoints) need_value "$@"; CKPTS=$(from_caller "$2"); shift 2 ;;
    --tag) need_value "$@"; need_name "$@"; TAG=$2_; shift 2 ;;
    --jobs) need_value "$@"; JOBS=$2; shift 2 ;;
    --max-hours) need_value "$@"; MAX_HOURS=$2; shift 2 ;;
    --pretrained) need_value "$@"; PRETRAINED=$(from_caller "$2"); shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
no_quick_study
export PATH="$ROOT/.venv/bin:$PATH" PYTHONWARNINGS=ignore
console_scripts
cd "$ROOT"
EXTRA=()
case $RECIPE in
  gpu) require_gpu race; EXTRA=(--fp16); : "${BSZ:=16}" "${LR:=1e-5}" "${MAXPOS:=384}" "${EPOCHS:=3}" \
       "${TRAIN_SUBSET:=train}" "${EVAL_SPLIT:=valid}" ;;
  cpu) EXTRA=(--cpu); : "${BSZ:=16}" "${LR:=1e-4}" "${MAXPOS:=128}" "${TRAIN_SUBSET:=train-middle}" \
       "${EVAL_SPLIT:=valid-middle}"; [ -n "$EPOCHS" ] || : "${UPDATES:=400}" ;;
  *) die "--recipe must be cpu or gpu" ;;
esac
need_int --batch-size "$BSZ" 1
need_int --max-length "$MAXPOS" 8
need_int --jobs "$JOBS" 1
need_ints --seeds "$SEEDS"
[[ $MAX_HOURS =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--max-hours takes a number of hours, got '$MAX_HOURS'"
[ -f "$DATA/label/$TRAIN_SUBSET.label" ] || die "$DATA/label/$TRAIN_SUBSET.label: no such split (prepare with data-prep/race.sh)"
[ -f "$DATA/label/$EVAL_SPLIT.label" ] || die "$DATA/label/$EVAL_SPLIT.label: no such split"
if [ -z "$UPDATES" ]; then
  need_int --epochs "$EPOCHS" 1
  n=$(wc -l < "$DATA/label/$TRAIN_SUBSET.label")
  UPDATES=$(( (n + BSZ - 1) / BSZ * EPOCHS ))
fi
need_int --updates "$UPDATES" 1
BLOCK=race-summary
[ "$RECIPE" = cpu ] || BLOCK=race-gpu-summary
[ "$RES" != default ] || RES=results/race$([ "$RECIPE" = cpu ] || echo _gpu)
[ "$README_MD" != default ] || README_MD=examples/race/README.md
[ -z "$README_MD" ] || need_block "$README_MD" "$BLOCK"

system_args() {
  case $1 in
    baseline) echo "--arch roberta_baseline_small" ;;
    sgnet) echo "--arch roberta_sgnet_small" ;;
    sgnet_alone) echo "--arch roberta_sgnet_small --sgnet-alpha 0" ;;
    sgnet_nomask) echo "--arch roberta_sgnet_small --sgnet-mask none" ;;
    sgnet_random_trees) echo "--arch roberta_sgnet_small --heads-suffix randheads" ;;
    sgnet_2layers) echo "--arch roberta_sgnet_small --sgnet-layers 2" ;;
    sgnet_2layers_nomask) echo "--arch roberta_sgnet_small --sgnet-layers 2 --sgnet-mask none" ;;
    sla) echo "--arch roberta_sla_small" ;;
    *) die "unknown system $1 (baseline, sgnet, sgnet_alone, sgnet_nomask, sgnet_random_trees, sgnet_2layers," \
         "sgnet_2layers_nomask, sla)" ;;
  esac
}
for s in $SYSTEMS; do system_args "$s" > /dev/null; done

run_keys() {  # run_keys SYSTEM SEED: the fairseq options that make this run what it is (fairseq_syntax/studies/run_options.py)
  local keys=(seed="$2" lr="$LR" batch_size="$BSZ" max_update="$UPDATES" max_input_length="$MAXPOS"
              train_subset="$TRAIN_SUBSET" fp16=$([ "$RECIPE" = gpu ] && echo True || echo False))
  # shellcheck disable=SC2046
  mapfile -t -O ${#keys[@]} keys < <(flag_keys $(system_args "$1"))
  printf '%s\n' "${keys[@]}"
}
# before anything trains: every finished run was made with these options and scored on this split, and every
# stopped one trained with them so far; else stop, naming the file and what differs
HINT="Give another --tag (or --out and --checkpoints), or remove that run's results and checkpoints to train it again"
for seed in $SEEDS; do for system in $SYSTEMS; do
  name=$TAG${system}_seed$seed
  mapfile -t keys < <(run_keys "$system" "$seed")
  if [ -f "$RES/$name.eval.json" ]; then
    same_run "$RES/$name.train.log.gz" "$HINT" "${keys[@]}"
    python -c 'import sys
from fairseq_syntax.studies.result_files import read_json
path, asked, hint = sys.argv[1:]
try:
    split = read_json(path).get("split")
except ValueError as err:
    sys.exit(f"error: {err}. {hint}")
except AttributeError:
    sys.exit(f"error: {path}: not a JSON object. {hint}")
sys.exit(split != asked and f"error: {path}: scored on {split}; this call asks --eval-split {asked}. {hint}")' \
      "$RES/$name.eval.json" "$EVAL_SPLIT" "$HINT"
  else
    ck=$CKPTS/$name; [[ $ck = /* ]] || ck=$ROOT/$ck
    same_run "$ck/train.log" "$HINT" "${keys[@]}"
  fi
done; done

mkdir -p "$RES"
[ -f "$PRETRAINED/model.pt" ] || fairseq-syntax-convert-bert --out "$PRETRAINED"
U=$(fairseq-syntax-user-dir)
THREADS=$(threads_per_job "$JOBS")

finetune() {  # finetune SYSTEM SEED
  local system=$1 seed=$2 name ck start shown
  name=$TAG${system}_seed$seed
  [ -f "$RES/$name.eval.json" ] && { log "[race] skip $name (done)"; return 0; }
  ck=$CKPTS/$name
  [[ $ck = /* ]] || ck=$ROOT/$ck
  mkdir -p "$ck"
  lock_run "$ck" || return 1
  mapfile -t start < <(fine_tune_start "$ck" "$PRETRAINED")
  log "[race] $name: $UPDATES updates of $BSZ on $TRAIN_SUBSET ($RECIPE recipe, $MAXPOS positions, lr $LR)"
  # shellcheck disable=SC2046
  OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS fairseq-train "$DATA" --user-dir "$U" \
    --task syntax_sentence_ranking $(system_args "$system") --layernorm-eps 1e-12 "${start[@]}" \
    --criterion sentence_ranking --num-classes 4 --init-token 0 --separator-token 2 --max-option-length 128 \
    --max-positions 512 --max-input-length "$MAXPOS" --shorten-method truncate --required-batch-size-multiple 1 \
    --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-6 --weight-decay 0.01 --clip-norm 0.0 \
    --lr "$LR" --lr-scheduler polynomial_decay --warmup-updates $((UPDATES * 6 / 100)) \
    --total-num-update "$UPDATES" --max-update "$UPDATES" --batch-size "$BSZ" --dropout 0.1 \
    --attention-dropout 0.1 --seed "$seed" --train-subset "$TRAIN_SUBSET" --disable-validation \
    --save-interval-updates 50 --keep-interval-updates 1 --no-epoch-checkpoints --save-dir "$ck" \
    --log-format simple --log-interval 10 --num-workers 1 --stop-time-hours "$MAX_HOURS" "${EXTRA[@]}" \
    >> "$ck/train.log" 2>&1 \
    || { log "[race] $name: training failed, see $ck/train.log"; return 1; }
  OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS fairseq-syntax-race-eval "$DATA" \
    --path "$ck/checkpoint_last.pt" --split "$EVAL_SPLIT" --batch-size 16 \
    $([ "$RECIPE" = gpu ] && echo --fp16 || echo --cpu) --json "$ck/eval.json" \
    --predictions "$ck/pred.jsonl" > "$ck/eval.txt" 2> "$ck/eval.log" \
    || { log "[race] $name: evaluation failed, see $ck/eval.log"; return 1; }
  atomic "$RES/$name.pred.jsonl.gz" gzip -9 -n -c "$ck/pred.jsonl"
  keep_log "$ck/train.log" "$RES/$name.train.log.gz" "$(dirname "$ck")" "<checkpoints>"
  cp "$ck/eval.txt" "$RES/$name.eval.txt.tmp" && mv "$RES/$name.eval.txt.tmp" "$RES/$name.eval.txt"
  shown=$(sed -e "$(hide_paths "$(dirname "$ck")" "<checkpoints>")" <<< "$ck/checkpoint_last.pt") || return 1
  shown=${shown#./}  # inside the checkout: relative to it, as the committed results are
  python - "$ck/eval.json" "$RES/$name.eval.json" "$system" "$seed" "$RECIPE" "$UPDATES" "$BSZ" "$LR" "$MAXPOS" \
    "$TRAIN_SUBSET" "$ck/train.log" "$shown" <<'EOF'
import json, os, re, sys
src, dst, system, seed, recipe, updates, bsz, lr, maxpos, subset, log, shown = sys.argv[1:]
r = json.load(open(src))
r["checkpoint"] = shown  # written as the train log's paths are (keep_log)
reached = [int(x) for x in re.findall(r"num_updates[ =](\d+)", open(log, errors="replace").read())]
device = re.findall(r"\| INFO \| fairseq.utils \| rank\s+0: capabilities = .* ; total memory = .* ; name = (.*)", open(log, errors="replace").read())
r.update(system=system, seed=int(seed), recipe=recipe, updates=int(updates), batch_size=int(bsz), lr=float(lr),
         max_positions=int(maxpos), train_subset=subset, updates_reached=max(reached, default=None),
         device=device[-1].strip() if device else "cpu")
tmp = dst + ".tmp"
json.dump(r, open(tmp, "w"), indent=1)
os.replace(tmp, dst)
EOF
  cat "$ck/eval.txt" >&2
}

for seed in $SEEDS; do
  for system in $SYSTEMS; do
    pool_start "$JOBS" finetune "$system" "$seed"
  done
done
pool_wait
[ "$POOL_FAILED" = 0 ] || die "some runs failed or were stopped; run again to resume"
readme=()
[ -z "$README_MD" ] || readme=(--readme "$README_MD" --block "$BLOCK")
python examples/race/summarize.py --results "$RES" --tag "${TAG%_}" --figure "$RES/${TAG}question_length.png" "${readme[@]}"
