# Helpers shared by the data-prep scripts (sourced, not run).
# A stage runs once: its stamp under $OUT/.stamps marks it complete, and every file it
# writes goes through a temporary name, so a stopped run resumes at the stage it was in.

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# stage NAME COMMAND...: run COMMAND unless stage NAME is already complete
stage() {
  local name=$1; shift
  mkdir -p "$OUT/.stamps"
  if [ -e "$OUT/.stamps/$name" ]; then
    log "skip $name (done)"
    return 0
  fi
  log "start $name"
  local t0=$SECONDS
  "$@"
  touch "$OUT/.stamps/$name"
  log "done  $name ($((SECONDS - t0))s)"
}

# atomic OUTFILE COMMAND...: COMMAND writes to stdout; OUTFILE appears only when it succeeds
atomic() {
  local out=$1; shift
  "$@" > "$out.tmp.$$" || { rm -f "$out.tmp.$$"; die "failed while writing $out"; }
  mv -f "$out.tmp.$$" "$out"
}

# same_lines A B: both files have the same number of lines
same_lines() {
  local a b
  a=$(wc -l < "$1"); b=$(wc -l < "$2")
  [ "$a" = "$b" ] || die "$1 has $a lines but $2 has $b"
}

# no_empty FILE: name the first empty line, if any
no_empty() {
  local n
  n=$(grep -n -m1 -v '[^[:space:]]' "$1" | cut -d: -f1 || true)
  [ -z "$n" ] || die "$1:$n: empty line (the parser needs one sentence per line)"
}

find_venv_bin() {
  local root; root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  if [ -x "$root/.venv/bin/python" ]; then echo "$root/.venv/bin"; else dirname "$(command -v python3)"; fi
}
