#!/usr/bin/env bash
# Quality run: the vanilla transformer against transformer_sgnet on Multi30k EN->DE, same small sizes,
# same updates, same seeds; best checkpoint by validation BLEU; test_2016_flickr scored with sacreBLEU
# (BLEU and chrF, signatures printed) and a paired bootstrap test (sacrebleu --paired-bs).
#
#   bash scripts/reproduce_multi30k.sh [--updates N] [--seed S] [--out DIR] [--extra "FLAGS for sgnet"]
#                                      [--parallel] [--name NAME]
#
# --updates 1500 is about an hour per model on 2 cores. --parallel trains the two systems side by side,
# one thread each, so both see the same machine load (fairer, and no slower in total on 2 cores).
# --name tags the sgnet run (default "sgnet") so variants (--extra "--sgnet-learn-alpha") sit side by side. Logs, hypotheses and scores go to
# results/multi30k/ (or --out). Re-running resumes training and skips finished evaluations.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
UPDATES=1500
SEED=1
RES=$ROOT/results/multi30k
SG_EXTRA=""
PARALLEL=0
SG_NAME=sgnet
while [ $# -gt 0 ]; do
  case $1 in
    --updates) UPDATES=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --out) RES=$2; shift 2 ;;
    --extra) SG_EXTRA=$2; shift 2 ;;
    --parallel) PARALLEL=1; shift ;;
    --name) SG_NAME=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 1 ;;
  esac
done
export PATH="$ROOT/.venv/bin:$PATH" PYTHONWARNINGS=ignore
: "${MULTI30K_DIR:=}"
if [ -z "$MULTI30K_DIR" ] && [ -f "$ROOT/../shared/data/multi30k/train.en.gz" ]; then
  MULTI30K_DIR=$ROOT/../shared/data/multi30k
fi
LOCAL=(); [ -n "$MULTI30K_DIR" ] && LOCAL=(--local-dir "$MULTI30K_DIR")
DATA=$ROOT/work/multi30k
U=$(fairseq-syntax-user-dir)
GEN=$ROOT/work/results_multi30k  # fairseq-generate's full output repeats the corpus (S-, T- lines): kept out of git
mkdir -p "$RES" "$GEN"
bash "$ROOT/data-prep/multi30k.sh" "${LOCAL[@]}" --out "$DATA" --parser spacy --workers 2

COMMON=(-s en -t de --share-all-embeddings --optimizer adam --adam-betas '(0.9, 0.98)' --lr 1e-3
  --lr-scheduler inverse_sqrt --warmup-updates 400 --criterion label_smoothed_cross_entropy
  --label-smoothing 0.1 --max-tokens 4096 --max-update "$UPDATES" --seed "$SEED"
  --required-batch-size-multiple 1 --eval-bleu --eval-bleu-args '{"beam": 5, "max_len_a": 1.2, "max_len_b": 10}'
  --eval-bleu-detok moses --eval-bleu-detok-args '{"moses_no_escape": true}' --eval-bleu-remove-bpe
  --best-checkpoint-metric bleu --maximize-best-checkpoint-metric --no-epoch-checkpoints
  --log-format simple --log-interval 50)

run_system() {  # run_system NAME TASK ARCH [extra flags]
  local name=$1 task=$2 arch=$3; shift 3
  local ck=$ROOT/work/checkpoints/multi30k_${name}_seed$SEED
  echo "[reproduce] training $name ($arch, $UPDATES updates, seed $SEED)" >&2
  fairseq-train "$DATA/bin" --user-dir "$U" --task "$task" --arch "$arch" "${COMMON[@]}" "$@" \
    --save-dir "$ck" 2>&1 | tee -a "$RES/train_${name}_seed$SEED.log" \
    | grep --line-buffered -E "valid on|done training|Error" | sed -u "s/^/[$name] /" >&2
  echo "[reproduce] generating test_2016_flickr with $name" >&2
  fairseq-generate "$DATA/bin" --user-dir "$U" --task "$task" -s en -t de --gen-subset test \
    --path "$ck/checkpoint_best.pt" --beam 5 --batch-size 128 --required-batch-size-multiple 1 \
    --remove-bpe --tokenizer moses --moses-no-escape --scoring sacrebleu \
    > "$GEN/generate_${name}_seed$SEED.txt" 2> "$RES/generate_${name}_seed$SEED.log"
  grep '^D-' "$GEN/generate_${name}_seed$SEED.txt" | sed 's/^D-//' | sort -n -k1,1 | cut -f3 \
    > "$RES/hyp_${name}_seed$SEED.de"
  [ "$(wc -l < "$RES/hyp_${name}_seed$SEED.de")" = 1000 ] || { echo "expected 1000 hypotheses" >&2; exit 1; }
}

if [ "$PARALLEL" = 1 ]; then
  export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
  run_system transformer translation transformer_small_vanilla & base_pid=$!
  # shellcheck disable=SC2086
  run_system "$SG_NAME" syntax_guided_translation transformer_sgnet_small $SG_EXTRA & sg_pid=$!
  wait $base_pid || { echo "[reproduce] baseline failed" >&2; exit 1; }
  wait $sg_pid || { echo "[reproduce] $SG_NAME failed" >&2; exit 1; }
else
  run_system transformer translation transformer_small_vanilla
  # shellcheck disable=SC2086
  run_system "$SG_NAME" syntax_guided_translation transformer_sgnet_small $SG_EXTRA
fi

REF=$DATA/raw/test.de  # the raw references, as data-prep copied them (corpus text stays out of results/)
echo "[reproduce] sacreBLEU with paired bootstrap resampling (baseline first)" >&2
sacrebleu "$REF" -i "$RES/hyp_transformer_seed$SEED.de" "$RES/hyp_${SG_NAME}_seed$SEED.de" -m bleu chrf \
  --paired-bs --paired-bs-n 1000 -f text | tee "$RES/scores_${SG_NAME}_seed$SEED.txt"  # (-f json fails on numpy 2 floats)
