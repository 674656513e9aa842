"""One writer at a time: advisory locks (flock) on a lock file that also names who holds it.

The lock lasts while the holding process, or a child it passed the lock to, lives; a killed run leaves no lock
behind that would need removing by hand.
"""
from __future__ import annotations

import fcntl
import os
import re
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


def holder_now(path: str) -> str | None:
    """Who holds the lock at ``path`` now (what it wrote of itself), or None where no process does: read without
    taking the lock, so that a trainer starting meanwhile is never turned away. On Linux, from the kernel's table
    of locks: an flock on this file's inode by the process the file names (a lock file outlives its lock, and a
    restarted machine keeps the file); elsewhere, whether the process the file names is alive."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read().strip()
        inode = str(os.stat(path).st_ino)
    except OSError:
        return None
    named = re.match(r"pid (\d+),", text)
    if not named:
        return None
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            table = fh.read()
    except OSError:
        try:
            os.kill(int(named.group(1)), 0)
        except ProcessLookupError:
            return None
        except PermissionError:  # alive, another user's
            pass
        return text
    for line in table.splitlines():  # "1: FLOCK  ADVISORY  WRITE 14246 fe:00:5490938 0 EOF"; "->" marks a waiter
        f = line.split()
        if len(f) > 5 and f[1] == "FLOCK" and f[4] == named.group(1) and f[5].rsplit(":", 1)[-1] == inode:
            return text
    return None
