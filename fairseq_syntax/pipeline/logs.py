"""The training logs a study keeps in ``results/``: compressed, with no machine paths in them.

A folder outside the checkout (``--checkpoints``) is written as the name given, the checkout as ``.``, the home
directory as ``~`` (the interpreter's path in a traceback). Each path is replaced as written, never read as a
pattern.
"""
from __future__ import annotations

import os

from .atomic import GZIP, command_output

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def hide_paths(text: str, named=(), root: str = ROOT, home: str | None = None) -> str:
    """``named``: (folder, name) pairs; a folder inside the checkout stays relative to it."""
    home = (os.environ.get("HOME", "") if home is None else home).rstrip("/")
    for folder, name in named:
        folder = os.path.abspath(folder)
        if not (folder + "/").startswith(root + "/"):
            text = text.replace(folder + "/", name + "/").replace(folder, name)
    text = text.replace(root + "/", "./").replace(root, ".")
    return text.replace(home + "/", "~/") if home else text


def keep_log(src: str, dest: str, named=()) -> None:
    """``src`` into ``dest`` (gzip -9 -n, as every committed log), its machine paths hidden."""
    with open(src, encoding="utf-8", errors="surrogateescape") as fh:
        text = hide_paths(fh.read(), [(d, n) for d, n in named])
    command_output(dest, GZIP, input=text.encode("utf-8", "surrogateescape"))


def from_caller(path: str, root: str = ROOT) -> str:
    """A folder or file the user typed, taken from where they are, its ``..`` taken as ``cd`` takes them; one
    inside the checkout is written relative to its root, as the records keep it."""
    here = os.getcwd()
    pwd = os.environ.get("PWD", "")
    if pwd and os.path.isabs(pwd) and os.path.isdir(pwd) and os.path.samefile(pwd, here):
        here = pwd  # the shell's own spelling of where the user is (through symlinks, as cd took them)
    p = os.path.normpath(os.path.join(here, path))
    if p == root:
        return "."
    return os.path.relpath(p, root) if p.startswith(root + "/") else p
