#!/usr/bin/env bash
# The main job: prepare Multi30k EN->DE with source dependency heads, train a small SG-Net
# (transformer_sgnet_small) for a short fixed budget on the CPU, and score test_2016_flickr
# with fairseq-generate and sacreBLEU. About 15 minutes on 2 cores after scripts/setup.sh.
#
#   bash scripts/train_multi30k.sh [--updates N] [--out DIR]
#
# Offline: the raw files are read from $MULTI30K_DIR, or from the local copies of the corpora
# (fairseq_syntax/local_data.py: $FAIRSEQ_SYNTAX_DATA/multi30k); otherwise they are downloaded. Re-running skips
# finished data-prep stages and resumes training from checkpoint_last.pt.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
UPDATES=250
WORK=$ROOT/work
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case $1 in
    --updates|--out)
      [ $# -ge 2 ] && [ -n "$2" ] && [[ $2 != --* ]] || die "$1 needs a value; --help lists the options"
      if [ "$1" = --updates ]; then UPDATES=$2; else WORK=$2; fi; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[[ $UPDATES =~ ^[1-9][0-9]{0,17}$ ]] || die "--updates takes a whole number of at least 1, got '$UPDATES'"
export PATH="$ROOT/.venv/bin:$PATH"
export PYTHONWARNINGS=ignore
: "${MULTI30K_DIR:=}"
if [ -z "$MULTI30K_DIR" ]; then
  MULTI30K_DIR=$(python -c "from fairseq_syntax.local_data import local_copy; print(local_copy('multi30k/train.en.gz') or '')")
  MULTI30K_DIR=${MULTI30K_DIR%/train.en.gz}
fi
LOCAL=(); [ -n "$MULTI30K_DIR" ] && LOCAL=(--local-dir "$MULTI30K_DIR")
DATA=$WORK/multi30k
CKPT=$WORK/checkpoints/multi30k_sgnet
USER_DIR=$(fairseq-syntax-user-dir)
T0=$SECONDS

bash "$ROOT/data-prep/multi30k.sh" "${LOCAL[@]}" --out "$DATA" --parser spacy --workers 2

echo "[main] training transformer_sgnet_small for $UPDATES updates" >&2
fairseq-train "$DATA/bin" --user-dir "$USER_DIR" --task syntax_guided_translation -s en -t de \
  --arch transformer_sgnet_small --share-all-embeddings \
  --optimizer adam --adam-betas '(0.9, 0.98)' --clip-norm 0.0 \
  --lr 1e-3 --lr-scheduler inverse_sqrt --warmup-updates 150 \
  --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
  --max-tokens 4096 --max-update "$UPDATES" --seed 1 \
  --save-dir "$CKPT" --no-epoch-checkpoints --log-format simple --log-interval 25 \
  2>&1 | grep --line-buffered -E "train_inner|valid on|Loaded checkpoint|done training|Error|error" >&2

echo "[main] fairseq-generate on test_2016_flickr (beam 5, detokenized sacreBLEU)" >&2
fairseq-generate "$DATA/bin" --user-dir "$USER_DIR" --task syntax_guided_translation -s en -t de \
  --gen-subset test --path "$CKPT/checkpoint_last.pt" --beam 5 --batch-size 128 \
  --remove-bpe --tokenizer moses --moses-no-escape --scoring sacrebleu \
  > "$CKPT/generate-test.txt" 2> "$CKPT/generate-test.log" \
  || { tail -20 "$CKPT/generate-test.log" >&2; exit 1; }
echo "[main] done in $(( (SECONDS - T0) / 60 )) min $(( (SECONDS - T0) % 60 )) s;" \
  "hypotheses in $CKPT/generate-test.txt" >&2
grep -c '^H-' "$CKPT/generate-test.txt" | sed 's/^/[main] sentences translated: /' >&2
tail -1 "$CKPT/generate-test.txt"
