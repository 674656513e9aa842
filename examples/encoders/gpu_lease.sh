#!/usr/bin/env bash
# The SLA table (reproduce_sla_table.sh --fp16) on a lent GPU, whose calls carry at most 64 MiB each: the lifted
# MiniLM weights (91 MB) go over in two halves, in two calls of one warm machine, and are joined there and checked
# against their SHA-256 before anything trains.
#
#   here:    bash examples/encoders/gpu_lease.sh pack [--tasks "CoNLL-2003 CoLA SST-2"]
#            # after the table's data are prepared here; prints the two calls' carry lists and sizes
#   call 1:  bash examples/encoders/gpu_lease.sh first           # builds fairseq, keeps the first half in /tmp
#   call 2:  bash examples/encoders/gpu_lease.sh second SECONDS [reproduce_sla_table.sh options]
#            # (within the 30 s the machine stays warm) joins and checks the weights, unpacks the data, trains
#            # (default options: --fp16 --jobs 8) and packs every finished run, and the logs of the runs the limit
#            # stopped, into $OUT/table1_lease.tgz, all within SECONDS: give the call's timeout_s, less a few
#            # seconds (the training stops 40 s before it, for its runs to stop and the pack to be made)
#   here:    bash examples/encoders/gpu_lease.sh back TGZ [--into DIR]
#            # checks every run that finished there, then copies them all into their table or none
#            # (fairseq_syntax/studies/bring_back.py: a run there already must come back identical), and
#            # summarizes it: results/encoders_table1_fp16 for --fp16 runs (a table of its own: the summary does not
#            # mix fp16 and fp32 runs), results/encoders_table1 for runs without --fp16, which are the fp32 table's
#            # own protocol on a faster device (each run's eval.json names its device)
#
# Runs already in that table travel with the checkout and are skipped there; a run the time limit stops is lost
# with the machine (checkpoints are too large to bring back). --work DIR (before the command): where
# the data, the weights and the packed files are (default work).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/data-prep/common.sh"  # die, log, need_value, need_int, atomic
WORK=$ROOT/work
if [ "${1:-}" = --work ]; then need_value "$@"; WORK=$2; shift 2; fi
[[ $WORK = /* ]] || WORK=$PWD/$WORK
LEASE=$WORK/gpu-lease
HALF=${GPU_LEASE_TMP:-/tmp/gpu-lease}  # where call 1 leaves the first half for call 2
LIMIT=$((64 * 1024 * 1024))
cd "$ROOT"

checkout_bytes() {  # what every call carries anyway: the tracked files and the untracked ones git does not ignore
  git ls-files -z --cached --others --exclude-standard | python3 -c 'import os, sys
print(sum(os.path.getsize(p) for p in sys.stdin.read().split("\0") if p and os.path.isfile(p)))'
}
bytes_of() { find "$@" -type f -printf '%s\n' | awk '{n += $1} END {print n + 0}'; }  # files' bytes, as the device tool counts
fairseq_here() {  # the device's fairseq (built by .device/device-fairseq.sh), or one already importable
  if [ -f .device/device-fairseq.sh ]; then
    # shellcheck disable=SC1091
    source .device/device-fairseq.sh setup || die "building fairseq with .device/device-fairseq.sh failed"
  else
    python3 -c 'import fairseq' 2> /dev/null || die "no fairseq: carry .device (bash ../shared/tools/device-fairseq.sh fetch, here)"
  fi
}

case "${1:-}" in
pack)
  tasks="CoNLL-2003 CoLA SST-2"
  if [ "${2:-}" = --tasks ]; then need_value "${@:2}"; tasks=$3; fi
  [[ $LEASE/ = "$ROOT"/* ]] || die "--work $WORK: outside the checkout, where the device tool cannot carry it"
  [ -f .device/device-fairseq.sh ] && [ -d .device/whl ] \
    || die "no .device here: run 'bash ../shared/tools/device-fairseq.sh fetch' first"
  [ -f "$WORK/minilm/model.pt" ] || die "$WORK/minilm/model.pt: no lifted weights (fairseq-syntax-convert-bert --out $WORK/minilm)"
  data=(minilm/dict.txt minilm/vocab.txt minilm/bert_config.json)
  for t in $tasks; do
    case $t in CoNLL-2003) d=conll2003 ;; CoLA|SST-2) d=glue/$t ;; *) die "unknown task $t (CoLA, SST-2, CoNLL-2003)" ;; esac
    [ -f "$WORK/$d/.stamps/binarize" ] || die "$WORK/$d: not prepared; the reproduction prepares it before it trains" \
      "(bash examples/encoders/reproduce_sla_table.sh, here), or data-prep/conll2003.sh and data-prep/glue.sh as it does"
    [ "$t" != CoNLL-2003 ] || [ -f "$WORK/$d/bin/input0/test.randheads.bin" ] \
      || die "$WORK/$d: prepared without --random-trees 1"
    data+=("$d/bin" "$d/.stamps")
    # the scored split's words, which fairseq-syntax-ner-eval writes beside each sentence's predictions
    if [ "$t" = CoNLL-2003 ]; then
      [ -f "$WORK/$d/raw/test.words" ] || die "$WORK/$d/raw/test.words: missing; prepare the data again (data-prep/conll2003.sh)"
      data+=("$d/raw/test.words")
    fi
  done
  mkdir -p "$LEASE"
  tmp=$(mktemp -d "$LEASE/.pack.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$WORK/minilm" && sha256sum model.pt) > "$tmp/model.sha256"
  tar czf "$tmp/data.tgz" -C "$WORK" "${data[@]}"
  # the weights split where the two calls carry the same: call 1 carries the fairseq wheels, call 2 the data
  model=$(bytes_of "$WORK/minilm/model.pt")
  cut=$(((model + $(bytes_of "$tmp/data.tgz" "$tmp/model.sha256" .device/device-fairseq.sh) - $(bytes_of .device)) / 2))
  [ "$cut" -gt 0 ] && [ "$cut" -lt "$model" ] || cut=$((model / 2))
  head -c "$cut" "$WORK/minilm/model.pt" > "$tmp/minilm.part00"
  tail -c +$((cut + 1)) "$WORK/minilm/model.pt" > "$tmp/minilm.part01"
  for f in minilm.part00 minilm.part01 model.sha256 data.tgz; do mv -f "$tmp/$f" "$LEASE/$f"; done
  base=$(checkout_bytes)
  one=$((base + $(bytes_of .device "$LEASE/minilm.part00")))
  two=$((base + $(bytes_of .device/device-fairseq.sh "$LEASE/minilm.part01" "$LEASE/model.sha256" "$LEASE/data.tgz")))
  L=$(realpath --relative-to=. "$LEASE")
  echo "call 1 carries $((one / 1048576)) MiB (limit 64): carry [\".device\", \"$L/minilm.part00\"]"
  echo "call 2 carries $((two / 1048576)) MiB (limit 64): carry [\".device/device-fairseq.sh\", \"$L/minilm.part01\", \"$L/model.sha256\", \"$L/data.tgz\"]"
  [ "$one" -le "$LIMIT" ] && [ "$two" -le "$LIMIT" ] || die "a call would carry more than 64 MiB"
  ;;
first)
  [ -f "$LEASE/minilm.part00" ] || die "$LEASE/minilm.part00: not carried (call 1 carries .device and it)"
  fairseq_here
  mkdir -p "$HALF"
  atomic "$HALF/minilm.part00" cat "$LEASE/minilm.part00"
  log "the first half is in $HALF; make call 2 within the 30 s the machine stays warm"
  ;;
second)
  [ $# -ge 2 ] || die "second SECONDS [reproduce_sla_table.sh options]: how long the whole call may take"
  need_int SECONDS "$2" 1
  started=$(date +%s) limit=$2; shift 2
  opts=("$@"); [ ${#opts[@]} -gt 0 ] || opts=(--fp16 --jobs 8)
  out=${OUT:-}
  [ -n "$out" ] && [ -d "$out" ] || die "\$OUT: not a folder; the device tool brings back what is written there"
  [ -f "$HALF/minilm.part00" ] || die "$HALF/minilm.part00: not here; call 1 ('first') must run on this machine, and this call within 30 s of it"
  for f in minilm.part01 model.sha256 data.tgz; do [ -f "$LEASE/$f" ] || die "$LEASE/$f: not carried"; done
  fairseq_here
  want=$(cut -d' ' -f1 "$LEASE/model.sha256")
  if [ ! -f "$WORK/minilm/model.pt" ] || [ "$(sha256sum < "$WORK/minilm/model.pt" | cut -d' ' -f1)" != "$want" ]; then
    mkdir -p "$WORK/minilm"
    cat "$HALF/minilm.part00" "$LEASE/minilm.part01" > "$WORK/minilm/model.pt.tmp"
    got=$(sha256sum < "$WORK/minilm/model.pt.tmp" | cut -d' ' -f1)
    [ "$got" = "$want" ] || { rm -f "$WORK/minilm/model.pt.tmp"; die "the joined weights' SHA-256 is $got, not $want: a half is damaged or from another pack; pack and carry both again"; }
    mv "$WORK/minilm/model.pt.tmp" "$WORK/minilm/model.pt"
  fi
  tar xzf "$LEASE/data.tgz" -C "$WORK" --skip-old-files
  res=$LEASE/results ck=$LEASE/checkpoints
  mkdir -p "$res"
  # the runs finished in the table these options train for travel with the checkout, and are skipped here
  table=results/encoders_table1; [[ " ${opts[*]} " = *" --fp16 "* ]] && table=results/encoders_table1_fp16
  [ ! -d "$table" ] || cp -n "$table"/*_seed*.* "$res"/ 2> /dev/null || true
  echo "$table" > "$LEASE/table"  # where 'back' puts these runs
  pack() {  # every finished run, and the logs of the runs in training, whole or not at all
    local logs=() l
    for l in "$ck"/*/train.log; do [ -f "$l" ] && logs+=("${l#"$WORK"/}"); done
    # tar's 1 is a log that grew while it was read
    local part=$out/table1_lease.tgz.part$BASHPID  # the packer's, or the last one's: a stopped packer's tar can run on
    { tar czf "$part" --warning=no-file-changed -C "$WORK" gpu-lease/table gpu-lease/results \
        ${logs[@]+"${logs[@]}"} || [ $? = 1 ]; } && mv -f "$part" "$out/table1_lease.tgz"
  }
  # what the set-up left, less the time to stop the runs (timeout's 20 s grace) and to pack them
  train_s=$((limit - ($(date +%s) - started) - 40))
  [ "$train_s" -ge 10 ] || die "SECONDS $limit leaves $train_s s to train after the set-up and the packing; give more"
  log "training for at most $train_s s (of the call's $limit): reproduce_sla_table.sh ${opts[*]}"
  # packed every minute as well: a call the device tool stops (its lease spent) still brings back what finished
  ( while sleep 60; do pack || true; done ) & packer=$!
  rc=0
  timeout --signal=INT --kill-after=20 "$train_s" bash examples/encoders/reproduce_sla_table.sh "${opts[@]}" \
    --data-root "$WORK" --pretrained "$WORK/minilm" --out "$res" --checkpoints "$ck" --no-summary || rc=$?
  kill "$packer" 2> /dev/null; wait "$packer" 2> /dev/null || true
  [ "$rc" = 0 ] || log "the reproduction ended with $rc (124: the time limit); packing what finished"
  pack || die "packing the finished runs into $out/table1_lease.tgz failed"
  rm -f "$out"/table1_lease.tgz.part*
  log "$(find "$res" -name '*.eval.json' | wc -l) finished runs in $out/table1_lease.tgz"
  ;;
back)
  [ $# -ge 2 ] || die "back TGZ [--into DIR]: the table1_lease.tgz a 'second' call brought back"
  tgz=$2; into=""; shift 2
  while [ $# -gt 0 ]; do
    case $1 in
      --into) need_value "$@"; into=$2; shift 2 ;;
      *) die "back: unknown option $1 (back TGZ [--into DIR])" ;;
    esac
  done
  [ -f "$tgz" ] || die "$tgz: no such file"
  gzip -t "$tgz" 2> /dev/null || die "$tgz: a damaged or cut archive; bring it back again"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  tar xzf "$tgz" -C "$tmp" --no-same-owner --no-same-permissions gpu-lease/table 2> /dev/null || true
  table=results/encoders_table1_fp16  # archives from before 'second' named their table were all fp16
  named=$tmp/gpu-lease/table
  [ ! -L "$named" ] || die "$tgz: its gpu-lease/table is a link; not an archive of 'second'"
  [ ! -f "$named" ] || table=$(head -n 1 "$named")
  case $table in results/encoders_table1|results/encoders_table1_fp16) ;;
    *) die "$tgz: names the table '$table', neither results/encoders_table1 nor results/encoders_table1_fp16" ;; esac
  fp16=(); want=fp32; [ "$table" = results/encoders_table1 ] || { fp16=(--fp16); want=fp16; }
  [ -n "$into" ] || into=$table
  # every run checked (names, protocol, precision, finite scores, complete files) before any file is copied
  PYTHONPATH=$ROOT python3 -m fairseq_syntax.studies.bring_back "$tgz" --into "$into" --precision "$want" \
    || exit 1
  [ -n "$(find "$into" -name '*.eval.json' -print -quit)" ] || die "$tgz: no run finished there"
  # into the fp32 table (its own folder): the summary writes its block of examples/encoders/README.md too
  where=(--out "$into"); [ "$into" != results/encoders_table1 ] || where=()
  bash examples/encoders/reproduce_sla_table.sh "${fp16[@]}" --summary-only "${where[@]}" --checkpoints "$tmp/none"
  ;;
*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; [ -z "${1:-}" ] || [ "$1" = -h ] || [ "$1" = --help ] || exit 1 ;;
esac
