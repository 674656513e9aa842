"""Two processes on fairseq's own distributed engine (torchrun, gloo, --cpu) train the plugin's SG-Net exactly
as one process with --update-freq 2 does.

Plain torchrun on the CPU makes fairseq train each process alone (its default world size is the number of
GPUs), so on the CPU each worker gets its rank itself: ``--distributed-init-method env:// --distributed-no-spawn
--distributed-rank $RANK``; a lone worker is refused by the plugin (docs/nmt.md, 'Several processes').
"""
import sys

import pytest
import torch

from .conftest import BIN, run

pytestmark = pytest.mark.slow

# a worker: fairseq-train, then a line saying what this process had registered (rank 1 logs only warnings)
WORKER = """
import os, sys
from fairseq_cli.train import cli_main
sys.argv = ["fairseq-train"] + sys.argv[1:] + ["--distributed-rank", os.environ["RANK"]]
cli_main()
from fairseq.models import ARCH_MODEL_REGISTRY
from fairseq.tasks import TASK_REGISTRY
print(f"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}: task registered "
      f"{'syntax_guided_translation' in TASK_REGISTRY}, "
      f"model {ARCH_MODEL_REGISTRY['transformer_sgnet_small'].__name__}",
      flush=True)
"""


def train_args(data, save, user_dir):
    # no dropout: one process draws its dropout masks in another order than two do
    return [str(data), "--user-dir", user_dir, "--task", "syntax_guided_translation", "-s", "en", "-t", "de",
            "--arch", "transformer_sgnet_small", "--share-all-embeddings", "--dropout", "0", "--optimizer", "sgd",
            "--lr", "0.5", "--max-tokens", "600", "--required-batch-size-multiple", "1", "--max-update", "3",
            "--seed", "1", "--cpu", "--disable-validation", "--no-epoch-checkpoints", "--save-dir", str(save),
            "--log-format", "simple", "--log-interval", "1"]


def weights(save):
    state = torch.load(save / "checkpoint_last.pt", map_location="cpu", weights_only=False)["model"]
    return {k: v.float() for k, v in state.items() if v.is_floating_point()}


def max_diff(a, b):
    return max((a[k] - b[k]).abs().max().item() for k in a)


def test_two_workers_train_like_one_with_update_freq_2(prepared, tmp_path):
    user_dir = run([BIN / "fairseq-syntax-user-dir"]).stdout.strip()
    data = prepared / "bin"
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    run([BIN / "torchrun", "--nproc_per_node", "2", "--master_port", "29533", "--log-dir", str(tmp_path / "logs"),
         "--redirects", "3", str(worker), *train_args(data, tmp_path / "two", user_dir),
         "--distributed-world-size", "2", "--distributed-backend", "gloo", "--ddp-backend", "legacy_ddp",
         "--distributed-init-method", "env://", "--distributed-no-spawn"], cwd=tmp_path, timeout=600)
    logs = {p.parent.name: p.read_text() for p in (tmp_path / "logs").rglob("stdout.log")}
    assert sorted(logs) == ["0", "1"]
    for rank, text in logs.items():
        # each worker imported the plugin (--user-dir) and joined the same process group of two
        assert f"distributed init (rank {rank}): env://" in text
        assert f"rank {rank} of 2: task registered True, model TransformerSGNetModel" in text
    main = logs["0"]
    assert "training on 2 devices" in main and "task: SyntaxGuidedTranslationTask" in main
    one = run([sys.executable, "-m", "fairseq_cli.train", *train_args(data, tmp_path / "one", user_dir),
               "--update-freq", "2"], cwd=tmp_path)
    alone = run([sys.executable, "-m", "fairseq_cli.train", *train_args(data, tmp_path / "alone", user_dir)],
                cwd=tmp_path)
    # a worker sees every second batch of the epoch: its updates per epoch are those of --update-freq 2,
    # half the batches of the epoch
    per_epoch = lambda text: int(text.split("epoch 001:      1 / ")[1].split()[0])  # noqa: E731
    assert per_epoch(main) == per_epoch(one.stderr + one.stdout)
    assert per_epoch(alone.stderr + alone.stdout) in (2 * per_epoch(main), 2 * per_epoch(main) - 1)
    two, ref, other = weights(tmp_path / "two"), weights(tmp_path / "one"), weights(tmp_path / "alone")
    # Same batches, same summed gradients: only the order of float32 additions differs (the all-reduce
    # adds two partial sums). Three SGD steps at lr 0.5 leave that at ~1e-7; 1e-5 allows for it, while a
    # different training (one batch per update) is far outside it.
    print(f"max |two workers - one with --update-freq 2| = {max_diff(two, ref):.2e}; "
          f"max |two workers - one with --update-freq 1| = {max_diff(two, other):.2e}")
    assert max_diff(two, ref) < 1e-5
    assert max_diff(two, other) > 1e-3


def test_a_lone_torchrun_worker_is_refused_before_it_trains(prepared, tmp_path):
    user_dir = run([str(BIN / "fairseq-syntax-user-dir")]).stdout.strip()
    save = tmp_path / "ck"
    proc = run([str(BIN / "torchrun"), "--nproc_per_node", "2", str(BIN / "fairseq-train"),
                *train_args(prepared / "bin", save, user_dir)], check=False)
    assert proc.returncode != 0
    assert "one of WORLD_SIZE=2 started by torchrun, but fairseq is training it alone" in proc.stderr
    assert "--distributed-world-size 2" in proc.stderr
    assert not list(save.glob("checkpoint*.pt"))
