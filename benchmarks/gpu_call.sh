#!/usr/bin/env bash
# What one call on a lent GPU runs (the device tool; carry .device and the slices `gpu_matrix.py prepare` made):
# fairseq built there, then one of
#   matrix SECONDS   benchmarks/gpu_matrix.py run: every family against vanilla in fp16, bf16 and fp32 (its cells
#                    start while SECONDS, less 30 s for the packing, last)
#   bf16 SECONDS     benchmarks/gpu_check.sh --bf16: every family's few hundred updates in bf16, finite losses
# and packs what it wrote into $OUT/gpu_call_MODE.tgz (also when the limit cuts the run).
#
#   here:   python benchmarks/gpu_matrix.py prepare --out work/gpu_matrix && bash ../shared/tools/device-fairseq.sh fetch
#   there:  bash benchmarks/gpu_call.sh matrix 420
#           carry: .device work/gpu_matrix/conll2003/bin work/gpu_matrix/glue/SST-2/bin work/gpu_matrix/race/bin
#                  work/gpu_matrix/multi30k/bin work/gpu_matrix/lambada/bin
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
mode=${1:-}; limit=${2:-}
case $mode in matrix|bf16) ;; *) sed -n '2,12p' "$0"; exit 1 ;; esac
[[ $limit =~ ^[1-9][0-9]{0,4}$ ]] || { echo "error: $mode SECONDS: a whole number of seconds" >&2; exit 1; }
[ -n "${OUT:-}" ] && [ -d "$OUT" ] || { echo "error: \$OUT: not a folder (the device tool sets it)" >&2; exit 1; }
started=$SECONDS
# shellcheck disable=SC1091
source .device/device-fairseq.sh setup
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
D=work/gpu_matrix res=$OUT/$mode
mkdir -p "$res"
left=$((limit - (SECONDS - started) - 30))
[ "$left" -ge 30 ] || { echo "error: $limit s leave $left s after fairseq's build; give more" >&2; exit 1; }
rc=0
if [ "$mode" = matrix ]; then
  timeout --signal=INT "$left" python3 benchmarks/gpu_matrix.py run --data-root "$D" --device cuda \
    --budget-s $((left * 3 / 4)) --out "$res" || rc=$?
else
  timeout --signal=INT "$left" bash benchmarks/gpu_check.sh --bf16 --multi30k "$D/multi30k/bin" \
    --cola "$D/glue/SST-2/bin" --lambada "$D/lambada/bin" --race "$D/race/bin" --speed-rounds 0 \
    --out "$res/gpu_check_bf16.md" --logs "$res/logs" || rc=$?
fi
tar czf "$OUT/gpu_call_$mode.tgz" -C "$OUT" "$mode" && rm -rf "$res"
echo "[gpu_call] $mode ended with $rc after $((SECONDS - started)) s; $OUT/gpu_call_$mode.tgz"
