"""Write-then-rename, so that a stopped or failed step never leaves a half-written final file."""
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
