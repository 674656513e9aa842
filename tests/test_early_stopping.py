"""Early stopping from the whole log (fairseq_syntax/studies/early_stopping.py), the Multi30k summary built on it, the
README block the summaries write, and how the reproduce scripts keep fp16 runs apart from fp32 ones."""
import argparse
import gzip
import json
import math
import pathlib
import subprocess
import sys
import time

import pytest
import torch

from fairseq_syntax.studies.early_stopping import convergence
from fairseq_syntax.studies.readme_block import check_block, replace_block
from fairseq_syntax.studies.seed_statistics import (detectable_difference, format_p, holm, pooled_sd, seed_test,
                                                    welch_interval)
from fairseq_syntax.studies.training_log import training_setup

from .conftest import ROOT, run, study_script

REAL_LOG = ROOT / "results/multi30k/logs/vanilla_seed1.train.log.gz"  # a CPU fp32 run, resumed once an epoch
GPU_LINES = ("2026-11-23 06:00:01 | INFO | fairseq.utils | ***********************CUDA enviroments for all 1 workers"
             "***********************\n2026-11-23 06:00:01 | INFO | fairseq.utils | rank   0: capabilities =  9.0  ; "
             "total memory = 79.109 GB ; name = NVIDIA H100 80GB HBM3                    \n")


def config_line(fp16=False):
    """The config fairseq logs at every start, taken from a real run's log."""
    with gzip.open(REAL_LOG, "rt", encoding="utf-8") as fh:
        line = next(line for line in fh if "'common': {" in line)
    return line.replace("'fp16': False", "'fp16': True") if fp16 else line


def valid_line(epoch, updates, **metrics):
    fields = " | ".join(f"{k} {v}" for k, v in metrics.items())
    return (f"2026-11-23 06:13:18 | INFO | valid | epoch {epoch:03d} | valid on 'valid' subset | {fields} | "
            f"wps 2386.1 | num_updates {updates} | best_loss 8.899\n")


def next_target(log, *args):
    out = subprocess.run([sys.executable, "-m", "fairseq_syntax.studies.early_stopping", str(log), *args],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_patience_counts_every_validation_once_across_resumes(tmp_path):
    log = tmp_path / "train.log"
    losses = [5.0, 4.0, 3.5, 3.6, 3.7]
    text = "".join(valid_line(e, 128 * e, loss=v) for e, v in enumerate(losses, 1))
    text += "... resumed from checkpoint_last.pt ...\n" + valid_line(5, 640, loss=3.7)  # epoch 5 again
    log.write_text(text)
    c = convergence(str(log), "loss", patience=3, max_update=10000)
    assert c["best_epoch"] == 3 and c["validations"] == 5 and c["validations_after_best"] == 2
    assert c["stopped"] is None and next_target(log, "--patience", "3", "--max-update", "10000") == "6"
    with open(log, "a") as fh:
        fh.write(valid_line(6, 768, loss=3.55))
    assert next_target(log, "--patience", "3", "--max-update", "10000") == "stop"
    assert next_target(log, "--patience", "4", "--max-update", "700") == "stop"  # the cap


def test_min_delta_stops_a_loss_still_creeping_down(tmp_path):
    """Only an improvement by more than min_delta over the value that started the count restarts it; the
    checkpoint to score stays the lowest loss."""
    log = tmp_path / "train.log"
    losses = [5.0, 4.2, 4.198, 4.197, 4.195, 4.194, 4.192]  # creeping down by under 0.01 in 5 epochs
    log.write_text("".join(valid_line(e, 100 * e, loss=v) for e, v in enumerate(losses, 1)))
    plain = convergence(str(log), "loss", patience=5, max_update=10000)
    assert plain["stopped"] is None and plain["best_epoch"] == 7
    c = convergence(str(log), "loss", patience=5, max_update=10000, min_delta=0.01)
    assert c["stopped"] == "patience" and c["last_improvement_epoch"] == 2 and c["best_epoch"] == 7
    assert c["validations_since_improvement"] == 5 and c["validations_after_best"] == 0
    args = ["--patience", "5", "--max-update", "10000"]
    assert next_target(log, *args) == "8" and next_target(log, *args, "--min-delta", "0.01") == "stop"
    # a drop by more than min_delta restarts the count from that epoch
    log.write_text("".join(valid_line(e, 100 * e, loss=v) for e, v in enumerate(losses[:6] + [4.15], 1)))
    c = convergence(str(log), "loss", patience=5, max_update=10000, min_delta=0.01)
    assert c["stopped"] is None and c["last_improvement_epoch"] == 7


def test_accuracy_per_update_interval(tmp_path):
    log = tmp_path / "train.log.gz"
    with gzip.open(log, "wt") as fh:
        for k, acc in enumerate([10.0, 14.0, 13.0], 1):
            fh.write(valid_line(1, 500 * k, loss=3.0, accuracy=acc))
    args = ["--metric", "accuracy", "--maximize", "--patience", "2", "--max-update", "5000", "--interval", "500"]
    assert next_target(log, *args) == "2000"  # 1 validation without improvement: 1 left to the count
    c = convergence(str(log), "accuracy", 2, 5000, maximize=True, by="update")
    assert c["best_update"] == 1000 and c["best_valid_accuracy"] == 14.0
    assert next_target(tmp_path / "missing.log", *args) == "1000"  # the whole count: 2 validations
    with gzip.open(log, "at") as fh:
        fh.write(valid_line(1, 2000, loss=3.0, accuracy=15.0))  # an improvement restarts the count
    assert next_target(log, *args) == "3000"
    assert next_target(log, *args[:-3], "2500", *args[-2:]) == "2500"  # no further than the cap
    assert next_target(log, *args[:4], "0", *args[5:]) == "5000"  # a fixed budget: to its end


def test_describe_says_where_a_run_stands(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(valid_line(e, 128 * e, loss=v) for e, v in enumerate([5.0, 4.0, 4.1, 4.2], 1)))
    args = ["--metric", "loss", "--patience", "3", "--max-update", "8000", "--describe"]
    assert next_target(log, *args) == ("epoch 4 (512 updates): best valid loss 4.0 at epoch 2; "
                                       "running, 2 of 3 validations without improvement")
    log.write_text(log.read_text() + valid_line(5, 640, loss=4.3))
    assert next_target(log, *args).endswith("; finished (patience)")
    assert next_target(tmp_path / "none.log", *args) == "no validation yet"
    fixed = ["--metric", "loss", "--patience", "0", "--max-update", "768", "--describe"]  # a fixed budget: no rule
    assert next_target(log, *fixed).endswith("; training, to 768 updates")
    assert next_target(log, *fixed[:-1]) == "6"
    log.write_text(log.read_text() + valid_line(6, 768, loss=4.4))
    assert next_target(log, *fixed).endswith("; trained its budget of 768 updates")
    assert next_target(log, *fixed[:-1]) == "stop"


def test_training_setup_reads_precision_and_device_of_every_start(tmp_path):
    cpu = training_setup(str(REAL_LOG))
    assert cpu["precision"] == "fp32" and cpu["device"] == "CPU" and cpu["processes"] == 1 and cpu["starts"] > 30
    log = tmp_path / "train.log"
    start = config_line(fp16=True) + GPU_LINES + "... | fairseq_cli.train | training on 1 devices (GPUs/TPUs)\n"
    log.write_text(start + valid_line(1, 100, loss=5.0) + start + valid_line(2, 200, loss=4.0))
    assert training_setup(str(log)) == {"precision": "fp16", "device": "NVIDIA H100 80GB HBM3", "processes": 1,
                                        "starts": 2}
    log.write_text(log.read_text() + config_line())  # resumed on a CPU in fp32
    with pytest.raises(ValueError, match=r"train.log: line 11: the run was resumed in fp32 after training in fp16 "
                                         r"\(line 1\)"):
        training_setup(str(log))
    log.write_text(valid_line(1, 100, loss=5.0))
    assert training_setup(str(log)) is None and training_setup(str(tmp_path / "none.log")) is None


def test_multi30k_summary_from_runs(tmp_path):
    """Two systems, two seeds: mean ± std per test set, a paired bootstrap p per seed, only finished runs."""
    data, res = tmp_path / "data", tmp_path / "res"
    (data / "bin").mkdir(parents=True)
    (data / "raw").mkdir()
    (res / "hyp").mkdir(parents=True)
    (res / "logs").mkdir()
    refs = [f"ein Mann mit Hut fährt Rad Nummer {i} ." for i in range(40)]
    (data / "raw/test.de").write_text("\n".join(refs) + "\n")
    (data / "bin/testsets.tsv").write_text("test\ttest_2016_flickr\t40\n")
    for system, seed, drop in (("vanilla", 1, 4), ("vanilla", 2, 5), ("sgnet", 1, 1), ("sgnet", 2, 2), ("sgnet", 3, 0),
                               ("sgnet_random_trees", 1, 3), ("sgnet_random_trees", 2, 3), ("sgnet_learn_alpha", 1, 2)):
        with gzip.open(res / "logs" / f"{system}_seed{seed}.train.log.gz", "wt") as fh:
            losses = [5, 4, 3, 3.1, 3.2, 3.3, 3.4, 3.5] if seed < 3 else [5, 4]  # seed 3 still running
            fh.write(config_line())
            fh.writelines(valid_line(e, 100 * e, loss=v) for e, v in enumerate(losses, 1))
        hyp = [r.replace("Hut", "Mütze") if i % 10 < drop else r for i, r in enumerate(refs)]
        with gzip.open(res / "hyp" / f"{system}_seed{seed}.test.de.gz", "wt") as fh:
            fh.write("\n".join(hyp) + "\n")
    (res / "learned_alpha").mkdir()
    (res / "learned_alpha/sgnet_learn_alpha_seed1.json").write_text(
        json.dumps({"alpha": {"encoder.syntax_guided": 0.6125}, "initial": 0.5, "num_updates": 800}))
    (res / "learned_alpha/sgnet_seed3.json").write_text("{}")  # a run still training: not read
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- begin multi30k-summary (written by examples/multi30k/summarize.py) -->\nstale\n"
                      "<!-- end multi30k-summary -->\nrest\n")
    subprocess.run([sys.executable, str(ROOT / "examples/multi30k/summarize.py"), "--data", str(data), "--results",
                    str(res), "--bootstrap", "200", "--min-delta", "0.05", "--readme", str(readme),
                    "--planned", "vanilla:1 sgnet:1 vanilla:2 sgnet:2 sgnet:3 vanilla_plus1:1"],
                   check=True, capture_output=True)
    s = json.loads((res / "summary.json").read_text())
    assert s["table"]["sgnet"]["test_2016_flickr"]["BLEU"]["n"] == 2  # seed 3 has not stopped
    assert s["table"]["vanilla"]["test_2016_flickr"]["BLEU"]["std"] is not None
    assert s["table"]["sgnet"]["test_2016_flickr"]["BLEU"]["mean"] > s["table"]["vanilla"]["test_2016_flickr"]["BLEU"]["mean"]
    assert "paired_bs_p_vs_vanilla" in s["runs"]["sgnet"]["1"]["scores"]["test"]
    assert s["runs"]["sgnet"]["1"]["convergence"]["stopped"] == "patience"
    assert s["runs"]["sgnet"]["3"]["convergence"]["stopped"] is None
    assert s["signatures"]["BLEU"].startswith("nrefs:1|")
    assert s["early_stopping"] == {"patience_epochs": 5, "min_delta": 0.05, "max_update": 8000}
    assert "SG-Net (+1 SDOI layer) | 2 |" in (res / "summary.md").read_text()
    text = readme.read_text()
    assert text.startswith("intro\n<!-- begin") and text.endswith("<!-- end multi30k-summary -->\nrest\n")
    assert "stale" not in text and "cap 8,000 updates" in text and "more than 0.05" in text
    ps = [s["runs"]["sgnet"][k]["scores"]["test"]["paired_bs_p_vs_vanilla"]["BLEU"] for k in ("1", "2")]
    sg = s["table"]["sgnet"]["test_2016_flickr"]["BLEU"]
    assert f"| SG-Net (+1 SDOI layer) | 2 | {sg['mean']:.2f} ± {sg['std']:.2f} ({ps[0]:.3f}, {ps[1]:.3f}) |" in text
    va = s["table"]["vanilla"]["test_2016_flickr"]["BLEU"]
    welch = sg["vs_vanilla"]
    assert welch["n"] == [2, 2] and welch["diff"] == pytest.approx(sg["mean"] - va["mean"], abs=0.011)
    assert f"| {welch['diff']:+.2f} (p = {welch['welch_p']:.3f}) |" in text and "Welch" in text
    assert "vs_vanilla" not in va and "Welch's t-test over seeds" in (res / "summary.md").read_text()
    # a control is compared with vanilla and with SG-Net, per seed and over seeds; SG-Net only with vanilla
    rt, rt_runs = s["table"]["sgnet_random_trees"]["test_2016_flickr"]["BLEU"], s["runs"]["sgnet_random_trees"]
    assert rt["vs_sgnet"]["diff"] == pytest.approx(rt["mean"] - sg["mean"], abs=0.011) and rt["vs_sgnet"]["n"] == [2, 2]
    assert rt["vs_vanilla"]["diff"] == pytest.approx(rt["mean"] - va["mean"], abs=0.011) and "vs_sgnet" not in sg
    assert {"paired_bs_p_vs_vanilla", "paired_bs_p_vs_sgnet"} <= set(rt_runs["1"]["scores"]["test"])
    assert "paired_bs_p_vs_sgnet" not in s["runs"]["sgnet"]["1"]["scores"]["test"]
    p_sg = rt_runs["2"]["scores"]["test"]["paired_bs_p_vs_sgnet"]["BLEU"]
    assert f"vs sgnet p = {p_sg:.3f})" in (res / "summary.md").read_text()
    assert f"| {rt['vs_vanilla']['diff']:+.2f} (p = {rt['vs_vanilla']['welch_p']:.3f}) | {rt['vs_sgnet']['diff']:+.2f}" in text
    assert "4 of the 6 planned runs. Still to come: sgnet seed 3, vanilla_plus1 seed 1." in text
    assert s["planned_runs"][-1] == "vanilla_plus1:1"
    assert s["trained"] == "fp32 on CPU" and s["runs"]["sgnet"]["1"]["training"]["precision"] == "fp32"
    assert "(200 resamples). Δ: " in text and "summary.md. Trained in fp32 on CPU." in text
    assert s["runs"]["sgnet_learn_alpha"]["1"]["learned_alpha"]["alpha"] == {"encoder.syntax_guided": 0.6125}
    assert "learned_alpha" not in s["runs"]["sgnet"]["3"]
    for out in (text, (res / "summary.md").read_text()):
        assert "at the scored checkpoint: SG-Net, learned α seed 1: 0.613 from 0.5 (update 800)." in out
    # a finished run trained in fp16 on a GPU does not join the fp32 table, and nothing is rewritten
    with gzip.open(res / "logs/sgnet_seed2.train.log.gz", "wt") as fh:
        fh.write(config_line(fp16=True) + GPU_LINES)
        fh.writelines(valid_line(e, 100 * e, loss=v) for e, v in enumerate([5, 4, 3, 3.1, 3.2, 3.3, 3.4, 3.5], 1))
    before = (res / "summary.json").read_text()
    out = subprocess.run([sys.executable, str(ROOT / "examples/multi30k/summarize.py"), "--data", str(data),
                          "--results", str(res), "--bootstrap", "200"], capture_output=True, text=True)
    assert out.returncode != 0 and (res / "summary.json").read_text() == before
    assert ("runs in different precisions (fp16: sgnet seed 2; fp32: sgnet seed 1, sgnet_learn_alpha seed 1, "
            "sgnet_random_trees seed 1, sgnet_random_trees seed 2, vanilla seed 1, vanilla seed 2)") in out.stderr


def test_learned_alpha_read_from_a_checkpoint(tmp_path):
    """fairseq_syntax/studies/learned_alpha.py: sigmoid of each alpha_logit, the α it started from (the checkpoint's config), the
    update it was saved at; a clear error without one."""
    ck = tmp_path / "checkpoint_best.pt"
    weights = {"encoder.syntax_guided.alpha_logit": torch.tensor(math.log(0.7 / 0.3)),
               "encoder.layers.0.fc1.weight": torch.zeros(2, 2)}
    # fairseq keeps a legacy arch's options as an argparse Namespace in cfg["model"]
    torch.save({"model": weights, "cfg": {"model": argparse.Namespace(sgnet_alpha=0.25, dropout=0.3)},
                "optimizer_history": [{"num_updates": 4480}]}, ck)
    out = subprocess.run([sys.executable, "-m", "fairseq_syntax.studies.learned_alpha", str(ck)], capture_output=True,
                         text=True, check=True)
    assert json.loads(out.stdout) == {"alpha": {"encoder.syntax_guided": 0.7}, "initial": 0.25, "num_updates": 4480}
    torch.save({"model": weights, "cfg": {"model": {"sgnet_alpha": 0.5}}}, ck)  # a dict config; no history
    out = subprocess.run([sys.executable, "-m", "fairseq_syntax.studies.learned_alpha", str(ck)], capture_output=True,
                         text=True, check=True)
    assert json.loads(out.stdout) == {"alpha": {"encoder.syntax_guided": 0.7}, "initial": 0.5, "num_updates": None}
    torch.save({"model": {"encoder.layers.0.fc1.weight": torch.zeros(2, 2)}}, ck)  # a fixed-α SG-Net
    out = subprocess.run([sys.executable, "-m", "fairseq_syntax.studies.learned_alpha", str(ck)], capture_output=True,
                         text=True)
    assert out.returncode == 1 and f"{ck}: no learned α" in out.stderr and not out.stdout


def test_holm_steps_down_and_never_lets_a_larger_p_fall_below_a_smaller_ones():
    """Sorted 0.01, 0.03, 0.04 of three: 3 x 0.01, 2 x 0.03, then 1 x 0.04 raised to the 0.06 before it."""
    assert holm({"a": 0.04, "b": 0.01, "c": 0.03}) == {"b": 0.03, "c": 0.06, "a": 0.06}
    assert holm({"a": 0.5, "b": 0.6}) == {"a": 1.0, "b": 1.0} and holm({}) == {}
    assert holm({"a": 0.02}) == {"a": 0.02}


def test_detectable_difference_matches_the_power_tables():
    """Cohen's d found with 80% power at two-sided 0.05 (G*Power, two-sample t): 2.024 at 5 a side, 0.909 at 20;
    it scales with the spread. The pooled spread weighs each system by its seeds less one."""
    assert detectable_difference(1.0, 5) == pytest.approx(2.0244, abs=1e-3)
    assert detectable_difference(1.0, 20) == pytest.approx(0.9091, abs=1e-3)
    assert detectable_difference(0.25, 5) == pytest.approx(0.25 * 2.0244, abs=1e-3)
    assert pooled_sd([[1, 2, 3], [4, 6], [7]]) == (pytest.approx(math.sqrt(4 / 3)), 3)
    assert pooled_sd([[1], [2]]) is None


def test_seed_test_is_welchs_t_test_worked_by_hand():
    # means 2 and 5, variances 1 and 1: t = -3 / sqrt(1/3 + 1/3) = -3.674 on 4 degrees of freedom, where the
    # two-sided p is 1 - 1.5 u + 0.5 u^3 with u = |t| / sqrt(t^2 + 4)
    u = 3 / (2 / 3) ** 0.5 / (9 / (2 / 3) + 4) ** 0.5
    assert seed_test([1, 2, 3], [4, 5, 6]) == {"diff": -3.0, "welch_p": float(f"{1 - 1.5 * u + 0.5 * u ** 3:.3g}"),
                                               "n": [3, 3]}
    assert seed_test([1, 2, 3], [4, 5, 6])["welch_p"] == 0.0213
    # a strong effect: 1 - 1.5 u + 0.5 u^3 = (1 - u)^2 (u + 2) / 2, and 1 - u = 4 / (s (s + t)) with s = sqrt(t^2 + 4)
    # keeps the cancellation out; t = 40 / sqrt(2 * 0.01 / 3) = 489.9 gives p = 1.04e-10, which 4 decimals stored as 0
    t = 40 / (2 * 0.01 / 3) ** 0.5
    s = (t * t + 4) ** 0.5
    one_minus_u = 4 / (s * (s + t))
    strong = seed_test([50.0, 50.1, 50.2], [10.0, 10.1, 10.2])
    assert strong["welch_p"] == float(f"{one_minus_u ** 2 * (3 - one_minus_u) / 2:.3g}") == 1.04e-10
    assert format_p(strong["welch_p"], 3) == "1.0e-10" and format_p(0.0213, 3) == "0.021"
    assert seed_test([38.0], [37.0, 38.0]) is None  # one seed has no spread to test against
    assert seed_test([38.0, 38.0], [37.0, 37.0]) == {"diff": 1.0, "welch_p": None, "n": [2, 2]}  # no variance at all
    # the interval: -3 -+ t(0.975, 4 df) sqrt(2/3) = -3 -+ 2.7764 * 0.8165, the t quantile from the tables
    assert welch_interval([1, 2, 3], [4, 5, 6]) == [-5.27, -0.73]
    assert welch_interval([38.0], [37.0, 38.0]) is None and welch_interval([38.0, 38.0], [37.0, 37.0]) is None


def test_readme_block_needs_both_markers_once(tmp_path):
    f = tmp_path / "README.md"
    f.write_text("a\n<!-- begin t (generated) -->\nx\n<!-- end t -->\nb\n")
    replace_block(f, "t", "| new |\n")
    assert f.read_text() == "a\n<!-- begin t (generated) -->\n| new |\n<!-- end t -->\nb\n"
    replace_block(f, "t", "| new |")  # unchanged: the file is left as it was
    assert f.read_text().count("| new |") == 1
    f.write_text("a\n<!-- end t -->\n<!-- begin t -->\n")
    with pytest.raises(ValueError, match=r"README.md: needs one '<!-- begin t .*line 3\).*line 2\)"):
        replace_block(f, "t", "x")
    f.write_text("no markers\n")
    with pytest.raises(ValueError, match="found at line none"):
        replace_block(f, "t", "x")
    assert f.read_text() == "no markers\n" and not list(tmp_path.glob(".*tmp"))
    with pytest.raises(ValueError, match="found at line none"):
        check_block(f, "t")
    with pytest.raises(ValueError, match=r"missing.md: cannot be read .*\(FileNotFoundError\)"):
        check_block(tmp_path / "missing.md", "t")


@pytest.mark.parametrize("script, block", [("examples/encoders/summarize_sla_table.py", "sla-table-summary"),
                                           ("examples/lambada/summarize.py", "lambada-summary"),
                                           ("examples/multi30k/summarize.py", "multi30k-summary"),
                                           ("examples/race/summarize.py", "race-summary")])
def test_summarizers_refuse_a_readme_without_their_block_before_reading_results(script, block, tmp_path, capsys):
    """The results folder does not exist: had the summarizer read it first, its error would be another."""
    readme = tmp_path / "README.md"
    readme.write_text("# no block\n")
    with pytest.raises(SystemExit) as e:
        study_script(script).main(["--results", str(tmp_path / "none"), "--readme", str(readme)])
    err = capsys.readouterr().err
    assert e.value.code == 1 and f"error: {readme}: needs one '<!-- begin {block} ... -->' line" in err, err
    assert readme.read_text() == "# no block\n"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: --fp16 would train")
def test_fp16_runs_have_their_own_checkpoints_and_refuse_a_machine_without_a_gpu(tmp_path):
    ck = tmp_path / "ck"
    (ck / "multi30k_vanilla_seed1").mkdir(parents=True)
    (ck / "multi30k_vanilla_seed1/train.log").write_text(valid_line(1, 128, loss=5.0))  # an fp32 run under way
    env = {"MULTI30K_CHECKPOINTS": str(ck), "MULTI30K_DATA": str(tmp_path / "data")}
    cmd = ["bash", str(ROOT / "examples/multi30k/reproduce.sh"), "--runs", "vanilla:1", "--out", str(tmp_path / "res")]
    assert run(cmd + ["--status"], env=env).stdout.startswith("vanilla seed 1: epoch 1 (128 updates)")
    assert run(cmd + ["--status", "--fp16"], env=env).stdout == "vanilla seed 1: not started\n"
    out = run(cmd + ["--fp16"], env=env, check=False)
    assert out.returncode == 1 and "--fp16 trains on a GPU, and torch sees none here" in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"] and [p.name for p in ck.iterdir()] == [
        "multi30k_vanilla_seed1"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: --fp16 would train")
def test_lambada_fp16_refuses_a_machine_without_a_gpu_and_writes_nothing(tmp_path):
    out = run(["bash", str(ROOT / "examples/lambada/reproduce.sh"), "--fp16", "--data", str(tmp_path / "bin"),
               "--checkpoints", str(tmp_path / "ck")], check=False)
    assert out.returncode == 1 and "[lambada] --fp16 trains on a GPU, and torch sees none here" in out.stderr
    assert list(tmp_path.iterdir()) == [] and not (ROOT / "results/lambada_fp16").exists()


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


def test_kept_logs_hold_no_machine_paths(tmp_path):
    """keep_log writes a checkpoints folder outside the checkout as the name given, the checkout as '.', and the
    home directory as '~'; a folder inside the checkout stays relative to it."""
    ck = tmp_path / "ckg"
    (ck / "run").mkdir(parents=True)
    log = tmp_path / "train.log"
    log.write_text(f"save_dir='{ck}/run' restore='{ROOT}/work/minilm/model.pt' at {ck}\n"
                   f"File \"/home/someone/.venv/x.py\"\n")
    out = tmp_path / "kept.log.gz"
    run(["bash", "-c", f'source "{ROOT}/data-prep/common.sh"; keep_log "$1" "$2" "$3" "<checkpoints>" "$4" inside',
         "_", str(log), str(out), str(ck), str(ROOT / "scripts")], env={"HOME": "/home/someone"})
    assert gzip.decompress(out.read_bytes()).decode() == (
        "save_dir='<checkpoints>/run' restore='./work/minilm/model.pt' at <checkpoints>\n"
        'File "~/.venv/x.py"\n')


def test_kept_logs_read_a_folder_name_as_a_path_never_as_sed_code(tmp_path):
    """A --checkpoints folder named with sed's own characters ('#', '&', '.', '*', '\\') is replaced as written, a
    folder the unescaped '.' would match is left alone, and nothing in the name runs (sed's 'e' command)."""
    ck, near = tmp_path / "c#k&1.x*\\b#;e touch PWNED;#", tmp_path / "c#k&1ax*\\b#;e touch PWNED;#"
    ck.mkdir()
    near.mkdir()
    log = tmp_path / "train.log"
    log.write_text(f"save_dir={ck}/run\nnear={near}/run\n")
    out = tmp_path / "kept.log.gz"
    run(["bash", "-c", f'source "{ROOT}/data-prep/common.sh"; keep_log "$1" "$2" "$3" "<ck&#>"', "_", str(log),
         str(out), str(ck)], cwd=tmp_path)
    assert gzip.decompress(out.read_bytes()).decode() == f"save_dir=<ck&#>/run\nnear={near}/run\n"
    assert not list(tmp_path.rglob("PWNED*"))


def test_lambada_status_says_where_each_run_stands_and_trains_nothing(tmp_path):
    """examples/lambada/reproduce.sh --status: a finished run by its dev accuracy, a running one by the stopping rule read
    from its log (validations every --valid-interval updates), one without a log as not started."""
    ck, res = tmp_path / "ck", tmp_path / "res"
    ck.mkdir()
    res.mkdir()
    (ck / "converged_sa_early_seed1.train.log").write_text(
        "".join(valid_line(1, u, loss=3.0, accuracy=a) for u, a in ((500, 13.53), (1000, 17.25), (1500, 16.69))))
    (res / "converged_sa_early_corefall_seed1.eval.json").write_text(json.dumps({"all": {"n": 9, "accuracy": 31.5}}))
    (res / "converged_sa_early_corefall_seed1.pred.jsonl.gz").write_bytes(gzip.compress(b"{}\n"))
    (res / "converged_sa_early_corefall_seed2.eval.json").write_text('{"all": {"n": 9, ')  # damaged: named
    (res / "converged_sa_early_corefall_seed2.pred.jsonl.gz").write_bytes(gzip.compress(b"{}\n"))
    cmd = ["bash", str(ROOT / "examples/lambada/reproduce.sh"), "--status", "--converge", "--tag", "converged",
           "--seeds", "1 2", "--patience", "3", "--checkpoints", str(ck), "--out", str(res),
           "--data", str(tmp_path / "no-data")]
    assert run(cmd).stdout.splitlines() == [
        "converged_sa_early seed 1: update 1500 (1500 updates): best valid accuracy 17.25 at update 1000; running, "
        "1 of 3 validations without improvement",
        f"converged_sa_early_corefall seed 1: finished; LAMBADA dev accuracy 31.5 "
        f"({res}/converged_sa_early_corefall_seed1.eval.json)",
        "converged_sa_early seed 2: not started",
        f"converged_sa_early_corefall seed 2: finished; its results file is damaged: "
        f"{res}/converged_sa_early_corefall_seed2.eval.json: line 1: not valid JSON (Expecting property name enclosed "
        f"in double quotes) ({res}/converged_sa_early_corefall_seed2.eval.json)"]
    fixed = run(cmd[:3] + cmd[4:] + ["--updates", "3000"]).stdout.splitlines()[0]  # a fixed budget, not the rule
    assert fixed == "converged_sa_early seed 1: update 1500 (1500 updates): best valid accuracy 17.25 at update 1000; " \
        "training, to 3000 updates"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck", "res"] and len(list(res.iterdir())) == 4


def test_mcnemar_p_is_exact_and_never_printed_as_zero():
    """Hand-worked: 0 against 5 discordant pairs is 2 * (1/2)^5; 418 against 243 (the converged seed-1 pair) is
    about 1e-11, which four decimals would print as 0.0000."""
    from fairseq_syntax.studies.seed_statistics import mcnemar_exact

    assert mcnemar_exact(0, 5) == 2 / 32 and mcnemar_exact(5, 0) == 2 / 32
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(1, 3) == 2 * (1 + 4) / 16
    p = mcnemar_exact(418, 243)
    assert 0 < p < 1e-10
    assert format_p(0.0007) == "0.0007" and format_p(0.0625) == "0.0625"
    assert format_p(p) == "1.0e-11"


def test_lambada_summary_calls_converged_only_what_the_rule_stopped(tmp_path):
    """A fixed budget validated every 100 updates, with its best early, has 5 validations without improvement at
    the end, but not the rule's (every 500): it is a fixed budget; a run validated every 500 that the rule stopped
    is converged, and a run still under the rule is not."""
    ROWS, summarize = study_script("examples/lambada/summarize.py").ROWS, study_script("examples/lambada/summarize.py").main

    def write(name, curve, acc):
        text = config_line() + "".join(valid_line(1, u, loss=3.0, accuracy=a) for u, a in curve)
        (tmp_path / f"{name}.train.log.gz").write_bytes(gzip.compress(text.encode()))
        (tmp_path / f"{name}.eval.json").write_text(json.dumps({k: {"n": 9, "accuracy": acc} for k in ROWS}))

    early = [(u, a) for u, a in zip(range(100, 1100, 100), (5, 9, 12, 14, 13, 13, 12, 13, 11, 12))]
    write("sa_early_seed1", early, 20.0)
    write("converged_sa_early_seed1", [(u, 20 + (u <= 1500) * u / 100) for u in range(500, 4500, 500)], 30.0)
    write("converged_sa_early_seed2", [(u, u / 100) for u in range(500, 3000, 500)], 25.0)
    summarize(["--results", str(tmp_path), "--patience", "5", "--valid-interval", "500"])
    runs = {s: r["runs"] for s, r in json.loads((tmp_path / "summary.json").read_text())["systems"].items()}
    assert runs["sa_early"]["1"]["trained"]["stopped"] is None
    assert runs["sa_early"]["1"]["trained"]["best_update"] == 400
    assert runs["converged_sa_early"]["1"]["trained"]["stopped"] == "patience"
    assert runs["converged_sa_early"]["1"]["trained"]["best_update"] == 1500
    assert runs["converged_sa_early"]["2"]["trained"]["stopped"] is None
    table = (tmp_path / "summary.md").read_text()
    assert "| sa_early | 1 | 20.00 | – | – | 400 | – | fixed budget, not converged (last update 1,000) |" in table
    assert "| converged_sa_early | 2 | 27.50 ± 3.54 | – | – | 1,500, 2,500 | – | fixed budget" in table
    summarize(["--results", str(tmp_path), "--patience", "5", "--valid-interval", "100"])  # the rule's spacing
    table = (tmp_path / "summary.md").read_text()
    assert "| sa_early | 1 | 20.00 | – | – | 400 | – | converged: 5 validations" in table


def write_converged_run(res, name, best, acc, correct=None):
    """A LAMBADA run's results as examples/lambada/reproduce.sh leaves them: a log validated every 500 updates whose best is
    at ``best``, then 5 validations below it (the rule stops it); its eval.json; and with ``correct``, its per-instance
    predictions for the McNemar tests."""
    ROWS = study_script("examples/lambada/summarize.py").ROWS

    curve = [(u, (u if u <= best else best - u) / 100) for u in range(500, best + 3000, 500)]
    text = config_line() + "".join(valid_line(1, u, loss=3.0, accuracy=a) for u, a in curve)
    (res / f"{name}.train.log.gz").write_bytes(gzip.compress(text.encode()))
    (res / f"{name}.eval.json").write_text(json.dumps({k: {"n": 9, "accuracy": acc} for k in ROWS}))
    if correct is not None:
        lines = "".join(json.dumps({"correct": c}) + "\n" for c in correct)
        (res / f"{name}.pred.jsonl.gz").write_bytes(gzip.compress(lines.encode()))


def test_lambada_summary_tests_over_seeds_whether_the_supervised_reader_converges_sooner(tmp_path):
    """Best validations at updates 1,000 and 1,500 (+ CorefAll) against 2,500 and 3,500: Δ = −1,750 updates.
    By hand: the variances are 125,000 and 500,000, so Welch's t = −1750 / sqrt(62,500 + 250,000) = −3.130, with
    Welch–Satterthwaite df = 312,500² / (62,500² + 250,000²) = 1.471."""
    from scipy.stats import t as student_t

    summarize = study_script("examples/lambada/summarize.py").main

    for seed, (sup, base) in enumerate(((1000, 2500), (1500, 3500)), 1):
        write_converged_run(tmp_path, f"converged_sa_early_corefall_seed{seed}", sup, 40.0 + seed)
        write_converged_run(tmp_path, f"converged_sa_early_seed{seed}", base, 36.0 + seed)
    summarize(["--results", str(tmp_path), "--patience", "5", "--valid-interval", "500"])
    row = json.loads((tmp_path / "summary.json").read_text())["systems"]["converged_sa_early_corefall"]
    t = -1750 / (62_500 + 250_000) ** 0.5
    df = 312_500 ** 2 / (62_500 ** 2 + 250_000 ** 2)
    p = 2 * student_t.cdf(t, df)
    assert row["best_update_vs_twin"]["diff"] == -1750
    assert abs(row["best_update_vs_twin"]["welch_p"] - p) < 1e-3 * p + 1e-6
    assert "| 1,000, 1,500 | -1,750 (p = " in (tmp_path / "summary.md").read_text()


def test_lambada_summary_reads_the_table_in_words_with_its_numbers(tmp_path):
    """Two converged seeds a side, accuracies 41, 42 (+ CorefAll) against 37, 38, on 9 instances. By hand:
    McNemar 5 against 0 discordant is 2/32 = 0.0625 (seed 1), 0 against 0 is 1 (seed 2); Welch's t over seeds is
    4 / sqrt(0.25 + 0.25) = 5.657 with df = 0.5² / (2 · 0.25²) = 2; the best updates 1,000, 1,500 against 2,500,
    3,500 as in the test above."""
    from scipy.stats import t as student_t

    summarize = study_script("examples/lambada/summarize.py").main

    write_converged_run(tmp_path, "converged_sa_early_corefall_seed1", 1000, 41.0, [True] * 7 + [False] * 2)
    write_converged_run(tmp_path, "converged_sa_early_seed1", 2500, 37.0, [True] * 2 + [False] * 7)
    write_converged_run(tmp_path, "converged_sa_early_corefall_seed2", 1500, 42.0, [True] * 4 + [False] * 5)
    write_converged_run(tmp_path, "converged_sa_early_seed2", 3500, 38.0, [True] * 4 + [False] * 5)
    summarize(["--results", str(tmp_path), "--patience", "5", "--valid-interval", "500"])
    welch = format_p(2 * student_t.sf(4 / 0.5 ** 0.5, 2), 3)
    best_t = -1750 / (62_500 + 250_000) ** 0.5
    best = format_p(2 * student_t.cdf(best_t, 312_500 ** 2 / (62_500 ** 2 + 250_000 ** 2)), 3)
    assert welch == "0.030" and best not in ("0.000", welch)
    md = (tmp_path / "summary.md").read_text()
    assert "**Reading** (told apart: p < 0.05):" in md
    assert ("- converged_sa_early_corefall against converged_sa_early (2 seeds a side, all converged): higher on "
            "2 of 2 (+4.00, +4.00 points; McNemar p = 0.0625, 1.0000, 0 of 2 told apart). converged_sa_early's own seeds span "
            f"1.00 points (37.00 to 38.00). Over seeds: +4.00 (Welch p = {welch}), told apart. Best validation at "
            f"update 1,250 on average against 3,000: -1,750 (Welch p = {best}), not told apart.\n") in md


def test_lambada_summary_says_so_when_the_two_readers_have_different_seed_counts(tmp_path):
    """While seeds are still training, + CorefAll has seeds 1, 2 and SA-Early 1, 2, 3: the per-seed tests pair
    seeds 1 and 2, Welch compares all five. By hand: means 41.5 and 38, variances 0.5 and 1, so
    t = 3.5 / sqrt(0.5/2 + 1/3) = 4.583 with df = 0.5833² / (0.25² / 1 + 0.3333² / 2) = 2.882."""
    from scipy.stats import t as student_t

    summarize = study_script("examples/lambada/summarize.py").main

    for seed in (1, 2):
        write_converged_run(tmp_path, f"converged_sa_early_corefall_seed{seed}", 1000, 40.0 + seed)
    for seed in (1, 2, 3):
        write_converged_run(tmp_path, f"converged_sa_early_seed{seed}", 2500, 36.0 + seed)
    summarize(["--results", str(tmp_path), "--patience", "5", "--valid-interval", "500"])
    se2 = 0.5 / 2 + 1 / 3
    welch = 2 * student_t.sf(3.5 / se2 ** 0.5, se2 ** 2 / ((0.5 / 2) ** 2 + (1 / 3) ** 2 / 2))
    row = json.loads((tmp_path / "summary.json").read_text())["systems"]["converged_sa_early_corefall"]
    assert row["vs_twin"]["diff"] == 3.5 and abs(row["vs_twin"]["welch_p"] - welch) < 5e-3 * welch  # 3 digits
    md = (tmp_path / "summary.md").read_text()
    assert ("- converged_sa_early_corefall against converged_sa_early (2 against 3 seeds, 2 paired, all converged): "
            "higher on 2 of 2 (+4.00, +4.00 points;") in md
    assert "| converged_sa_early | 3 | 38.00 ± 1.00 |" in md


def test_matthews_and_the_paired_bootstrap():
    """MCC as scikit-learn computes it (binary and 3 classes); the paired bootstrap finds a system right on 30
    more of 200 items apart from one right on the same items, and two identical systems not."""
    import numpy as np
    from sklearn.metrics import matthews_corrcoef

    from fairseq_syntax.studies.seed_statistics import matthews, paired_bootstrap

    rng = np.random.default_rng(0)
    for k in (2, 3):
        gold, pred = rng.integers(0, k, 300), rng.integers(0, k, 300)
        pred[:150] = gold[:150]
        assert matthews(gold, pred) == pytest.approx(100 * matthews_corrcoef(gold, pred))
    assert matthews([1, 1, 1], [1, 1, 1]) == 0.0
    gold = rng.integers(0, 2, 200)
    a, b = gold.copy(), gold.copy()
    b[:60] = 1 - b[:60]  # b wrong on 60 items, a on none
    a[60:90] = 1 - a[60:90]  # a wrong on 30 others
    acc = lambda rows, idx: float((rows[idx] == gold[idx]).mean())  # noqa: E731
    t = paired_bootstrap(acc, a, b, n_boot=500)
    assert t["diff"] == pytest.approx(0.15) and t["p"] < 0.01
    assert paired_bootstrap(acc, a, a.copy(), n_boot=200)["p"] == 1.0
