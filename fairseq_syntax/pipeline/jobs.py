"""Runs side by side: at most N jobs at a time, each a sequence of commands (train, then evaluate ...).

A slot is filled as soon as any job ends, not the oldest, so a long run never keeps a finished one's slot idle.
Ctrl-C, ``timeout`` or a scheduler's TERM stops every command the jobs started (each in its own process group,
so what it started goes too), no job goes on to its next step, and the program ends only once they have: a
training stopped by SIGINT still writes its traceback for a while, and nothing may write after the runs' files
are packed.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

from .messages import log


class Stopped(Exception):
    """The pool is stopping: a job's next step is not started."""


class JobPool:
    def __init__(self, jobs: int):
        self.failed = False
        self._slots = threading.Semaphore(jobs)
        self._threads: list[threading.Thread] = []
        self._procs: set[subprocess.Popen] = set()
        self._guard = threading.Lock()
        self._stopping = False

    def __enter__(self):
        self._old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc):
        try:
            self.wait()
        finally:
            for s, handler in self._old.items():
                signal.signal(s, handler)

    def start(self, job, *args) -> None:
        """Run ``job(*args)`` once a slot is free; a job that returns False or raises counts as failed."""
        while not self._slots.acquire(timeout=0.2):
            pass
        thread = threading.Thread(target=self._run, args=(job, args))
        self._threads.append(thread)
        thread.start()

    def _run(self, job, args) -> None:
        try:
            if job(*args) is False:
                self.failed = True
        except Stopped:
            self.failed = True
        except Exception as e:  # one run's failure is reported and counted; the others go on
            log(f"{getattr(job, '__name__', 'job')} {' '.join(map(str, args))}: {e}")
            self.failed = True
        finally:
            self._slots.release()

    def wait(self) -> None:
        for thread in self._threads:
            while thread.is_alive():
                thread.join(timeout=0.2)

    def run(self, argv, **kwargs) -> int:
        """One command of a job, in its own process group; its exit status. A command ended by the pool's stop
        raises :class:`Stopped`, so that nothing it wrote is taken as done."""
        with self._guard:
            if self._stopping:
                raise Stopped
            proc = subprocess.Popen([str(a) for a in argv], start_new_session=True, **kwargs)
            self._procs.add(proc)
        try:
            rc = proc.wait()
        finally:
            with self._guard:
                self._procs.discard(proc)
        if self._stopping:
            raise Stopped
        return rc

    def _on_signal(self, signum, frame) -> None:
        self.stop(signum)

    def stop(self, signum: int) -> None:
        """TERM to every command and what it started, KILL after 10 s; then exit with 128 + the signal."""
        with self._guard:
            self._stopping = True
            procs = list(self._procs)
        for proc in procs:
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_group_alive(p) for p in procs):
            time.sleep(0.2)
        for proc in procs:
            _signal_group(proc, signal.SIGKILL)
        for thread in self._threads:  # the jobs' own steps end (their next command is refused)
            thread.join(timeout=30)
        log(f"stopped (signal {signum}); the runs' checkpoints stay, run again to resume")
        raise SystemExit(128 + signum)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(proc: subprocess.Popen) -> bool:
    try:
        os.killpg(proc.pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return proc.poll() is None or _has_members(proc.pid)


def _has_members(pgid: int) -> bool:
    """Any process of the group still running (not a zombie awaiting its parent)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] not in "ZX":
                return True
    return False


def threads_per_job(jobs: int) -> int:
    """The CPU threads each of ``jobs`` side-by-side trainings gets: the cores split among them, none idle when
    fewer jobs than cores run (one run alone on 2 cores: 2 threads)."""
    cores = int(os.environ.get("OMP_NUM_THREADS") or 0) or os.cpu_count() or 1
    return max(1, cores // jobs)
