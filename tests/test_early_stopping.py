"""Early stopping from the whole log (examples/studies/early_stopping.py) and what a log says of its run."""
import argparse
import gzip
import json
import math
import subprocess
import sys

import pytest
import torch

from examples.studies.early_stopping import convergence
from examples.studies.training_log import training_setup

from .run_files import REAL_LOG, GPU_LINES, config_line, valid_line, next_target


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
                                       "2 of 3 validations without improvement so far")
    log.write_text(log.read_text() + valid_line(5, 640, loss=4.3))
    assert next_target(log, *args).endswith("; finished (patience)")
    assert next_target(tmp_path / "none.log", *args) == "no validation yet"
    fixed = ["--metric", "loss", "--patience", "0", "--max-update", "768", "--describe"]  # a fixed budget: no rule
    assert next_target(log, *fixed).endswith("; 768 updates planned")
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


def test_learned_alpha_read_from_a_checkpoint(tmp_path):
    """examples/studies/learned_alpha.py: sigmoid of each alpha_logit, the α it started from (the checkpoint's config),
    the update it was saved at; a clear error without one."""
    ck = tmp_path / "checkpoint_best.pt"
    weights = {"encoder.syntax_guided.alpha_logit": torch.tensor(math.log(0.7 / 0.3)),
               "encoder.layers.0.fc1.weight": torch.zeros(2, 2)}
    # fairseq keeps a legacy arch's options as an argparse Namespace in cfg["model"]
    torch.save({"model": weights, "cfg": {"model": argparse.Namespace(sgnet_alpha=0.25, dropout=0.3)},
                "optimizer_history": [{"num_updates": 4480}]}, ck)
    out = subprocess.run([sys.executable, "-m", "examples.studies.learned_alpha", str(ck)], capture_output=True,
                         text=True, check=True)
    assert json.loads(out.stdout) == {"alpha": {"encoder.syntax_guided": 0.7}, "initial": 0.25, "num_updates": 4480}
    torch.save({"model": weights, "cfg": {"model": {"sgnet_alpha": 0.5}}}, ck)  # a dict config; no history
    out = subprocess.run([sys.executable, "-m", "examples.studies.learned_alpha", str(ck)], capture_output=True,
                         text=True, check=True)
    assert json.loads(out.stdout) == {"alpha": {"encoder.syntax_guided": 0.7}, "initial": 0.5, "num_updates": None}
    torch.save({"model": {"encoder.layers.0.fc1.weight": torch.zeros(2, 2)}}, ck)  # a fixed-α SG-Net
    out = subprocess.run([sys.executable, "-m", "examples.studies.learned_alpha", str(ck)], capture_output=True,
                         text=True)
    assert out.returncode == 1 and f"{ck}: no learned α" in out.stderr and not out.stdout
