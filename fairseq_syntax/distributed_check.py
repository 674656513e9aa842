"""Refuse a worker that torchrun started but fairseq trains alone.

``torchrun --nproc_per_node 2 fairseq-train ... --cpu`` without ``--distributed-world-size`` makes fairseq
train one separate model in each process ("training on 1 devices"); they then overwrite each other's
checkpoints (``checkpoint_best.pt.tmp`` vanishes under the other). torchrun tells each process
``WORLD_SIZE``; a process that sees more than one worker while ``torch.distributed`` is not initialized is
one of those lone copies, and stops before any training with what to add.
"""
from __future__ import annotations

import os


def refuse_lone_torchrun_worker() -> None:
    world = os.environ.get("WORLD_SIZE", "1")
    if not world.isdigit() or int(world) <= 1:
        return
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return
    raise RuntimeError(
        f"this process is one of WORLD_SIZE={world} started by torchrun, but fairseq is training it alone "
        "(--distributed-world-size 1), so every process would train its own model and overwrite the others' "
        f"checkpoints. Add --distributed-world-size {world} --distributed-init-method env:// "
        "--distributed-no-spawn --distributed-rank $RANK (on the CPU also --distributed-backend gloo "
        "--ddp-backend legacy_ddp), or start one process: see docs/nmt.md, 'Several processes'")
