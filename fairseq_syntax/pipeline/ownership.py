"""What the project may delete or write into: only what it wrote, known by a mark or a name it gives.

A folder data-prep writes whole (``bin/``, ``bin.tmp/``) carries the file ``.written-by-fairseq-syntax``; a
prepared ``--out`` names its corpus in ``.corpus``; a work folder of shards holds only names the project gives.
Anything else is the user's: it stops the run, named, and stays as it was.
"""
from __future__ import annotations

import os
import re
import shutil

from .atomic import write_text
from .messages import Stop

OWNED = ".written-by-fairseq-syntax"
CORPUS_MARK = ".corpus"
_CLAIM_TMP = re.compile(re.escape(CORPUS_MARK) + r"\.tmp\d+")  # atomic_path's temporary of a claim


def owned_or_absent(path: str, out: str) -> None:
    """``path`` is absent, or a folder data-prep made (its mark, or an older version's ``out`` with records)."""
    if not os.path.lexists(path):
        return
    if not os.path.islink(path) and os.path.isdir(path) and (
            os.path.isfile(os.path.join(path, OWNED)) or os.path.isdir(os.path.join(out, ".stamps"))):
        return
    raise Stop(f"{path} exists and was not written by data-prep; nothing there is deleted: move it away or give "
               f"another --out")


def remove_owned(path: str, out: str) -> None:
    owned_or_absent(path, out)
    if os.path.lexists(path):
        shutil.rmtree(path)


def fresh_dir(path: str, out: str) -> str:
    """An empty folder ``path``, marked as data-prep's (an older one of data-prep's is removed first)."""
    remove_owned(path, out)
    os.makedirs(path)
    open(os.path.join(path, OWNED), "w").close()
    return path


def install_dir(tmp: str, dest: str, out: str) -> None:
    """``tmp`` (from :func:`fresh_dir`) takes the place of ``dest``, which must be data-prep's or absent."""
    remove_owned(dest, out)
    os.rename(tmp, dest)


def mark_owned(path: str) -> None:
    """A folder a tool fills in place (LAMBADA's ``bin/``) is data-prep's from its start."""
    os.makedirs(path, exist_ok=True)
    open(os.path.join(path, OWNED), "a").close()


def claim_out(out: str, corpus: str, keep=(".lock",)) -> None:
    """``out`` is new, or this corpus's. A folder another corpus's preparation made, or one holding anything
    data-prep did not write, is refused before any work: its ``bin/`` would be replaced and its files
    overwritten."""
    mark = os.path.join(out, CORPUS_MARK)
    if os.path.isfile(mark):
        with open(mark, encoding="utf-8") as fh:
            have = fh.read().rstrip("\n")
        half = not have and all(n in keep or n == CORPUS_MARK or _CLAIM_TMP.fullmatch(n) for n in os.listdir(out))
        if have != corpus and not half:
            if not have:
                raise Stop(f"{out}: an empty {CORPUS_MARK} beside files data-prep did not write; nothing there is "
                           "deleted or overwritten: move them away or give another --out")
            raise Stop(f"{out} was prepared by {have}, not {corpus}; one folder holds one corpus: give another --out")
        if not half:
            return
        # an empty mark alone: a claim cut short (a full disk at the very start) is this project's own, made again
    if os.path.isdir(os.path.join(out, ".stamps")):
        raise Stop(f"{out} holds stage records that do not name their corpus (an older version's): give another "
                   f"--out, or remove {out}/.stamps to prepare {corpus} there from the start")
    for name in sorted(os.listdir(out)):
        if _CLAIM_TMP.fullmatch(name):  # a claim's temporary, cut short: ours
            os.remove(os.path.join(out, name))
            continue
        if name not in keep and name != CORPUS_MARK:
            raise Stop(f"{out}/{name} exists and was not written by data-prep; nothing there is deleted or "
                       f"overwritten: move it away or give another --out")
    write_text(mark, corpus + "\n")  # whole or not at all


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
