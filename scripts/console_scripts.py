"""Write wrappers for the console scripts into a directory, for a machine where nothing is installed.

On a machine with torch and fairseq's source on PYTHONPATH but no pip install, neither ``fairseq-train`` nor this
package's ``fairseq-syntax-*`` commands exist, and often no ``python``.
The study runners call those names; ``examples/studies/runs.py: console_env`` puts this directory first on
PATH instead of each script spelling ``python3 -m`` for every command:

    python3 scripts/console_scripts.py DIR

One wrapper per entry point of setup.py (read, not imported: nothing here needs the package installed), one for
each of fairseq's commands the scripts use, and ``python``, each running with the interpreter that ran this.
"""
from __future__ import annotations

import ast
import os
import shlex
import stat
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # this checkout's package, installed or not
from fairseq_syntax.pipeline.atomic import atomic_path  # noqa: E402
FAIRSEQ = {
    "fairseq-preprocess": "fairseq_cli.preprocess:cli_main",
    "fairseq-train": "fairseq_cli.train:cli_main",
    "fairseq-generate": "fairseq_cli.generate:cli_main",
    "fairseq-interactive": "fairseq_cli.interactive:cli_main",
}


def entry_points(setup_py: str) -> dict[str, str]:
    """{command: "module:function"} of the ``console_scripts`` list in ``setup_py``'s setup() call."""
    with open(setup_py, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), setup_py)
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "console_scripts":
                    specs = ast.literal_eval(value)
                    return {name.strip(): target.strip() for name, target in (s.split("=", 1) for s in specs)}
    raise ValueError(f"{setup_py}: no console_scripts entry points")


def wrapper(python: str, target: str, name: str) -> str:
    module, function = target.split(":")
    code = f"import sys; sys.argv[0] = {name!r}; from {module} import {function}; sys.exit({function}())"
    return f"#!/bin/sh\nexec {shlex.quote(python)} -c {shlex.quote(code)} \"$@\"\n"


def write(path: str, text: str) -> None:
    """Whole or not at all: side-by-side scripts may write the same wrapper at once."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, os.stat(tmp).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print(__doc__.strip(), file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    out = argv[0]
    os.makedirs(out, exist_ok=True)
    python = sys.executable
    commands = {**FAIRSEQ, **entry_points(os.path.join(ROOT, "setup.py"))}
    for name, target in commands.items():
        write(os.path.join(out, name), wrapper(python, target, name))
    write(os.path.join(out, "python"), f"#!/bin/sh\nexec {shlex.quote(python)} \"$@\"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
