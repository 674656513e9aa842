"""benchmarks/gpu_check.sh and the throughput it reports (benchmarks/train_speed.py): hand-worked logs, a real one,
and a trial of the whole script on the CPU."""
import gzip
import json
import sys

import pytest

from .conftest import ROOT, run

sys.path.insert(0, str(ROOT / "benchmarks"))
import train_speed  # noqa: E402

CONFIG = "2026-11-26 00:00:00 | INFO | fairseq_cli.train | {'_name': None, 'common': {'_name': None, 'fp16': True}}\n"


def inner(update, wps, wpb, epoch=1):
    return (f"2026-11-26 00:00:01 | INFO | train_inner | epoch {epoch:03d}:      1 / 13 loss=7.1, nll_loss=6.9, "
            f"ppl=120.3, wps={wps}, ups=3.1, wpb={wpb}, bsz=800, num_updates={update}, lr=1e-05, gnorm=1.2, "
            f"loss_scale=128, train_wall=0, gb_free=70.1, wall=3\n")


def test_steady_is_the_median_update_and_overall_counts_every_second(tmp_path):
    log = tmp_path / "train.log"
    # updates 1-2 warm-up (skipped), 3-6 steady at 100,000 words/s but for update 5, an epoch start at 10,000
    rows = [(1, 2000.0, 30000), (2, 50000.0, 30000), (3, 100000.0, 30000), (4, 100000.0, 30000),
            (5, 10000.0, 20000), (6, 100000.0, 30000)]
    log.write_text(CONFIG + "".join(inner(u, w, b) for u, w, b in rows))
    s = train_speed.speed(str(log), skip=2)
    assert s["updates"] == 4 and s["intervals"] == 4
    assert s["steady_wps"] == 100000.0  # median of 100k, 100k, 10k, 100k
    # 110,000 words in 0.3 + 0.3 + 2.0 + 0.3 s
    assert s["overall_wps"] == round(110000 / 2.9, 1)


def test_longer_intervals_count_their_updates(tmp_path):
    log = tmp_path / "train.log"
    # the first interval is never timed: fairseq's meter starts within its first update (a 0 words/s here)
    log.write_text(CONFIG + inner(50, 0.0, 400) + inner(100, 1000.0, 400) + inner(150, 2000.0, 400))
    s = train_speed.speed(str(log), skip=0)
    assert s["updates"] == 100 and s["overall_wps"] == round(40000 / (20 + 10), 1)


def test_rounds_pair_in_order_and_the_ratio_is_their_median(tmp_path):
    logs = {}
    for name, wps in (("b1", 100.0), ("c1", 90.0), ("b2", 100.0), ("c2", 110.0), ("b3", 100.0), ("c3", 95.0)):
        logs[name] = tmp_path / f"{name}.log"
        logs[name].write_text(CONFIG + inner(1, 1.0, 10) + inner(2, wps, 10))
    out = train_speed.compare([str(logs[n]) for n in ("b1", "b2", "b3")],
                              [str(logs[n]) for n in ("c1", "c2", "c3")], skip=0)
    assert [r["steady_ratio"] for r in out["rounds"]] == [0.9, 1.1, 0.95]
    assert out["steady_ratio"] == 0.95 and out["overall_ratio"] == 0.95
    with pytest.raises(ValueError, match="2 baseline runs against 1 candidate"):
        train_speed.compare([str(logs["b1"]), str(logs["b2"])], [str(logs["c1"])], skip=0)


def test_a_resumed_log_is_refused_with_its_line():
    """The Multi30k runs train one process per epoch, so their logs hold many starts: the first interval after a
    resume covers an unknown number of updates, and the log is refused rather than timed wrongly."""
    log = ROOT / "results/multi30k/logs/sgnet_seed1.train.log.gz"
    with gzip.open(log, "rt", encoding="utf-8") as fh:
        second = [n for n, line in enumerate(fh, 1) if "'common': {" in line][1]
    with pytest.raises(ValueError, match=rf"sgnet_seed1.train.log.gz: line {second}: a second start"):
        train_speed.speed(str(log), skip=0)


def test_no_interval_after_the_skip_is_an_error(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(CONFIG + inner(1, 10.0, 10) + inner(2, 10.0, 10))
    out = run([sys.executable, str(ROOT / "benchmarks/train_speed.py"), "--baseline", str(log), "--candidate", str(log),
               "--skip", "5"], check=False)
    assert out.returncode == 1 and "train.log: no train_inner line after update 5" in out.stderr


@pytest.mark.slow
@pytest.mark.long  # minutes: started first (tests/conftest.py)
def test_gpu_check_runs_on_the_cpu_and_keeps_its_rows_and_logs(prepared, tmp_path):
    """--cpu: the script's whole path without a GPU, on real Multi30k: every translation family, two rounds of
    the throughput pair in alternating order, the ratio from their logs, and the table written as it goes."""
    out, logs = tmp_path / "gpu_check.md", tmp_path / "logs"
    proc = run(["bash", str(ROOT / "benchmarks/gpu_check.sh"), "--cpu", "--multi30k", str(prepared / "bin"),
                "--updates", "2", "--speed-updates", "2", "--speed-rounds", "2", "--speed-max-tokens", "128",
                "--out", str(out), "--logs", str(logs)], timeout=1800)
    text = out.read_text()
    assert text.startswith("GPU check on CPU (") and "fp32 on the CPU (--cpu" in text and "in progress" not in text
    rows = [line.split(" | ")[0][2:] for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows == ["run", "transformer_sgnet_small", "transformer_sgnet_small+alpha+first_head",
                    "transformer_sla_small", "speed_vanilla_r1", "speed_sgnet_r1", "speed_sgnet_r2",
                    "speed_vanilla_r2", "roberta_*", "roberta_* ranking (RACE)", "bidaf*"]
    assert text.count("| ok |") == 7 and "not run (no --cola)" in text and "not run (no --race)" in text
    speed = json.loads((logs / "speed.json").read_text())
    assert [r["baseline"]["log"] for r in speed["rounds"]] == [str(logs / "speed_vanilla_r1.log"),
                                                               str(logs / "speed_vanilla_r2.log")]
    assert all(r["candidate"]["updates"] == 1 for r in speed["rounds"])  # update 2: the first is not timed
    assert f"{speed['steady_ratio']:.3f} steady" in text and "median of 2 rounds" in text
    assert proc.stdout == text


@pytest.mark.slow
def test_gpu_check_speed_only_trains_the_throughput_pair_alone(tmp_path):
    """--speed-only, when there is no time for every family: the pair's rounds alone, the rest reported as not run
    even when their data are given. (The data folder is missing, so each of the pair's runs fails at once and its
    row says so: the ratio from real logs is the test above's.)"""
    out = tmp_path / "gpu_check.md"
    proc = run(["bash", str(ROOT / "benchmarks/gpu_check.sh"), "--cpu", "--speed-only", "--multi30k",
                str(tmp_path / "absent"), "--lambada", str(tmp_path / "absent"), "--speed-updates", "3",
                "--speed-rounds", "1", "--speed-max-tokens", "1024", "--out", str(out)], timeout=600)
    text = out.read_text()
    rows = [line.split(" | ")[0][2:] for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows == ["run", "transformer_*_small", "speed_vanilla_r1", "speed_sgnet_r1", "roberta_*, bidaf*"]
    assert text.count("| FAILED") == 2 and text.count("not run (--speed-only)") == 2
    assert "not measured (see the logs)" in text and proc.stdout == text


def test_gpu_check_refuses_rounds_that_are_not_a_count_and_a_speed_only_check_of_nothing():
    script = str(ROOT / "benchmarks/gpu_check.sh")
    out = run(["bash", script, "--speed-rounds", "two"], check=False)
    assert out.returncode == 1 and "--speed-rounds takes a whole number, got 'two'" in out.stderr
    out = run(["bash", script, "--speed-only", "--speed-rounds", "0"], check=False)
    assert out.returncode == 1 and "--speed-only with --speed-rounds 0 measures nothing" in out.stderr


@pytest.mark.slow
def test_gpu_check_speed_rounds_0_leaves_the_pair_out(tmp_path):
    """The families alone, when the time goes to them: the pair's row and ratio say it was not run. The data folder
    is missing, so each family's run fails at once and its row says so."""
    out = tmp_path / "gpu_check.md"
    run(["bash", str(ROOT / "benchmarks/gpu_check.sh"), "--cpu", "--multi30k", str(tmp_path / "absent"),
         "--speed-rounds", "0", "--updates", "1", "--out", str(out)], timeout=600)
    text = out.read_text()
    rows = [line.split(" | ")[0][2:] for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows == ["run", "transformer_sgnet_small", "transformer_sgnet_small+alpha+first_head",
                    "transformer_sla_small", "speed_* (transformer-base pair)", "roberta_*",
                    "roberta_* ranking (RACE)", "bidaf*"]
    assert text.count("| FAILED") == 3 and "| not run (--speed-rounds 0) |" in text
    assert "default --num-workers: not measured (--speed-rounds 0)" in text
