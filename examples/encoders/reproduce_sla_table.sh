#!/usr/bin/env bash
# The SLA paper's Table 1 on MiniLM-L6: roberta_baseline, WLA, SLA and SG-Net fine-tuned on CoLA (MCC, dev),
# SST-2 (accuracy, dev) and CoNLL-2003 NER (entity F1, test), 5 seeds each, with SG-Net's and SLA's controls
# on CoNLL-2003, the one task where SG-Net's parse reaches the output (examples/encoders/README.md).
#
#   bash examples/encoders/reproduce_sla_table.sh [--tasks "CoNLL-2003 CoLA SST-2"] [--seeds "1 2 3 4 5"]
#                                  [--systems "baseline wla sla sgnet sgnet_nomask sgnet_random_trees sla_random_trees"]
#                                  [--updates-CoLA N] [--updates-SST-2 N] [--updates-CoNLL-2003 N] [--validations 10]
#                                  [--jobs 2] [--fp16]
#                                  [--out results/encoders_table1] [--checkpoints work/checkpoints/encoders_table1]
#                                  [--data-root work] [--pretrained work/minilm] [--readme FILE]
#                                  [--status | --summary-only | --no-summary]
#
# Systems: baseline (roberta_baseline_small), wla (roberta_sla_small --sla-mask window: |i-j| <= 3), sla
# (roberta_sla_small: tree distance <= 3), sgnet (roberta_sgnet_small), and on CoNLL-2003 only the controls
# sgnet_nomask (the same extra layer attending to every token: parameter-matched), sgnet_random_trees and
# sla_random_trees (random trees over the same words, data-prep/conll2003.sh --random-trees 1).
# Protocol (the paper's, at our size): batch 32, Adam, lr 5e-5 with 6 % warm-up and linear decay, --validations
# on dev evenly over the run (each also a checkpoint to resume from), the best checkpoint by dev MCC /
# accuracy / entity F1 scored on dev (CoLA, SST-2) or test (CoNLL-2003) with fairseq-syntax-sentence-eval /
# fairseq-syntax-ner-eval, which also write one line per sentence for the paired tests. The runs go in the order:
# the first seed's baseline of every task (the budget is checked on its dev curve before the rest of the table
# spends it), then seeds x tasks x systems, --jobs side by side (a slot is refilled as soon as any run ends), the
# cores split among them. A stopped run resumes from its checkpoint_last.pt (saved at every validation); a finished
# one (its .eval.json in --out) is skipped; one made with other options stops the script before anything trains,
# naming what differs. --fp16 trains in half precision on a GPU, into their own folders.
# Each finished SLA or WLA run also keeps its mean gate per layer on the scored split ({run}.gates.json, from its
# best checkpoint; the SLA paper's Figure 2). Then examples/encoders/summarize_sla_table.py writes summary.json,
# summary.md, the figures and the sla-table block of examples/encoders/README.md (--readme FILE for another file;
# with --out, only if --readme is given).
# --status says where each run stands (a run in training: its best dev score so far and about how long it has
# left at its pace) and how many runs of each task are not finished; --summary-only summarizes the finished runs and trains nothing (it does
# compute the gates of a finished run that lacks them, from --checkpoints).
# Data: --data-root/conll2003 and --data-root/glue/{CoLA,SST-2}; a finished preparation there is used as it was
# made (with the random trees on CoNLL-2003), else data-prep prepares the full corpus from ../shared/data.
# A folder or file you name is taken from where you run the script; the defaults are in the checkout.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TASKS="CoNLL-2003 CoLA SST-2"
SEEDS="1 2 3 4 5"
SYSTEMS="baseline wla sla sgnet sgnet_nomask sgnet_random_trees sla_random_trees"
ALL_SEEDS=$SEEDS ALL_SYSTEMS=$SYSTEMS  # the table's, whatever a call asks for
# the budgets (examples/encoders/README.md, "Budget"): CoLA 9 epochs, SST-2 2, CoNLL-2003 5, of 32 sentences an update
declare -A UPDATES=([CoLA]=2400 [SST-2]=4200 [CoNLL-2003]=2200)
JOBS=2
VALIDATIONS=10
DATA_ROOT=work
PRETRAINED=work/minilm
RES=default
CKPTS=default
README_MD=default
MODE=train
FP16=()
source "$ROOT/data-prep/common.sh"  # need_value, atomic, keep_log, need_int, same_run, flag_keys, threads_per_job, pool_start
while [ $# -gt 0 ]; do
  case $1 in
    --tasks) need_value "$@"; TASKS=$2; shift 2 ;;
    --seeds) need_value "$@"; SEEDS=$2; shift 2 ;;
    --systems) need_value "$@"; SYSTEMS=$2; shift 2 ;;
    --updates-CoLA) need_value "$@"; UPDATES[CoLA]=$2; shift 2 ;;
    --updates-SST-2) need_value "$@"; UPDATES[SST-2]=$2; shift 2 ;;
    --updates-CoNLL-2003) need_value "$@"; UPDATES[CoNLL-2003]=$2; shift 2 ;;
    --jobs) need_value "$@"; JOBS=$2; shift 2 ;;
    --validations) need_value "$@"; VALIDATIONS=$2; shift 2 ;;
    --out) need_value "$@"; RES=$(from_caller "$2"); shift 2; [ "$README_MD" != default ] || README_MD="" ;;
    --checkpoints) need_value "$@"; CKPTS=$(from_caller "$2"); shift 2 ;;
    --data-root) need_value "$@"; DATA_ROOT=$(from_caller "$2"); shift 2 ;;
    --pretrained) need_value "$@"; PRETRAINED=$(from_caller "$2"); shift 2 ;;
    --readme) need_value "$@"; README_MD=$(from_caller "$2"); shift 2 ;;
    --status) MODE=status; shift ;;
    --summary-only) MODE=summary; shift ;;
    --no-summary) MODE=no-summary; shift ;;
    --fp16) FP16=(--fp16); shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ "$MODE" = status ] || no_quick_study
export PATH="$ROOT/.venv/bin:$PATH" PYTHONWARNINGS=ignore
[ -z "${CONLL2003_DIR:-}" ] || CONLL2003_DIR=$(from_caller "$CONLL2003_DIR")  # as named from the caller's folder
[ -z "${GLUE_DIR:-}" ] || GLUE_DIR=$(from_caller "$GLUE_DIR")  # as named from the caller's folder
cd "$ROOT"
need_int --jobs "$JOBS" 1; need_ints --seeds "$SEEDS"; need_int --validations "$VALIDATIONS" 1
for t in CoLA SST-2 CoNLL-2003; do need_int "--updates-$t" "${UPDATES[$t]}" "$VALIDATIONS"; done
for t in $TASKS; do case $t in CoLA|SST-2|CoNLL-2003) ;; *) die "unknown task $t (CoLA, SST-2, CoNLL-2003)" ;; esac; done
SUFFIX=""; [ ${#FP16[@]} -eq 0 ] || SUFFIX=_fp16
[ "$RES" != default ] || RES=$ROOT/results/encoders_table1$SUFFIX
[ "$CKPTS" != default ] || CKPTS=work/checkpoints/encoders_table1$SUFFIX
[[ $CKPTS = /* ]] || CKPTS=$ROOT/$CKPTS
[[ $DATA_ROOT = /* ]] || DATA_ROOT=$ROOT/$DATA_ROOT
[[ $PRETRAINED = /* ]] || PRETRAINED=$ROOT/$PRETRAINED
[ "$README_MD" != default ] || { README_MD=""; [ -n "$SUFFIX" ] || README_MD=$ROOT/examples/encoders/README.md; }
console_scripts
[ -z "$README_MD" ] || need_block "$README_MD" sla-table-summary

system_args() {  # system_args SYSTEM: what the system's fairseq-train command differs in
  case $1 in
    baseline) echo "--arch roberta_baseline_small" ;;
    wla) echo "--arch roberta_sla_small --sla-mask window" ;;
    sla) echo "--arch roberta_sla_small" ;;
    sgnet) echo "--arch roberta_sgnet_small" ;;
    sgnet_nomask) echo "--arch roberta_sgnet_small --sgnet-mask none" ;;
    sgnet_random_trees) echo "--arch roberta_sgnet_small --heads-suffix randheads" ;;
    sla_random_trees) echo "--arch roberta_sla_small --heads-suffix randheads" ;;
    *) die "unknown system $1 (baseline wla sla sgnet sgnet_nomask sgnet_random_trees sla_random_trees)" ;;
  esac
}
is_control() { case $1 in sgnet_nomask|sgnet_random_trees|sla_random_trees) return 0 ;; *) return 1 ;; esac; }
task_args() {  # task_args TASK: the task, criterion and best-checkpoint metric
  case $1 in
    CoNLL-2003) echo "--task syntax_token_labeling --criterion token_labeling --best-checkpoint-metric f1" ;;
    CoLA) echo "--task syntax_sentence_prediction --init-token 0 --num-classes 2 --criterion sentence_prediction"\
               "--report-mcc --best-checkpoint-metric mcc" ;;
    SST-2) echo "--task syntax_sentence_prediction --init-token 0 --num-classes 2 --criterion sentence_prediction"\
                "--report-mcc --best-checkpoint-metric accuracy" ;;
  esac
}
metric_of() { case $1 in CoNLL-2003) echo f1 ;; CoLA) echo mcc ;; SST-2) echo accuracy ;; esac; }
prepared_in() { if [ "$1" = CoNLL-2003 ]; then echo "$DATA_ROOT/conll2003"; else echo "$DATA_ROOT/glue/$1"; fi; }
data_of() { echo "$(prepared_in "$1")/bin"; }
for s in $SYSTEMS; do system_args "$s" > /dev/null; done
runs=()  # the order they train in: the first seed's baselines (the budget check), then seeds, tasks, systems
declare -A queued=()
queue() { [ -n "${queued[$*]:-}" ] || { runs+=("$*"); queued[$*]=1; }; }
read -r -a seeds <<< "$SEEDS"
if [[ " $SYSTEMS " = *" baseline "* ]]; then for task in $TASKS; do queue "$task" baseline "${seeds[0]}"; done; fi
for seed in "${seeds[@]}"; do for task in $TASKS; do for system in $SYSTEMS; do
  { is_control "$system" && [ "$task" != CoNLL-2003 ]; } || queue "$task" "$system" "$seed"
done; done; done
[ ${#runs[@]} -gt 0 ] || die "no run in this plan (--tasks '$TASKS', --systems '$SYSTEMS'): the controls run on CoNLL-2003 only"
# the folder's protocol.json (summarize_sla_table.py reads it): written by the call that makes the table, and every
# later call must fit it (budgets, validations, seeds, systems), so a trial never trains into a table
if [ "$MODE" != status ] && { [ "$MODE" != summary ] || [ -f "$RES/protocol.json" ]; }; then
  python3 - "$RES/protocol.json" "$VALIDATIONS" "$TASKS" "$SEEDS" "$SYSTEMS" "$ALL_SEEDS" "$ALL_SYSTEMS" \
    "CoLA=${UPDATES[CoLA]}" "SST-2=${UPDATES[SST-2]}" "CoNLL-2003=${UPDATES[CoNLL-2003]}" <<'EOF' || exit 1
import json, os, sys
path, validations, tasks, seeds, systems, all_seeds, all_systems, *budgets = sys.argv[1:]
split = {"CoLA": "valid", "SST-2": "valid", "CoNLL-2003": "test"}
budget = {t: int(n) for t, n in (b.split("=") for b in budgets)}
seeds, all_seeds = [int(x) for x in seeds.split()], [int(x) for x in all_seeds.split()]
systems, all_systems = systems.split(), all_systems.split()
if not os.path.exists(path):
    prot = {"tasks": {t: {"max_update": budget[t], "split": split[t]} for t in split},
            "systems": all_systems if set(systems) <= set(all_systems) else systems,
            "seeds": all_seeds if set(seeds) <= set(all_seeds) else seeds, "validations": int(validations)}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as fh:
        fh.write(json.dumps(prot, indent=1) + "\n")
    os.replace(path + ".tmp", path)
    sys.exit(0)
with open(path) as fh:
    prot = json.load(fh)
bad = [f"--updates-{t} {budget[t]}: the table's runs train {prot['tasks'][t]['max_update']} updates (max_update)"
       for t in tasks.split() if budget[t] != prot["tasks"][t]["max_update"]]
if int(validations) != prot.get("validations", 10):
    bad.append(f"--validations {validations}: the table's runs validate {prot.get('validations', 10)} times")
bad += [f"seed {s} is not one of the table's ({', '.join(map(str, prot['seeds']))})" for s in seeds
        if s not in prot["seeds"]]
bad += [f"system {s} is not one of the table's" for s in systems if s not in prot["systems"]]
if bad:
    sys.exit(f"error: {'; '.join(bad)} ({path}); a trial goes to its own --out (and --checkpoints)")
EOF
fi

has_gates() { case $1 in wla|sla|sla_random_trees) return 0 ;; *) return 1 ;; esac; }
scored_split() { if [ "$1" = CoNLL-2003 ]; then echo test; else echo valid; fi; }
sla_gates() {  # sla_gates TASK SYSTEM SEED: a finished SLA or WLA run's mean gate per layer (the paper's Figure 2)
  local name=$1_$2_seed$3; local ck=$CKPTS/$name/checkpoint_best.pt out=$RES/$name.gates.json
  has_gates "$2" && [ -f "$RES/$name.eval.json" ] && [ ! -f "$out" ] && [ -f "$ck" ] || return 0
  OMP_NUM_THREADS=${THREADS:-1} MKL_NUM_THREADS=${THREADS:-1} python examples/encoders/plot_sla_gates.py \
    --checkpoint "$ck" --data "$(data_of "$1")" --split "$(scored_split "$1")" --run-json "$out" > /dev/null \
    2> "$CKPTS/$name/gates.log" || { log "[table] $name: the gate values failed, see $CKPTS/$name/gates.log"; return 1; }
}
summarize() {
  local readme=(); [ -z "$README_MD" ] || readme=(--readme "$README_MD")
  for r in "${runs[@]}"; do sla_gates $r; done  # runs finished by an older copy of this script
  local planned=() task system seed
  for r in "${runs[@]}"; do read -r task system seed <<< "$r"; planned+=("${task}_${system}_seed$seed"); done
  python examples/encoders/summarize_sla_table.py --results "$RES" --planned "${planned[@]}" "${readme[@]}"
}
if [ "$MODE" = summary ]; then summarize; exit 0; fi
if [ "$MODE" = status ]; then
  # a mistyped --out or --checkpoints would otherwise read as a table nothing has started on
  [ -d "$RES" ] || log "[table] note: $RES does not exist: no run has finished there"
  [ -d "$CKPTS" ] || log "[table] note: $CKPTS does not exist: no run has started there"
  declare -A left=()
  for r in "${runs[@]}"; do
    read -r task system seed <<< "$r"
    name=${task}_${system}_seed$seed log=$CKPTS/$name/train.log m=$(metric_of "$task")
    [ -f "$RES/$name.eval.json" ] || left[$task]=$((${left[$task]:-0} + 1))
    if [ -f "$RES/$name.eval.json" ]; then
      state="finished: $(python -m fairseq_syntax.studies.result_files describe "$RES/$name.eval.json" \
        "$m {$m:.2f} on {split}, best at update {best_update}")"
    elif [ -f "$log" ]; then  # the last update logged (train_inner: num_updates=N, valid: num_updates N)
      last=$({ grep -oE 'num_updates[ =][0-9]+' "$log" || echo 0; } | tail -n 1 | grep -oE '[0-9]+$')
      state="training: update $last of ${UPDATES[$task]}$(python - "$log" "$m" "${UPDATES[$task]}" \
        "$last" <<'EOF'
import sys
from fairseq_syntax.studies.early_stopping import fairseq_best, validations
from fairseq_syntax.studies.training_log import pace
log, metric, total, done = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
vals = validations(log, metric, by="update")
if vals:
    best = fairseq_best(vals)
    print(f", best dev {metric} so far {vals[best][0]} at update {best}", end="")
if (p := pace(log)) and done < total:
    print(f"; about {round((total - done) * p[0] / 60)} min left at its pace of the last {p[1]} updates", end="")
EOF
)"
    else state="not started"; fi
    echo "$task $system seed $seed: $state"
  done
  todo=0 rest=""
  for task in $TASKS; do
    [ -z "${left[$task]:-}" ] || { todo=$((todo + left[$task])); rest+="${rest:+, }$task ${left[$task]}"; }
  done
  echo "finished $((${#runs[@]} - todo)) of ${#runs[@]}${rest:+; not finished: $rest}"
  exit 0
fi

run_keys() {  # run_keys TASK SYSTEM SEED: the options that make this run what it is (fairseq_syntax/studies/run_options.py)
  local keys=(seed="$3" lr=5e-05 batch_size=32 max_update="${UPDATES[$1]}"
              validate_interval_updates=$((UPDATES[$1] / VALIDATIONS))
              fp16=$([ ${#FP16[@]} -gt 0 ] && echo True || echo False))
  # shellcheck disable=SC2046
  mapfile -t -O ${#keys[@]} keys < <(flag_keys $(system_args "$2"))
  printf '%s\n' "${keys[@]}"
}
HINT="Give another --out and --checkpoints, or remove that run's results and checkpoints to train it again"
for r in "${runs[@]}"; do  # before anything is prepared or trains
  read -r task system seed <<< "$r"
  name=${task}_${system}_seed$seed
  mapfile -t keys < <(run_keys "$task" "$system" "$seed")
  for log in "$RES/$name.train.log.gz" "$CKPTS/$name/train.log"; do
    [ -f "$log" ] && { same_run "$log" "$HINT" "${keys[@]}"; break; }
  done
done

[ -f "$PRETRAINED/model.pt" ] || fairseq-syntax-convert-bert --out "$PRETRAINED"
for task in $TASKS; do
  out=$(prepared_in "$task")
  if [ -f "$out/.stamps/binarize" ] && { [ "$task" != CoNLL-2003 ] || [ -f "$out/bin/input0/test.randheads.bin" ]; }; then
    # used as it was made: data-prep would redo it with the defaults below (a slice would become the corpus)
    log "[table] $task: using the data prepared in $out"
  elif [ "$task" = CoNLL-2003 ]; then
    bash data-prep/conll2003.sh --conll-dir "${CONLL2003_DIR:-$ROOT/../shared/data/conll2003}" --out "$out" \
      --pretrained "$PRETRAINED" --parser spacy --workers "$JOBS" --random-trees 1 --wait
  else
    bash data-prep/glue.sh --task "$task" --glue-dir "${GLUE_DIR:-$ROOT/../shared/data/glue}" --out "$out" \
      --pretrained "$PRETRAINED" --parser spacy --workers "$JOBS" --wait
  fi
done
U=$(fairseq-syntax-user-dir)
THREADS=$(threads_per_job "$JOBS")
mkdir -p "$RES"
# the best checkpoint is scored on the device it trained on, in its precision, as fairseq-train chose it: the GPU
# where torch sees one (in fp16 for --fp16), else the CPU
EVAL_ON=(); [ ${#FP16[@]} -eq 0 ] || EVAL_ON=(--fp16)

finetune() {  # finetune TASK SYSTEM SEED
  local task=$1 system=$2 seed=$3 n=${UPDATES[$1]} name ck start data every split eval metric
  name=${task}_${system}_seed$seed
  [ -f "$RES/$name.eval.json" ] && { sla_gates "$@"; log "[table] skip $name (done)"; return 0; }
  ck=$CKPTS/$name data=$(data_of "$task") every=$((n / VALIDATIONS))
  mkdir -p "$ck"
  lock_run "$ck" || return 1
  mapfile -t start < <(fine_tune_start "$ck" "$PRETRAINED")
  [ "${#start[@]}" -gt 2 ] && log "[table] $name: $n updates of 32, validation every $every"
  # shellcheck disable=SC2046
  OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS fairseq-train "$data" --user-dir "$U" $(task_args "$task") \
    $(system_args "$system") "${start[@]}" --maximize-best-checkpoint-metric --max-positions 512 \
    --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-6 --weight-decay 0.01 --clip-norm 1.0 \
    --lr 5e-5 --lr-scheduler polynomial_decay --warmup-updates $((n * 6 / 100)) --total-num-update "$n" \
    --max-update "$n" --batch-size 32 --required-batch-size-multiple 1 --dropout 0.1 --attention-dropout 0.1 \
    --seed "$seed" --validate-interval-updates "$every" --save-interval-updates "$every" \
    --keep-interval-updates 1 --no-epoch-checkpoints --save-dir "$ck" --log-format simple --log-interval 50 \
    --num-workers 1 "${FP16[@]}" >> "$ck/train.log" 2>&1 \
    || { log "[table] $name: training failed or was stopped, see $ck/train.log"; return 1; }
  grep -q "done training" "$ck/train.log" \
    || { log "[table] $name: stopped before update $n; run again to resume"; return 1; }
  split=$(scored_split "$task") eval=fairseq-syntax-sentence-eval metric=$(metric_of "$task")
  [ "$task" = CoNLL-2003 ] && eval=fairseq-syntax-ner-eval
  OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS "$eval" "$data" --path "$ck/checkpoint_best.pt" --split "$split" \
    "${EVAL_ON[@]}" --json "$ck/eval.json" --predictions "$ck/pred.jsonl" \
    > "$ck/eval.txt" 2> "$ck/eval.log" || { log "[table] $name: evaluation failed, see $ck/eval.log"; return 1; }
  atomic "$RES/$name.pred.jsonl.gz" gzip -9 -n -c "$ck/pred.jsonl"
  keep_log "$ck/train.log" "$RES/$name.train.log.gz" "$CKPTS" "<checkpoints>" "$PRETRAINED" "<pretrained>" \
    "$DATA_ROOT" "<data>"
  atomic "$RES/$name.eval.txt" cat "$ck/eval.txt"
  python - "$ck/eval.json" "$RES/$name.eval.json" "$task" "$system" "$seed" "$n" "$metric" "$ck/train.log" <<'EOF'
import json, os, re, sys
from fairseq_syntax.studies.early_stopping import fairseq_best, validations
src, dst, task, system, seed, n, metric, log = sys.argv[1:]
r = json.load(open(src))
best = fairseq_best(validations(log, metric, by="update"))  # the best checkpoint's update
device = re.findall(r"rank\s+0: capabilities = .* ; name = (.*)", open(log, errors="replace").read())
r.pop("checkpoint", None)  # a machine path; the run is named by task, system and seed
r.update(task=task, system=system, seed=int(seed), max_update=int(n), metric=metric,
         best_update=best, device=device[-1].strip() if device else "cpu")
json.dump(r, open(dst + ".tmp", "w"), indent=1)
os.replace(dst + ".tmp", dst)
EOF
  rm -f "$ck"/checkpoint_last.pt "$ck"/checkpoint_*_*.pt  # the best stays (the gate figure, the NER hub)
  log "[table] $name: $(head -n 1 "$RES/$name.eval.txt")"
  sla_gates "$@"
}

for r in "${runs[@]}"; do
  # shellcheck disable=SC2086
  pool_start "$JOBS" finetune $r
done
pool_wait
[ "$POOL_FAILED" = 0 ] || { log "[table] some runs failed or were stopped; run again to resume"; exit 1; }
[ "$MODE" = no-summary ] || summarize
