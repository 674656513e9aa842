"""Write-then-rename, so that a stopped or failed step never leaves a half-written final file."""
import json
import os
from contextlib import contextmanager


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
