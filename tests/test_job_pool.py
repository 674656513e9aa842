"""The reproduce scripts' job pool (data-prep/common.sh): side-by-side runs, their cores, and stopping a tree of jobs."""
import pathlib
import time

from .conftest import ROOT, run


def test_side_by_side_runs_split_the_cores_among_them():
    def threads(jobs, cores):  # nproc reads OMP_NUM_THREADS, so it stands in for a machine of that many cores
        return run(["bash", "-c", f"source {ROOT}/data-prep/common.sh; threads_per_job {jobs}"],
                   env={"OMP_NUM_THREADS": str(cores)}).stdout.strip()

    assert [threads(1, 2), threads(2, 2), threads(3, 2), threads(2, 16), threads(3, 16)] == ["2", "1", "1", "8", "5"]


def test_side_by_side_runs_fill_the_slot_of_whichever_run_ends_first(tmp_path):
    """pool_start (the studies' --jobs): with 2 slots, a long run waiting on the third run must not block it; the
    third starts when the short second one ends, not when the oldest does (which would wait 10 s and say timeout),
    also when the short one ended before the third was asked for. A failed run is counted, and nothing is left
    running."""
    script = f"""source "{ROOT}/data-prep/common.sh"
    d=$1
    mapfile -t x < <(echo a)  # a process substitution before the pool, as the studies have
    long() {{ for _ in $(seq 100); do [ -f "$d/go" ] && {{ echo long >> "$d/order"; return 0; }}; sleep 0.1; done
             echo timeout >> "$d/order"; }}
    short() {{ echo "short$1" >> "$d/order"; [ "$1" != 2 ] || touch "$d/go"; return "$2"; }}
    pool_start 2 long
    pool_start 2 short 1 0
    sleep 0.5  # short 1 has ended before the pool is asked for the next slot (`wait -n` alone would miss it)
    pool_start 2 short 2 3
    pool_wait
    echo "$POOL_FAILED $POOL_RUNNING"
    """
    out = run(["bash", "-c", script, "_", str(tmp_path)]).stdout
    assert out.split() == ["1", "0"] and (tmp_path / "order").read_text().split() == ["short1", "short2", "long"]


def test_a_stopped_pool_ends_only_after_its_jobs_and_what_they_started(tmp_path):
    """`timeout --signal=INT` (gpu_lease.sh's time limit, or Ctrl-C) on a study: its jobs' shells ignore SIGINT, and
    a training that takes a while to die still wrote into its log while the logs were packed (CI of stop 79). The
    script must return only when no job and no process a job started is left, no job goes on to its next step, and
    no half-written file stays."""
    script = f"""set -euo pipefail  # as the studies run
    source "{ROOT}/data-prep/common.sh"
    d=$1
    train() {{  # a training that writes its log for 2 s after SIGINT, as fairseq-train's traceback does
      python3 -c "import os, sys, time
open(sys.argv[1] + '/pid.' + sys.argv[2], 'w').write(str(os.getpid()))
try:
    time.sleep(60)
except KeyboardInterrupt:
    for _ in range(20): open(sys.argv[1] + '/log', 'a').write('x'); time.sleep(0.1)" "$d" "$1"
      echo "evaluated $1" >> "$d/log"
    }}
    pack() {{ atomic "$d/packed" bash -c 'echo partial; echo $$ > "$1/pid.3"; sleep 60' _ "$d"; }}
    pool_start 3 train 1
    pool_start 3 train 2
    pool_start 3 pack
    pool_wait
    """
    out = run(["timeout", "--signal=INT", "--kill-after=20", "2", "bash", "-c", script, "_", str(tmp_path)],
              check=False)
    assert out.returncode == 124 and "stopped (signal 2); the runs' checkpoints stay" in out.stderr, out.stderr
    log = tmp_path / "log"
    left = log.read_text() if log.exists() else None
    pids = [int((tmp_path / f"pid.{i}").read_text()) for i in (1, 2, 3)]
    time.sleep(0.5)
    assert (log.read_text() if log.exists() else None) == left  # nothing wrote after the script ended
    assert "evaluated" not in (left or "")
    assert not [p for p in pids if alive(p)]
    assert not list(tmp_path.glob("packed*"))  # nothing half-written: neither the file nor its temporary


def alive(pid):
    """Running or sleeping: a killed process stays in /proc as a zombie until whoever adopted it reaps it."""
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except (FileNotFoundError, ProcessLookupError):
        return False
