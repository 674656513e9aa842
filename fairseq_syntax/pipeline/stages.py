"""A preparation as a chain of stages, each run once for what shaped it.

A stage's record under ``OUT/.stamps`` holds the options that shaped its output, a fingerprint of its inputs, the
record of the stage before it and the SHA-1 of every file it wrote. A re-run skips a stage only while all of that
is unchanged and its outputs are there as written; otherwise it redoes that stage and every later one, and says
why. One preparation at a time writes into an ``--out``.
"""
from __future__ import annotations

import hashlib
import os
import re
import time

from .atomic import write_text
from .locks import FileLock, Held, program
from .messages import Stop, log
from .ownership import claim_out, owned_or_absent
from .records import fingerprint, out_files, outputs_changed, outputs_of


class Preparation:
    """``out`` locked for this run and claimed for ``corpus`` (refused if another's or the user's), its stages
    chained from the first."""

    def __init__(self, out: str, corpus: str, wait: bool = False):
        self.out = out
        made = not os.path.exists(out)
        os.makedirs(out, exist_ok=True)
        had_lock = os.path.lexists(f"{out}/.lock")
        self.lock = self._lock(wait)
        try:
            claim_out(out, corpus)
            owned_or_absent(f"{out}/bin", out)  # a bin/ of the user's stops the run before any work, not after it
            owned_or_absent(f"{out}/bin.tmp", out)
        except Stop:  # refused: the folder is left as it was found, without the lock file this run made
            self.lock.release()
            if not had_lock:
                os.remove(f"{out}/.lock")
            if made and not os.listdir(out):
                os.rmdir(out)
            raise
        _remove_stale_temporaries(out)
        self.after = "start"

    def _lock(self, wait: bool) -> FileLock:
        def waiting(holder):
            log(f"{self.out}: waiting for {holder or 'another preparation'} to finish its stages")
        try:
            lock = FileLock(f"{self.out}/.lock", wait=wait, on_wait=waiting)
        except Held as held:
            raise Stop(f"{self.out}: another preparation ({held or 'a running process'}) is writing there; wait "
                       f"for it to finish (--wait), or give another --out") from None
        lock.claim(program())
        return lock

    def unlock(self) -> None:
        """Job-array tasks parse side by side once the stages before parsing are done."""
        self.lock.release()

    def stage(self, name: str, command, key: str = "", inputs=(), outputs=()) -> None:
        """Run ``command()`` unless stage ``name`` is complete for ``key`` and ``inputs``, after the same earlier
        stages, with every file it wrote still there unchanged. ``outputs`` (relative to ``out``) are folders all
        of whose files are the stage's, for a command that may find its work done and write nothing."""
        stamps = f"{self.out}/.stamps"
        os.makedirs(stamps, exist_ok=True)
        record = f"{stamps}/{name}"
        # (a refused input stops here)
        want = f"options: {key}\ninputs: {fingerprint(inputs, exclude=self.out)}\nafter: {self.after}"
        previous = ""
        if os.path.lexists(record):
            with open(record, encoding="utf-8", errors="surrogateescape") as fh:
                previous = fh.read()
            have = previous.split("\n")
            wanted = want.split("\n")
            if have[:3] == wanted:
                if "\noutput: " not in "\n" + previous:
                    log(f"redo {name}: its record lists no outputs (written by an older version)")
                else:
                    changed = outputs_changed(self.out, previous)
                    if changed:
                        log(f"redo {name}: {changed}")
                    else:
                        log(f"skip {name} (done)")
                        self.after = _sha1(previous)
                        return
            elif have[0] != wanted[0]:
                log(f"redo {name}: its options changed (were '{have[0][len('options: '):]}', now '{key}')")
            elif have[1:2] != wanted[1:2]:
                log(f"redo {name}: its inputs changed ({' '.join(inputs)})")
            else:
                log(f"redo {name}: a stage before it was redone")
            os.remove(record)
        log(f"start {name}")
        t0 = time.monotonic()
        before = out_files(self.out)
        command()
        lines = outputs_of(self.out, before, out_files(self.out), previous, outputs)
        if not lines:
            raise Stop(f"stage {name} wrote no file under {self.out} (a bug in {program()})")
        text = want + "\n" + "\n".join(lines) + "\n"
        write_text(record, text)
        self.after = _sha1(text)
        log(f"done  {name} ({round(time.monotonic() - t0)}s)")


TEMPORARY = re.compile(r".+\.tmp(\d+)")  # atomic_path's: a file written whole under another name, then renamed


def _remove_stale_temporaries(out: str) -> None:
    """A killed run's temporaries in ``out`` (claimed, and locked by this run: no other preparation writes there)."""
    for top, dirs, files in os.walk(out):
        for name in files:
            m = TEMPORARY.fullmatch(name)
            path = os.path.join(top, name)
            if m and not os.path.islink(path) and not _alive(int(m.group(1))):
                os.remove(path)
                log(f"removed {path}, left by a run that was stopped")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # (PermissionError: alive, another user's)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()
