"""fairseq_syntax.pipeline.jobs and .logs in-process: side-by-side runs, stopping a tree of jobs, kept logs."""
import gzip
import os
import signal
import sys
import threading
import time

import pytest

from fairseq_syntax.pipeline.jobs import JobPool, threads_per_job
from fairseq_syntax.pipeline.logs import ROOT, from_caller, hide_paths, keep_log


def test_side_by_side_runs_split_the_cores_among_them(monkeypatch):
    def threads(jobs, cores):
        monkeypatch.setenv("OMP_NUM_THREADS", str(cores))
        return threads_per_job(jobs)
    assert [threads(1, 2), threads(2, 2), threads(3, 2), threads(2, 16), threads(3, 16)] == [2, 1, 1, 8, 5]


def test_a_slot_goes_to_whichever_run_ends_first_and_failures_are_counted(tmp_path):
    """With 2 slots, a long run waiting on the third must not block it: the third starts when the short second
    one ends (also when that one ended before the third was asked for); a failed run is counted."""
    order, go = [], threading.Event()

    def long():
        order.append("long" if go.wait(timeout=10) else "timeout")

    def short(n, rc):
        order.append(f"short{n}")
        if n == 2:
            go.set()
        return rc == 0

    with JobPool(2) as pool:
        pool.start(long)
        pool.start(short, 1, 0)
        time.sleep(0.5)
        pool.start(short, 2, 3)
    assert order == ["short1", "short2", "long"] and pool.failed


def test_a_stopped_pool_ends_only_after_its_jobs_and_what_they_started(tmp_path):
    """SIGINT (Ctrl-C, `timeout --signal=INT`): a training that takes a while to die still writes its log; the
    program must end only when no command is left, no job goes on to its next step, nothing half-written stays."""
    script = f"""
import os, sys, time
sys.path.insert(0, {ROOT!r})
from fairseq_syntax.pipeline.jobs import JobPool
from fairseq_syntax.pipeline.atomic import atomic_path
d = sys.argv[1]
TRAIN = ("import os, sys, time\\nopen(sys.argv[1] + '/pid.' + sys.argv[2], 'w').write(str(os.getpid()))\\n"
         "try:\\n    time.sleep(60)\\nexcept KeyboardInterrupt:\\n"
         "    for _ in range(20): open(sys.argv[1] + '/log', 'a').write('x'); time.sleep(0.1)\\n")
def train(pool, n):
    if pool.run([sys.executable, "-c", TRAIN, d, n]) != 0:
        return False
    pool.run(["bash", "-c", "echo evaluated >> $0/log", d])
def pack(pool):
    with atomic_path(d + "/packed") as tmp:
        with open(tmp, "w") as fh:
            pool.run(["bash", "-c", "echo partial; echo $$ > $0/pid.3; sleep 60", d], stdout=fh)
with JobPool(3) as pool:
    pool.start(train, pool, "1")
    pool.start(train, pool, "2")
    pool.start(pack, pool)
"""
    import subprocess
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stderr=subprocess.PIPE, text=True)
    for _ in range(100):
        if all((tmp_path / f"pid.{i}").exists() for i in (1, 2, 3)):
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130 and "stopped (signal 2); the runs' checkpoints stay" in err, err
    log = tmp_path / "log"
    left = log.read_text() if log.exists() else None
    time.sleep(0.5)
    assert (log.read_text() if log.exists() else None) == left and "evaluated" not in (left or "")
    pids = [int((tmp_path / f"pid.{i}").read_text()) for i in (1, 2, 3)]
    assert not [p for p in pids if alive(p)]
    assert not list(tmp_path.glob("packed*"))


def alive(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


def test_kept_logs_hold_no_machine_paths(tmp_path, monkeypatch):
    ck = tmp_path / "ckg"
    (ck / "run").mkdir(parents=True)
    log = tmp_path / "train.log"
    log.write_text(f"save_dir='{ck}/run' restore='{ROOT}/work/minilm/model.pt' at {ck}\n"
                   f"File \"/home/someone/.venv/x.py\"\n")
    out = tmp_path / "kept.log.gz"
    monkeypatch.setenv("HOME", "/home/someone")
    keep_log(str(log), str(out), [(str(ck), "<checkpoints>"), (os.path.join(ROOT, "scripts"), "inside")])
    assert gzip.decompress(out.read_bytes()).decode() == (
        "save_dir='<checkpoints>/run' restore='./work/minilm/model.pt' at <checkpoints>\n"
        'File "~/.venv/x.py"\n')


def test_a_folder_name_is_a_path_never_a_pattern(tmp_path):
    ck, near = tmp_path / "c#k&1.x*\\b#;e touch PWNED;#", tmp_path / "c#k&1ax*\\b#;e touch PWNED;#"
    text = f"save_dir={ck}/run\nnear={near}/run\n"
    assert hide_paths(text, [(str(ck), "<ck&#>")], home="") == f"save_dir=<ck&#>/run\nnear={near}/run\n"


def test_a_typed_path_is_taken_from_where_the_user_is(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT + "/examples")
    monkeypatch.delenv("PWD", raising=False)
    assert from_caller("../work/ck") == "work/ck" and from_caller("..") == "."
    monkeypatch.chdir(tmp_path)
    assert from_caller("a/../b") == f"{tmp_path}/b"


@pytest.mark.parametrize("jobs", [1, 2])
def test_every_job_runs_once(jobs):
    seen = []
    with JobPool(jobs) as pool:
        for i in range(5):
            pool.start(seen.append, i)
    assert sorted(seen) == list(range(5)) and not pool.failed


def test_a_run_folder_has_one_trainer(tmp_path, capsys):
    """examples.studies.runs.lock_run: while one process trains a run a second is refused, naming the first;
    once the first ends the run is free again."""
    from examples.studies.runs import lock_run

    first = lock_run(str(tmp_path))
    assert first is not None and lock_run(str(tmp_path)) is None
    err = capsys.readouterr().err
    assert f"another process (pid {os.getpid()}" in err and "is training this run; left to it" in err
    first.release()
    again = lock_run(str(tmp_path))
    assert again is not None
    again.release()
