"""Write-then-rename, so that a stopped or failed step never leaves a half-written final file."""
import json
import os
import sys
from contextlib import contextmanager
from typing import Callable


@contextmanager
def atomic_path(path: str):
    """Yield a temporary name beside ``path``; it becomes ``path`` only if the block succeeds."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def check_own_folder(folder: str, ours) -> None:
    """Stop, naming it, at a file in a work folder that ``ours`` (a compiled pattern of the names the project
    writes there, temporaries included) does not cover: the folder is removed at the end, and a user's file in it
    must not go with it."""
    for name in sorted(os.listdir(folder)):
        if ours.fullmatch(name) is None:
            raise RuntimeError(f"{os.path.join(folder, name)}: not a file this project wrote; move it out of "
                               f"{folder} and run again")


def remove_own_folder(folder: str, ours) -> None:
    """Remove a work folder the project made, file by file: never a tree it did not check."""
    check_own_folder(folder, ours)
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    os.rmdir(folder)


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
    with atomic_path(meta) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(plan, indent=1, sort_keys=True) + "\n")
