"""What a stage's record holds: a fingerprint of its inputs and the SHA-1 of every file it wrote.

The formats are those of the records data-prep has always written (``sha1sum``'s lines), so a folder prepared by
an earlier version keeps its finished stages.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from typing import Callable

from .atomic import write_text
from .messages import Stop
from .ownership import remove_own_folder


def sha1_file(path: str) -> str:
    return file_digest(path, "sha1")


def file_digest(path: str, algorithm: str) -> str:
    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _sum_line(digest: str, path: str) -> str:
    """``sha1sum``'s line, its escaping of a name with a backslash or a line break included."""
    if "\\" in path or "\n" in path:
        return "\\" + digest + "  " + path.replace("\\", "\\\\").replace("\n", "\\n") + "\n"
    return f"{digest}  {path}\n"


def _not_a_file(path: str) -> Stop:
    return Stop(f"{path}: not a regular file (a FIFO, socket, device or broken link); inputs must be files")


def _files_under(folder: str) -> list[str]:
    """Every file under ``folder``, hidden ones too and through symlinks (as the readers read them), in byte
    order; anything else that is not a folder is refused before anything reads it (it would hang or change)."""
    found = []
    for top, dirs, files in os.walk(folder, followlinks=True):
        for name in dirs + files:
            path = os.path.join(top, name)
            try:
                mode = os.stat(path).st_mode
            except OSError:
                raise _not_a_file(path) from None
            if stat.S_ISREG(mode):
                found.append(path)
            elif not stat.S_ISDIR(mode):
                raise _not_a_file(path)
    return sorted(found, key=os.fsencode)


def fingerprint(paths, exclude: str | None = None) -> str:
    """One digest of the inputs: a folder counts every file under it, a missing path counts as absent, so a
    changed input is seen whatever its date. Each path counts as the file it names (``dir/``, ``./dir`` and
    ``/abs/dir`` are one input), not as it was typed. Files under ``exclude`` (the preparation's own ``--out``,
    which a user may put inside an input folder) are its outputs, never its inputs."""
    own = os.path.join(os.path.abspath(exclude), "") if exclude else None
    lines = []
    for p in paths:
        if not p:
            continue
        p = os.path.abspath(p)
        if os.path.isdir(p):
            lines += [_sum_line(sha1_file(f), f) for f in _files_under(p) if not (own and f.startswith(own))]
        elif os.path.isfile(p):
            lines.append(f"{sha1_file(p)}  {p}\n")
        elif os.path.lexists(p):
            raise _not_a_file(p)
        else:
            lines.append(f"absent {p}\n")
    return hashlib.sha1("".join(lines).encode("utf-8", "surrogateescape")).hexdigest()


def _skipped(name: str) -> bool:
    return name == ".lock" or name.endswith(".lock")


def out_files(out: str) -> dict[str, tuple[int, int]]:
    """Every file under ``out`` a stage may have written (records and lock files left out), with its size and
    time: what changed between two listings is what a stage's command wrote."""
    found = {}
    for top, dirs, files in os.walk(out):
        rel = os.path.relpath(top, out)
        dirs[:] = [d for d in dirs if not _skipped(d) and not (rel == "." and d == ".stamps")]
        for name in files:
            path = os.path.join(top, name)
            if _skipped(name) or os.path.islink(path) or not os.path.isfile(path):
                continue
            st = os.stat(path)
            found[os.path.normpath(os.path.join(rel, name))] = (st.st_size, st.st_mtime_ns)
    return found


def outputs_of(out: str, before: dict, after: dict, previous: str, declared=()) -> list[str]:
    """A stage's ``output:`` lines: the files its command wrote, those of its previous record still there, and
    every file under the folders it declared (a command that finds its work done writes nothing, yet its
    outputs are the stage's)."""
    paths = {p for p, v in after.items() if before.get(p) != v}
    paths.update(path for _, path in recorded_outputs(previous))
    for folder in declared:
        root = os.path.join(out, folder)
        if os.path.isdir(root):
            for top, _, files in os.walk(root):
                paths.update(os.path.relpath(os.path.join(top, f), out) for f in files if not _skipped(f))
    lines = []
    for path in sorted(paths, key=os.fsencode):
        full = os.path.join(out, path)
        if path and os.path.isfile(full):
            lines.append(f"output: {sha1_file(full)}  {path}")
    return lines


def recorded_outputs(record: str) -> list[tuple[str, str]]:
    return [tuple(line[len("output: "):].split("  ", 1)) for line in record.splitlines()
            if line.startswith("output: ") and "  " in line]


def outputs_changed(out: str, record: str) -> str | None:
    """None if every output the record lists is there unchanged; else what is not."""
    for digest, path in recorded_outputs(record):
        full = f"{out}/{path}"
        if not os.path.isfile(full):
            return f"{full} is missing"
        if sha1_file(full) != digest:
            return f"{full} changed since it was written"
    return None


def read_own_json(path: str) -> "dict | None":
    """A record the project wrote (a plan, a provenance), or None where it is missing or unreadable: what it
    vouched for is then made again, never trusted."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def plan_folder(folder: str, plan: dict, ours, differs: "Callable[[dict], str | None]", merging: bool = True) -> None:
    """Make ``folder`` a shard folder for ``plan``, its plan.json written before any shard, so that no shard is
    ever without a record of what it was made for. Shards made for another plan (``differs`` names how, or None
    where the difference does not matter) are stale: a run that merges discards them (only files ``ours`` covers;
    anything else stops it); a job-array task (``merging=False``) refuses, as its siblings may be parsing the
    folder's own input, and leaves a plan-less folder to the sibling writing it."""
    os.makedirs(folder, exist_ok=True)
    meta = os.path.join(folder, "plan.json")
    have = read_own_json(meta)
    if have == plan:
        return
    if have is None:
        why = "have no plan of what they were made for" if merging and os.listdir(folder) else None
    else:
        what = differs(have)
        why = f"were made for {what}" if what else None
        if why and not merging:
            raise RuntimeError(f"{meta}: the shards there {why} ({have}); a job-array task never discards them: "
                               f"run once without --shard to start over")
    if why:
        print(f"{folder}: its shards {why}; discarding them and starting over", file=sys.stderr)
        remove_own_folder(folder, ours)
        os.makedirs(folder)
    write_text(meta, json.dumps(plan, indent=1, sort_keys=True) + "\n")
