"""The one skeleton of every study runner (``examples/*/reproduce.py``): plan, check, run or resume, status, summary.

A study states its recipe as a ``Study``: its planned runs, how one is checked, trained and scored, where it
stands, and its summary. ``run_study`` does the rest, the same way for every study:

- ``--status`` says where each planned run stands and trains nothing; ``--summary-only`` summarizes the finished
  runs and trains nothing;
- otherwise the results folder's protocol is written or checked (a trial never trains into a table) and every run
  already begun or finished is checked against this call's options (a run is never skipped, nor resumed, under
  options it was not trained with), both before anything is prepared or trains and said together; the data and
  model are made ready,
  and the runs train ``--jobs`` side by side: a finished one is skipped, a stopped one resumes, one process trains
  a run folder at a time;
- then the summary, unless ``--no-summary``.
"""
from __future__ import annotations

from dataclasses import dataclass

from fairseq_syntax.pipeline.jobs import JobPool
from fairseq_syntax.pipeline.locks import holder_now
from fairseq_syntax.pipeline.messages import Stop, log
from .runs import lock_run, run_lock

MODE_FLAGS = ("--status", "--summary-only", "--no-summary")


def mode_of(options: dict) -> str:
    """The call's mode from its parsed flags: status, summary (alone), no-summary, or train (then summarize)."""
    given = [f for f in MODE_FLAGS if options.get(f.lstrip("-").replace("-", "_"))]
    if len(given) > 1:
        raise Stop(f"{given[0]} and {given[1]} exclude each other; give one")
    return {"--status": "status", "--summary-only": "summary", "--no-summary": "no-summary"}.get(
        given[0] if given else "", "train")


@dataclass(frozen=True)
class Run:
    """One planned training: its files in the results are named ``name``."""
    name: str
    system: str
    seed: int
    task: str = ""


class Study:
    """A study's recipe. ``runs`` is the plan in training order; the methods below are what differs by study."""

    label = "study"  # the log's prefix, [label]

    def __init__(self, runs: list[Run]):
        self.runs = runs

    def title(self, run: Run) -> str:
        return f"{run.system} seed {run.seed}"

    def finished(self, run: Run) -> bool:
        """Its results are in the results folder."""
        raise NotImplementedError

    def check(self, run: Run) -> None:
        """Stop, naming the file and what differs, where the run found was made with other options."""

    def state(self, run: Run) -> str:
        """Where the run stands, for --status."""
        raise NotImplementedError

    def status_end(self) -> None:
        """Anything --status says after the runs."""

    def protocol(self) -> None:
        """Write the results folder's protocol, or check this call against it."""

    def prepare(self) -> None:
        """Make the data and the pretrained model ready."""

    def folder(self, run: Run) -> str:
        """The run's checkpoint folder: locked while it trains."""
        raise NotImplementedError

    def train(self, pool: JobPool, run: Run, lock) -> bool:
        """Train (or resume) and score the run into the results; False where it failed or was stopped."""
        raise NotImplementedError

    def when_finished(self, pool: JobPool, run: Run) -> bool:
        """A finished run met again: skipped (a study may complete what it keeps of it)."""
        log(f"[{self.label}] skip {run.name} (done)")
        return True

    def summarize(self) -> None:
        raise NotImplementedError


def each_run(runs, one, jobs: int, failed: str) -> None:
    """``one(pool, run)`` for every run, ``jobs`` side by side; Stop with ``failed`` where any returned False."""
    with JobPool(jobs) as pool:
        for run in runs:
            pool.start(one, pool, run)
    if pool.failed:
        raise Stop(failed)


def training_now(study: Study, run: Run, state: str) -> str:
    """For a run not finished: whether a process trains it now (its folder's lock held) or, begun, it stopped
    (killed, or its machine restarted) and the next call resumes it; its log alone cannot tell the two apart."""
    if study.finished(run):
        return ""
    holder = holder_now(run_lock(study.folder(run)))
    if holder:
        return f"; training now ({holder})"
    return "" if state == "not started" else "; not training now: the next call resumes it"


def run_study(study: Study, mode: str, jobs: int) -> None:
    if mode == "status":
        for run in study.runs:
            state = study.state(run)
            print(f"{study.title(run)}: {state}{training_now(study, run, state)}", flush=True)
        study.status_end()
        return
    if mode == "summary":
        study.summarize()
        return
    said = []  # the protocol's refusal and a run's, said together: either alone would hide the other
    try:
        study.protocol()
    except Stop as e:
        said.append(str(e))
    try:
        for run in study.runs:
            study.check(run)
    except Stop as e:
        said.append(str(e))
    if said:
        raise Stop("; and ".join(said))
    study.prepare()

    def one(pool, run):
        if study.finished(run):
            return study.when_finished(pool, run)
        lock = lock_run(study.folder(run))
        if lock is None:
            return False
        with lock:
            return study.train(pool, run, lock)

    each_run(study.runs, one, jobs, f"[{study.label}] some runs failed or were stopped; run again to resume")
    if mode == "train":
        study.summarize()
