"""One writer at a time: advisory locks (flock) on a lock file that also names who holds it.

The lock lasts while the holding process, or a child it passed the lock to, lives; a killed run leaves no lock
behind that would need removing by hand.
"""
from __future__ import annotations

import fcntl
import os
import sys
import time


class Held(Exception):
    """Another process holds the lock; the text is what it wrote about itself."""


class FileLock:
    """``path`` locked by this process, exclusively or shared; ``holder`` names it inside the file."""

    def __init__(self, path: str, shared: bool = False, wait: bool = False, on_wait=None):
        self.path = path
        self.fh = open(path, "a+")
        try:
            mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
            try:
                fcntl.flock(self.fh, mode | fcntl.LOCK_NB)
            except BlockingIOError:
                if not wait:
                    raise Held(self.holder()) from None
                if on_wait is not None:
                    on_wait(self.holder())
                fcntl.flock(self.fh, mode)
        except BaseException:
            self.fh.close()
            raise

    def holder(self) -> str:
        self.fh.seek(0)
        return self.fh.read().strip()

    def claim(self, who: str) -> None:
        """Write who holds it (after taking it exclusively)."""
        self.fh.seek(0)
        self.fh.truncate()
        self.fh.write(f"pid {os.getpid()}, {who}, started {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        self.fh.flush()

    def fileno(self) -> int:
        """For ``subprocess``'s ``pass_fds``: a child keeps the lock while it runs."""
        return self.fh.fileno()

    def release(self) -> None:
        self.fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


# the shell entry point that started this program (data-prep/multi30k.sh ...), taken from the environment once,
# so that the programs it starts in turn do not inherit its name
ENTRY = os.environ.pop("FAIRSEQ_SYNTAX_ENTRY", "")


def program() -> str:
    """The entry point's name, as a lock's holder says it."""
    return ENTRY or os.path.basename(sys.argv[0])
