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


# every committed .gz: best compression, no name or time in the header, so the same content gives the same bytes
GZIP = ["gzip", "-9", "-n"]


def command_output(path: str, argv: list[str], **kwargs) -> None:
    """A command's standard output into ``path``, which appears only if the command succeeds."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        subprocess.run([str(a) for a in argv], stdout=fh, check=True, **kwargs)
