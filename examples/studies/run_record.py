"""What shaped a run, kept beside its results as ``NAME.record.json``: the study, system, seed and recipe, the data
it trained on (a fingerprint of the binarized folder), the split it was scored on and its size, precision, device,
quick mode and the code's version. The reproduce scripts write it when a run is scored; the summaries compare it
with the table's protocol (run_protocol.py), so a run on other data or from other code is named, not averaged in.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

from fairseq_syntax.pipeline.atomic import write_text
from .result_files import read_json
from .run_options import same
from .training_log import training_setup

ROOT = Path(__file__).resolve().parents[2]
FINGERPRINTED = (".idx", ".txt", ".json", ".tsv", ".label")  # what fixes a binarized corpus, without reading its .bin


def data_fingerprint(bin_dir) -> str:
    """SHA-1 over the binarized folder's indexes, dictionaries, labels and records (names and contents), recursively:
    a .idx holds every sentence's length and offset, so another corpus, slice or tokenization changes it; the
    .bin files (hundreds of MB) are not read."""
    h = hashlib.sha1()
    for top, dirs, files in sorted(os.walk(bin_dir)):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(FINGERPRINTED) and not name.startswith("."):
                path = os.path.join(top, name)
                h.update(os.path.relpath(path, bin_dir).encode() + b"\0")
                with open(path, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        h.update(block)
                h.update(b"\0")
    return h.hexdigest()


def code_version() -> str:
    """The checkout's commit, ``+changes`` when the package's code differs from it; the package's version where
    this is no git checkout (an installed wheel, a copy of the files)."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()
        changed = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "fairseq_syntax", "examples"],
                                 capture_output=True, text=True, timeout=30, check=True).stdout.strip()
        return head + ("+changes" if changed else "")
    except (OSError, subprocess.SubprocessError):
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"fairseq-syntax {version('fairseq-syntax')}"
        except PackageNotFoundError:
            return "unknown"


def write_record(path, *, study: str, system: str, seed: int, recipe: dict, data: str, split: str, scored: int,
                 log: str) -> dict:
    """The record of a scored run, written atomically; its training setup read from its log."""
    setup = training_setup(log) or {}
    record = {"study": study, "system": system, "seed": seed, "recipe": recipe,
              "data": data_fingerprint(data), "split": split, "scored": scored,
              "precision": setup.get("precision"), "device": setup.get("device"),
              "quick": bool(setup.get("quick")), "code": code_version()}
    write_text(str(path), json.dumps(record, indent=1) + "\n")
    return record


def record_of(log) -> Path:
    """A run's record, beside its kept training log."""
    log = str(log)
    return Path(log[: -len(".train.log.gz")] + ".record.json" if log.endswith(".train.log.gz") else log + ".record.json")


def record_differences(log, seed: int, recipe: dict, split: str | None = None, data: str | None = None) -> list[str]:
    """What a run's record (where it has one: runs scored before records were kept have none) says against the
    table's seed, recipe, split and data fingerprint, one line each."""
    path = record_of(log)
    if not path.exists():
        return []
    try:
        r = read_json(path, ("seed", "recipe", "split", "data", "quick"))
    except ValueError as e:
        return [str(e)]
    out = []
    if r["seed"] != seed:
        out.append(f"{path.name}: seed {r['seed']}, the name's {seed}")
    out += [f"{path.name}: {k}={r['recipe'][k]}, the table's {k}={v}" for k, v in recipe.items()
            if k in r["recipe"] and not same(r["recipe"][k], str(v))]
    if split is not None and r["split"] != split:
        out.append(f"{path.name}: scored on {r['split']}, the table on {split}")
    if data is not None and r["data"] != data:
        out.append(f"{path.name}: trained on other data (fingerprint {r['data'][:12]}, the table's {data[:12]})")
    if r["quick"]:
        out.append(f"{path.name}: trained with FAIRSEQ_SYNTAX_QUICK set")
    return out
