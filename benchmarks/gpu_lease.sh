#!/usr/bin/env bash
# Runs of the SLA table moved to a lent GPU and back (calls of at most 64 MiB each): pack, first, second, back.
# Usage: bash benchmarks/gpu_lease.sh --help (benchmarks/gpu_lease.py). There, fairseq is built first (.device).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case " $* " in *" first "*|*" second "*)  # the device's fairseq, built from the wheels carried in .device
  if [ -f "$ROOT/.device/device-fairseq.sh" ]; then
    cd "$ROOT" && source .device/device-fairseq.sh setup || { echo "error: building fairseq failed" >&2; exit 1; }
  fi ;;
esac
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || PY=$(command -v python3) || { echo "error: no Python (run scripts/setup.sh)" >&2; exit 1; }
FAIRSEQ_SYNTAX_ENTRY=gpu_lease.sh exec "$PY" "$ROOT/benchmarks/gpu_lease.py" "$@"
