"""Write-then-rename, so that a stopped or failed step never leaves a half-written final file."""
import os
import subprocess
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


def write_text(path: str, text: str) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)


def write_lines(path: str, lines) -> None:
    """``lines`` (each without its line end) into ``path``, one a line."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line + "\n")


def command_output(path: str, argv: list[str], **kwargs) -> None:
    """A command's standard output into ``path``, which appears only if the command succeeds."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        subprocess.run(argv, stdout=fh, check=True, **kwargs)
