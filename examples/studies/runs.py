"""What every study runner (``examples/*/reproduce.py``) does around its trainings.

Before anything trains, each run already started or finished is checked against the options of this call
(``same_run``), so a finished run is never skipped, nor a stopped one resumed, under options it was not trained
with; quick mode and a missing README block are refused up front. A run's checkpoint folder has one trainer at a
time (``lock_run``). The commands run from the environment's console scripts, or, where nothing is installed
(a machine with fairseq only on PYTHONPATH), from wrappers written once (``scripts/console_scripts.py``).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

from fairseq_syntax.pipeline.locks import FileLock, Held, program
from fairseq_syntax.local_data import local_copy
from fairseq_syntax.pipeline.logs import ROOT, from_caller
from fairseq_syntax.pipeline.messages import Stop, log
from fairseq_syntax.quick import quick_mode
from . import run_options
from .readme_block import check_block


def no_quick_study() -> None:
    """A study's runs are never trained in quick mode: its trainings stop after 2 updates yet end "done training"
    and would be scored as if of the table's budget."""
    if quick_mode():
        raise Stop("FAIRSEQ_SYNTAX_QUICK is set (the README's quick try: 2 updates a training); a study's runs are "
                   "never trained so: unset it (unset FAIRSEQ_SYNTAX_QUICK)")


def need_block(readme: str, block: str) -> None:
    """The README has the block the summary writes into; asked before anything trains, not after the runs."""
    try:
        check_block(readme, block)
    except ValueError as e:
        raise Stop(f"--readme {e}") from None


def same_run(log_path: str, hint: str, keys: dict) -> None:
    """The run whose fairseq-train log is ``log_path`` (plain or .gz; absent: not started) was trained with
    ``keys``; else stop, naming the log, its line and the option."""
    try:
        problem = run_options.check(log_path, {k: str(v) for k, v in keys.items()})
    except ValueError as e:
        problem = str(e)
    if problem:
        raise Stop(f"{problem}. {hint}" if hint else problem)


def flag_keys(flags: list[str]) -> dict:
    """fairseq-train flags as ``same_run``'s keys (``--sup-lambda 0.3``: sup_lambda=0.3; a flag alone: True);
    --task is left out (its name is every section's _name; the arch tells the runs apart)."""
    keys, i = {}, 0
    while i < len(flags):
        key = flags[i].lstrip("-").replace("-", "_")
        if i + 1 < len(flags) and not flags[i + 1].startswith("--"):
            if key != "task":
                keys[key] = flags[i + 1]
            i += 2
        else:
            keys[key] = "True"
            i += 1
    return keys


def run_lock(ck: str) -> str:
    """The lock file of the run folder ``ck``: taken by lock_run, read by --status."""
    return os.path.join(ck, ".lock")


def lock_run(ck: str) -> FileLock | None:
    """The run folder ``ck``, made if new, is trained by this process only, while it (or the commands it passes
    the lock to) lives; None, logged, where another process holds it: the run is left to that one."""
    os.makedirs(ck, exist_ok=True)
    try:
        lock = FileLock(run_lock(ck))
    except Held as held:
        log(f"{ck}: another process ({held or 'unknown'}) is training this run; left to it")
        return None
    lock.claim(program())
    return lock


def fine_tune_start(ck: str, pretrained: str) -> list[str]:
    """fairseq-train's start options: on from ``ck``/checkpoint_last.pt where a run stopped, else from the
    pretrained model with fresh optimizer, data loader and meters."""
    last = os.path.join(ck, "checkpoint_last.pt")
    if os.path.isfile(last):
        log(f"{os.path.basename(ck)}: resuming from {last}")
        return ["--restore-file", last]
    return ["--restore-file", os.path.join(pretrained, "model.pt"), "--reset-optimizer", "--reset-dataloader",
            "--reset-meters"]


def require_gpu(who: str) -> None:
    """The --fp16 recipes train on a GPU."""
    import torch

    if not torch.cuda.is_available():
        raise Stop(f"[{who}] --fp16 trains on a GPU, and torch sees none here")


def console_env(threads: int | None = None) -> dict:
    """The environment the runs' commands get: this interpreter's console scripts first on PATH (wrappers where
    none is installed), this checkout importable, and ``threads`` CPU threads a command."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    venv = os.path.join(ROOT, ".venv", "bin")
    path = (venv + os.pathsep if os.path.isdir(venv) else "") + env.get("PATH", "")
    if not all(shutil.which(c, path=path) for c in ("python", "fairseq-train", "fairseq-generate",
                                                    "fairseq-syntax-user-dir")):
        wrappers = os.path.join(ROOT, "work", "console-scripts")
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "console_scripts.py"), wrappers], check=True)
        path = wrappers + os.pathsep + path
        env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PATH"] = path
    if threads:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return env


def corpus_dir(env: str, relative: str) -> str | None:
    """A corpus's local folder: ``$env`` taken from where the user is (call it before changing folder), else the local
    copy (fairseq_syntax/local_data.py), else None."""
    return from_caller(os.environ[env]) if os.environ.get(env) else local_copy(relative)


def need_corpus(folder: str | None, env: str, relative: str) -> str:
    if folder is None:
        raise Stop(f"no local copy of {relative}: set {env}, or FAIRSEQ_SYNTAX_DATA to the folder of local corpora")
    return folder


def user_dir() -> str:
    return os.path.join(ROOT, "fairseq_syntax")
